/* CUresult -> Python exception: the one raising path for driver errors.
 *
 * The exception classes live in gpuhost/errors.py; C only looks them up (when raising,
 * a cold path) and instantiates them.  Names come from cuda.h's enum, so errors read
 * well even when the driver cannot describe them (the toolkit's stub library).  The
 * driver's loader (cuda_api.c, below) raises nothing: gh_driver_ensure() raises what it
 * reports, here, as do the module functions that ask for the driver.
 */
#include "errors.h"

#include "cuda_api.h"

#include <stdarg.h>

PyObject *
gh_error_class(const char *name)
{
    PyObject *mod = PyImport_ImportModule("gpuhost.errors");
    PyObject *cls = NULL;
    if (mod != NULL) {
        cls = PyObject_GetAttrString(mod, name);
        Py_DECREF(mod);
    }
    return cls;
}

/* New reference to the driver's own text for `res`, or to a fallback. */
static PyObject *
result_text(CUresult res, const char *name)
{
    const char *text = NULL;
    if (gh_cu.GetErrorString != NULL && gh_cu.GetErrorString(res, &text) == CUDA_SUCCESS &&
        text != NULL) {
        return PyUnicode_FromString(text);
    }
    return PyUnicode_FromFormat("%s", name);
}

/* Errors a faulting kernel leaves behind: the driver documents that the process's CUDA
   state is then unusable and every later call fails the same way. */
static int
is_sticky(CUresult res)
{
    switch (res) {
        case CUDA_ERROR_ILLEGAL_ADDRESS:
        case CUDA_ERROR_ASSERT:
        case CUDA_ERROR_HARDWARE_STACK_ERROR:
        case CUDA_ERROR_ILLEGAL_INSTRUCTION:
        case CUDA_ERROR_MISALIGNED_ADDRESS:
        case CUDA_ERROR_INVALID_ADDRESS_SPACE:
        case CUDA_ERROR_INVALID_PC:
        case CUDA_ERROR_LAUNCH_FAILED:
            return 1;
        default:
            return 0;
    }
}

static const char sticky_message[] =
    "a kernel faulted: this error is sticky, the process's CUDA state is unusable and every "
    "later CUDA call fails the same way; only a new process can use the GPU again";

int
gh_raise_cuda(CUresult res, gh_cu_id id)
{
    return gh_raise_cuda_detail(res, id, NULL);
}

int
gh_raise_cuda_detail(CUresult res, gh_cu_id id, const char *detail)
{
    const char *name = gh_cu_result_name(res);
    const char *driver_name = NULL;
    PyObject *cls = NULL, *pyname = NULL, *msg = NULL, *exc = NULL;

    if (name == NULL && gh_cu.GetErrorName != NULL &&
        gh_cu.GetErrorName(res, &driver_name) == CUDA_SUCCESS) {
        name = driver_name;
    }
    pyname = name ? PyUnicode_FromString(name) : PyUnicode_FromFormat("CUDA_ERROR_%d", (int)res);
    if (pyname == NULL) {
        goto done;
    }
    msg = result_text(res, PyUnicode_AsUTF8(pyname));
    if (msg != NULL && gh_driver_forked()) {
        Py_SETREF(msg, PyUnicode_FromFormat("%U (%s)", msg, gh_fork_message));
    }
    else if (msg != NULL && is_sticky(res)) {
        Py_SETREF(msg, PyUnicode_FromFormat("%U (%s)", msg, sticky_message));
    }
    if (msg != NULL && detail != NULL && detail[0] != '\0') {
        Py_SETREF(msg, PyUnicode_FromFormat("%U\n%s", msg, detail));
    }
    if (msg == NULL) {
        goto done;
    }
    cls = gh_error_class(res == CUDA_ERROR_OUT_OF_MEMORY ? "CudaOutOfMemoryError"
                         : (res >= CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED &&
                            res <= CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD)
                             ? "StreamCaptureError"
                             : "CudaAPIError");
    if (cls == NULL) {
        goto done;
    }
    exc = PyObject_CallFunction(cls, "iOOs", (int)res, pyname, msg, gh_cu_name(id));
    if (exc != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    }
done:
    Py_XDECREF(exc);
    Py_XDECREF(cls);
    Py_XDECREF(msg);
    Py_XDECREF(pyname);
    return -1;
}

