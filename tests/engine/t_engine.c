/* SPDX-License-Identifier: MIT */
/* tests/engine/t_engine.c - the helpers of t_engine.h. Every helper that expects success fails
 * the test (cr_assert) with the call and the error name when the engine says otherwise. */
#define _GNU_SOURCE /* memfd_create() */
#include "t_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------------------------
 * Segments and devices.
 * ------------------------------------------------------------------------------------------- */

struct vidmm_segment_desc t_mem_seg(uint64_t base, uint64_t size, uint32_t flags)
{
    struct vidmm_segment_desc s;
    memset(&s, 0, sizeof(s));
    s.base_address = base;
    s.size = size;
    s.commit_limit = size;
    s.flags = flags;
    return s;
}

struct vidmm_segment_desc t_aper_seg(uint64_t base, uint64_t size, uint32_t flags)
{
    struct vidmm_segment_desc s = t_mem_seg(base, size, flags | VIDMM_SEGMENT_APERTURE);
    return s;
}

void t_segs_pack_v0(void *dst, const struct vidmm_segment_desc *segs, uint32_t count)
{
    unsigned char *d = dst;
    for (uint32_t i = 0; i < count; i++)
        memcpy(d + (size_t)i * VIDMM_SEGMENT_DESC_SIZE_0, &segs[i], VIDMM_SEGMENT_DESC_SIZE_0);
}

struct vidmm_device_desc t_ddesc(const struct vidmm_segment_desc *segs, uint32_t count)
{
    struct vidmm_device_desc d = VIDMM_DEVICE_DESC_INIT;
    d.segments = segs;
    d.segment_count = count;
    d.flags = VIDMM_DEVICE_LOG_PAGING;
    d.paging_threads = 0;
    return d;
}

vidmm_device *t_dev(const struct vidmm_device_desc *d)
{
    vidmm_device *dev = NULL;
    int rc = vidmm_device_create(d, &dev);
    cr_assert_eq(rc, 0, "vidmm_device_create() returned %d (%s)", rc, vidmm_strerror(rc));
    cr_assert_not_null(dev);
    return dev;
}

vidmm_device *t_dev_std_ex(uint32_t ranges, const struct vidmm_driver *drv, uint32_t extra_flags)
{
    static struct vidmm_segment_desc segs[3];
    segs[0] = t_mem_seg(T_VIS_BASE, T_VIS_SIZE, VIDMM_SEGMENT_CPU_VISIBLE);
    segs[1] = t_mem_seg(T_LOC_BASE, T_LOC_SIZE, 0);
    segs[2] = t_aper_seg(T_APE_BASE, T_APE_SIZE, 0);
    struct vidmm_device_desc d = t_ddesc(segs, 3);
    d.swizzling_ranges = ranges;
    d.driver = drv;
    d.flags |= extra_flags;
    return t_dev(&d);
}

vidmm_device *t_dev_std(void)
{
    return t_dev_std_ex(0, NULL, 0);
}

vidmm_device *t_dev_one(uint64_t size)
{
    struct vidmm_segment_desc s = t_mem_seg(T_VIS_BASE, size, VIDMM_SEGMENT_CPU_VISIBLE);
    struct vidmm_device_desc d = t_ddesc(&s, 1);
    return t_dev(&d);
}

void t_create_refused(const struct vidmm_device_desc *d, const char *why)
{
    vidmm_device *const sentinel = (vidmm_device *)(uintptr_t)0x5EA7BEEFu;
    vidmm_device *dev = sentinel;
    int rc = vidmm_device_create(d, &dev);
    if (rc == 0 && dev != sentinel)
        vidmm_device_destroy(dev);
    cr_assert_eq(rc, VIDMM_E_INVALID_ARG, "%s: vidmm_device_create() returned %d (%s), expected INVALID_ARG", why,
                 rc, vidmm_strerror(rc));
    cr_assert_eq(dev, sentinel, "%s: refused vidmm_device_create() wrote *out", why);
}

