/* Context: a device's primary context, numba.cuda's model (DESIGN.md point 4).
 *
 * gpuhost uses only primary contexts, which CuPy, PyTorch and numba share: one Context
 * object per Device, holding one retain while in use.  The current context is the
 * driver's, per thread; the functions here push, pop and switch it.
 */
#include "module.h"

static PyObject *plugin_call(gh_context *ctx, const char *name);

gh_context *
gh_context_of(gh_state *st, gh_device *dev)
{
    gh_context *ctx;
    if (dev->context != NULL) {
        return (gh_context *)dev->context;
    }
    ctx = PyObject_GC_New(gh_context, st->ContextType);
    if (ctx == NULL) {
        return NULL;
    }
    ctx->device = (gh_device *)Py_NewRef(dev);
    ctx->handle = NULL;
    ctx->generation = 0;
    ctx->stale = NULL;
    ctx->ended_by = NULL;
    ctx->weakreflist = NULL;
    PyObject_GC_Track(ctx);
    dev->context = (PyObject *)ctx; /* the Device owns it */
    return ctx;
}

int
gh_context_activate(gh_context *ctx)
{
    CUcontext handle = NULL;
    CUresult res;
    CUdevice dev = ctx->device->handle;

    if (ctx->handle != NULL) {
        return 0;
    }
    Py_BEGIN_ALLOW_THREADS
    res = gh_cu.DevicePrimaryCtxRetain(&handle, dev);
    Py_END_ALLOW_THREADS
    if (gh_check(res, GH_CU_DevicePrimaryCtxRetain) < 0) {
        return -1;
    }
    if (ctx->handle != NULL) {
        /* Another thread retained it while this one waited: keep one retain only. */
        res = gh_cu.DevicePrimaryCtxRelease(dev);
        if (res != CUDA_SUCCESS) {
            gh_warn_cleanup(res, GH_CU_DevicePrimaryCtxRelease);
        }
        return 0;
    }
    ctx->handle = handle;
    return 0;
}

/* Drop gpuhost's retain; objects of this generation are now stale (`why` says what ended
   it, for their errors).  Never raises. */
static void
context_release(gh_context *ctx, const char *why)
{
    CUresult res;
    if (ctx->handle == NULL) {
        return;
    }
    res = gh_cu.DevicePrimaryCtxRelease(ctx->device->handle);
    if (res != CUDA_SUCCESS) {
        gh_warn_cleanup(res, GH_CU_DevicePrimaryCtxRelease);
    }
    ctx->stale = ctx->handle;
    ctx->handle = NULL;
    ctx->generation++;
    ctx->ended_by = why;
}

/* *out = the (borrowed) Context of which `cur`, the current context, is the primary
   context, or NULL if `cur` is another kind of context.  0 or -1. */
static int
context_for_current(gh_state *st, CUcontext cur, gh_context **out)
{
    CUdevice ordinal;
    gh_device *dev;
    gh_context *ctx;

    *out = NULL;
    /* Fast path: one of the primary contexts gpuhost already holds. */
    for (Py_ssize_t i = 0; st->devices != NULL && i < PyList_GET_SIZE(st->devices); i++) {
        PyObject *item = PyList_GET_ITEM(st->devices, i); /* borrowed */
        if (item != Py_None && ((gh_device *)item)->context != NULL &&
            ((gh_context *)((gh_device *)item)->context)->handle == cur) {
            *out = (gh_context *)((gh_device *)item)->context;
            return 0;
        }
    }
    if (gh_check(gh_cu.CtxGetDevice(&ordinal), GH_CU_CtxGetDevice) < 0 ||
        (dev = gh_device_get(st, ordinal)) == NULL || (ctx = gh_context_of(st, dev)) == NULL ||
        gh_context_activate(ctx) < 0) {
        return -1;
    }
    if (ctx->handle == cur) {
        *out = ctx;
    }
    return 0;
}

gh_context *
gh_context_current_or_null(gh_state *st)
{
    CUcontext cur = NULL;
    gh_context *ctx = NULL;
    if (gh_driver_ensure() < 0 || gh_check(gh_cu.CtxGetCurrent(&cur), GH_CU_CtxGetCurrent) < 0 ||
        cur == NULL) {
        return NULL;
    }
    context_for_current(st, cur, &ctx);
    return ctx;
}

int
gh_context_make_current(gh_context *ctx)
{
    if (gh_context_activate(ctx) < 0) {
        return -1;
    }
    return gh_check(gh_cu.CtxSetCurrent(ctx->handle), GH_CU_CtxSetCurrent);
}

gh_context *
gh_current_context(gh_state *st, int devnum)
{
    CUcontext cur = NULL;
    gh_device *wanted = NULL;
    gh_context *ctx = NULL;

    if (gh_driver_ensure() < 0 || (devnum >= 0 && (wanted = gh_device_get(st, devnum)) == NULL) ||
        gh_check(gh_cu.CtxGetCurrent(&cur), GH_CU_CtxGetCurrent) < 0) {
        return NULL;
    }
    if (cur == NULL) {
        if (wanted == NULL && (wanted = gh_device_get(st, 0)) == NULL) {
            return NULL;
        }
        ctx = gh_context_of(st, wanted);
        if (ctx == NULL || gh_context_make_current(ctx) < 0) {
            return NULL;
        }
        return (gh_context *)Py_NewRef(ctx);
    }
    if (context_for_current(st, cur, &ctx) < 0) {
        return NULL;
    }
    if (ctx == NULL) {
        gh_raise("CudaDriverError",
                 "the context current in this thread (%p) is not a device's primary context; "
                 "gpuhost works in primary contexts (which CuPy, PyTorch and numba share): "
                 "pop the other context first",
                 (void *)cur);
        return NULL;
    }
    if (wanted != NULL && wanted != ctx->device) {
        gh_raise("CudaDriverError",
                 "device %d's context is current in this thread, not device %d's: use "
                 "select_device(%d) or 'with gpus[%d]:' to switch",
                 ctx->device->id, wanted->id, wanted->id, wanted->id);
        return NULL;
    }
    return (gh_context *)Py_NewRef(ctx);
}

int
gh_context_push(gh_context *ctx)
{
    if (gh_context_activate(ctx) < 0) {
        return -1;
    }
    return gh_check(gh_cu.CtxPushCurrent(ctx->handle), GH_CU_CtxPushCurrent);
}

