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

/* pairs16_body() is swz_pairs16 / unswz_pairs16 (kernel_ops.h) for 'ncols' runs, forced inline
 * so that the callers below instantiate it with constant column counts: the run loop unrolls and
 * the column offsets, copied to a local array that no store can alias, stay in registers or
 * become stack operands, so each move is a load, a store and one XOR per row pair.
 *
 * With 32-byte vectors, two neighbouring runs of two rows are two 32-byte loads and two lane
 * permutes away from their two granules: row r = [a0 a1], row r + 1 = [b0 b1] give [a0 b0] at
 * xo[c] and [a1 b1] at xo[c + 1] (and the reverse when untiling): half the loads of moving
 * 16-byte halves, and half the stores of the portable walk. With 16-byte vectors each granule
 * is two 16-byte moves. Runs left over from groups of four move alone. */
static inline __attribute__((always_inline)) void pairs16_body(unsigned char *tile, unsigned char *lin,
                                                               size_t row_pitch, const uint32_t *xo,
                                                               const uint32_t *yo, uint32_t zoff, unsigned ncols,
                                                               unsigned npairs, bool untile, bool nt, bool add)
{
    uint32_t x[64];

    for (unsigned c = 0; c < ncols; c++)
        x[c] = xo[c];
    unsigned char *lrun = lin; /* the add variant's rows: a pointer stepped (fewer instructions
                                  there; in the other it cost the SSE2 body 12%: the gate's bl rows) */
    for (unsigned p = 0; p < npairs; p++, lrun += 2 * row_pitch) {
        const uint32_t yoff = yo[2 * p] ^ zoff;
        unsigned char *l0 = add ? lrun : lin + 2 * p * row_pitch, *l1 = l0 + row_pitch;
        /* With 'add' no column offset shares a bit with a row's (the caller checked): the XOR is
         * an addition, and each run's address one addressing mode off the row's tile byte. */
        unsigned char *const trow = add ? tile + yoff : tile;
#define PAIR_AT(c) (add ? trow + x[c] : tile + (x[c] ^ yoff))
        unsigned c = 0;
        /* Four runs at a time, so that each row's 64 bytes are written back to back: with rows
         * written in turn 16 or 32 bytes at a time, untiling the GOB ran 25% (AVX2) and 70%
         * (SSE2) slower than the portable row-by-row walk (4 MiB, pitch 4096, Zen 3). */
        for (; c + 4 <= ncols; c += 4) {
            unsigned char *t0 = PAIR_AT(c), *t1 = PAIR_AT(c + 1);
            unsigned char *t2 = PAIR_AT(c + 2), *t3 = PAIR_AT(c + 3);
#if VL >= 32
#if VL >= 64
            if (nt) {
                /* Streaming, a line per 64-byte store: to the tile, granules c and c + 1 are the
                 * two halves of one line (the pair-line layout, kernel_ops.h swz_pairs16_nt); to
                 * the linear side, each row's 64 bytes. */
                if (!untile) {
                    __m256i a0 = _mm256_loadu_si256((const __m256i *)(const void *)(l0 + 16 * c));
                    __m256i a1 = _mm256_loadu_si256((const __m256i *)(const void *)(l0 + 16 * c + 32));
                    __m256i b0 = _mm256_loadu_si256((const __m256i *)(const void *)(l1 + 16 * c));
                    __m256i b1 = _mm256_loadu_si256((const __m256i *)(const void *)(l1 + 16 * c + 32));
                    __m512i la = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_permute2x128_si256(a0, b0, 0x20)),
                                                    _mm256_permute2x128_si256(a0, b0, 0x31), 1);
                    __m512i lb = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_permute2x128_si256(a1, b1, 0x20)),
                                                    _mm256_permute2x128_si256(a1, b1, 0x31), 1);
                    _mm512_stream_si512((void *)t0, la);
                    _mm512_stream_si512((void *)t2, lb);
                } else {
                    __m256i g0 = _mm256_loadu_si256((const __m256i *)(const void *)t0);
                    __m256i g1 = _mm256_loadu_si256((const __m256i *)(const void *)t1);
                    __m256i g2 = _mm256_loadu_si256((const __m256i *)(const void *)t2);
                    __m256i g3 = _mm256_loadu_si256((const __m256i *)(const void *)t3);
                    __m512i r0 = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_permute2x128_si256(g0, g1, 0x20)),
                                                    _mm256_permute2x128_si256(g2, g3, 0x20), 1);
                    __m512i r1 = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_permute2x128_si256(g0, g1, 0x31)),
                                                    _mm256_permute2x128_si256(g2, g3, 0x31), 1);
                    _mm512_stream_si512((void *)(l0 + 16 * c), r0);
                    _mm512_stream_si512((void *)(l1 + 16 * c), r1);
                }
                continue;
            }
#endif
            if (!untile) {
                __m256i a0 = _mm256_loadu_si256((const __m256i *)(const void *)(l0 + 16 * c));
                __m256i a1 = _mm256_loadu_si256((const __m256i *)(const void *)(l0 + 16 * c + 32));
                __m256i b0 = _mm256_loadu_si256((const __m256i *)(const void *)(l1 + 16 * c));
                __m256i b1 = _mm256_loadu_si256((const __m256i *)(const void *)(l1 + 16 * c + 32));
                if (nt) {
                    _mm256_stream_si256((__m256i *)(void *)t0, _mm256_permute2x128_si256(a0, b0, 0x20));
                    _mm256_stream_si256((__m256i *)(void *)t1, _mm256_permute2x128_si256(a0, b0, 0x31));
                    _mm256_stream_si256((__m256i *)(void *)t2, _mm256_permute2x128_si256(a1, b1, 0x20));
                    _mm256_stream_si256((__m256i *)(void *)t3, _mm256_permute2x128_si256(a1, b1, 0x31));
                    continue;
                }
                _mm256_storeu_si256((__m256i *)(void *)t0, _mm256_permute2x128_si256(a0, b0, 0x20));
                _mm256_storeu_si256((__m256i *)(void *)t1, _mm256_permute2x128_si256(a0, b0, 0x31));
                _mm256_storeu_si256((__m256i *)(void *)t2, _mm256_permute2x128_si256(a1, b1, 0x20));
                _mm256_storeu_si256((__m256i *)(void *)t3, _mm256_permute2x128_si256(a1, b1, 0x31));
            } else {
                __m256i g0 = _mm256_loadu_si256((const __m256i *)(const void *)t0);
                __m256i g1 = _mm256_loadu_si256((const __m256i *)(const void *)t1);
                __m256i g2 = _mm256_loadu_si256((const __m256i *)(const void *)t2);
                __m256i g3 = _mm256_loadu_si256((const __m256i *)(const void *)t3);
                if (nt) {
                    _mm256_stream_si256((__m256i *)(void *)(l0 + 16 * c), _mm256_permute2x128_si256(g0, g1, 0x20));
                    _mm256_stream_si256((__m256i *)(void *)(l0 + 16 * c + 32), _mm256_permute2x128_si256(g2, g3, 0x20));
                    _mm256_stream_si256((__m256i *)(void *)(l1 + 16 * c), _mm256_permute2x128_si256(g0, g1, 0x31));
                    _mm256_stream_si256((__m256i *)(void *)(l1 + 16 * c + 32), _mm256_permute2x128_si256(g2, g3, 0x31));
                    continue;
                }
                _mm256_storeu_si256((__m256i *)(void *)(l0 + 16 * c), _mm256_permute2x128_si256(g0, g1, 0x20));
                _mm256_storeu_si256((__m256i *)(void *)(l0 + 16 * c + 32), _mm256_permute2x128_si256(g2, g3, 0x20));
                _mm256_storeu_si256((__m256i *)(void *)(l1 + 16 * c), _mm256_permute2x128_si256(g0, g1, 0x31));
                _mm256_storeu_si256((__m256i *)(void *)(l1 + 16 * c + 32), _mm256_permute2x128_si256(g2, g3, 0x31));
            }