void t_create_ok(const struct vidmm_device_desc *d, const char *why)
{
    vidmm_device *dev = NULL;
    int rc = vidmm_device_create(d, &dev);
    cr_assert_eq(rc, 0, "%s (positive control): vidmm_device_create() returned %d (%s)", why, rc,
                 vidmm_strerror(rc));
    cr_assert_not_null(dev);
    vidmm_device_destroy(dev);
}

void t_segs_refused(const struct vidmm_segment_desc *segs, uint32_t count, const char *why)
{
    struct vidmm_device_desc d = t_ddesc(segs, count);
    t_create_refused(&d, why);
}

void t_segs_ok(const struct vidmm_segment_desc *segs, uint32_t count, const char *why)
{
    struct vidmm_device_desc d = t_ddesc(segs, count);
    t_create_ok(&d, why);
}

/* ---------------------------------------------------------------------------------------------
 * Allocations.
 * ------------------------------------------------------------------------------------------- */

struct vidmm_alloc_desc t_adesc(uint64_t size, uint32_t set)
{
    struct vidmm_alloc_desc d;
    memset(&d, 0, sizeof(d));
    d.size_of = sizeof(d);
    d.size = size;
    d.supported_read_set = set;
    d.supported_write_set = set;
    d.flags = VIDMM_ALLOC_CPU_VISIBLE;
    d.priority = VIDMM_PRIORITY_NORMAL;
    d.process = T_PROC;
    d.driver_data = T_DRV_DATA;
    d.fill_pattern = T_FILL;
    return d;
}

vidmm_handle t_alloc(vidmm_device *dev, const struct vidmm_alloc_desc *d)
{
    vidmm_handle h = 0;
    int rc = vidmm_alloc_create(dev, d, &h);
    cr_assert_eq(rc, 0, "vidmm_alloc_create() returned %d (%s)", rc, vidmm_strerror(rc));
    cr_assert_neq(h, 0, "vidmm_alloc_create() gave handle 0");
    return h;
}

vidmm_handle t_alloc_simple(vidmm_device *dev, uint64_t size, uint32_t set)
{
    struct vidmm_alloc_desc d = t_adesc(size, set);
    return t_alloc(dev, &d);
}

void t_alloc_refused(vidmm_device *dev, const struct vidmm_alloc_desc *d, const char *why)
{
    struct t_snap s;
    t_snap(&s, dev, NULL, 0);
    vidmm_handle h = T_OUT_SENTINEL;
    int rc = vidmm_alloc_create(dev, d, &h);
    cr_assert_eq(rc, VIDMM_E_INVALID_ARG, "%s: vidmm_alloc_create() returned %d (%s), expected INVALID_ARG", why, rc,
                 vidmm_strerror(rc));
    cr_assert_eq(h, T_OUT_SENTINEL, "%s: refused vidmm_alloc_create() wrote *out (%u)", why, h);
    t_unchanged(&s, why);
}

struct vidmm_alloc_info t_query(vidmm_device *dev, vidmm_handle h)
{
    struct vidmm_alloc_info info;
    memset(&info, 0, sizeof(info));
    info.size_of = sizeof(info);
    int rc = vidmm_alloc_query(dev, h, &info);
    cr_assert_eq(rc, 0, "vidmm_alloc_query(%u) returned %d (%s)", h, rc, vidmm_strerror(rc));
    return info;
}

uint64_t t_round(uint64_t size)
{
    return (size + T_PG - 1) / T_PG * T_PG;
}

/* ---------------------------------------------------------------------------------------------
 * Submissions, residency, fences, locks, content.
 * ------------------------------------------------------------------------------------------- */

