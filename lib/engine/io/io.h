/* SPDX-License-Identifier: MIT */
/* lib/engine/io/io.h - the disk tier's I/O layer: one swap file, its free space, and
 * asynchronous reads and writes of whole extents through io_uring, or a pread/pwrite thread
 * pool where io_uring cannot be used, or synchronously. The engine (lib/engine/) decides what
 * goes to disk and when; this layer only moves bytes and proves they came back intact: every
 * VMIO_BLOCK of a write gets a CRC32C, kept by the caller and checked on the read.
 *
 * Data path: every I/O is staged through the layer's own page-aligned slots (the registered
 * buffers of io_uring) - copied and checksummed in one pass, so the caller's buffer may have
 * any alignment, and the file can be opened with O_DIRECT. With vmio_config.unstaged, an I/O
 * whose buffer is aligned as the file needs (the page, or what statx says, with O_DIRECT;
 * anything when buffered) moves straight between that buffer and the file instead: the CRCs of
 * a write computed over the buffer before the I/O, those of a read checked in it afterwards, no
 * copy. A request longer than a slot is split into several I/Os of one slot's size each.
 *
 * Threads: every function may be called from any thread. Completion callbacks run on the
 * layer's own threads (never inside vmio_submit(), except with VMIO_BACKEND_SYNC), one at a
 * time per ring/worker; they may call vmio_submit() and vmio_space_*(), should return quickly
 * (a callback holds up the completions of its ring behind it) and must not call vmio_close().
 * vmio_close() must not run concurrently with any other call on the same 'io'. */
#ifndef VIDMM_LIB_ENGINE_IO_H
#define VIDMM_LIB_ENGINE_IO_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "vidmm/common.h"

/* Checksum granule: one CRC32C per this many bytes of an extent (the last may be shorter). */
#define VMIO_BLOCK (64u << 10)

enum vmio_backend {
    VMIO_BACKEND_AUTO = 0,      /* io_uring, else threads (VIDMM_IO_BACKEND overrides) */
    VMIO_BACKEND_URING = 1,
    VMIO_BACKEND_THREADS = 2,
    VMIO_BACKEND_SYNC = 3       /* in the caller's thread, inside vmio_submit() - callbacks too */
};

struct vmio_config {
    const char *path;           /* the swap file: created if missing - nameless (O_TMPFILE in
                                   its directory, or created and unlinked at once), so nothing
                                   stays on disk even if the process dies; an existing file is
                                   used, truncated to 0, and left in place */
    uint64_t max_size;          /* bytes of swap space (rounded down to the alignment) */
    uint32_t queue_depth;       /* I/Os in flight per ring (io_uring), or pool threads per ring
                                   (threads backend: 'rings' x 'queue_depth' workers, each with
                                   one blocking pread/pwrite); 0: 32; at most 1024 */
    uint32_t rings;             /* io_uring rings, each with its own thread; 0: 1; at most 64 */
    uint32_t staging_mib;       /* staging memory for all rings together, in MiB; 0: 32. It is
                                   cut into rings x queue_depth slots, each a multiple of
                                   VMIO_BLOCK between 64 KiB and 4 MiB (so the memory used may
                                   be less, or - with a small value and a deep queue - more) */
    int backend;                /* enum vmio_backend */
    bool unstaged;              /* move aligned buffers straight to and from the file, without
                                   the staging copy (the data path above). Measured here: faster
                                   for private anonymous memory; for shared memory (memfd,
                                   shmem) - the engine's backing stores - a read into it took
                                   twice as long as one through the registered slots, copy
                                   included, so the engine leaves this off */
};

struct vmio;

