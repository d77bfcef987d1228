/* SPDX-License-Identifier: MIT */
/* lib/arch/x86/kernels_template.h - copy and fill kernels for one vector width.
 *
 * Included once per backend file, which defines, before including:
 *   VL            vector width in bytes (16, 32, 64)
 *   VEC           the vector type
 *   LOADU(p)      unaligned load            STOREU(p, v)  unaligned store
 *   STORE(p, v)   aligned store             STREAM(p, v)  aligned streaming (non-temporal) store
 *   STREAM_LOAD(p) aligned streaming load (MOVNTDQA), or leave HAVE_STREAM_LOAD 0
 *   HAVE_STREAM_LOAD  1 when STREAM_LOAD exists
 *   SET1_32(x)    broadcast a 32-bit value
 *   OPS_NAME      the table's symbol (vidmm_ops_avx2), BACKEND its enum, BACKEND_NAME its name
 * Everything here is static to the including file, and every macro is #undef'd at the end.
 *
 * The loops work on 64-byte lines because that is what a write-combining buffer holds: a
 * streaming copy writes each whole line back to back so the buffer leaves as one burst, and
 * never a partial line (partial WC writes become several bus transactions). */

#include <string.h>
#include "kernels/kernel_ops.h"

#define LINE 64
#define PER_LINE (LINE / VL)

/* copy_small() copies n <= 64 bytes with at most four (overlapping) moves. 16..64 bytes take
 * SSE2 moves, which every x86 backend has; integer moves below. All loads come before the
 * stores, so overlapping halves are safe. Written without memcpy() into arrays, which GCC
 * would spill through an aligned stack frame. */
static inline __attribute__((always_inline)) void copy_small(unsigned char *d, const unsigned char *s, size_t n)
{
    if (n >= 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)s);
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + n - 16));
        if (n > 32) {
            __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(s + 16));
            __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(s + n - 32));
            _mm_storeu_si128((__m128i *)(void *)(d + 16), c);
            _mm_storeu_si128((__m128i *)(void *)(d + n - 32), e);
        }
        _mm_storeu_si128((__m128i *)(void *)d, a);
        _mm_storeu_si128((__m128i *)(void *)(d + n - 16), b);
    } else if (n >= 8) {
        uint64_t a, b;
        memcpy(&a, s, 8);
        memcpy(&b, s + n - 8, 8);
        memcpy(d, &a, 8);
        memcpy(d + n - 8, &b, 8);
    } else if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + n - 4, 4);
        memcpy(d, &a, 4);
        memcpy(d + n - 4, &b, 4);
    } else if (n >= 2) {
        uint16_t a, b;
        memcpy(&a, s, 2);
        memcpy(&b, s + n - 2, 2);
        memcpy(d, &a, 2);
        memcpy(d + n - 2, &b, 2);
    } else if (n == 1) {
        d[0] = s[0];
    }
}

/* copy_t(): ordinary stores. The first and last vectors are loaded up front and stored last,
 * unaligned; in between, the destination is walked aligned, four vectors at a time. */
static void copy_t(void *restrict dst, const void *restrict src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;

    if (n <= 64) {
        copy_small(d, s, n);
        return;
    }
    VEC head = LOADU(s);
    VEC tail = LOADU(s + n - VL);
    size_t skip = VL - ((uintptr_t)d & (VL - 1));
    unsigned char *dd = d + skip;
    const unsigned char *ss = s + skip;
    size_t rem = n - skip;

    for (; rem >= 4 * VL; rem -= 4 * VL, dd += 4 * VL, ss += 4 * VL) {
        VEC v0 = LOADU(ss), v1 = LOADU(ss + VL), v2 = LOADU(ss + 2 * VL), v3 = LOADU(ss + 3 * VL);
        STORE(dd, v0);
        STORE(dd + VL, v1);
        STORE(dd + 2 * VL, v2);
        STORE(dd + 3 * VL, v3);
    }
    /* At most three vectors remain. Straight-line code on purpose: GCC turns a loop of whole
     * vector moves into 'rep movsq', whose start-up cost tripled the time of a 256-byte copy. */
    if (rem >= VL) {
        STORE(dd, LOADU(ss));
        if (rem >= 2 * VL) {
            STORE(dd + VL, LOADU(ss + VL));
            if (rem >= 3 * VL)
                STORE(dd + 2 * VL, LOADU(ss + 2 * VL));
        }
    }
    STOREU(d, head);
    STOREU(d + n - VL, tail);
}

/* copy_nt(): whole destination lines with streaming stores, edges with ordinary stores. The
 * edges never overlap the streamed lines, so no byte is written by both kinds of store. */
