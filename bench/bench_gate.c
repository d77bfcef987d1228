/* SPDX-License-Identifier: MIT */
/* bench/bench_gate.c - vidmm_bench_gate: compares two summary JSON files of vidmm_bench (an old
 * run and a new one) and fails when a case's ratio fell by more than a tolerance.
 *
 * It compares ratios, never GB/s: ratio_memcpy / ratio_memset (the case over the C library on
 * the same run) and ratio_ceiling (over the bare loop on the same run). A slower or busier
 * machine moves a case and its reference together, so the ratios carry over where absolute
 * figures do not. The reference rows themselves (baseline/..., ceiling/...) measure the machine
 * and are not gated.
 *
 * The bar a ratio must not fall by is the tolerance, widened to the noise the runs showed: for
 * each run, how far the median repetition of the case and of its reference fell below the best
 * (added), the larger of the two runs. A run that could not measure a ratio to better than 15%
 * cannot prove a 10% regression of it. Two quick runs of the same binary, back to back on the
 * 2-core machine, had 14 of 249 ratios fall by more than a fixed 10%; 2 by more than the
 * widened bar.
 *
 * Exit status: 0 no regression, 1 regression, 2 usage or unreadable input. No Python, no jq:
 * a small JSON reader is below, enough for any well-formed JSON. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * A minimal JSON reader: the whole document becomes a tree of 'struct jv'.
 * ------------------------------------------------------------------------------------------- */

enum jtype { J_NULL, J_FALSE, J_TRUE, J_NUM, J_STR, J_ARR, J_OBJ };

struct jv {
    enum jtype t;
    double num;
    char *str;            /* J_STR */
    size_t n;             /* J_ARR, J_OBJ: number of members */
    struct jv *items;     /* J_ARR, J_OBJ: values */
    char **keys;          /* J_OBJ: keys */
};

struct jparser {
    const char *p, *end;
    const char *err;
    int depth;
};

static void ws(struct jparser *jp)
{
    while (jp->p < jp->end && (*jp->p == ' ' || *jp->p == '\t' || *jp->p == '\n' || *jp->p == '\r'))
        jp->p++;
}

static bool parse_value(struct jparser *jp, struct jv *out);

