/* SPDX-License-Identifier: MIT */
/* lib/common/options.c - VIDMM_* environment options: read once, overridable, never fatal. */
#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "common/internal.h"
#include "vidmm/kernels.h"

enum opt_kind { OPT_STRING, OPT_INT, OPT_BOOL, OPT_SIZE };

struct opt_desc {
    const char *name;   /* environment variable */
    enum opt_kind kind;
    long long def;      /* default value (strings: unused) */
    long long min, max; /* accepted range for INT */
};

static const struct opt_desc opt_descs[VIDMM_OPT_COUNT_] = {
    [VIDMM_OPT_BACKEND] = { "VIDMM_BACKEND", OPT_STRING, 0, 0, 0 },
    [VIDMM_OPT_DISABLE_CPU_FEATURES] = { "VIDMM_DISABLE_CPU_FEATURES", OPT_STRING, 0, 0, 0 },
    /* -1 = unset: no hook means no output at all. */
    [VIDMM_OPT_LOG_LEVEL] = { "VIDMM_LOG_LEVEL", OPT_INT, -1, -1, 3 },
    [VIDMM_OPT_NT_THRESHOLD] = { "VIDMM_NT_THRESHOLD", OPT_SIZE, 0, 0, 0 },
    [VIDMM_OPT_WC_COPY] = { "VIDMM_WC_COPY", OPT_STRING, 0, 0, 0 },
    [VIDMM_OPT_NO_CLWB] = { "VIDMM_NO_CLWB", OPT_BOOL, 0, 0, 1 },
    [VIDMM_OPT_NO_CLFLUSHOPT] = { "VIDMM_NO_CLFLUSHOPT", OPT_BOOL, 0, 0, 1 },
    [VIDMM_OPT_CALIBRATE] = { "VIDMM_CALIBRATE", OPT_BOOL, 1, 0, 1 },
    [VIDMM_OPT_SWIZZLE_TUNE_FILE] = { "VIDMM_SWIZZLE_TUNE_FILE", OPT_STRING, 0, 0, 0 },
    [VIDMM_OPT_STREAM_LINEAR_ROWS] = { "VIDMM_STREAM_LINEAR_ROWS", OPT_STRING, 0, 0, 0 },
};

#define OPT_STR_MAX 128

/* Each option is resolved once. 'ready' is published with release order after 'value' and
 * 'str' are written, and read with acquire order, so a reader that sees ready == 1 sees the
 * value. Resolution happens under 'opt_lock' so that two threads never write 'str' at once. */
struct opt_slot {
    atomic_int ready;
    long long value;
    bool has_str;
    char str[OPT_STR_MAX];
};

static struct opt_slot opt_slots[VIDMM_OPT_COUNT_];
static pthread_mutex_t opt_lock = PTHREAD_MUTEX_INITIALIZER;

int vidmm_parse_bool(const char *s)
{
    static const char *const yes[] = { "1", "true", "yes", "on" };
    static const char *const no[] = { "0", "false", "no", "off" };
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0)
            return 1;
        if (strcasecmp(s, no[i]) == 0)
            return 0;
    }
    return VIDMM_E_INVALID_ARG;
}

int vidmm_parse_size(const char *s, unsigned long long *out)
{
    char *end;
    unsigned long long v, mul = 1;

    while (isspace((unsigned char)*s))
        s++;
    if (!isdigit((unsigned char)*s))
        return VIDMM_E_INVALID_ARG;
    v = strtoull(s, &end, 10);
    switch (toupper((unsigned char)*end)) {
    case 'K': mul = 1ull << 10; end++; break;
    case 'M': mul = 1ull << 20; end++; break;
    case 'G': mul = 1ull << 30; end++; break;
    case 'T': mul = 1ull << 40; end++; break;
    default: break;
    }
    if (mul != 1 && (*end == 'i' || *end == 'I'))
        end++;
    if (mul != 1 && (*end == 'b' || *end == 'B'))
        end++;
    if (*end != '\0' || v > ~0ull / mul)
        return VIDMM_E_INVALID_ARG;
    *out = v * mul;
    return 0;
}

