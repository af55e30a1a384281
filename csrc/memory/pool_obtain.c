/* New memory for the pools' blocks: from the driver (cuMemAlloc, cuMemAllocAsync,
 * cuMemHostAlloc, with the thread's capture mode relaxed around the calls that a global
 * capture forbids) or from a pool's Python allocator, under the pool's limit and with the
 * out-of-memory policy (give back, collect garbage, try once more) and its error, which
 * states the pool's statistics.  Called by pool_engine.c when no cached block will do.
 */

#include "memory_internal.h"

/* gc.collect(), through the helper gpuhost's Python side registers; never raises. */
static void
collect_garbage(gh_state *st)
{
    PyObject *res = gh_helper_call(st, GH_HELPER_GC_COLLECT, NULL);
    if (res == NULL) {
        PyErr_Clear();
    }
    Py_XDECREF(res);
}

/* A dict of the pool's statistics, or NULL. */
PyObject *
gh_pool_stats(gh_pool *p)
{
    return Py_BuildValue("{s:n,s:n,s:n,s:n,s:n,s:n,s:s}", "used_bytes", (Py_ssize_t)p->used_bytes,
                         "used_blocks", p->used_blocks, "free_bytes", (Py_ssize_t)p->held_bytes,
                         "free_blocks", p->held_blocks, "total_bytes",
                         (Py_ssize_t)(p->used_bytes + p->held_bytes), "limit", (Py_ssize_t)p->limit,
                         "mode", gh_pool_mode_names[p->mode]);
}

/* Raise CudaOutOfMemoryError for `requested` bytes, with the pool's statistics in the
   message and as .pool_stats; -1. */
int
gh_pool_raise_oom(gh_pool *p, size_t requested, gh_cu_id id, int over_limit)
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
             gh_pool_mode_names[p->mode], p->used_bytes, p->used_blocks, p->held_bytes,
             p->held_blocks, limit[0] ? ", " : "", limit);
    gh_raise_oom_detail(p->context, p->host ? "pinned" : "device", requested, id, detail);
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    stats = gh_pool_stats(p);
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
obtain_backed(gh_pool *p, gh_pool_block *b)
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
obtain_once(gh_pool *p, gh_pool_block *b, gh_cu_id *id)
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
    else if (p->mode == GH_POOL_MODE_DRIVER) {
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
int
gh_pool_obtain(gh_pool *p, gh_pool_block *b, size_t requested)
{
    gh_cu_id id = GH_CU_MemAlloc;
    int got;

    if (over_limit(p, b->size)) {
        gh_pool_release_held(p, NULL);
        if (over_limit(p, b->size)) {
            return gh_pool_raise_oom(p, requested, id, 1);
        }
    }
    if (!p->host && p->backing == NULL && b->size > p->context->device->total_memory) {
        /* More than the device has: the driver would take long to refuse it, and giving
           cached memory back and collecting garbage (slow in a big process) cannot help. */
        return gh_pool_raise_oom(p, requested, id, 0);
    }
    p->used_bytes += b->size; /* counted now: other threads run while the GIL is let go */
    p->used_blocks++;
    got = obtain_once(p, b, &id);
    if (got == 1) {
        gh_pool_release_context(p);
        collect_garbage(gh_pool_state_of(p));
        gh_pool_release_context(p);
        got = obtain_once(p, b, &id);
    }
    if (got != 0) {
        gh_pool_stat_sub(&p->used_bytes, b->size);
        p->used_blocks--;
        return got == 1 ? gh_pool_raise_oom(p, requested, id, 0) : -1;
    }
    if (p->generation != p->context->generation) {
        gh_pool_forget(p); /* the context was reset meanwhile */
        p->used_bytes += b->size;
        p->used_blocks++;
    }
    b->generation = p->generation;
    return 0;
}