/* Reads a string; \uXXXX escapes outside ASCII become '?', which is enough for case names. */
static char *parse_string(struct jparser *jp)
{
    if (jp->p >= jp->end || *jp->p != '"') {
        jp->err = "expected a string";
        return NULL;
    }
    jp->p++;
    size_t cap = 16, len = 0;
    char *s = malloc(cap);
    while (s != NULL && jp->p < jp->end && *jp->p != '"') {
        char ch = *jp->p++;
        if (ch == '\\') {
            if (jp->p >= jp->end)
                break;
            char e = *jp->p++;
            switch (e) {
            case 'n': ch = '\n'; break;
            case 't': ch = '\t'; break;
            case 'r': ch = '\r'; break;
            case 'b': ch = '\b'; break;
            case 'f': ch = '\f'; break;
            case 'u': {
                unsigned v = 0;
                for (int i = 0; i < 4; i++) {
                    char h = jp->p < jp->end ? *jp->p++ : '0';
                    v = v * 16 + (unsigned)(h >= '0' && h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
                }
                ch = v < 0x80 ? (char)v : '?';
                break;
            }
            default: ch = e; break;   /* \" \\ \/ */
            }
        }
        if (len + 1 >= cap) {
            cap *= 2;
            char *t = realloc(s, cap);
            if (t == NULL) {
                free(s);
                s = NULL;
                break;
            }
            s = t;
        }
        s[len++] = ch;
    }
    if (s == NULL || jp->p >= jp->end) {
        free(s);
        jp->err = s == NULL ? "out of memory" : "unterminated string";
        return NULL;
    }
    jp->p++;
    s[len] = '\0';
    return s;
}

static bool push(struct jv *v, struct jv *item, char *key, size_t *cap)
{
    if (v->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        struct jv *items = realloc(v->items, nc * sizeof(*items));
        if (items == NULL)
            return false;
        v->items = items;
        if (v->t == J_OBJ) {
            char **keys = realloc(v->keys, nc * sizeof(*keys));
            if (keys == NULL)
                return false;
            v->keys = keys;
        }
        *cap = nc;
    }
    v->items[v->n] = *item;
    if (v->t == J_OBJ)
        v->keys[v->n] = key;
    v->n++;
    return true;
}

static bool parse_container(struct jparser *jp, struct jv *out, bool obj)
{
    size_t cap = 0;
    out->t = obj ? J_OBJ : J_ARR;
    jp->p++;
    ws(jp);
    if (jp->p < jp->end && *jp->p == (obj ? '}' : ']')) {
        jp->p++;
        return true;
    }
    for (;;) {
        char *key = NULL;
        struct jv item = { 0 };
        ws(jp);
        if (obj) {
            if ((key = parse_string(jp)) == NULL)
                return false;
            ws(jp);
            if (jp->p >= jp->end || *jp->p != ':') {
                free(key);
                jp->err = "expected ':'";
                return false;
            }
            jp->p++;
        }
        if (!parse_value(jp, &item) || !push(out, &item, key, &cap)) {
            free(key);
            if (jp->err == NULL)
                jp->err = "out of memory";
            return false;
        }
        ws(jp);
        if (jp->p < jp->end && *jp->p == ',') {
            jp->p++;
            continue;
        }
        if (jp->p < jp->end && *jp->p == (obj ? '}' : ']')) {
            jp->p++;
            return true;
        }
        jp->err = obj ? "expected ',' or '}'" : "expected ',' or ']'";
        return false;
    }
}

static bool parse_value(struct jparser *jp, struct jv *out)
{
    memset(out, 0, sizeof(*out));
    ws(jp);
    if (jp->p >= jp->end) {
        jp->err = "unexpected end";
        return false;
    }
    if (++jp->depth > 64) {
        jp->err = "nested too deeply";
        return false;
    }
    bool ok = true;
    char ch = *jp->p;
    if (ch == '{' || ch == '[') {
        ok = parse_container(jp, out, ch == '{');
    } else if (ch == '"') {
        out->t = J_STR;
        ok = (out->str = parse_string(jp)) != NULL;
    } else if (jp->end - jp->p >= 4 && strncmp(jp->p, "null", 4) == 0) {
        out->t = J_NULL;
        jp->p += 4;
    } else if (jp->end - jp->p >= 4 && strncmp(jp->p, "true", 4) == 0) {
        out->t = J_TRUE;
        jp->p += 4;
    } else if (jp->end - jp->p >= 5 && strncmp(jp->p, "false", 5) == 0) {
        out->t = J_FALSE;
        jp->p += 5;
    } else {
        char *e;
        out->t = J_NUM;
        out->num = strtod(jp->p, &e);
        if (e == jp->p) {
            jp->err = "unexpected character";
            ok = false;
        }
        jp->p = e;
    }
    jp->depth--;
    return ok;
}

static const struct jv *jget(const struct jv *o, const char *key)
{
    if (o == NULL || o->t != J_OBJ)
        return NULL;
    for (size_t i = 0; i < o->n; i++)
        if (strcmp(o->keys[i], key) == 0)
            return &o->items[i];
    return NULL;
}

static const char *jstr_of(const struct jv *o, const char *key)
{
    const struct jv *v = jget(o, key);
    return v && v->t == J_STR ? v->str : NULL;
}

static double jnum_of(const struct jv *o, const char *key)
{
    const struct jv *v = jget(o, key);
    return v && v->t == J_NUM ? v->num : NAN;
}

/* Reads and parses 'path'. The tree is never freed: the program exits right after. */
static bool load(const char *path, struct jv *out)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "vidmm_bench_gate: %s: %s\n", path, strerror(errno));
        return false;
    }
    size_t cap = 1 << 16, len = 0, got;
    char *buf = malloc(cap);
    while (buf != NULL && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            char *t = realloc(buf, cap * 2);
            if (t == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = t;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf == NULL) {
        fprintf(stderr, "vidmm_bench_gate: %s: out of memory\n", path);
        return false;
    }
    struct jparser jp = { buf, buf + len, NULL, 0 };
    if (!parse_value(&jp, out)) {
        fprintf(stderr, "vidmm_bench_gate: %s: bad JSON at byte %ld: %s\n", path, (long)(jp.p - buf),
                jp.err ? jp.err : "?");
        return false;
    }
    const char *schema = jstr_of(out, "schema");
    if (schema == NULL || strcmp(schema, "vidmm-bench-summary/1") != 0) {
        fprintf(stderr, "vidmm_bench_gate: %s: not a vidmm-bench-summary/1 file\n", path);
        return false;
    }
    return true;
}

