/* Pool: pools of device memory (and of pinned host memory), and the default allocator of
 * device arrays.
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
 * pool costs 0.7-1.2 us per cuMemAllocAsync + cuMemFreeAsync in C alone (ANCHORS.md), before
 * any Python; the goal, 0.8 x CuPy's 1.25 us, leaves room for the first, not the second.
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
#include "module.h"

#include <string.h>

#define UNIT       512 /* the smallest class; cuMemAlloc aligns to it anyway */
#define SMALL_BINS 8   /* 512 to 4096 bytes in steps of 512 */
#define STEPS      8   /* classes per doubling above 4096 bytes */
#define N_BINS     (SMALL_BINS + STEPS * 50) /* up to MAX_SIZE */
#define MAX_SIZE   ((size_t)1 << 62)

typedef enum { MODE_CACHE, MODE_DRIVER, MODE_PLAIN } pool_mode;

static const char *const mode_names[] = {"cache", "driver", "plain"};

/* One piece of memory a pool handed out or holds. */
typedef struct block {
    struct block *next; /* in a lane's bin, or a list being freed */
    CUdeviceptr dptr;
    void *host;           /* pinned pools: the host address */
    size_t size;          /* bytes allocated: the class (cache), else the request */
    int bin;              /* the class, in cache mode */
    uint64_t generation;  /* the context generation it was allocated in */
    CUstream stream;      /* the stream it is ordered on (NULL: the legacy default stream) */
    unsigned long tid;    /* the thread, for CU_STREAM_PER_THREAD; else 0 */
    PyObject *stream_obj; /* strong while in use: keeps that stream's handle valid */
    PyObject *backing;    /* strong: the Python allocator's object owning the memory */
} block;

/* The free blocks of one stream, by class. */
typedef struct {
    CUstream stream;
    unsigned long tid;
    PyObject *stream_obj; /* strong while the lane holds blocks (NULL for the legacy stream) */
    Py_ssize_t n_blocks;
    block *bins[N_BINS];
} lane;

struct gh_pool {
    PyObject_HEAD
    gh_context *context; /* strong */
    gh_pool *next_pool;  /* in the module's list of live pools */
    uint64_t generation; /* of the blocks it counts; older ones went with their context */
    pool_mode mode;
    int host;                /* pinned host memory (cuMemHostAlloc), else device memory */
    unsigned int host_flags; /* cuMemHostAlloc flags */
    int holding;             /* 0 after stop_holding(): freed blocks are freed at once */
    PyObject *backing;       /* a Python allocator for new blocks, or NULL */
    size_t limit;            /* 0: none */
    size_t used_bytes, held_bytes;
    Py_ssize_t used_blocks, held_blocks;
    lane **lanes;
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
} key;

/* ---- size classes ---- */

static int
bin_of(size_t size)
{
    int e;
    size_t step;

    if (size <= SMALL_BINS * UNIT) {
        return size == 0 ? 0 : (int)((size - 1) / UNIT);
    }
    e = 63 - __builtin_clzll((unsigned long long)(size - 1)); /* 2^e < size <= 2^(e+1) */
    step = (size_t)1 << (e - 3);
    return SMALL_BINS + (e - 12) * STEPS + (int)((size + step - 1) / step - 9);
}

static size_t
bin_size(int bin)
{
    if (bin < SMALL_BINS) {
        return (size_t)(bin + 1) * UNIT;
    }
    return (size_t)(9 + (bin - SMALL_BINS) % STEPS) << (12 + (bin - SMALL_BINS) / STEPS - 3);
}

static void
stat_sub(size_t *stat, size_t n)
{
    *stat = *stat > n ? *stat - n : 0;
}

static gh_state *
state_of(gh_pool *p)
{
    return gh_state_of_type(Py_TYPE(p));
}

/* ---- blocks and lanes ---- */

/* Free a block record whose memory is gone or given away. */
static void
drop_block(block *b)
{
    Py_XDECREF(b->stream_obj);
    Py_XDECREF(b->backing);
    PyMem_Free(b);
}

/* Free the memory of `b` (held by defer_cleanup(), deferred off a driver thread, skipped if
   its context is gone) and the record.  Never raises; may let the GIL go. */
static void
free_block(gh_pool *p, block *b)
{
    if (b->backing == NULL) {
        if (p->host) {
            gh_release(p->context, b->generation, GH_CU_MemFreeHost, b->host);
        }
        else {
            gh_release(p->context, b->generation, GH_CU_MemFree, (void *)(uintptr_t)b->dptr);
        }
    }
    drop_block(b); /* the backing allocator frees its own memory when its object dies */
}

/* The lane of (stream, tid), made if `create` (NULL, no exception, when out of memory). */
static lane *
find_lane(gh_pool *p, CUstream stream, unsigned long tid, int create)
{
    lane *l;
    for (Py_ssize_t i = 0; i < p->n_lanes; i++) {
        if (p->lanes[i]->stream == stream && p->lanes[i]->tid == tid) {
            return p->lanes[i];
        }
    }
    if (!create) {
        return NULL;
    }
    if (p->n_lanes == p->cap_lanes) {
        Py_ssize_t cap = p->cap_lanes ? 2 * p->cap_lanes : 4;
        lane **grown = PyMem_Realloc(p->lanes, (size_t)cap * sizeof(*grown));
        if (grown == NULL) {
            return NULL;
        }
        p->lanes = grown;
        p->cap_lanes = cap;
    }
    l = PyMem_Calloc(1, sizeof(*l));
    if (l == NULL) {
        return NULL;
    }
    l->stream = stream;
    l->tid = tid;
    p->lanes[p->n_lanes++] = l;
    return l;
}

/* Take the first block of `bin` out of lane `l`. */
static block *
pop_block(gh_pool *p, lane *l, int bin)
{
    block *b = l->bins[bin];
    PyObject *obj = NULL;

    l->bins[bin] = b->next;
    b->next = NULL;
    l->n_blocks--;
    stat_sub(&p->held_bytes, b->size);
    p->held_blocks--;
    if (l->n_blocks == 0) {
        obj = l->stream_obj; /* an empty lane keeps no stream alive */
        l->stream_obj = NULL;
    }
    Py_XDECREF(obj); /* may run code: the pool is consistent and b is out of it */
    return b;
}

/* Move every block of lane `l` onto *list. */
static void
drain_lane(gh_pool *p, lane *l, block **list)
{
    PyObject *obj = l->stream_obj;
    l->stream_obj = NULL;
    for (int bin = 0; bin < N_BINS && l->n_blocks > 0; bin++) {
        while (l->bins[bin] != NULL) {
            block *b = l->bins[bin];
            l->bins[bin] = b->next;
            b->next = *list;
            *list = b;
            l->n_blocks--;
            stat_sub(&p->held_bytes, b->size);
            p->held_blocks--;
        }
    }
    Py_XDECREF(obj);
}

/* The context was reset or released: its memory is gone.  Drop every record, and count
   from zero in the new generation. */
static void
forget(gh_pool *p)
{
    block *list = NULL;
    p->generation = p->context->generation;
    for (Py_ssize_t i = 0; i < p->n_lanes; i++) {
        drain_lane(p, p->lanes[i], &list);
    }
    p->used_bytes = p->held_bytes = 0;
    p->used_blocks = p->held_blocks = 0;
    p->order_event = NULL; /* destroyed with its context */
    while (list != NULL) {
        block *b = list;
        list = b->next;
        drop_block(b);
    }
}

static void
pool_sync(gh_pool *p)
{
    if (p->generation != p->context->generation) {
        forget(p);
    }
}

/* ---- giving memory back ---- */

/* Cleanup: the exception a failed gh_context_enter/leave raised becomes a RuntimeWarning
   naming the call (cleanup never raises, and never hides a failure). */
static void
warn_raised(void)
{
    PyObject *type, *value, *tb;

    PyErr_Fetch(&type, &value, &tb);
    if (value == NULL) {
        Py_XDECREF(type);
        Py_XDECREF(tb);
        return;
    }
    if (PyErr_WarnFormat(PyExc_RuntimeWarning, 1, "gpuhost: %S, during cleanup", value) < 0) {
        PyErr_WriteUnraisable(NULL);
    }
    Py_XDECREF(type);
    Py_DECREF(value);
    Py_XDECREF(tb);
}