/* vmio_open() opens the file (O_DIRECT with the alignment statx reports, else buffered), sets
 * up the backend (io_uring with the best setup flags the kernel takes, dropping them one by one;
 * a registered file and staging buffers; falling back to the thread pool on EPERM/ENOSYS/
 * EINVAL from io_uring_setup; resource errors stay errors). With cfg->backend AUTO, the
 * environment variable VIDMM_IO_BACKEND=uring|threads|sync forces a backend as if it had been
 * asked for. Returns 0, VIDMM_E_INVALID_ARG, VIDMM_E_IO (the file cannot be opened or sized),
 * VIDMM_E_NO_MEMORY (memory, file descriptors or io_uring resources: ENOMEM, EMFILE, ENFILE),
 * VIDMM_E_UNSUPPORTED (the backend asked for cannot run here). '*out' is untouched on failure
 * and a file this call created is removed again. */
int vmio_open(const struct vmio_config *cfg, struct vmio **out);

/* vmio_close() cancels what is queued and not started, waits for every request in flight to
 * complete (callbacks run, with VIDMM_E_IO for cancelled ones), frees everything. NULL ignored. */
void vmio_close(struct vmio *io);

/* Swap space: extents are multiples of the file's alignment (vmio_align()). vmio_space_alloc()
 * takes the lowest free extent of 'len' bytes (rounded up to the alignment); vmio_space_free()
 * gives it back (same 'off' and 'len'; its blocks punched out of the file first, where the file
 * system allows, so freed swap space costs no disk). Freeing an extent with I/O in flight on it
 * is the caller's bug. Returns 0, VIDMM_E_NO_MEMORY (no room: the swap file is full),
 * VIDMM_E_INVALID_ARG. */
int vmio_space_alloc(struct vmio *io, uint64_t len, uint64_t *off);
void vmio_space_free(struct vmio *io, uint64_t off, uint64_t len);
uint64_t vmio_align(const struct vmio *io);

enum vmio_op { VMIO_WRITE = 1, VMIO_READ = 2 };

/* One extent to move. The caller owns it until its callback has run; buf must stay valid until
 * then and is never touched by the layer after the callback. */
struct vmio_req {
    int op;                     /* enum vmio_op */
    void *buf;                  /* any alignment. Unstaged (vmio_config.unstaged), a buffer
                                   changed while its write runs may leave the disk copy and the
                                   CRCs disagreeing - its read then fails with VIDMM_E_IO; it
                                   never returns corrupt bytes. A failed read leaves the buffer's
                                   content unspecified */
    uint64_t len;               /* bytes, a multiple of 4096 */
    uint64_t off;               /* file offset from vmio_space_alloc() (a multiple of
                                   vmio_align(); off + len inside the swap space) */
    uint32_t *crc;              /* ceil(len / VMIO_BLOCK) CRC32Cs: filled by a write, checked by
                                   a read (a mismatch fails the read with VIDMM_E_IO; the
                                   buffer's content is then unspecified). A read may cover part
                                   of a written extent if it starts on a VMIO_BLOCK boundary of
                                   it (pass crc + that block's index) */
    void (*done)(void *arg, struct vmio_req *req, int err); /* 0 or VIDMM_E_IO / VIDMM_E_NO_MEMORY
                                   (ENOSPC or EDQUOT on write: the file system is full, as when
                                   vmio_space_alloc() finds no room; ENOMEM either way, or no
                                   staging memory: nothing said about the data; anything else the kernel
                                   reports, a short read at end of file, a cancelled request and
                                   a checksum mismatch are VIDMM_E_IO). A failed write leaves
                                   'buf' as it was; the extent's content on disk is then
                                   unspecified */
    void *arg;
    /* private to the layer */
    uint64_t priv[8];
};

/* vmio_submit() queues 'n' requests (batched into as few system calls as the backend allows)
 * and returns; each completes through its callback once every byte has moved (short transfers
 * resubmitted for the rest, EAGAIN/EINTR retried). There is no ordering between requests: two
 * in flight must not overlap if either writes. Returns 0, or VIDMM_E_INVALID_ARG (a bad
 * request: nothing queued). */
int vmio_submit(struct vmio *io, struct vmio_req *const *reqs, unsigned n);

/* vmio_backend() says which backend runs (enum vmio_backend, never AUTO); vmio_direct() whether
 * the file is open with O_DIRECT. */