/* Raise CudaDriverError for popping `ctx` while `cur` is on top. */
static int
raise_not_on_top(gh_context *ctx, CUcontext cur)
{
    gh_state *st = gh_state_of_type(Py_TYPE(ctx));
    gh_context *top = NULL;

    if (cur == NULL) {
        return gh_raise("CudaDriverError",
                        "cannot pop device %d's context: this thread's context stack is empty",
                        ctx->device->id);
    }
    if (context_for_current(st, cur, &top) < 0) {
        PyErr_Clear();
    }
    if (top != NULL) {
        return gh_raise("CudaDriverError",
                        "cannot pop device %d's context: it is not on top of this thread's "
                        "context stack (device %d's is)",
                        ctx->device->id, top->device->id);
    }
    return gh_raise("CudaDriverError",
                    "cannot pop device %d's context: it is not on top of this thread's "
                    "context stack (another context, %p, is)",
                    ctx->device->id, (void *)cur);
}

/* Pop without looking first (cuCtxGetCurrent failed): pop, and if it was not `ctx` that
   came off, put it back and say so.  0 or -1. */
static int
pop_and_check(gh_context *ctx)
{
    CUcontext popped = NULL;
    if (gh_check(gh_cu.CtxPopCurrent(&popped), GH_CU_CtxPopCurrent) < 0) {
        return -1;
    }
    if (popped != NULL && popped == ctx->handle) {
        return 0;
    }
    if (popped != NULL && gh_check(gh_cu.CtxPushCurrent(popped), GH_CU_CtxPushCurrent) < 0) {
        return -1;
    }
    return raise_not_on_top(ctx, popped);
}

int
gh_context_pop(gh_context *ctx)
{
    CUcontext cur = NULL, popped = NULL;
    if (gh_cu.CtxGetCurrent(&cur) != CUDA_SUCCESS) {
        /* Leaving a with-block must not leave the context pushed because of an inquiry. */
        return pop_and_check(ctx);
    }
    if (cur == NULL || cur != ctx->handle) {
        return raise_not_on_top(ctx, cur);
    }
    return gh_check(gh_cu.CtxPopCurrent(&popped), GH_CU_CtxPopCurrent);
}

int
gh_context_enter(gh_context *ctx, int *pushed)
{
    CUcontext cur = NULL;
    *pushed = 0;
    if (gh_context_activate(ctx) < 0 ||
        gh_check(gh_cu.CtxGetCurrent(&cur), GH_CU_CtxGetCurrent) < 0) {
        return -1;
    }
    if (cur == ctx->handle) {
        return 0;
    }
    if (gh_check(gh_cu.CtxPushCurrent(ctx->handle), GH_CU_CtxPushCurrent) < 0) {
        return -1;
    }
    *pushed = 1;
    return 0;
}

int
gh_context_leave(gh_context *Py_UNUSED(ctx), int pushed)
{
    CUcontext popped = NULL;
    CUresult res;
    if (!pushed) {
        return 0;
    }
    res = gh_cu.CtxPopCurrent(&popped);
    if (res != CUDA_SUCCESS && PyErr_Occurred()) {
        gh_warn_cleanup(res, GH_CU_CtxPopCurrent); /* keep the first error */
        return -1;
    }
    return gh_check(res, GH_CU_CtxPopCurrent);
}

int
gh_context_reset(gh_context *ctx)
{
    PyObject *res_obj;
    CUcontext cur = NULL;
    CUresult res;
    int was_current;

    if (gh_check(gh_cu.CtxGetCurrent(&cur), GH_CU_CtxGetCurrent) < 0) {
        return -1;
    }
    /* A handle gpuhost gave up may still be current here (a reset or close that failed
       half-way, another thread's reset): the device's new context takes its place too. */
    was_current = cur != NULL && (cur == ctx->handle || cur == ctx->stale);
    res_obj = plugin_call(ctx, "_context_reset"); /* a memory manager's reset(), as numba's */
    if (res_obj == NULL) {
        return -1;
    }
    Py_DECREF(res_obj);
    gh_pool_context_ending(gh_state_of_type(Py_TYPE(ctx)), ctx); /* before its memory goes */
    context_release(ctx, "a reset() of the device");
    Py_BEGIN_ALLOW_THREADS
    res = gh_cu.DevicePrimaryCtxReset(ctx->device->handle);
    Py_END_ALLOW_THREADS
    ctx->generation++;
    ctx->ended_by = "a reset() of the device";
    if (gh_check(res, GH_CU_DevicePrimaryCtxReset) < 0) {
        return -1;
    }
    return was_current ? gh_context_make_current(ctx) : 0;
}

/* Is `cur` (the current context) a primary context, or one whose context is gone?
   1 yes, 0 no (a live context of another kind), -1 error. */
static int
current_is_poppable(gh_state *st, CUcontext cur)
{
    CUdevice ordinal;
    CUcontext primary = NULL;
    unsigned int flags;
    int active = 0;
    gh_device *dev;
    CUresult res = gh_cu.CtxGetDevice(&ordinal);

    if (res == CUDA_ERROR_CONTEXT_IS_DESTROYED || res == CUDA_ERROR_INVALID_CONTEXT) {
        return 1;
    }
    if (gh_check(res, GH_CU_CtxGetDevice) < 0 || (dev = gh_device_get(st, ordinal)) == NULL) {
        return -1;
    }
    if (dev->context != NULL && ((gh_context *)dev->context)->handle != NULL) {
        return ((gh_context *)dev->context)->handle == cur;
    }
    /* gpuhost holds no retain: compare with the primary context without keeping one. */
    if (gh_check(gh_cu.DevicePrimaryCtxGetState(dev->handle, &flags, &active),
                 GH_CU_DevicePrimaryCtxGetState) < 0) {
        return -1;
    }
    if (!active || gh_check(gh_cu.DevicePrimaryCtxRetain(&primary, dev->handle),
                            GH_CU_DevicePrimaryCtxRetain) < 0) {
        return active ? -1 : 0;
    }
    res = gh_cu.DevicePrimaryCtxRelease(dev->handle);
    if (res != CUDA_SUCCESS) {
        gh_warn_cleanup(res, GH_CU_DevicePrimaryCtxRelease);
    }
    return primary == cur;
}

