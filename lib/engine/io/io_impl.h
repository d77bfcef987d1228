/* SPDX-License-Identifier: MIT */
/* lib/engine/io/io_impl.h - what the files of the I/O layer share: the layer's state, the
 * private part of a request, the staging copy with its checksums, the blocking I/O loop of
 * the thread and sync backends, and fault injection. Not for use outside lib/engine/io/. */
#ifndef VIDMM_LIB_ENGINE_IO_IMPL_H
#define VIDMM_LIB_ENGINE_IO_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include "common/internal.h"
#include "engine/io/io.h"
#include "engine/rangeset.h"

/* Limits on the configuration (io.h says them too). 1024 I/Os per ring keeps the SQ of a ring
 * at 2048 entries at most, well inside the kernel's 32768 (IORING_MAX_ENTRIES). */
#define VMIO_MAX_DEPTH 1024u
#define VMIO_MAX_RINGS 64u
#define VMIO_MAX_WORKERS 256u
#define VMIO_MIN_SLOT VMIO_BLOCK
#define VMIO_MAX_SLOT (4u << 20)
/* A request that keeps getting EAGAIN or EINTR is failed after this many retries of one I/O
 * rather than spinning for ever (a real EAGAIN from a regular file is rare: io_uring already
 * retries it from its worker threads). */
#define VMIO_MAX_RETRIES 100u

/* The layer-private part of a request, overlaid on vmio_req.priv. */
struct vmio_rq {
    struct vmio_req *next;      /* queue link */
    uint64_t issued;            /* bytes handed to I/Os so far */
    uint32_t outstanding;       /* I/Os running */
    int32_t err;                /* the first error of its I/Os */
};
_Static_assert(sizeof(struct vmio_rq) <= sizeof(((struct vmio_req *)0)->priv), "vmio_rq fits in priv");

static inline struct vmio_rq *vmio_rq_of(struct vmio_req *r)
{
    return (struct vmio_rq *)(void *)r->priv;
}

/* A FIFO of requests linked through vmio_rq.next. */
struct vmio_list {
    struct vmio_req *head, *tail;
};

static inline void vmio_list_push(struct vmio_list *l, struct vmio_req *r)
{
    vmio_rq_of(r)->next = NULL;
    if (l->tail)
        vmio_rq_of(l->tail)->next = r;
    else
        l->head = r;
    l->tail = r;
}

static inline struct vmio_req *vmio_list_pop(struct vmio_list *l)
{
    struct vmio_req *r = l->head;
    if (r) {
        l->head = vmio_rq_of(r)->next;
        if (l->head == NULL)
            l->tail = NULL;
    }
    return r;
}

/* Appends all of 'from' to 'to' and empties 'from'. */
static inline void vmio_list_splice(struct vmio_list *to, struct vmio_list *from)
{
    if (from->head == NULL)
        return;
    if (to->tail)
        vmio_rq_of(to->tail)->next = from->head;
    else
        to->head = from->head;
    to->tail = from->tail;
    from->head = from->tail = NULL;
}

/* One pending fault of vmio_test_inject(). */
struct vmio_fault {
    unsigned count;
    int err;
    size_t short_len;
    bool corrupt;
};

struct vmio_backend_ops {
    /* Starts the backend. Returns 0, VIDMM_E_UNSUPPORTED (this backend can't run here: the
     * caller may fall back), VIDMM_E_NO_MEMORY. */
    int (*start)(struct vmio *io);
    /* Queues validated requests (their private parts initialised). Can't fail. */
    void (*submit)(struct vmio *io, struct vmio_req *const *reqs, unsigned n);
    /* Cancels, drains, joins and frees what start() made. */
    void (*stop)(struct vmio *io);
};

extern const struct vmio_backend_ops vmio_uring_ops, vmio_threads_ops, vmio_sync_ops;

struct vmio {
    int fd;
    bool direct;
    char *path;
    uint64_t align;             /* extent and I/O granule */
    uint64_t mem_align;         /* the memory alignment an I/O straight from or into the caller's
                                   buffer needs: the direct-I/O one, 1 when buffered */
    bool unstaged;              /* vmio_config.unstaged */
    uint64_t size;              /* bytes of swap space */
    uint32_t dio_mem_align, dio_offset_align;

    int backend;                /* enum vmio_backend that runs */
    const struct vmio_backend_ops *ops;
    void *be;                   /* the backend's state */
    uint32_t depth, rings;
    uint32_t slot_size;         /* bytes per staging slot, a multiple of VMIO_BLOCK */
    /* Filled by the backend's start() for vmio_get_info(). */
    uint32_t threads;
    uint64_t staging_bytes;
    uint32_t setup_flags;
    bool fixed_buffers, fixed_file;

    /* Swap space. */
    pthread_mutex_t space_lock;
    struct vmr_set space;
    atomic_bool no_punch;       /* the file system refused FALLOC_FL_PUNCH_HOLE once */

    /* Statistics: relaxed atomics, each counter on its own (no snapshot consistency). */
    atomic_uint_fast64_t bytes_written, bytes_read, writes, reads, in_flight, max_in_flight;
    atomic_uint_fast64_t short_transfers, retries, checksum_failures, errors;
    atomic_uint_fast64_t ios, ios_in_flight, max_ios_in_flight, unstaged_ios;