#else
            unsigned char *t[4] = { t0, t1, t2, t3 };
            __m128i a[4], b[4];
            if (!untile) {
                for (unsigned k = 0; k < 4; k++) {
                    a[k] = _mm_loadu_si128((const __m128i *)(const void *)(l0 + 16 * (c + k)));
                    b[k] = _mm_loadu_si128((const __m128i *)(const void *)(l1 + 16 * (c + k)));
                }
                for (unsigned k = 0; k < 4; k++) {
                    if (nt) {
                        _mm_stream_si128((__m128i *)(void *)t[k], a[k]);
                        _mm_stream_si128((__m128i *)(void *)(t[k] + 16), b[k]);
                    } else {
                        _mm_storeu_si128((__m128i *)(void *)t[k], a[k]);
                        _mm_storeu_si128((__m128i *)(void *)(t[k] + 16), b[k]);
                    }
                }
            } else {
                for (unsigned k = 0; k < 4; k++) {
                    a[k] = _mm_loadu_si128((const __m128i *)(const void *)t[k]);
                    b[k] = _mm_loadu_si128((const __m128i *)(const void *)(t[k] + 16));
                }
                for (unsigned k = 0; k < 4; k++) {
                    if (nt)
                        _mm_stream_si128((__m128i *)(void *)(l0 + 16 * (c + k)), a[k]);
                    else
                        _mm_storeu_si128((__m128i *)(void *)(l0 + 16 * (c + k)), a[k]);
                }
                for (unsigned k = 0; k < 4; k++) {
                    if (nt)
                        _mm_stream_si128((__m128i *)(void *)(l1 + 16 * (c + k)), b[k]);
                    else
                        _mm_storeu_si128((__m128i *)(void *)(l1 + 16 * (c + k)), b[k]);
                }
            }
#endif
        }
#if VL >= 32
        if (!nt && c + 2 <= ncols) {
            /* Two runs left: one granule pair, as above. */
            unsigned char *t0 = PAIR_AT(c), *t1 = PAIR_AT(c + 1);
            if (!untile) {
                __m256i a0 = _mm256_loadu_si256((const __m256i *)(const void *)(l0 + 16 * c));
                __m256i b0 = _mm256_loadu_si256((const __m256i *)(const void *)(l1 + 16 * c));
                _mm256_storeu_si256((__m256i *)(void *)t0, _mm256_permute2x128_si256(a0, b0, 0x20));
                _mm256_storeu_si256((__m256i *)(void *)t1, _mm256_permute2x128_si256(a0, b0, 0x31));
            } else {
                __m256i g0 = _mm256_loadu_si256((const __m256i *)(const void *)t0);
                __m256i g1 = _mm256_loadu_si256((const __m256i *)(const void *)t1);
                _mm256_storeu_si256((__m256i *)(void *)(l0 + 16 * c), _mm256_permute2x128_si256(g0, g1, 0x20));
                _mm256_storeu_si256((__m256i *)(void *)(l1 + 16 * c), _mm256_permute2x128_si256(g0, g1, 0x31));
            }
            c += 2;
        }
#endif
        for (; c < ncols; c++) {
            unsigned char *t = PAIR_AT(c);
            if (!untile) {
                __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(l0 + 16 * c));
                __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(l1 + 16 * c));
                _mm_storeu_si128((__m128i *)(void *)t, a);
                _mm_storeu_si128((__m128i *)(void *)(t + 16), b);
            } else {
                __m128i a = _mm_loadu_si128((const __m128i *)(const void *)t);
                __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(t + 16));
                _mm_storeu_si128((__m128i *)(void *)(l0 + 16 * c), a);
                _mm_storeu_si128((__m128i *)(void *)(l1 + 16 * c), b);
            }
        }
    }
}
#undef PAIR_AT

/* The column counts pairs16_body() is instantiated for: whole tiles (kernel_ops.h lists the
 * layouts) are 4 runs (the GOB), 8 (Intel Y / Tile4, D3D 4 KB at 4 bytes), 16 (D3D 64 KB at 1
 * byte), 32 (2 and 4 bytes, AMD R_X) or 64 (8 and 16 bytes); the partial tiles of a box take the
 * largest of those that fits, chunk after chunk (each over all its row pairs), and the last 1-3
 * runs the generic loop. ncols <= 64 (VIDMM_SWZ_MAX_XRUNS). */
#define PAIRS16_CHUNKS(untile, nt, add)                                                           \
    for (unsigned c0 = 0; c0 < ncols;) {                                                          \
        const unsigned left = ncols - c0;                                                         \
        unsigned char *lc = lin + 16 * c0;                                                        \
        const uint32_t *xc = xo + c0;                                                             \
        unsigned n = left >= 64 ? 64 : left >= 32 ? 32 : left >= 16 ? 16 : left >= 8 ? 8 : left >= 4 ? 4 : left; \
        switch (n) {                                                                              \
        case 1: pairs16_body(tile, lc, row_pitch, xc, yo, zoff, 1, npairs, untile, nt, add); break;   \
        case 2: pairs16_body(tile, lc, row_pitch, xc, yo, zoff, 2, npairs, untile, nt, add); break;   \
        case 3: pairs16_body(tile, lc, row_pitch, xc, yo, zoff, 3, npairs, untile, nt, add); break;   \
        case 4: pairs16_body(tile, lc, row_pitch, xc, yo, zoff, 4, npairs, untile, nt, add); break;   \
        case 8: pairs16_body(tile, lc, row_pitch, xc, yo, zoff, 8, npairs, untile, nt, add); break;   \
        case 16: pairs16_body(tile, lc, row_pitch, xc, yo, zoff, 16, npairs, untile, nt, add); break; \
        case 32: pairs16_body(tile, lc, row_pitch, xc, yo, zoff, 32, npairs, untile, nt, add); break; \
        case 64: pairs16_body(tile, lc, row_pitch, xc, yo, zoff, 64, npairs, untile, nt, add); break; \
        default: pairs16_body(tile, lc, row_pitch, xc, yo, zoff, n, npairs, untile, nt, add); break;  \
        }                                                                                         \
        c0 += n;                                                                                  \
    }
/* pairs_disjoint(): no column offset of 'xo' shares a bit with any pair's row offset (with the z
 * term): then each run's address is an addition (pairs16_body()'s 'add'), true of every layout
 * whose address bits each come from x or from y alone (Intel Y / Tile4, the GOB, the D3D and
 * AMD tables without an XOR term). */
static inline __attribute__((always_inline)) bool pairs_disjoint(const uint32_t *xo, unsigned ncols,
                                                                 const uint32_t *yo, uint32_t zoff, unsigned npairs)
{
    uint32_t ox = 0, oy = 0;
    for (unsigned c = 0; c < ncols; c++)
        ox |= xo[c];
    for (unsigned p = 0; p < npairs; p++)
        oy |= yo[2 * p] ^ zoff;
    return (ox & oy) == 0;
}

/* The test costs a pass over both tables a call: taken where a call moves 8 runs a row or more
 * and 6 row pairs or more, with 32-byte vectors and ordinary stores (the GOB's 4-run calls and
 * 4-pair groups, the SSE2 bodies and the
 * streaming pair walk took 2-12% more instructions with it: the gate's bl rows). */
#define PAIRS16_DISPATCH(untile, nt)                                                              \
    if (ncols == 4) /* a GOB: straight to its body */                                             \
        pairs16_body(tile, lin, row_pitch, xo, yo, zoff, 4, npairs, untile, nt, false);           \
    else if (!(nt) && VL >= 32 && ncols >= 8 && npairs >= 6 && pairs_disjoint(xo, ncols, yo, zoff, npairs)) { \
        PAIRS16_CHUNKS(untile, nt, true)                                                          \
    } else {                                                                                      \
        PAIRS16_CHUNKS(untile, nt, false)                                                         \
    }

