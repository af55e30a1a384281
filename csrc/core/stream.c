/* Stream: a CUDA stream (CUstream), numba.cuda's Stream.
 *
 * gpuhost's own streams are destroyed with their object; the default, legacy,
 * per-thread and external streams are only referred to.  Host callbacks take the GIL on
 * the driver's thread, so every call here that can wait on queued work releases it.
 * `stream=` arguments everywhere are resolved by gh_stream_resolve().
 */
#include "core_internal.h"

#include "stream_docs.h"

#include <stdarg.h>
#include <string.h>

/* ---- resolving stream= arguments ---- */

int
gh_stream_handle_check(uintptr_t h, const char *what)
{
    if (h <= 2 || (h >= 65536 && (h & 7) == 0 && (uint64_t)h < ((uint64_t)1 << 56))) {
        return 0;
    }
    PyErr_Format(PyExc_ValueError,
                 "%s %p is not a CUDA stream handle (the address of a live stream in this "
                 "process)",
                 what, (void *)h);
    return -1;
}

/* The stream handle in obj.__cuda_stream__() (cuda.core's protocol: (version, handle)). */
static int
handle_from_protocol(PyObject *obj, CUstream *out)
{
    PyObject *res = PyObject_CallMethod(obj, "__cuda_stream__", NULL);
    void *ptr;
    if (res == NULL) {
        return -1;
    }
    if (!PyTuple_Check(res) || PyTuple_GET_SIZE(res) != 2 ||
        !PyLong_Check(PyTuple_GET_ITEM(res, 1))) {
        PyErr_Format(PyExc_TypeError, "%s.__cuda_stream__() must return (version, handle), not %R",
                     Py_TYPE(obj)->tp_name, res);
        Py_DECREF(res);
        return -1;
    }
    ptr = PyLong_AsVoidPtr(PyTuple_GET_ITEM(res, 1));
    Py_DECREF(res);
    if ((ptr == NULL && PyErr_Occurred()) ||
        gh_stream_handle_check((uintptr_t)ptr, "the __cuda_stream__() handle") < 0) {
        return -1;
    }
    *out = (CUstream)ptr;
    return 0;
}

/* The handle in an int attribute `name` of obj (CuPy's .ptr, PyTorch's .cuda_stream). */
static int
handle_from_attr(PyObject *obj, const char *name, CUstream *out)
{
    PyObject *value = PyObject_GetAttrString(obj, name);
    void *ptr;
    if (value == NULL) {
        return -1;
    }
    ptr = PyLong_Check(value) ? PyLong_AsVoidPtr(value) : NULL;
    if (!PyLong_Check(value)) {
        PyErr_Format(PyExc_TypeError, "%s.%s is not an int", Py_TYPE(obj)->tp_name, name);
    }
    Py_DECREF(value);
    if (PyErr_Occurred() || gh_stream_handle_check((uintptr_t)ptr, "the stream's handle") < 0) {
        return -1;
    }
    *out = (CUstream)ptr;
    return 0;
}

/* 1 if the type's module starts with `prefix` (e.g. "cupy"), else 0. */
static int
type_from_package(PyObject *obj, const char *prefix)
{
    PyObject *mod = PyObject_GetAttrString((PyObject *)Py_TYPE(obj), "__module__");
    const char *name = (mod != NULL && PyUnicode_Check(mod)) ? PyUnicode_AsUTF8(mod) : NULL;
    int match = name != NULL && strncmp(name, prefix, strlen(prefix)) == 0;
    Py_XDECREF(mod);
    PyErr_Clear();
    return match;
}

static int
is_default_handle(CUstream h)
{
    return h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD;
}

int
gh_stream_check_device(const gh_context *stream, const gh_context *ctx, const char *fmt, ...)
{
    va_list va;
    PyObject *what;
    if (stream == NULL || stream == ctx) {
        return 0;
    }
    va_start(va, fmt);
    what = PyUnicode_FromFormatV(fmt, va);
    va_end(va);
    if (what == NULL) {
        return -1;
    }
    gh_raise(GH_EXC_CUDA_DRIVER, "%U on device %d but the stream is device %d's", what,
             ctx->device->id, stream->device->id);
    Py_DECREF(what);
    return -1;
}

