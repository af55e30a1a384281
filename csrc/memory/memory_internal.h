/* csrc/memory/'s private header: what only memory/'s files share, the pools' engine first.
 * Each file of memory/ includes it (it includes memory.h); no file of another folder does.
 */
#ifndef GPUHOST_MEMORY_INTERNAL_H
#define GPUHOST_MEMORY_INTERNAL_H

#include "memory.h"

/* ---- the pools (pool.c, pool_engine.c, pool_obtain.c) ---- */
/* The pools' engine, in three files: pool_engine.c (size
 * classes, blocks and lanes, giving memory back, taking it, making pools), pool_obtain.c
 * (new memory from the driver or a Python allocator, and the out-of-memory policy) and
 * pool.c (the Pool type).  The structs, and the functions one of them calls in another;
 * other folders use memory.h.  How the pools work:
 *
 * Every device array's memory comes from its context's default Pool, in the mode that
 * GPUHOST_ALLOCATOR names:
 *   cache   (the default) gpuhost's own caching pool.  Sizes are rounded up to a class (512
 *           bytes, then 8 classes per doubling: at most 12.5% above the request); a freed
 *           block waits in its stream's free list and is handed out again without a
 *           driver call; new blocks come from cuMemAlloc.
 *   driver  the driver's stream-ordered pool: cuMemAllocAsync / cuMemFreeAsync on the
 *           array's stream, from the device's default memory pool with its release
 *           threshold raised (so freed memory stays in the pool instead of going back).
 *   plain   cuMemAlloc and cuMemFree for every array, as numba does.
 *
 * Why cache is the default (for the lead to confirm on the H100 with benchmarks/pools.py):
 * a hit costs no driver call, some 0.1-0.2 us of C for allocate + free, where the driver's
 * pool costs 0.7-1.2 us per cuMemAllocAsync + cuMemFreeAsync in C alone (measured by
 * benchmarks/raw/driver_bench.c), before any Python; the goal, 0.8 x CuPy's 1.25 us, leaves
 * room for the first, not the second.
 * Every cached block is also a cuMemAlloc allocation of its own, so IPC handles
 * (cuIpcGetMemHandle) keep working on pooled arrays, which the driver's default pool does
 * not allow.  Expected: cache ~3-5x faster than driver per allocate + free from Python.
 *
 * Stream safety of the cache.  A block freed on stream S goes back to S's free list and is
 * handed out again to allocations on S, where stream order makes reuse safe (a block freed
 * on another thread's per-thread default stream goes to the legacy stream's list, which
 * waits for every blocking stream).  An allocation on T that finds no block of its size on
 * T takes one of S's only after ordering T after S's work: S is idle (cuStreamQuery), or T
 * waits for an event recorded on S.  As with CuPy, work on other streams that uses an
 * array must be ordered before the array dies.
 *
 * Out of memory: every Pool of the context gives back what it holds, gc.collect() runs, they
 * give back again, and the allocation is tried once more; then CudaOutOfMemoryError states
 * the size, the pool's statistics and the device's free/total memory.
 *
 * Pools made from Python (pycuda's DeviceMemoryPool and PageLockedMemoryPool, CuPy's
 * MemoryPool) are this type too, with blocks and statistics of their own.  Everything here
 * runs with the GIL held and changes the lists only between the calls that let it go
 * (cuMemAlloc, cuMemFree, synchronize, gc), never across them.
 */
#define GH_POOL_UNIT       512 /* the smallest class; cuMemAlloc aligns to it anyway */
#define GH_POOL_SMALL_BINS 8   /* 512 to 4096 bytes in steps of 512 */
#define GH_POOL_STEPS      8   /* classes per doubling above 4096 bytes */
#define GH_POOL_N_BINS     (GH_POOL_SMALL_BINS + GH_POOL_STEPS * 50) /* up to GH_POOL_MAX_SIZE */
#define GH_POOL_MAX_SIZE   ((size_t)1 << 62)

typedef enum { GH_POOL_MODE_CACHE, GH_POOL_MODE_DRIVER, GH_POOL_MODE_PLAIN } gh_pool_mode;