static void copy_nt(void *restrict dst, const void *restrict src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    uintptr_t a = ((uintptr_t)d + LINE - 1) & ~(uintptr_t)(LINE - 1);
    uintptr_t e = ((uintptr_t)d + n) & ~(uintptr_t)(LINE - 1);

    if (n < LINE || a >= e) {
        copy_t(d, s, n);
        return;
    }
    size_t head = a - (uintptr_t)d;
    copy_small(d, s, head);
    unsigned char *dd = (unsigned char *)a;
    const unsigned char *ss = s + head;
    size_t lines = (e - a) / LINE;

    for (; lines >= 4; lines -= 4, dd += 4 * LINE, ss += 4 * LINE) {
        for (int k = 0; k < 4 * PER_LINE; k++)
            STREAM(dd + k * VL, LOADU(ss + k * VL));
    }
    for (; lines > 0; lines--, dd += LINE, ss += LINE) {
        for (int k = 0; k < PER_LINE; k++)
            STREAM(dd + k * VL, LOADU(ss + k * VL));
    }
    copy_small(dd, ss, (uintptr_t)d + n - e);
}

/* copy_stream(): reading write-combined (uncached) memory. Ordinary loads from WC memory are
 * uncached, one bus read each; MOVNTDQA reads a whole line into a streaming buffer and serves
 * the rest of the line from it. So the source is walked by whole aligned lines. */
static void copy_stream(void *restrict dst, const void *restrict src, size_t n)
{
#if HAVE_STREAM_LOAD
    unsigned char *d = dst;
    const unsigned char *s = src;
    uintptr_t a = ((uintptr_t)s + LINE - 1) & ~(uintptr_t)(LINE - 1);
    uintptr_t e = ((uintptr_t)s + n) & ~(uintptr_t)(LINE - 1);

    if (n < LINE || a >= e) {
        copy_t(d, s, n);
        return;
    }
    size_t head = a - (uintptr_t)s;
    copy_small(d, s, head);
    unsigned char *dd = d + head;
    const unsigned char *ss = (const unsigned char *)a;
    size_t lines = (e - a) / LINE;

    for (; lines >= 4; lines -= 4, dd += 4 * LINE, ss += 4 * LINE) {
        VEC v[4 * PER_LINE];
        for (int k = 0; k < 4 * PER_LINE; k++)
            v[k] = STREAM_LOAD(ss + k * VL);
        for (int k = 0; k < 4 * PER_LINE; k++)
            STOREU(dd + k * VL, v[k]);
    }
    for (; lines > 0; lines--, dd += LINE, ss += LINE) {
        for (int k = 0; k < PER_LINE; k++)
            STOREU(dd + k * VL, STREAM_LOAD(ss + k * VL));
    }
    copy_small(dd, ss, (uintptr_t)s + n - e);
#else
    copy_t(dst, src, n);
#endif
}

/* fill_small() fills n <= 64 bytes, byte i = byte i % 4 of 'pattern' (little-endian). */
static inline __attribute__((always_inline)) void fill_small(unsigned char *d, uint32_t pattern, size_t n)
{
    uint64_t w = (uint64_t)pattern | ((uint64_t)pattern << 32);
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        memcpy(d + i, &w, 8);
    if (i + 4 <= n) {
        memcpy(d + i, &pattern, 4);
        i += 4;
    }
    for (; i < n; i++)
        d[i] = (unsigned char)(pattern >> ((i & 3u) * 8u));
}

/* fill_t(): ordinary stores; the vector stored at offset k carries the pattern rotated by k. */
static void fill_t(void *dst, uint32_t pattern, size_t n)
{
    unsigned char *d = dst;

    if (n <= 64) {
        fill_small(d, pattern, n);
        return;
    }
    size_t skip = VL - ((uintptr_t)d & (VL - 1));
    unsigned char *dd = d + skip;
    size_t rem = n - skip;
    VEC v = SET1_32((int)vidmm_pattern_at(pattern, skip));

    for (; rem >= 4 * VL; rem -= 4 * VL, dd += 4 * VL) {
        STORE(dd, v);
        STORE(dd + VL, v);
        STORE(dd + 2 * VL, v);
        STORE(dd + 3 * VL, v);
    }
    for (; rem >= VL; rem -= VL, dd += VL)
        STORE(dd, v);
    STOREU(d, SET1_32((int)pattern));
    STOREU(d + n - VL, SET1_32((int)vidmm_pattern_at(pattern, n - VL)));
}

/* fill_nt(): whole lines with streaming stores (every line starts at the same pattern phase,
 * since 64 is a multiple of 4), edges with ordinary stores. */