/* Cleanup: make p's context current for a release; 0, or -1 (warned). */
static int
enter_for_cleanup(gh_pool *p, int *pushed)
{
    if (gh_context_enter(p->context, pushed) < 0) {
        warn_raised();
        return -1;
    }
    return 0;
}

/* Cleanup: undo enter_for_cleanup.  A refused pop is warned about and tried once more, if
   the context is still on top: a release must not leave its context on the caller's
   stack. */
static void
leave_for_cleanup(gh_pool *p, int pushed)
{
    if (gh_context_leave(p->context, pushed) < 0) {
        warn_raised();
        if (gh_context_pop(p->context) < 0) {
            warn_raised();
        }
    }
}

/* Driver mode: synchronize the context and trim the driver's pool.  Never raises. */
static void
trim_driver_pool(gh_pool *p)
{
    CUresult res;
    int pushed;
    if (p->context->handle == NULL || enter_for_cleanup(p, &pushed) < 0) {
        return;
    }
    Py_BEGIN_ALLOW_THREADS
    res = gh_cu.CtxSynchronize();
    Py_END_ALLOW_THREADS
    if (res == CUDA_SUCCESS) {
        res = gh_cu.MemPoolTrimTo(p->mempool, 0);
        if (res != CUDA_SUCCESS) {
            gh_warn_cleanup(res, GH_CU_MemPoolTrimTo);
        }
    }
    else {
        gh_warn_cleanup(res, GH_CU_CtxSynchronize);
    }
    leave_for_cleanup(p, pushed);
}

/* Free the blocks `p` holds (of lane (stream, tid) only, if `only`).  Never raises. */
static void
release_held(gh_pool *p, const key *only)
{
    block *list = NULL;

    pool_sync(p);
    if (p->mode == MODE_DRIVER) {
        if (state_of(p)->defer_depth == 0) {
            trim_driver_pool(p);
        }
        return;
    }
    for (Py_ssize_t i = 0; i < p->n_lanes; i++) { /* p->lanes may move while draining */
        lane *l = p->lanes[i];
        if (only == NULL || (l->stream == only->stream && l->tid == only->tid)) {
            drain_lane(p, l, &list);
        }
    }
    while (list != NULL) {
        block *b = list;
        list = b->next;
        free_block(p, b);
    }
}

/* Release what every pool of p's context holds.  Never raises. */
static void
release_context(gh_pool *p)
{
    gh_state *st = state_of(p);
    PyObject *pools = PyList_New(0);
    if (pools == NULL) {
        PyErr_Clear();
        release_held(p, NULL);
        return;
    }
    for (gh_pool *q = st->pools; q != NULL; q = q->next_pool) {
        if (q->context == p->context && PyList_Append(pools, (PyObject *)q) < 0) {
            PyErr_Clear();
        }
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(pools); i++) {
        release_held((gh_pool *)PyList_GET_ITEM(pools, i), NULL);
    }
    Py_DECREF(pools);
}

void
gh_pool_context_ending(gh_state *st, gh_context *ctx)
{
    for (gh_pool *q = st->pools; q != NULL; q = q->next_pool) {
        if (q->context == ctx) {
            release_context(q); /* every pool of ctx, from a snapshot of the list */
            break;
        }
    }
    for (gh_pool *q = st->pools; q != NULL; q = q->next_pool) {
        if (q->context == ctx && q->order_event != NULL) {
            gh_release(ctx, q->generation, GH_CU_EventDestroy, q->order_event);
            q->order_event = NULL;
        }
    }
}

/* Put a freed block in the free list of its stream; frees it when that cannot be done. */
static void
cache_put(gh_pool *p, block *b)
{
    CUstream stream = b->stream;
    unsigned long tid = b->tid;
    PyObject *obj = b->stream_obj;
    lane *l;

    b->stream_obj = NULL;
    if (tid != 0 && tid != PyThread_get_thread_ident()) {
        /* another thread's per-thread default stream: the legacy stream waits for it */
        stream = NULL;
        tid = 0;
    }
    l = find_lane(p, stream, tid, 1);
    if (l == NULL) {
        free_block(p, b);
    }
    else {
        b->stream = stream;
        b->tid = tid;
        b->next = l->bins[b->bin];
        l->bins[b->bin] = b;
        l->n_blocks++;
        p->held_bytes += b->size;
        p->held_blocks++;
        if (l->stream_obj == NULL && stream != NULL) {
            l->stream_obj = obj; /* the lane keeps the stream's handle valid */
            obj = NULL;
        }
    }
    Py_XDECREF(obj);
}

static gh_stream *capturing_stream(gh_pool *p, PyObject *obj);

/* Driver mode: cuMemFreeAsync on the block's stream (on a capturing one, a free node of the
   graph).  Never raises. */
static void
free_ordered(gh_pool *p, block *b)
{
    gh_state *st = state_of(p);
    CUstream stream = b->stream;
    CUresult res;
    int pushed;

    if (gh_on_driver_thread || b->backing != NULL ||
        (st->defer_depth > 0 && capturing_stream(p, b->stream_obj) == NULL)) {
        free_block(p, b); /* cuMemFree, which may free stream-ordered memory, held or deferred */
        return;
    }
    if (b->tid != 0 && b->tid != PyThread_get_thread_ident()) {
        stream = NULL; /* another thread's per-thread stream: the legacy stream waits for it */
    }
    if (enter_for_cleanup(p, &pushed) < 0) {
        free_block(p, b); /* cuMemFree needs no current context (it waits for the work) */
        return;
    }
    res = gh_cu.MemFreeAsync(b->dptr, stream);
    if (res == CUDA_ERROR_INVALID_HANDLE && stream != NULL) {
        res = gh_cu.MemFreeAsync(b->dptr, NULL); /* the stream went: order on the legacy one */
    }
    if (res != CUDA_SUCCESS) {
        gh_warn_cleanup(res, GH_CU_MemFreeAsync);
    }
    leave_for_cleanup(p, pushed);
    drop_block(b);
}

static void give_back(gh_pool *p, block *b);

/* The stream a block is ordered on, if gpuhost is capturing on it; else NULL. */
static gh_stream *
capturing_stream(gh_pool *p, PyObject *obj)
{
    gh_state *st = state_of(p);
    if (obj == NULL || !Py_IS_TYPE(obj, st->StreamType) || ((gh_stream *)obj)->capture == NULL) {
        return NULL;
    }
    return (gh_stream *)obj;
}

#define HELD_BLOCK "gpuhost.pool.held_block"

/* A block a capture holds (see hold_for_capture) goes back once its graph is gone. */
static void
release_held_block(PyObject *capsule)
{
    block *b = PyCapsule_GetPointer(capsule, HELD_BLOCK);
    gh_pool *p = PyCapsule_GetContext(capsule);
    if (b != NULL && p != NULL) {
        give_back(p, b);
        Py_DECREF(p);
    }
}

/* A cached block freed on a stream while gpuhost captures on it may be used by the graph:
   the capture (then its Graph) holds it instead of the pool.  1 if held, else 0. */
static int
hold_for_capture(gh_pool *p, block *b)
{
    gh_stream *s = capturing_stream(p, b->stream_obj);
    PyObject *capsule;
    if (s == NULL || p->mode != MODE_CACHE) {
        return 0;
    }
    capsule = PyCapsule_New(b, HELD_BLOCK, release_held_block);
    if (capsule == NULL || PyCapsule_SetContext(capsule, Py_NewRef(p)) < 0 ||
        PyList_Append(s->capture, capsule) < 0) {
        if (capsule != NULL) {
            PyCapsule_SetDestructor(capsule, NULL);
            Py_DECREF(capsule);
            Py_DECREF(p);
        }
        PyErr_Clear(); /* out of memory: the block goes back now, as before capture */
        return 0;
    }
    Py_DECREF(capsule);
    return 1;
}