/* One piece of memory a pool handed out or holds. */
typedef struct gh_pool_block {
    struct gh_pool_block *next; /* in a lane's bin, or a list being freed */
    CUdeviceptr dptr;
    void *host;           /* pinned pools: the host address */
    size_t size;          /* bytes allocated: the class (cache), else the request */
    int bin;              /* the class, in cache mode */
    uint64_t generation;  /* the context generation it was allocated in */
    CUstream stream;      /* the stream it is ordered on (NULL: the legacy default stream) */
    unsigned long tid;    /* the thread, for CU_STREAM_PER_THREAD; else 0 */
    PyObject *stream_obj; /* strong while in use: keeps that stream's handle valid */
    PyObject *backing;    /* strong: the Python allocator's object owning the memory */
} gh_pool_block;

/* The free blocks of one stream, by class. */
typedef struct {
    CUstream stream;
    unsigned long tid;
    PyObject *stream_obj; /* strong while the lane holds blocks (NULL for the legacy stream) */
    Py_ssize_t n_blocks;
    gh_pool_block *bins[GH_POOL_N_BINS];
} gh_pool_lane;

struct gh_pool {
    PyObject_HEAD
    gh_context *context; /* strong */
    gh_pool *next_pool;  /* in the module's list of live pools */
    uint64_t generation; /* of the blocks it counts; older ones went with their context */
    gh_pool_mode mode;
    int host;                /* pinned host memory (cuMemHostAlloc), else device memory */
    unsigned int host_flags; /* cuMemHostAlloc flags */
    int holding;             /* 0 after stop_holding(): freed blocks are freed at once */
    PyObject *backing;       /* a Python allocator for new blocks, or NULL */
    size_t limit;            /* 0: none */
    size_t used_bytes, held_bytes;
    Py_ssize_t used_blocks, held_blocks;
    gh_pool_lane **lanes;
    Py_ssize_t n_lanes, cap_lanes;
    CUevent order_event;  /* for ordering one stream after another; NULL until needed */
    CUmemoryPool mempool; /* driver mode: the device's default pool */
};

/* Where an allocation is ordered: the stream handle, the thread for the per-thread
   default stream, and the stream object (borrowed) that keeps the handle valid. */
typedef struct {
    CUstream stream;
    unsigned long tid;
    PyObject *obj;
} gh_pool_key;

/* "cache", "driver", "plain": by gh_pool_mode. */
extern const char *const gh_pool_mode_names[];

/* The module state of p's type. */
static inline gh_state *
gh_pool_state_of(gh_pool *p)
{
    return gh_state_of_type(Py_TYPE(p));
}

/* *stat -= n, stopping at 0. */
static inline void
gh_pool_stat_sub(size_t *stat, size_t n)
{
    *stat = *stat > n ? *stat - n : 0;
}

/* ---- pool_engine.c ---- */

/* The size class of `size` bytes, and the bytes of a block of class `bin`. */
int gh_pool_bin_of(size_t size);
size_t gh_pool_bin_size(int bin);
/* Catch up with p's context: after a reset or release, drop every record and count from
   zero (gh_pool_forget does it unconditionally). */
void gh_pool_sync(gh_pool *p);
void gh_pool_forget(gh_pool *p);
/* Free the blocks `p` holds (of lane `only` only, if not NULL); in driver mode, trim the
   driver's pool.  Never raises. */
void gh_pool_release_held(gh_pool *p, const gh_pool_key *only);
/* gh_pool_release_held of every pool of p's context.  Never raises. */
void gh_pool_release_context(gh_pool *p);
/* The key of a stream= argument for pool `p` (NULL or None: the legacy stream); 0 or -1. */
int gh_pool_key_from(gh_pool *p, PyObject *stream, gh_pool_key *k);
/* An Allocation of `size` bytes from pool `p`, ordered on `stream`; new reference or NULL. */
gh_allocation *gh_pool_allocate(gh_pool *p, size_t size, PyObject *stream);
/* The mode GPUHOST_ALLOCATOR names (default cache); -1 with ValueError for another value. */
int gh_pool_mode_from_env(gh_pool_mode *mode);
/* A new pool of `type` in `ctx` (activated); `fallback`: a driver-mode pool on a device
   without memory pools becomes a cache pool, with a warning, instead of raising.  New
   reference or NULL. */
