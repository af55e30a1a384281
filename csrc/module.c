/* gpuhost._core: the module object, its state and its functions.
 *
 * Multi-phase init (PEP 489) with per-module state (PEP 573): importing the module twice
 * (after removing it from sys.modules, or in a subinterpreter) gives fresh types.  The
 * driver's function table is plain C data, shared by all.
 */
#include "module.h"
#include "nccl_comm.h"

#define PY_ARRAY_UNIQUE_SYMBOL gh_ARRAY_API
#include <numpy/arrayobject.h>

_Thread_local int gh_on_driver_thread = 0;

PyObject *
gh_call_python(const char *module, const char *name, PyObject *args, PyObject *kwargs)
{
    PyObject *mod = PyImport_ImportModule(module), *fn, *res = NULL;
    if (mod == NULL) {
        return NULL;
    }
    fn = PyObject_GetAttrString(mod, name);
    Py_DECREF(mod);
    if (fn != NULL) {
        res = args ? PyObject_Call(fn, args, kwargs) : PyObject_CallNoArgs(fn);
        Py_DECREF(fn);
    }
    return res;
}

PyObject *
gh_call_python_method(const char *module, const char *name, PyObject *self, PyObject *args,
                      PyObject *kwargs)
{
    Py_ssize_t n = args ? PyTuple_GET_SIZE(args) : 0;
    PyObject *full = PyTuple_New(n + 1), *res;
    if (full == NULL) {
        return NULL;
    }
    PyTuple_SET_ITEM(full, 0, Py_NewRef(self));
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTuple_SET_ITEM(full, i + 1, Py_NewRef(PyTuple_GET_ITEM(args, i)));
    }
    res = gh_call_python(module, name, full, kwargs);
    Py_DECREF(full);
    return res;
}

/* Release `handle` with the destroy call `id`; the driver's result. */
static CUresult
release_now(gh_cu_id id, void *handle)
{
    switch (id) {
        case GH_CU_StreamDestroy:
            return gh_cu.StreamDestroy((CUstream)handle);
        case GH_CU_EventDestroy:
            return gh_cu.EventDestroy((CUevent)handle);
        case GH_CU_MemFree:
            return gh_cu.MemFree((CUdeviceptr)(uintptr_t)handle);
        case GH_CU_MemFreeHost:
            return gh_cu.MemFreeHost(handle);
        case GH_CU_MemHostUnregister:
            return gh_cu.MemHostUnregister(handle);
        case GH_CU_IpcCloseMemHandle:
            return gh_cu.IpcCloseMemHandle((CUdeviceptr)(uintptr_t)handle);
        case GH_CU_ModuleUnload:
            return gh_cu.ModuleUnload((CUmodule)handle);
        case GH_CU_GraphDestroy:
            return gh_cu.GraphDestroy((CUgraph)handle);
        case GH_CU_GraphExecDestroy:
            return gh_cu.GraphExecDestroy((CUgraphExec)handle);
        default:
            return CUDA_ERROR_NOT_SUPPORTED;
    }
}

/* Release now if the resource's context generation is still alive; never raises. */
static void
release_if_alive(const gh_pending_release *r)
{
    CUresult res;
    if (r->ctx->handle == NULL || r->ctx->generation != r->generation) {
        return; /* it died with its context; its address may belong to someone else now */
    }
    if (r->id == GH_CU_StreamDestroy || r->id == GH_CU_EventDestroy ||
        r->id == GH_CU_GraphDestroy) {
        res = release_now(r->id, r->handle); /* returns at once */
    }
    else {
        /* A free can wait for queued work, host callbacks included, which need the GIL. */
        Py_BEGIN_ALLOW_THREADS
        res = release_now(r->id, r->handle);
        Py_END_ALLOW_THREADS
    }
    if (res != CUDA_SUCCESS) {
        gh_warn_cleanup(res, r->id);
    }
}

/* A pending call (main thread, GIL held): the release a callback thread could not do. */
static int
run_deferred_release(void *arg)
{
    gh_pending_release *r = (gh_pending_release *)arg;
    release_if_alive(r);
    Py_DECREF(r->ctx);
    PyMem_RawFree(r);
    return 0;
}

/* Keep `r` (its context reference included) for defer_cleanup()'s end; 0 or -1. */
static int
hold_release(gh_state *st, const gh_pending_release *r)
{
    if (st->n_held == st->cap_held) {
        Py_ssize_t cap = st->cap_held ? 2 * st->cap_held : 64;
        gh_pending_release *grown = PyMem_RawRealloc(st->held, (size_t)cap * sizeof(*grown));
        if (grown == NULL) {
            return -1;
        }
        st->held = grown;
        st->cap_held = cap;
    }
    st->held[st->n_held] = *r;
    Py_INCREF(r->ctx);
    st->n_held++;
    return 0;
}

