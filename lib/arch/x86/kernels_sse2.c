/* SPDX-License-Identifier: MIT */
/* lib/arch/x86/kernels_sse2.c - the SSE2 backend (16-byte vectors). Compiled with -msse2. SSE2
 * has streaming stores (MOVNTDQ) but no streaming loads (MOVNTDQA is SSE4.1), so this table's
 * copy_stream uses ordinary loads and says so with stream_loads = false. */
#include <emmintrin.h>

#define VL 16
#define VEC __m128i
#define LOADU(p) _mm_loadu_si128((const __m128i *)(const void *)(p))
#define STOREU(p, v) _mm_storeu_si128((__m128i *)(void *)(p), (v))
#define STORE(p, v) _mm_store_si128((__m128i *)(void *)(p), (v))
#define STREAM(p, v) _mm_stream_si128((__m128i *)(void *)(p), (v))
#define HAVE_STREAM_LOAD 0
#define SET1_32(x) _mm_set1_epi32(x)
#define OPS_NAME vidmm_ops_sse2
#define BACKEND VIDMM_BACKEND_SSE2
#define BACKEND_NAME "sse2"
#include "arch/x86/kernels_template.h"
