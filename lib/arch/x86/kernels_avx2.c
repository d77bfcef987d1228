/* SPDX-License-Identifier: MIT */
/* lib/arch/x86/kernels_avx2.c - the AVX2 backend (32-byte vectors). Compiled with -mavx2
 * -msse4.1; used only when CPUID and XCR0 report AVX2. */
#include <immintrin.h>

#define VL 32
#define VEC __m256i
#define LOADU(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define STOREU(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), (v))
#define STORE(p, v) _mm256_store_si256((__m256i *)(void *)(p), (v))
#define STREAM(p, v) _mm256_stream_si256((__m256i *)(void *)(p), (v))
#define STREAM_LOAD(p) _mm256_stream_load_si256((const __m256i *)(const void *)(p))
#define HAVE_STREAM_LOAD 1
#define SET1_32(x) _mm256_set1_epi32(x)
#define OPS_NAME vidmm_ops_avx2
#define BACKEND VIDMM_BACKEND_AVX2
#define BACKEND_NAME "avx2"
#include "arch/x86/kernels_template.h"