uint64_t t_submit(vidmm_device *dev, const vidmm_handle *h, const uint32_t *ref_flags, uint32_t n,
                  struct vidmm_residency *where)
{
    struct vidmm_alloc_ref refs[16];
    cr_assert(n <= 16);
    for (uint32_t i = 0; i < n; i++) {
        refs[i].allocation = h[i];
        refs[i].flags = ref_flags ? ref_flags[i] : 0;
    }
    uint64_t fence = 0;
    int rc = vidmm_submit(dev, refs, n, 0, where, &fence);
    cr_assert_eq(rc, 0, "vidmm_submit(%u allocations) returned %d (%s)", n, rc, vidmm_strerror(rc));
    cr_assert_neq(fence, 0, "vidmm_submit() returned fence 0");
    return fence;
}

uint64_t t_submit1(vidmm_device *dev, vidmm_handle h, uint32_t ref_flags, struct vidmm_residency *where)
{
    return t_submit(dev, &h, &ref_flags, 1, where);
}

void t_use(vidmm_device *dev, vidmm_handle h, uint32_t ref_flags)
{
    t_signal(dev, t_submit1(dev, h, ref_flags, NULL));
}

void t_resident(vidmm_device *dev, vidmm_handle h, struct vidmm_residency *where)
{
    int rc = vidmm_make_resident(dev, &h, 1, where);
    cr_assert_eq(rc, 0, "vidmm_make_resident(%u) returned %d (%s)", h, rc, vidmm_strerror(rc));
}

void t_signal(vidmm_device *dev, uint64_t fence)
{
    int rc = vidmm_fence_signal(dev, fence);
    cr_assert_eq(rc, 0, "vidmm_fence_signal(%llu) returned %d (%s)", (unsigned long long)fence, rc,
                 vidmm_strerror(rc));
}

void t_evict(vidmm_device *dev, vidmm_handle h)
{
    int rc = vidmm_evict(dev, &h, 1);
    cr_assert_eq(rc, 0, "vidmm_evict(%u) returned %d (%s)", h, rc, vidmm_strerror(rc));
}

struct vidmm_lock_args t_largs(vidmm_handle h, uint32_t flags)
{
    struct vidmm_lock_args a;
    memset(&a, 0, sizeof(a));
    a.allocation = h;
    a.flags = flags;
    a.process = T_PROC;
    return a;
}

void *t_lock(vidmm_device *dev, vidmm_handle h, uint32_t flags)
{
    struct vidmm_lock_args a = t_largs(h, flags);
    int rc = vidmm_lock(dev, &a);
    cr_assert_eq(rc, 0, "vidmm_lock(%u, flags 0x%x) returned %d (%s)", h, flags, rc, vidmm_strerror(rc));
    cr_assert_not_null(a.data, "vidmm_lock(%u) returned no pointer", h);
    return a.data;
}

void t_unlock(vidmm_device *dev, vidmm_handle h)
{
    int rc = vidmm_unlock(dev, 1, &h);
    cr_assert_eq(rc, 0, "vidmm_unlock(%u) returned %d (%s)", h, rc, vidmm_strerror(rc));
}

void t_read(vidmm_device *dev, vidmm_handle h, uint64_t off, void *buf, size_t n)
{
    int rc = vidmm_gpu_access(dev, h, off, buf, n, false);
    cr_assert_eq(rc, 0, "vidmm_gpu_access(%u, read %zu at %llu) returned %d (%s)", h, n, (unsigned long long)off,
                 rc, vidmm_strerror(rc));
}

void t_write(vidmm_device *dev, vidmm_handle h, uint64_t off, const void *buf, size_t n)
{
    int rc = vidmm_gpu_access(dev, h, off, (void *)buf, n, true);
    cr_assert_eq(rc, 0, "vidmm_gpu_access(%u, write %zu at %llu) returned %d (%s)", h, n, (unsigned long long)off,
                 rc, vidmm_strerror(rc));
}

bool t_is_fill(const void *p, size_t n, uint32_t pat)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        unsigned char want = (unsigned char)(pat >> (8 * (i % 4)));
        if (b[i] != want)
            return false;
    }
    return true;
}

