/* The current allocator of device arrays, owned here: NULL in the module state for the
 * default Pool of the current context (the fast path, no Python call), else a Python
 * callable fn(nbytes, stream) -> (owner, address).  A thread may set its own for a while
 * (CuPy's using_allocator): it wins over the module's in that thread.  gpuhost.memory and
 * gpuhost.memory_manager set them through _core.set_array_allocator and
 * set_thread_array_allocator; device_array() and to_device(), in Python and in C
 * (array_copy.c), take their memory through gh_array_memory.
 */

#include "memory_internal.h"

#include <stdatomic.h>

/* This thread's allocator of device arrays: none while thread_owner is not the module
   state asking (another instance of the module: an earlier import, or another
   interpreter's), else thread_fn: Py_None for the default pool, or a callable (a strong
   reference, of interpreter thread_interp). */
static _Thread_local gh_state *thread_owner;
static _Thread_local PyObject *thread_fn;
static _Thread_local PyInterpreterState *thread_interp;
/* How many threads have their own now: while none has, an array's memory reads no
   thread-local variable (in a shared library each read is a call to __tls_get_addr). */
static atomic_int threads_with_own;

/* The Python allocator's answer for `size` bytes: 0 with *owner, *ptr, or -1. */
static int
python_memory(PyObject *fn, size_t size, PyObject *stream, PyObject **owner, CUdeviceptr *ptr)
{
    PyObject *args[2] = {PyLong_FromSize_t(size), stream != NULL ? stream : Py_None};
    PyObject *res, *address;
    unsigned long long value;

    if (args[0] == NULL) {
        return -1;
    }
    res = PyObject_Vectorcall(fn, args, 2, NULL);
    Py_DECREF(args[0]);
    if (res == NULL) {
        return -1;
    }
    if (!PyTuple_Check(res) || PyTuple_GET_SIZE(res) != 2) {
        PyErr_Format(PyExc_TypeError,
                     "the array allocator %R returned %.200s, not an (owner, address) pair", fn,
                     Py_TYPE(res)->tp_name);
        Py_DECREF(res);
        return -1;
    }
    address = PyNumber_Index(PyTuple_GET_ITEM(res, 1));
    value = address != NULL ? PyLong_AsUnsignedLongLong(address) : (unsigned long long)-1;
    Py_XDECREF(address);
    if (value == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Format(PyExc_TypeError,
                     "the array allocator %R returned an address that is not an int from 0 "
                     "to 2**64-1: %R",
                     fn, PyTuple_GET_ITEM(res, 1));
        Py_DECREF(res);
        return -1;
    }
    *owner = Py_NewRef(PyTuple_GET_ITEM(res, 0));
    *ptr = (CUdeviceptr)value;
    Py_DECREF(res);
    return 0;
}

int
gh_array_memory(gh_state *st, gh_context *ctx, size_t size, PyObject *stream, PyObject **owner,
                CUdeviceptr *ptr, uint64_t *generation)
{
    PyObject *fn = st->array_allocator;

    if (atomic_load_explicit(&threads_with_own, memory_order_relaxed) > 0 && thread_owner == st) {
        fn = thread_fn == Py_None ? NULL : thread_fn;
    }
    if (fn == NULL || size == 0) {
        gh_allocation *a = gh_pool_device_alloc(st, ctx, size, stream);
        if (a == NULL) {
            return -1;
        }
        *owner = (PyObject *)a;
        *ptr = a->dptr;
        *generation = a->generation;
        return 0;
    }
    Py_INCREF(fn); /* it may replace itself (the memory manager named by the environment) */
    int r = python_memory(fn, size, stream, owner, ptr);
    Py_DECREF(fn);
    if (r < 0) {
        return -1;
    }
    *generation =
        Py_IS_TYPE(*owner, st->AllocationType) && ((gh_allocation *)*owner)->context == ctx
            ? ((gh_allocation *)*owner)->generation
            : ctx->generation;
    return 0;
}

/* 0 if `fn` can be an array allocator (a callable, or None), else -1 with TypeError. */
static int
check_allocator(PyObject *fn)
{
    if (fn != Py_None && !PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "the array allocator must be callable or None, not %.200s",
                     Py_TYPE(fn)->tp_name);
        return -1;
    }
    return 0;
}

/* _core.set_array_allocator(fn): fn(nbytes, stream) -> (owner, address), or None for the
   default pool. */
static PyObject *
mod_set_array_allocator(PyObject *module, PyObject *fn)
{
    gh_state *st = gh_state_of_module(module);

    if (check_allocator(fn) < 0) {
        return NULL;
    }
    Py_XSETREF(st->array_allocator, fn == Py_None ? NULL : Py_NewRef(fn));
    Py_RETURN_NONE;
}

static PyObject *
mod_array_allocator(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    PyObject *fn = gh_state_of_module(module)->array_allocator;
    return Py_NewRef(fn != NULL ? fn : Py_None);
}