static void swz_pairs16(unsigned char *tile, const unsigned char *src, size_t row_pitch, const uint32_t *xo,
                        const uint32_t *yo, uint32_t zoff, unsigned ncols, unsigned npairs)
{
    /* The body serves both directions; this one only reads the linear side. */
    unsigned char *lin = (unsigned char *)(uintptr_t)src;
    PAIRS16_DISPATCH(false, false)
}

static void unswz_pairs16(const unsigned char *src, unsigned char *lin, size_t row_pitch, const uint32_t *xo,
                          const uint32_t *yo, uint32_t zoff, unsigned ncols, unsigned npairs)
{
    unsigned char *tile = (unsigned char *)(uintptr_t)src;   /* only read in this direction */
    PAIRS16_DISPATCH(true, false)
}

/* swz_runs64 / unswz_runs64 (kernel_ops.h): runs of 'run' bytes (a multiple of 64), each moved
 * as whole vectors; one call per tile part instead of a C library call per run. With 'nt'
 * (swz_runs64_nt / unswz_runs64_nt) the destination's lines take streaming stores: each run is
 * whole lines written in order, so every write-combining buffer fills before the next opens. */
static inline __attribute__((always_inline)) void runs64_body(unsigned char *tile, unsigned char *lin,
                                                              size_t row_pitch, const uint32_t *xo,
                                                              const uint32_t *yo, uint32_t zoff, unsigned ncols,
                                                              unsigned nrows, unsigned run, bool untile, bool nt)
{
    for (unsigned r = 0; r < nrows; r++) {
        const uint32_t yoff = yo[r] ^ zoff;
        unsigned char *lrow = lin + r * row_pitch;
        for (unsigned c = 0; c < ncols; c++) {
            unsigned char *tp = tile + (xo[c] ^ yoff), *lp = lrow + (size_t)run * c;
            unsigned char *d = untile ? lp : tp;
            const unsigned char *src = untile ? tp : lp;
            for (unsigned k = 0; k < run; k += LINE) {
                VEC v[PER_LINE];
                for (unsigned i = 0; i < PER_LINE; i++)
                    v[i] = LOADU(src + k + i * VL);
                for (unsigned i = 0; i < PER_LINE; i++) {
                    if (nt)
                        STREAM(d + k + i * VL, v[i]);
                    else
                        STOREU(d + k + i * VL, v[i]);
                }
            }
        }
    }
}

/* Intel X's 512-byte runs with a constant length, others as given. */
#define RUNS64_DISPATCH(untile, nt)                                                        \
    if (run == 512)                                                                       \
        runs64_body(tile, lin, row_pitch, xo, yo, zoff, ncols, nrows, 512, untile, nt);   \
    else                                                                                  \
        runs64_body(tile, lin, row_pitch, xo, yo, zoff, ncols, nrows, run, untile, nt);

static void swz_runs64(unsigned char *tile, const unsigned char *src, size_t row_pitch, const uint32_t *xo,
                       const uint32_t *yo, uint32_t zoff, unsigned ncols, unsigned nrows, unsigned run)
{
    unsigned char *lin = (unsigned char *)(uintptr_t)src; /* only read in this direction */
    RUNS64_DISPATCH(false, false)
}

static void unswz_runs64(const unsigned char *src, unsigned char *lin, size_t row_pitch, const uint32_t *xo,
                         const uint32_t *yo, uint32_t zoff, unsigned ncols, unsigned nrows, unsigned run)
{
    unsigned char *tile = (unsigned char *)(uintptr_t)src; /* only read in this direction */
    RUNS64_DISPATCH(true, false)
}

static void swz_runs64_nt(unsigned char *tile, const unsigned char *src, size_t row_pitch, const uint32_t *xo,
                          const uint32_t *yo, uint32_t zoff, unsigned ncols, unsigned nrows, unsigned run)
{
    unsigned char *lin = (unsigned char *)(uintptr_t)src; /* only read in this direction */
    RUNS64_DISPATCH(false, true)
}
#undef RUNS64_DISPATCH

/* The streaming deswizzle reads RUNS64_NT_READ runs (tiles) at a time, all rows, then the next
 * ones: row r of 32 tiles (32 pages, 512 bytes each) before row r + 1 outran the hardware
 * prefetchers. Tiles read at a time toggled in one process (Intel X 8192^2 bytes, 64 MiB
 * deswizzle, Zen 4 under load, best of 15): 32 tiles 9.5-9.8 ms, 8 6.3-9.3, 6 6.5, 4 5.3-6.0, 2
 * 5.6-10.3. The swizzle keeps all of them at once (8.2 ms against 14.3 at 4). */
#define RUNS64_NT_READ 4u
static void unswz_runs64_nt(const unsigned char *src, unsigned char *lin, size_t row_pitch, const uint32_t *xo,
                            const uint32_t *yo, uint32_t zoff, unsigned ncols, unsigned nrows, unsigned run)
{
    unsigned char *tile = (unsigned char *)(uintptr_t)src; /* only read in this direction */
    for (unsigned c = 0; c < ncols; c += RUNS64_NT_READ) {
        const unsigned n = ncols - c < RUNS64_NT_READ ? ncols - c : RUNS64_NT_READ;
        if (run == 512 && n == RUNS64_NT_READ)
            runs64_body(tile, lin + (size_t)512 * c, row_pitch, xo + c, yo, zoff, RUNS64_NT_READ, nrows, 512, true,
                        true);
        else if (run == 512)
            runs64_body(tile, lin + (size_t)512 * c, row_pitch, xo + c, yo, zoff, n, nrows, 512, true, true);
        else
            runs64_body(tile, lin + (size_t)run * c, row_pitch, xo + c, yo, zoff, n, nrows, run, true, true);
    }
}

/* swz_pairs16_nt / unswz_pairs16_nt (kernel_ops.h): the same walks with streaming stores, to
 * the tile (each line's granules written back to back: a line of the pair-line layout is runs
 * c, c + 1 of one row pair) or to the linear rows (each row's 16 * ncols bytes written in order).
 * Whole groups of four runs stream; runs left over from them take ordinary stores. */
static void swz_pairs16_nt(unsigned char *tile, const unsigned char *src, size_t row_pitch, const uint32_t *xo,
                           const uint32_t *yo, uint32_t zoff, unsigned ncols, unsigned npairs)
{
    unsigned char *lin = (unsigned char *)(uintptr_t)src; /* only read in this direction */
    PAIRS16_DISPATCH(false, true)
}

static void unswz_pairs16_nt(const unsigned char *src, unsigned char *lin, size_t row_pitch, const uint32_t *xo,
                             const uint32_t *yo, uint32_t zoff, unsigned ncols, unsigned npairs)
{
    unsigned char *tile = (unsigned char *)(uintptr_t)src; /* only read in this direction */
    PAIRS16_DISPATCH(true, true)
}
#undef PAIRS16_DISPATCH
#undef PAIRS16_CHUNKS

/* quads8_body() is swz_quads8 / unswz_quads8 (kernel_ops.h): the 2x2 quads of Morton order.
 * Row r's 16 bytes [a0 a1] (runs c, c + 1) and row r + 1's [b0 b1] become the block
 * [a0 b0 a1 b1]: one unpack of the two rows' low and one of their high 8-byte halves. With
 * 32-byte vectors four runs of two rows are done at once: the per-lane unpacks give
 * [a0 b0 | a2 b2] and [a1 b1 | a3 b3], and two lane permutes the blocks [a0 b0 a1 b1] (at
 * xo[c]) and [a2 b2 a3 b3] (at xo[c + 2]). Untiling runs the same steps backwards. */
