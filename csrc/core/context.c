/* Context: a device's primary context, numba.cuda's model (docs/development/architecture.md,
 * decision 4).
 *
 * gpuhost uses only primary contexts, which CuPy, PyTorch and numba share: one Context
 * object per Device, holding one retain while in use.  The current context is the
 * driver's, per thread; the functions here push, pop and switch it.
 */
#include "core_internal.h"

#include "context_docs.h"

#include <string.h>

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
    ctx->live_since = 0;
    ctx->capturing = 0;
    memset(ctx->stale, 0, sizeof(ctx->stale));
    ctx->context_ended_by = NULL;
    ctx->ended_by = NULL;
    ctx->order_event = NULL;
    ctx->order_generation = 0;
    ctx->weakreflist = NULL;
    PyObject_GC_Track(ctx);
    dev->context = (PyObject *)ctx; /* the Device owns it */
    return ctx;
}

/* Whether `handle` is one gpuhost held for `ctx` before (not NULL). */
static int
context_was(const gh_context *ctx, CUcontext handle)
{
    for (int i = 0; handle != NULL && i < GH_CONTEXT_STALE; i++) {
        if (ctx->stale[i] == handle) {
            return 1;
        }
    }
    return 0;
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

/* gpuhost's retain of `ctx` is gone (released, or lost with a failed call): objects of the
   generations before are stale, their handles dead to gpuhost (`why` says what ended them,
   for their errors).  Never raises. */
static void
context_release_done(gh_context *ctx, const char *why)
{
    if (ctx->handle != NULL && ctx->handle != ctx->stale[0]) {
        memmove(&ctx->stale[1], &ctx->stale[0], sizeof(ctx->stale) - sizeof(ctx->stale[0]));
        ctx->stale[0] = ctx->handle;
    }
    ctx->handle = NULL;
    ctx->order_event = NULL;
    ctx->generation++;
    ctx->live_since = ctx->generation; /* whether the context outlives the retain is not known */
    ctx->ended_by = why;
    ctx->context_ended_by = why;
}

/* Drop gpuhost's retain; objects made before are now stale.  Never raises. */
static void
context_release(gh_context *ctx, const char *why)
{
    CUresult res;
    if (ctx->handle == NULL) {
        return;
    }
    if (ctx->order_event != NULL && gh_context_handle_live(ctx, ctx->order_generation)) {
        res = gh_cu.EventDestroy(ctx->order_event);
        if (res != CUDA_SUCCESS) {
            gh_warn_cleanup(res, GH_CU_EventDestroy);
        }
    }
    res = gh_cu.DevicePrimaryCtxRelease(ctx->device->handle);
    if (res != CUDA_SUCCESS) {
        gh_warn_cleanup(res, GH_CU_DevicePrimaryCtxRelease);
    }
    context_release_done(ctx, why);
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
    /* A handle gpuhost gave up, still current (a reset of the device in another thread, or
       deeper in this thread's stack than it reached; close() in another thread): it stands
       for the device's context, which takes its place. */
    for (Py_ssize_t i = 0; st->devices != NULL && i < PyList_GET_SIZE(st->devices); i++) {
        PyObject *item = PyList_GET_ITEM(st->devices, i); /* borrowed */
        gh_context *c = item != Py_None ? (gh_context *)((gh_device *)item)->context : NULL;
        if (c != NULL && context_was(c, cur)) {
            if (gh_context_make_current(c) < 0) {
                return -1;
            }
            *out = c;
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
    if (ctx->handle == NULL && ctx->ended_by != NULL) {
        /* close() or a reset of the device ended it inside the block, and took its handle
           off this thread's stack (or left the handle that went, which goes now) */
        return context_was(ctx, cur) ? gh_check(gh_cu.CtxPopCurrent(&popped), GH_CU_CtxPopCurrent)
                                     : 0;
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

/* What gpuhost made in `ctx` before its present generation: the releases held for it, then
   the floors' hooks (every Allocation's memory, the pools' blocks, the Modules), with this
   thread's capture mode relaxed so that another thread's capture does not refuse the frees.
   Never raises. */
static void
free_what_gpuhost_made(gh_state *st, gh_context *ctx)
{
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    int relaxed;

    if (ctx->handle == NULL) {
        return; /* no retain: what gpuhost made went with close() or a reset of the device */
    }
    relaxed = gh_cu.ThreadExchangeStreamCaptureMode(&mode) == CUDA_SUCCESS;
    gh_release_held_of(st, ctx);
    for (int i = 0; i < st->n_reset_hooks; i++) {
        st->reset_hooks[i](st, ctx);
    }
    if (relaxed) {
        gh_cu.ThreadExchangeStreamCaptureMode(&mode);
    }
}

/* Refuse a reset while a gpuhost stream captures in `ctx`; 0 or -1. */
static int
check_not_capturing(gh_context *ctx, const char *what)
{
    if (ctx->capturing <= 0) {
        return 0;
    }
    return gh_raise(GH_EXC_STREAM_CAPTURE,
                    "%s of device %d while %d gpuhost stream%s capturing a graph in its "
                    "context: the capture may use the memory and code a reset frees; "
                    "end_capture() first",
                    what, ctx->device->id, ctx->capturing, ctx->capturing == 1 ? " is" : "s are");
}

/* A reset of what gpuhost made in `ctx` (`what` names the call for the errors): the EMM
   plugin's reset() if `ask_plugin` (close() resets every plugin itself), the generation,
   then the frees.  0 or -1. */
static int
reset_made(gh_context *ctx, int ask_plugin, const char *what)
{
    gh_state *st = gh_state_of_type(Py_TYPE(ctx));
    PyObject *res_obj;

    if (check_not_capturing(ctx, what) < 0) {
        return -1;
    }
    if (ask_plugin) {
        res_obj = plugin_call(ctx, GH_HELPER_PLUGIN_CONTEXT_RESET); /* an EMM plugin's reset() */
        if (res_obj == NULL) {
            return -1;
        }
        Py_DECREF(res_obj);
    }
    /* First the generation: from here another thread that uses an array, a module or a graph
       made before gets the error, never memory being freed under it. */
    ctx->generation++;
    ctx->ended_by = what;
    free_what_gpuhost_made(st, ctx);
    return 0;
}

int
gh_context_reset(gh_context *ctx)
{
    return reset_made(ctx, 1, "Context.reset()");
}

/* DeviceResetWarning naming the other libraries that hold `dev`'s primary context (the
   helper gpuhost/devices.py registers names them from what this process imported; `forced`:
   the reset goes on regardless); 0, or -1 when a warnings filter made it an error. */
static int
warn_others_hold(gh_state *st, gh_device *dev, int forced)
{
    PyObject *args, *res;
    if (st->helpers[GH_HELPER_DEVICE_RESET_WARNING] == NULL) {
        return 0; /* gpuhost's Python side was never imported: _core used alone */
    }
    args = Py_BuildValue("(iO)", dev->id, forced ? Py_True : Py_False);
    res = args != NULL ? gh_helper_call(st, GH_HELPER_DEVICE_RESET_WARNING, args) : NULL;
    Py_XDECREF(args);
    Py_XDECREF(res);
    return res == NULL ? -1 : 0;
}

/* Let go of gpuhost's retain of `ctx`'s primary context, keeping the handle (and in *id its
   cuCtxGetId, 0 if unknown) to take it back, and say whether the context stays active for
   another library: 1, 0 (no one else: the release destroyed it), or -1 with the driver's
   error (the retain then stays gpuhost's). */
static int
release_and_ask(gh_context *ctx, unsigned long long *id)
{
    unsigned int flags = 0;
    int active = 0;

    *id = 0;
    if (ctx->handle != NULL) {
        if (gh_cu.CtxGetId(ctx->handle, id) != CUDA_SUCCESS) {
            *id = 0;
        }
        if (gh_check(gh_cu.DevicePrimaryCtxRelease(ctx->device->handle),
                     GH_CU_DevicePrimaryCtxRelease) < 0) {
            return -1;
        }
    }
    if (gh_check(gh_cu.DevicePrimaryCtxGetState(ctx->device->handle, &flags, &active),
                 GH_CU_DevicePrimaryCtxGetState) < 0) {
        context_release_done(ctx, "Device.reset()"); /* the retain went all the same */
        return -1;
    }
    return active;
}

/* Other libraries hold the context gpuhost let go of, and it stays theirs: gpuhost retains
   it again.  If it is the same context (its id), what gpuhost made there that a reset leaves
   (streams, events) goes on; else it counts as a new one.  0 or -1. */
static int
retake(gh_context *ctx, unsigned long long id)
{
    unsigned long long now = 0;
    CUcontext handle = NULL, had = ctx->handle;
    CUresult res = gh_cu.DevicePrimaryCtxRetain(&handle, ctx->device->handle);

    if (res != CUDA_SUCCESS) {
        context_release_done(ctx, "Device.reset()");
        return gh_check(res, GH_CU_DevicePrimaryCtxRetain);
    }
    if (had == NULL || id == 0 || handle != had || gh_cu.CtxGetId(handle, &now) != CUDA_SUCCESS ||
        now != id) {
        context_release_done(ctx, "Device.reset()"); /* stale: not the context it was */
    }
    ctx->handle = handle;
    return 0;
}

/* Whether the top of this thread's context stack is a handle of `ctx`'s (held, or given up
   before): 1, 0, or -1 with the driver's error. */
static int
on_top(gh_context *ctx)
{
    CUcontext cur = NULL;
    if (gh_check(gh_cu.CtxGetCurrent(&cur), GH_CU_CtxGetCurrent) < 0) {
        return -1;
    }
    return cur != NULL && (cur == ctx->handle || context_was(ctx, cur));
}

int
gh_device_reset(gh_state *st, gh_device *dev, int force)
{
    gh_context *ctx = gh_context_of(st, dev);
    unsigned long long id;
    int others, was_current;
    CUresult res;

    /* A handle gpuhost gave up may be current too (a reset or close that failed half-way,
       another thread's reset): the device's new context takes its place as well. */
    if (ctx == NULL || (was_current = on_top(ctx)) < 0 ||
        reset_made(ctx, 1, "Device.reset()") < 0) {
        return -1;
    }
    st->pool_hooks.context_ending(st, ctx);
    if (ctx->order_event != NULL && gh_context_handle_live(ctx, ctx->order_generation)) {
        gh_release(ctx, ctx->order_generation, GH_CU_EventDestroy, ctx->order_event);
    }
    ctx->order_event = NULL;
    /* With gpuhost's retain gone, the context stays active only for another library
       (PyTorch, CuPy, JAX, numba's driver).  Destroying it under them ends their state and
       can crash the process when they free it at exit (CuPy's cuBLAS handles do), so then
       it is destroyed only if forced. */
    others = release_and_ask(ctx, &id);
    if (others < 0) {
        return -1;
    }
    if (others && (warn_others_hold(st, dev, force) < 0 || !force)) {
        int raised = PyErr_Occurred() != NULL; /* a warnings filter made it an error */
        return retake(ctx, id) < 0 || raised ? -1 : 0;
    }
    context_release_done(ctx, "Device.reset()");
    Py_BEGIN_ALLOW_THREADS
    res = gh_cu.DevicePrimaryCtxReset(dev->handle);
    Py_END_ALLOW_THREADS
    ctx->generation++;
    ctx->live_since = ctx->generation;
    if (gh_check(res, GH_CU_DevicePrimaryCtxReset) < 0) {
        return -1;
    }
    /* numba leaves the destroyed handle current, on which the next call fails; here the
       device's new context takes its place (one deeper in the stack, or another thread's,
       is replaced when it comes up: context_for_current) */
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
            gh_context *ctx = dev != Py_None ? (gh_context *)((gh_device *)dev)->context : NULL;
            if (ctx != NULL && ctx->handle != NULL) {
                /* what gpuhost made goes first: the context may live on for other libraries */
                if (reset_made(ctx, 0, "gpuhost.close()") < 0) {
                    return -1;
                }
                st->pool_hooks.context_ending(st, ctx);
                context_release(ctx, "gpuhost.close()");
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

/* The error of an object of `generation` used after what ended it: the driver context it
   was made in went (close(), a reset of the device), or a Context.reset() freed its memory
   or code while the context lives on. */
static int
raise_ended(gh_context *ctx, uint64_t generation, gh_cu_id id)
{
    char detail[400];
    if (gh_context_handle_live(ctx, generation)) {
        PyOS_snprintf(detail, sizeof(detail),
                      "This object was made in device %d's context before Context.reset() "
                      "freed the memory and code gpuhost had made there: arrays, modules, "
                      "kernels and graphs made before cannot be used again (streams and events "
                      "can); make it anew.",
                      ctx->device->id);
        return gh_raise_cuda_detail(CUDA_ERROR_INVALID_HANDLE, id, detail);
    }
    if (ctx->context_ended_by == NULL) {
        return gh_raise_cuda(CUDA_ERROR_CONTEXT_IS_DESTROYED, id);
    }
    PyOS_snprintf(detail, sizeof(detail),
                  "This object was made in device %d's context before %s ended it: nothing "
                  "made before can be used again; make it anew (the device itself works).",
                  ctx->device->id, ctx->context_ended_by);
    return gh_raise_cuda_detail(CUDA_ERROR_CONTEXT_IS_DESTROYED, id, detail);
}

int
gh_context_check_alive(gh_context *ctx, uint64_t generation, gh_cu_id id)
{
    if (ctx->handle != NULL && ctx->generation == generation) {
        return 0;
    }
    return raise_ended(ctx, generation, id);
}

int
gh_context_check_live(gh_context *ctx, uint64_t generation, gh_cu_id id)
{
    if (gh_context_handle_live(ctx, generation)) {
        return 0;
    }
    return raise_ended(ctx, generation, id);
}