void
gh_release(gh_context *ctx, uint64_t generation, gh_cu_id id, void *handle)
{
    gh_state *st = gh_state_of_type(Py_TYPE(ctx));
    gh_pending_release r = {id, handle, ctx, generation};
    gh_pending_release *later;

    /* A registration is undone at once even inside defer_cleanup(), as numba does, so that
       `with pinned(a):` can be entered again for the same memory in the same block. */
    if (st != NULL && st->defer_depth > 0 && id != GH_CU_MemHostUnregister &&
        hold_release(st, &r) == 0) {
        return;
    }
    if (!gh_on_driver_thread) {
        release_if_alive(&r);
        return;
    }
    later = PyMem_RawMalloc(sizeof(*later));
    if (later == NULL) {
        return; /* out of host memory on a driver thread: leak the handle, never crash */
    }
    *later = r;
    Py_INCREF(ctx);
    if (Py_AddPendingCall(run_deferred_release, later) < 0) {
        Py_DECREF(ctx);
        PyMem_RawFree(later);
    }
}

/* Release everything held by defer_cleanup() blocks. */
static void
release_held(gh_state *st)
{
    while (st->n_held > 0) {
        gh_pending_release r = st->held[--st->n_held];
        release_if_alive(&r);
        Py_DECREF(r.ctx);
    }
}

void
gh_cleanup_defer(gh_state *st)
{
    st->defer_depth++;
}

void
gh_cleanup_resume(gh_state *st)
{
    if (st->defer_depth > 0 && --st->defer_depth == 0) {
        release_held(st);
    }
}

static PyObject *
mod_defer_cleanup_enter(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    gh_state_of_module(module)->defer_depth++;
    Py_RETURN_NONE;
}

static PyObject *
mod_defer_cleanup_depth(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromLong(gh_state_of_module(module)->defer_depth);
}

static PyObject *
mod_defer_cleanup_exit(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    gh_state *st = gh_state_of_module(module);
    if (st->defer_depth > 0 && --st->defer_depth == 0) {
        release_held(st);
    }
    Py_RETURN_NONE;
}

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
            gh_raise("InvalidDeviceError", "no CUDA device %ld: %d device%s found (ids 0 to %d)",
                     value, count, count == 1 ? "" : "s", count - 1);
        }
        return -1;
    }
    return value;
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

static PyObject *
mod_nvrtc_version(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    int major = 0, minor = 0;
    if (gh_nvrtc_ensure() < 0 ||
        gh_check_nvrtc(gh_nvrtc.Version(&major, &minor), GH_NVRTC_Version)) {
        return NULL;
    }
    return Py_BuildValue("(ii)", major, minor);
}

static PyObject *
mod_nvrtc_library(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    if (gh_nvrtc_ensure() < 0) {
        return NULL;
    }
    return PyUnicode_FromString(gh_nvrtc_path());
}

static PyMethodDef module_methods[] = {
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
    {"nvrtc_version", mod_nvrtc_version, METH_NOARGS,
     "nvrtc_version()\n--\n\n"
     "NVRTC's version as (major, minor). Raises NvrtcSupportError if libnvrtc is not found."},
    {"nvrtc_library", mod_nvrtc_library, METH_NOARGS,
     "nvrtc_library()\n--\n\nThe path of the libnvrtc that was loaded."},
    {"_defer_cleanup_enter", mod_defer_cleanup_enter, METH_NOARGS,
     "_defer_cleanup_enter()\n--\n\nHold releases of memory, streams and events."},
    {"_defer_cleanup_depth", mod_defer_cleanup_depth, METH_NOARGS,
     "_defer_cleanup_depth()\n--\n\nHow many defer_cleanup() blocks are open."},
    {"_defer_cleanup_exit", mod_defer_cleanup_exit, METH_NOARGS,
     "_defer_cleanup_exit()\n--\n\nEnd one hold; at the outermost, release what was held."},
    {NULL, NULL, 0, NULL},
};

