/* SPDX-License-Identifier: MIT */
/* lib/engine/io/io.c - the I/O layer's common part: opening the swap file (O_DIRECT where the
 * file system takes it), choosing and starting a backend, swap space, request validation,
 * the staging copy with its checksums, the blocking I/O loop of the thread and sync backends,
 * statistics and fault injection. The backends are in uring.c and threads.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "engine/io/io_impl.h"

#define KiB 1024ull
#define MiB (1024ull * 1024ull)

/* Used only where statx gives no direct-I/O alignment (kernels before 6.1, STATX_DIOALIGN):
 * 4096 is a multiple of every logical block size in use (512 and 4096 bytes) and of the page
 * size that O_DIRECT memory alignment never exceeds on x86-64 and AArch64 4K kernels. */
#define VMIO_FALLBACK_ALIGN 4096u

const char *vmio_backend_name(int backend)
{
    switch (backend) {
    case VMIO_BACKEND_AUTO: return "auto";
    case VMIO_BACKEND_URING: return "uring";
    case VMIO_BACKEND_THREADS: return "threads";
    case VMIO_BACKEND_SYNC: return "sync";
    default: return "?";
    }
}

int vmio_errno_to_err(int op, int neg_errno)
{
    /* A full file system is the same condition for the engine as a full swap file
     * (vmio_space_alloc(): VIDMM_E_NO_MEMORY): keep the allocation in memory and try later.
     * Everything else is a failing device or a bug: VIDMM_E_IO. */
    if (op == VMIO_WRITE && (neg_errno == -ENOSPC || neg_errno == -EDQUOT))
        return VIDMM_E_NO_MEMORY;
    /* The kernel out of memory for the request is no statement about the data (io_uring may
     * return it under pressure): the caller keeps its disk copy and tries again. */
    if (neg_errno == -ENOMEM)
        return VIDMM_E_NO_MEMORY;
    return VIDMM_E_IO;
}

static int open_errno_to_err(int e)
{
    if (e == ENOMEM || e == EMFILE || e == ENFILE)
        return VIDMM_E_NO_MEMORY;
    return VIDMM_E_IO;
}

/* ---------------------------------------------------------------------------------------------
 * Statistics and completion.
 * ------------------------------------------------------------------------------------------- */

static void stat_max(atomic_uint_fast64_t *max, uint64_t v)
{
    uint_fast64_t m = atomic_load_explicit(max, memory_order_relaxed);
    while (v > m && !atomic_compare_exchange_weak_explicit(max, &m, v, memory_order_relaxed, memory_order_relaxed))
        ;
}

void vmio_io_started(struct vmio *io)
{
    atomic_fetch_add_explicit(&io->ios, 1, memory_order_relaxed);
    uint64_t n = atomic_fetch_add_explicit(&io->ios_in_flight, 1, memory_order_relaxed) + 1;
    stat_max(&io->max_ios_in_flight, n);
}

void vmio_io_ended(struct vmio *io)
{
    atomic_fetch_sub_explicit(&io->ios_in_flight, 1, memory_order_relaxed);
}

void vmio_finish(struct vmio *io, struct vmio_req *r, int err)
{
    if (err == 0) {
        if (r->op == VMIO_WRITE) {
            atomic_fetch_add_explicit(&io->writes, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&io->bytes_written, r->len, memory_order_relaxed);
        } else {
            atomic_fetch_add_explicit(&io->reads, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&io->bytes_read, r->len, memory_order_relaxed);
        }
    } else {
        atomic_fetch_add_explicit(&io->errors, 1, memory_order_relaxed);
    }
    /* Before the callback: a caller that waits for its callback and then reads the statistics
     * must not see its own request still in flight. */
    atomic_fetch_sub_explicit(&io->in_flight, 1, memory_order_relaxed);
    r->done(r->arg, r, err);
}

/* ---------------------------------------------------------------------------------------------
 * Staging.
 * ------------------------------------------------------------------------------------------- */