/* A block in use comes back: cached, or freed as the mode says.  Never raises. */
static void
give_back(gh_pool *p, block *b)
{
    if (hold_for_capture(p, b)) {
        return;
    }
    pool_sync(p);
    if (b->generation != p->generation) {
        drop_block(b); /* the memory went with its context */
        return;
    }
    stat_sub(&p->used_bytes, b->size);
    p->used_blocks--;
    if (p->mode == MODE_CACHE && p->holding) {
        cache_put(p, b);
    }
    else if (p->mode == MODE_DRIVER && !p->host) {
        free_ordered(p, b);
    }
    else {
        free_block(p, b);
    }
}

void
gh_pool_release(gh_allocation *a)
{
    gh_pool *p = a->pool;
    block *b = a->block;
    PyObject *type, *value, *tb;

    a->pool = NULL;
    a->block = NULL;
    PyErr_Fetch(&type, &value, &tb); /* a dealloc may run while an exception is raised */
    if (b != NULL) {
        give_back(p, b);
    }
    Py_DECREF(p);
    PyErr_Restore(type, value, tb);
}

/* ---- getting memory ---- */

/* Order stream `to` after the work queued on lane `from` so far.  The context is current.
   0, or -1 with an error. */
static int
order_after(gh_pool *p, lane *from, CUstream to)
{
    CUresult res = gh_cu.StreamQuery(from->stream);
    if (res == CUDA_SUCCESS) {
        return 0; /* idle: what used the block has finished */
    }
    if (res != CUDA_ERROR_NOT_READY) {
        return gh_raise_cuda(res, GH_CU_StreamQuery);
    }
    if (p->order_event == NULL &&
        gh_check(gh_cu.EventCreate(&p->order_event, CU_EVENT_DISABLE_TIMING), GH_CU_EventCreate) <
            0) {
        p->order_event = NULL;
        return -1;
    }
    if (gh_check(gh_cu.EventRecord(p->order_event, from->stream), GH_CU_EventRecord) < 0) {
        return -1;
    }
    return gh_check(gh_cu.StreamWaitEvent(to, p->order_event, 0), GH_CU_StreamWaitEvent);
}

/* Whether `obj` is a gpuhost Stream over someone else's handle (external_stream()), which
   does not keep the handle alive: the driver must not be asked about it later. */
static int
is_external(gh_pool *p, PyObject *obj)
{
    return obj != NULL && Py_TYPE(obj) == state_of(p)->StreamType &&
           ((gh_stream *)obj)->kind == GH_STREAM_EXTERNAL;
}

/* A cached block of `bin` from another stream's lane, once k's stream is ordered after
   it; NULL if none (*failed set if ordering raised). */
static block *
steal(gh_pool *p, int bin, const key *k, int *failed)
{
    unsigned long me = 0;
    for (Py_ssize_t i = 0; i < p->n_lanes; i++) {
        lane *l = p->lanes[i];
        if (l->bins[bin] == NULL || (l->stream == k->stream && l->tid == k->tid)) {
            continue;
        }
        if (l->tid != 0 && l->tid != (me ? me : (me = PyThread_get_thread_ident()))) {
            continue; /* another thread's per-thread stream: not reachable from here */
        }
        if (is_external(p, l->stream_obj)) {
            continue; /* its handle is someone else's and may be dead: only it reuses these */
        }
        if (order_after(p, l, k->stream) < 0) {
            *failed = 1;
            return NULL;
        }
        return pop_block(p, l, bin);
    }
    return NULL;
}

static void
collect_garbage(void)
{
    PyObject *res = gh_call_python("gc", "collect", NULL, NULL);
    if (res == NULL) {
        PyErr_Clear();
    }
    Py_XDECREF(res);
}

/* A dict of the pool's statistics, or NULL. */
static PyObject *
stats_dict(gh_pool *p)
{
    return Py_BuildValue("{s:n,s:n,s:n,s:n,s:n,s:n,s:s}", "used_bytes", (Py_ssize_t)p->used_bytes,
                         "used_blocks", p->used_blocks, "free_bytes", (Py_ssize_t)p->held_bytes,
                         "free_blocks", p->held_blocks, "total_bytes",
                         (Py_ssize_t)(p->used_bytes + p->held_bytes), "limit", (Py_ssize_t)p->limit,
                         "mode", mode_names[p->mode]);
}

/* Raise CudaOutOfMemoryError for `requested` bytes, with the pool's statistics in the
   message and as .pool_stats; -1. */
static int
raise_oom(gh_pool *p, size_t requested, gh_cu_id id, int over_limit)
{
    char detail[400], limit[80] = "";
    PyObject *type, *value, *tb, *stats;

    if (p->limit) {
        snprintf(limit, sizeof(limit), "%s %zu bytes", over_limit ? "over its limit of" : "limit",
                 p->limit);
    }
    snprintf(detail, sizeof(detail),
             "the pool (%s mode) has %zu bytes in use in %zd blocks and holds %zu bytes in %zd "
             "free blocks%s%s",
             mode_names[p->mode], p->used_bytes, p->used_blocks, p->held_bytes, p->held_blocks,
             limit[0] ? ", " : "", limit);
    gh_raise_oom_detail(p->context, p->host ? "pinned" : "device", requested, id, detail);
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    stats = stats_dict(p);
    if (value != NULL && stats != NULL && PyObject_SetAttrString(value, "pool_stats", stats) < 0) {
        PyErr_Clear();
    }
    Py_XDECREF(stats);
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
    return -1;
}

/* New memory from the backing Python allocator: 0, 1 (out of memory) or -1 (raised).  Its
   result gives the address as an int .ptr (CuPy's MemoryPointer) or int() (pycuda's). */
static int
obtain_backed(gh_pool *p, block *b)
{
    PyObject *obj = NULL, *ptr = NULL, *n = PyLong_FromSize_t(b->size);
    unsigned long long addr = 0;

    if (n != NULL) {
        obj = PyObject_CallOneArg(p->backing, n);
        Py_DECREF(n);
    }
    if (obj == NULL) {
        if (PyErr_ExceptionMatches(PyExc_MemoryError)) {
            PyErr_Clear();
            return 1;
        }
        return -1;
    }
    ptr = PyObject_GetAttrString(obj, "ptr");
    if (ptr == NULL) {
        PyErr_Clear();
        ptr = Py_TYPE(obj)->tp_as_number && Py_TYPE(obj)->tp_as_number->nb_int ? PyNumber_Long(obj)
                                                                               : NULL;
    }
    if (ptr != NULL && PyLong_Check(ptr)) {
        addr = PyLong_AsUnsignedLongLong(ptr);
    }
    else if (!PyErr_Occurred()) {
        PyErr_Format(PyExc_TypeError,
                     "the pool's allocator must return an object with an int .ptr or int(), "
                     "not %s",
                     Py_TYPE(obj)->tp_name);
    }
    Py_XDECREF(ptr);
    if (PyErr_Occurred()) {
        Py_DECREF(obj);
        return -1;
    }
    if (p->host) {
        b->host = (void *)(uintptr_t)addr;
    }
    else {
        b->dptr = (CUdeviceptr)addr;
    }
    b->backing = obj;
    return 0;
}

/* cuMemAlloc and cuMemHostAlloc are "unsafe" while a stream captures in global mode: the
   pool growing for a capture must not break it, so around them this thread's capture mode
   is relaxed (as CuPy's default mode and PyTorch's allocator do).  The previous mode, to
   restore; -1 when the driver refused the exchange. */
static int
relax_capture(void)
{
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    return gh_cu.ThreadExchangeStreamCaptureMode(&mode) == CUDA_SUCCESS ? (int)mode : -1;
}

static void
restore_capture(int previous)
{
    CUstreamCaptureMode mode = (CUstreamCaptureMode)previous;
    if (previous >= 0) {
        gh_cu.ThreadExchangeStreamCaptureMode(&mode);
    }
}

/* New memory for `b` from the driver (or the backing allocator); the context is current.
   0, 1 (out of memory: *id says which call) or -1 (another error, raised). */