    /* Fault injection: 'faults_armed' lets the I/O paths skip the lock when nothing is armed. */
    pthread_mutex_t fault_lock;
    struct vmio_fault faults[2]; /* [op - 1] */
    atomic_uint faults_armed;
};

/* io.c */

/* vmio_errno_to_err() maps a negative errno of operation 'op' to the layer's code (io.h, done). */
int vmio_errno_to_err(int op, int neg_errno);

/* An I/O moves its bytes one of two ways. Staged: through a slot of the layer's, copied and
 * checksummed in one pass. Unstaged (only with vmio_config.unstaged), straight between the
 * caller's buffer and the file, when the buffer is aligned as the file needs (io->mem_align) and
 * the I/O needs no padding: a write's CRCs are computed over the buffer before the I/O, a read's
 * checked in the buffer after it - one pass over the bytes, no copy. An unstaged write of a
 * buffer that its owner changes meanwhile may leave the disk and the CRCs disagreeing (io.h,
 * vmio_req.buf): the read fails then, it never returns corrupt bytes. */
static inline bool vmio_unstaged(const struct vmio *io, const struct vmio_req *r, uint64_t at, uint32_t len)
{
    return io->unstaged && (((uintptr_t)r->buf + at) & (io->mem_align - 1)) == 0 && (len & (io->align - 1)) == 0;
}

/* vmio_io_begin() prepares the I/O of request bytes [at, at + len) ('at' a multiple of
 * VMIO_BLOCK; 'io_len' its aligned length) and returns the address it moves its data at: the
 * caller's buffer when vmio_unstaged(), else 'stage' (which must then not be NULL). A write's
 * CRC32Cs go into r->crc (and a staged write is copied into 'stage', zero-padded to 'io_len'). */
uint8_t *vmio_io_begin(struct vmio *io, struct vmio_req *r, uint64_t at, uint32_t len, uint32_t io_len,
                       uint8_t *stage);

/* vmio_read_end() checks the CRC32C of every VMIO_BLOCK of a completed read of request bytes
 * [at, at + len) that moved its data at 'data' (what vmio_io_begin() returned), copying them
 * into the caller's buffer if they were staged. Returns 0, or VIDMM_E_IO on a mismatch
 * (counted; the buffer's part is then unspecified). */
int vmio_read_end(struct vmio *io, struct vmio_req *r, uint64_t at, uint32_t len, const uint8_t *data);

/* vmio_fault_apply() lets a pending injected fault change the result 'res' (bytes, or a
 * negative errno) of an I/O of 'op' that asked for 'want' bytes into/from 'data'. Returns the
 * result to act on. */
int vmio_fault_apply(struct vmio *io, int op, int res, uint32_t want, uint8_t *data);

/* vmio_blocking_io() moves 'len' bytes between 'stage' and the file at 'off' with pread or
 * pwrite, resuming short transfers and retrying EINTR/EAGAIN. Returns 0 or the layer's code. */
int vmio_blocking_io(struct vmio *io, int op, uint8_t *stage, uint32_t len, uint64_t off);

/* vmio_blocking_chunk() is one whole I/O of the thread and sync backends: request bytes
 * [at, at + len) moved with vmio_blocking_io() through 'stage' or the caller's buffer
 * (vmio_io_begin()), a read checked (vmio_read_end()), counted as an I/O in flight meanwhile.
 * Returns 0 or the layer's code. */
int vmio_blocking_chunk(struct vmio *io, struct vmio_req *r, uint64_t at, uint32_t len, uint8_t *stage);

/* vmio_io_len() is the length of the I/O that moves 'len' request bytes: rounded up to the
 * alignment, as O_DIRECT needs (the extent has the room: vmio_space_alloc() rounds up too). */
static inline uint32_t vmio_io_len(const struct vmio *io, uint32_t len)
{
    return (uint32_t)((len + io->align - 1) & ~(io->align - 1));
}

/* vmio_chunk() is the length of the I/O starting at request byte 'at': one slot at most. */
static inline uint32_t vmio_chunk(const struct vmio *io, const struct vmio_req *r, uint64_t at)
{
    uint64_t left = r->len - at;
    return left < io->slot_size ? (uint32_t)left : io->slot_size;
}

/* vmio_io_started() / vmio_io_ended() count I/Os in flight (statistics). */
void vmio_io_started(struct vmio *io);
void vmio_io_ended(struct vmio *io);

/* vmio_finish() counts request 'r' as complete with 'err' and runs its callback. 'r' belongs to
 * its owner again afterwards. */
void vmio_finish(struct vmio *io, struct vmio_req *r, int err);

/* vmio_map_stage() maps 'bytes' of page-aligned staging memory (NULL on failure);
 * vmio_unmap_stage() gives it back. */
uint8_t *vmio_map_stage(size_t bytes);
void vmio_unmap_stage(uint8_t *p, size_t bytes);

/* crc.c: the CRC32C of every VMIO_BLOCK of [p, p + len) ('len' a multiple of 8 except for the
 * last block), into out[0..]. Several blocks are checksummed at once where the CPU allows. */
void vmio_crc32c_blocks(const uint8_t *p, size_t len, uint32_t *out);
/* The same over 'src' while copying it to 'dst', in one pass. */
void vmio_crc32c_copy_blocks(uint8_t *dst, const uint8_t *src, size_t len, uint32_t *out);

#endif /* VIDMM_LIB_ENGINE_IO_IMPL_H */
