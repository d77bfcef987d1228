/* SPDX-License-Identifier: MIT */
/* lib/arch/x86/kernels_avx512.c - the AVX-512 backend (64-byte vectors: one vector per cache
 * line). Compiled with -mavx512f -mavx512bw -mavx512vl; used only when CPUID and XCR0 report
 * them. The same template as AVX2, so the logic tested there is the logic here; only the
 * width differs. */
#include <immintrin.h>

#define VL 64
#define VEC __m512i
#define LOADU(p) _mm512_loadu_si512((const void *)(p))
#define STOREU(p, v) _mm512_storeu_si512((void *)(p), (v))
#define STORE(p, v) _mm512_store_si512((void *)(p), (v))
#define STREAM(p, v) _mm512_stream_si512((void *)(p), (v))
#define STREAM_LOAD(p) _mm512_stream_load_si512((void *)(p))
#define HAVE_STREAM_LOAD 1
#define SET1_32(x) _mm512_set1_epi32(x)
#define OPS_NAME vidmm_ops_avx512
#define BACKEND VIDMM_BACKEND_AVX512
#define BACKEND_NAME "avx512"
#include "arch/x86/kernels_template.h"