static int
obtain_once(gh_pool *p, block *b, gh_cu_id *id)
{
    CUresult res;
    if (p->backing != NULL) {
        *id = GH_CU_MemAlloc;
        return obtain_backed(p, b);
    }
    if (p->host) {
        int previous = relax_capture();
        *id = GH_CU_MemHostAlloc;
        Py_BEGIN_ALLOW_THREADS
        res = gh_cu.MemHostAlloc(&b->host, b->size, p->host_flags);
        Py_END_ALLOW_THREADS
        restore_capture(previous);
        if (res == CUDA_SUCCESS && (p->host_flags & CU_MEMHOSTALLOC_DEVICEMAP)) {
            *id = GH_CU_MemHostGetDevicePointer;
            res = gh_cu.MemHostGetDevicePointer(&b->dptr, b->host, 0);
            if (res != CUDA_SUCCESS) {
                gh_cu.MemFreeHost(b->host);
                b->host = NULL;
            }
        }
    }
    else if (p->mode == MODE_DRIVER) {
        /* With the GIL: it never waits for queued work, and it is this mode's hot path. */
        *id = GH_CU_MemAllocAsync;
        res = gh_cu.MemAllocAsync(&b->dptr, b->size, b->stream);
    }
    else {
        int previous = relax_capture();
        *id = GH_CU_MemAlloc;
        Py_BEGIN_ALLOW_THREADS
        res = gh_cu.MemAlloc(&b->dptr, b->size);
        Py_END_ALLOW_THREADS
        restore_capture(previous);
    }
    if (res == CUDA_ERROR_OUT_OF_MEMORY) {
        return 1;
    }
    return gh_check(res, *id);
}

static int
over_limit(gh_pool *p, size_t size)
{
    return p->limit != 0 && p->used_bytes + p->held_bytes + size > p->limit;
}

/* New memory for `b`, with the out-of-memory policy around it; 0 or -1 with an error. */
static int
obtain(gh_pool *p, block *b, size_t requested)
{
    gh_cu_id id = GH_CU_MemAlloc;
    int got;

    if (over_limit(p, b->size)) {
        release_held(p, NULL);
        if (over_limit(p, b->size)) {
            return raise_oom(p, requested, id, 1);
        }
    }
    if (!p->host && p->backing == NULL && b->size > p->context->device->total_memory) {
        /* More than the device has: the driver would take long to refuse it, and giving
           cached memory back and collecting garbage (slow in a big process) cannot help. */
        return raise_oom(p, requested, id, 0);
    }
    p->used_bytes += b->size; /* counted now: other threads run while the GIL is let go */
    p->used_blocks++;
    got = obtain_once(p, b, &id);
    if (got == 1) {
        release_context(p);
        collect_garbage();
        release_context(p);
        got = obtain_once(p, b, &id);
    }
    if (got != 0) {
        stat_sub(&p->used_bytes, b->size);
        p->used_blocks--;
        return got == 1 ? raise_oom(p, requested, id, 0) : -1;
    }
    if (p->generation != p->context->generation) {
        forget(p); /* the context was reset meanwhile */
        p->used_bytes += b->size;
        p->used_blocks++;
    }
    b->generation = p->generation;
    return 0;
}

/* A block for `size` bytes ordered on k: new memory, or (cache) another stream's. */
static block *
take_slow(gh_pool *p, size_t size, const key *k)
{
    int failed = 0, bin = p->mode == MODE_CACHE ? bin_of(size) : 0;
    block *b = NULL;

    /* No stealing for a stream gpuhost captures on: ordering it after another stream's
       work is a dependency on work outside the capture, which the driver refuses. */
    if (p->mode == MODE_CACHE && capturing_stream(p, k->obj) == NULL &&
        (b = steal(p, bin, k, &failed)) != NULL) {
        b->stream = k->stream; /* it belongs to k's stream now */
        b->tid = k->tid;
        p->used_bytes += b->size;
        p->used_blocks++;
        return b;
    }
    if (failed) {
        return NULL;
    }
    b = PyMem_Calloc(1, sizeof(*b));
    if (b == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    b->bin = bin;
    b->size = p->mode == MODE_CACHE ? bin_size(bin) : size;
    b->stream = k->stream;
    b->tid = k->tid;
    if (obtain(p, b, size) < 0) {
        PyMem_Free(b);
        return NULL;
    }
    return b;
}

/* A block of at least `size` bytes ordered on k; NULL with an error set. */
static block *
take(gh_pool *p, size_t size, const key *k)
{
    block *b;
    int pushed;

    if (p->mode == MODE_CACHE) { /* the hot path: a block of this stream, no driver call */
        lane *own = find_lane(p, k->stream, k->tid, 0);
        int bin = bin_of(size);
        if (own != NULL && own->bins[bin] != NULL) {
            b = pop_block(p, own, bin);
            p->used_bytes += b->size;
            p->used_blocks++;
            return b;
        }
    }
    if (gh_context_enter(p->context, &pushed) < 0) {
        return NULL;
    }
    pool_sync(p);
    b = take_slow(p, size, k);
    if (gh_context_leave(p->context, pushed) < 0) {
        if (b != NULL) {
            give_back(p, b); /* not handed out after all */
        }
        return NULL;
    }
    return b;
}

/* The key of a stream= argument for pool `p`; 0 or -1. */
static int
key_from(gh_pool *p, PyObject *stream, key *k)
{
    gh_stream_ref ref;

    k->stream = NULL;
    k->tid = 0;
    k->obj = NULL;
    if (p->host || stream == NULL || stream == Py_None) {
        return 0;
    }
    if (gh_stream_resolve(state_of(p), stream, &ref) < 0) {
        return -1;
    }
    if (ref.context != NULL && ref.context != p->context) {
        return gh_raise("CudaDriverError",
                        "the pool allocates on device %d but the stream is device %d's",
                        p->context->device->id, ref.context->device->id);
    }
    if (ref.handle == CU_STREAM_LEGACY || ref.handle == NULL) {
        return 0;
    }
    k->stream = ref.handle;
    k->tid = ref.handle == CU_STREAM_PER_THREAD ? PyThread_get_thread_ident() : 0;
    k->obj = stream;
    return 0;
}

/* An Allocation of `size` bytes from pool `p`, ordered on `stream`; new reference or NULL. */
static gh_allocation *
pool_allocate(gh_pool *p, size_t size, PyObject *stream)
{
    gh_state *st = state_of(p);
    gh_alloc_kind kind = !p->host                                      ? GH_ALLOC_DEVICE
                         : (p->host_flags & CU_MEMHOSTALLOC_DEVICEMAP) ? GH_ALLOC_MAPPED
                                                                       : GH_ALLOC_PINNED;
    gh_allocation *a;
    block *b;
    key k;

    if (size == 0) {
        return gh_allocation_new(st, p->context, kind, 0);
    }
    if (size > MAX_SIZE) {
        raise_oom(p, size, GH_CU_MemAlloc, 0);
        return NULL;
    }
    if (key_from(p, stream, &k) < 0) {
        return NULL;
    }
    pool_sync(p);
    b = take(p, size, &k);
    if (b == NULL) {
        return NULL;
    }
    a = gh_allocation_new(st, p->context, kind, size);
    if (a == NULL) {
        give_back(p, b);
        return NULL;
    }
    b->stream_obj = Py_XNewRef(k.obj);
    a->dptr = b->dptr;
    a->host = b->host;
    a->generation = b->generation;
    a->pool = (gh_pool *)Py_NewRef(p);
    a->block = b;
    /* Allocated on a stream gpuhost captures on: the graph owns it (see graphs.py). */
    if (p->mode == MODE_CACHE && capturing_stream(p, k.obj) != NULL &&
        PyList_Append(((gh_stream *)k.obj)->capture, (PyObject *)a) < 0) {
        Py_DECREF(a);
        return NULL;
    }
    return a;
}

/* ---- making pools ---- */

/* Driver mode: the device's default pool, release threshold raised.  1 ready, 0 the
   device has no memory pools, -1 error. */
static int
setup_driver_pool(gh_pool *p)
{
    CUdevice dev = p->context->device->handle;
    cuuint64_t threshold = UINT64_MAX;
    int supported = 0;

    if (gh_check(
            gh_cu.DeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, dev),
            GH_CU_DeviceGetAttribute) < 0) {
        return -1;
    }
    if (!supported) {
        return 0;
    }
    if (gh_check(gh_cu.DeviceGetDefaultMemPool(&p->mempool, dev), GH_CU_DeviceGetDefaultMemPool) <
            0 ||
        gh_check(
            gh_cu.MemPoolSetAttribute(p->mempool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold),
            GH_CU_MemPoolSetAttribute) < 0) {
        return -1;
    }
    return 1;
}