int
gh_context_close_all(gh_state *st, int release_all)
{
    for (;;) {
        CUcontext cur = NULL, popped = NULL;
        int poppable;
        if (gh_check(gh_cu.CtxGetCurrent(&cur), GH_CU_CtxGetCurrent) < 0) {
            return -1;
        }
        if (cur == NULL) {
            break;
        }
        poppable = current_is_poppable(st, cur);
        if (poppable < 0) {
            return -1;
        }
        if (!poppable) {
            break; /* another library's own context: not ours to pop */
        }
        if (gh_check(gh_cu.CtxPopCurrent(&popped), GH_CU_CtxPopCurrent) < 0) {
            return -1;
        }
    }
    if (release_all && st->devices != NULL) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(st->devices); i++) {
            PyObject *dev = PyList_GET_ITEM(st->devices, i); /* borrowed */
            if (dev != Py_None && ((gh_device *)dev)->context != NULL) {
                gh_pool_context_ending(st, (gh_context *)((gh_device *)dev)->context);
                context_release((gh_context *)((gh_device *)dev)->context, "gpuhost.close()");
            }
        }
    }
    return 0;
}

/* ---- Python methods ---- */

/* ---- numba's Context methods, written in Python (gpuhost/_context_api.py) ---- */

static PyObject *
forward(const char *name, PyObject *self, PyObject *args, PyObject *kwargs)
{
    return gh_call_python_method("gpuhost._context_api", name, self, args, kwargs);
}

#define GH_FORWARD(pyname)                                                                         \
    static PyObject *context_##pyname(PyObject *self, PyObject *args, PyObject *kwargs)            \
    {                                                                                              \
        return forward(#pyname, self, args, kwargs);                                               \
    }
GH_FORWARD(memalloc)
GH_FORWARD(memallocmanaged)
GH_FORWARD(memhostalloc)
GH_FORWARD(mempin)
GH_FORWARD(get_ipc_handle)
GH_FORWARD(open_ipc_handle)
GH_FORWARD(create_stream)
GH_FORWARD(create_external_stream)
GH_FORWARD(create_event)
GH_FORWARD(get_default_stream)
GH_FORWARD(get_legacy_default_stream)
GH_FORWARD(get_per_thread_default_stream)
GH_FORWARD(prepare_for_use)
GH_FORWARD(defer_cleanup)
GH_FORWARD(create_module_ptx)
GH_FORWARD(unload_module)
GH_FORWARD(get_active_blocks_per_multiprocessor)
GH_FORWARD(get_max_potential_block_size)
#undef GH_FORWARD

static PyObject *
context_get_memory_manager(PyObject *self, void *Py_UNUSED(c))
{
    return forward("get_memory_manager", self, NULL, NULL);
}

static int
context_set_memory_manager(PyObject *self, PyObject *value, void *Py_UNUSED(c))
{
    PyObject *args, *res;
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "memory_manager cannot be deleted");
        return -1;
    }
    args = PyTuple_Pack(1, value);
    res = args ? forward("set_memory_manager", self, args, NULL) : NULL;
    Py_XDECREF(args);
    Py_XDECREF(res);
    return res != NULL ? 0 : -1;
}

static PyObject *
context_get_deallocations(PyObject *self, void *Py_UNUSED(c))
{
    return forward("get_deallocations", self, NULL, NULL);
}

/* An EMM plugin's answer for `ctx`, when gpuhost.memory_manager is in use and a plugin
   manages `ctx`: a new reference, Py_None (none does), or NULL with an exception. */
static PyObject *
plugin_call(gh_context *ctx, const char *name)
{
    PyObject *modname = PyUnicode_FromString("gpuhost.memory_manager"), *mod, *res;
    if (modname == NULL) {
        return NULL;
    }
    mod = PyImport_GetModule(modname);
    Py_DECREF(modname);
    if (mod == NULL) {
        if (PyErr_Occurred()) {
            return NULL;
        }
        Py_RETURN_NONE; /* never imported: no plugin can be in use */
    }
    res = PyObject_CallMethod(mod, name, "O", (PyObject *)ctx);
    Py_DECREF(mod);
    return res;
}

/* A new MemoryInfo(free, total); NULL on error. */
static PyObject *
memory_info_new(gh_state *st, size_t free_bytes, size_t total_bytes)
{
    PyObject *info = NULL;
    PyObject *args[2] = {PyLong_FromSize_t(free_bytes), PyLong_FromSize_t(total_bytes)};

    if (args[0] != NULL && args[1] != NULL) {
        info = PyObject_Vectorcall((PyObject *)st->MemoryInfoType, args, 2, NULL);
    }
    Py_XDECREF(args[0]);
    Py_XDECREF(args[1]);
    return info;
}

static PyObject *
context_get_memory_info(gh_context *self, PyObject *Py_UNUSED(ignored))
{
    gh_state *st = gh_state_of_type(Py_TYPE(self));
    size_t free_bytes = 0, total_bytes = 0;
    int pushed;
    CUresult res;
    PyObject *info = plugin_call(self, "_plugin_memory_info");

    if (info != Py_None) {
        return info; /* the plugin's MemoryInfo, or its error */
    }
    Py_DECREF(info);

    if (gh_context_enter(self, &pushed) < 0) {
        return NULL;
    }
    res = gh_cu.MemGetInfo(&free_bytes, &total_bytes);
    if (gh_context_leave(self, pushed) < 0 || gh_check(res, GH_CU_MemGetInfo) < 0) {
        return NULL;
    }
    return memory_info_new(st, free_bytes, total_bytes);
}