static int
module_exec(PyObject *module)
{
    gh_state *st = gh_state_of_module(module);
    if (PyArray_ImportNumPyAPI() < 0) {
        return -1;
    }
    if (gh_device_init_type(module, st) < 0 || gh_context_init_type(module, st) < 0 ||
        gh_stream_init_type(module, st) < 0 || gh_event_init_type(module, st) < 0 ||
        gh_memory_init_type(module, st) < 0 || gh_devicearray_init_type(module, st) < 0 ||
        gh_dlpack_init(module, st) < 0 || gh_cumodule_init_type(module, st) < 0 ||
        gh_kernel_init_type(module, st) < 0 || gh_jit_init_type(module, st) < 0 ||
        gh_pool_init_type(module, st) < 0 || gh_graph_init_type(module, st) < 0 ||
        gh_nccl_init(module, st) < 0 || PyModule_AddFunctions(module, gh_nvtx_methods) < 0 ||
        PyModule_AddFunctions(module, gh_jit_methods) < 0 ||
        PyModule_AddFunctions(module, gh_address_methods) < 0 ||
        PyModule_AddFunctions(module, gh_program_methods) < 0 ||
        PyModule_AddFunctions(module, gh_display_methods) < 0) {
        return -1;
    }
    return PyModule_AddIntConstant(module, "CUDA_HEADERS_VERSION", CUDA_VERSION);
}

static int
module_traverse(PyObject *module, visitproc visit, void *arg)
{
    gh_state *st = gh_state_of_module(module);
    Py_VISIT(st->DeviceType);
    Py_VISIT(st->ContextType);
    Py_VISIT(st->MemoryInfoType);
    Py_VISIT(st->StreamType);
    Py_VISIT(st->EventType);
    Py_VISIT(st->AllocationType);
    Py_VISIT(st->DeviceArrayType);
    Py_VISIT(st->DLPackOwnerType);
    Py_VISIT(st->ModuleType);
    Py_VISIT(st->KernelType);
    Py_VISIT(st->LaunchConfigType);
    Py_VISIT(st->JitDispatcherType);
    Py_VISIT(st->JitLaunchType);
    Py_VISIT(st->PoolType);
    Py_VISIT(st->GraphType);
    Py_VISIT(st->GraphExecType);
    Py_VISIT(st->GraphNodeType);
    Py_VISIT(st->NcclCommType);
    Py_VISIT(st->default_pools);
    Py_VISIT(st->devices);
    return 0;
}

static int
module_clear(PyObject *module)
{
    gh_state *st = gh_state_of_module(module);
    gh_event_cache_clear(st);
    Py_CLEAR(st->default_pools); /* before the types: the pools free what they hold */
    Py_CLEAR(st->devices);
    Py_CLEAR(st->DeviceType);
    Py_CLEAR(st->ContextType);
    Py_CLEAR(st->MemoryInfoType);
    Py_CLEAR(st->StreamType);
    Py_CLEAR(st->EventType);
    Py_CLEAR(st->AllocationType);
    Py_CLEAR(st->DeviceArrayType);
    Py_CLEAR(st->DLPackOwnerType);
    Py_CLEAR(st->ModuleType);
    Py_CLEAR(st->KernelType);
    Py_CLEAR(st->LaunchConfigType);
    Py_CLEAR(st->JitDispatcherType);
    Py_CLEAR(st->JitLaunchType);
    Py_CLEAR(st->PoolType);
    Py_CLEAR(st->GraphType);
    Py_CLEAR(st->GraphExecType);
    Py_CLEAR(st->GraphNodeType);
    Py_CLEAR(st->NcclCommType);
    return 0;
}

static void
module_free(void *module)
{
    gh_state *st = gh_state_of_module((PyObject *)module);
    st->defer_depth = 0;
    release_held(st);
    PyMem_RawFree(st->held);
    st->held = NULL;
    module_clear((PyObject *)module);
}

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, module_exec},
#ifdef Py_mod_gil
    /* Said outright for free-threaded CPython: the C core relies on the GIL throughout (pool
       lists, caches, the module state), so such an interpreter keeps the GIL on for it. */
    {Py_mod_gil, Py_MOD_GIL_USED},
#endif
    {0, NULL},
};

PyModuleDef gh_module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "gpuhost._core",
    .m_doc = "gpuhost's C core: the CUDA driver and NVRTC, loaded at run time.",
    .m_size = sizeof(gh_state),
    .m_methods = module_methods,
    .m_slots = module_slots,
    .m_traverse = module_traverse,
    .m_clear = module_clear,
    .m_free = module_free,
};

PyMODINIT_FUNC PyInit__core(void);

PyMODINIT_FUNC
PyInit__core(void)
{
    return PyModuleDef_Init(&gh_module_def);
}
