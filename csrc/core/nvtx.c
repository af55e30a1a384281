/* NVTX markers and ranges, through the toolkit's header-only NVTX v3.
 *
 * With no profiler attached NVTX's calls return at once (the header checks a function
 * pointer that only a profiler's injection library fills), so these are cheap.
 * gpuhost/nvtx.py builds the user-facing names on these three functions.
 */
#include "core_internal.h"

#include <nvtx3/nvToolsExt.h>

/* Parse (message, color) with color an ARGB int or None (-1: no color). */
static int
parse_message(PyObject *args, PyObject *kwargs, const char *fname, const char **message,
              long long *color)
{
    static char *kwlist[] = {"message", "color", NULL};
    PyObject *color_obj = Py_None;
    char format[32];

    snprintf(format, sizeof(format), "s|O:%s", fname);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, format, kwlist, message, &color_obj)) {
        return -1;
    }
    *color = -1;
    if (color_obj != Py_None) {
        if (!PyLong_Check(color_obj)) {
            PyErr_Format(PyExc_TypeError, "color must be an int (0xAARRGGBB) or None, not %s",
                         Py_TYPE(color_obj)->tp_name);
            return -1;
        }
        *color = PyLong_AsLongLong(color_obj);
        if (*color == -1 && PyErr_Occurred()) {
            return -1;
        }
        if (*color < 0 || *color > 0xFFFFFFFFLL) {
            PyErr_Format(PyExc_ValueError, "color must be in 0 .. 0xFFFFFFFF, not %lld", *color);
            return -1;
        }
    }
    return 0;
}

static void
fill_attributes(nvtxEventAttributes_t *attr, const char *message, long long color)
{
    memset(attr, 0, sizeof(*attr));
    attr->version = NVTX_VERSION;
    attr->size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attr->colorType = color >= 0 ? NVTX_COLOR_ARGB : NVTX_COLOR_UNKNOWN;
    attr->color = color >= 0 ? (uint32_t)color : 0;
    attr->messageType = NVTX_MESSAGE_TYPE_ASCII;
    attr->message.ascii = message;
}

/* The event attributes of a (message, color=None) call to `fname`; 0 or -1. */
static int
attributes_of(PyObject *args, PyObject *kwargs, const char *fname, nvtxEventAttributes_t *attr)
{
    const char *message;
    long long color;
    if (parse_message(args, kwargs, fname, &message, &color) < 0) {
        return -1;
    }
    fill_attributes(attr, message, color);
    return 0;
}

static PyObject *
nvtx_mark(PyObject *Py_UNUSED(module), PyObject *args, PyObject *kwargs)
{
    nvtxEventAttributes_t attr;
    if (attributes_of(args, kwargs, "nvtx_mark", &attr) < 0) {
        return NULL;
    }
    nvtxMarkEx(&attr);
    Py_RETURN_NONE;
}

static PyObject *
nvtx_range_push(PyObject *Py_UNUSED(module), PyObject *args, PyObject *kwargs)
{
    nvtxEventAttributes_t attr;
    if (attributes_of(args, kwargs, "nvtx_range_push", &attr) < 0) {
        return NULL;
    }
    return PyLong_FromLong(nvtxRangePushEx(&attr));
}

static PyObject *
nvtx_range_pop(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromLong(nvtxRangePop());
}

PyMethodDef gh_nvtx_methods[] = {
    {"nvtx_mark", (PyCFunction)(void (*)(void))nvtx_mark, METH_VARARGS | METH_KEYWORDS,
     "nvtx_mark(message, color=None)\n"
     "--\n"
     "\n"
     "An NVTX instant marker on a profiler's timeline (nvtxMarkEx).\n"
     "\n"
     "Costs nothing without a profiler. Private: use gpuhost.nvtx.mark().\n"
     "\n"
     "Parameters\n"
     "----------\n"
     "message : str\n"
     "    The marker's text.\n"
     "color : int, optional\n"
     "    An ARGB color, 0xAARRGGBB; None: no color.\n"
     "\n"
     "Examples\n"
     "--------\n"
     ">>> gpuhost._core.nvtx_mark(\"checkpoint\", 0xFF00FF00)"},
    {"nvtx_range_push", (PyCFunction)(void (*)(void))nvtx_range_push, METH_VARARGS | METH_KEYWORDS,
     "nvtx_range_push(message, color=None)\n"
     "--\n"
     "\n"
     "Open a nested NVTX range (nvtxRangePushEx); nvtx_range_pop() closes it.\n"
     "\n"
     "Private: use gpuhost.nvtx.range().\n"
     "\n"
     "Parameters\n"
     "----------\n"
     "message : str\n"
     "    The range's text.\n"
     "color : int, optional\n"
     "    An ARGB color, 0xAARRGGBB; None: no color.\n"
     "\n"
     "Returns\n"
     "-------\n"
     "int\n"
     "    The range's depth, from 0; negative without a profiler.\n"
     "\n"
     "Examples\n"
     "--------\n"
     ">>> depth = gpuhost._core.nvtx_range_push(\"copy\")\n"
     ">>> _ = gpuhost._core.nvtx_range_pop()"},
    {"nvtx_range_pop", nvtx_range_pop, METH_NOARGS,
     "nvtx_range_pop()\n"
     "--\n"
     "\n"
     "Close this thread's innermost NVTX range (nvtxRangePop).\n"
     "\n"
     "Returns\n"
     "-------\n"
     "int\n"
     "    The depth of the range closed; negative without a profiler.\n"
     "\n"
     "Examples\n"
     "--------\n"
     ">>> _ = gpuhost._core.nvtx_range_push(\"outer\")\n"
     ">>> isinstance(gpuhost._core.nvtx_range_pop(), int)\n"
     "True"},
    {NULL, NULL, 0, NULL},
};