/* The mode GPUHOST_ALLOCATOR names (default cache); -1 with ValueError for another value. */
static int
mode_from_env(pool_mode *mode)
{
    const char *value = getenv("GPUHOST_ALLOCATOR");
    *mode = MODE_CACHE;
    if (value == NULL || value[0] == '\0') {
        return 0;
    }
    for (int m = MODE_CACHE; m <= MODE_PLAIN; m++) {
        if (strcmp(value, mode_names[m]) == 0) {
            *mode = (pool_mode)m;
            return 0;
        }
    }
    PyErr_Format(PyExc_ValueError,
                 "GPUHOST_ALLOCATOR must be 'cache', 'driver' or 'plain', not '%s'", value);
    return -1;
}

/* A new pool in `ctx` (activated); `fallback`: a driver-mode pool on a device without memory
   pools becomes a cache pool, with a warning, instead of raising.  New reference or NULL. */
static gh_pool *
pool_new(gh_state *st, PyTypeObject *type, gh_context *ctx, pool_mode mode, int host,
         unsigned int host_flags, PyObject *backing, int fallback)
{
    gh_pool *p = (gh_pool *)type->tp_alloc(type, 0);
    int ready;

    if (p == NULL) {
        return NULL;
    }
    p->context = (gh_context *)Py_NewRef(ctx);
    p->generation = ctx->generation;
    p->mode = mode;
    p->host = host;
    p->host_flags = host_flags;
    p->holding = 1;
    p->backing = Py_XNewRef(backing);
    p->next_pool = st->pools;
    st->pools = p;
    if (mode == MODE_DRIVER) {
        int pushed;
        if (gh_context_enter(ctx, &pushed) < 0) {
            Py_DECREF(p);
            return NULL;
        }
        ready = setup_driver_pool(p);
        if (gh_context_leave(ctx, pushed) < 0 || ready < 0) {
            Py_DECREF(p);
            return NULL;
        }
        if (!ready && !fallback) {
            Py_DECREF(p);
            PyErr_Format(PyExc_ValueError,
                         "device %d has no stream-ordered memory pools: use mode 'cache'",
                         ctx->device->id);
            return NULL;
        }
        if (!ready) {
            p->mode = MODE_CACHE;
            if (PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                                 "GPUHOST_ALLOCATOR=driver: device %d has no stream-ordered "
                                 "memory pools; using gpuhost's caching pool",
                                 ctx->device->id) < 0) {
                Py_DECREF(p);
                return NULL;
            }
        }
    }
    return p;
}

/* Borrowed: ctx's default device pool, made on first use. */
static gh_pool *
default_pool(gh_state *st, gh_context *ctx)
{
    int id = ctx->device->id;
    PyObject *item;
    gh_pool *p;
    pool_mode mode;

    if (st->default_pools != NULL && id < PyList_GET_SIZE(st->default_pools)) {
        item = PyList_GET_ITEM(st->default_pools, id);
        if (item != Py_None) {
            return (gh_pool *)item;
        }
    }
    if (st->default_pools == NULL) {
        int count = gh_device_count();
        if (count < 0 || (st->default_pools = PyList_New(count)) == NULL) {
            return NULL;
        }
        for (int i = 0; i < count; i++) {
            PyList_SET_ITEM(st->default_pools, i, Py_NewRef(Py_None));
        }
    }
    if (id >= PyList_GET_SIZE(st->default_pools)) {
        PyErr_Format(PyExc_RuntimeError, "device %d is not among the %zd devices", id,
                     PyList_GET_SIZE(st->default_pools));
        return NULL;
    }
    if (mode_from_env(&mode) < 0 || gh_context_activate(ctx) < 0) {
        return NULL;
    }
    p = pool_new(st, st->PoolType, ctx, mode, 0, 0, NULL, 1);
    if (p == NULL) {
        return NULL;
    }
    PyList_SetItem(st->default_pools, id, (PyObject *)p); /* steals p */
    return p;
}

gh_allocation *
gh_pool_device_alloc(gh_state *st, gh_context *ctx, size_t size, PyObject *stream)
{
    gh_pool *p = default_pool(st, ctx);
    return p != NULL ? pool_allocate(p, size, stream) : NULL;
}

/* ---- the Python type ---- */

static PyObject *
pool_tp_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"kind", "mode", "host_flags", "allocator", NULL};
    gh_state *st = gh_state_of_type(type);
    const char *kind = "device", *mode_name = NULL;
    unsigned int host_flags = 0;
    PyObject *allocator = Py_None;
    pool_mode mode = MODE_CACHE;
    gh_context *ctx;
    gh_pool *p;
    int host;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|sz$IO:Pool", kwlist, &kind, &mode_name,
                                     &host_flags, &allocator)) {
        return NULL;
    }
    if (strcmp(kind, "device") != 0 && strcmp(kind, "pinned") != 0) {
        PyErr_Format(PyExc_ValueError, "kind must be 'device' or 'pinned', not '%s'", kind);
        return NULL;
    }
    host = kind[0] == 'p';
    if (mode_name == NULL) {
        if (!host && mode_from_env(&mode) < 0) {
            return NULL;
        }
    }
    else {
        for (mode = MODE_CACHE; mode <= MODE_PLAIN; mode++) {
            if (strcmp(mode_name, mode_names[mode]) == 0) {
                break;
            }
        }
        if (mode > MODE_PLAIN) {
            PyErr_Format(PyExc_ValueError, "mode must be 'cache', 'driver' or 'plain', not '%s'",
                         mode_name);
            return NULL;
        }
    }
    if (host && mode == MODE_DRIVER) {
        PyErr_SetString(PyExc_ValueError, "pinned memory pools have no 'driver' mode");
        return NULL;
    }
    if (allocator != Py_None && (mode == MODE_DRIVER || !PyCallable_Check(allocator))) {
        PyErr_SetString(PyExc_ValueError, mode == MODE_DRIVER
                                              ? "a 'driver' mode pool takes no allocator"
                                              : "allocator must be callable");
        return NULL;
    }
    if (!host && host_flags != 0) {
        PyErr_SetString(PyExc_ValueError, "host_flags are for pinned pools");
        return NULL;
    }
    ctx = gh_current_context(st, -1);
    if (ctx == NULL) {
        return NULL;
    }
    p = pool_new(st, type, ctx, mode, host, host_flags, allocator == Py_None ? NULL : allocator,
                 mode_name == NULL);
    Py_DECREF(ctx);
    return (PyObject *)p;
}

static void
pool_dealloc(gh_pool *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    gh_state *st = state_of(self);
    gh_pool **link;

    if (self->mode != MODE_DRIVER) {
        release_held(self, NULL); /* (a driver pool's memory stays with the driver) */
    }
    for (link = &st->pools; *link != NULL; link = &(*link)->next_pool) {
        if (*link == self) {
            *link = self->next_pool;
            break;
        }
    }
    if (self->order_event != NULL) {
        gh_release(self->context, self->generation, GH_CU_EventDestroy, self->order_event);
    }
    for (Py_ssize_t i = 0; i < self->n_lanes; i++) {
        PyMem_Free(self->lanes[i]); /* all empty now */
    }
    PyMem_Free(self->lanes);
    Py_XDECREF(self->backing);
    Py_DECREF(self->context);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

/* Parse (size, stream=None) from a vectorcall; 0 or -1. */
static int
parse_size_stream(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, const char *fname,
                  size_t *size, PyObject **stream)
{
    Py_ssize_t n, nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;

    *stream = NULL;
    if (nargs < 1 || nargs + nkw > 2) {
        PyErr_Format(PyExc_TypeError, "%s() takes a size and an optional stream", fname);
        return -1;
    }
    if (nargs == 2) {
        *stream = args[1];
    }
    for (Py_ssize_t i = 0; i < nkw; i++) {
        if (!PyUnicode_Check(PyTuple_GET_ITEM(kwnames, i)) ||
            PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), "stream") != 0 ||
            nargs == 2) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument %R", fname,
                         PyTuple_GET_ITEM(kwnames, i));
            return -1;
        }
        *stream = args[nargs + i];
    }
    n = PyLong_AsSsize_t(args[0]);
    if (n == -1 && PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Format(PyExc_TypeError, "%s() size must be an int, not %s", fname,
                         Py_TYPE(args[0])->tp_name);
        }
        return -1;
    }
    if (n < 0) {
        PyErr_Format(PyExc_ValueError, "allocation size must not be negative, not %zd", n);
        return -1;
    }
    *size = (size_t)n;
    return 0;
}

