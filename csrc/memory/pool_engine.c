/* The pools' engine: size classes, the blocks and the lanes (a stream's free blocks) of a
 * pool, giving memory back (cached, freed, or held by a capture), taking it (the own
 * lane's block, another stream's once ordered after it, or new memory from pool_obtain.c),
 * and making pools (the mode, the driver's pool, each device's default pool).  How the
 * pools work, and the structs: memory_internal.h.
 */
#include "memory_internal.h"

#include <string.h>

const char *const gh_pool_mode_names[] = {"cache", "driver", "plain"};

/* ---- size classes ---- */

int
gh_pool_bin_of(size_t size)
{
    int e;
    size_t step;

    if (size <= GH_POOL_SMALL_BINS * GH_POOL_UNIT) {
        return size == 0 ? 0 : (int)((size - 1) / GH_POOL_UNIT);
    }
    e = 63 - __builtin_clzll((unsigned long long)(size - 1)); /* 2^e < size <= 2^(e+1) */
    step = (size_t)1 << (e - 3);
    return GH_POOL_SMALL_BINS + (e - 12) * GH_POOL_STEPS + (int)((size + step - 1) / step - 9);
}

size_t
gh_pool_bin_size(int bin)
{
    if (bin < GH_POOL_SMALL_BINS) {
        return (size_t)(bin + 1) * GH_POOL_UNIT;
    }
    return (size_t)(9 + (bin - GH_POOL_SMALL_BINS) % GH_POOL_STEPS)
           << (12 + (bin - GH_POOL_SMALL_BINS) / GH_POOL_STEPS - 3);
}

/* ---- blocks and lanes ---- */

/* Free a block record whose memory is gone or given away. */
static void
drop_block(gh_pool_block *b)
{
    Py_XDECREF(b->stream_obj);
    Py_XDECREF(b->backing);
    PyMem_Free(b);
}

/* Free the memory of `b` (held by defer_cleanup(), deferred off a driver thread, skipped if
   its context is gone) and the record.  Never raises; may let the GIL go. */
