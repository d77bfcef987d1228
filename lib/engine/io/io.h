/* SPDX-License-Identifier: MIT */
/* lib/engine/io/io.h - the disk tier's I/O layer: one swap file, its free space, and
 * asynchronous reads and writes of whole extents through io_uring, or a pread/pwrite thread
 * pool where io_uring cannot be used, or synchronously. The engine (lib/engine/) decides what
 * goes to disk and when; this layer only moves bytes and proves they came back intact: every
 * VMIO_BLOCK of a write gets a CRC32C, kept by the caller and checked on the read.
 *
 * Threads: every function may be called from any thread. Completion callbacks run on the
 * layer's own threads (never inside vmio_submit()), one at a time per ring/worker; they must not
 * call vmio_close(). */
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
    const char *path;           /* the swap file: created if missing, truncated to 0 on open,
                                   removed by vmio_close() if this layer created it */
    uint64_t max_size;          /* bytes of swap space (rounded down to the alignment) */
    uint32_t queue_depth;       /* requests in flight per ring / worker pool; 0: 32 */
    uint32_t rings;             /* io_uring rings (one per paging thread) or pool threads; 0: 1 */
    uint32_t staging_mib;       /* registered staging memory; 0: 32 MiB */
    int backend;                /* enum vmio_backend */
};

struct vmio;

/* vmio_open() opens the file (O_DIRECT with the alignment statx reports, else buffered), sets
 * up the backend (io_uring with the best setup flags the kernel takes, dropping them one by one;
 * a registered file and staging buffers; falling back to the thread pool on EPERM/ENOSYS/
 * EINVAL from io_uring_setup; resource errors stay errors). Returns 0, VIDMM_E_INVALID_ARG,
 * VIDMM_E_IO (the file cannot be opened or sized), VIDMM_E_NO_MEMORY, VIDMM_E_UNSUPPORTED
 * (the backend asked for cannot run here). */
int vmio_open(const struct vmio_config *cfg, struct vmio **out);

/* vmio_close() cancels what is queued and not started, waits for every request in flight to
 * complete (callbacks run, with VIDMM_E_IO for cancelled ones), frees everything. NULL ignored. */
void vmio_close(struct vmio *io);

/* Swap space: extents are multiples of the file's alignment (vmio_align()). vmio_space_alloc()
 * takes the lowest free extent of 'len' bytes; vmio_space_free() gives it back (its blocks
 * punched out of the file where the file system allows). Returns 0, VIDMM_E_NO_MEMORY (no
 * room: the swap file is full), VIDMM_E_INVALID_ARG. */
int vmio_space_alloc(struct vmio *io, uint64_t len, uint64_t *off);
void vmio_space_free(struct vmio *io, uint64_t off, uint64_t len);
uint64_t vmio_align(const struct vmio *io);

enum vmio_op { VMIO_WRITE = 1, VMIO_READ = 2 };

/* One extent to move. The caller owns it until its callback has run; buf must stay valid until
 * then and is never touched by the layer after the callback. */
struct vmio_req {
    int op;                     /* enum vmio_op */
    void *buf;                  /* any alignment: the layer stages through its registered buffers */
    uint64_t len;               /* bytes, a multiple of 4096 */
    uint64_t off;               /* file offset from vmio_space_alloc() */
    uint32_t *crc;              /* ceil(len / VMIO_BLOCK) CRC32Cs: filled by a write, checked by
                                   a read (a mismatch fails the read with VIDMM_E_IO; the
                                   buffer's content is then unspecified) */
    void (*done)(void *arg, struct vmio_req *req, int err); /* 0 or VIDMM_E_IO / VIDMM_E_NO_MEMORY
                                   (ENOSPC on write) */
    void *arg;
    /* private to the layer */
    uint64_t priv[8];
};

/* vmio_submit() queues 'n' requests (batched into as few system calls as the backend allows)
 * and returns; each completes through its callback once every byte has moved (short transfers
 * resubmitted for the rest, EAGAIN/EINTR retried). Returns 0, or VIDMM_E_INVALID_ARG (a bad
 * request: nothing queued). */
int vmio_submit(struct vmio *io, struct vmio_req *const *reqs, unsigned n);

/* vmio_backend() says which backend runs (enum vmio_backend, never AUTO); vmio_direct() whether
 * the file is open with O_DIRECT. */
int vmio_backend(const struct vmio *io);
bool vmio_direct(const struct vmio *io);

struct vmio_stats {
    uint64_t bytes_written, bytes_read;
    uint64_t writes, reads;     /* requests completed */
    uint64_t in_flight;         /* requests queued or running now */
    uint64_t max_in_flight;
    uint64_t short_transfers, retries, checksum_failures, errors;
    uint64_t space_used, space_size;
};
void vmio_get_stats(struct vmio *io, struct vmio_stats *out);

/* CRC32C (Castagnoli) of 'n' bytes, continuing from 'crc' (start with 0): the SSE4.2
 * instruction where the CPU has it, a table otherwise. */
uint32_t vmio_crc32c(uint32_t crc, const void *p, size_t n);

/* Fault injection for the tests (internal like everything here: not exported from the shared
 * library; the suites link the static one): the next 'count' operations of kind
 * 'op' (VMIO_WRITE / VMIO_READ) fail with 'err' (-EIO, -ENOSPC), are cut short after 'short_len'
 * bytes (err 0, short_len > 0), or have their data corrupted after a successful read (err 0,
 * short_len 0, corrupt true). */
void vmio_test_inject(struct vmio *io, int op, unsigned count, int err, size_t short_len, bool corrupt);

#endif /* VIDMM_LIB_ENGINE_IO_H */