int
gh_stream_resolve(gh_state *st, PyObject *obj, gh_stream_ref *out)
{
    int has_protocol;
    out->handle = NULL;
    out->context = NULL;
    out->is_default = 1;
    if (obj == NULL || obj == Py_None) {
        return 0;
    }
    if (Py_IS_TYPE(obj, st->StreamType)) {
        gh_stream *s = (gh_stream *)obj;
        out->handle = s->handle;
        out->context = s->context;
        out->is_default = s->kind != GH_STREAM_OWNED && s->kind != GH_STREAM_EXTERNAL;
        return gh_context_check_live(s->context, s->generation, GH_CU_StreamQuery);
    }
    if (PyLong_CheckExact(obj) || PyBool_Check(obj)) {
        if (PyLong_CheckExact(obj) && PyLong_AsLong(obj) == 0 && !PyErr_Occurred()) {
            return 0;
        }
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError,
                     "stream=%R: the only int accepted is 0 (the default stream); wrap a raw "
                     "CUstream with external_stream(ptr)",
                     obj);
        return -1;
    }
    has_protocol = PyObject_HasAttrString(obj, "__cuda_stream__");
    if (has_protocol && handle_from_protocol(obj, &out->handle) < 0) {
        return -1;
    }
    if (!has_protocol) {
        if (type_from_package(obj, "cupy") && PyObject_HasAttrString(obj, "ptr")) {
            if (handle_from_attr(obj, "ptr", &out->handle) < 0) {
                return -1;
            }
        }
        else if (type_from_package(obj, "torch") && PyObject_HasAttrString(obj, "cuda_stream")) {
            if (handle_from_attr(obj, "cuda_stream", &out->handle) < 0) {
                return -1;
            }
        }
        else {
            PyErr_Format(PyExc_TypeError,
                         "stream must be a gpuhost Stream, 0 or None (the default stream), or a "
                         "stream exporting __cuda_stream__ (cuda.core, CuPy, PyTorch), not %s",
                         Py_TYPE(obj)->tp_name);
            return -1;
        }
    }
    out->is_default = is_default_handle(out->handle);
    return 0;
}

/* ---- ordering one stream after another ---- */

/* The context's ordering event, made on first use; `ctx` is current.  A CUresult. */
static CUresult
order_event(gh_context *ctx, CUevent *out)
{
    CUresult res = CUDA_SUCCESS;
    if (ctx->order_event == NULL || !gh_context_handle_live(ctx, ctx->order_generation)) {
        ctx->order_event = NULL;
        res = gh_cu.EventCreate(&ctx->order_event, CU_EVENT_DISABLE_TIMING);
        ctx->order_generation = ctx->generation;
    }
    *out = ctx->order_event;
    return res;
}

/* One event serves every ordering: cuStreamWaitEvent waits for the record made just before
   it, and later records do not change what an earlier wait waits for.  The GIL is held
   from the record to the wait, so no other thread of gpuhost records in between. */
int
gh_stream_order_after(gh_context *pctx, CUstream producer, gh_context *cctx, CUstream consumer)
{
    CUevent ev = NULL;
    CUresult res;
    gh_cu_id id = GH_CU_EventCreate;
    int pushed;

    if (gh_context_activate(pctx) < 0 || gh_context_enter(pctx, &pushed) < 0) {
        return -1;
    }
    res = order_event(pctx, &ev);
    if (res == CUDA_SUCCESS) {
        id = GH_CU_EventRecord;
        res = gh_cu.EventRecord(ev, producer);
    }
    if (res == CUDA_SUCCESS && cctx == pctx) {
        id = GH_CU_StreamWaitEvent;
        res = gh_cu.StreamWaitEvent(consumer, ev, 0);
    }
    if (gh_context_leave(pctx, pushed) < 0 || gh_check(res, id) < 0) {
        return -1;
    }
    if (cctx == pctx) {
        return 0;
    }
    if (gh_context_activate(cctx) < 0 || gh_context_enter(cctx, &pushed) < 0) {
        return -1;
    }
    res = gh_cu.StreamWaitEvent(consumer, ev, 0);
    if (gh_context_leave(cctx, pushed) < 0) {
        return -1;
    }
    return gh_check(res, GH_CU_StreamWaitEvent);
}