int
gh_raise(const char *clsname, const char *fmt, ...)
{
    va_list vargs;
    PyObject *msg, *cls;

    va_start(vargs, fmt);
    msg = PyUnicode_FromFormatV(fmt, vargs);
    va_end(vargs);
    if (msg == NULL) {
        return -1;
    }
    cls = gh_error_class(clsname);
    if (cls != NULL) {
        PyErr_SetObject(cls, msg);
        Py_DECREF(cls);
    }
    Py_DECREF(msg);
    return -1;
}

void
gh_warn_cleanup(CUresult res, gh_cu_id id)
{
    const char *name = gh_cu_result_name(res);
    PyObject *type, *value, *tb;

    if (gh_driver_forked() || is_sticky(res)) {
        /* a forked child: what it inherited is the parent's, and fails to release; after a
           sticky error nothing can be released, and the user has had the error already */
        return;
    }
    /* Cleanup runs in dealloc and at exit: keep any pending exception, never raise. */
    PyErr_Fetch(&type, &value, &tb);
    if (PyErr_WarnFormat(PyExc_RuntimeWarning, 1, "gpuhost: %s failed during cleanup: %s (%d)",
                         gh_cu_name(id), name ? name : "unknown error", (int)res) < 0) {
        PyErr_WriteUnraisable(NULL);
    }
    PyErr_Restore(type, value, tb);
}

int
gh_raise_nvrtc(int code, const char *name, const char *call, const char *log)
{
    PyObject *cls = gh_error_class("NvrtcError");
    PyObject *args = NULL, *kwargs = NULL, *exc = NULL;

    if (cls == NULL) {
        return -1;
    }
    args = Py_BuildValue("(N)", PyUnicode_FromFormat("%s failed: %s", call, name));
    kwargs = Py_BuildValue("{s:i,s:s,s:s}", "code", code, "name", name, "log", log);
    if (args != NULL && kwargs != NULL) {
        exc = PyObject_Call(cls, args, kwargs);
    }
    if (exc != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    }
    Py_XDECREF(exc);
    Py_XDECREF(kwargs);
    Py_XDECREF(args);
    Py_DECREF(cls);
    return -1;
}

/* ---- the driver's load, raised ---- */

int
gh_driver_ensure(void)
{
    switch (gh_driver_load()) {
        case GH_DRIVER_OK:
            return 0;
        case GH_DRIVER_FORKED:
            return gh_raise("CudaDriverError", "%s", gh_fork_message);
        default:
            return gh_raise("CudaSupportError", "%s", gh_driver_load_error());
    }
}

static PyObject *
mod_is_available(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(gh_driver_usable());
}

static PyObject *
mod_driver_version(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    int v;
    if (gh_driver_ensure() < 0) {
        return NULL;
    }
    v = gh_driver_version();
    return Py_BuildValue("(ii)", v / 1000, v % 1000 / 10);
}

static PyObject *
mod_driver_library(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    if (gh_driver_ensure() < 0) {
        return NULL;
    }
    return PyUnicode_FromString(gh_driver_path());
}

PyMethodDef gh_driver_methods[] = {
    {"is_available", mod_is_available, METH_NOARGS,
     "is_available()\n--\n\n"
     "Whether a CUDA driver loads and reports at least one device.\n\n"
     "It never raises: use it to choose between a GPU and a CPU path.\n\n"
     "Examples\n"
     "--------\n"
     ">>> if gpuhost.is_available():\n"
     "...     print(gpuhost.get_current_device().name)  # doctest: +SKIP"},
    {"driver_version", mod_driver_version, METH_NOARGS,
     "driver_version()\n--\n\n"
     "The CUDA version the driver supports (cuDriverGetVersion).\n\n"
     "Returns\n"
     "-------\n"
     "tuple of int\n"
     "    (major, minor), such as (12, 4).\n\n"
     "Raises\n"
     "------\n"
     "CudaSupportError\n"
     "    When no usable driver is found.\n\n"
     "Examples\n"
     "--------\n"
     ">>> major, minor = gpuhost.driver_version()"},
    {"driver_library", mod_driver_library, METH_NOARGS,
     "driver_library()\n--\n\nThe path of the libcuda that was loaded."},
    {NULL, NULL, 0, NULL},
};