/* ---------------------------------------------------------------------------------------------
 * The comparison.
 * ------------------------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fputs("usage: vidmm_bench_gate [--tolerance=T] [--fixed] [--strict] [--verbose] [--only=REGEX] OLD NEW\n"
          "  Compares two summary JSON files of vidmm_bench (summary-<mode>.json) and fails (exit 1)\n"
          "  when a case's ratio_memcpy, ratio_memset or ratio_ceiling in NEW is more than a bar below\n"
          "  OLD (relative: new < old * (1 - bar)). The bar is T (default 0.10), widened to the noise\n"
          "  either run showed for that ratio: the case's and its reference's median-below-best\n"
          "  spreads over the repetitions, added.\n"
          "  --fixed    the bar is T, whatever the runs' noise\n"
          "  --strict   also fail when a case measured in OLD failed, was skipped or is missing in\n"
          "             NEW, or when a target met in OLD is not met in NEW\n"
          "  --verbose  print every comparison, not only those beyond the tolerance\n"
          "  --only     compare only cases whose name matches the POSIX extended REGEX\n"
          "  Exit status: 0 pass, 1 regression, 2 usage or input error.\n",
          f);
}

static const struct jv *find_case(const struct jv *cases, const char *name)
{
    for (size_t i = 0; cases && i < cases->n; i++) {
        const char *n = jstr_of(&cases->items[i], "name");
        if (n && strcmp(n, name) == 0)
            return &cases->items[i];
    }
    return NULL;
}

static const char *or_q(const char *s)
{
    return s ? s : "?";
}

static const char *or_empty(const char *s)
{
    return s ? s : "";
}

/* spread() is how far a case's median repetition fell below its best (0 for a single
 * repetition or a missing case): the run's own measure of its noise. */
static double spread(const struct jv *c)
{
    double best = jnum_of(c, "gbps"), median = jnum_of(c, "gbps_median");
    if (c == NULL || !(best > 0) || !(median > 0) || median >= best)
        return 0;
    return 1 - median / best;
}

static bool is_ok(const struct jv *c)
{
    const char *s = jstr_of(c, "status");
    return s != NULL && strcmp(s, "ok") == 0;
}