/* _core.set_thread_array_allocator([fn]): this thread's allocator of device arrays, fn as
   set_array_allocator takes it (None: the default pool); without fn, none: the module's
   again.  One an earlier instance of the module left in this thread (gpuhost._core imported
   again) is dropped; another interpreter's is refused, as its reference cannot be dropped
   here. */
static PyObject *
mod_set_thread_array_allocator(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    gh_state *st = gh_state_of_module(module);
    PyInterpreterState *interp = PyInterpreterState_Get();
    PyObject *old = thread_fn;

    if (nargs > 1) {
        PyErr_Format(PyExc_TypeError,
                     "set_thread_array_allocator() takes at most 1 argument (%zd given)", nargs);
        return NULL;
    }
    if (nargs == 1 && check_allocator(args[0]) < 0) {
        return NULL;
    }
    if (old != NULL && thread_interp != interp) {
        PyErr_SetString(PyExc_RuntimeError,
                        "this thread's allocator of device arrays was set in another "
                        "interpreter: unset it there first");
        return NULL;
    }
    if ((old != NULL) != (nargs == 1)) {
        atomic_fetch_add_explicit(&threads_with_own, nargs == 1 ? 1 : -1, memory_order_relaxed);
    }
    thread_owner = nargs == 1 ? st : NULL;
    thread_fn = nargs == 1 ? Py_NewRef(args[0]) : NULL;
    thread_interp = nargs == 1 ? interp : NULL;
    Py_XDECREF(old);
    Py_RETURN_NONE;
}

/* _core.thread_array_allocator() -> (fn,) while this thread has its own, else (). */
static PyObject *
mod_thread_array_allocator(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    if (thread_owner != gh_state_of_module(module)) {
        return PyTuple_New(0);
    }
    return PyTuple_Pack(1, thread_fn);
}

void
gh_thread_array_allocator_clear(gh_state *st)
{
    if (thread_owner == st) {
        atomic_fetch_sub_explicit(&threads_with_own, 1, memory_order_relaxed);
        thread_owner = NULL;
        thread_interp = NULL;
        Py_CLEAR(thread_fn);
    }
}

/* _core.array_memory(nbytes, stream=None) -> (owner, address): device_array()'s memory. */
static PyObject *
mod_array_memory(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    gh_state *st = gh_state_of_module(module);
    PyObject *stream = nargs > 1 ? args[1] : Py_None, *owner, *res = NULL;
    gh_context *ctx;
    CUdeviceptr ptr;
    uint64_t generation;
    Py_ssize_t size;

    if (nargs < 1 || nargs > 2) {
        PyErr_Format(PyExc_TypeError, "array_memory() takes 1 or 2 arguments (%zd given)", nargs);
        return NULL;
    }
    if ((size = PyNumber_AsSsize_t(args[0], PyExc_OverflowError)) == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (size < 0) {
        PyErr_Format(PyExc_ValueError, "nbytes must be >= 0, not %zd", size);
        return NULL;
    }
    if ((ctx = gh_current_context(st, -1)) == NULL) {
        return NULL;
    }
    if (gh_array_memory(st, ctx, (size_t)size, stream == Py_None ? NULL : stream, &owner, &ptr,
                        &generation) == 0) {
        res = Py_BuildValue("(NK)", owner, (unsigned long long)ptr);
    }
    Py_DECREF(ctx);
    return res;
}

PyMethodDef gh_allocator_methods[] = {
    {"set_array_allocator", (PyCFunction)mod_set_array_allocator, METH_O,
     "set_array_allocator(fn)\n--\n\n"
     "Make device arrays take their memory from fn(nbytes, stream) -> (owner, address), or "
     "from the current context's default pool for None (gpuhost internal: gpuhost.memory "
     "and gpuhost.memory_manager call it)."},
    {"array_allocator", (PyCFunction)mod_array_allocator, METH_NOARGS,
     "array_allocator()\n--\n\n"
     "The allocator set_array_allocator set, or None for the default pool (gpuhost "
     "internal)."},
    {"set_thread_array_allocator", (PyCFunction)(void (*)(void))mod_set_thread_array_allocator,
     METH_FASTCALL,
     "set_thread_array_allocator([fn])\n--\n\n"
     "Make this thread's device arrays take their memory from fn (as set_array_allocator's; "
     "None: the default pool) in place of the module's allocator; without fn, from the "
     "module's again (gpuhost internal: gpuhost.memory.using_allocator calls it)."},
    {"thread_array_allocator", (PyCFunction)mod_thread_array_allocator, METH_NOARGS,
     "thread_array_allocator()\n--\n\n"
     "(fn,) while this thread has its own allocator of device arrays, else () (gpuhost "
     "internal)."},
    {"array_memory", (PyCFunction)(void (*)(void))mod_array_memory, METH_FASTCALL,
     "array_memory(nbytes, stream=None)\n--\n\n"
     "(owner, address): nbytes of device memory for an array, from the current allocator "
     "(gpuhost internal)."},
    {NULL, NULL, 0, NULL},
};