static inline __attribute__((always_inline)) void quads8_body(unsigned char *tile, unsigned char *lin,
                                                              size_t row_pitch, const uint32_t *xo,
                                                              const uint32_t *yo, uint32_t zoff, unsigned ncols,
                                                              unsigned npairs, bool untile)
{
    uint32_t x[64];

    for (unsigned c = 0; c < ncols; c += 2)
        x[c] = xo[c];
    for (unsigned p = 0; p < npairs; p++) {
        const uint32_t yoff = yo[2 * p] ^ zoff;
        unsigned char *l0 = lin + 2 * p * row_pitch, *l1 = l0 + row_pitch;
        unsigned c = 0;
#if VL >= 32
        for (; c + 4 <= ncols; c += 4) {
            unsigned char *t0 = tile + (x[c] ^ yoff), *t1 = tile + (x[c + 2] ^ yoff);
            if (!untile) {
                __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(l0 + 8 * c));
                __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(l1 + 8 * c));
                __m256i lo = _mm256_unpacklo_epi64(a, b), hi = _mm256_unpackhi_epi64(a, b);
                _mm256_storeu_si256((__m256i *)(void *)t0, _mm256_permute2x128_si256(lo, hi, 0x20));
                _mm256_storeu_si256((__m256i *)(void *)t1, _mm256_permute2x128_si256(lo, hi, 0x31));
            } else {
                __m256i g0 = _mm256_loadu_si256((const __m256i *)(const void *)t0);
                __m256i g1 = _mm256_loadu_si256((const __m256i *)(const void *)t1);
                __m256i lo = _mm256_permute2x128_si256(g0, g1, 0x20), hi = _mm256_permute2x128_si256(g0, g1, 0x31);
                _mm256_storeu_si256((__m256i *)(void *)(l0 + 8 * c), _mm256_unpacklo_epi64(lo, hi));
                _mm256_storeu_si256((__m256i *)(void *)(l1 + 8 * c), _mm256_unpackhi_epi64(lo, hi));
            }
        }
#endif
        for (; c + 2 <= ncols; c += 2) {
            unsigned char *t = tile + (x[c] ^ yoff);
            if (!untile) {
                __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(l0 + 8 * c));
                __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(l1 + 8 * c));
                _mm_storeu_si128((__m128i *)(void *)t, _mm_unpacklo_epi64(a, b));
                _mm_storeu_si128((__m128i *)(void *)(t + 16), _mm_unpackhi_epi64(a, b));
            } else {
                __m128i g0 = _mm_loadu_si128((const __m128i *)(const void *)t);
                __m128i g1 = _mm_loadu_si128((const __m128i *)(const void *)(t + 16));
                _mm_storeu_si128((__m128i *)(void *)(l0 + 8 * c), _mm_unpacklo_epi64(g0, g1));
                _mm_storeu_si128((__m128i *)(void *)(l1 + 8 * c), _mm_unpackhi_epi64(g0, g1));
            }
        }
        if (c < ncols) {
            /* An odd last run: its two rows are one 16-byte granule at the quad's start. */
            unsigned char *t = tile + (xo[c] ^ yoff);
            if (!untile) {
                __m128i g = _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)(const void *)(l0 + 8 * c)),
                                               _mm_loadl_epi64((const __m128i *)(const void *)(l1 + 8 * c)));
                _mm_storeu_si128((__m128i *)(void *)t, g);
            } else {
                __m128i g = _mm_loadu_si128((const __m128i *)(const void *)t);
                _mm_storel_epi64((__m128i *)(void *)(l0 + 8 * c), g);
                _mm_storel_epi64((__m128i *)(void *)(l1 + 8 * c), _mm_unpackhi_epi64(g, g));
            }
        }
    }
}

/* Whole Morton tiles are 32 runs of 8 bytes wide (swizzle_morton.c: 64 units of 4 bytes) or
 * fewer for small surfaces; other counts are partial tiles of a box. ncols <= 64. */
/* The column counts quads8_body() is instantiated for: a whole Morton tile is 32 runs; the
 * partial tiles of a box take the largest of 32, 16, 8, 4 that fits, chunk after chunk (each
 * over all its row pairs), and the last 1-3 runs the generic loop. For a 64x64 box of 4-byte
 * Morton units (14 and 16 runs in its two tile columns) the generic loop alone made the swizzle
 * 0.79-0.88 us, the chunks 0.65-0.67 us (Zen 3, 2026-11-22, one process, 100k calls each). */
#define QUADS8_CHUNKED(untile)                                                                            \
    for (unsigned c0 = 0; c0 < ncols;) {                                                                  \
        const unsigned left = ncols - c0;                                                                 \
        unsigned char *lc = lin + 8 * c0;                                                                 \
        const uint32_t *xc = xo + c0;                                                                     \
        if (left >= 32) {                                                                                 \
            quads8_body(tile, lc, row_pitch, xc, yo, zoff, 32, npairs, untile);                           \
            c0 += 32;                                                                                     \
        } else if (left >= 16) {                                                                          \
            quads8_body(tile, lc, row_pitch, xc, yo, zoff, 16, npairs, untile);                           \
            c0 += 16;                                                                                     \
        } else if (left >= 8) {                                                                           \
            quads8_body(tile, lc, row_pitch, xc, yo, zoff, 8, npairs, untile);                            \
            c0 += 8;                                                                                      \
        } else if (left >= 4) {                                                                           \
            quads8_body(tile, lc, row_pitch, xc, yo, zoff, 4, npairs, untile);                            \
            c0 += 4;                                                                                      \
        } else {                                                                                          \
            quads8_body(tile, lc, row_pitch, xc, yo, zoff, left, npairs, untile);                         \
            c0 += left;                                                                                   \
        }                                                                                                 \
    }

static void swz_quads8(unsigned char *tile, const unsigned char *src, size_t row_pitch, const uint32_t *xo,
                       const uint32_t *yo, uint32_t zoff, unsigned ncols, unsigned npairs)
{
    unsigned char *lin = (unsigned char *)(uintptr_t)src;   /* only read in this direction */
    QUADS8_CHUNKED(false)
}

static void unswz_quads8(const unsigned char *src, unsigned char *lin, size_t row_pitch, const uint32_t *xo,
                         const uint32_t *yo, uint32_t zoff, unsigned ncols, unsigned npairs)
{
    unsigned char *tile = (unsigned char *)(uintptr_t)src;  /* only read in this direction */
    QUADS8_CHUNKED(true)
}
#undef QUADS8_CHUNKED

/* ST256() / ST128(): an aligned store, streaming when 'nt' (a constant in each instantiation);
 * ST256U() / ST128U(): the same, unaligned unless streaming (the address then aligned). */
#define ST256(nt, p, v) \
    ((nt) ? _mm256_stream_si256((__m256i *)(void *)(p), (v)) : _mm256_store_si256((__m256i *)(void *)(p), (v)))
#define ST128(nt, p, v) ((nt) ? _mm_stream_si128((__m128i *)(void *)(p), (v)) : _mm_store_si128((__m128i *)(void *)(p), (v)))
#define ST256U(nt, p, v) \
    ((nt) ? _mm256_stream_si256((__m256i *)(void *)(p), (v)) : _mm256_storeu_si256((__m256i *)(void *)(p), (v)))
#define ST128U(nt, p, v) \
    ((nt) ? _mm_stream_si128((__m128i *)(void *)(p), (v)) : _mm_storeu_si128((__m128i *)(void *)(p), (v)))


