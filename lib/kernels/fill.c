/* SPDX-License-Identifier: MIT */
/* lib/kernels/fill.c - the public 32-bit pattern fill (a paging FILL operation). */
#include <string.h>
#include "common/internal.h"
#include "kernels/kernel_ops.h"

int vidmm_fill32_ex(void *dst, uint32_t pattern, size_t n, enum vidmm_mem_kind kind,
                    const struct vidmm_kernel_opts *opts)
{
    enum vidmm_backend backend;
    enum vidmm_strategy strategy;
    const struct vidmm_kernel_ops *ops;
    bool streamed = false;
    int err;

    if ((err = vidmm_read_kernel_opts(opts, &backend, &strategy)) < 0)
        return err;
    /* DXGK_BUILDPAGINGBUFFER_FILL: FillSize is a multiple of 4 (spec/wddm-vidmm.md 9.3). */
    if ((unsigned)kind >= VIDMM_MEM_KIND_COUNT_)
        return vidmm_refuse("vidmm_fill32", "kind", "unknown memory kind", "kernels.h");
    if (!vidmm_range_ok(dst, n))
        return vidmm_refuse("vidmm_fill32", "dst", "NULL or wrapping range", "kernels.h");
    if (n & 3u)
        return vidmm_refuse("vidmm_fill32", "n", "not a multiple of 4 (FillSize)", "9.3");
    ops = backend == VIDMM_BACKEND_AUTO ? vidmm_ops_active() : vidmm_ops_get(backend);
    if (ops == NULL)
        return VIDMM_E_UNSUPPORTED;
    if (strategy == VIDMM_STRATEGY_MOVDIR64B || strategy == VIDMM_STRATEGY_STREAM_LOAD)
        return VIDMM_E_UNSUPPORTED;
    if (strategy == VIDMM_STRATEGY_LIBC && pattern != (pattern & 0xffu) * 0x01010101u)
        return VIDMM_E_UNSUPPORTED; /* memset stores one byte value */
    if (n == 0)
        return 0;

    if (strategy == VIDMM_STRATEGY_AUTO) {
        if (kind == VIDMM_MEM_CACHED && n < vidmm_nt_threshold())
            strategy = VIDMM_STRATEGY_TEMPORAL;
        else
            strategy = VIDMM_STRATEGY_NONTEMPORAL;
    }
    switch (strategy) {
    case VIDMM_STRATEGY_NONTEMPORAL:
        ops->fill_nt(dst, pattern, n);
        streamed = ops->streaming;
        break;
    case VIDMM_STRATEGY_LIBC:
        memset(dst, (int)(pattern & 0xffu), n);
        break;
    default:
        ops->fill(dst, pattern, n);
        break;
    }
    if (streamed || kind != VIDMM_MEM_CACHED)
        vidmm_finish_stores(dst, n, kind, streamed);
    return 0;
}

int vidmm_fill32(void *dst, uint32_t pattern, size_t n, enum vidmm_mem_kind dst_kind)
{
#ifdef VIDMM_BENCH_SELFTEST_SLOWDOWN
#  if VIDMM_BENCH_SELFTEST_SLOWDOWN >= 2
    /* tools/bench_gate.sh --wall's check only (bench/gate/CMakeLists.txt, level WALL): 10% more
     * time at any size - every tenth call fills twice. (Filling a tenth of the bytes twice moved
     * a 4 MiB fill by only ~3% here: the second pass hit in the L2.) A relaxed counter: it orders
     * nothing, and calls from several threads only share the tenths. */
    static unsigned wall_calls;
    if (__atomic_add_fetch(&wall_calls, 1, __ATOMIC_RELAXED) % 10 == 0)
        (void)vidmm_fill32_ex(dst, pattern, n, dst_kind, NULL);
#  else
    /* tools/bench_gate.sh --selftest only (bench/gate/CMakeLists.txt): ~3% more instructions. */
    for (volatile size_t spin = 0; spin < n / 4096; spin++) {
    }
#  endif
#endif
    return vidmm_fill32_ex(dst, pattern, n, dst_kind, NULL);
}