/* parse() turns text into the option's value. Returns 0 or VIDMM_E_INVALID_ARG. */
static int parse(const struct opt_desc *d, const char *text, long long *value)
{
    unsigned long long sz;
    char *end;
    long long v;
    int b;

    switch (d->kind) {
    case OPT_STRING:
        if (strlen(text) >= OPT_STR_MAX)
            return VIDMM_E_INVALID_ARG;
        *value = 1;
        return 0;
    case OPT_BOOL:
        b = vidmm_parse_bool(text);
        if (b < 0)
            return b;
        *value = b;
        return 0;
    case OPT_SIZE:
        if (vidmm_parse_size(text, &sz) < 0 || sz > (unsigned long long)INT64_MAX)
            return VIDMM_E_INVALID_ARG;
        *value = (long long)sz;
        return 0;
    case OPT_INT:
        v = strtoll(text, &end, 10);
        if (end == text || *end != '\0' || v < d->min || v > d->max)
            return VIDMM_E_INVALID_ARG;
        *value = v;
        return 0;
    }
    return VIDMM_E_INVALID_ARG;
}

/* resolve() reads option 'opt' from the environment unless it is resolved already. */
static struct opt_slot *resolve(enum vidmm_option opt)
{
    struct opt_slot *s = &opt_slots[opt];
    const struct opt_desc *d = &opt_descs[opt];
    const char *env;
    bool bad = false;

    if (atomic_load_explicit(&s->ready, memory_order_acquire))
        return s;
    pthread_mutex_lock(&opt_lock);
    if (!atomic_load_explicit(&s->ready, memory_order_relaxed)) {
        long long v = d->def;
        s->has_str = false;
        env = getenv(d->name);
        if (env != NULL && *env != '\0') {
            if (parse(d, env, &v) == 0) {
                if (d->kind == OPT_STRING) {
                    strcpy(s->str, env);
                    s->has_str = true;
                }
            } else {
                v = d->def;
                bad = true;
            }
        }
        s->value = v;
        /* Pairs with the acquire loads above and in vidmm_option_get(). */
        atomic_store_explicit(&s->ready, 1, memory_order_release);
    }
    pthread_mutex_unlock(&opt_lock);
    /* Logged after the slot is ready: the log path reads VIDMM_LOG_LEVEL through here. */
    if (bad)
        vidmm_log(VIDMM_LOG_WARN, "%s='%s' is not a valid value; using the default", d->name, getenv(d->name));
    return s;
}

long long vidmm_option_get(enum vidmm_option opt)
{
    if ((unsigned)opt >= VIDMM_OPT_COUNT_)
        return 0;
    return resolve(opt)->value;
}

const char *vidmm_option_get_string(enum vidmm_option opt)
{
    struct opt_slot *s;
    if ((unsigned)opt >= VIDMM_OPT_COUNT_ || opt_descs[opt].kind != OPT_STRING)
        return NULL;
    s = resolve(opt);
    return s->has_str ? s->str : NULL;
}

static int set_slot(enum vidmm_option opt, long long value, const char *str)
{
    struct opt_slot *s = &opt_slots[opt];
    pthread_mutex_lock(&opt_lock);
    s->value = value;
    s->has_str = str != NULL;
    if (str != NULL)
        strcpy(s->str, str);
    atomic_store_explicit(&s->ready, 1, memory_order_release);
    pthread_mutex_unlock(&opt_lock);
    return 0;
}

int vidmm_option_set(enum vidmm_option opt, long long value)
{
    const struct opt_desc *d;
    if ((unsigned)opt >= VIDMM_OPT_COUNT_)
        return vidmm_refuse("vidmm_option_set", "opt", "unknown option", "common.h");
    d = &opt_descs[opt];
    switch (d->kind) {
    case OPT_STRING:
        return vidmm_refuse("vidmm_option_set", d->name, "a string option: use vidmm_option_set_string()", "common.h");
    case OPT_BOOL:
        if (value != 0 && value != 1)
            return vidmm_refuse("vidmm_option_set", d->name, "a boolean is 0 or 1", "common.h");
        break;
    case OPT_INT:
        if (value < d->min || value > d->max)
            return vidmm_refuse("vidmm_option_set", d->name, "out of range", "common.h");
        break;
    case OPT_SIZE:
        if (value < 0)
            return vidmm_refuse("vidmm_option_set", d->name, "a negative size", "common.h");
        break;
    }
    return set_slot(opt, value, NULL);
}