/* strip16_body() is swz_strip16 / unswz_strip16 / unswz_strip16_nt (kernel_ops.h): rows
 * [4 q, 4 q + 4) of 'ntile' tiles side by side, for every quad q, quads outer and tiles inner, so
 * the four linear rows are walked as four sequential streams across the whole strip. Run c of a
 * tile's four rows is the 64-byte line at tbase[g] + (xo[c] ^ yo[4 q] ^ zoff): those offsets are
 * computed once per quad (xy[]), so each line is four loads or stores at a base plus a
 * register. Swizzling builds each line from the four rows (two 32-byte lane permutes per pair of
 * runs) and writes it whole; deswizzling reads the lines of runs c .. c + 3 whole and writes 64
 * bytes of each of the four rows (cols then a multiple of 4). 'nt': streaming stores ('lin' and
 * 'row_pitch' 32-byte aligned when deswizzling). Every line is 64-byte aligned.
 * A deswizzle reads each tile's lines a quad at a time, 4 KiB to 64 KiB apart in no order the
 * hardware prefetchers follow; the streaming one (copies beyond the cache, or asked) asks for the
 * next quad's lines into L2 as it reads this quad's (one prefetcht1 a line, a quad ahead: the
 * whole strip's width of work before use). Not the cached one: in the cache it gained nothing
 * and cost 13-37% more instructions (Callgrind, tools/bench_gate.sh).
 * 'pfon' (a deswizzle beyond the cache, either store kind): the walk passes the next strip's
 * source [pf, pf_end) instead, and one line of it is asked for into L2 for every line read, in
 * address order, so that the next strip's quads come from L2 (swizzle_walk.c UNTILE_STRIP_BYTES
 * has the figures: 1.3-1.4x on a Zen 3); the next-quad prefetch is then off.
 * 64 MiB deswizzles, the same process alternating (Zen 4, 2026-12-02, medians of 9-11, a busy
 * machine): D3D 64 KB 4 B 10.5-13.9 -> 6.2-6.8 ms, 16 B 9.6 -> 7.6; D3D 4 KB 6.8 -> 6.1; Intel Y
 * 7.0-10.0 -> 5.7-9.7; Tile4 7.7-11.3 -> 6.2-9.4; prefetcht0 gained less (9.7-13.0), prefetchnta
 * nothing, two or three quads ahead less than one. 4 MiB and 256 KiB (in the cache): unchanged. */
static inline __attribute__((always_inline)) void strip16_body(unsigned char *tiled, unsigned char *lin,
                                                               size_t row_pitch, const uint32_t *tbase,
                                                               unsigned ntile, const uint32_t *xo, unsigned cols,
                                                               const uint32_t *yo, uint32_t zoff, unsigned nquads,
                                                               bool untile, bool nt, bool pfon,
                                                               const unsigned char *pf, const unsigned char *pf_end)
{
    uint32_t xy[64];

    for (unsigned q = 0; q < nquads; q++) {
        const uint32_t yoff = yo[4 * q] ^ zoff;
        /* Deswizzling, the next quad's line of a run is at its line here ^ ny (0: the last). */
        const uint32_t ny = untile && nt && !pfon && q + 1 < nquads ? yo[4 * q + 4] ^ yo[4 * q] : 0;
        for (unsigned c = 0; c < cols; c++)
            xy[c] = xo[c] ^ yoff;
        unsigned char *l0 = lin + 4 * q * row_pitch, *l1 = l0 + row_pitch, *l2 = l1 + row_pitch, *l3 = l2 + row_pitch;
        for (unsigned g = 0; g < ntile; g++) {
            unsigned char *tb = tiled + tbase[g];
            const size_t lo = (size_t)g * cols * 16;
            if (!untile) {
                unsigned c = 0;
#if VL >= 32
                for (; c + 2 <= cols; c += 2) {
                    const size_t o = lo + 16 * c;
                    __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(l0 + o));
                    __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(l1 + o));
                    __m256i e = _mm256_loadu_si256((const __m256i *)(const void *)(l2 + o));
                    __m256i f = _mm256_loadu_si256((const __m256i *)(const void *)(l3 + o));
                    ST256(nt, tb + xy[c], _mm256_permute2x128_si256(a, b, 0x20));
                    ST256(nt, tb + xy[c] + 32, _mm256_permute2x128_si256(e, f, 0x20));
                    ST256(nt, tb + xy[c + 1], _mm256_permute2x128_si256(a, b, 0x31));
                    ST256(nt, tb + xy[c + 1] + 32, _mm256_permute2x128_si256(e, f, 0x31));
                }
#endif
                for (; c < cols; c++) {
                    const size_t o = lo + 16 * c;
                    ST128(nt, tb + xy[c], _mm_loadu_si128((const __m128i *)(const void *)(l0 + o)));
                    ST128(nt, tb + xy[c] + 16, _mm_loadu_si128((const __m128i *)(const void *)(l1 + o)));
                    ST128(nt, tb + xy[c] + 32, _mm_loadu_si128((const __m128i *)(const void *)(l2 + o)));
                    ST128(nt, tb + xy[c] + 48, _mm_loadu_si128((const __m128i *)(const void *)(l3 + o)));
                }
            } else {
                for (unsigned c = 0; c + 4 <= cols; c += 4) {
                    const size_t o = lo + 16 * c;
                    /* The next strip's next four lines, or the next quad's four lines of these
                     * runs, into L2 (prefetcht1); see above. */
                    if (pfon && pf < pf_end) {
                        __builtin_prefetch(pf, 0, 2);
                        __builtin_prefetch(pf + 64, 0, 2);
                        __builtin_prefetch(pf + 128, 0, 2);
                        __builtin_prefetch(pf + 192, 0, 2);
                        pf += 256;
                    }
                    if (ny != 0)
                        for (unsigned k = 0; k < 4; k++)
                            __builtin_prefetch(tb + (xy[c + k] ^ ny), 0, 2);
#if VL >= 32
                    const unsigned char *t0 = tb + xy[c], *t1 = tb + xy[c + 1], *t2 = tb + xy[c + 2], *t3 = tb + xy[c + 3];
                    __m256i a0 = _mm256_load_si256((const __m256i *)(const void *)t0);
                    __m256i b0 = _mm256_load_si256((const __m256i *)(const void *)(t0 + 32));
                    __m256i a1 = _mm256_load_si256((const __m256i *)(const void *)t1);
                    __m256i b1 = _mm256_load_si256((const __m256i *)(const void *)(t1 + 32));
                    __m256i a2 = _mm256_load_si256((const __m256i *)(const void *)t2);
                    __m256i b2 = _mm256_load_si256((const __m256i *)(const void *)(t2 + 32));
                    __m256i a3 = _mm256_load_si256((const __m256i *)(const void *)t3);
                    __m256i b3 = _mm256_load_si256((const __m256i *)(const void *)(t3 + 32));
                    ST256U(nt, l0 + o, _mm256_permute2x128_si256(a0, a1, 0x20));
                    ST256U(nt, l0 + o + 32, _mm256_permute2x128_si256(a2, a3, 0x20));
                    ST256U(nt, l1 + o, _mm256_permute2x128_si256(a0, a1, 0x31));
                    ST256U(nt, l1 + o + 32, _mm256_permute2x128_si256(a2, a3, 0x31));
                    ST256U(nt, l2 + o, _mm256_permute2x128_si256(b0, b1, 0x20));
                    ST256U(nt, l2 + o + 32, _mm256_permute2x128_si256(b2, b3, 0x20));
                    ST256U(nt, l3 + o, _mm256_permute2x128_si256(b0, b1, 0x31));
                    ST256U(nt, l3 + o + 32, _mm256_permute2x128_si256(b2, b3, 0x31));
#else
                    for (unsigned k = 0; k < 4; k++) {
                        const unsigned char *t = tb + xy[c + k];
                        __m128i v0 = _mm_load_si128((const __m128i *)(const void *)t);
                        __m128i v1 = _mm_load_si128((const __m128i *)(const void *)(t + 16));
                        __m128i v2 = _mm_load_si128((const __m128i *)(const void *)(t + 32));
                        __m128i v3 = _mm_load_si128((const __m128i *)(const void *)(t + 48));
                        ST128U(nt, l0 + o + 16 * k, v0);
                        ST128U(nt, l1 + o + 16 * k, v1);
                        ST128U(nt, l2 + o + 16 * k, v2);
                        ST128U(nt, l3 + o + 16 * k, v3);
                    }
#endif
                }
            }
        }
    }
}