void t_expect_fill(vidmm_device *dev, vidmm_handle h, uint64_t off, size_t n, uint32_t pat)
{
    unsigned char *buf = malloc(n);
    cr_assert_not_null(buf);
    t_read(dev, h, off, buf, n);
    for (size_t i = 0; i < n; i++) {
        unsigned char want = (unsigned char)(pat >> (8 * ((off + i) % 4)));
        cr_assert_eq(buf[i], want, "allocation %u byte %llu is 0x%02x, the fill pattern 0x%08x says 0x%02x", h,
                     (unsigned long long)(off + i), buf[i], pat, want);
    }
    free(buf);
}

/* Eight bytes a step of the generator, stored whole: a byte a step made the tests' content
 * (hundreds of MiB in a run) cost more than the library's work under the sanitizers and
 * valgrind, which instrument every store (test_contract12's d17 took 23 s under TSan). */
void t_bytes(void *p, size_t n, uint32_t seed)
{
    uint64_t x = 0x9E3779B97F4A7C15ull ^ seed;
    unsigned char *b = p;
    for (size_t i = 0; i < n; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        const uint64_t v = x * 0x2545F4914F6CDD1Dull; /* every byte of it mixed */
        memcpy(b + i, &v, n - i < 8 ? n - i : 8);
    }
}

/* ---------------------------------------------------------------------------------------------
 * The paging log.
 * ------------------------------------------------------------------------------------------- */

void t_log_take(vidmm_device *dev, struct t_log_buf *b)
{
    b->n = vidmm_paging_log_read(dev, b->op, T_LOG_MAX);
    cr_assert_lt(b->n, T_LOG_MAX, "paging log larger than the test buffer");
}

void t_log_clear(vidmm_device *dev)
{
    struct vidmm_paging_op tmp[64];
    while (vidmm_paging_log_read(dev, tmp, 64) == 64) {
    }
}

ptrdiff_t t_log_find(const struct t_log_buf *b, uint32_t type, vidmm_handle h, size_t from)
{
    for (size_t i = from; i < b->n; i++)
        if (b->op[i].type == type && (h == 0 || b->op[i].allocation == h))
            return (ptrdiff_t)i;
    return -1;
}

size_t t_log_count(const struct t_log_buf *b, uint32_t type, vidmm_handle h)
{
    size_t c = 0;
    for (size_t i = 0; i < b->n; i++)
        if (b->op[i].type == type && (h == 0 || b->op[i].allocation == h))
            c++;
    return c;
}

const char *t_op_name(uint32_t type)
{
    static const char *const names[] = { "TRANSFER", "FILL", "DISCARD_CONTENT", "READ_PHYSICAL",
                                         "WRITE_PHYSICAL", "MAP_APERTURE_SEGMENT", "UNMAP_APERTURE_SEGMENT",
                                         "SPECIAL_LOCK_TRANSFER" };
    return type < 8 ? names[type] : "?";
}