int vmio_backend(const struct vmio *io);
bool vmio_direct(const struct vmio *io);

/* vmio_backend_name() names a backend: "auto", "uring", "threads", "sync" ("?" otherwise). */
const char *vmio_backend_name(int backend);

/* What vmio_open() obtained, for logs, benchmarks and tests. */
struct vmio_info {
    int backend;                /* enum vmio_backend */
    bool direct;                /* O_DIRECT */
    bool fixed_buffers;         /* io_uring: staging registered (read_fixed/write_fixed) */
    bool fixed_file;            /* io_uring: the file registered (IOSQE_FIXED_FILE) */
    uint32_t setup_flags;       /* io_uring: IORING_SETUP_* the kernel took (ring 0) */
    uint32_t rings;             /* rings (io_uring), 1 otherwise */
    uint32_t threads;           /* threads the layer runs (ring threads or pool workers) */
    uint32_t queue_depth;       /* I/Os in flight at most, per ring (threads: per pool) */
    uint32_t slot_size;         /* bytes per staging slot: the largest single I/O, staged or not */
    uint64_t staging_bytes;     /* staging memory in all */
    uint64_t align;             /* vmio_align() */
    uint32_t dio_mem_align, dio_offset_align; /* what statx (STATX_DIOALIGN) said; 0: not known */
};
void vmio_get_info(const struct vmio *io, struct vmio_info *out);

struct vmio_stats {
    uint64_t bytes_written, bytes_read;
    uint64_t writes, reads;     /* requests completed */
    uint64_t in_flight;         /* requests queued or running now */
    uint64_t max_in_flight;
    uint64_t short_transfers, retries, checksum_failures, errors;
    uint64_t space_used, space_size;
    uint64_t ios;               /* I/Os (system-call-level reads and writes) started */
    uint64_t ios_in_flight;     /* I/Os running now (the queue depth reached) */
    uint64_t max_ios_in_flight;
    uint64_t unstaged_ios;      /* I/Os that moved straight from or into the caller's buffer */
};
void vmio_get_stats(struct vmio *io, struct vmio_stats *out);

/* CRC32C (Castagnoli) of 'n' bytes, continuing from 'crc' (start with 0): the SSE4.2
 * instruction where the CPU has it, a table otherwise. vmio_crc32c_table() is always the
 * table (the tests compare the two); vmio_crc32c_impl() names the one vmio_crc32c() uses
 * ("sse4.2" or "table"). */
uint32_t vmio_crc32c(uint32_t crc, const void *p, size_t n);
uint32_t vmio_crc32c_table(uint32_t crc, const void *p, size_t n);
const char *vmio_crc32c_impl(void);

/* Fault injection for the tests (internal like everything here: not exported from the shared
 * library; the suites link the static one): the next 'count' operations of kind
 * 'op' (VMIO_WRITE / VMIO_READ) fail with 'err' (-EIO, -ENOSPC), are cut short after 'short_len'
 * bytes (err 0, short_len > 0), or have their data corrupted after a successful read (err 0,
 * short_len 0, corrupt true). An operation is one system-call-level I/O (one SQE, one pread or
 * pwrite), so a request larger than a staging slot is several; a retried or resubmitted one
 * counts again. 'err' may be any negative errno: -EAGAIN and -EINTR are retried like real ones.
 * 'short_len' is rounded up to vmio_align() (an O_DIRECT file cannot resume elsewhere). A new
 * call replaces what is left of the previous one for that 'op'; count 0 clears it. */
void vmio_test_inject(struct vmio *io, int op, unsigned count, int err, size_t short_len, bool corrupt);

/* For the tests too: from now on, in this process, io_uring setup treats the IORING_SETUP_*
 * flags in 'mask' as refused by the kernel (as an older kernel refuses flags it does not know,
 * with EINVAL), so that dropping them can be tested on a kernel that takes them all. 0 clears.
 * Process-wide; call it before vmio_open(). */
void vmio_test_refuse_setup_flags(uint32_t mask);

#endif /* VIDMM_LIB_ENGINE_IO_H */