int main(int argc, char **argv)
{
    double tol = 0.10;
    bool strict = false, verbose = false, fixed = false;
    const char *only = NULL, *files[2] = { NULL, NULL };
    int nfiles = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--tolerance=", 12) == 0) {
            char *e;
            tol = strtod(a + 12, &e);
            if (*e != '\0' || !(tol >= 0 && tol < 1)) {
                fprintf(stderr, "vidmm_bench_gate: bad tolerance '%s' (0 <= T < 1)\n", a + 12);
                return 2;
            }
        } else if (strcmp(a, "--fixed") == 0) {
            fixed = true;
        } else if (strcmp(a, "--strict") == 0) {
            strict = true;
        } else if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0) {
            verbose = true;
        } else if (strncmp(a, "--only=", 7) == 0) {
            only = a + 7;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "vidmm_bench_gate: unknown option %s\n", a);
            usage(stderr);
            return 2;
        } else if (nfiles < 2) {
            files[nfiles++] = a;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (nfiles != 2) {
        usage(stderr);
        return 2;
    }
    regex_t re;
    if (only != NULL && regcomp(&re, only, REG_EXTENDED | REG_NOSUB) != 0) {
        fprintf(stderr, "vidmm_bench_gate: bad --only regex '%s'\n", only);
        return 2;
    }

    struct jv old, new;
    if (!load(files[0], &old) || !load(files[1], &new))
        return 2;
    const struct jv *octx = jget(&old, "context"), *nctx = jget(&new, "context");
    const struct jv *ocases = jget(&old, "cases"), *ncases = jget(&new, "cases");
    if (ocases == NULL || ocases->t != J_ARR || ncases == NULL || ncases->t != J_ARR) {
        fprintf(stderr, "vidmm_bench_gate: a file has no \"cases\" array\n");
        return 2;
    }
    printf("vidmm_bench_gate: old %s (commit %s, %s mode)\n", files[0], or_q(jstr_of(octx, "commit")),
           or_q(jstr_of(octx, "mode")));
    printf("                  new %s (commit %s, %s mode)\n", files[1], or_q(jstr_of(nctx, "commit")),
           or_q(jstr_of(nctx, "mode")));
    const char *ocpu = jstr_of(octx, "cpu_model"), *ncpu = jstr_of(nctx, "cpu_model");
    if (ocpu && ncpu && strcmp(ocpu, ncpu) != 0)
        printf("warning: different CPUs (\"%s\" vs \"%s\"): ratios carry over only roughly\n", ocpu, ncpu);
    if (fixed)
        printf("tolerance %.1f%%: a ratio regresses when new < old x %.3f\n\n", tol * 100, 1 - tol);
    else
        printf("tolerance %.1f%%, widened to each ratio's own noise (median-below-best spread of the\n"
               "case plus its reference, the noisier run's): a ratio regresses when new < old x (1 - bar)\n\n",
               tol * 100);

    static const char *keys[] = { "ratio_memcpy", "ratio_memset", "ratio_ceiling" };
    int compared = 0, regressions = 0, improvements = 0, lost = 0, warnings = 0;
    for (size_t i = 0; i < ncases->n; i++) {
        const struct jv *nc = &ncases->items[i];
        const char *name = jstr_of(nc, "name"), *path = jstr_of(nc, "path");
        if (name == NULL || path == NULL || strcmp(path, "baseline") == 0 || strcmp(path, "ceiling") == 0)
            continue;
        if (only != NULL && regexec(&re, name, 0, NULL, 0) != 0)
            continue;
        const struct jv *oc = find_case(ocases, name);
        if (oc == NULL || !is_ok(oc)) {
            if (verbose)
                printf("  new     %-44s (not measured in old)\n", name);
            continue;
        }
        if (!is_ok(nc)) {
            const char *st = or_q(jstr_of(nc, "status"));
            bool failed = strcmp(st, "failed") == 0;
            printf("%s %-44s measured in old, %s in new: %s\n", failed ? "FAIL   " : "warning", name, st,
                   or_empty(jstr_of(nc, "reason")));
            if (failed)
                regressions++;
            else
                lost++;
            continue;
        }
        for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
            double o = jnum_of(oc, keys[k]), n = jnum_of(nc, keys[k]);
            if (isnan(o) || isnan(n) || !(o > 0))
                continue;
            compared++;
            double change = n / o - 1;
            /* The bar: the tolerance, widened to the spread the runs themselves showed for this
             * ratio, unless --fixed. */
            const char *refkey = k == 2 ? "ceiling" : "baseline";
            double bar = tol;
            if (!fixed) {
                double so = spread(oc) + spread(find_case(ocases, or_empty(jstr_of(oc, refkey))));
                double sn = spread(nc) + spread(find_case(ncases, or_empty(jstr_of(nc, refkey))));
                bar = fmax(tol, fmax(so, sn));
            }
            const char *tag = NULL;
            if (change < -bar) {
                tag = "REGRESS";
                regressions++;
            } else if (change > bar) {
                tag = "better ";
                improvements++;
            } else if (verbose) {
                tag = "same   ";
            }
            if (tag)
                printf("%s %-44s %-14s %7.3f -> %7.3f (%+.1f%%, bar %.1f%%)\n", tag, name, keys[k], o, n,
                       change * 100, bar * 100);
        }
    }
    for (size_t i = 0; i < ocases->n; i++) {
        const struct jv *oc = &ocases->items[i];
        const char *name = jstr_of(oc, "name"), *path = jstr_of(oc, "path");
        if (name == NULL || path == NULL || !is_ok(oc) || strcmp(path, "baseline") == 0 ||
            strcmp(path, "ceiling") == 0 || (only != NULL && regexec(&re, name, 0, NULL, 0) != 0))
            continue;
        if (find_case(ncases, name) == NULL) {
            printf("warning %-44s measured in old, absent from new\n", name);
            lost++;
        }
    }

    const struct jv *otargets = jget(&old, "targets"), *ntargets = jget(&new, "targets");
    for (size_t i = 0; ntargets && ntargets->t == J_ARR && i < ntargets->n; i++) {
        const struct jv *nt = &ntargets->items[i];
        const char *label = jstr_of(nt, "target");
        const struct jv *nmet = jget(nt, "met");
        for (size_t j = 0; label && otargets && otargets->t == J_ARR && j < otargets->n; j++) {
            const struct jv *ot = &otargets->items[j];
            const char *ol = jstr_of(ot, "target");
            const struct jv *omet = jget(ot, "met");
            if (ol == NULL || strcmp(ol, label) != 0 || omet == NULL || omet->t != J_TRUE)
                continue;
            if (nmet != NULL && nmet->t == J_FALSE) {
                printf("warning target no longer met: %s (%.3f -> %.3f)\n", label, jnum_of(ot, "measured"),
                       jnum_of(nt, "measured"));
                warnings++;
            }
        }
    }

    printf("\n%d ratios compared: %d regression(s), %d improvement(s) beyond the bar; %d case(s) no longer "
           "measured; %d target(s) lost\n",
           compared, regressions, improvements, lost, warnings);
    if (only != NULL)
        regfree(&re);
    if (regressions > 0 || (strict && (lost > 0 || warnings > 0))) {
        printf("FAIL\n");
        return 1;
    }
    printf("PASS\n");
    return 0;
}