void t_log_dump(const struct t_log_buf *b, const char *title)
{
    cr_log_info("%s: %zu paging records", title, b->n);
    for (size_t i = 0; i < b->n; i++) {
        const struct vidmm_paging_op *o = &b->op[i];
        cr_log_info("  [%zu] %s alloc %u flags 0x%x size %llu src %u:0x%llx dst %u:0x%llx pages@%llu mdl %u", i,
                    t_op_name(o->type), o->allocation, o->flags, (unsigned long long)o->size, o->src.segment_id,
                    (unsigned long long)o->src.segment_address, o->dst.segment_id,
                    (unsigned long long)o->dst.segment_address, (unsigned long long)o->offset_in_pages,
                    o->mdl_offset);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Snapshots.
 * ------------------------------------------------------------------------------------------- */

struct vidmm_stats t_stats(vidmm_device *dev)
{
    struct vidmm_stats st;
    memset(&st, 0, sizeof(st));
    st.size_of = sizeof(st);
    int rc = vidmm_get_stats(dev, &st);
    cr_assert_eq(rc, 0, "vidmm_get_stats() returned %d (%s)", rc, vidmm_strerror(rc));
    return st;
}

uint64_t t_paging_total(vidmm_device *dev)
{
    struct vidmm_stats st = t_stats(dev);
    uint64_t n = 0;
    for (int k = 0; k < 8; k++)
        n += st.paging_ops[k];
    return n;
}

static uint64_t content_sum(vidmm_device *dev, vidmm_handle h, uint64_t size)
{
    unsigned char *buf = malloc(size ? size : 1);
    cr_assert_not_null(buf);
    t_read(dev, h, 0, buf, size);
    uint64_t x = 1469598103934665603ull;
    for (uint64_t i = 0; i < size; i++) {
        x ^= buf[i];
        x *= 1099511628211ull;
    }
    free(buf);
    return x;
}

void t_snap(struct t_snap *s, vidmm_device *dev, const vidmm_handle *h, uint32_t n)
{
    cr_assert(n <= T_SNAP_MAX);
    memset(s, 0, sizeof(*s));
    s->dev = dev;
    t_log_clear(dev);
    s->n = n;
    for (uint32_t i = 0; i < n; i++) {
        s->h[i] = h[i];
        s->info[i] = t_query(dev, h[i]);
        s->sum[i] = content_sum(dev, h[i], s->info[i].size);
    }
    s->stats = t_stats(dev);
}

void t_snap1(struct t_snap *s, vidmm_device *dev, vidmm_handle h)
{
    t_snap(s, dev, &h, 1);
}

#define T_SAME_STAT(f)                                                                              \
    cr_assert_eq(now.f, s->stats.f, "%s changed statistics field " #f ": %llu -> %llu", what,        \
                 (unsigned long long)s->stats.f, (unsigned long long)now.f)
#define T_SAME_INFO(f)                                                                              \
    cr_assert_eq((uint64_t)in.f, (uint64_t)was->f, "%s changed vidmm_alloc_query(%u)." #f ": %llu -> %llu", what, \
                 s->h[i], (unsigned long long)was->f, (unsigned long long)in.f)

void t_unchanged(const struct t_snap *s, const char *what)
{
    struct vidmm_paging_op op;
    size_t n = vidmm_paging_log_read(s->dev, &op, 1);
    cr_assert_eq(n, 0, "%s emitted paging operations (first: %s of allocation %u)", what, t_op_name(op.type),
                 op.allocation);
    for (uint32_t i = 0; i < s->n; i++) {
        const struct vidmm_alloc_info *was = &s->info[i];
        struct vidmm_alloc_info in = t_query(s->dev, s->h[i]);
        T_SAME_INFO(where);
        T_SAME_INFO(segment_id);
        T_SAME_INFO(offset);
        T_SAME_INFO(gpu_address);
        T_SAME_INFO(size);
        T_SAME_INFO(priority);
        T_SAME_INFO(lock_count);
        T_SAME_INFO(dirty);
        T_SAME_INFO(busy);
        T_SAME_INFO(evicted_swizzled);
        T_SAME_INFO(pinned);
        T_SAME_INFO(instance);
        T_SAME_INFO(current);
        uint64_t sum = content_sum(s->dev, s->h[i], in.size);
        cr_assert_eq(sum, s->sum[i], "%s changed the content of allocation %u", what, s->h[i]);
    }
    struct vidmm_stats now = t_stats(s->dev);
    T_SAME_STAT(segment_count);
    T_SAME_STAT(paging_threads);
    T_SAME_STAT(allocations);
    T_SAME_STAT(sysmem_used);
    T_SAME_STAT(submissions);
    T_SAME_STAT(locks);
    T_SAME_STAT(renames);
    for (int k = 0; k < 8; k++)
        cr_assert_eq(now.paging_ops[k], s->stats.paging_ops[k], "%s changed statistics paging_ops[%s]", what,
                     t_op_name((uint32_t)k));
    T_SAME_STAT(bytes_paged_in);
    T_SAME_STAT(bytes_paged_out);
    T_SAME_STAT(evictions);
    T_SAME_STAT(ranges_acquired);
    T_SAME_STAT(ranges_released);
    T_SAME_STAT(paging_log_dropped);
    T_SAME_STAT(cache_flushes);
    T_SAME_STAT(cache_invalidates);
    for (uint32_t k = 0; k < now.segment_count && k < VIDMM_MAX_SEGMENTS; k++) {
        T_SAME_STAT(segments[k].size);
        T_SAME_STAT(segments[k].used);
        T_SAME_STAT(segments[k].largest_free);
        T_SAME_STAT(segments[k].allocations);
    }
}

/* ---------------------------------------------------------------------------------------------
 * The recording driver.
 * ------------------------------------------------------------------------------------------- */

void t_rec_init(struct t_rec *r)
{
    memset(r, 0, sizeof(*r));
    pthread_mutex_init(&r->mu, NULL);
    atomic_init(&r->flag, false);
}

static void fill32(void *dst, uint32_t pat, uint64_t n)
{
    unsigned char *b = dst;
    for (uint64_t i = 0; i < n; i++)
        b[i] = (unsigned char)(pat >> (8 * (i % 4)));
}

static uint32_t rec_paging(void *arg, struct vidmm_paging_op *op)
{
    struct t_rec *r = arg;
    uint32_t status = VIDMM_STATUS_SUCCESS;
    pthread_mutex_lock(&r->mu);
    uint32_t i = r->n_ops;
    if (i < T_REC_MAX) {
        r->ops[i] = *op;
        r->flag_at[i] = atomic_load(&r->flag);
    }
    if (!r->mode_done) {
        switch (r->mode) {
        case T_REC_DMA_ONCE:
            if (op->type == r->mode_type) {
                op->multipass_offset = 7;
                status = VIDMM_STATUS_INSUFFICIENT_DMA_BUFFER;
                r->mode_done = true;
            }
            break;
        case T_REC_BUSY_ONCE:
            if (op->type == VIDMM_PAGING_TRANSFER && !(op->flags & VIDMM_TRANSFER_ALLOCATION_IS_IDLE)) {
                status = VIDMM_STATUS_ALLOCATION_BUSY;
                r->mode_done = true;
            }
            break;
        case T_REC_FATAL_ONCE:
            if (op->type == r->mode_type) {
                status = 0xC0000001u;
                r->mode_done = true;
            }
            break;
        default:
            break;
        }
    }
    if (i < T_REC_MAX)
        r->status_ret[i] = status;
    r->n_ops++;
    pthread_mutex_unlock(&r->mu);
    if (status != VIDMM_STATUS_SUCCESS)
        return status;
    switch (op->type) {
    case VIDMM_PAGING_TRANSFER:
    case VIDMM_PAGING_SPECIAL_LOCK_TRANSFER:
        if (op->dst_ptr && op->src_ptr && op->dst_ptr != op->src_ptr)
            memcpy(op->dst_ptr, op->src_ptr, op->size);
        break;
    case VIDMM_PAGING_FILL:
        if (op->dst_ptr)
            fill32(op->dst_ptr, op->fill_pattern, op->size);
        break;
    default:
        break;
    }
    return VIDMM_STATUS_SUCCESS;
}

static uint32_t rec_acquire(void *arg, struct vidmm_swizzling_range_args *a)
{
    struct t_rec *r = arg;
    pthread_mutex_lock(&r->mu);
    uint32_t i = r->n_acq++;
    uint32_t status = r->acq_default;
    if (i < 64) {
        r->acq[i] = *a;
        if (r->acq_status[i] != 0)
            status = r->acq_status[i];
    }
    pthread_mutex_unlock(&r->mu);
    return status;
}

static uint32_t rec_release(void *arg, const struct vidmm_swizzling_range_args *a)
{
    struct t_rec *r = arg;
    pthread_mutex_lock(&r->mu);
    uint32_t i = r->n_rel++;
    if (i < 64)
        r->rel[i] = *a;
    pthread_mutex_unlock(&r->mu);
    return VIDMM_STATUS_SUCCESS;
}

static void rec_flush(void *arg, void *p, size_t n)
{
    struct t_rec *r = arg;
    pthread_mutex_lock(&r->mu);
    r->n_flush++;
    r->flush_p = p;
    r->flush_n = n;
    pthread_mutex_unlock(&r->mu);
}

static void rec_inval(void *arg, void *p, size_t n)
{
    struct t_rec *r = arg;
    pthread_mutex_lock(&r->mu);
    r->n_inval++;
    r->inval_p = p;
    r->inval_n = n;
    pthread_mutex_unlock(&r->mu);
}

struct vidmm_driver t_rec_driver(struct t_rec *r, bool paging, bool ranges, bool cache)
{
    struct vidmm_driver d;
    memset(&d, 0, sizeof(d));
    d.arg = r;
    if (paging)
        d.paging = rec_paging;
    if (ranges) {
        d.acquire_swizzling_range = rec_acquire;
        d.release_swizzling_range = rec_release;
    }
    if (cache) {
        d.flush_cpu_cache = rec_flush;
        d.invalidate_cpu_cache = rec_inval;
    }
    return d;
}

uint32_t t_rec_ops(struct t_rec *r)
{
    pthread_mutex_lock(&r->mu);
    uint32_t n = r->n_ops;
    pthread_mutex_unlock(&r->mu);
    return n;
}

/* ---------------------------------------------------------------------------------------------
 * Signalling later.
 * ------------------------------------------------------------------------------------------- */

static void *later_main(void *arg)
{
    struct t_later *l = arg;
    struct timespec ts = { (time_t)(l->ms / 1000), (long)(l->ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
    if (l->flag)
        atomic_store(l->flag, true);
    l->rc = vidmm_fence_signal(l->dev, l->fence);
    return NULL;
}

void t_signal_later(struct t_later *l, vidmm_device *dev, uint64_t fence, unsigned ms, atomic_bool *flag)
{
    l->dev = dev;
    l->fence = fence;
    l->ms = ms;
    l->flag = flag;
    l->rc = -100;
    cr_assert_eq(pthread_create(&l->th, NULL, later_main, l), 0);
}

void t_later_join(struct t_later *l)
{
    pthread_join(l->th, NULL);
    cr_assert_eq(l->rc, 0, "the signalling thread's vidmm_fence_signal() returned %d (%s)", l->rc,
                 vidmm_strerror(l->rc));
}

/* ---------------------------------------------------------------------------------------------
 * Swizzled surfaces.
 * ------------------------------------------------------------------------------------------- */

void t_swz_init(struct t_swz *s)
{
    struct vidmm_tile_layout l = VIDMM_TILE_LAYOUT_INIT(VIDMM_TILING_MORTON);
    memset(s, 0, sizeof(*s));
    s->layout = l;
    s->surface.size = sizeof(s->surface);
    s->surface.width = 64;
    s->surface.height = 64;
    s->surface.depth = 1;
    s->surface.element_bytes = 4;
    s->surface.block_width = 1;
    s->surface.block_height = 1;
    s->surface.mip_levels = 1;
    s->surface.array_layers = 1;
    T_OK(vidmm_surface_tiled_size(&s->layout, &s->surface, &s->tiled_size));
    T_OK(vidmm_surface_linear_size(&s->layout, &s->surface, &s->linear_size));
}

struct vidmm_alloc_desc t_swz_desc(const struct t_swz *s, uint32_t set)
{
    struct vidmm_alloc_desc d = t_adesc(s->tiled_size, set);
    d.flags |= VIDMM_ALLOC_SWIZZLED;
    d.layout = &s->layout;
    d.surface = &s->surface;
    return d;
}

void t_deswz(const struct t_swz *s, const void *tiled, void *linear)
{
    T_OK(vidmm_deswizzle_surface(&s->layout, &s->surface, tiled, s->tiled_size, linear, s->linear_size));
}

void t_swz(const struct t_swz *s, const void *linear, void *tiled)
{
    T_OK(vidmm_swizzle_surface(&s->layout, &s->surface, tiled, s->tiled_size, linear, s->linear_size));
}

/* ---------------------------------------------------------------------------------------------
 * Swizzled surfaces of any shape.
 * ------------------------------------------------------------------------------------------- */

void t_surf_init(struct t_surf *s, enum vidmm_tiling t, uint32_t w, uint32_t h, uint32_t d, uint32_t e,
                 uint32_t mips, uint32_t layers)
{
    memset(s, 0, sizeof *s);
    s->layout = (struct vidmm_tile_layout)VIDMM_TILE_LAYOUT_INIT(t);
    s->desc.size = sizeof s->desc;
    s->desc.width = w;
    s->desc.height = h;
    s->desc.depth = d;
    s->desc.element_bytes = e;
    s->desc.block_width = s->desc.block_height = 1;
    s->desc.mip_levels = mips;
    s->desc.array_layers = layers;
}

void t_surf_sizes(struct t_surf *s)
{
    cr_assert_eq(vidmm_surface_tiled_size(&s->layout, &s->desc, &s->tiled), 0);
    cr_assert_eq(vidmm_surface_linear_size(&s->layout, &s->desc, &s->linear), 0);
}

vidmm_handle t_surf_alloc(vidmm_device *dev, const struct t_surf *s, unsigned char *tiled, uint32_t seed)
{
    struct vidmm_alloc_desc d = t_adesc(s->tiled, T_SET(1));
    d.flags |= VIDMM_ALLOC_SWIZZLED;
    d.layout = &s->layout;
    d.surface = &s->desc;
    vidmm_handle h = t_alloc(dev, &d);
    t_resident(dev, h, NULL);
    t_bytes(tiled, (size_t)s->tiled, seed);
    t_write(dev, h, 0, tiled, (size_t)s->tiled);
    return h;
}

size_t t_resident_pages(const void *p, size_t n)
{
    const uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(T_PG - 1);
    const size_t pages = (size_t)(((uintptr_t)p + n - lo + T_PG - 1) / T_PG);
    unsigned char *v = malloc(pages);
    cr_assert_not_null(v);
    cr_assert_eq(mincore((void *)lo, pages * T_PG, v), 0);
    size_t count = 0;
    for (size_t i = 0; i < pages; i++)
        count += v[i] & 1;
    free(v);
    return count;
}

int t_wp_async_shared(void)
{
    int fd = memfd_create("vidmm-test-probe", MFD_CLOEXEC);
    cr_assert_geq(fd, 0);
    cr_assert_eq(ftruncate(fd, 16 * (off_t)T_PG), 0);
    void *m = mmap(NULL, 16 * T_PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    cr_assert_neq(m, MAP_FAILED);
    struct vidmm_writewatch_desc d = VIDMM_WRITEWATCH_DESC_INIT;
    d.base = m;
    d.size = 16 * T_PG;
    d.backend = VIDMM_WRITEWATCH_UFFD;
    d.flags = VIDMM_WRITEWATCH_QUIET;
    vidmm_writewatch *ww = NULL;
    const int rc = vidmm_writewatch_create(&d, &ww);
    vidmm_writewatch_destroy(ww);
    munmap(m, 16 * T_PG);
    close(fd);
    return rc;
}