/* The column counts of whole tiles: 8 (Intel Y / Tile4, D3D 4 KB at 4 bytes), 32 (D3D 64 KB
 * and AMD 64 KB at 4 bytes); others (at most 64) take the generic loop. */
#define STRIP16_DISPATCH(untile, nt, pfon)                                                                        \
    switch (cols) {                                                                                          \
    case 8: strip16_body(tiled, lin, row_pitch, tbase, ntile, xo, 8, yo, zoff, nquads, untile, nt, pfon, pf, pf_end); break; \
    case 32: strip16_body(tiled, lin, row_pitch, tbase, ntile, xo, 32, yo, zoff, nquads, untile, nt, pfon, pf, pf_end); break; \
    default: strip16_body(tiled, lin, row_pitch, tbase, ntile, xo, cols, yo, zoff, nquads, untile, nt, pfon, pf, pf_end); break; \
    }

/* A deswizzle strip's two instantiations: with the next strip's lines to prefetch, or none. */
#define UNTILE_PF_DISPATCH(DISPATCH, nt)                            \
    if (pf_lines != 0) {                                            \
        const unsigned char *pf_end = pf + (size_t)pf_lines * 64;  \
        DISPATCH(true, nt, true)                                    \
    } else {                                                        \
        const unsigned char *pf_end = pf;                           \
        DISPATCH(true, nt, false)                                   \
    }

static void swz_strip16(unsigned char *tiled, const unsigned char *src, size_t row_pitch, const uint32_t *tbase,
                        unsigned ntile, const uint32_t *xo, unsigned cols, const uint32_t *yo, uint32_t zoff,
                        unsigned nquads)
{
    unsigned char *lin = (unsigned char *)(uintptr_t)src; /* only read in this direction */
    const unsigned char *pf = NULL, *pf_end = NULL;
    STRIP16_DISPATCH(false, false, false)
}

static void unswz_strip16(const unsigned char *src, unsigned char *lin, size_t row_pitch, const uint32_t *tbase,
                          unsigned ntile, const uint32_t *xo, unsigned cols, const uint32_t *yo, uint32_t zoff,
                          unsigned nquads, const unsigned char *pf, unsigned pf_lines)
{
    unsigned char *tiled = (unsigned char *)(uintptr_t)src; /* only read in this direction */
    UNTILE_PF_DISPATCH(STRIP16_DISPATCH, false)
}

static void swz_strip16_nt(unsigned char *tiled, const unsigned char *src, size_t row_pitch, const uint32_t *tbase,
                           unsigned ntile, const uint32_t *xo, unsigned cols, const uint32_t *yo, uint32_t zoff,
                           unsigned nquads)
{
    unsigned char *lin = (unsigned char *)(uintptr_t)src; /* only read in this direction */
    const unsigned char *pf = NULL, *pf_end = NULL;
    STRIP16_DISPATCH(false, true, false)
}

static void unswz_strip16_nt(const unsigned char *src, unsigned char *lin, size_t row_pitch, const uint32_t *tbase,
                             unsigned ntile, const uint32_t *xo, unsigned cols, const uint32_t *yo, uint32_t zoff,
                             unsigned nquads, const unsigned char *pf, unsigned pf_lines)
{
    unsigned char *tiled = (unsigned char *)(uintptr_t)src; /* only read in this direction */
    UNTILE_PF_DISPATCH(STRIP16_DISPATCH, true)
}
#undef STRIP16_DISPATCH

/* qstrip8_body() is swz_qstrip8 / unswz_qstrip8 (kernel_ops.h): strip16_body() for the Morton
 * quad layout of 8-byte runs (swz_qlines8_nt in kernel_ops.h): runs c, c + 1 (c even) of rows 4 q .. 4 q + 3 are
 * the line at tbase[g] + (xo[c] ^ yo[4 q] ^ zoff), holding the 2 x 2 quads of rows 4 q, 4 q + 1
 * and then of rows 4 q + 2, 4 q + 3. With 32-byte vectors four runs (two lines) at a time: one
 * 64-bit unpack pair and two lane permutes per two rows, each way. cols a multiple of 4. */
static inline __attribute__((always_inline)) void qstrip8_body(unsigned char *tiled, unsigned char *lin,
                                                               size_t row_pitch, const uint32_t *tbase,
                                                               unsigned ntile, const uint32_t *xo, unsigned cols,
                                                               const uint32_t *yo, uint32_t zoff, unsigned nquads,
                                                               bool untile, bool nt, bool pfon,
                                                               const unsigned char *pf, const unsigned char *pf_end)
{
    uint32_t xy[64];

    for (unsigned q = 0; q < nquads; q++) {
        const uint32_t yoff = yo[4 * q] ^ zoff;
        /* The streaming deswizzle prefetches the next strip's or the next quad's lines, as
         * strip16_body(). */
        const uint32_t ny = untile && nt && !pfon && q + 1 < nquads ? yo[4 * q + 4] ^ yo[4 * q] : 0;
        for (unsigned c = 0; c < cols; c += 2)
            xy[c] = xo[c] ^ yoff;
        unsigned char *l0 = lin + 4 * q * row_pitch, *l1 = l0 + row_pitch, *l2 = l1 + row_pitch, *l3 = l2 + row_pitch;
        for (unsigned g = 0; g < ntile; g++) {
            unsigned char *tb = tiled + tbase[g];
            const size_t lo = (size_t)g * cols * 8;
            unsigned c = 0;
#if VL >= 32
            for (; c + 4 <= cols; c += 4) {
                const size_t o = lo + 8 * c;
                unsigned char *t0 = tb + xy[c], *t1 = tb + xy[c + 2];
                if (!untile) {
                    __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(l0 + o));
                    __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(l1 + o));
                    __m256i e = _mm256_loadu_si256((const __m256i *)(const void *)(l2 + o));
                    __m256i f = _mm256_loadu_si256((const __m256i *)(const void *)(l3 + o));
                    __m256i lo1 = _mm256_unpacklo_epi64(a, b), hi1 = _mm256_unpackhi_epi64(a, b);
                    __m256i lo2 = _mm256_unpacklo_epi64(e, f), hi2 = _mm256_unpackhi_epi64(e, f);
                    ST256(nt, t0, _mm256_permute2x128_si256(lo1, hi1, 0x20));
                    ST256(nt, t0 + 32, _mm256_permute2x128_si256(lo2, hi2, 0x20));
                    ST256(nt, t1, _mm256_permute2x128_si256(lo1, hi1, 0x31));
                    ST256(nt, t1 + 32, _mm256_permute2x128_si256(lo2, hi2, 0x31));
                } else {
                    if (pfon && pf < pf_end) {
                        __builtin_prefetch(pf, 0, 2);
                        __builtin_prefetch(pf + 64, 0, 2);
                        pf += 128;
                    }
                    if (ny != 0) {
                        __builtin_prefetch(tb + (xy[c] ^ ny), 0, 2);
                        __builtin_prefetch(tb + (xy[c + 2] ^ ny), 0, 2);
                    }
                    __m256i g0 = _mm256_load_si256((const __m256i *)(const void *)t0);
                    __m256i g1 = _mm256_load_si256((const __m256i *)(const void *)(t0 + 32));
                    __m256i h0 = _mm256_load_si256((const __m256i *)(const void *)t1);
                    __m256i h1 = _mm256_load_si256((const __m256i *)(const void *)(t1 + 32));
                    __m256i x0 = _mm256_permute2x128_si256(g0, h0, 0x20), y0 = _mm256_permute2x128_si256(g0, h0, 0x31);
                    __m256i x1 = _mm256_permute2x128_si256(g1, h1, 0x20), y1 = _mm256_permute2x128_si256(g1, h1, 0x31);
                    ST256U(nt, l0 + o, _mm256_unpacklo_epi64(x0, y0));
                    ST256U(nt, l1 + o, _mm256_unpackhi_epi64(x0, y0));
                    ST256U(nt, l2 + o, _mm256_unpacklo_epi64(x1, y1));
                    ST256U(nt, l3 + o, _mm256_unpackhi_epi64(x1, y1));
                }
            }
#endif
            for (; c + 2 <= cols; c += 2) {
                const size_t o = lo + 8 * c;
                unsigned char *t = tb + xy[c];
                if (!untile) {
                    __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(l0 + o));
                    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(l1 + o));
                    __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(l2 + o));
                    __m128i f = _mm_loadu_si128((const __m128i *)(const void *)(l3 + o));
                    ST128(nt, t, _mm_unpacklo_epi64(a, b));
                    ST128(nt, t + 16, _mm_unpackhi_epi64(a, b));
                    ST128(nt, t + 32, _mm_unpacklo_epi64(e, f));
                    ST128(nt, t + 48, _mm_unpackhi_epi64(e, f));
                } else {
                    if (pfon && pf < pf_end) {
                        __builtin_prefetch(pf, 0, 2);
                        pf += 64;
                    }
                    if (ny != 0)
                        __builtin_prefetch(tb + (xy[c] ^ ny), 0, 2);
                    __m128i v0 = _mm_load_si128((const __m128i *)(const void *)t);
                    __m128i v1 = _mm_load_si128((const __m128i *)(const void *)(t + 16));
                    __m128i v2 = _mm_load_si128((const __m128i *)(const void *)(t + 32));
                    __m128i v3 = _mm_load_si128((const __m128i *)(const void *)(t + 48));
                    ST128U(nt, l0 + o, _mm_unpacklo_epi64(v0, v1));
                    ST128U(nt, l1 + o, _mm_unpackhi_epi64(v0, v1));
                    ST128U(nt, l2 + o, _mm_unpacklo_epi64(v2, v3));
                    ST128U(nt, l3 + o, _mm_unpackhi_epi64(v2, v3));
                }
            }
        }
    }
}