uint8_t *vmio_map_stage(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void vmio_unmap_stage(uint8_t *p, size_t bytes)
{
    if (p != NULL)
        munmap(p, bytes);
}

/* The copy into or out of a slot and the checksums are one pass over the bytes
 * (vmio_crc32c_copy_blocks()), done three blocks at a time. The CRCs of a staged write are
 * computed over the slot's bytes as they are read from the caller's buffer - the bytes the
 * kernel is given - so a caller changing its buffer during the write cannot make them disagree
 * (an unstaged write can: io_impl.h). */
#define STAGE_GROUP (3 * (size_t)VMIO_BLOCK)

uint8_t *vmio_io_begin(struct vmio *io, struct vmio_req *r, uint64_t at, uint32_t len, uint32_t io_len,
                       uint8_t *stage)
{
    uint8_t *buf = (uint8_t *)r->buf + at;
    uint32_t *crc = r->crc + at / VMIO_BLOCK;
    if (vmio_unstaged(io, r, at, len)) {
        if (r->op == VMIO_WRITE)
            vmio_crc32c_blocks(buf, len, crc);
        atomic_fetch_add_explicit(&io->unstaged_ios, 1, memory_order_relaxed);
        return buf;
    }
    if (r->op == VMIO_WRITE) {
        vmio_crc32c_copy_blocks(stage, buf, len, crc);
        if (io_len > len)
            memset(stage + len, 0, io_len - len);
    }
    return stage;
}

int vmio_read_end(struct vmio *io, struct vmio_req *r, uint64_t at, uint32_t len, const uint8_t *data)
{
    uint8_t *dst = (uint8_t *)r->buf + at;
    const uint32_t *want = r->crc + at / VMIO_BLOCK;
    uint32_t got[STAGE_GROUP / VMIO_BLOCK];
    for (size_t done = 0; done < len;) {
        size_t n = len - done < STAGE_GROUP ? len - done : STAGE_GROUP;
        size_t nb = (n + VMIO_BLOCK - 1) / VMIO_BLOCK;
        /* A staged read is copied as it is checked: on a mismatch the caller's bytes are
         * unspecified (io.h). */
        if (data == dst)
            vmio_crc32c_blocks(dst + done, n, got);
        else
            vmio_crc32c_copy_blocks(dst + done, data + done, n, got);
        if (memcmp(got, want + done / VMIO_BLOCK, nb * sizeof(uint32_t)) != 0) {
            atomic_fetch_add_explicit(&io->checksum_failures, 1, memory_order_relaxed);
            return VIDMM_E_IO;
        }
        done += n;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Fault injection.
 * ------------------------------------------------------------------------------------------- */

void vmio_test_inject(struct vmio *io, int op, unsigned count, int err, size_t short_len, bool corrupt)
{
    if (io == NULL || (op != VMIO_WRITE && op != VMIO_READ))
        return;
    if (short_len > 0)
        short_len = (short_len + io->align - 1) & ~(size_t)(io->align - 1);
    pthread_mutex_lock(&io->fault_lock);
    struct vmio_fault *f = &io->faults[op - 1];
    unsigned before = f->count != 0;
    f->count = count;
    f->err = err;
    f->short_len = short_len;
    f->corrupt = corrupt;
    unsigned now = count != 0;
    if (now != before) {
        if (now)
            atomic_fetch_add_explicit(&io->faults_armed, 1, memory_order_relaxed);
        else
            atomic_fetch_sub_explicit(&io->faults_armed, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&io->fault_lock);
}

int vmio_fault_apply(struct vmio *io, int op, int res, uint32_t want, uint8_t *data)
{
    /* Relaxed: a fault armed by another thread at this very moment may apply to this I/O or to
     * the next one; the lock below decides, so a count is never used twice. */
    if (VIDMM_LIKELY(atomic_load_explicit(&io->faults_armed, memory_order_relaxed) == 0))
        return res;
    struct vmio_fault f = { 0, 0, 0, false };
    pthread_mutex_lock(&io->fault_lock);
    struct vmio_fault *pf = &io->faults[op - 1];
    if (pf->count > 0) {
        f = *pf;
        if (--pf->count == 0)
            atomic_fetch_sub_explicit(&io->faults_armed, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&io->fault_lock);
    if (f.count == 0)
        return res;
    if (f.err != 0)
        return f.err;
    if (f.short_len > 0 && res > 0 && (uint64_t)res > f.short_len)
        return (int)f.short_len;
    /* The first byte of the transfer: always one of the request's (padding, if any, is at the
     * end), so the checksum must catch it. */
    if (f.corrupt && op == VMIO_READ && res > 0 && want > 0)
        data[0] ^= 0x5A;
    return res;
}

/* ---------------------------------------------------------------------------------------------
 * Blocking I/O (threads and sync backends).
 * ------------------------------------------------------------------------------------------- */

int vmio_blocking_io(struct vmio *io, int op, uint8_t *stage, uint32_t len, uint64_t off)
{
    uint32_t done = 0, retries = 0;
    while (done < len) {
        uint32_t want = len - done;
        ssize_t n = op == VMIO_WRITE ? pwrite(io->fd, stage + done, want, (off_t)(off + done))
                                     : pread(io->fd, stage + done, want, (off_t)(off + done));
        int res = n < 0 ? -errno : (int)n;
        res = vmio_fault_apply(io, op, res, want, stage + done);
        if (res < 0) {
            if ((res == -EINTR || res == -EAGAIN) && retries < VMIO_MAX_RETRIES) {
                retries++;
                atomic_fetch_add_explicit(&io->retries, 1, memory_order_relaxed);
                continue;
            }
            return vmio_errno_to_err(op, res);
        }
        if (res == 0)
            return VIDMM_E_IO; /* no progress: past the end of the file */
        if ((uint32_t)res < want)
            atomic_fetch_add_explicit(&io->short_transfers, 1, memory_order_relaxed);
        done += (uint32_t)res;
    }
    return 0;
}

int vmio_blocking_chunk(struct vmio *io, struct vmio_req *r, uint64_t at, uint32_t len, uint8_t *stage)
{
    const uint32_t io_len = vmio_io_len(io, len);
    vmio_io_started(io);
    uint8_t *data = vmio_io_begin(io, r, at, len, io_len, stage);
    int err = vmio_blocking_io(io, r->op, data, io_len, r->off + at);
    if (err == 0 && r->op == VMIO_READ)
        err = vmio_read_end(io, r, at, len, data);
    vmio_io_ended(io);
    return err;
}

/* ---------------------------------------------------------------------------------------------
 * Opening the file.
 * ------------------------------------------------------------------------------------------- */

/* probe_direct() turns O_DIRECT on for 'io->fd' and checks that an aligned write goes through:
 * some file systems accept the flag and then refuse the I/O with EINVAL (FUSE without
 * direct_io, tmpfs before Linux 6.6 refuses already at fcntl/open). Returns true when direct
 * I/O works; the file is left empty either way. */
static bool probe_direct(struct vmio *io, uint32_t mem_align, uint32_t off_align)
{
    int fl = fcntl(io->fd, F_GETFL);
    if (fl < 0 || fcntl(io->fd, F_SETFL, fl | O_DIRECT) != 0)
        return false;
    size_t n = off_align > mem_align ? off_align : mem_align;
    if (n < VMIO_FALLBACK_ALIGN)
        n = VMIO_FALLBACK_ALIGN;
    uint8_t *buf = vmio_map_stage(n);
    bool ok = false;
    if (buf != NULL) {
        ssize_t w = pwrite(io->fd, buf, n, 0);
        ok = w == (ssize_t)n;
        if (ok)
            ok = pread(io->fd, buf, n, 0) == (ssize_t)n;
        vmio_unmap_stage(buf, n);
    }
    if (!ok)
        (void)fcntl(io->fd, F_SETFL, fl);
    if (ftruncate(io->fd, 0) != 0)
        ok = false;
    return ok;
}

/* The swap file has no name while it is used: a process that dies (a crash, SIGKILL) leaves
 * nothing on disk, as the kernel frees an unlinked file with its last descriptor. O_TMPFILE
 * creates it nameless in the directory of 'path' (never a window with a name); where the file
 * system refuses O_TMPFILE (EOPNOTSUPP, EISDIR on old kernels), 'path' is created and unlinked
 * at once. A file that already exists at 'path' is the caller's: it is used (truncated) and
 * left in place. */
/* open_failed() says which swap file could not be had and why (the device's swap_path: the disk
 * tier is opened only by vidmm_device_create()), and returns the error for errno 'e'. */
static int open_failed(const char *path, const char *what, int e)
{
    vidmm_log(VIDMM_LOG_WARN, "vidmm_device_create: swap_path: '%s': %s: %s", path, what, strerror(e));
    return open_errno_to_err(e);
}

static int open_file(struct vmio *io, const char *path)
{
    io->fd = -1;
    if (access(path, F_OK) != 0 && errno == ENOENT) {
        char *dir = strdup(path);
        if (dir == NULL)
            return VIDMM_E_NO_MEMORY;
        char *slash = strrchr(dir, '/');
        const char *d = slash == NULL ? "." : slash == dir ? "/" : dir;
        if (slash != NULL && slash != dir)
            *slash = '\0';
        io->fd = open(d, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        int e = errno;
        if (io->fd < 0 && e != EOPNOTSUPP && e != EISDIR && e != EINVAL) {
            int err = open_failed(path, "no file there, and none can be made in its directory", e);
            free(dir);
            return err;
        }
        free(dir);
    }
    if (io->fd < 0) {
        io->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (io->fd >= 0)
            (void)unlink(path); /* nameless from now on */
        else if (errno == EEXIST)
            io->fd = open(path, O_RDWR | O_CLOEXEC);
    }
    if (io->fd < 0)
        return open_failed(path, "cannot be opened or created", errno);
    struct stat st;
    if (fstat(io->fd, &st) != 0)
        return open_failed(path, "fstat", errno);
    if (!S_ISREG(st.st_mode)) {
        vidmm_log(VIDMM_LOG_WARN, "vidmm_device_create: swap_path: '%s': not a regular file", path);
        return VIDMM_E_IO;
    }
    if (ftruncate(io->fd, 0) != 0)
        return open_failed(path, "cannot be truncated", errno);

    /* STATX_DIOALIGN (Linux 6.1): the memory and file-offset alignment direct I/O needs on this
     * file, or 0 when the file does not support direct I/O (statx(2)). */
    uint32_t mem_align = VMIO_FALLBACK_ALIGN, off_align = VMIO_FALLBACK_ALIGN;
    bool try_direct = true;
    struct statx stx;
    memset(&stx, 0, sizeof(stx));
    if (statx(io->fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 && (stx.stx_mask & STATX_DIOALIGN)) {
        io->dio_mem_align = stx.stx_dio_mem_align;
        io->dio_offset_align = stx.stx_dio_offset_align;
        if (stx.stx_dio_offset_align == 0 || stx.stx_dio_mem_align == 0) {
            try_direct = false;
        } else {
            mem_align = stx.stx_dio_mem_align;
            off_align = stx.stx_dio_offset_align;
        }
    }
    /* The staging slots are page-aligned and start every VMIO_BLOCK bytes: alignments beyond
     * that cannot be met, and the file is used buffered. */
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (mem_align > page || off_align > VMIO_BLOCK || (mem_align & (mem_align - 1)) || (off_align & (off_align - 1)))
        try_direct = false;
    io->direct = try_direct && probe_direct(io, mem_align, off_align);
    io->align = VMIO_FALLBACK_ALIGN;
    if (io->direct && off_align > io->align)
        io->align = off_align;
    io->mem_align = io->direct ? mem_align : 1;
    return 0;
}

/* backend_from_env() reads VIDMM_IO_BACKEND (tests and benchmarks force a backend with it). */
static int backend_from_env(void)
{
    const char *s = getenv("VIDMM_IO_BACKEND");
    if (s == NULL || *s == '\0' || strcasecmp(s, "auto") == 0)
        return VMIO_BACKEND_AUTO;
    if (strcasecmp(s, "uring") == 0 || strcasecmp(s, "io_uring") == 0)
        return VMIO_BACKEND_URING;
    if (strcasecmp(s, "threads") == 0)
        return VMIO_BACKEND_THREADS;
    if (strcasecmp(s, "sync") == 0)
        return VMIO_BACKEND_SYNC;
    vidmm_log(VIDMM_LOG_WARN, "VIDMM_IO_BACKEND=%s is not uring, threads, sync or auto: ignored", s);
    return VMIO_BACKEND_AUTO;
}

static const struct vmio_backend_ops *ops_of(int backend)
{
    switch (backend) {
    case VMIO_BACKEND_URING: return &vmio_uring_ops;
    case VMIO_BACKEND_THREADS: return &vmio_threads_ops;
    default: return &vmio_sync_ops;
    }
}

/* The geometry of the staging memory (io.h, struct vmio_config). */
static void size_staging(struct vmio *io, const struct vmio_config *cfg)
{
    io->depth = cfg->queue_depth ? cfg->queue_depth : 32;
    if (io->depth > VMIO_MAX_DEPTH)
        io->depth = VMIO_MAX_DEPTH;
    io->rings = cfg->rings ? cfg->rings : 1;
    if (io->rings > VMIO_MAX_RINGS)
        io->rings = VMIO_MAX_RINGS;
    uint64_t staging = (uint64_t)(cfg->staging_mib ? cfg->staging_mib : 32) * MiB;
    uint64_t slot = staging / ((uint64_t)io->rings * io->depth);
    slot &= ~(uint64_t)(VMIO_BLOCK - 1);
    if (slot < VMIO_MIN_SLOT)
        slot = VMIO_MIN_SLOT;
    if (slot > VMIO_MAX_SLOT)
        slot = VMIO_MAX_SLOT;
    io->slot_size = (uint32_t)slot;
}

static void destroy(struct vmio *io)
{
    vmr_destroy(&io->space); /* safe on the zeroed set of a failed open */
    if (io->fd >= 0)
        close(io->fd); /* a file this layer created has no name: closing frees it */
    pthread_mutex_destroy(&io->space_lock);
    pthread_mutex_destroy(&io->fault_lock);
    free(io->path);
    free(io);
}

int vmio_open(const struct vmio_config *cfg, struct vmio **out)
{
    if (cfg == NULL || out == NULL || cfg->path == NULL || cfg->path[0] == '\0' || cfg->max_size == 0 ||
        cfg->backend < VMIO_BACKEND_AUTO || cfg->backend > VMIO_BACKEND_SYNC)
        return VIDMM_E_INVALID_ARG;
    int backend = cfg->backend;
    if (backend == VMIO_BACKEND_AUTO)
        backend = backend_from_env();
    bool forced = backend != VMIO_BACKEND_AUTO;

    struct vmio *io = calloc(1, sizeof(*io));
    if (io == NULL)
        return VIDMM_E_NO_MEMORY;
    io->fd = -1;
    pthread_mutex_init(&io->space_lock, NULL);
    pthread_mutex_init(&io->fault_lock, NULL);
    io->path = strdup(cfg->path);
    if (io->path == NULL) {
        destroy(io);
        return VIDMM_E_NO_MEMORY;
    }
    int rc = open_file(io, cfg->path);
    if (rc != 0) {
        destroy(io);
        return rc;
    }
    io->size = cfg->max_size & ~(io->align - 1);
    if (io->size == 0) {
        destroy(io);
        return VIDMM_E_INVALID_ARG;
    }
    /* Sparse: the size costs nothing until written, and reads of never-written space return
     * zeros rather than a short read at the end of the file. */
    if (ftruncate(io->fd, (off_t)io->size) != 0) {
        vidmm_log(VIDMM_LOG_WARN, "vidmm_device_create: swap_path: '%s': cannot be made %llu bytes long: %s",
                  cfg->path, (unsigned long long)io->size, strerror(errno));
        destroy(io);
        return VIDMM_E_IO; /* EFBIG: larger than the file system allows */
    }
    if ((rc = vmr_init(&io->space, io->size)) != 0) {
        destroy(io);
        return rc;
    }
    size_staging(io, cfg);
    io->unstaged = cfg->unstaged;

    if (backend == VMIO_BACKEND_AUTO || backend == VMIO_BACKEND_URING) {
        io->backend = VMIO_BACKEND_URING;
        io->ops = &vmio_uring_ops;
        rc = io->ops->start(io);
        if (rc == VIDMM_E_UNSUPPORTED && !forced) {
            vidmm_log(VIDMM_LOG_INFO, "vmio: io_uring unavailable here; using the thread pool");
            backend = VMIO_BACKEND_THREADS;
        } else if (rc != 0) {
            destroy(io);
            return rc;
        }
    }
    if (backend == VMIO_BACKEND_THREADS || backend == VMIO_BACKEND_SYNC) {
        io->backend = backend;
        io->ops = ops_of(backend);
        io->fixed_buffers = io->fixed_file = false;
        io->setup_flags = 0;
        if ((rc = io->ops->start(io)) != 0) {
            destroy(io);
            return rc;
        }
    }
    vidmm_log(VIDMM_LOG_INFO, "vmio: %s, %s, backend %s, align %llu, %u x %u KiB staging slots", cfg->path,
              io->direct ? "O_DIRECT" : "buffered", vmio_backend_name(io->backend), (unsigned long long)io->align,
              io->rings * io->depth, io->slot_size / 1024u);
    *out = io;
    return 0;
}

void vmio_close(struct vmio *io)
{
    if (io == NULL)
        return;
    io->ops->stop(io);
    destroy(io);
}

/* ---------------------------------------------------------------------------------------------
 * Swap space.
 * ------------------------------------------------------------------------------------------- */

uint64_t vmio_align(const struct vmio *io)
{
    return io ? io->align : 0;
}

static bool round_len(const struct vmio *io, uint64_t *len)
{
    uint64_t l = *len;
    if (l == 0 || l > io->size)
        return false;
    *len = (l + io->align - 1) & ~(io->align - 1);
    return true;
}

int vmio_space_alloc(struct vmio *io, uint64_t len, uint64_t *off)
{
    if (io == NULL || off == NULL || len == 0)
        return VIDMM_E_INVALID_ARG;
    if (!round_len(io, &len))
        return VIDMM_E_NO_MEMORY;
    uint64_t at;
    int rc = VIDMM_E_NO_MEMORY;
    pthread_mutex_lock(&io->space_lock);
    if (vmr_find(&io->space, 0, io->size, len, io->align, false, &at))
        rc = vmr_take(&io->space, at, len);
    pthread_mutex_unlock(&io->space_lock);
    if (rc == 0)
        *off = at;
    return rc;
}

void vmio_space_free(struct vmio *io, uint64_t off, uint64_t len)
{
    if (io == NULL || len == 0 || !round_len(io, &len) || (off & (io->align - 1)) != 0 || off > io->size ||
        len > io->size - off)
        return;
    pthread_mutex_lock(&io->space_lock);
    bool already = vmr_is_free(&io->space, off, len);
    pthread_mutex_unlock(&io->space_lock);
    if (already) {
        vidmm_log(VIDMM_LOG_WARN, "vmio_space_free: [%llu, +%llu) is already free", (unsigned long long)off,
                  (unsigned long long)len);
        return;
    }
    /* Punch first, give back second: once given back, the range may be allocated and written
     * by another thread at once, and a late punch would destroy that data. */
    if (!atomic_load_explicit(&io->no_punch, memory_order_relaxed) &&
        fallocate(io->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) != 0) {
        if (errno == EOPNOTSUPP || errno == ENOSYS) {
            atomic_store_explicit(&io->no_punch, true, memory_order_relaxed);
            vidmm_log(VIDMM_LOG_INFO, "vmio: the file system cannot punch holes; freed swap space keeps its blocks");
        } else {
            vidmm_log(VIDMM_LOG_WARN, "vmio: punching [%llu, +%llu) failed: %s", (unsigned long long)off,
                      (unsigned long long)len, strerror(errno));
        }
    }
    pthread_mutex_lock(&io->space_lock);
    int rc = vmr_give(&io->space, off, len);
    pthread_mutex_unlock(&io->space_lock);
    if (rc != 0)
        vidmm_log(VIDMM_LOG_WARN, "vmio_space_free: [%llu, +%llu) was not allocated (%s)", (unsigned long long)off,
                  (unsigned long long)len, vidmm_strerror(rc));
}

/* ---------------------------------------------------------------------------------------------
 * Requests.
 * ------------------------------------------------------------------------------------------- */

static bool req_ok(const struct vmio *io, const struct vmio_req *r)
{
    if (r == NULL || (r->op != VMIO_WRITE && r->op != VMIO_READ) || r->buf == NULL || r->crc == NULL ||
        r->done == NULL)
        return false;
    if (r->len == 0 || (r->len & 4095u) != 0 || (r->off & (io->align - 1)) != 0)
        return false;
    if (r->off > io->size || r->len > io->size - r->off)
        return false;
    return vidmm_range_ok(r->buf, (size_t)r->len);
}

int vmio_submit(struct vmio *io, struct vmio_req *const *reqs, unsigned n)
{
    if (io == NULL || (n > 0 && reqs == NULL))
        return VIDMM_E_INVALID_ARG;
    for (unsigned i = 0; i < n; i++)
        if (!req_ok(io, reqs[i]))
            return VIDMM_E_INVALID_ARG;
    if (n == 0)
        return 0;
    for (unsigned i = 0; i < n; i++)
        memset(reqs[i]->priv, 0, sizeof(reqs[i]->priv));
    uint64_t now = atomic_fetch_add_explicit(&io->in_flight, n, memory_order_relaxed) + n;
    stat_max(&io->max_in_flight, now);
    io->ops->submit(io, reqs, n);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Queries.
 * ------------------------------------------------------------------------------------------- */

int vmio_backend(const struct vmio *io)
{
    return io ? io->backend : VMIO_BACKEND_AUTO;
}

bool vmio_direct(const struct vmio *io)
{
    return io ? io->direct : false;
}

void vmio_get_info(const struct vmio *io, struct vmio_info *out)
{
    if (io == NULL || out == NULL)
        return;
    memset(out, 0, sizeof(*out));
    out->backend = io->backend;
    out->direct = io->direct;
    out->fixed_buffers = io->fixed_buffers;
    out->fixed_file = io->fixed_file;
    out->setup_flags = io->setup_flags;
    out->rings = io->backend == VMIO_BACKEND_URING ? io->rings : 1;
    out->threads = io->threads;
    out->queue_depth = io->backend == VMIO_BACKEND_THREADS ? io->threads
                       : io->backend == VMIO_BACKEND_SYNC  ? 1
                                                           : io->depth;
    out->slot_size = io->slot_size;
    out->staging_bytes = io->staging_bytes;
    out->align = io->align;
    out->dio_mem_align = io->dio_mem_align;
    out->dio_offset_align = io->dio_offset_align;
}

#define LOAD(x) atomic_load_explicit(&io->x, memory_order_relaxed)

void vmio_get_stats(struct vmio *io, struct vmio_stats *out)
{
    if (io == NULL || out == NULL)
        return;
    memset(out, 0, sizeof(*out));
    out->bytes_written = LOAD(bytes_written);
    out->bytes_read = LOAD(bytes_read);
    out->writes = LOAD(writes);
    out->reads = LOAD(reads);
    out->in_flight = LOAD(in_flight);
    out->max_in_flight = LOAD(max_in_flight);
    out->short_transfers = LOAD(short_transfers);
    out->retries = LOAD(retries);
    out->checksum_failures = LOAD(checksum_failures);
    out->errors = LOAD(errors);
    out->ios = LOAD(ios);
    out->ios_in_flight = LOAD(ios_in_flight);
    out->max_ios_in_flight = LOAD(max_ios_in_flight);
    out->unstaged_ios = LOAD(unstaged_ios);
    pthread_mutex_lock(&io->space_lock);
    out->space_size = io->size;
    out->space_used = io->size - io->space.free_bytes;
    pthread_mutex_unlock(&io->space_lock);
}