gh_pool *gh_pool_new(gh_state *st, PyTypeObject *type, gh_context *ctx, gh_pool_mode mode, int host,
                     unsigned int host_flags, PyObject *backing, int fallback);
/* Borrowed: ctx's default device pool, made on first use; NULL with an error. */
gh_pool *gh_pool_default(gh_state *st, gh_context *ctx);

/* ---- pool_obtain.c ---- */

/* New memory for `b` (b->size bytes, ordered on b->stream) with the out-of-memory policy
   around it: over the limit, or refused, the pools of the context give back what they
   hold, garbage is collected, and it is tried once more.  The context is current.  0, or
   -1 with an error (CudaOutOfMemoryError for `requested` bytes). */
int gh_pool_obtain(gh_pool *p, gh_pool_block *b, size_t requested);
/* Raise CudaOutOfMemoryError for `requested` bytes, with the pool's statistics in the
   message and as .pool_stats; -1. */
int gh_pool_raise_oom(gh_pool *p, size_t requested, gh_cu_id id, int over_limit);
/* A dict of the pool's statistics, or NULL. */
PyObject *gh_pool_stats(gh_pool *p);

/* ---- memory.c ---- */
/* Allocate `size` bytes of `kind` in `ctx`; `flags` for cuMemHostAlloc/cuMemAllocManaged.
   New reference, or NULL with CudaOutOfMemoryError stating the size, or CudaAPIError. */
gh_allocation *gh_allocate(gh_state *st, gh_context *ctx, gh_alloc_kind kind, size_t size,
                           unsigned int flags);

/* Page-lock `obj`'s buffer with cuMemHostRegister `flags`; new reference or NULL. */
gh_allocation *gh_register(gh_state *st, gh_context *ctx, PyObject *obj, unsigned int flags);

/* Raise CudaOutOfMemoryError for `size` bytes of `what` with the device's free/total. -1. */
int gh_raise_oom(gh_context *ctx, const char *what, size_t size, gh_cu_id id);

/* gh_raise_oom with `detail` (e.g. a pool's statistics; may be NULL) after the sizes. */
int gh_raise_oom_detail(gh_context *ctx, const char *what, size_t size, gh_cu_id id,
                        const char *detail);

/* A new Allocation of `size` bytes of `kind` in `ctx` that owns no memory yet (the caller
   sets dptr/host, or pool and block); new reference or NULL. */
gh_allocation *gh_allocation_new(gh_state *st, gh_context *ctx, gh_alloc_kind kind, size_t size);

/* ---- pool_engine.c ---- */
/* `size` bytes of device memory in `ctx` from its default Pool (GPUHOST_ALLOCATOR picks
   its mode), ordered on `stream` (a stream= argument; NULL: the legacy default stream).
   New reference, or NULL with CudaOutOfMemoryError (after releasing held blocks and
   collecting garbage once) or another error. */
gh_allocation *gh_pool_device_alloc(gh_state *st, gh_context *ctx, size_t size, PyObject *stream);

/* Give a pooled Allocation's memory back to its Pool and clear a->pool; never raises. */
void gh_pool_release(gh_allocation *a);

/* Free the blocks every Pool of `ctx` holds, before the context is reset or released. */
void gh_pool_context_ending(gh_state *st, gh_context *ctx);

/* ---- memory.c ---- */
/* Context.reset(): the device memory of every Allocation made in `ctx` before its present
   generation goes now (pooled memory back to its pool, IPC mappings closed); host and
   managed memory, which NumPy arrays may view, stays valid until its object goes.  Never
   raises. */
void gh_allocations_reset(gh_state *st, gh_context *ctx);

#endif /* GPUHOST_MEMORY_INTERNAL_H */
