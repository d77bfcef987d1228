/* SPDX-License-Identifier: MIT */
/* tests/swizzle/swz_golden.h - reading shared/golden: the manifest (a small parser for its
 * format: one JSON array of flat objects of strings and integers), the generator_args grammar
 * of tiling.md 1.2 turned into surface descriptions, and the binary files. */
#ifndef VIDMM_TESTS_SWZ_GOLDEN_H
#define VIDMM_TESTS_SWZ_GOLDEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ref_model.h"

struct golden_case {
    char *id, *reference, *args, *result, *linear_file, *tiled_file, *fnv_tiled, *fnv_linear;
    uint64_t tiled_bytes, linear_bytes;
    bool has_tiled_bytes, has_linear_bytes;
};

struct golden_set {
    char dir[4096];
    struct golden_case *cases;
    size_t n;
};

/* The directory: $VIDMM_GOLDEN_DIR, else the build's default (VIDMM_GOLDEN_DEFAULT_DIR). */
const char *golden_dir(void);

/* golden_load() reads <dir>/manifest.json. Returns 0; 1 when the directory or the manifest does
 * not exist (the caller skips); -1 on a parse error (message in 'err'). */
int golden_load(struct golden_set *set, char *err, size_t errcap);
void golden_free(struct golden_set *set);

/* What one case's generator_args describe. */
enum golden_family { GF_BLOCK_LINEAR, GF_INTEL, GF_EQUATION, GF_MORTON };
struct golden_desc {
    enum golden_family family;
    struct ref_surf s;
    /* Intel: the rectangle in bytes and the rounded surface of 4.2 (the linear file's shape). */
    uint32_t x1, x2, y1, y2;
    uint64_t pitch, rows;
    /* block-linear "mip" commands: block height printed in 'result' (0 if absent). */
    uint32_t result_block_height;
    uint8_t fill;                   /* the tiled buffer's fill byte: 0x00, 0xCC for intel_ */
};

/* golden_describe() maps a case (tiling.md 1.2) to a surface. Returns false with a message. */
bool golden_describe(const struct golden_case *c, struct golden_desc *d, char *err, size_t errcap);

/* golden_read() reads <dir>/<name> whole. Returns false with a message. */
bool golden_read(const struct golden_set *set, const char *name, unsigned char **data, size_t *len, char *err,
                 size_t errcap);

/* FNV-1a 64 with the standard offset basis, as 16 lower-case hex digits (1.5). */
void golden_fnv_hex(const void *p, size_t n, char out[17]);

#endif /* VIDMM_TESTS_SWZ_GOLDEN_H */