/* ---- making Stream objects ---- */

static gh_stream *
stream_wrap(gh_state *st, gh_context *ctx, CUstream handle, gh_stream_kind kind)
{
    gh_stream *self = PyObject_New(gh_stream, st->StreamType);
    if (self == NULL) {
        return NULL;
    }
    self->context = (gh_context *)Py_NewRef(ctx);
    self->handle = handle;
    self->generation = ctx->generation;
    self->kind = kind;
    self->launched = 0;
    self->capture = self->capture_kernels = NULL;
    self->weakreflist = NULL;
    gh_live_add(st, GH_LIVE_STREAM, (PyObject *)self);
    return self;
}

/* A Stream of `kind` over `handle` in the current context; new reference or NULL. */
static PyObject *
stream_of_current(PyObject *module, CUstream handle, gh_stream_kind kind)
{
    gh_state *st = gh_state_of_module(module);
    gh_context *ctx = gh_current_context(st, -1);
    gh_stream *self;
    if (ctx == NULL) {
        return NULL;
    }
    self = stream_wrap(st, ctx, handle, kind);
    Py_DECREF(ctx);
    return (PyObject *)self;
}

static PyObject *
mod_stream(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"non_blocking", "priority", NULL};
    int non_blocking = 0, priority = 0, least = 0, greatest = 0;
    gh_state *st = gh_state_of_module(module);
    gh_context *ctx;
    CUstream handle = NULL;
    PyObject *self = NULL;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$pi:stream", kwlist, &non_blocking,
                                     &priority)) {
        return NULL;
    }
    ctx = gh_current_context(st, -1);
    if (ctx == NULL) {
        return NULL;
    }
    if (priority != 0) {
        if (gh_check(gh_cu.CtxGetStreamPriorityRange(&least, &greatest),
                     GH_CU_CtxGetStreamPriorityRange) < 0) {
            goto done;
        }
        if (priority > least || priority < greatest) {
            PyErr_Format(PyExc_ValueError,
                         "stream priority %d is out of range: device %d accepts %d (lowest) "
                         "to %d (highest); lower numbers run first",
                         priority, ctx->device->id, least, greatest);
            goto done;
        }
    }
    if (gh_check(gh_cu.StreamCreateWithPriority(
                     &handle, non_blocking ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT, priority),
                 GH_CU_StreamCreateWithPriority) < 0) {
        goto done;
    }
    self = (PyObject *)stream_wrap(st, ctx, handle, GH_STREAM_OWNED);
    if (self == NULL) {
        gh_cu.StreamDestroy(handle);
    }
done:
    Py_DECREF(ctx);
    return self;
}

PyObject *
gh_stream_of_handle(gh_state *st, gh_context *ctx, CUstream handle)
{
    gh_stream_kind kind = handle == NULL                   ? GH_STREAM_DEFAULT
                          : handle == CU_STREAM_LEGACY     ? GH_STREAM_LEGACY
                          : handle == CU_STREAM_PER_THREAD ? GH_STREAM_PER_THREAD
                                                           : GH_STREAM_EXTERNAL;
    return (PyObject *)stream_wrap(st, ctx, handle, kind);
}

static PyObject *
mod_default_stream(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    return stream_of_current(module, NULL, GH_STREAM_DEFAULT);
}

static PyObject *
mod_legacy_default_stream(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    return stream_of_current(module, CU_STREAM_LEGACY, GH_STREAM_LEGACY);
}

static PyObject *
mod_per_thread_default_stream(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    return stream_of_current(module, CU_STREAM_PER_THREAD, GH_STREAM_PER_THREAD);
}

