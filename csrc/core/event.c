/* Event: a CUDA event (CUevent), numba.cuda's Event; also the profiler switches.
 *
 * An event belongs to the context it was made in and may only be recorded on that
 * context's streams.  gpuhost remembers whether an event was ever recorded and whether it
 * times, so elapsed_time() can say what is wrong before the driver's terse error.
 */
#include "core_internal.h"

#include "event_docs.h"

#include <string.h>

/* ---- reusing handles ----
 * Creating and destroying a CUevent costs more than the Python object around it, so the
 * handles of dropped events are kept (GH_EVENT_CACHE per module) and handed to new
 * events of the same context and flags.  A reused handle may still carry its last
 * record; every use checks `recorded` first, so the new Event behaves as a fresh one
 * (query() True, synchronize() and wait() do nothing until it is recorded). */

static CUevent
cache_take(gh_state *st, gh_context *ctx, unsigned int flags)
{
    for (int i = st->n_events - 1; i >= 0; i--) {
        gh_cached_event *e = &st->events[i];
        if (e->ctx == ctx && gh_context_handle_live(ctx, e->generation) && e->flags == flags) {
            CUevent handle = (CUevent)e->handle;
            Py_DECREF(e->ctx);
            st->events[i] = st->events[--st->n_events];
            return handle;
        }
    }
    return NULL;
}

/* Keep a dropped event's handle; 0 if kept, -1 if it must be destroyed. */
static int
cache_put(gh_state *st, gh_event *ev)
{
    gh_context *ctx = ev->context;
    if (st == NULL || st->n_events == GH_EVENT_CACHE || (ev->flags & CU_EVENT_INTERPROCESS) ||
        !gh_context_handle_live(ctx, ev->generation)) {
        return -1;
    }
    st->events[st->n_events++] =
        (gh_cached_event){(gh_context *)Py_NewRef(ctx), ev->generation, ev->flags, ev->handle};
    return 0;
}

void
gh_event_cache_clear(gh_state *st)
{
    while (st->n_events > 0) {
        gh_cached_event *e = &st->events[--st->n_events];
        gh_release(e->ctx, e->generation, GH_CU_EventDestroy, e->handle);
        Py_DECREF(e->ctx);
    }
}

PyObject *
gh_event_new(gh_state *st, gh_context *ctx, unsigned int flags, int ctx_is_current)
{
    CUevent handle = NULL;
    CUresult res;
    gh_event *self;
    int pushed = 0;

    handle = cache_take(st, ctx, flags);
    if (handle == NULL) {
        if (!ctx_is_current && gh_context_enter(ctx, &pushed) < 0) {
            return NULL;
        }
        res = gh_cu.EventCreate(&handle, flags);
        if (gh_context_leave(ctx, pushed) < 0) {
            if (res == CUDA_SUCCESS) {
                gh_cu.EventDestroy(handle); /* needs no current context */
            }
            return NULL;
        }
        if (gh_check(res, GH_CU_EventCreate) < 0) {
            return NULL;
        }
    }
    self = PyObject_New(gh_event, st->EventType);
    if (self == NULL) {
        gh_cu.EventDestroy(handle);
        return NULL;
    }
    self->context = (gh_context *)Py_NewRef(ctx);
    self->handle = handle;
    self->generation = ctx->generation;
    self->flags = flags;
    self->recorded = 0;
    self->imported = 0;
    self->weakreflist = NULL;
    gh_live_add(st, GH_LIVE_EVENT, (PyObject *)self);
    return (PyObject *)self;
}

/* `obj` as an Event of this module, or NULL with TypeError naming `what`. */
static gh_event *
event_arg(gh_state *st, PyObject *obj, const char *what)
{
    if (!Py_IS_TYPE(obj, st->EventType)) {
        PyErr_Format(PyExc_TypeError, "%s must be a gpuhost Event, not %s", what,
                     Py_TYPE(obj)->tp_name);
        return NULL;
    }
    return (gh_event *)obj;
}

/* After the driver refused a foreign stream: say so if the stream is another context's. */
static int
explain_foreign_stream(gh_event *self, CUstream stream, const char *what)
{
    CUcontext owner = NULL;
    if (gh_cu.StreamGetCtx(stream, &owner) == CUDA_SUCCESS && owner != self->context->handle) {
        return gh_raise(GH_EXC_CUDA_DRIVER,
                        "cannot %s device %d's event on that stream: it belongs to another "
                        "context",
                        what, self->context->device->id);
    }
    return 0;
}

