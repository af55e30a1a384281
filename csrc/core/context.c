/* Context: a device's primary context, numba.cuda's model (docs/development/architecture.md,
 * decision 4).
 *
 * gpuhost uses only primary contexts, which CuPy, PyTorch and numba share: one Context
 * object per Device, holding one retain while in use.  The current context is the
 * driver's, per thread; the functions here push, pop and switch it.
 */
#include "core_internal.h"

#include "context_docs.h"

static PyObject *plugin_call(gh_context *ctx, gh_helper h);

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
    ctx->order_event = NULL;
    ctx->order_generation = 0;
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
    if (ctx->order_event != NULL && ctx->order_generation == ctx->generation) {
        res = gh_cu.EventDestroy(ctx->order_event);
        if (res != CUDA_SUCCESS) {
            gh_warn_cleanup(res, GH_CU_EventDestroy);
        }
    }
    ctx->order_event = NULL;
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
        gh_raise(GH_EXC_CUDA_DRIVER,
                 "the context current in this thread (%p) is not a device's primary context; "
                 "gpuhost works in primary contexts (which CuPy, PyTorch and numba share): "
                 "pop the other context first",
                 (void *)cur);
        return NULL;
    }
    if (wanted != NULL && wanted != ctx->device) {
        gh_raise(GH_EXC_CUDA_DRIVER,
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
        return gh_raise(GH_EXC_CUDA_DRIVER,
                        "cannot pop device %d's context: this thread's context stack is empty",
                        ctx->device->id);
    }
    if (context_for_current(st, cur, &top) < 0) {
        PyErr_Clear();
    }
    if (top != NULL) {
        return gh_raise(GH_EXC_CUDA_DRIVER,
                        "cannot pop device %d's context: it is not on top of this thread's "
                        "context stack (device %d's is)",
                        ctx->device->id, top->device->id);
    }
    return gh_raise(GH_EXC_CUDA_DRIVER,
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
    gh_state *st = gh_state_of_type(Py_TYPE(ctx));
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
    res_obj = plugin_call(ctx, GH_HELPER_PLUGIN_CONTEXT_RESET); /* an EMM plugin's reset() */
    if (res_obj == NULL) {
        return -1;
    }
    Py_DECREF(res_obj);
    st->pool_hooks.context_ending(st, ctx); /* the pools' blocks, before its memory goes */
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
                st->pool_hooks.context_ending(st, (gh_context *)((gh_device *)dev)->context);
                context_release((gh_context *)((gh_device *)dev)->context, "gpuhost.close()");
            }
        }
    }
    return 0;
}

/* ---- what an EMM plugin answers ---- */

/* An EMM plugin's answer for `ctx` (gpuhost/memory_manager.py's helper `h`, registered
   when that module is imported): a new reference, Py_None (no plugin manages `ctx`, or the
   module was never imported), or NULL with an exception. */
static PyObject *
plugin_call(gh_context *ctx, gh_helper h)
{
    gh_state *st = gh_state_of_type(Py_TYPE(ctx));
    PyObject *args;
    if (st->helpers[h] == NULL) {
        Py_RETURN_NONE; /* never imported: no plugin can be in use */
    }
    args = PyTuple_Pack(1, (PyObject *)ctx);
    PyObject *res = args != NULL ? gh_helper_call(st, h, args) : NULL;
    Py_XDECREF(args);
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
    PyObject *info = plugin_call(self, GH_HELPER_PLUGIN_MEMORY_INFO);

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
     context_get_memory_info_doc},
    {"synchronize", (PyCFunction)context_synchronize, METH_NOARGS, context_synchronize_doc},
    {"push", (PyCFunction)context_push, METH_NOARGS, context_push_doc},
    {"pop", (PyCFunction)context_pop, METH_NOARGS, context_pop_doc},
    {"reset", (PyCFunction)context_reset, METH_NOARGS, context_reset_doc},
    {"can_access_peer", (PyCFunction)context_can_access_peer, METH_O, context_can_access_peer_doc},
    {"enable_peer_access", (PyCFunction)context_enable_peer_access, METH_O,
     context_enable_peer_access_doc},
    {"disable_peer_access", (PyCFunction)context_disable_peer_access, METH_O,
     context_disable_peer_access_doc},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef context_getset[] = {
    {"device", (getter)context_get_device, NULL, context_device_doc, NULL},
    {"handle", (getter)context_get_handle, NULL, context_handle_doc, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* Weak references: numba's EMM plugins hold their context through weakref.proxy. */
static PyMemberDef context_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(gh_context, weakreflist), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot context_slots[] = {
    {Py_tp_members, context_members},
    {Py_tp_doc, (void *)context_doc},
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
/* Give field `name` of the named tuple `tp` the docstring `doc`; 0 or -1. */
static int
set_field_doc(PyObject *tp, const char *name, const char *doc)
{
    PyObject *field = PyObject_GetAttrString(tp, name), *text = PyUnicode_FromString(doc);
    int res = field != NULL && text != NULL ? PyObject_SetAttrString(field, "__doc__", text) : -1;
    Py_XDECREF(text);
    Py_XDECREF(field);
    return res;
}

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
    doc = PyUnicode_FromString(memory_info_doc);
    if (namedtuple == NULL || args == NULL || kwargs == NULL || doc == NULL) {
        goto done;
    }
    tp = PyObject_Call(namedtuple, args, kwargs);
    if (tp != NULL && (PyObject_SetAttrString(tp, "__doc__", doc) < 0 ||
                       set_field_doc(tp, "free", memory_info_free_doc) < 0 ||
                       set_field_doc(tp, "total", memory_info_total_doc) < 0)) {
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