static PyObject *
mod_external_stream(PyObject *module, PyObject *arg)
{
    void *ptr;
    if (!PyLong_Check(arg)) {
        PyErr_Format(PyExc_TypeError,
                     "external_stream() takes the stream's address as an int, "
                     "not %s",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    if (PyLong_AsLongLong(arg) < 0 && !PyErr_Occurred()) {
        PyErr_SetString(PyExc_ValueError, "external_stream() needs a stream address, not a "
                                          "negative number");
        return NULL;
    }
    PyErr_Clear(); /* a value past long long is checked by PyLong_AsVoidPtr below */
    ptr = PyLong_AsVoidPtr(arg);
    if ((ptr == NULL && PyErr_Occurred()) ||
        gh_stream_handle_check((uintptr_t)ptr, "external_stream():") < 0) {
        return NULL;
    }
    if (ptr == NULL) {
        return stream_of_current(module, NULL, GH_STREAM_DEFAULT);
    }
    if ((CUstream)ptr == CU_STREAM_LEGACY || (CUstream)ptr == CU_STREAM_PER_THREAD) {
        return stream_of_current(module, (CUstream)ptr,
                                 (CUstream)ptr == CU_STREAM_LEGACY ? GH_STREAM_LEGACY
                                                                   : GH_STREAM_PER_THREAD);
    }
    return stream_of_current(module, (CUstream)ptr, GH_STREAM_EXTERNAL);
}

/* _as_stream(stream): a Stream object for any stream= argument (the resolver's view). */
static PyObject *
mod_as_stream(PyObject *module, PyObject *arg)
{
    gh_state *st = gh_state_of_module(module);
    gh_stream_ref ref;
    gh_context *ctx;
    PyObject *res;
    if (gh_stream_resolve(st, arg, &ref) < 0) {
        return NULL;
    }
    if (Py_IS_TYPE(arg, st->StreamType)) {
        return Py_NewRef(arg);
    }
    if ((ctx = gh_current_context(st, -1)) == NULL) {
        return NULL;
    }
    res = gh_stream_of_handle(st, ctx, ref.handle);
    Py_DECREF(ctx);
    return res;
}

PyMethodDef gh_stream_module_methods[] = {
    {"stream", (PyCFunction)(void (*)(void))mod_stream, METH_VARARGS | METH_KEYWORDS,
     stream_module_stream_doc},
    {"default_stream", mod_default_stream, METH_NOARGS, stream_module_default_stream_doc},
    {"legacy_default_stream", mod_legacy_default_stream, METH_NOARGS,
     stream_module_legacy_default_stream_doc},
    {"per_thread_default_stream", mod_per_thread_default_stream, METH_NOARGS,
     stream_module_per_thread_default_stream_doc},
    {"external_stream", mod_external_stream, METH_O, stream_module_external_stream_doc},
    {"_as_stream", mod_as_stream, METH_O, stream_module__as_stream_doc},
    {NULL, NULL, 0, NULL},
};

/* ---- Stream methods ---- */

/* Check the stream is alive for call `id`; a default stream's handle means "the current
   context's", so its context is made current (see gh_context_enter).  0 or -1. */
int
gh_stream_enter(gh_stream *self, gh_cu_id id, int *pushed)
{
    *pushed = 0;
    if (gh_context_check_live(self->context, self->generation, id) < 0) {
        return -1;
    }
    if (self->kind == GH_STREAM_OWNED || self->kind == GH_STREAM_EXTERNAL) {
        return 0; /* the handle names its context */
    }
    return gh_context_enter(self->context, pushed);
}

/* StreamCaptureError for `what` asked of a stream gpuhost captures on; 0 if it does not. */
static int
refuse_while_capturing(gh_stream *self, const char *what)
{
    if (self->capture == NULL) {
        return 0;
    }
    return gh_raise(GH_EXC_STREAM_CAPTURE,
                    "%s cannot be called while the stream is capturing into a graph (it would "
                    "wait for work that does not run until the graph is launched); call "
                    "end_capture() first",
                    what);
}

static PyObject *
stream_synchronize(gh_stream *self, PyObject *Py_UNUSED(ignored))
{
    int pushed;
    gh_cu_id id = GH_CU_StreamQuery;
    CUresult res;
    if (refuse_while_capturing(self, "Stream.synchronize()") < 0) {
        return NULL;
    }
    if (gh_stream_enter(self, GH_CU_StreamSynchronize, &pushed) < 0) {
        return NULL;
    }
    /* An idle stream is answered without giving up the GIL; right after a launch the
       stream is busy, and asking first would only add a driver call. */
    res = self->launched ? CUDA_ERROR_NOT_READY : gh_cu.StreamQuery(self->handle);
    self->launched = 0;
    if (res == CUDA_ERROR_NOT_READY) {
        id = GH_CU_StreamSynchronize;
        Py_BEGIN_ALLOW_THREADS
        res = gh_cu.StreamSynchronize(self->handle);
        Py_END_ALLOW_THREADS
    }
    if (gh_context_leave(self->context, pushed) < 0 || gh_check(res, id) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
stream_query(gh_stream *self, PyObject *Py_UNUSED(ignored))
{
    int pushed;
    CUresult res;
    if (refuse_while_capturing(self, "Stream.query()") < 0) {
        return NULL;
    }
    if (gh_stream_enter(self, GH_CU_StreamQuery, &pushed) < 0) {
        return NULL;
    }
    res = gh_cu.StreamQuery(self->handle);
    if (gh_context_leave(self->context, pushed) < 0) {
        return NULL;
    }
    if (res == CUDA_ERROR_NOT_READY) {
        Py_RETURN_FALSE;
    }
    if (gh_check(res, GH_CU_StreamQuery) < 0) {
        return NULL;
    }
    Py_RETURN_TRUE;
}

static PyObject *
stream_get_done(gh_stream *self, void *Py_UNUSED(closure))
{
    return stream_query(self, NULL);
}

/* The driver's thread calls this; `data` is a (callback, stream, arg) tuple we own. */
static void CUDA_CB
stream_callback_trampoline(CUstream Py_UNUSED(handle), CUresult status, void *data)
{
    PyObject *item = (PyObject *)data, *res;
    PyGILState_STATE gil;

    if (!Py_IsInitialized() || gh_python_finalizing()) {
        return; /* the interpreter is going away: drop the callback (and its references) */
    }
    gil = PyGILState_Ensure();
    gh_on_driver_thread = 1; /* objects dying here defer their CUDA calls */
    res = PyObject_CallFunction(PyTuple_GET_ITEM(item, 0), "OiO", PyTuple_GET_ITEM(item, 1),
                                (int)status, PyTuple_GET_ITEM(item, 2));
    if (res == NULL) {
        PyErr_WriteUnraisable(PyTuple_GET_ITEM(item, 0));
    }
    Py_XDECREF(res);
    Py_DECREF(item);
    gh_on_driver_thread = 0;
    PyGILState_Release(gil);
}

/* A host function run once (cuLaunchHostFunc outside capture): `data` is a (fn,) or
   (fn, arg) tuple this call owns. */
static void CUDA_CB
host_fn_once(void *data)
{
    PyGILState_STATE gil;

    if (!Py_IsInitialized() || gh_python_finalizing()) {
        return;
    }
    gh_host_fn_trampoline(data);
    gil = PyGILState_Ensure();
    Py_DECREF((PyObject *)data);
    PyGILState_Release(gil);
}

void CUDA_CB
gh_host_fn_trampoline(void *data)
{
    PyObject *item = (PyObject *)data, *res;
    PyGILState_STATE gil;

    if (!Py_IsInitialized() || gh_python_finalizing()) {
        return;
    }
    gil = PyGILState_Ensure();
    gh_on_driver_thread = 1; /* objects dying here defer their CUDA calls */
    /* (fn, *args): fn(*args); the tuple's items after fn are the arguments */
    res = PyObject_Vectorcall(PyTuple_GET_ITEM(item, 0), &PyTuple_GET_ITEM(item, 1),
                              (size_t)(PyTuple_GET_SIZE(item) - 1), NULL);
    if (res == NULL) {
        PyErr_WriteUnraisable(PyTuple_GET_ITEM(item, 0));
    }
    Py_XDECREF(res);
    gh_on_driver_thread = 0;
    PyGILState_Release(gil);
}

/* Queue host function `item` ((fn, *args), a new reference given to this call) on
   the stream: kept by the capture while capturing, else run once.  0 or -1. */
static int
launch_host_item(gh_stream *self, PyObject *item)
{
    int pushed, capturing = self->capture != NULL;
    CUresult res;

    if (gh_stream_enter(self, GH_CU_LaunchHostFunc, &pushed) < 0) {
        Py_DECREF(item);
        return -1;
    }
    if (capturing && PyList_Append(self->capture, item) < 0) {
        gh_context_leave(self->context, pushed);
        Py_DECREF(item);
        return -1;
    }
    res =
        gh_cu.LaunchHostFunc(self->handle, capturing ? gh_host_fn_trampoline : host_fn_once, item);
    if (res != CUDA_SUCCESS || capturing) {
        Py_DECREF(item); /* the driver will not call it, or the capture's list keeps it */
    }
    if (gh_context_leave(self->context, pushed) < 0 || gh_check(res, GH_CU_LaunchHostFunc) < 0) {
        return -1;
    }
    return 0;
}

static PyObject *
stream_launch_host_func(gh_stream *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"fn", "arg", NULL};
    PyObject *fn, *arg, *item;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:launch_host_func", kwlist, &fn, &arg)) {
        return NULL;
    }
    if (!PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "fn must be callable, not %s", Py_TYPE(fn)->tp_name);
        return NULL;
    }
    item = PyTuple_Pack(2, fn, arg);
    if (item == NULL || launch_host_item(self, item) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* While capturing, add_callback's callback(stream, status, arg) runs from a host node. */
static PyObject *
captured_callback(gh_stream *self, PyObject *callback, PyObject *arg)
{
    PyObject *status = PyLong_FromLong(0);
    PyObject *item =
        status != NULL ? PyTuple_Pack(4, callback, (PyObject *)self, status, arg) : NULL;
    Py_XDECREF(status);
    if (item == NULL || launch_host_item(self, item) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
stream_add_callback(gh_stream *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"callback", "arg", NULL};
    PyObject *callback, *arg = Py_None, *item;
    int pushed;
    CUresult res;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:add_callback", kwlist, &callback, &arg)) {
        return NULL;
    }
    if (!PyCallable_Check(callback)) {
        PyErr_Format(PyExc_TypeError, "callback must be callable, not %s",
                     Py_TYPE(callback)->tp_name);
        return NULL;
    }
    if (self->capture != NULL) {
        return captured_callback(self, callback, arg); /* stream callbacks cannot be captured */
    }
    if (gh_stream_enter(self, GH_CU_StreamAddCallback, &pushed) < 0) {
        return NULL;
    }
    item = PyTuple_Pack(3, callback, (PyObject *)self, arg);
    if (item == NULL) {
        gh_context_leave(self->context, pushed);
        return NULL;
    }
    res = gh_cu.StreamAddCallback(self->handle, stream_callback_trampoline, item, 0);
    if (res != CUDA_SUCCESS) {
        Py_DECREF(item); /* the driver will not call it */
    }
    if (gh_context_leave(self->context, pushed) < 0 || gh_check(res, GH_CU_StreamAddCallback) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
stream_record(gh_stream *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"event", NULL};
    PyObject *event = Py_None, *res;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:record", kwlist, &event)) {
        return NULL;
    }
    if (event == Py_None) {
        event = gh_event_new(gh_state_of_type(Py_TYPE(self)), self->context, CU_EVENT_DEFAULT, 0);
        if (event == NULL) {
            return NULL;
        }
    }
    else if (!Py_IS_TYPE(event, gh_state_of_type(Py_TYPE(self))->EventType)) {
        PyErr_Format(PyExc_TypeError, "event must be a gpuhost Event or None, not %s",
                     Py_TYPE(event)->tp_name);
        return NULL;
    }
    else {
        Py_INCREF(event);
    }
    res = PyObject_CallMethod(event, "record", "O", (PyObject *)self);
    if (res == NULL) {
        Py_DECREF(event);
        return NULL;
    }
    Py_DECREF(res);
    return event;
}

static PyObject *
stream_wait_event(gh_stream *self, PyObject *event)
{
    PyObject *res;

    if (!PyObject_TypeCheck(event, gh_state_of_type(Py_TYPE(self))->EventType)) {
        PyErr_Format(PyExc_TypeError, "wait_event() takes a gpuhost Event, not %s",
                     Py_TYPE(event)->tp_name);
        return NULL;
    }
    res = PyObject_CallMethod(event, "wait", "O", (PyObject *)self);
    if (res == NULL) {
        return NULL;
    }
    Py_DECREF(res);
    Py_RETURN_NONE;
}

static PyObject *
stream_get_priority(gh_stream *self, void *Py_UNUSED(closure))
{
    int priority = 0, pushed;
    CUresult res;
    if (gh_stream_enter(self, GH_CU_StreamGetPriority, &pushed) < 0) {
        return NULL;
    }
    res = gh_cu.StreamGetPriority(self->handle, &priority);
    if (gh_context_leave(self->context, pushed) < 0 || gh_check(res, GH_CU_StreamGetPriority) < 0) {
        return NULL;
    }
    return PyLong_FromLong(priority);
}

static PyObject *
stream_get_external(gh_stream *self, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(self->kind == GH_STREAM_EXTERNAL);
}

static PyObject *
stream_get_non_blocking(gh_stream *self, void *Py_UNUSED(closure))
{
    unsigned int flags = 0;
    int pushed;
    CUresult res;
    if (gh_stream_enter(self, GH_CU_StreamGetFlags, &pushed) < 0) {
        return NULL;
    }
    res = gh_cu.StreamGetFlags(self->handle, &flags);
    if (gh_context_leave(self->context, pushed) < 0 || gh_check(res, GH_CU_StreamGetFlags) < 0) {
        return NULL;
    }
    return PyBool_FromLong((flags & CU_STREAM_NON_BLOCKING) != 0);
}

static PyObject *
stream_get_handle(gh_stream *self, void *Py_UNUSED(closure))
{
    return PyLong_FromVoidPtr(self->handle);
}

static PyObject *
stream_get_context(gh_stream *self, void *Py_UNUSED(closure))
{
    return Py_NewRef(self->context);
}

static PyObject *
stream_get_device(gh_stream *self, void *Py_UNUSED(closure))
{
    return Py_NewRef(self->context->device);
}

static PyObject *
stream_cuda_stream(gh_stream *self, PyObject *Py_UNUSED(ignored))
{
    return Py_BuildValue("(iN)", 0, PyLong_FromVoidPtr(self->handle));
}

static PyObject *
stream_int(gh_stream *self)
{
    return PyLong_FromVoidPtr(self->handle);
}

static PyObject *
stream_repr(gh_stream *self)
{
    static const char *const names[] = {"CUDA stream", "Default CUDA stream",
                                        "Legacy default CUDA stream",
                                        "Per-thread default CUDA stream", "External CUDA stream"};
    if (self->kind == GH_STREAM_OWNED || self->kind == GH_STREAM_EXTERNAL) {
        return PyUnicode_FromFormat("<%s %p on device %d>", names[self->kind], (void *)self->handle,
                                    self->context->device->id);
    }
    return PyUnicode_FromFormat("<%s on device %d>", names[self->kind], self->context->device->id);
}

static Py_hash_t
stream_hash(gh_stream *self)
{
    Py_hash_t h = (Py_hash_t)((uintptr_t)self->handle ^ ((uintptr_t)self->context >> 4));
    return h == -1 ? -2 : h;
}

static PyObject *
stream_richcompare(PyObject *a, PyObject *b, int op)
{
    int equal;
    if ((op != Py_EQ && op != Py_NE) || Py_TYPE(a) != Py_TYPE(b)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    equal = ((gh_stream *)a)->handle == ((gh_stream *)b)->handle &&
            ((gh_stream *)a)->context == ((gh_stream *)b)->context;
    return PyBool_FromLong(op == Py_EQ ? equal : !equal);
}

static void
stream_dealloc(gh_stream *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    gh_context *ctx = self->context;
    if (self->weakreflist != NULL) {
        PyObject_ClearWeakRefs((PyObject *)self);
    }
    if (self->kind == GH_STREAM_OWNED) {
        gh_release(ctx, self->generation, GH_CU_StreamDestroy, self->handle);
    }
    if (self->capture != NULL) { /* never ended: its deferral ends here */
        gh_cleanup_resume(gh_state_of_type(tp));
        ctx->capturing--;
    }
    Py_XDECREF(self->capture);
    Py_XDECREF(self->capture_kernels);
    Py_DECREF(ctx);
    gh_live_remove(gh_state_of_type(tp), GH_LIVE_STREAM, (PyObject *)self);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static PyMethodDef stream_methods[] = {
    {"synchronize", (PyCFunction)stream_synchronize, METH_NOARGS, stream_synchronize_doc},
    {"query", (PyCFunction)stream_query, METH_NOARGS, stream_query_doc},
    {"add_callback", (PyCFunction)(void (*)(void))stream_add_callback, METH_VARARGS | METH_KEYWORDS,
     stream_add_callback_doc},
    {"record", (PyCFunction)(void (*)(void))stream_record, METH_VARARGS | METH_KEYWORDS,
     stream_record_doc},
    {"wait_event", (PyCFunction)stream_wait_event, METH_O, stream_wait_event_doc},
    {"launch_host_func", (PyCFunction)(void (*)(void))stream_launch_host_func,
     METH_VARARGS | METH_KEYWORDS, stream_launch_host_func_doc},
    {"__cuda_stream__", (PyCFunction)stream_cuda_stream, METH_NOARGS, stream___cuda_stream___doc},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef stream_getset[] = {
    {"handle", (getter)stream_get_handle, NULL, stream_handle_doc, NULL},
    {"ptr", (getter)stream_get_handle, NULL, stream_ptr_doc, NULL},
    {"done", (getter)stream_get_done, NULL, stream_done_doc, NULL},
    {"priority", (getter)stream_get_priority, NULL, stream_priority_doc, NULL},
    {"non_blocking", (getter)stream_get_non_blocking, NULL, stream_non_blocking_doc, NULL},
    {"context", (getter)stream_get_context, NULL, stream_context_doc, NULL},
    {"external", (getter)stream_get_external, NULL, stream_external_doc, NULL},
    {"device", (getter)stream_get_device, NULL, stream_device_doc, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* Weak references, as to numba's and CuPy's streams (caches keyed by stream). */
static PyMemberDef stream_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(gh_stream, weakreflist), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot stream_slots[] = {
    {Py_tp_members, stream_members},
    {Py_tp_doc, (void *)stream_doc},
    {Py_tp_methods, stream_methods},
    {Py_tp_getset, stream_getset},
    {Py_tp_repr, stream_repr},
    {Py_tp_hash, stream_hash},
    {Py_tp_richcompare, stream_richcompare},
    {Py_nb_int, stream_int},
    {Py_tp_dealloc, stream_dealloc},
    {0, NULL},
};

static PyType_Spec stream_spec = {
    .name = "gpuhost.Stream",
    .basicsize = sizeof(gh_stream),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = stream_slots,
};

int
gh_stream_init_type(PyObject *module, gh_state *st)
{
    st->StreamType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &stream_spec, NULL);
    if (st->StreamType == NULL || PyModule_AddType(module, st->StreamType) < 0) {
        return -1;
    }
    return PyModule_AddFunctions(module, gh_stream_module_methods);
}