/* Run cuEventRecord (record=1) or cuStreamWaitEvent (record=0) for `self` on `stream`.
   An event is recorded only on its own context's streams (the driver refuses others);
   a stream of any device may wait for it (the driver synchronizes across devices). */
static PyObject *
event_on_stream(gh_event *self, PyObject *stream, int record)
{
    gh_state *st = gh_state_of_type(Py_TYPE(self));
    gh_cu_id id = record ? GH_CU_EventRecord : GH_CU_StreamWaitEvent;
    gh_stream_ref ref;
    gh_context *owner;
    CUresult res;
    int pushed;

    if (gh_context_check_live(self->context, self->generation, id) < 0 ||
        gh_stream_resolve(st, stream, &ref) < 0) {
        return NULL;
    }
    if (record &&
        gh_stream_check_device(ref.context, self->context, "Event.record(): the event is") < 0) {
        return NULL; /* the driver records an event on its own context's streams only */
    }
    if (!record && !self->recorded) {
        Py_RETURN_NONE; /* waiting for a fresh event waits for nothing, as in the driver */
    }
    if (!record && self->imported && ref.context != NULL &&
        ref.context->device != self->context->device) {
        /* Another process's event, waited for by another device's stream: the driver
           crashed in that cuStreamWaitEvent (H200 pair, CUDA 13), so the host waits for
           the event instead, which orders everything later on the stream after it too. */
        Py_BEGIN_ALLOW_THREADS
        res = gh_cu.EventSynchronize(self->handle);
        Py_END_ALLOW_THREADS
        return gh_check(res, GH_CU_EventSynchronize) < 0 ? NULL : Py_NewRef(Py_None);
    }
    /* A default stream's handle means "the current context's": make its context current
       (the event's, for 0 or None).  Other handles name their context. */
    owner = ref.context != NULL ? ref.context : self->context;
    pushed = 0;
    if (ref.is_default && gh_context_enter(owner, &pushed) < 0) {
        return NULL;
    }
    res = record ? gh_cu.EventRecord(self->handle, ref.handle)
                 : gh_cu.StreamWaitEvent(ref.handle, self->handle, 0);
    if (res == CUDA_ERROR_INVALID_HANDLE && record && ref.context == NULL && !ref.is_default &&
        explain_foreign_stream(self, ref.handle, "record") < 0) {
        gh_context_leave(owner, pushed);
        return NULL;
    }
    if (gh_context_leave(owner, pushed) < 0 || gh_check(res, id) < 0) {
        return NULL;
    }
    if (record) {
        self->recorded = 1;
    }
    Py_RETURN_NONE;
}

/* One optional argument `name`, positional or keyword, for a FASTCALL method. */
static int
parse_stream_arg(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, const char *fname,
                 PyObject **stream)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    *stream = NULL;
    if (nargs + nkw > 1) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most 1 argument (%zd given)", fname,
                     nargs + nkw);
        return -1;
    }
    if (nkw == 1 && PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "stream") != 0) {
        PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", fname,
                     PyTuple_GET_ITEM(kwnames, 0));
        return -1;
    }
    if (nargs + nkw == 1) {
        *stream = args[0];
    }
    return 0;
}

static PyObject *
event_record(gh_event *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *stream;
    if (parse_stream_arg(args, nargs, kwnames, "record", &stream) < 0) {
        return NULL;
    }
    return event_on_stream(self, stream, 1);
}

static PyObject *
event_wait(gh_event *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *stream;
    if (parse_stream_arg(args, nargs, kwnames, "wait", &stream) < 0) {
        return NULL;
    }
    return event_on_stream(self, stream, 0);
}

static PyObject *
event_query(gh_event *self, PyObject *Py_UNUSED(ignored))
{
    CUresult res;
    if (gh_context_check_live(self->context, self->generation, GH_CU_EventQuery) < 0) {
        return NULL;
    }
    if (!self->recorded) {
        Py_RETURN_TRUE; /* as the driver says of a fresh event */
    }
    res = gh_cu.EventQuery(self->handle);
    if (res == CUDA_ERROR_NOT_READY) {
        Py_RETURN_FALSE;
    }
    if (gh_check(res, GH_CU_EventQuery) < 0) {
        return NULL;
    }
    Py_RETURN_TRUE;
}