static void fill_nt(void *dst, uint32_t pattern, size_t n)
{
    unsigned char *d = dst;
    uintptr_t a = ((uintptr_t)d + LINE - 1) & ~(uintptr_t)(LINE - 1);
    uintptr_t e = ((uintptr_t)d + n) & ~(uintptr_t)(LINE - 1);

    if (n < LINE || a >= e) {
        fill_t(d, pattern, n);
        return;
    }
    size_t head = a - (uintptr_t)d;
    fill_small(d, pattern, head);
    VEC v = SET1_32((int)vidmm_pattern_at(pattern, head));
    unsigned char *dd = (unsigned char *)a;
    size_t lines = (e - a) / LINE;

    for (; lines >= 4; lines -= 4, dd += 4 * LINE)
        for (int k = 0; k < 4 * PER_LINE; k++)
            STREAM(dd + k * VL, v);
    for (; lines > 0; lines--, dd += LINE)
        for (int k = 0; k < PER_LINE; k++)
            STREAM(dd + k * VL, v);
    fill_small(dd, vidmm_pattern_at(pattern, e - (uintptr_t)d), (uintptr_t)d + n - e);
}

/* swz_tile16_nt(): one tile of a swizzle, written in address order with streaming stores, its
 * 16-byte granules gathered from the linear rows. 16 bytes is the run of every layout this
 * serves (the GOB, Intel Y/Tile4, the D3D tables), so SSE2 moves suit every backend. What
 * matters is that each 64-byte line is written whole and the lines back to back, without being
 * read for ownership (shared/perf-notes.md: 0.95-1.01x memcpy for block-linear tiling at 64 MiB
 * with streaming stores, 0.27-0.29x with ordinary ones). Writing in row order instead left up
 * to 32 lines half-written at once in the D3D layouts and ran 4x slower than ordinary stores. */
static void swz_tile16_nt(unsigned char *tile, const unsigned char *lin, size_t row_pitch, const uint16_t *inv,
                          unsigned granules, unsigned gxor)
{
    for (unsigned g = 0; g < granules; g += 4) {
        __m128i v[4];
        for (unsigned k = 0; k < 4; k++) {
            unsigned e = inv[(g + k) ^ gxor];
            v[k] = _mm_loadu_si128((const __m128i *)(const void *)(lin + (e >> 6) * row_pitch + 16 * (e & 63)));
        }
        for (unsigned k = 0; k < 4; k++)
            _mm_stream_si128((__m128i *)(void *)(tile + 16 * (g + k)), v[k]);
    }
}

/* swz_untile16_stream(): the reverse of swz_tile16_nt() for a write-combined tiled source. */
static void swz_untile16_stream(const unsigned char *tile, unsigned char *lin, size_t row_pitch,
                                const uint16_t *inv, unsigned granules, unsigned gxor)
{
    for (unsigned g = 0; g < granules; g += 4) {
        __m128i v[4];
        for (unsigned k = 0; k < 4; k++) {
#if HAVE_STREAM_LOAD
            v[k] = _mm_stream_load_si128((__m128i *)(void *)(uintptr_t)(tile + 16 * (g + k)));
#else
            v[k] = _mm_load_si128((const __m128i *)(const void *)(tile + 16 * (g + k)));
#endif
        }
        for (unsigned k = 0; k < 4; k++) {
            unsigned e = inv[(g + k) ^ gxor];
            _mm_storeu_si128((__m128i *)(void *)(lin + (e >> 6) * row_pitch + 16 * (e & 63)), v[k]);
        }
    }
}

/* swz_rows16_nt(): the same, row by row; for the GOB, where a tile row touches four lines and
 * two rows complete them, this order measured faster than the gather. */
static void swz_rows16_nt(unsigned char *tile, const unsigned char *lin, size_t row_pitch, const uint32_t *xo,
                          const uint32_t *yo, uint32_t zoff, unsigned ncols, unsigned nrows)
{
    for (unsigned r = 0; r < nrows; r++) {
        const uint32_t yoff = yo[r] ^ zoff;
        const unsigned char *lrow = lin + r * row_pitch;
        for (unsigned c = 0; c < ncols; c++)
            _mm_stream_si128((__m128i *)(void *)(tile + (xo[c] ^ yoff)),
                             _mm_loadu_si128((const __m128i *)(const void *)(lrow + 16 * c)));
    }
}

const struct vidmm_kernel_ops OPS_NAME = {
    .name = BACKEND_NAME,
    .backend = BACKEND,
    .streaming = true,
    .stream_loads = HAVE_STREAM_LOAD,
    .copy = copy_t,
    .copy_nt = copy_nt,
    .copy_stream = copy_stream,
    .fill = fill_t,
    .fill_nt = fill_nt,
    .swz_tile16_nt = swz_tile16_nt,
    .swz_rows16_nt = swz_rows16_nt,
    .swz_untile16_stream = swz_untile16_stream,
};

#undef LINE
#undef PER_LINE
#undef VL
#undef VEC
#undef LOADU
#undef STOREU
#undef STORE
#undef STREAM
#undef STREAM_LOAD
#undef HAVE_STREAM_LOAD
#undef SET1_32
#undef OPS_NAME
#undef BACKEND
#undef BACKEND_NAME
