/* Stream capture into graphs: Stream.begin_capture(), end_capture() and is_capturing().
 * While gpuhost captures on a stream, the stream keeps lists of what the captured work uses
 * and of the Kernels launched (core/core.h's gh_stream); end_capture() hands them to the Graph it
 * makes. The methods are added to the Stream type at module init: streams know nothing of graphs.
 */
#include "graphs_internal.h"

#include "capture_docs.h"

/* cuStreamIsCapturing: True while the stream is capturing into a graph; CudaAPIError
   (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) for the legacy default stream while another stream of
   its context captures, as the driver says. */
static PyObject *
capture_is_capturing(gh_stream *self, PyObject *Py_UNUSED(ignored))
{
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    int pushed;
    CUresult res;
    if (gh_stream_enter(self, GH_CU_StreamIsCapturing, &pushed) < 0) {
        return NULL;
    }
    res = gh_cu.StreamIsCapturing(self->handle, &status);
    if (gh_context_leave(self->context, pushed) < 0 || gh_check(res, GH_CU_StreamIsCapturing) < 0) {
        return NULL;
    }
    return PyBool_FromLong(status == CU_STREAM_CAPTURE_STATUS_ACTIVE);
}

/* A capture mode: "global", "thread_local", "relaxed", or the driver's 0, 1, 2 (CuPy passes
   runtime's constants); 0 or -1. */
static int
parse_capture_mode(PyObject *obj, CUstreamCaptureMode *mode)
{
    static const char *names[] = {"global", "thread_local", "relaxed"};
    if (obj == NULL || obj == Py_None) {
        /* thread-local: the potentially unsafe calls of this thread are refused (they would
           break the capture), other threads' (PyTorch's, CuPy's) never are */
        *mode = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
        return 0;
    }
    if (PyUnicode_Check(obj)) {
        for (int i = 0; i < 3; i++) {
            if (PyUnicode_CompareWithASCIIString(obj, names[i]) == 0) {
                *mode = (CUstreamCaptureMode)i;
                return 0;
            }
        }
    }
    else if (PyLong_Check(obj) && !PyBool_Check(obj)) {
        long v = PyLong_AsLong(obj);
        if (v >= 0 && v <= 2) {
            *mode = (CUstreamCaptureMode)v;
            return 0;
        }
        if (v == -1 && PyErr_Occurred()) {
            return -1;
        }
    }
    PyErr_Format(PyExc_ValueError,
                 "capture mode must be 'global', 'thread_local' or 'relaxed' (or 0, 1, 2), "
                 "not %R",
                 obj);
    return -1;
}

static PyObject *
capture_begin(gh_stream *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"mode", NULL};
    PyObject *modeobj = NULL, *keep, *kernels;
    CUstreamCaptureMode mode;
    CUresult res;
    int pushed;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:begin_capture", kwlist, &modeobj) ||
        parse_capture_mode(modeobj, &mode) < 0) {
        return NULL;
    }
    if (self->kind == GH_STREAM_DEFAULT || self->kind == GH_STREAM_LEGACY) {
        gh_raise(GH_EXC_STREAM_CAPTURE, "cannot capture on the legacy default stream; capture on "
                                        "a stream made with gpuhost.stream()");
        return NULL;
    }
    if (self->capture != NULL) {
        gh_raise(GH_EXC_STREAM_CAPTURE,
                 "the stream is already capturing; end_capture() first (captures do not nest)");
        return NULL;
    }
    keep = PyList_New(0);
    kernels = PyList_New(0);
    if (keep == NULL || kernels == NULL ||
        gh_stream_enter(self, GH_CU_StreamBeginCapture, &pushed) < 0) {
        Py_XDECREF(keep);
        Py_XDECREF(kernels);
        return NULL;
    }
    res = gh_cu.StreamBeginCapture(self->handle, mode);
    if (gh_context_leave(self->context, pushed) < 0 ||
        gh_check(res, GH_CU_StreamBeginCapture) < 0) {
        Py_DECREF(keep);
        Py_DECREF(kernels);
        return NULL;
    }
    self->capture = keep;
    self->capture_kernels = kernels;
    self->context->capturing++; /* a reset of the context waits for the end */
    gh_cleanup_defer(gh_state_of_type(Py_TYPE(self))); /* frees wait for the capture's end */
    Py_RETURN_NONE;
}

static PyObject *
capture_end(gh_stream *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *keep = self->capture, *kernels = self->capture_kernels, *graph;
    CUgraph handle = NULL;
    CUresult res;
    int pushed;

    if (gh_stream_enter(self, GH_CU_StreamEndCapture, &pushed) < 0) {
        return NULL;
    }
    res = gh_cu.StreamEndCapture(self->handle, &handle);
    if (keep != NULL) {
        gh_cleanup_resume(gh_state_of_type(Py_TYPE(self)));
        self->context->capturing--;
    }
    self->capture = self->capture_kernels = NULL;
    if (gh_context_leave(self->context, pushed) < 0) {
        graph = NULL;
    }
    else if (res == CUDA_ERROR_ILLEGAL_STATE && keep == NULL) {
        gh_raise(GH_EXC_STREAM_CAPTURE, "end_capture() without begin_capture(): the stream is "
                                        "not capturing");
        graph = NULL;
    }
    else if (gh_check(res, GH_CU_StreamEndCapture) < 0) {
        graph = NULL;
    }
    else {
        graph =
            gh_graph_wrap(gh_state_of_type(Py_TYPE(self)), self->context, handle, keep, kernels);
    }
    Py_XDECREF(keep);
    Py_XDECREF(kernels);
    return graph;
}

static PyMethodDef capture_methods[] = {
    {"begin_capture", (PyCFunction)(void (*)(void))capture_begin, METH_VARARGS | METH_KEYWORDS,
     stream_begin_capture_doc},
    {"end_capture", (PyCFunction)capture_end, METH_NOARGS, stream_end_capture_doc},
    {"is_capturing", (PyCFunction)capture_is_capturing, METH_NOARGS, stream_is_capturing_doc},
    {NULL, NULL, 0, NULL},
};

int
gh_capture_init(PyObject *Py_UNUSED(module), gh_state *st)
{
    return gh_type_attach_methods(st->StreamType, capture_methods);
}
