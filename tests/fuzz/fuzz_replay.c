/* SPDX-License-Identifier: MIT */
/* tests/fuzz/fuzz_replay.c - runs a fuzz target without a fuzzing engine: every file named on
 * the command line, and every file inside each directory named (sorted by name), goes through
 * LLVMFuzzerTestOneInput() once. A target reports a problem by aborting, so a crash fails the
 * test. Exit status 0 when every input ran, 1 when an argument could not be read or no input
 * was found, 77 (CTest's skip) when VIDMM_BACKEND forces a backend this machine cannot run. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "vidmm/vidmm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "fuzz replay: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (buf == NULL) {
            fclose(f);
            fprintf(stderr, "fuzz replay: out of memory reading %s\n", path);
            return -1;
        }
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap)
            break;
        cap *= 2;
        uint8_t *nb = realloc(buf, cap);
        if (nb == NULL)
            free(buf);
        buf = nb;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        fprintf(stderr, "fuzz replay: read error on %s\n", path);
        return -1;
    }
    /* An exact-size copy, so that a read past the input is caught by ASan as it would be under
     * libFuzzer. */
    uint8_t *exact = malloc(len ? len : 1);
    if (exact == NULL) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, len);
    free(buf);
    fprintf(stderr, "fuzz replay: %s (%zu bytes)\n", path, len);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir, size_t *count)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        fprintf(stderr, "fuzz replay: cannot open directory %s: %s\n", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, cap * sizeof(*nn));
            if (nn == NULL)
                break;
            names = nn;
        }
        names[n] = strdup(e->d_name);
        if (names[n] != NULL)
            n++;
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof(*names), cmp_names);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            if (run_file(path) != 0)
                rc = -1;
            else
                (*count)++;
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    const char *forced = getenv("VIDMM_BACKEND");
    if (forced != NULL && *forced != '\0') {
        int b = vidmm_backend_from_string(forced);
        if (b > VIDMM_BACKEND_AUTO && !vidmm_backend_supported((enum vidmm_backend)b)) {
            fprintf(stderr, "VIDMM_BACKEND=%s: this CPU or build cannot run that backend; skipping\n", forced);
            return 77;
        }
    }
    if (argc < 2) {
        fprintf(stderr, "usage: %s <corpus directory or file>...\n", argv[0]);
        return 1;
    }
    size_t count = 0;
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "fuzz replay: %s: %s\n", argv[i], strerror(errno));
            rc = 1;
        } else if (S_ISDIR(st.st_mode)) {
            if (run_dir(argv[i], &count) != 0)
                rc = 1;
        } else if (run_file(argv[i]) == 0) {
            count++;
        } else {
            rc = 1;
        }
    }
    if (count == 0) {
        fprintf(stderr, "fuzz replay: no input found\n");
        return 1;
    }
    fprintf(stderr, "fuzz replay: %zu inputs ran without a failure\n", count);
    return rc;
}
