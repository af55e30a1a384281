/* fakecuda internals shared by its files: the lock, the shared entry check and the skeleton
 * of the entry points (fk_call) with its resolvers, devices, contexts, the resource registry,
 * the work queue, stream lookup and the memory registry.
 *
 * Every driver entry point of csrc/base/cuda_api.h is a function fk_<Name> declared here from the
 * list itself, with the type of its PFN_cu<Name>_v<Version>: a definition with other
 * arguments fails to compile, and a missing one fails to link (the symbols are hidden).
 * Those that work after cuInit are written in fk_call: the entry point checks its arguments
 * that need no memory read and names what to resolve; a body does the rest, lock held.
 */
#ifndef FAKECUDA_FK_INTERNAL_H
#define FAKECUDA_FK_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "base/cuda_api.h"
#include "fakecuda.h"

#define FK_HIDDEN __attribute__((visibility("hidden")))

#define FK_MAX_DEVICES 64 /* FAKECUDA_DEVICES may ask for at most this many */

/* The driver's entry points: CUresult fk_Init(unsigned int Flags), ... */
#define FK_DECLARE_ENTRY(name, version)                                                            \
    extern FK_HIDDEN __typeof__(*(PFN_cu##name##_v##version)0) fk_##name;
GH_CUDA_API_LIST(FK_DECLARE_ENTRY)
#undef FK_DECLARE_ENTRY

/* ---- fakecuda.c: lock, entry check, the entry-point skeleton, configuration ---- */

/* The one lock over all driver state (thread-local context stacks aside). */
FK_HIDDEN void fk_lock(void);
FK_HIDDEN void fk_unlock(void);
/* Wait on `cond` for a broadcast; the driver lock is released while waiting.  Lock held. */
FK_HIDDEN void fk_wait(pthread_cond_t *cond);

typedef enum {
    FK_ANYTIME,    /* works before cuInit (cuDriverGetVersion, cuGetErrorName, ...) */
    FK_AFTER_INIT, /* CUDA_ERROR_NOT_INITIALIZED until cuInit succeeded */
} fk_when;

/* The first thing every fk_ entry point does: count the call, apply an armed fault, check
   initialization, refuse FK_AFTER_INIT calls made on the worker thread (from a host
   callback: CUDA_ERROR_NOT_PERMITTED).  CUDA_SUCCESS to go on, else the CUresult the entry
   point returns. */
FK_HIDDEN CUresult fk_enter(gh_cu_id id, fk_when when);

/* What an entry point works on, found under the lock by an fk_resolve_fn. */
typedef struct {
    struct CUctx_st *ctx; /* the context named, the current one, or the stream's */
    struct fk_lane *lane; /* the stream's lane (fk_on_stream), else NULL */
    void *found;          /* what the handle names: a created stream (NULL for a default one),
                             an event, a graph, a device, a function, ... */
} fk_target;

/* Find what `handle` names into *target: CUDA_SUCCESS, or the error the entry point returns.
   Lock held. */
typedef CUresult (*fk_resolve_fn)(const void *handle, fk_target *target);
/* The rest of an entry point, on its target, with `args` its own (its output pointers, ...).
   Lock held; a body may let it go meanwhile (a wait, making large storage). */
typedef CUresult (*fk_body_fn)(fk_target *target, void *args);

/* The skeleton of the entry points that work after cuInit, written once: fk_enter (its error
   returned), CUDA_ERROR_INVALID_VALUE unless `args_ok`, then with the lock held
   `resolve(handle, &target)` (skipped if NULL; its error returned) and `body(&target, args)`
   (skipped if NULL).  The lock is let go; the result is the body's (CUDA_SUCCESS without
   one). */
FK_HIDDEN CUresult fk_call(gh_cu_id id, int args_ok, fk_resolve_fn resolve, const void *handle,
                           fk_body_fn body, void *args);
/* What most resolvers end with: *target names `found`, CUDA_SUCCESS; `missing` if NULL. */
FK_HIDDEN CUresult fk_found(fk_target *target, void *found, CUresult missing);
/* A body for the calls the fake does not implement: CUDA_ERROR_NOT_SUPPORTED. */
FK_HIDDEN CUresult fk_not_supported(fk_target *target, void *args);

/* Whether device `dev` may access device `peer`'s memory (FAKECUDA_PEER_ACCESS); 0 for
   dev == peer, as the driver answers.  Both must be valid ordinals.  Fixed after cuInit. */
FK_HIDDEN int fk_peer_supported(CUdevice dev, CUdevice peer);

/* ---- fk_device.c ---- */

typedef struct {
    CUdevice ordinal;
    char name[64];
    size_t total_mem;
    size_t used_mem; /* bytes allocated on the device: MemGetInfo's free = total - used */
    CUuuid uuid;
    int attrs[CU_DEVICE_ATTRIBUTE_MAX];
} fk_device;

/* A device ordinal as the handle fk_call resolves with fk_on_device. */
#define FK_ORDINAL(dev) ((const void *)(intptr_t)(dev))

/* Make `count` devices (0 to FK_MAX_DEVICES); called once, by the first cuInit. */
FK_HIDDEN void fk_devices_init(int count);
/* Device `ordinal`, or NULL if there is none.  Fields other than used_mem are fixed after
   cuInit and read without the lock; used_mem is under the lock. */
FK_HIDDEN fk_device *fk_device_get(CUdevice ordinal);
/* Resolver: the device FK_ORDINAL(dev) (target->found), else CUDA_ERROR_INVALID_DEVICE. */
FK_HIDDEN CUresult fk_on_device(const void *ordinal, fk_target *target);

/* ---- fk_context.c ---- */

/* What has been queued on one stream: a created one, or a default stream of a context. */
typedef struct fk_lane {
    unsigned long long last_seq; /* seq of the newest op queued on it (fk_op); 0: none yet */
    int non_blocking; /* a stream made with CU_STREAM_NON_BLOCKING: the legacy default stream
                         does not wait for it */
    struct CUgraph_st *capture;       /* the graph its ops go to while it captures, or NULL */
    int capture_invalid;              /* an illegal call invalidated the capture */
    CUstreamCaptureMode capture_mode; /* as cuStreamBeginCapture was told */
    int node_builder; /* a private lane of cuGraphAdd*Node (fk_graph.c), not a stream */
} fk_lane;

/* A context (the fake's primary contexts).  Never freed: a destroyed one stays allocated,
   marked dead, so stale handles are recognised. */
struct CUctx_st {
    struct CUctx_st *next_made; /* every context ever made, newest first */
    unsigned long long id;      /* cuCtxGetId's: unique for the process's life */
    CUdevice device;
    int alive;
    fk_lane ops;           /* every op of the context, for cuCtxSynchronize */
    fk_lane blocking;      /* every op of its blocking streams: what the legacy stream waits for */
    fk_lane legacy;        /* the legacy default stream: handles 0 and CU_STREAM_LEGACY */
    fk_lane per_thread;    /* CU_STREAM_PER_THREAD: one per context, shared by its threads */
    int captures;          /* how many of its streams capture */
    int blocking_captures; /* how many of those are blocking: the legacy stream waits for them */
    /* Its captures that are not relaxed, by the thread that began each: the potentially
       unsafe calls they refuse (cuThreadExchangeStreamCaptureMode's rules: a thread's own
       capture refuses its calls, a global one every thread's that is in global mode). */
#define FK_STRICT_CAPTURES 64
    struct {
        pthread_t thread;
        CUstreamCaptureMode mode;
        const struct fk_lane *lane;
    } strict[FK_STRICT_CAPTURES];
    int strict_captures;
    struct CUctx_st *peers[FK_MAX_DEVICES]; /* by device: the context whose memory this one
                                               was given access to (cuCtxEnablePeerAccess) */
};
typedef struct CUctx_st fk_context;

/* The calling thread's current context if it is usable: CUDA_SUCCESS and *out set,
   CUDA_ERROR_INVALID_CONTEXT (none), or CUDA_ERROR_CONTEXT_IS_DESTROYED.  Lock held. */
FK_HIDDEN CUresult fk_current_context(fk_context **out);
/* CUDA_SUCCESS if `handle` is a live context, CUDA_ERROR_CONTEXT_IS_DESTROYED for a dead one,
   CUDA_ERROR_INVALID_CONTEXT for what never was one (never dereferenced).  Lock held. */
FK_HIDDEN CUresult fk_context_usable(CUcontext handle);
/* Resolvers: the current context (`handle` unused), or the context `handle` if it is usable
   (fk_context_usable), into target->ctx. */
FK_HIDDEN CUresult fk_on_current(const void *handle, fk_target *target);
FK_HIDDEN CUresult fk_on_context(const void *handle, fk_target *target);

/* ---- fk_resource.c: the registry of per-context resources, with live counters ---- */

#define FK_KIND_LIST(K)                                                                            \
    K(CONTEXTS, "contexts")                                                                        \
    K(ALLOCATIONS, "allocations")                                                                  \
    K(STREAMS, "streams")                                                                          \
    K(EVENTS, "events")                                                                            \
    K(MODULES, "modules")                                                                          \
    K(HOST_ALLOCATIONS, "host_allocations")                                                        \
    K(REGISTRATIONS, "registrations")                                                              \
    K(IPC_MAPPINGS, "ipc_mappings")                                                                \
    K(GRAPHS, "graphs")                                                                            \
    K(GRAPH_EXECS, "graph_execs")

typedef enum {
#define FK_KIND_ENUM(kind, name) FK_##kind,
    FK_KIND_LIST(FK_KIND_ENUM)
#undef FK_KIND_ENUM
        FK__KINDS
} fk_kind;

/* The head of every resource other than contexts (embed it first in the resource's
   struct).  Resources of a context are destroyed with it. */
typedef struct fk_resource {
    fk_kind kind;
    fk_context *ctx;
    struct fk_resource *prev, *next;          /* in the list of its kind */
    void (*destroy)(struct fk_resource *res); /* free it; its registration is already gone */
} fk_resource;

/* Count one more (delta 1) or one fewer (-1) live resource of `kind`.  Lock held. */
FK_HIDDEN void fk_live_add(fk_kind kind, long delta);
/* Register `res` as a live `kind` of `ctx`, freed by `destroy` if ctx dies.  Lock held. */
FK_HIDDEN void fk_resource_add(fk_resource *res, fk_kind kind, fk_context *ctx,
                               void (*destroy)(fk_resource *));
/* Unregister `res` (the caller frees it).  Lock held. */
FK_HIDDEN void fk_resource_remove(fk_resource *res);
/* The live resource of `kind` whose address is `handle`, or NULL (a stale or foreign
   handle; it is never dereferenced).  Lock held. */
FK_HIDDEN fk_resource *fk_resource_find(const void *handle, fk_kind kind);
/* Unregister and destroy every resource of `ctx`.  Lock held. */
FK_HIDDEN void fk_resource_destroy_all(fk_context *ctx);
/* The kind named `name` ("streams"), or -1 for an unknown or NULL name. */
FK_HIDDEN int fk_kind_lookup(const char *name);

/* The first registered `kind` (the others follow through ->next), or NULL.  Lock held. */
FK_HIDDEN fk_resource *fk_resource_first(fk_kind kind);

/* ---- fk_queue.c: the asynchronous work queue and its worker thread ---- */

/* One piece of asynchronous work (a host callback, an event record, a copy).  Embed it
   first in a malloc'ed struct holding the op's arguments and set `run` (and `cancel` if
   needed); the queue sets the rest and free()s the struct once it ran or was dropped. */
typedef struct fk_op {
    struct fk_op *next;               /* in the queue */
    unsigned long long seq;           /* queueing order, from 1: ops finish in this order */
    fk_context *ctx;                  /* whose op it is: dropped if ctx dies before it runs */
    void (*run)(struct fk_op *op);    /* the work, on the worker thread, lock NOT held */
    void (*cancel)(struct fk_op *op); /* NULL, or undo on drop (ctx died).  Lock held. */
    /* Graphs (fk_graph.c): an op queued on a capturing stream is kept as a node's template
       instead, and each launch of the graph queues a copy of its `size` bytes. */
    size_t size;                          /* bytes of the whole struct; 0: cannot be captured */
    CUgraphNodeType node_type;            /* the node it makes */
    CUresult (*replay)(struct fk_op *op); /* NULL, or take what a fresh copy holds (pins, the
                                             event it records).  Lock held. */
    void (*queued)(struct fk_op *op);     /* NULL, or note that it was queued (seq set).  Lock
                                             held. */
} fk_op;

/* Queue `op` at the end of the global FIFO as the newest op of `lane` (a stream) of `ctx`
   (and of ctx->ops, and of ctx->blocking unless the lane is non-blocking),
   starting the worker thread if needed; on a capturing lane, keep it as a graph node
   instead (fk_graph_capture_op).  op->seq is set on return.  CUDA_SUCCESS; otherwise the op
   was dropped (fk_op_drop): CUDA_ERROR_STREAM_CAPTURE_INVALIDATED (the capture cannot take
   it), or CUDA_ERROR_OUT_OF_MEMORY (no worker, no node).  Lock held. */
FK_HIDDEN CUresult fk_op_enqueue(fk_op *op, fk_context *ctx, fk_lane *lane);
/* Drop an op that will not run: its cancel hook (if any), then free it.  Lock held. */
FK_HIDDEN void fk_op_drop(fk_op *op);
/* Whether a call that waits on `lane` of `ctx` (NULL: a synchronous call, which waits on the
   legacy default stream) may go on, as the driver answers: a capturing stream cannot be
   waited on (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, its capture invalidated), nor can the
   legacy stream while a blocking stream of ctx captures (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
   CUDA_SUCCESS otherwise.  Lock held. */
FK_HIDDEN CUresult fk_capture_check(fk_context *ctx, fk_lane *lane);
/* Whether an "unsafe" call (cuMemAlloc, cuMemHostAlloc) may be made now in `ctx`: not while
   one of its streams captures in global or thread-local mode, unless this thread exchanged
   its mode to relaxed (cuThreadExchangeStreamCaptureMode).  CUDA_SUCCESS or
   CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED.  Lock held. */
FK_HIDDEN CUresult fk_unsafe_call_check(const fk_context *ctx);

/* Nonzero while op `seq` or an earlier one is queued or running.  Lock held. */
FK_HIDDEN int fk_ops_pending(unsigned long long seq);
/* Wait until op `seq` and every earlier one finished (or was dropped); the lock is released
   while waiting.  Lock held. */
FK_HIDDEN void fk_ops_wait(unsigned long long seq);
/* Drop every queued op of `ctx` (one already running finishes).  Lock held. */
FK_HIDDEN void fk_ops_drop_context(fk_context *ctx);
/* Nonzero on the worker thread (inside a host callback). */
FK_HIDDEN int fk_on_worker(void);

/* ---- fk_stream.c ---- */

/* The stream `handle` names: a created stream, or (0, CU_STREAM_LEGACY,
   CU_STREAM_PER_THREAD) a default stream of the current context.  CUDA_SUCCESS with its
   context and lane in *ctx and *lane; CUDA_ERROR_INVALID_HANDLE for a destroyed or unknown
   stream; the current context's error for a default stream without one.  Lock held. */
FK_HIDDEN CUresult fk_stream_lane(CUstream handle, fk_context **ctx, fk_lane **lane);
/* Resolver: fk_stream_lane into target->ctx and ->lane, the created stream (NULL for a
   default one) into target->found. */
FK_HIDDEN CUresult fk_on_stream(const void *handle, fk_target *target);

/* ---- fk_graph.c ---- */

/* Keep `op` (queued on a capturing lane) as a new node of graph `g`, after every node that
   has none after it.  CUDA_SUCCESS, or CUDA_ERROR_OUT_OF_MEMORY (op dropped: fk_op_drop).
   Lock held. */
FK_HIDDEN CUresult fk_graph_capture_op(struct CUgraph_st *g, fk_op *op);
/* End the capture of `lane` of `ctx` and destroy what it captured.  Lock held. */
FK_HIDDEN void fk_capture_abandon(fk_context *ctx, fk_lane *lane);

/* The ops of graph nodes, queued on `lane` of `ctx` (a capturing one: see fk_graph.c).  Lock
   held.  fk_event.c: a record of `event` (CUDA_ERROR_INVALID_HANDLE for no live event);
   fk_stream.c: a wait for `event`, a host function. */
FK_HIDDEN CUresult fk_event_record_on(CUevent event, fk_context *ctx, fk_lane *lane);
FK_HIDDEN CUresult fk_event_wait_on(CUevent event, fk_context *ctx, fk_lane *lane);
FK_HIDDEN CUresult fk_host_func_on(CUhostFn fn, void *user_data, CUstream handle, fk_context *ctx,
                                   fk_lane *lane);

/* ---- fk_copy.c: copies and memsets of graph nodes, onto `lane` of `ctx` (a capturing one:
   the op becomes a node).  Lock held. */
FK_HIDDEN CUresult fk_copy_3d_on(const CUDA_MEMCPY3D *p, fk_context *ctx, fk_lane *lane);
FK_HIDDEN CUresult fk_memset_on(CUdeviceptr dst, size_t pitch, unsigned int value,
                                unsigned int elem, size_t width, size_t height, fk_context *ctx,
                                fk_lane *lane);

/* ---- fk_memory.c: the registry of memory ranges that copies and memsets go through (its
   internals, shared by fk_alloc.c, fk_host_memory.c, fk_pointer.c, fk_ipc_memory.c: in
   fk_memory.h) ---- */

typedef struct fk_storage fk_storage; /* the bytes behind a range, refcounted */

/* How an address given to a copy or memset is taken. */
typedef enum {
    FK_SIDE_DEVICE,  /* must be inside one live range (device, managed, pinned, registered, IPC) */
    FK_SIDE_HOST,    /* a host pointer: a pinned/registered/managed range or any other memory,
                        never a fake device address */
    FK_SIDE_UNIFIED, /* a range if it is inside one, else host memory as FK_SIDE_HOST */
} fk_side;

/* Where the bytes of one side of a copy or memset are, held valid until released. */
typedef struct {
    unsigned char *host; /* the first byte, host-addressable */
    fk_storage *pin;     /* the storage kept alive for the access, or NULL */
    int pageable;        /* host memory outside every pinned/registered/managed range */
} fk_span;

/* Translate [addr, addr + len) (len > 0) taken as `side` into *span, pinning its storage.
   `write`: the access writes (read-only registrations refuse).  `owner`: NULL, or the
   context a device or IPC range must belong to (peer copies).  CUDA_SUCCESS, or
   CUDA_ERROR_INVALID_VALUE with *span empty.  Lock held. */
FK_HIDDEN CUresult fk_span_resolve(fk_span *span, uintptr_t addr, size_t len, fk_side side,
                                   int write, const fk_context *owner);
/* Take one more pin on a resolved span's storage (a copy of the span).  Lock held. */
FK_HIDDEN void fk_span_retain(fk_span *span);
/* Drop the pin of a resolved span (an empty one is fine).  Lock held. */
FK_HIDDEN void fk_span_release(fk_span *span);

/* fk_alloc.c: a device allocation of `size` bytes from its device's default pool
   (cuMemAllocAsync) for `ctx`, into *dptr.  CUDA_SUCCESS, CUDA_ERROR_OUT_OF_MEMORY or
   CUDA_ERROR_CONTEXT_IS_DESTROYED.  Lock held, let go while the bytes are made. */
FK_HIDDEN CUresult fk_memory_alloc_pooled(fk_context *ctx, size_t size, CUdeviceptr *dptr);
/* fk_alloc.c: queue the free of the device allocation starting at `dptr` on `lane` of `ctx`
   (cuMemFreeAsync): it goes when the queue reaches it.  CUDA_SUCCESS, or
   CUDA_ERROR_INVALID_VALUE for an address that is not a live allocation.  Lock held. */
FK_HIDDEN CUresult fk_memory_free_ordered(uintptr_t dptr, fk_context *ctx, fk_lane *lane);

/* ---- fk_pool.c: the devices' default memory pools (stream-ordered allocation) ---- */

/* Claim `size` bytes of device `dev`'s default pool for an allocation: out of the bytes it
   keeps reserved, else new device memory.  CUDA_SUCCESS or CUDA_ERROR_OUT_OF_MEMORY.  Lock
   held. */
FK_HIDDEN CUresult fk_mempool_claim(CUdevice dev, size_t size);
/* An allocation of `size` bytes from device `dev`'s pool went: its bytes stay reserved up
   to the pool's release threshold, the rest goes back to the device.  Lock held. */
FK_HIDDEN void fk_mempool_release(CUdevice dev, size_t size);

/* ---- fk_module.c: modules loaded from PTX while fakecuda_kernels(1) is on ---- */

/* One parameter of a kernel, laid out as cuFuncGetParamInfo reports it. */
typedef struct {
    size_t offset, size;
} fk_param;

/* One .entry of a loaded module; its CUfunction handle is its address. */
typedef struct {
    struct fk_module *module;
    fk_context *ctx; /* its module's: the function goes with it */
    char *name;
    fk_param *params;
    size_t nparams;
    size_t param_bytes;               /* where the last parameter ends: the launch's buffer */
    int attrs[CU_FUNC_ATTRIBUTE_MAX]; /* cuFuncGetAttribute's answers, as set */
} fk_function;

/* The function `handle` of a live module, or NULL (a stale or foreign handle is never
   dereferenced).  Lock held. */
FK_HIDDEN fk_function *fk_function_find(CUfunction handle);
/* Resolver: the function `handle` (target->found), else CUDA_ERROR_INVALID_HANDLE, or
   CUDA_ERROR_NOT_SUPPORTED while kernels are off (nothing could have been loaded). */
FK_HIDDEN CUresult fk_on_function(const void *handle, fk_target *target);

/* ---- fk_kernel.c: launches, recorded instead of run ---- */

/* Nonzero while fakecuda_kernels(1) is on: PTX modules load.  Lock held. */
FK_HIDDEN int fk_kernels_enabled(void);

#endif /* FAKECUDA_FK_INTERNAL_H */