/* A string option's words, as common.h lists them, read as their users read them: backend names
 * in any case (vidmm_backend_from_string()), the copy-to-WC variants exactly (copy.c), and for
 * VIDMM_DISABLE_CPU_FEATURES a list of vidmm_cpu_feature_name()'s names and "avx512", in any
 * case, split at commas and spaces (dispatch.c parse_mask()). */
static const char *const wc_words[] = { "auto", "nt", "movdir64b", NULL };
static const char *const policy_words[] = { "auto", "on", "off", NULL };

static bool word_in(const char *const *words, const char *w, size_t len, bool any_case)
{
    for (size_t i = 0; words[i] != NULL; i++)
        if (strlen(words[i]) == len && (any_case ? strncasecmp(w, words[i], len) : strncmp(w, words[i], len)) == 0)
            return true;
    return false;
}

static bool feature_word(const char *w, size_t len)
{
    if (len == 6 && strncasecmp(w, "avx512", 6) == 0)
        return true;
    for (unsigned b = 0; b < 64; b++) {
        const char *name = vidmm_cpu_feature_name(1ull << b);
        if (name != NULL && strlen(name) == len && strncasecmp(w, name, len) == 0)
            return true;
    }
    return false;
}

/* check_words() refuses a string option's value that is not one of its words (not a list of
 * them), naming the option, the value and - for a list - the first word that is not one. The
 * environment's values are not checked here: a bad one there is warned about where it is used,
 * and the default taken (common.h). */
static int check_words(enum vidmm_option opt, const char *text)
{
    const char *name = opt_descs[opt].name;
    switch (opt) {
    case VIDMM_OPT_BACKEND:
        if (vidmm_backend_from_string(text) >= 0)
            return 0;
        vidmm_log(VIDMM_LOG_DEBUG, "vidmm_option_set_string: %s: '%s' is not auto|scalar|sse2|avx2|avx512|neon "
                                   "(spec common.h)", name, text);
        return VIDMM_E_INVALID_ARG;
    case VIDMM_OPT_WC_COPY:
        if (word_in(wc_words, text, strlen(text), false))
            return 0;
        vidmm_log(VIDMM_LOG_DEBUG, "vidmm_option_set_string: %s: '%s' is not auto|nt|movdir64b (spec common.h)", name,
                  text);
        return VIDMM_E_INVALID_ARG;
    case VIDMM_OPT_STREAM_LINEAR_ROWS:
        if (word_in(policy_words, text, strlen(text), false))
            return 0;
        vidmm_log(VIDMM_LOG_DEBUG, "vidmm_option_set_string: %s: '%s' is not auto|on|off (spec common.h)", name, text);
        return VIDMM_E_INVALID_ARG;
    case VIDMM_OPT_DISABLE_CPU_FEATURES:
        for (const char *p = text; *p != '\0';) {
            size_t len = strcspn(p, ", ");
            if (len > 0 && !feature_word(p, len)) {
                vidmm_log(VIDMM_LOG_DEBUG, "vidmm_option_set_string: %s: '%s': '%.*s' is not a CPU feature name "
                                           "(spec common.h, vidmm_cpu_feature_name())", name, text, (int)len, p);
                return VIDMM_E_INVALID_ARG;
            }
            p += len;
            p += strspn(p, ", ");
        }
        return 0;
    default:
        return 0;
    }
}

int vidmm_option_set_string(enum vidmm_option opt, const char *text)
{
    long long v;
    if ((unsigned)opt >= VIDMM_OPT_COUNT_)
        return vidmm_refuse("vidmm_option_set_string", "opt", "unknown option", "common.h");
    if (text == NULL) { /* back to unset (strings) or the default */
        if (opt_descs[opt].kind != OPT_STRING)
            return set_slot(opt, opt_descs[opt].def, NULL);
        return set_slot(opt, 0, NULL);
    }
    if (parse(&opt_descs[opt], text, &v) < 0)
        return vidmm_refuse("vidmm_option_set_string", opt_descs[opt].name, "not a valid value", "common.h");
    if (opt_descs[opt].kind == OPT_STRING && check_words(opt, text) < 0)
        return VIDMM_E_INVALID_ARG;
    return set_slot(opt, v, opt_descs[opt].kind == OPT_STRING ? text : NULL);
}

const char *vidmm_option_name(enum vidmm_option opt)
{
    if ((unsigned)opt >= VIDMM_OPT_COUNT_)
        return NULL;
    return opt_descs[opt].name;
}
