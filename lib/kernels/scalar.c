/* SPDX-License-Identifier: MIT */
/* lib/kernels/scalar.c - the portable reference kernels every SIMD backend is tested against.
 * Written for obvious correctness first: 8-byte words through memcpy (which compilers turn into
 * plain moves), bytes at the edges. */
#include <string.h>
#include "kernels/kernel_ops.h"

static void copy_scalar(void *restrict dst, const void *restrict src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    size_t i = 0;

    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        memcpy(d + i, &w, 8);
    }
    for (; i < n; i++)
        d[i] = s[i];
}

static void fill_scalar(void *dst, uint32_t pattern, size_t n)
{
    unsigned char *d = dst;
    uint64_t w = (uint64_t)pattern | ((uint64_t)pattern << 32);
    size_t i = 0;

    /* Little-endian: the word stored at offset i (a multiple of 8, so of 4) starts with byte 0
     * of the pattern. On a big-endian host, store the bytes one by one instead. */
    const uint16_t probe = 1;
    unsigned char little;
    memcpy(&little, &probe, 1);
    if (little) {
        for (; i + 8 <= n; i += 8)
            memcpy(d + i, &w, 8);
    }
    for (; i < n; i++)
        d[i] = (unsigned char)(pattern >> ((i & 3u) * 8u));
}

/* Portable C has no streaming loads or stores: copy_nt, copy_stream and fill_nt are the
 * ordinary kernels, and 'streaming' says so, so that the callers write back or fence as
 * ordinary stores require. */
const struct vidmm_kernel_ops vidmm_ops_scalar = {
    .name = "scalar",
    .backend = VIDMM_BACKEND_SCALAR,
    .streaming = false,
    .stream_loads = false,
    .copy = copy_scalar,
    .copy_nt = copy_scalar,
    .copy_stream = copy_scalar,
    .fill = fill_scalar,
    .fill_nt = fill_scalar,
    .swz_tile16_nt = NULL,
    .swz_rows16_nt = NULL,
    .swz_untile16_stream = NULL,
    .swz_pairs16 = NULL,
    .unswz_pairs16 = NULL,
    .swz_pairs16_nt = NULL,
    .swz_runs64 = NULL,
    .unswz_runs64 = NULL,
    .swz_runs64_nt = NULL,
    .unswz_runs64_nt = NULL,
    .unswz_pairs16_nt = NULL,
    .swz_quads8 = NULL,
    .unswz_quads8 = NULL,
    .swz_lines16 = NULL,
    .swz_lines16_nt = NULL,
    .swz_qlines8_nt = NULL,
    .swz_strip16 = NULL,
    .swz_strip16_nt = NULL,
    .swz_qstrip8_nt = NULL,
    .unswz_strip16 = NULL,
    .unswz_strip16_nt = NULL,
    .swz_qstrip8 = NULL,
    .unswz_qstrip8 = NULL,
    .unswz_qstrip8_nt = NULL,
};