static PyObject *
context_synchronize(gh_context *self, PyObject *Py_UNUSED(ignored))
{
    int pushed;
    CUresult res;
    if (gh_context_enter(self, &pushed) < 0) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    res = gh_cu.CtxSynchronize();
    Py_END_ALLOW_THREADS
    if (gh_context_leave(self, pushed) < 0 || gh_check(res, GH_CU_CtxSynchronize) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
context_push(gh_context *self, PyObject *Py_UNUSED(ignored))
{
    if (gh_context_push(self) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
context_pop(gh_context *self, PyObject *Py_UNUSED(ignored))
{
    if (gh_context_pop(self) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
context_reset(gh_context *self, PyObject *Py_UNUSED(ignored))
{
    if (gh_context_reset(self) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
context_can_access_peer(gh_context *self, PyObject *peer_device)
{
    gh_state *st = gh_state_of_type(Py_TYPE(self));
    gh_device *peer = gh_device_from_object(st, peer_device, "peer_device");
    int can = 0;
    if (peer == NULL || gh_device_can_access_peer(self->device, peer, &can) < 0) {
        return NULL;
    }
    return PyBool_FromLong(can);
}

int
gh_context_peer_access(gh_context *self, gh_device *peer_dev, int enable)
{
    gh_state *st = gh_state_of_type(Py_TYPE(self));
    gh_cu_id id = enable ? GH_CU_CtxEnablePeerAccess : GH_CU_CtxDisablePeerAccess;
    gh_context *peer = gh_context_of(st, peer_dev);
    char detail[200];
    CUresult res;
    int pushed;

    if (peer == NULL || gh_context_activate(peer) < 0 || gh_context_enter(self, &pushed) < 0) {
        return -1;
    }
    res = enable ? gh_cu.CtxEnablePeerAccess(peer->handle, 0)
                 : gh_cu.CtxDisablePeerAccess(peer->handle);
    if (gh_context_leave(self, pushed) < 0) {
        return -1;
    }
    if (res == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED ||
        res == CUDA_ERROR_PEER_ACCESS_NOT_ENABLED) {
        return 0; /* already as asked */
    }
    if (res == CUDA_ERROR_PEER_ACCESS_UNSUPPORTED) {
        snprintf(detail, sizeof(detail),
                 "device %d cannot access device %d's memory directly (Device.can_access_peer() "
                 "is False); copies between them still work, staged by the driver",
                 self->device->id, peer_dev->id);
        gh_raise_cuda_detail(res, id, detail);
        return -1;
    }
    return gh_check(res, id);
}

/* Context.enable_peer_access / disable_peer_access(peer): `arg` is a Device, Context or
   device id, another device's; both directions are idempotent. */
static PyObject *
context_peer_access(gh_context *self, PyObject *arg, int enable)
{
    gh_device *peer_dev = gh_device_from_object(gh_state_of_type(Py_TYPE(self)), arg, "the peer");

    if (peer_dev == NULL) {
        return NULL;
    }
    if (peer_dev == self->device) {
        PyErr_Format(PyExc_ValueError,
                     "peer access is between two devices: device %d's context always reaches "
                     "its own memory",
                     self->device->id);
        return NULL;
    }
    if (gh_context_peer_access(self, peer_dev, enable) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
context_enable_peer_access(gh_context *self, PyObject *peer)
{
    return context_peer_access(self, peer, 1);
}

static PyObject *
context_disable_peer_access(gh_context *self, PyObject *peer)
{
    return context_peer_access(self, peer, 0);
}

static PyObject *
context_get_device(gh_context *self, void *Py_UNUSED(closure))
{
    return Py_NewRef(self->device);
}

static PyObject *
context_get_handle(gh_context *self, void *Py_UNUSED(closure))
{
    if (self->handle == NULL) {
        Py_RETURN_NONE;
    }
    return PyLong_FromVoidPtr(self->handle);
}

static PyObject *
context_repr(gh_context *self)
{
    if (self->handle == NULL) {
        return PyUnicode_FromFormat("<CUDA context of device %d (not held)>", self->device->id);
    }
    return PyUnicode_FromFormat("<CUDA context %p of device %d>", (void *)self->handle,
                                self->device->id);
}

static int
context_traverse(gh_context *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->device);
    return 0;
}

static int
context_clear(gh_context *self)
{
    if (self->handle != NULL && self->device != NULL) {
        context_release(self, NULL);
    }
    Py_CLEAR(self->device);
    return 0;
}

static void
context_dealloc(gh_context *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (self->weakreflist != NULL) {
        PyObject_ClearWeakRefs((PyObject *)self);
    }
    context_clear(self);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static PyMethodDef context_methods[] = {
    {"get_memory_info", (PyCFunction)context_get_memory_info, METH_NOARGS,
     "get_memory_info($self, /)\n--\n\n"
     "The device's free and total memory in bytes (cuMemGetInfo).\n\n"
     "Returns\n"
     "-------\n"
     "MemoryInfo\n"
     "    A named tuple (free, total). Free memory is the device's, over all processes.\n\n"
     "Examples\n"
     "--------\n"
     ">>> free, total = gpuhost.current_context().get_memory_info()\n"
     ">>> 0 <= free <= total\n"
     "True"},
    {"synchronize", (PyCFunction)context_synchronize, METH_NOARGS,
     "synchronize($self, /)\n--\n\n"
     "Wait until all work queued in this context, on every stream, has finished.\n\n"
     "The GIL is released while waiting.\n\n"
     "Raises\n"
     "------\n"
     "CudaAPIError\n"
     "    For an error an earlier asynchronous operation left (such as a kernel's illegal\n"
     "    address).\n\n"
     "Examples\n"
     "--------\n"
     ">>> gpuhost.current_context().synchronize()"},
    {"push", (PyCFunction)context_push, METH_NOARGS,
     "push($self, /)\n--\n\n"
     "Make this context current: push it on the calling thread's context stack.\n\n"
     "Pair it with pop(), or use the context's device as a context manager\n"
     "(`with gpuhost.gpus[1]:`).\n\n"
     "Examples\n"
     "--------\n"
     ">>> ctx = gpuhost.gpus[0].get_primary_context()\n"
     ">>> ctx.push()\n"
     ">>> gpuhost.current_context() is ctx\n"
     "True\n"
     ">>> ctx.pop()"},
    {"pop", (PyCFunction)context_pop, METH_NOARGS,
     "pop($self, /)\n--\n\n"
     "Pop this context off the calling thread's context stack (undo push()).\n\n"
     "Raises\n"
     "------\n"
     "CudaDriverError\n"
     "    If this context is not on top of the stack."},
    {"reset", (PyCFunction)context_reset, METH_NOARGS,
     "reset($self, /)\n--\n\n"
     "Destroy everything made in this context, as Device.reset() does.\n\n"
     "The memory manager's reset() runs first. Arrays, streams, events and modules made\n"
     "before cannot be used again (they say so); the device works for new objects.\n\n"
     "Examples\n"
     "--------\n"
     ">>> ctx = gpuhost.current_context()\n"
     ">>> d = gpuhost.to_device(np.arange(3))\n"
     ">>> ctx.reset()\n"
     ">>> gpuhost.to_device(np.arange(3)).copy_to_host()  # new objects work\n"
     "array([0, 1, 2])"},
    {"memalloc", (PyCFunction)(void (*)(void))context_memalloc, METH_VARARGS | METH_KEYWORDS,
     "memalloc($self, bytesize, /)\n--\n\n"
     "Allocate device memory from the context's memory manager, as numba's.\n\n"
     "Parameters\n"
     "----------\n"
     "bytesize : int\n"
     "    Bytes to allocate.\n\n"
     "Returns\n"
     "-------\n"
     "MemoryPointer\n"
     "    device_pointer, device_ctypes_pointer, view(), memset(), free(); the memory is\n"
     "    freed when the last reference dies.\n\n"
     "Examples\n"
     "--------\n"
     ">>> m = gpuhost.current_context().memalloc(1024)\n"
     ">>> m.size\n"
     "1024"},
    {"memallocmanaged", (PyCFunction)(void (*)(void))context_memallocmanaged,
     METH_VARARGS | METH_KEYWORDS,
     "memallocmanaged($self, bytesize, attach_global=True)\n--\n\n"
     "Allocate managed (unified) memory from the context's memory manager, as numba's.\n\n"
     "cuMemAllocManaged: one address valid on the host and the devices; the driver migrates\n"
     "the pages where they are used.\n\n"
     "Parameters\n"
     "----------\n"
     "bytesize : int\n"
     "    Bytes to allocate.\n"
     "attach_global : bool, optional\n"
     "    True (the default): any stream on any device may access it\n"
     "    (CU_MEM_ATTACH_GLOBAL); False: only the host, until attached to a stream.\n\n"
     "Returns\n"
     "-------\n"
     "gpuhost.memory_manager.OwnedPointer\n"
     "    A MemoryPointer (device_pointer, size, view(), ...); the memory is freed when the\n"
     "    last reference dies.\n\n"
     "Raises\n"
     "------\n"
     "gpuhost.CudaAPIError\n"
     "    If the device has no managed memory or not that much free.\n\n"
     "Examples\n"
     "--------\n"
     ">>> m = gpuhost.current_context().memallocmanaged(1024)\n"
     ">>> m.size\n"
     "1024"},
    {"memhostalloc", (PyCFunction)(void (*)(void))context_memhostalloc,
     METH_VARARGS | METH_KEYWORDS,
     "memhostalloc($self, bytesize, mapped=False, portable=False, wc=False)\n--\n\n"
     "Allocate page-locked host memory from the context's memory manager, as numba's.\n\n"
     "cuMemHostAlloc. Copies from and to page-locked memory are faster than from pageable\n"
     "memory and can overlap other work.\n\n"
     "Parameters\n"
     "----------\n"
     "bytesize : int\n"
     "    Bytes to allocate.\n"
     "mapped : bool, optional\n"
     "    Also map it into the device's address space (CU_MEMHOSTALLOC_DEVICEMAP), so kernels\n"
     "    can read and write it directly.\n"
     "portable : bool, optional\n"
     "    Page-locked for every context, not only this one (CU_MEMHOSTALLOC_PORTABLE).\n"
     "wc : bool, optional\n"
     "    Write-combined: faster for the device to read, slow for the host to read.\n\n"
     "Returns\n"
     "-------\n"
     "gpuhost.memory_manager.PinnedMemory or gpuhost.memory_manager.MappedOwnedPointer\n"
     "    A MappedOwnedPointer (with a device address) if `mapped`, else a PinnedMemory;\n"
     "    both have host_pointer and size, as numba's (numba's pinned_array wraps them).\n\n"
     "Examples\n"
     "--------\n"
     ">>> ctx = gpuhost.current_context()\n"
     ">>> h = ctx.memhostalloc(64)\n"
     ">>> h.size, h.host_pointer != 0\n"
     "(64, True)\n"
     ">>> ctx.memhostalloc(64, mapped=True).device_pointer.value != 0\n"
     "True"},
    {"mempin", (PyCFunction)(void (*)(void))context_mempin, METH_VARARGS | METH_KEYWORDS,
     "mempin($self, owner, pointer, size, mapped=False)\n--\n\n"
     "Page-lock existing host memory, as numba's (cuMemHostRegister).\n\n"
     "The memory stays page-locked until the returned object dies; `owner` is kept alive until\n"
     "then.\n\n"
     "Parameters\n"
     "----------\n"
     "owner : object\n"
     "    What owns the memory (a NumPy array, say).\n"
     "pointer : int\n"
     "    Its host address.\n"
     "size : int\n"
     "    Bytes.\n"
     "mapped : bool, optional\n"
     "    Also map it into the device's address space.\n\n"
     "Returns\n"
     "-------\n"
     "gpuhost.memory_manager.PinnedMemory\n"
     "    Or a mapped pointer with a device address, if `mapped`.\n\n"
     "Raises\n"
     "------\n"
     "gpuhost.CudaDriverError\n"
     "    If `mapped` and the device cannot map host memory.\n"
     "gpuhost.CudaAPIError\n"
     "    If the driver refuses (such as memory registered already).\n\n"
     "Examples\n"
     "--------\n"
     ">>> a = np.zeros(16)\n"
     ">>> p = gpuhost.current_context().mempin(a, a.ctypes.data, a.nbytes)\n"
     ">>> p.size\n"
     "128"},
    {"get_ipc_handle", (PyCFunction)(void (*)(void))context_get_ipc_handle,
     METH_VARARGS | METH_KEYWORDS,
     "get_ipc_handle($self, memory, /)\n--\n\n"
     "An IPC handle of device memory, for another process to open (cuIpcGetMemHandle).\n\n"
     "Parameters\n"
     "----------\n"
     "memory : gpuhost.memory_manager.MemoryPointer\n"
     "    Memory allocated in this context (memalloc(), or a device array's gpu_data).\n\n"
     "Returns\n"
     "-------\n"
     "gpuhost.memory_manager.IpcHandle\n"
     "    Picklable; the other process opens it with its open() or with open_ipc_handle().\n\n"
     "Raises\n"
     "------\n"
     "OSError\n"
     "    Where the OS has no CUDA IPC (only Linux has).\n"
     "gpuhost.CudaAPIError\n"
     "    If the driver refuses (such as memory from a pool without IPC).\n\n"
     "Examples\n"
     "--------\n"
     ">>> import pickle\n"
     ">>> ctx = gpuhost.current_context()\n"
     ">>> h = ctx.get_ipc_handle(ctx.memalloc(256))\n"
     ">>> h.size\n"
     "256\n"
     ">>> data = pickle.dumps(h)  # send to another process"},
    {"open_ipc_handle", (PyCFunction)(void (*)(void))context_open_ipc_handle,
     METH_VARARGS | METH_KEYWORDS,
     "open_ipc_handle($self, handle, size, /)\n--\n\n"
     "Open another process's IPC memory handle (cuIpcOpenMemHandle), as numba's.\n\n"
     "The memory is mapped into this context until the returned pointer dies. A process cannot\n"
     "open its own handles.\n\n"
     "Parameters\n"
     "----------\n"
     "handle : bytes\n"
     "    The 64-byte cudaIpcMemHandle_t (an IpcHandle's ``handle``).\n"
     "size : int\n"
     "    Bytes of the memory.\n\n"
     "Returns\n"
     "-------\n"
     "gpuhost.memory_manager.MemoryPointer\n\n"
     "Raises\n"
     "------\n"
     "gpuhost.CudaAPIError\n"
     "    If the driver refuses the handle.\n\n"
     "Examples\n"
     "--------\n"
     ">>> ipc = pickle.loads(data)  # from get_ipc_handle() in another process  # doctest: +SKIP\n"
     ">>> ctx = gpuhost.current_context()\n"
     ">>> ptr = ctx.open_ipc_handle(ipc.handle, ipc.size)  # doctest: +SKIP"},
    {"create_stream", (PyCFunction)(void (*)(void))context_create_stream,
     METH_VARARGS | METH_KEYWORDS,
     "create_stream($self, /)\n--\n\n"
     "A new stream in this context, as numba's.\n\n"
     "As gpuhost.stream(): blocking (it synchronizes with the legacy default stream), default\n"
     "priority.\n\n"
     "Returns\n"
     "-------\n"
     "gpuhost.Stream\n\n"
     "Examples\n"
     "--------\n"
     ">>> s = gpuhost.current_context().create_stream()\n"
     ">>> s.query()\n"
     "True"},
    {"create_external_stream", (PyCFunction)(void (*)(void))context_create_external_stream,
     METH_VARARGS | METH_KEYWORDS,
     "create_external_stream($self, ptr, /)\n--\n\n"
     "A Stream over a CUstream made elsewhere (by CuPy, PyTorch, ...), as numba's.\n\n"
     "gpuhost does not own it: the caller keeps it alive while the Stream is used.\n\n"
     "Parameters\n"
     "----------\n"
     "ptr : int\n"
     "    The CUstream handle.\n\n"
     "Returns\n"
     "-------\n"
     "gpuhost.Stream\n\n"
     "Raises\n"
     "------\n"
     "TypeError\n"
     "    If `ptr` is not an int.\n\n"
     "Examples\n"
     "--------\n"
     ">>> ctx = gpuhost.current_context()\n"
     ">>> owned = ctx.create_stream()\n"
     ">>> ext = ctx.create_external_stream(owned.handle)\n"
     ">>> ext.handle == owned.handle\n"
     "True"},
    {"create_event", (PyCFunction)(void (*)(void))context_create_event,
     METH_VARARGS | METH_KEYWORDS,
     "create_event($self, timing=True)\n--\n\n"
     "A new event in this context, as numba's.\n\n"
     "Parameters\n"
     "----------\n"
     "timing : bool, optional\n"
     "    True (the default): it records timestamps for elapsed_time(); False is cheaper.\n\n"
     "Returns\n"
     "-------\n"
     "gpuhost.Event\n\n"
     "Examples\n"
     "--------\n"
     ">>> ctx = gpuhost.current_context()\n"
     ">>> e = ctx.create_event()\n"
     ">>> e.record(ctx.create_stream())\n"
     ">>> e.synchronize()\n"
     ">>> e.query()\n"
     "True"},
    {"get_default_stream", (PyCFunction)(void (*)(void))context_get_default_stream,
     METH_VARARGS | METH_KEYWORDS,
     "get_default_stream($self, /)\n--\n\n"
     "The default stream, as numba's: what stream=0 means.\n\n"
     "The legacy default stream, or the per-thread one where numba's\n"
     "CUDA_PER_THREAD_DEFAULT_STREAM setting is on (as gpuhost.default_stream()).\n\n"
     "Returns\n"
     "-------\n"
     "gpuhost.Stream\n\n"
     "Examples\n"
     "--------\n"
     ">>> gpuhost.current_context().get_default_stream()\n"
     "<Default CUDA stream on device 0>"},
    {"get_legacy_default_stream", (PyCFunction)(void (*)(void))context_get_legacy_default_stream,
     METH_VARARGS | METH_KEYWORDS,
     "get_legacy_default_stream($self, /)\n--\n\n"
     "The legacy default stream (CU_STREAM_LEGACY), as numba's.\n\n"
     "It synchronizes with every blocking stream of the context.\n\n"
     "Returns\n"
     "-------\n"
     "gpuhost.Stream\n\n"
     "Examples\n"
     "--------\n"
     ">>> gpuhost.current_context().get_legacy_default_stream()\n"
     "<Legacy default CUDA stream on device 0>"},
    {"get_per_thread_default_stream",
     (PyCFunction)(void (*)(void))context_get_per_thread_default_stream,
     METH_VARARGS | METH_KEYWORDS,
     "get_per_thread_default_stream($self, /)\n--\n\n"
     "The calling thread's per-thread default stream (CU_STREAM_PER_THREAD), as numba's.\n\n"
     "Returns\n"
     "-------\n"
     "gpuhost.Stream\n\n"
     "Examples\n"
     "--------\n"
     ">>> gpuhost.current_context().get_per_thread_default_stream()\n"
     "<Per-thread default CUDA stream on device 0>"},
    {"prepare_for_use", (PyCFunction)(void (*)(void))context_prepare_for_use,
     METH_VARARGS | METH_KEYWORDS,
     "prepare_for_use($self, /)\n--\n\n"
     "Initialize the context's memory manager, as numba does on every push.\n\n"
     "Calls the manager's initialize(); a manager set with set_memory_manager() is\n"
     "initialized here before its first allocation. Calling it again is harmless.\n\n"
     "Examples\n"
     "--------\n"
     ">>> gpuhost.current_context().prepare_for_use()"},
    {"defer_cleanup", (PyCFunction)(void (*)(void))context_defer_cleanup,
     METH_VARARGS | METH_KEYWORDS,
     "defer_cleanup($self, /)\n--\n\n"
     "A context manager that holds releases of memory until it ends, as numba's.\n\n"
     "Memory whose last reference dies inside the block is freed when the block ends (the\n"
     "memory manager's defer_cleanup()): for code that must not synchronize, as freeing can.\n\n"
     "Returns\n"
     "-------\n"
     "context manager\n\n"
     "Examples\n"
     "--------\n"
     ">>> ctx = gpuhost.current_context()\n"
     ">>> with ctx.defer_cleanup():\n"
     "...     m = ctx.memalloc(1024)\n"
     "...     del m  # freed when the block ends"},
    {"create_module_ptx", (PyCFunction)(void (*)(void))context_create_module_ptx,
     METH_VARARGS | METH_KEYWORDS,
     "create_module_ptx($self, ptx, /)\n--\n\n"
     "Load PTX into this context, as numba's.\n\n"
     "Parameters\n"
     "----------\n"
     "ptx : str or bytes\n"
     "    PTX text. gpuhost.Module() loads cubins and fatbins.\n\n"
     "Returns\n"
     "-------\n"
     "Module\n"
     "    Its get_function(name) gives a Kernel.\n\n"
     "Raises\n"
     "------\n"
     "TypeError\n"
     "    If `ptx` is neither str nor bytes.\n"
     "ValueError\n"
     "    For a cubin or fatbin.\n"
     "CudaAPIError\n"
     "    If the driver refuses the PTX.\n\n"
     "Examples\n"
     "--------\n"
     ">>> src = 'extern \"C\" __global__ void k(float *x) { x[threadIdx.x] = 1; }'\n"
     ">>> ptx = gpuhost.compile_ptx_for_current_device(src)  # doctest: +SKIP\n"
     ">>> k = gpuhost.current_context().create_module_ptx(ptx).get_function('k')"
     "  # doctest: +SKIP"},
    {"unload_module", (PyCFunction)(void (*)(void))context_unload_module,
     METH_VARARGS | METH_KEYWORDS,
     "unload_module($self, module, /)\n--\n\n"
     "Unload a module loaded in this context (Module.unload()), as numba's.\n\n"
     "Its kernels cannot be launched afterwards.\n\n"
     "Parameters\n"
     "----------\n"
     "module : gpuhost.Module\n"
     "    From create_module_ptx() (or gpuhost.Module()) in this context.\n\n"
     "Raises\n"
     "------\n"
     "TypeError\n"
     "    If `module` is not a Module.\n"
     "ValueError\n"
     "    If it was loaded in another context.\n\n"
     "Examples\n"
     "--------\n"
     ">>> ctx = gpuhost.current_context()\n"
     ">>> ctx.unload_module(ctx.create_module_ptx(ptx))  # doctest: +SKIP\n"
     ">>> ctx.unload_module(\"not a module\")\n"
     "Traceback (most recent call last):\n"
     "    ...\n"
     "TypeError: unload_module() takes a Module (create_module_ptx()), not str"},
    {"get_active_blocks_per_multiprocessor",
     (PyCFunction)(void (*)(void))context_get_active_blocks_per_multiprocessor,
     METH_VARARGS | METH_KEYWORDS,
     "get_active_blocks_per_multiprocessor($self, func, blocksize, memsize, flags=None)\n--\n\n"
     "numba's occupancy query: how many blocks fit on one multiprocessor.\n\n"
     "Kernel.max_active_blocks_per_multiprocessor() asks the same of a kernel.\n\n"
     "Parameters\n"
     "----------\n"
     "func : Kernel\n"
     "    A kernel loaded in this context.\n"
     "blocksize : int\n"
     "    Threads per block.\n"
     "memsize : int\n"
     "    Bytes of dynamic shared memory per block.\n"
     "flags : None or 0, optional\n"
     "    CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE is not supported.\n\n"
     "Returns\n"
     "-------\n"
     "int\n\n"
     "Raises\n"
     "------\n"
     "TypeError\n"
     "    If `func` is not a Kernel.\n"
     "ValueError\n"
     "    If `func` belongs to another context, or for unknown `flags`.\n"
     "NotImplementedError\n"
     "    For CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE."},
    {"get_max_potential_block_size",
     (PyCFunction)(void (*)(void))context_get_max_potential_block_size,
     METH_VARARGS | METH_KEYWORDS,
     "get_max_potential_block_size($self, func, b2d_func, memsize, blocksizelimit, "
     "flags=None)\n--\n\n"
     "numba's launch configurator: the block size that keeps most threads resident.\n\n"
     "Parameters\n"
     "----------\n"
     "func : Kernel\n"
     "    A kernel loaded in this context.\n"
     "b2d_func : callable, int or None\n"
     "    The dynamic shared memory of a block size: a callable, or the address of a C\n"
     "    function size_t (*)(int). 0 or None: `memsize` bytes at every size.\n"
     "memsize : int\n"
     "    Bytes of dynamic shared memory per block, when `b2d_func` is None.\n"
     "blocksizelimit : int\n"
     "    The largest block size to consider; 0: no limit.\n"
     "flags : None or 0, optional\n"
     "    As for get_active_blocks_per_multiprocessor().\n\n"
     "Returns\n"
     "-------\n"
     "tuple of int\n"
     "    (min_grid_size, block_size): the block size, and the smallest grid that fills\n"
     "    the device with it.\n\n"
     "Examples\n"
     "--------\n"
     ">>> ctx = gpuhost.current_context()\n"
     ">>> grid, block = ctx.get_max_potential_block_size(k, None, 0, 0)  # doctest: +SKIP"},
    {"can_access_peer", (PyCFunction)context_can_access_peer, METH_O,
     "can_access_peer($self, peer_device, /)\n--\n\n"
     "numba's name: whether this context's device can access `peer_device`'s memory "
     "directly (a device id, Device or Context); see Device.can_access_peer."},
    {"enable_peer_access", (PyCFunction)context_enable_peer_access, METH_O,
     "enable_peer_access($self, peer, /)\n--\n\n"
     "Let this context use the memory of `peer`'s device directly "
     "(cuCtxEnablePeerAccess).\n\n"
     "Kernels and copies in this context then read and write the peer's memory.\n"
     "One direction only: call it on both contexts for both. Enabling twice is not an\n"
     "error.\n\n"
     "Parameters\n"
     "----------\n"
     "peer : Device, Context or int\n"
     "    The other device, or its id.\n\n"
     "Raises\n"
     "------\n"
     "ValueError\n"
     "    For this context's own device.\n"
     "CudaAPIError\n"
     "    CUDA_ERROR_PEER_ACCESS_UNSUPPORTED where Device.can_access_peer() is False.\n\n"
     "Examples\n"
     "--------\n"
     ">>> if gpuhost.gpus[0].can_access_peer(gpuhost.gpus[1]):  # doctest: +SKIP\n"
     "...     gpuhost.gpus[0].get_primary_context().enable_peer_access(1)"},
    {"disable_peer_access", (PyCFunction)context_disable_peer_access, METH_O,
     "disable_peer_access($self, peer, /)\n--\n\n"
     "Stop this context using `peer`'s device's memory directly (cuCtxDisablePeerAccess).\n\n"
     "Undoes enable_peer_access(peer), in this direction only. Disabling access that is not\n"
     "enabled is not an error.\n\n"
     "Parameters\n"
     "----------\n"
     "peer : gpuhost.Device, gpuhost.Context or int\n"
     "    The other device, or its id.\n\n"
     "Raises\n"
     "------\n"
     "ValueError\n"
     "    For this context's own device.\n\n"
     "Examples\n"
     "--------\n"
     ">>> ctx = gpuhost.gpus[0].get_primary_context()\n"
     ">>> if gpuhost.gpus[0].can_access_peer(gpuhost.gpus[1]):  # doctest: +SKIP\n"
     "...     ctx.enable_peer_access(1)\n"
     "...     ctx.disable_peer_access(1)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef context_getset[] = {
    {"device", (getter)context_get_device, NULL, "The Device this context belongs to.", NULL},
    {"handle", (getter)context_get_handle, NULL,
     "The CUcontext as an int, or None while gpuhost holds no retain on it.", NULL},
    {"memory_manager", (getter)context_get_memory_manager, (setter)context_set_memory_manager,
     "The context's memory manager (numba's EMM interface): an EMM plugin's instance, or "
     "gpuhost's DefaultMemoryManager. Assigning a plugin instance makes this context's device "
     "arrays allocate through it.",
     NULL},
    {"deallocations", (getter)context_get_deallocations, NULL,
     "numba's pending-deallocation queue: the freed blocks the default pool holds (len(), "
     "clear()).",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* Weak references: numba's EMM plugins hold their context through weakref.proxy. */
static PyMemberDef context_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(gh_context, weakreflist), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot context_slots[] = {
    {Py_tp_members, context_members},
    {Py_tp_doc, "A device's primary context, as gpuhost holds it, numba.cuda's Context.\n\n"
                "Get one from current_context() or Device.get_primary_context(); it is not\n"
                "made directly. Everything that owns device resources (arrays, streams,\n"
                "events, modules) belongs to the context it was made in.\n\n"
                "Examples\n"
                "--------\n"
                ">>> ctx = gpuhost.current_context()\n"
                ">>> ctx.device is gpuhost.get_current_device()\n"
                "True\n"
                ">>> ctx.get_memory_info().total == ctx.device.total_memory\n"
                "True"},
    {Py_tp_methods, context_methods},
    {Py_tp_getset, context_getset},
    {Py_tp_repr, context_repr},
    {Py_tp_traverse, context_traverse},
    {Py_tp_clear, context_clear},
    {Py_tp_dealloc, context_dealloc},
    {0, NULL},
};

static PyType_Spec context_spec = {
    .name = "gpuhost.Context",
    .basicsize = sizeof(gh_context),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = context_slots,
};

/* MemoryInfo is a collections.namedtuple, as numba's is: an EMM plugin's get_memory_info()
   builds it by keyword (MemoryInfo(free=..., total=...)), which a struct sequence does not
   take.  Made once per module instance, at import; new reference or NULL. */
static PyTypeObject *
memory_info_type_new(void)
{
    PyObject *collections = NULL, *namedtuple = NULL, *args = NULL, *kwargs = NULL;
    PyObject *doc = NULL, *tp = NULL;

    collections = PyImport_ImportModule("collections");
    if (collections == NULL) {
        goto done;
    }
    namedtuple = PyObject_GetAttrString(collections, "namedtuple");
    args = Py_BuildValue("(ss)", "MemoryInfo", "free total");
    kwargs = Py_BuildValue("{ss}", "module", "gpuhost");
    doc = PyUnicode_FromString(
        "MemoryInfo(free, total): a device's free and total memory in bytes, as "
        "Context.get_memory_info() returns it (numba's named tuple).");
    if (namedtuple == NULL || args == NULL || kwargs == NULL || doc == NULL) {
        goto done;
    }
    tp = PyObject_Call(namedtuple, args, kwargs);
    if (tp != NULL && PyObject_SetAttrString(tp, "__doc__", doc) < 0) {
        Py_CLEAR(tp);
    }
done:
    Py_XDECREF(doc);
    Py_XDECREF(kwargs);
    Py_XDECREF(args);
    Py_XDECREF(namedtuple);
    Py_XDECREF(collections);
    return (PyTypeObject *)tp;
}

int
gh_context_init_type(PyObject *module, gh_state *st)
{
    st->ContextType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &context_spec, NULL);
    if (st->ContextType == NULL || PyModule_AddType(module, st->ContextType) < 0) {
        return -1;
    }
    st->MemoryInfoType = memory_info_type_new();
    if (st->MemoryInfoType == NULL) {
        return -1;
    }
    return PyModule_AddType(module, st->MemoryInfoType);
}

int
gh_context_check_alive(gh_context *ctx, uint64_t generation, gh_cu_id id)
{
    char detail[256];
    if (ctx->handle != NULL && ctx->generation == generation) {
        return 0;
    }
    if (ctx->ended_by == NULL) {
        return gh_raise_cuda(CUDA_ERROR_CONTEXT_IS_DESTROYED, id);
    }
    PyOS_snprintf(detail, sizeof(detail),
                  "This object was made in device %d's context before %s ended it: nothing "
                  "made before can be used again; make it anew (the device itself works).",
                  ctx->device->id, ctx->ended_by);
    return gh_raise_cuda_detail(CUDA_ERROR_CONTEXT_IS_DESTROYED, id, detail);
}
