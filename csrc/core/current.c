/* The module functions of this thread's current device and context: device_count,
 * get_device, select_device, current_device, current_context, synchronize, close.
 */
#include "core_internal.h"

/* The ordinal in `arg`, or -1 with an exception (TypeError for a non-int). */
static long
ordinal_from(PyObject *arg, const char *what)
{
    long value;
    if (!PyLong_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, not %s", what, Py_TYPE(arg)->tp_name);
        return -1;
    }
    value = PyLong_AsLong(arg);
    if (value == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (value < 0) {
        int count = gh_device_count();
        if (count >= 0) {
            gh_raise(GH_EXC_INVALID_DEVICE, "no CUDA device %ld: %d device%s found (ids 0 to %d)",
                     value, count, count == 1 ? "" : "s", count - 1);
        }
        return -1;
    }
    return value;
}

static PyObject *
mod_device_count(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    int count = gh_device_count();
    return count < 0 ? NULL : PyLong_FromLong(count);
}

static PyObject *
mod_get_device(PyObject *module, PyObject *arg)
{
    long ordinal = ordinal_from(arg, "device id");
    gh_device *dev;
    if (ordinal < 0) {
        return NULL;
    }
    dev = gh_device_get(gh_state_of_module(module), ordinal);
    return dev ? Py_NewRef(dev) : NULL;
}

static PyObject *
mod_current_context(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"devnum", NULL};
    PyObject *devnum = Py_None;
    long ordinal = -1;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:current_context", kwlist, &devnum)) {
        return NULL;
    }
    if (devnum != Py_None && (ordinal = ordinal_from(devnum, "devnum")) < 0) {
        return NULL;
    }
    return (PyObject *)gh_current_context(gh_state_of_module(module), (int)ordinal);
}

static PyObject *
mod_select_device(PyObject *module, PyObject *arg)
{
    gh_state *st = gh_state_of_module(module);
    long ordinal = ordinal_from(arg, "device id");
    gh_device *dev;
    gh_context *ctx;

    if (ordinal < 0 || (dev = gh_device_get(st, ordinal)) == NULL ||
        (ctx = gh_context_of(st, dev)) == NULL || gh_context_make_current(ctx) < 0) {
        return NULL;
    }
    return Py_NewRef(dev);
}

static PyObject *
mod_current_device(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    gh_context *ctx = gh_context_current_or_null(gh_state_of_module(module));
    if (ctx != NULL) {
        return Py_NewRef(ctx->device);
    }
    if (PyErr_Occurred()) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
mod_synchronize(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    PyObject *ctx = (PyObject *)gh_current_context(gh_state_of_module(module), -1);
    PyObject *res;
    if (ctx == NULL) {
        return NULL;
    }
    res = PyObject_CallMethod(ctx, "synchronize", NULL);
    Py_DECREF(ctx);
    return res;
}

static PyObject *
mod_close(PyObject *module, PyObject *arg)
{
    int release_all = PyObject_IsTrue(arg);
    if (release_all < 0 || gh_driver_ensure() < 0 ||
        gh_context_close_all(gh_state_of_module(module), release_all) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

PyMethodDef gh_current_methods[] = {
    {"device_count", mod_device_count, METH_NOARGS,
     "device_count()\n--\n\nThe number of CUDA devices. Raises CudaSupportError."},
    {"get_device", mod_get_device, METH_O,
     "get_device(id, /)\n--\n\n"
     "The Device with ordinal `id` (gpuhost.gpus[id] is the same object).\n\n"
     "Raises\n"
     "------\n"
     "InvalidDeviceError\n"
     "    If there is no such device; the message says which ids exist."},
    {"current_context", (PyCFunction)(void (*)(void))mod_current_context,
     METH_VARARGS | METH_KEYWORDS,
     "current_context(devnum=None)\n--\n\n"
     "The Context current in this thread, made current if none is.\n\n"
     "Parameters\n"
     "----------\n"
     "devnum : int, optional\n"
     "    The device whose primary context is made current when none is (default 0).\n\n"
     "Returns\n"
     "-------\n"
     "Context\n\n"
     "Raises\n"
     "------\n"
     "CudaDriverError\n"
     "    If another device's context, or a context that is not a primary context, is\n"
     "    current.\n\n"
     "Examples\n"
     "--------\n"
     ">>> ctx = gpuhost.current_context()\n"
     ">>> ctx.device.id\n"
     "0\n"
     ">>> free, total = ctx.get_memory_info()"},
    {"select_device", mod_select_device, METH_O,
     "select_device(id, /)\n--\n\n"
     "Make a device current in this thread.\n\n"
     "Its primary context replaces the current one on this thread's context stack; new\n"
     "arrays, streams and modules are made there.\n\n"
     "Parameters\n"
     "----------\n"
     "id : int\n"
     "    The device's ordinal.\n\n"
     "Returns\n"
     "-------\n"
     "Device\n\n"
     "Raises\n"
     "------\n"
     "InvalidDeviceError\n"
     "    If there is no such device.\n\n"
     "Examples\n"
     "--------\n"
     ">>> dev = gpuhost.select_device(0)\n"
     ">>> gpuhost.get_current_device() is dev\n"
     "True"},
    {"current_device", mod_current_device, METH_NOARGS,
     "current_device()\n--\n\n"
     "The Device whose primary context is current in this thread, or None."},
    {"synchronize", mod_synchronize, METH_NOARGS,
     "synchronize()\n--\n\n"
     "Wait until all work queued in the current context has finished.\n\n"
     "The GIL is released while waiting. Context.synchronize() waits for one context.\n\n"
     "Raises\n"
     "------\n"
     "CudaAPIError\n"
     "    For an error an earlier asynchronous operation left.\n\n"
     "Examples\n"
     "--------\n"
     ">>> gpuhost.synchronize()"},
    {"close", mod_close, METH_O,
     "close(release_all, /)\n--\n\n"
     "Pop the primary contexts off this thread's stack; if `release_all`, also give up "
     "every primary context gpuhost holds."},
    {NULL, NULL, 0, NULL},
};