static void
free_block(gh_pool *p, gh_pool_block *b)
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
static gh_pool_lane *
find_lane(gh_pool *p, CUstream stream, unsigned long tid, int create)
{
    gh_pool_lane *l;
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
        gh_pool_lane **grown = PyMem_Realloc(p->lanes, (size_t)cap * sizeof(*grown));
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
static gh_pool_block *
pop_block(gh_pool *p, gh_pool_lane *l, int bin)
{
    gh_pool_block *b = l->bins[bin];
    PyObject *obj = NULL;

    l->bins[bin] = b->next;
    b->next = NULL;
    l->n_blocks--;
    gh_pool_stat_sub(&p->held_bytes, b->size);
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
drain_lane(gh_pool *p, gh_pool_lane *l, gh_pool_block **list)
{
    PyObject *obj = l->stream_obj;
    l->stream_obj = NULL;
    for (int bin = 0; bin < GH_POOL_N_BINS && l->n_blocks > 0; bin++) {
        while (l->bins[bin] != NULL) {
            gh_pool_block *b = l->bins[bin];
            l->bins[bin] = b->next;
            b->next = *list;
            *list = b;
            l->n_blocks--;
            gh_pool_stat_sub(&p->held_bytes, b->size);
            p->held_blocks--;
        }
    }
    Py_XDECREF(obj);
}

/* The context's generation moved on: after a Context.reset() the blocks held are freed (the
   context lives on), after close() or a reset of the device their memory is gone with it
   and the records are dropped.  Counts start from zero in the new generation. */
void
gh_pool_forget(gh_pool *p)
{
    gh_pool_block *list = NULL;
    uint64_t old = p->generation;
    p->generation = p->context->generation;
    for (Py_ssize_t i = 0; i < p->n_lanes; i++) {
        drain_lane(p, p->lanes[i], &list);
    }
    p->used_bytes = p->held_bytes = 0;
    p->used_blocks = p->held_blocks = 0;
    if (p->order_event != NULL && gh_context_handle_live(p->context, old)) {
        gh_release(p->context, old, GH_CU_EventDestroy, p->order_event);
    }
    p->order_event = NULL; /* else destroyed with its context */
    while (list != NULL) {
        gh_pool_block *b = list;
        list = b->next;
        free_block(p, b); /* its memory, where the context it was made in lives */
    }
}

void
gh_pool_sync(gh_pool *p)
{
    if (p->generation != p->context->generation) {
        gh_pool_forget(p);
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
void
gh_pool_release_held(gh_pool *p, const gh_pool_key *only)
{
    gh_pool_block *list = NULL;

    gh_pool_sync(p);
    if (p->mode == GH_POOL_MODE_DRIVER) {
        if (gh_pool_state_of(p)->defer_depth == 0) {
            trim_driver_pool(p);
        }
        return;
    }
    for (Py_ssize_t i = 0; i < p->n_lanes; i++) { /* p->lanes may move while draining */
        gh_pool_lane *l = p->lanes[i];
        if (only == NULL || (l->stream == only->stream && l->tid == only->tid)) {
            drain_lane(p, l, &list);
        }
    }
    while (list != NULL) {
        gh_pool_block *b = list;
        list = b->next;
        free_block(p, b);
    }
}

/* Release what every pool of p's context holds.  Never raises. */
void
gh_pool_release_context(gh_pool *p)
{
    gh_state *st = gh_pool_state_of(p);
    PyObject *pools = PyList_New(0);
    if (pools == NULL) {
        PyErr_Clear();
        gh_pool_release_held(p, NULL);
        return;
    }
    for (gh_pool *q = st->pools; q != NULL; q = q->next_pool) {
        if (q->context == p->context && PyList_Append(pools, (PyObject *)q) < 0) {
            PyErr_Clear();
        }
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(pools); i++) {
        gh_pool_release_held((gh_pool *)PyList_GET_ITEM(pools, i), NULL);
    }
    Py_DECREF(pools);
}

void
gh_pool_context_ending(gh_state *st, gh_context *ctx)
{
    for (gh_pool *q = st->pools; q != NULL; q = q->next_pool) {
        if (q->context == ctx) {
            gh_pool_release_context(q); /* every pool of ctx, from a snapshot of the list */
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
cache_put(gh_pool *p, gh_pool_block *b)
{
    CUstream stream = b->stream;
    unsigned long tid = b->tid;
    PyObject *obj = b->stream_obj;
    gh_pool_lane *l;

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
free_ordered(gh_pool *p, gh_pool_block *b)
{
    gh_state *st = gh_pool_state_of(p);
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

static void give_back(gh_pool *p, gh_pool_block *b);

/* The stream a block is ordered on, if gpuhost is capturing on it; else NULL. */
static gh_stream *
capturing_stream(gh_pool *p, PyObject *obj)
{
    gh_state *st = gh_pool_state_of(p);
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
    gh_pool_block *b = PyCapsule_GetPointer(capsule, HELD_BLOCK);
    gh_pool *p = PyCapsule_GetContext(capsule);
    if (b != NULL && p != NULL) {
        give_back(p, b);
        Py_DECREF(p);
    }
}

/* A cached block freed on a stream while gpuhost captures on it may be used by the graph:
   the capture (then its Graph) holds it instead of the pool.  1 if held, else 0. */
static int
hold_for_capture(gh_pool *p, gh_pool_block *b)
{
    gh_stream *s = capturing_stream(p, b->stream_obj);
    PyObject *capsule;
    if (s == NULL || p->mode != GH_POOL_MODE_CACHE) {
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
give_back(gh_pool *p, gh_pool_block *b)
{
    if (hold_for_capture(p, b)) {
        return;
    }
    gh_pool_sync(p);
    if (b->generation != p->generation) {
        free_block(p, b); /* made before a reset: freed where its context lives, else dropped */
        return;
    }
    gh_pool_stat_sub(&p->used_bytes, b->size);
    p->used_blocks--;
    if (p->mode == GH_POOL_MODE_CACHE && p->holding) {
        cache_put(p, b);
    }
    else if (p->mode == GH_POOL_MODE_DRIVER && !p->host) {
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
    gh_pool_block *b = a->block;
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
order_after(gh_pool *p, gh_pool_lane *from, CUstream to)
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
    return obj != NULL && Py_TYPE(obj) == gh_pool_state_of(p)->StreamType &&
           ((gh_stream *)obj)->kind == GH_STREAM_EXTERNAL;
}

/* A cached block of `bin` from another stream's lane, once k's stream is ordered after
   it; NULL if none (*failed set if ordering raised). */
static gh_pool_block *
steal(gh_pool *p, int bin, const gh_pool_key *k, int *failed)
{
    unsigned long me = 0;
    for (Py_ssize_t i = 0; i < p->n_lanes; i++) {
        gh_pool_lane *l = p->lanes[i];
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

/* A block for `size` bytes ordered on k: new memory, or (cache) another stream's. */
static gh_pool_block *
take_slow(gh_pool *p, size_t size, const gh_pool_key *k)
{
    int failed = 0, bin = p->mode == GH_POOL_MODE_CACHE ? gh_pool_bin_of(size) : 0;
    gh_pool_block *b = NULL;

    /* No stealing for a stream gpuhost captures on: ordering it after another stream's
       work is a dependency on work outside the capture, which the driver refuses. */
    if (p->mode == GH_POOL_MODE_CACHE && capturing_stream(p, k->obj) == NULL &&
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
    b->size = p->mode == GH_POOL_MODE_CACHE ? gh_pool_bin_size(bin) : size;
    b->stream = k->stream;
    b->tid = k->tid;
    if (gh_pool_obtain(p, b, size) < 0) {
        PyMem_Free(b);
        return NULL;
    }
    return b;
}

/* A block of at least `size` bytes ordered on k; NULL with an error set. */
static gh_pool_block *
take(gh_pool *p, size_t size, const gh_pool_key *k)
{
    gh_pool_block *b;
    int pushed;

    if (p->mode == GH_POOL_MODE_CACHE) { /* the hot path: a block of this stream, no driver call */
        gh_pool_lane *own = find_lane(p, k->stream, k->tid, 0);
        int bin = gh_pool_bin_of(size);
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
    gh_pool_sync(p);
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
int
gh_pool_key_from(gh_pool *p, PyObject *stream, gh_pool_key *k)
{
    gh_stream_ref ref;

    k->stream = NULL;
    k->tid = 0;
    k->obj = NULL;
    if (p->host || stream == NULL || stream == Py_None) {
        return 0;
    }
    if (gh_stream_resolve(gh_pool_state_of(p), stream, &ref) < 0) {
        return -1;
    }
    if (gh_stream_check_device(ref.context, p->context, "the pool allocates") < 0) {
        return -1;
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
gh_allocation *
gh_pool_allocate(gh_pool *p, size_t size, PyObject *stream)
{
    gh_state *st = gh_pool_state_of(p);
    gh_alloc_kind kind = !p->host                                      ? GH_ALLOC_DEVICE
                         : (p->host_flags & CU_MEMHOSTALLOC_DEVICEMAP) ? GH_ALLOC_MAPPED
                                                                       : GH_ALLOC_PINNED;
    gh_allocation *a;
    gh_pool_block *b;
    gh_pool_key k;

    if (size == 0) {
        return gh_allocation_new(st, p->context, kind, 0);
    }
    if (size > GH_POOL_MAX_SIZE) {
        gh_pool_raise_oom(p, size, GH_CU_MemAlloc, 0);
        return NULL;
    }
    if (gh_pool_key_from(p, stream, &k) < 0) {
        return NULL;
    }
    gh_pool_sync(p);
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
    if (p->mode == GH_POOL_MODE_CACHE && capturing_stream(p, k.obj) != NULL &&
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
int
gh_pool_mode_from_env(gh_pool_mode *mode)
{
    const char *value = getenv("GPUHOST_ALLOCATOR");
    *mode = GH_POOL_MODE_CACHE;
    if (value == NULL || value[0] == '\0') {
        return 0;
    }
    for (int m = GH_POOL_MODE_CACHE; m <= GH_POOL_MODE_PLAIN; m++) {
        if (strcmp(value, gh_pool_mode_names[m]) == 0) {
            *mode = (gh_pool_mode)m;
            return 0;
        }
    }
    PyErr_Format(PyExc_ValueError,
                 "GPUHOST_ALLOCATOR must be 'cache', 'driver' or 'plain', not '%s'", value);
    return -1;
}

/* A new pool in `ctx` (activated); `fallback`: a driver-mode pool on a device without memory
   pools becomes a cache pool, with a warning, instead of raising.  New reference or NULL. */
gh_pool *
gh_pool_new(gh_state *st, PyTypeObject *type, gh_context *ctx, gh_pool_mode mode, int host,
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
    if (backing == NULL) {
        PyObject_GC_UnTrack(p); /* holds no object that could refer back to it (pool.c) */
    }
    if (mode == GH_POOL_MODE_DRIVER) {
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
            p->mode = GH_POOL_MODE_CACHE;
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
gh_pool *
gh_pool_default(gh_state *st, gh_context *ctx)
{
    int id = ctx->device->id;
    PyObject *item;
    gh_pool *p;
    gh_pool_mode mode;

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
    if (gh_pool_mode_from_env(&mode) < 0 || gh_context_activate(ctx) < 0) {
        return NULL;
    }
    p = gh_pool_new(st, st->PoolType, ctx, mode, 0, 0, NULL, 1);
    if (p == NULL) {
        return NULL;
    }
    PyList_SetItem(st->default_pools, id, (PyObject *)p); /* steals p */
    return p;
}

gh_allocation *
gh_pool_device_alloc(gh_state *st, gh_context *ctx, size_t size, PyObject *stream)
{
    gh_pool *p = gh_pool_default(st, ctx);
    return p != NULL ? gh_pool_allocate(p, size, stream) : NULL;
}
