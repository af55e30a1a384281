/* CUresult -> Python exception: the one raising path for driver errors.
 *
 * The exception classes live in gpuhost/errors.py, which hands them to the module state
 * once, when it is imported (_core._set_exceptions); C picks one by kind, never imports a
 * module or looks a name up to raise, and instantiates it.  Names come from cuda.h's enum,
 * so errors read well even when the driver cannot describe them (the toolkit's stub
 * library).  The driver's loader (cuda_api.c, below) raises nothing: gh_driver_ensure()
 * raises what it reports, here, as do the module functions that ask for the driver.
 */
#include "errors.h"

#include <stdarg.h>

static const char *const exception_names[GH_EXC__COUNT] = {
#define GH_EXCEPTION_NAME(e, name) #name,
    GH_EXCEPTION_LIST(GH_EXCEPTION_NAME)
#undef GH_EXCEPTION_NAME
};

/* Raising needs no module state at hand: the state whose classes gpuhost.errors registered
   is found through the interpreter's own dict (a subinterpreter has its own gpuhost), under
   this key, as a capsule of its address; the module's clear takes it out again. */
static const char registry_key[] = "gpuhost._core.exceptions";

/* The registered module state of this interpreter, or NULL; never raises. */
static gh_state *
registered_state(void)
{
    PyObject *dict = PyInterpreterState_GetDict(PyInterpreterState_Get()); /* borrowed */
    PyObject *capsule = dict != NULL ? PyDict_GetItemString(dict, registry_key) : NULL;
    if (capsule == NULL || !PyCapsule_IsValid(capsule, registry_key)) {
        return NULL;
    }
    return (gh_state *)PyCapsule_GetPointer(capsule, registry_key);
}

PyObject *
gh_exception_class(gh_state *st, gh_exception kind)
{
    if (st == NULL || st->exceptions[kind] == NULL) {
        st = registered_state();
    }
    if (st == NULL || st->exceptions[kind] == NULL) {
        return PyErr_Format(PyExc_RuntimeError,
                            "gpuhost._core cannot raise %s: gpuhost.errors never registered its "
                            "exception classes (import gpuhost, not gpuhost._core alone)",
                            exception_names[kind]);
    }
    return Py_NewRef(st->exceptions[kind]);
}

/* The class a failed driver call raises, chosen by its result code. */
static gh_exception
result_exception(CUresult res)
{
    if (res == CUDA_ERROR_OUT_OF_MEMORY) {
        return GH_EXC_CUDA_OUT_OF_MEMORY;
    }
    if (res >= CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED &&
        res <= CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD) {
        return GH_EXC_STREAM_CAPTURE;
    }
    return GH_EXC_CUDA_API;
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
    cls = gh_exception_class(NULL, result_exception(res));
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
gh_raise(gh_exception kind, const char *fmt, ...)
{
    va_list vargs;
    PyObject *msg, *cls;

    va_start(vargs, fmt);
    msg = PyUnicode_FromFormatV(fmt, vargs);
    va_end(vargs);
    if (msg == NULL) {
        return -1;
    }
    cls = gh_exception_class(NULL, kind);
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
    PyObject *cls = gh_exception_class(NULL, GH_EXC_NVRTC);
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

/* ---- the classes, registered ---- */

/* Make `st` the registered state of this interpreter; 0 or -1. */
static int
register_state(gh_state *st)
{
    PyObject *dict = PyInterpreterState_GetDict(PyInterpreterState_Get()); /* borrowed */
    PyObject *capsule;
    int rc;
    if (dict == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_set_exceptions(): the interpreter has no dict");
        return -1;
    }
    if ((capsule = PyCapsule_New(st, registry_key, NULL)) == NULL) {
        return -1;
    }
    rc = PyDict_SetItemString(dict, registry_key, capsule);
    Py_DECREF(capsule);
    return rc;
}

/* _core._set_exceptions(**classes): gpuhost.errors handing over every class of
   GH_EXCEPTION_LIST, by name, once, when it is imported. */
static PyObject *
mod_set_exceptions(PyObject *module, PyObject *args, PyObject *kwargs)
{
    gh_state *st = gh_state_of_module(module);
    PyObject *given[GH_EXC__COUNT] = {NULL}; /* borrowed from kwargs */
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    if (PyTuple_GET_SIZE(args) != 0) {
        PyErr_SetString(PyExc_TypeError, "_set_exceptions() takes keyword arguments only");
        return NULL;
    }
    while (kwargs != NULL && PyDict_Next(kwargs, &pos, &key, &value)) {
        int k = 0;
        while (k < GH_EXC__COUNT && PyUnicode_CompareWithASCIIString(key, exception_names[k])) {
            k++;
        }
        if (k == GH_EXC__COUNT) {
            return PyErr_Format(PyExc_TypeError, "_set_exceptions(): no exception is called %R",
                                key);
        }
        if (!PyExceptionClass_Check(value)) {
            return PyErr_Format(PyExc_TypeError, "_set_exceptions(): %R is not an exception class",
                                value);
        }
        given[k] = value;
    }
    for (int k = 0; k < GH_EXC__COUNT; k++) {
        if (given[k] == NULL) {
            return PyErr_Format(PyExc_TypeError, "_set_exceptions(): %s is missing",
                                exception_names[k]);
        }
    }
    if (register_state(st) < 0) {
        return NULL;
    }
    for (int k = 0; k < GH_EXC__COUNT; k++) {
        Py_XSETREF(st->exceptions[k], Py_NewRef(given[k]));
    }
    Py_RETURN_NONE;
}

int
gh_errors_traverse(gh_state *st, visitproc visit, void *arg)
{
    for (int k = 0; k < GH_EXC__COUNT; k++) {
        Py_VISIT(st->exceptions[k]);
    }
    return 0;
}

void
gh_errors_clear(gh_state *st)
{
    for (int k = 0; k < GH_EXC__COUNT; k++) {
        Py_CLEAR(st->exceptions[k]);
    }
    if (registered_state() == st) {
        /* the module goes: raising must not find its state; keep any pending exception */
        PyObject *dict = PyInterpreterState_GetDict(PyInterpreterState_Get());
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        if (PyDict_DelItemString(dict, registry_key) < 0) {
            PyErr_Clear();
        }
        PyErr_Restore(type, value, tb);
    }
}

/* ---- the driver's load, raised ---- */

int
gh_driver_ensure(void)
{
    switch (gh_driver_load()) {
        case GH_DRIVER_OK:
            return 0;
        case GH_DRIVER_FORKED:
            return gh_raise(GH_EXC_CUDA_DRIVER, "%s", gh_fork_message);
        default:
            return gh_raise(GH_EXC_CUDA_SUPPORT, "%s", gh_driver_load_error());
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

PyMethodDef gh_errors_methods[] = {
    {"_set_exceptions", (PyCFunction)(void (*)(void))mod_set_exceptions,
     METH_VARARGS | METH_KEYWORDS,
     "_set_exceptions(**classes)\n--\n\n"
     "Register the exception classes the C core raises, every one by its name (gpuhost.errors "
     "does, once, when it is imported)."},
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