static PyObject *
pool_allocate_meth(gh_pool *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    size_t size;
    PyObject *stream;
    if (parse_size_stream(args, nargs, kwnames, "allocate", &size, &stream) < 0) {
        return NULL;
    }
    return (PyObject *)pool_allocate(self, size, stream);
}

/* allocate_pointer(size, stream, cls): allocate(size, stream) wrapped in a new `cls`
   instance (a MemoryPointer: its `mem` the Allocation, its `ptr` the address), made here
   because CuPy's MemoryPool.malloc is a hot path. */
static PyObject *
pool_allocate_pointer(gh_pool *self, PyObject *const *args, Py_ssize_t nargs)
{
    static PyObject *mem_name, *ptr_name;
    PyTypeObject *cls;
    PyObject *a, *ptr, *obj;
    size_t size;
    PyObject *stream;

    if (nargs != 3 || !PyType_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "allocate_pointer() takes a size, a stream and a class");
        return NULL;
    }
    if ((mem_name == NULL && (mem_name = PyUnicode_InternFromString("mem")) == NULL) ||
        (ptr_name == NULL && (ptr_name = PyUnicode_InternFromString("ptr")) == NULL) ||
        parse_size_stream(args, 2, NULL, "allocate_pointer", &size, &stream) < 0) {
        return NULL;
    }
    cls = (PyTypeObject *)args[2];
    if ((a = (PyObject *)pool_allocate(self, size, stream == Py_None ? NULL : stream)) == NULL) {
        return NULL;
    }
    ptr = PyLong_FromUnsignedLongLong(((gh_allocation *)a)->dptr);
    obj = ptr != NULL ? cls->tp_alloc(cls, 0) : NULL;
    if (obj != NULL &&
        (PyObject_SetAttr(obj, mem_name, a) < 0 || PyObject_SetAttr(obj, ptr_name, ptr) < 0)) {
        Py_CLEAR(obj);
    }
    Py_XDECREF(ptr);
    Py_DECREF(a);
    return obj;
}

static PyObject *
pool_free_all_blocks(gh_pool *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"stream", NULL};
    PyObject *stream = Py_None;
    key k;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:free_all_blocks", kwlist, &stream)) {
        return NULL;
    }
    if (stream == Py_None) {
        release_held(self, NULL);
    }
    else {
        if (key_from(self, stream, &k) < 0) {
            return NULL;
        }
        release_held(self, &k);
    }
    Py_RETURN_NONE;
}

static PyObject *
pool_stop_holding(gh_pool *self, PyObject *Py_UNUSED(ignored))
{
    self->holding = 0;
    release_held(self, NULL);
    Py_RETURN_NONE;
}

static PyObject *
pool_bin_number(gh_pool *Py_UNUSED(self), PyObject *arg)
{
    Py_ssize_t size = PyLong_AsSsize_t(arg);
    if (size == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (size < 0 || (size_t)size > MAX_SIZE) {
        PyErr_Format(PyExc_ValueError, "size must be from 0 to 2**62, not %zd", size);
        return NULL;
    }
    return PyLong_FromLong(bin_of((size_t)size));
}

static PyObject *
pool_alloc_size(gh_pool *Py_UNUSED(self), PyObject *arg)
{
    long bin = PyLong_AsLong(arg);
    if (bin == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (bin < 0 || bin >= N_BINS) {
        PyErr_Format(PyExc_ValueError, "bin must be from 0 to %d, not %ld", N_BINS - 1, bin);
        return NULL;
    }
    return PyLong_FromSize_t(bin_size((int)bin));
}

/* Driver mode: bytes the driver's pool reserves beyond what is in use; 0 if unknown. */
static size_t
driver_pool_free(gh_pool *p)
{
    cuuint64_t reserved = 0, used = 0;
    if (gh_cu.MemPoolGetAttribute(p->mempool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) !=
            CUDA_SUCCESS ||
        gh_cu.MemPoolGetAttribute(p->mempool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used) !=
            CUDA_SUCCESS) {
        return 0;
    }
    return reserved > used ? (size_t)(reserved - used) : 0;
}

static size_t
free_bytes_of(gh_pool *p)
{
    pool_sync(p);
    return p->mode == MODE_DRIVER ? driver_pool_free(p) : p->held_bytes;
}

static PyObject *
pool_get_used_bytes(gh_pool *self, void *Py_UNUSED(c))
{
    pool_sync(self);
    return PyLong_FromSize_t(self->used_bytes);
}

static PyObject *
pool_get_free_bytes(gh_pool *self, void *Py_UNUSED(c))
{
    return PyLong_FromSize_t(free_bytes_of(self));
}

static PyObject *
pool_get_total_bytes(gh_pool *self, void *Py_UNUSED(c))
{
    size_t free_bytes = free_bytes_of(self);
    return PyLong_FromSize_t(self->used_bytes + free_bytes);
}

static PyObject *
pool_get_n_free_blocks(gh_pool *self, void *Py_UNUSED(c))
{
    pool_sync(self);
    return PyLong_FromSsize_t(self->held_blocks);
}

static PyObject *
pool_get_n_used_blocks(gh_pool *self, void *Py_UNUSED(c))
{
    pool_sync(self);
    return PyLong_FromSsize_t(self->used_blocks);
}

static PyObject *
pool_get_limit(gh_pool *self, void *Py_UNUSED(c))
{
    return PyLong_FromSize_t(self->limit);
}

static int
pool_set_limit(gh_pool *self, PyObject *value, void *Py_UNUSED(c))
{
    Py_ssize_t limit = 0;
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "the limit cannot be deleted; set 0 for none");
        return -1;
    }
    if (value != Py_None) {
        limit = PyLong_AsSsize_t(value);
        if (limit == -1 && PyErr_Occurred()) {
            return -1;
        }
        if (limit < 0) {
            PyErr_Format(PyExc_ValueError, "the limit must not be negative, not %zd", limit);
            return -1;
        }
    }
    self->limit = (size_t)limit;
    return 0;
}

static PyObject *
pool_get_mode(gh_pool *self, void *Py_UNUSED(c))
{
    return PyUnicode_FromString(mode_names[self->mode]);
}

static PyObject *
pool_get_kind(gh_pool *self, void *Py_UNUSED(c))
{
    return PyUnicode_FromString(self->host ? "pinned" : "device");
}

static PyObject *
pool_get_host_flags(gh_pool *self, void *Py_UNUSED(c))
{
    return PyLong_FromUnsignedLong(self->host_flags);
}

static PyObject *
pool_get_context(gh_pool *self, void *Py_UNUSED(c))
{
    return Py_NewRef(self->context);
}

static PyObject *
pool_get_holding(gh_pool *self, void *Py_UNUSED(c))
{
    return PyBool_FromLong(self->holding);
}

static PyObject *
pool_get_stats(gh_pool *self, void *Py_UNUSED(c))
{
    pool_sync(self);
    return stats_dict(self);
}

static PyObject *
pool_repr(gh_pool *self)
{
    pool_sync(self);
    return PyUnicode_FromFormat("<gpuhost.Pool of %s memory on device %d, %s mode: %zu bytes in "
                                "use in %zd blocks, %zu bytes held in %zd blocks>",
                                self->host ? "pinned" : "device", self->context->device->id,
                                mode_names[self->mode], self->used_bytes, self->used_blocks,
                                self->held_bytes, self->held_blocks);
}