#define QSTRIP8_DISPATCH(untile, nt, pfon)                                                                      \
    switch (cols) {                                                                                         \
    case 32: qstrip8_body(tiled, lin, row_pitch, tbase, ntile, xo, 32, yo, zoff, nquads, untile, nt, pfon, pf, pf_end); break; \
    case 64: qstrip8_body(tiled, lin, row_pitch, tbase, ntile, xo, 64, yo, zoff, nquads, untile, nt, pfon, pf, pf_end); break; \
    default: qstrip8_body(tiled, lin, row_pitch, tbase, ntile, xo, cols, yo, zoff, nquads, untile, nt, pfon, pf, pf_end); break; \
    }

static void swz_qstrip8(unsigned char *tiled, const unsigned char *src, size_t row_pitch, const uint32_t *tbase,
                        unsigned ntile, const uint32_t *xo, unsigned cols, const uint32_t *yo, uint32_t zoff,
                        unsigned nquads)
{
    unsigned char *lin = (unsigned char *)(uintptr_t)src; /* only read in this direction */
    const unsigned char *pf = NULL, *pf_end = NULL;
    QSTRIP8_DISPATCH(false, false, false)
}

static void swz_qstrip8_nt(unsigned char *tiled, const unsigned char *src, size_t row_pitch, const uint32_t *tbase,
                           unsigned ntile, const uint32_t *xo, unsigned cols, const uint32_t *yo, uint32_t zoff,
                           unsigned nquads)
{
    unsigned char *lin = (unsigned char *)(uintptr_t)src; /* only read in this direction */
    const unsigned char *pf = NULL, *pf_end = NULL;
    QSTRIP8_DISPATCH(false, true, false)
}

static void unswz_qstrip8(const unsigned char *src, unsigned char *lin, size_t row_pitch, const uint32_t *tbase,
                          unsigned ntile, const uint32_t *xo, unsigned cols, const uint32_t *yo, uint32_t zoff,
                          unsigned nquads, const unsigned char *pf, unsigned pf_lines)
{
    unsigned char *tiled = (unsigned char *)(uintptr_t)src; /* only read in this direction */
    UNTILE_PF_DISPATCH(QSTRIP8_DISPATCH, false)
}

static void unswz_qstrip8_nt(const unsigned char *src, unsigned char *lin, size_t row_pitch, const uint32_t *tbase,
                             unsigned ntile, const uint32_t *xo, unsigned cols, const uint32_t *yo, uint32_t zoff,
                             unsigned nquads, const unsigned char *pf, unsigned pf_lines)
{
    unsigned char *tiled = (unsigned char *)(uintptr_t)src; /* only read in this direction */
    UNTILE_PF_DISPATCH(QSTRIP8_DISPATCH, true)
}
#undef QSTRIP8_DISPATCH
#undef UNTILE_PF_DISPATCH

/* swz_lines16_nt / swz_qlines8_nt (kernel_ops.h): one whole tile of a large swizzle, as a strip of
 * one tile with streaming stores. For layouts whose address bits right above the 16-byte run are
 * y0 and y1 (Intel Y and Tile4, the D3D / AMD tables of 4-byte elements; tiling.md 4.1, 5.2),
 * run c of rows r .. r + 3 (r a multiple of 4) is one 64-byte line, so each line is built in
 * registers from four rows and written whole, with two 32-byte streaming stores back to back:
 * no line is read for ownership or left half-written. Swizzling Intel Y at 64 MiB ran at
 * 0.57-0.70x memcpy with ordinary stores (the row-pair walk) and no better with the
 * address-order gather of swz_tile16_nt, and at 0.96-1.24x with this kernel; Tile4, D3D 64 KB
 * and Morton (the quad layout) went from 0.78-0.96x to 0.95-1.48x (Zen 3, 2026-11-22,
 * bench_swizzle.c, 3 runs each). Whole tiles: 8 runs (Intel Y / Tile4, D3D 4 KB at 4 bytes), 32
 * (D3D 64 KB at 4 bytes, Morton). */
static const uint32_t one_tile_base = 0;

static void swz_lines16_nt(unsigned char *tile, const unsigned char *src, size_t row_pitch, const uint32_t *xo,
                           const uint32_t *yo, uint32_t zoff, unsigned ncols, unsigned nquads)
{
    unsigned char *lin = (unsigned char *)(uintptr_t)src; /* only read in this direction */
    const uint32_t *tb = &one_tile_base;
    if (ncols == 8)
        strip16_body(tile, lin, row_pitch, tb, 1, xo, 8, yo, zoff, nquads, false, true, false, NULL, NULL);
    else if (ncols == 32)
        strip16_body(tile, lin, row_pitch, tb, 1, xo, 32, yo, zoff, nquads, false, true, false, NULL, NULL);
    else
        strip16_body(tile, lin, row_pitch, tb, 1, xo, ncols, yo, zoff, nquads, false, true, false, NULL, NULL);
}

/* lines16_body() is swz_lines16 (kernel_ops.h): a whole tile of a lines16 layout with ordinary
 * stores, four runs (64 bytes of each linear row) at a time, quads inner: rows 4 q .. 4 q + 3 of
 * the four runs are four 64-byte loads, a 4 x 4 transpose of their 16-byte lanes and four lines
 * stored whole, at tile + (xo[c + k] ^ yo[4 q] ^ zoff). Each linear line is read once: the row
 * pair walk (swz_pairs16) and the tile-wide quads (strip16_body() on one tile) read 16 or 32
 * bytes of a row at a time, and with a power-of-two pitch the rows of a tile share a few L1
 * sets, so a line was gone before its next run was read. The four lines of a quad go to four
 * runs whose lines follow each other quad after quad: four sequential streams through the tile.
 * A 4 MiB Intel Y swizzle (8192-byte rows) on an Emerald Rapids Xeon: 0.40 ms against 0.52 for
 * the four-row strips and 0.49 for the tile-wide quads (/tmp experiment, one process, medians
 * of 21, 2026-12-02). Runs beyond the last whole group of four move 16 bytes at a time. */
