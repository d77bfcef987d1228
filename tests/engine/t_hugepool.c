/* SPDX-License-Identifier: MIT */
/* tests/engine/t_hugepool.c - see t_hugepool.h. */
#include <stdio.h>
#include <unistd.h>
#include "t_hugepool.h"

long t_read_long(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    long v = -1;
    if (fscanf(f, "%ld", &v) != 1)
        v = -1;
    fclose(f);
    return v;
}

bool t_write_long(const char *path, long v)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return false;
    bool ok = fprintf(f, "%ld", v) > 0;
    return fclose(f) == 0 && ok;
}

long t_pool_avail(size_t size)
{
    char path[128];
    snprintf(path, sizeof path, "/sys/kernel/mm/hugepages/hugepages-%zukB/free_hugepages", size >> 10);
    long f = t_read_long(path);
    snprintf(path, sizeof path, "/sys/kernel/mm/hugepages/hugepages-%zukB/resv_hugepages", size >> 10);
    long r = t_read_long(path);
    return f < 0 || r < 0 ? -1 : f - r;
}

static long pool_saved = -1;

void t_pool_raise(const char *who, long pages)
{
    long nr = t_read_long(T_POOL_DIR "nr_hugepages");
    long avail = t_pool_avail(2u << 20);
    if (geteuid() != 0 || nr < 0 || avail < 0 || avail >= pages)
        return;
    if (!t_write_long(T_POOL_DIR "nr_hugepages", nr + (pages - avail))) {
        fprintf(stderr, "%s: could not raise nr_hugepages (2 MiB) from %ld\n", who, nr);
        return;
    }
    pool_saved = nr;
    fprintf(stderr, "%s: nr_hugepages (2 MiB) %ld -> %ld for the huge page tests; restored at the end\n", who, nr,
            t_read_long(T_POOL_DIR "nr_hugepages"));
}

void t_pool_restore(const char *who)
{
    if (pool_saved >= 0 && !t_write_long(T_POOL_DIR "nr_hugepages", pool_saved))
        fprintf(stderr, "%s: could not restore nr_hugepages (2 MiB) to %ld\n", who, pool_saved);
    pool_saved = -1;
}