/* (label, value) rows for the displays: the pool's statistics. New list or NULL. */
static PyObject *
pool_display_rows(gh_pool *self)
{
    gh_device *dev = self->context->device;
    PyObject *used = NULL, *held = NULL, *limit = NULL, *device = NULL, *rows = NULL;

    pool_sync(self);
    if ((used = gh_format_bytes(self->used_bytes)) == NULL ||
        (held = gh_format_bytes(self->held_bytes)) == NULL ||
        (limit = self->limit ? gh_format_bytes(self->limit) : PyUnicode_FromString("none")) ==
            NULL ||
        (device = PyUnicode_FromFormat("%d (%U)", dev->id, dev->name)) == NULL) {
        goto done;
    }
    rows = Py_BuildValue(
        "[(ss)(ss)(sO)(sN)(sN)(sO)]", "kind", self->host ? "pinned" : "device", "mode",
        mode_names[self->mode], "device", device, "in use",
        PyUnicode_FromFormat("%U in %zd blocks", used, self->used_blocks), "held for reuse",
        PyUnicode_FromFormat("%U in %zd blocks", held, self->held_blocks), "limit", limit);
done:
    Py_XDECREF(used);
    Py_XDECREF(held);
    Py_XDECREF(limit);
    Py_XDECREF(device);
    return rows;
}

static PyObject *
pool_repr_html(gh_pool *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *rows = pool_display_rows(self);
    return rows ? gh_repr_html(rows, PyUnicode_FromString("gpuhost.Pool")) : NULL;
}

static PyObject *
pool_repr_pretty(gh_pool *self, PyObject *args)
{
    return gh_repr_pretty((PyObject *)self, args, pool_display_rows(self));
}