static inline __attribute__((always_inline)) void lines16_body(unsigned char *tile, const unsigned char *lin,
                                                               size_t row_pitch, const uint32_t *xo,
                                                               const uint32_t *yo, uint32_t zoff, unsigned cols,
                                                               unsigned nquads)
{
    unsigned c = 0;
    for (; c + 4 <= cols; c += 4) {
        const uint32_t x0 = xo[c] ^ zoff, x1 = xo[c + 1] ^ zoff, x2 = xo[c + 2] ^ zoff, x3 = xo[c + 3] ^ zoff;
        const unsigned char *p = lin + 16 * c;
        for (unsigned q = 0; q < nquads; q++, p += 4 * row_pitch) {
            const uint32_t y = yo[4 * q];
#if VL >= 64
            const __m512i a = _mm512_loadu_si512((const void *)p);
            const __m512i b = _mm512_loadu_si512((const void *)(p + row_pitch));
            const __m512i e = _mm512_loadu_si512((const void *)(p + 2 * row_pitch));
            const __m512i f = _mm512_loadu_si512((const void *)(p + 3 * row_pitch));
            /* [a0 a1 b0 b1], [a2 a3 b2 b3], [e0 e1 f0 f1], [e2 e3 f2 f3], then [a0 b0 e0 f0] ... */
            const __m512i ab01 = _mm512_shuffle_i64x2(a, b, 0x44), ab23 = _mm512_shuffle_i64x2(a, b, 0xEE);
            const __m512i ef01 = _mm512_shuffle_i64x2(e, f, 0x44), ef23 = _mm512_shuffle_i64x2(e, f, 0xEE);
            _mm512_storeu_si512((void *)(tile + (x0 ^ y)), _mm512_shuffle_i64x2(ab01, ef01, 0x88));
            _mm512_storeu_si512((void *)(tile + (x1 ^ y)), _mm512_shuffle_i64x2(ab01, ef01, 0xDD));
            _mm512_storeu_si512((void *)(tile + (x2 ^ y)), _mm512_shuffle_i64x2(ab23, ef23, 0x88));
            _mm512_storeu_si512((void *)(tile + (x3 ^ y)), _mm512_shuffle_i64x2(ab23, ef23, 0xDD));
#elif VL >= 32
            const __m256i a0 = _mm256_loadu_si256((const __m256i *)(const void *)p);
            const __m256i a1 = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));
            const __m256i b0 = _mm256_loadu_si256((const __m256i *)(const void *)(p + row_pitch));
            const __m256i b1 = _mm256_loadu_si256((const __m256i *)(const void *)(p + row_pitch + 32));
            const __m256i e0 = _mm256_loadu_si256((const __m256i *)(const void *)(p + 2 * row_pitch));
            const __m256i e1 = _mm256_loadu_si256((const __m256i *)(const void *)(p + 2 * row_pitch + 32));
            const __m256i f0 = _mm256_loadu_si256((const __m256i *)(const void *)(p + 3 * row_pitch));
            const __m256i f1 = _mm256_loadu_si256((const __m256i *)(const void *)(p + 3 * row_pitch + 32));
            _mm256_storeu_si256((__m256i *)(void *)(tile + (x0 ^ y)), _mm256_permute2x128_si256(a0, b0, 0x20));
            _mm256_storeu_si256((__m256i *)(void *)(tile + (x0 ^ y) + 32), _mm256_permute2x128_si256(e0, f0, 0x20));
            _mm256_storeu_si256((__m256i *)(void *)(tile + (x1 ^ y)), _mm256_permute2x128_si256(a0, b0, 0x31));
            _mm256_storeu_si256((__m256i *)(void *)(tile + (x1 ^ y) + 32), _mm256_permute2x128_si256(e0, f0, 0x31));
            _mm256_storeu_si256((__m256i *)(void *)(tile + (x2 ^ y)), _mm256_permute2x128_si256(a1, b1, 0x20));
            _mm256_storeu_si256((__m256i *)(void *)(tile + (x2 ^ y) + 32), _mm256_permute2x128_si256(e1, f1, 0x20));
            _mm256_storeu_si256((__m256i *)(void *)(tile + (x3 ^ y)), _mm256_permute2x128_si256(a1, b1, 0x31));
            _mm256_storeu_si256((__m256i *)(void *)(tile + (x3 ^ y) + 32), _mm256_permute2x128_si256(e1, f1, 0x31));
#else
            const uint32_t xs[4] = { x0, x1, x2, x3 };
            for (unsigned k = 0; k < 4; k++)
                for (unsigned r = 0; r < 4; r++)
                    _mm_storeu_si128((__m128i *)(void *)(tile + (xs[k] ^ y) + 16 * r),
                                     _mm_loadu_si128((const __m128i *)(const void *)(p + r * row_pitch + 16 * k)));
#endif
        }
    }
    for (; c < cols; c++) {
        const unsigned char *p = lin + 16 * c;
        for (unsigned q = 0; q < nquads; q++, p += 4 * row_pitch)
            for (unsigned r = 0; r < 4; r++)
                _mm_storeu_si128((__m128i *)(void *)(tile + (xo[c] ^ yo[4 * q] ^ zoff) + 16 * r),
                                 _mm_loadu_si128((const __m128i *)(const void *)(p + r * row_pitch)));
    }
}

static void swz_lines16(unsigned char *tile, const unsigned char *src, size_t row_pitch, const uint32_t *xo,
                        const uint32_t *yo, uint32_t zoff, unsigned ncols, unsigned nquads)
{
    if (ncols == 8)
        lines16_body(tile, src, row_pitch, xo, yo, zoff, 8, nquads);
    else if (ncols == 32)
        lines16_body(tile, src, row_pitch, xo, yo, zoff, 32, nquads);
    else
        lines16_body(tile, src, row_pitch, xo, yo, zoff, ncols, nquads);
}

static void swz_qlines8_nt(unsigned char *tile, const unsigned char *src, size_t row_pitch, const uint32_t *xo,
                           const uint32_t *yo, uint32_t zoff, unsigned ncols, unsigned nquads)
{
    unsigned char *lin = (unsigned char *)(uintptr_t)src; /* only read in this direction */
    if (ncols == 32)
        qstrip8_body(tile, lin, row_pitch, &one_tile_base, 1, xo, 32, yo, zoff, nquads, false, true, false, NULL, NULL);
    else
        qstrip8_body(tile, lin, row_pitch, &one_tile_base, 1, xo, ncols, yo, zoff, nquads, false, true, false, NULL, NULL);
}
#undef ST256
#undef ST128
#undef ST256U
#undef ST128U

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
    .swz_pairs16 = swz_pairs16,
    .unswz_pairs16 = unswz_pairs16,
    .swz_pairs16_nt = swz_pairs16_nt,
    .swz_runs64 = swz_runs64,
    .unswz_runs64 = unswz_runs64,
    .swz_runs64_nt = swz_runs64_nt,
    .unswz_runs64_nt = unswz_runs64_nt,
    .unswz_pairs16_nt = unswz_pairs16_nt,
    .swz_quads8 = swz_quads8,
    .unswz_quads8 = unswz_quads8,
    .swz_lines16 = swz_lines16,
    .swz_lines16_nt = swz_lines16_nt,
    .swz_qlines8_nt = swz_qlines8_nt,
    .swz_strip16 = swz_strip16,
    .swz_strip16_nt = swz_strip16_nt,
    .swz_qstrip8_nt = swz_qstrip8_nt,
    .unswz_strip16 = unswz_strip16,
    .unswz_strip16_nt = unswz_strip16_nt,
    .swz_qstrip8 = swz_qstrip8,
    .unswz_qstrip8 = unswz_qstrip8,
    .unswz_qstrip8_nt = unswz_qstrip8_nt,
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