static PyObject *
event_synchronize(gh_event *self, PyObject *Py_UNUSED(ignored))
{
    CUresult res;
    gh_cu_id id = GH_CU_EventQuery;
    if (gh_context_check_live(self->context, self->generation, GH_CU_EventSynchronize) < 0) {
        return NULL;
    }
    if (!self->recorded) {
        Py_RETURN_NONE; /* nothing to wait for */
    }
    res = gh_cu.EventQuery(self->handle); /* completed: no need to give up the GIL */
    if (res == CUDA_ERROR_NOT_READY) {
        id = GH_CU_EventSynchronize;
        Py_BEGIN_ALLOW_THREADS
        res = gh_cu.EventSynchronize(self->handle);
        Py_END_ALLOW_THREADS
    }
    if (gh_check(res, id) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* Check that `ev` can be timed; `which` is "start" or "end".  0 or -1. */
static int
check_timeable(gh_event *ev, const char *which)
{
    if (gh_context_check_live(ev->context, ev->generation, GH_CU_EventElapsedTime) < 0) {
        return -1;
    }
    if (ev->flags & CU_EVENT_DISABLE_TIMING) {
        return gh_raise(GH_EXC_CUDA_DRIVER,
                        "the %s event was made with timing=False and cannot be timed: make it "
                        "with event(timing=True)",
                        which);
    }
    if (!ev->recorded) {
        return gh_raise(GH_EXC_CUDA_DRIVER,
                        "the %s event was never recorded: call its record() before timing", which);
    }
    return 0;
}

static PyObject *
elapsed_time(gh_event *start, gh_event *end)
{
    float ms = 0.0f;
    if (check_timeable(start, "start") < 0 || check_timeable(end, "end") < 0) {
        return NULL;
    }
    if (start->context != end->context) {
        gh_raise(GH_EXC_CUDA_DRIVER,
                 "cannot time events of two devices (%d and %d) against each other",
                 start->context->device->id, end->context->device->id);
        return NULL;
    }
    if (gh_check(gh_cu.EventElapsedTime(&ms, start->handle, end->handle), GH_CU_EventElapsedTime) <
        0) {
        return NULL;
    }
    return PyFloat_FromDouble((double)ms);
}

static PyObject *
event_elapsed_time(gh_event *self, PyObject *other)
{
    gh_event *end = event_arg(gh_state_of_type(Py_TYPE(self)), other, "the end event");
    return end ? elapsed_time(self, end) : NULL;
}

static PyObject *
event_ipc_handle(gh_event *self, PyObject *Py_UNUSED(ignored))
{
    CUipcEventHandle handle;
    PyObject *args, *res;

    if (!(self->flags & CU_EVENT_INTERPROCESS)) {
        PyErr_SetString(PyExc_ValueError, "only an event made with event(interprocess=True, "
                                          "timing=False) has an IPC handle");
        return NULL;
    }
    if (gh_context_check_live(self->context, self->generation, GH_CU_IpcGetEventHandle) < 0 ||
        gh_check(gh_cu.IpcGetEventHandle(&handle, self->handle), GH_CU_IpcGetEventHandle) < 0) {
        return NULL;
    }
    args = Py_BuildValue("(Oy#O)", (PyObject *)self, handle.reserved,
                         (Py_ssize_t)sizeof(handle.reserved), self->context->device->uuid);
    res =
        args ? gh_helper_call(gh_state_of_type(Py_TYPE(self)), GH_HELPER_EXPORT_EVENT, args) : NULL;
    Py_XDECREF(args);
    return res;
}

static PyObject *
event_get_handle(gh_event *self, void *Py_UNUSED(closure))
{
    return PyLong_FromVoidPtr(self->handle);
}

static PyObject *
event_get_timing(gh_event *self, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(!(self->flags & CU_EVENT_DISABLE_TIMING));
}

static PyObject *
event_get_recorded(gh_event *self, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(self->recorded);
}

static PyObject *
event_get_device(gh_event *self, void *Py_UNUSED(closure))
{
    return Py_NewRef(self->context->device);
}

static PyObject *
event_repr(gh_event *self)
{
    return PyUnicode_FromFormat("<CUDA event %p on device %d>", (void *)self->handle,
                                self->context->device->id);
}

/* (label, value) rows for the displays, from what the Event knows: no driver call. */
static PyObject *
event_display_rows(gh_event *self)
{
    gh_device *dev = self->context->device;
    PyObject *device = NULL, *handle = NULL, *rows = NULL;

    if ((device = PyUnicode_FromFormat("%d (%U)", dev->id, dev->name)) != NULL &&
        (handle = PyUnicode_FromFormat("%p", (void *)self->handle)) != NULL) {
        rows = Py_BuildValue(
            "[(sO)(sO)(sO)(sO)(sO)(sO)]", "device", device, "timing",
            (self->flags & CU_EVENT_DISABLE_TIMING) ? Py_False : Py_True, "recorded",
            self->recorded ? Py_True : Py_False, "blocking sync",
            (self->flags & CU_EVENT_BLOCKING_SYNC) ? Py_True : Py_False, "interprocess",
            (self->flags & CU_EVENT_INTERPROCESS) ? Py_True : Py_False, "handle", handle);
    }
    Py_XDECREF(device);
    Py_XDECREF(handle);
    return rows;
}

static PyObject *
event_repr_html(gh_event *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *rows = event_display_rows(self);
    return rows ? gh_repr_html(rows, PyUnicode_FromString("CUDA event")) : NULL;
}

static PyObject *
event_repr_pretty(gh_event *self, PyObject *args)
{
    return gh_repr_pretty((PyObject *)self, args, event_display_rows(self));
}

static void
event_dealloc(gh_event *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    gh_context *ctx = self->context;
    if (self->weakreflist != NULL) {
        PyObject_ClearWeakRefs((PyObject *)self);
    }
    if (cache_put(gh_state_of_type(tp), self) < 0) {
        gh_release(ctx, self->generation, GH_CU_EventDestroy, self->handle);
    }
    Py_DECREF(ctx);
    gh_live_remove(gh_state_of_type(tp), GH_LIVE_EVENT, (PyObject *)self);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static PyMethodDef event_methods[] = {
    {"record", (PyCFunction)(void (*)(void))event_record, METH_FASTCALL | METH_KEYWORDS,
     event_record_doc},
    {"wait", (PyCFunction)(void (*)(void))event_wait, METH_FASTCALL | METH_KEYWORDS,
     event_wait_doc},
    {"query", (PyCFunction)event_query, METH_NOARGS, event_query_doc},
    {"synchronize", (PyCFunction)event_synchronize, METH_NOARGS, event_synchronize_doc},
    {"elapsed_time", (PyCFunction)event_elapsed_time, METH_O, event_elapsed_time_doc},
    {"ipc_handle", (PyCFunction)event_ipc_handle, METH_NOARGS, event_ipc_handle_doc},
    {"_repr_html_", (PyCFunction)event_repr_html, METH_NOARGS, event__repr_html__doc},
    {"_repr_pretty_", (PyCFunction)event_repr_pretty, METH_VARARGS, event__repr_pretty__doc},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef event_getset[] = {
    {"handle", (getter)event_get_handle, NULL, event_handle_doc, NULL},
    {"timing", (getter)event_get_timing, NULL, event_timing_doc, NULL},
    {"recorded", (getter)event_get_recorded, NULL, event_recorded_doc, NULL},
    {"device", (getter)event_get_device, NULL, event_device_doc, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* Weak references: IPC handles remember the event they came from (gpuhost/_ipc.py). */
static PyMemberDef event_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(gh_event, weakreflist), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot event_slots[] = {
    {Py_tp_members, event_members},
    {Py_tp_doc, (void *)event_doc},
    {Py_tp_methods, event_methods},
    {Py_tp_getset, event_getset},
    {Py_tp_repr, event_repr},
    {Py_tp_dealloc, event_dealloc},
    {0, NULL},
};

static PyType_Spec event_spec = {
    .name = "gpuhost.Event",
    .basicsize = sizeof(gh_event),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = event_slots,
};

/* ---- module functions ---- */

static PyObject *
mod_event(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"timing", "blocking_sync", "interprocess", NULL};
    int timing = 1, blocking_sync = 0, interprocess = 0;
    unsigned int flags = CU_EVENT_DEFAULT;
    gh_state *st = gh_state_of_module(module);
    gh_context *ctx;
    PyObject *self;

    if ((PyTuple_GET_SIZE(args) != 0 || (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0)) &&
        !PyArg_ParseTupleAndKeywords(args, kwargs, "|p$pp:event", kwlist, &timing, &blocking_sync,
                                     &interprocess)) {
        return NULL;
    }
    if (interprocess && timing) {
        PyErr_SetString(PyExc_ValueError, "an interprocess event cannot record time: use "
                                          "event(interprocess=True, timing=False)");
        return NULL;
    }
    flags |= timing ? 0 : CU_EVENT_DISABLE_TIMING;
    flags |= blocking_sync ? CU_EVENT_BLOCKING_SYNC : 0;
    flags |= interprocess ? CU_EVENT_INTERPROCESS : 0;
    ctx = gh_current_context(st, -1);
    if (ctx == NULL) {
        return NULL;
    }
    self = gh_event_new(st, ctx, flags, 1);
    Py_DECREF(ctx);
    return self;
}

static PyObject *
mod_release_cached_events(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    gh_event_cache_clear(gh_state_of_module(module));
    Py_RETURN_NONE;
}

static PyObject *
mod_event_elapsed_time(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    gh_state *st = gh_state_of_module(module);
    gh_event *start, *end;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "event_elapsed_time() takes 2 arguments (%zd given)", nargs);
        return NULL;
    }
    if ((start = event_arg(st, args[0], "evtstart")) == NULL ||
        (end = event_arg(st, args[1], "evtend")) == NULL) {
        return NULL;
    }
    return elapsed_time(start, end);
}

static PyObject *
mod_open_ipc_event(PyObject *module, PyObject *arg)
{
    gh_state *st = gh_state_of_module(module);
    CUipcEventHandle handle;
    CUevent ev = NULL;
    gh_context *ctx;
    gh_event *self = NULL;
    char *data;
    Py_ssize_t size;

    if (PyBytes_AsStringAndSize(arg, &data, &size) < 0) {
        return NULL;
    }
    if (size != (Py_ssize_t)sizeof(handle.reserved)) {
        PyErr_Format(PyExc_ValueError, "an IPC event handle has %zu bytes, not %zd",
                     sizeof(handle.reserved), size);
        return NULL;
    }
    memcpy(handle.reserved, data, sizeof(handle.reserved));
    ctx = gh_current_context(st, -1);
    if (ctx == NULL) {
        return NULL;
    }
    if (gh_check(gh_cu.IpcOpenEventHandle(&ev, handle), GH_CU_IpcOpenEventHandle) == 0) {
        self = PyObject_New(gh_event, st->EventType);
        if (self == NULL) {
            gh_cu.EventDestroy(ev);
        }
        else {
            self->context = (gh_context *)Py_NewRef(ctx);
            self->handle = ev;
            self->generation = ctx->generation;
            self->flags = CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING;
            self->recorded = 1; /* the exporting process records it */
            self->imported = 1;
            self->weakreflist = NULL;
            gh_live_add(st, GH_LIVE_EVENT, (PyObject *)self);
        }
    }
    Py_DECREF(ctx);
    return (PyObject *)self;
}

/* cuProfilerStart / cuProfilerStop in the current context. */
static PyObject *
profiler_switch(PyObject *module, int start)
{
    gh_context *ctx = gh_current_context(gh_state_of_module(module), -1);
    CUresult res;
    if (ctx == NULL) {
        return NULL;
    }
    Py_DECREF(ctx);
    res = start ? gh_cu.ProfilerStart() : gh_cu.ProfilerStop();
    if (gh_check(res, start ? GH_CU_ProfilerStart : GH_CU_ProfilerStop) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
mod_profile_start(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    return profiler_switch(module, 1);
}

static PyObject *
mod_profile_stop(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    return profiler_switch(module, 0);
}

static PyMethodDef event_module_methods[] = {
    {"release_cached_events", (PyCFunction)mod_release_cached_events, METH_NOARGS,
     event_module_release_cached_events_doc},
    {"event", (PyCFunction)(void (*)(void))mod_event, METH_VARARGS | METH_KEYWORDS,
     event_module_event_doc},
    {"event_elapsed_time", (PyCFunction)(void (*)(void))mod_event_elapsed_time, METH_FASTCALL,
     event_module_event_elapsed_time_doc},
    {"open_ipc_event", mod_open_ipc_event, METH_O, event_module_open_ipc_event_doc},
    {"profile_start", mod_profile_start, METH_NOARGS, event_module_profile_start_doc},
    {"profile_stop", mod_profile_stop, METH_NOARGS, event_module_profile_stop_doc},
    {NULL, NULL, 0, NULL},
};

int
gh_event_init_type(PyObject *module, gh_state *st)
{
    st->EventType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &event_spec, NULL);
    if (st->EventType == NULL || PyModule_AddType(module, st->EventType) < 0) {
        return -1;
    }
    return PyModule_AddFunctions(module, event_module_methods);
}