static PyMethodDef pool_methods[] = {
    {"allocate", (PyCFunction)(void (*)(void))pool_allocate_meth, METH_FASTCALL | METH_KEYWORDS,
     "allocate($self, /, size, stream=None)\n--\n\n"
     "Allocate memory from the pool.\n\n"
     "The memory goes back to the pool when the Allocation dies or is closed.\n\n"
     "Parameters\n"
     "----------\n"
     "size : int\n"
     "    Bytes; the pool may round the block up (in 'cache' mode, to its size class).\n"
     "stream : Stream, optional\n"
     "    The stream the memory is used on, which orders its reuse; None: the legacy\n"
     "    default stream.\n\n"
     "Returns\n"
     "-------\n"
     "Allocation\n\n"
     "Raises\n"
     "------\n"
     "CudaOutOfMemoryError\n"
     "    A MemoryError, with the pool's statistics and the device's free memory.\n\n"
     "Examples\n"
     "--------\n"
     ">>> pool = gpuhost._core.Pool('device')\n"
     ">>> a = pool.allocate(1000)\n"
     ">>> a.size, pool.used_bytes\n"
     "(1000, 1024)\n"
     ">>> a.close()\n"
     ">>> pool.used_bytes, pool.free_bytes\n"
     "(0, 1024)"},
    {"allocate_pointer", (PyCFunction)(void (*)(void))pool_allocate_pointer, METH_FASTCALL,
     "allocate_pointer($self, size, stream, cls, /)\n--\n\n"
     "allocate(size, stream) as a new `cls` instance whose `mem` is the Allocation and "
     "`ptr` its address (gpuhost.memory's MemoryPointer, made in C for MemoryPool.malloc)."},
    {"free_all_blocks", (PyCFunction)(void (*)(void))pool_free_all_blocks,
     METH_VARARGS | METH_KEYWORDS,
     "free_all_blocks($self, /, stream=None)\n--\n\n"
     "Give the blocks the pool holds for reuse back to the device.\n\n"
     "In 'driver' mode, the context is synchronized and the driver's pool trimmed. Inside\n"
     "defer_cleanup() the frees wait for the end of the block. Blocks in use are not\n"
     "affected.\n\n"
     "Parameters\n"
     "----------\n"
     "stream : Stream, optional\n"
     "    Free only the blocks freed on this stream.\n\n"
     "Examples\n"
     "--------\n"
     ">>> pool = gpuhost._core.Pool('device')\n"
     ">>> pool.allocate(1 << 20).close()\n"
     ">>> pool.free_bytes\n"
     "1048576\n"
     ">>> pool.free_all_blocks()\n"
     ">>> pool.free_bytes\n"
     "0"},
    {"stop_holding", (PyCFunction)pool_stop_holding, METH_NOARGS,
     "stop_holding($self, /)\n--\n\n"
     "Stop holding freed blocks for reuse (pycuda's DeviceMemoryPool.stop_holding).\n\n"
     "The blocks held now are freed, and from now on a block that comes back is freed at once\n"
     "instead of being kept; `holding` becomes False. For a pool about to be dropped, or to\n"
     "give memory back while its allocations live on.\n\n"
     "Examples\n"
     "--------\n"
     ">>> pool = gpuhost._core.Pool('device')\n"
     ">>> a, b = pool.allocate(1000), pool.allocate(1000)\n"
     ">>> b.close()\n"
     ">>> pool.n_free_blocks\n"
     "1\n"
     ">>> pool.stop_holding()\n"
     ">>> pool.holding, pool.n_free_blocks\n"
     "(False, 0)\n"
     ">>> a.close()  # freed at once\n"
     ">>> pool.free_bytes\n"
     "0"},
    {"bin_number", (PyCFunction)pool_bin_number, METH_O,
     "bin_number($self, size, /)\n--\n\n"
     "The size class that a request of `size` bytes falls in (pycuda's name).\n\n"
     "The 'cache' mode rounds a request up to its class's size (alloc_size()): 512 bytes,\n"
     "then 8 classes per doubling.\n\n"
     "Parameters\n"
     "----------\n"
     "size : int\n"
     "    Bytes, 0 to 2**62.\n\n"
     "Returns\n"
     "-------\n"
     "int\n"
     "    The class number.\n\n"
     "Raises\n"
     "------\n"
     "ValueError\n"
     "    For a size out of range.\n\n"
     "Examples\n"
     "--------\n"
     ">>> pool = gpuhost._core.Pool('device')\n"
     ">>> pool.bin_number(1000), pool.bin_number(4096)\n"
     "(1, 7)\n"
     ">>> pool.alloc_size(pool.bin_number(1000))\n"
     "1024"},
    {"alloc_size", (PyCFunction)pool_alloc_size, METH_O,
     "alloc_size($self, bin, /)\n--\n\n"
     "The bytes a block of size class `bin` has (pycuda's name).\n\n"
     "Parameters\n"
     "----------\n"
     "bin : int\n"
     "    A class number, as bin_number() gives.\n\n"
     "Returns\n"
     "-------\n"
     "int\n\n"
     "Raises\n"
     "------\n"
     "ValueError\n"
     "    For a class number out of range.\n\n"
     "Examples\n"
     "--------\n"
     ">>> pool = gpuhost._core.Pool('device')\n"
     ">>> [pool.alloc_size(b) for b in range(4)]\n"
     "[512, 1024, 1536, 2048]"},
    {"_repr_html_", (PyCFunction)pool_repr_html, METH_NOARGS,
     "_repr_html_($self, /)\n--\n\nAn HTML table of the pool's statistics, for Jupyter."},
    {"_repr_pretty_", (PyCFunction)pool_repr_pretty, METH_VARARGS,
     "_repr_pretty_($self, p, cycle, /)\n--\n\n"
     "IPython's pretty printer: the repr, then the statistics one per line."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef pool_getset[] = {
    {"used_bytes", (getter)pool_get_used_bytes, NULL,
     "Bytes of the blocks in use (int).\n\n"
     "In 'cache' mode a block counts its class's size (alloc_size()), not the bytes asked\n"
     "for.\n\n"
     "Examples\n"
     "--------\n"
     ">>> pool = gpuhost._core.Pool('device')\n"
     ">>> a = pool.allocate(1000)\n"
     ">>> pool.used_bytes\n"
     "1024",
     NULL},
    {"free_bytes", (getter)pool_get_free_bytes, NULL,
     "Bytes the pool holds for reuse (int).\n\n"
     "In 'driver' mode: what the driver's pool reserves beyond what is in use.\n"
     "free_all_blocks() gives them back.\n\n"
     "Examples\n"
     "--------\n"
     ">>> pool = gpuhost._core.Pool('device')\n"
     ">>> pool.allocate(1000).close()\n"
     ">>> pool.free_bytes\n"
     "1024",
     NULL},
    {"total_bytes", (getter)pool_get_total_bytes, NULL,
     "Bytes the pool has taken from the device: used_bytes + free_bytes (int).\n\n"
     "Examples\n"
     "--------\n"
     ">>> pool = gpuhost._core.Pool('device')\n"
     ">>> a, b = pool.allocate(1000), pool.allocate(3000)\n"
     ">>> b.close()\n"
     ">>> pool.used_bytes, pool.free_bytes, pool.total_bytes\n"
     "(1024, 3072, 4096)",
     NULL},
    {"n_free_blocks", (getter)pool_get_n_free_blocks, NULL,
     "The number of blocks held for reuse (int).\n\n"
     "0 in 'driver' mode, where the driver keeps them.\n\n"
     "Examples\n"
     "--------\n"
     ">>> pool = gpuhost._core.Pool('device')\n"
     ">>> pool.allocate(1000).close()\n"
     ">>> pool.n_free_blocks\n"
     "1",
     NULL},
    {"n_used_blocks", (getter)pool_get_n_used_blocks, NULL,
     "The number of blocks in use (int).\n\n"
     "Examples\n"
     "--------\n"
     ">>> pool = gpuhost._core.Pool('device')\n"
     ">>> a, b = pool.allocate(1000), pool.allocate(1000)\n"
     ">>> pool.n_used_blocks\n"
     "2",
     NULL},
    {"limit", (getter)pool_get_limit, (setter)pool_set_limit,
     "Most bytes the pool may take from the device (in use + held); 0: no limit. "
     "Settable: an allocation past it raises CudaOutOfMemoryError.",
     NULL},
    {"mode", (getter)pool_get_mode, NULL, "'cache', 'driver' or 'plain' (see Pool).", NULL},
    {"kind", (getter)pool_get_kind, NULL, "'device' or 'pinned'.", NULL},
    {"host_flags", (getter)pool_get_host_flags, NULL, "The cuMemHostAlloc flags of a pinned pool.",
     NULL},
    {"context", (getter)pool_get_context, NULL, "The Context the pool allocates in.", NULL},
    {"holding", (getter)pool_get_holding, NULL,
     "Whether the pool holds freed blocks for reuse (bool).\n\n"
     "True until stop_holding().\n\n"
     "Examples\n"
     "--------\n"
     ">>> pool = gpuhost._core.Pool('device')\n"
     ">>> pool.holding\n"
     "True",
     NULL},
    {"stats", (getter)pool_get_stats, NULL,
     "The pool's statistics as a dict.\n\n"
     "Its keys: used_bytes, used_blocks, free_bytes, free_blocks, total_bytes, limit and mode;\n"
     "a snapshot, taken when read.\n\n"
     "Examples\n"
     "--------\n"
     ">>> pool = gpuhost._core.Pool('device')\n"
     ">>> a = pool.allocate(1000)\n"
     ">>> pool.stats\n"
     "{'used_bytes': 1024, 'used_blocks': 1, 'free_bytes': 0, 'free_blocks': 0, 'total_bytes': "
     "1024, 'limit': 0, 'mode': 'cache'}",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot pool_slots[] = {
    {Py_tp_doc, "Pool(kind='device', mode=None, *, host_flags=0, allocator=None)\n--\n\n"
                "A pool of device or pinned host memory in the current context.\n\n"
                "Device arrays allocate from their context's default pool "
                "(d.owner.pool); a Pool of\nyour own keeps its memory apart.\n\n"
                "Parameters\n"
                "----------\n"
                "kind : {'device', 'pinned'}, optional\n"
                "    Device memory, or page-locked host memory (cuMemHostAlloc).\n"
                "mode : {'cache', 'driver', 'plain'}, optional\n"
                "    'cache': gpuhost's caching pool, which holds freed blocks for reuse;\n"
                "    'driver': cuMemAllocAsync on the device's default memory pool;\n"
                "    'plain': cuMemAlloc and cuMemFree each time. None: the\n"
                "    GPUHOST_ALLOCATOR environment variable's, default 'cache'.\n"
                "host_flags : int, optional\n"
                "    The cuMemHostAlloc flags of a pinned pool.\n"
                "allocator : callable, optional\n"
                "    allocator(size) makes new blocks: it returns an object with an int\n"
                "    `ptr`, kept while the block lives.\n\n"
                "Examples\n"
                "--------\n"
                ">>> pool = gpuhost._core.Pool('device', 'cache')\n"
                ">>> pool.limit = 1 << 30  # at most 1 GiB from the device\n"
                ">>> a = pool.allocate(4096)\n"
                ">>> pool.stats['used_blocks']\n"
                "1"},
    {Py_tp_new, pool_tp_new},
    {Py_tp_dealloc, pool_dealloc},
    {Py_tp_methods, pool_methods},
    {Py_tp_getset, pool_getset},
    {Py_tp_repr, pool_repr},
    {0, NULL},
};

static PyType_Spec pool_spec = {
    .name = "gpuhost.Pool",
    .basicsize = sizeof(gh_pool),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = pool_slots,
};

/* ---- module functions ---- */

/* _core.device_alloc(size, stream=None): the hot path behind device_array(). */
static PyObject *
mod_device_alloc(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    gh_state *st = gh_state_of_module(module);
    gh_context *ctx;
    gh_allocation *a;
    PyObject *stream;
    size_t size;

    if (parse_size_stream(args, nargs, kwnames, "device_alloc", &size, &stream) < 0 ||
        (ctx = gh_current_context(st, -1)) == NULL) {
        return NULL;
    }
    a = gh_pool_device_alloc(st, ctx, size, stream);
    Py_DECREF(ctx);
    return (PyObject *)a;
}

static PyObject *
mod_default_pool(PyObject *module, PyObject *args)
{
    gh_state *st = gh_state_of_module(module);
    PyObject *arg = Py_None;
    gh_context *ctx;
    gh_pool *p;

    if (!PyArg_ParseTuple(args, "|O:default_pool", &arg)) {
        return NULL;
    }
    if (arg == Py_None) {
        ctx = gh_current_context(st, -1);
    }
    else if (Py_IS_TYPE(arg, st->ContextType)) {
        ctx = (gh_context *)Py_NewRef(arg);
    }
    else {
        PyErr_Format(PyExc_TypeError, "default_pool() takes a Context or None, not %s",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    if (ctx == NULL) {
        return NULL;
    }
    p = default_pool(st, ctx);
    Py_DECREF(ctx);
    return Py_XNewRef((PyObject *)p);
}

static PyMethodDef pool_module_methods[] = {
    {"device_alloc", (PyCFunction)(void (*)(void))mod_device_alloc, METH_FASTCALL | METH_KEYWORDS,
     "device_alloc(size, stream=None)\n--\n\n"
     "Device memory from the current context's default pool (gpuhost internal).\n\n"
     "An Allocation of `size` bytes, ordered on `stream`; see device_array().\n\n"
     "Raises\n"
     "------\n"
     "CudaOutOfMemoryError\n"
     "    A MemoryError stating the size, the pool's statistics and the device's free\n"
     "    and total memory."},
    {"default_pool", (PyCFunction)mod_default_pool, METH_VARARGS,
     "default_pool(context=None, /)\n--\n\n"
     "The default device Pool of `context` (the current one if None).\n\n"
     "Device arrays allocate from it.\n\n"
     "Examples\n"
     "--------\n"
     ">>> pool = gpuhost._core.default_pool()\n"
     ">>> gpuhost.device_array(16, np.uint8).owner.pool is pool\n"
     "True"},
    {NULL, NULL, 0, NULL},
};

int
gh_pool_init_type(PyObject *module, gh_state *st)
{
    st->PoolType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &pool_spec, NULL);
    if (st->PoolType == NULL || PyModule_AddType(module, st->PoolType) < 0) {
        return -1;
    }
    return PyModule_AddFunctions(module, pool_module_methods);
}
