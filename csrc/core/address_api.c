/* Driver calls on raw addresses rather than gpuhost objects: unified-address copies,
 * managed-memory prefetch and advice, pointer attributes and allocation ranges, the device
 * lookup by PCI bus id, and the attributes of a device's default memory pool.  The C side of
 * runtime-style APIs (gpuhost.compat.cupy.runtime) and of the managed-memory hints
 * (gpuhost.memory, gpuhost.compat.cupy.memory).
 *
 * Each runs in the context current in this thread (device 0's primary context is made
 * current when none is, as the runtime does), or in the stream's own context.
 */
#include "core_internal.h"

#include "address_api_docs.h"

#include <string.h>

/* The context to run in for `stream` (resolved into *ref; NULL/None: the legacy default
   stream): a new reference, entered (*pushed says whether to pop it).  NULL on error. */
static gh_context *
enter_for(gh_state *st, PyObject *stream, gh_stream_ref *ref, int *pushed)
{
    gh_context *ctx;

    ref->handle = CU_STREAM_LEGACY;
    ref->context = NULL;
    ref->is_default = 1;
    if (stream != NULL && stream != Py_None && gh_stream_resolve(st, stream, ref) < 0) {
        return NULL;
    }
    if (ref->context != NULL) {
        ctx = ref->context;
        Py_INCREF(ctx);
    }
    else if ((ctx = gh_current_context(st, -1)) == NULL) {
        return NULL;
    }
    if (gh_context_enter(ctx, pushed) < 0) {
        Py_DECREF(ctx);
        return NULL;
    }
    return ctx;
}

/* Leave and drop `ctx`; then raise for `res` if it failed.  0 or -1. */
static int
leave_and_check(gh_context *ctx, int pushed, CUresult res, gh_cu_id id)
{
    int rc = gh_context_leave(ctx, pushed);
    Py_DECREF(ctx);
    return rc < 0 ? -1 : gh_check(res, id);
}

static int
check_size(Py_ssize_t size)
{
    if (size < 0) {
        PyErr_Format(PyExc_ValueError, "size must not be negative, not %zd", size);
        return -1;
    }
    return 0;
}

static PyObject *
mod_memcpy(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"dst", "src", "size", "stream", NULL};
    gh_state *st = gh_state_of_module(module);
    unsigned long long dst, src;
    Py_ssize_t size;
    PyObject *stream = Py_None;
    gh_stream_ref ref;
    gh_context *ctx;
    gh_cu_id id = GH_CU_MemcpyAsync;
    int pushed, sync;
    CUresult res;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "KKn|O:memcpy", kwlist, &dst, &src, &size,
                                     &stream) ||
        check_size(size) < 0) {
        return NULL;
    }
    sync = stream == Py_None;
    if ((ctx = enter_for(st, stream, &ref, &pushed)) == NULL) {
        return NULL;
    }
    res = CUDA_SUCCESS;
    if (size > 0) {
        Py_BEGIN_ALLOW_THREADS
        res = gh_cu.MemcpyAsync((CUdeviceptr)dst, (CUdeviceptr)src, (size_t)size, ref.handle);
        if (res == CUDA_SUCCESS && sync) {
            id = GH_CU_StreamSynchronize;
            res = gh_cu.StreamSynchronize(ref.handle);
        }
        Py_END_ALLOW_THREADS
    }
    if (leave_and_check(ctx, pushed, res, id) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* A CUmemLocation for a device ordinal, or the host for -1 (CU_DEVICE_CPU). */
static CUmemLocation
location_of(int device)
{
    CUmemLocation loc;
    loc.type = device == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
    loc.id = device == CU_DEVICE_CPU ? 0 : device;
    return loc;
}

/* The entry point `fn` exists in this driver (an optional, newer one), else
   CudaSupportError naming it; 0 or -1. */
static int
require(const void *fn, gh_cu_id id)
{
    if (fn == NULL) {
        gh_raise(GH_EXC_CUDA_SUPPORT, "%s needs a CUDA 12.2 or newer driver", gh_cu_name(id));
        return -1;
    }
    return 0;
}

static PyObject *
mod_mem_prefetch(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"ptr", "size", "device", "stream", NULL};
    gh_state *st = gh_state_of_module(module);
    unsigned long long ptr;
    Py_ssize_t size;
    int device, pushed;
    PyObject *stream = Py_None;
    gh_stream_ref ref;
    gh_context *ctx;
    CUresult res;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Kni|O:mem_prefetch", kwlist, &ptr, &size,
                                     &device, &stream) ||
        check_size(size) < 0 ||
        require((void *)gh_cu.MemPrefetchAsync, GH_CU_MemPrefetchAsync) < 0 ||
        (ctx = enter_for(st, stream, &ref, &pushed)) == NULL) {
        return NULL;
    }
    res =
        gh_cu.MemPrefetchAsync((CUdeviceptr)ptr, (size_t)size, location_of(device), 0, ref.handle);
    if (leave_and_check(ctx, pushed, res, GH_CU_MemPrefetchAsync) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
mod_mem_advise(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"ptr", "size", "advice", "device", NULL};
    gh_state *st = gh_state_of_module(module);
    unsigned long long ptr;
    Py_ssize_t size;
    int advice, device, pushed;
    gh_stream_ref ref;
    gh_context *ctx;
    CUresult res;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Knii:mem_advise", kwlist, &ptr, &size, &advice,
                                     &device) ||
        check_size(size) < 0 || require((void *)gh_cu.MemAdvise, GH_CU_MemAdvise) < 0 ||
        (ctx = enter_for(st, NULL, &ref, &pushed)) == NULL) {
        return NULL;
    }
    res =
        gh_cu.MemAdvise((CUdeviceptr)ptr, (size_t)size, (CUmem_advise)advice, location_of(device));
    if (leave_and_check(ctx, pushed, res, GH_CU_MemAdvise) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
mod_device_by_pci_bus_id(PyObject *module, PyObject *arg)
{
    const char *bus_id;
    CUdevice dev = 0;

    (void)module;
    if (!PyUnicode_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "pci_bus_id must be a str, not %s", Py_TYPE(arg)->tp_name);
        return NULL;
    }
    if ((bus_id = PyUnicode_AsUTF8(arg)) == NULL || gh_driver_ensure() < 0 ||
        gh_check(gh_cu.DeviceGetByPCIBusId(&dev, bus_id), GH_CU_DeviceGetByPCIBusId) < 0) {
        return NULL;
    }
    return PyLong_FromLong(dev);
}

/* (device, device pointer, host pointer, managed, host memory) of `ptr`, or None for memory
   the driver does not know (CUDA_ERROR_INVALID_VALUE); a pointer that has no device (or
   host) address reports 0 for it. */
static PyObject *
mod_pointer_info(PyObject *module, PyObject *arg)
{
    unsigned long long ptr = PyLong_AsUnsignedLongLong(arg);
    unsigned int memtype = 0, managed = 0;
    int ordinal = -1;
    CUdeviceptr dptr = 0;
    void *hptr = NULL;
    CUresult res;

    (void)module;
    if (PyErr_Occurred() || gh_driver_ensure() < 0) {
        return NULL;
    }
    res = gh_cu.PointerGetAttribute(&memtype, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)ptr);
    if (res == CUDA_ERROR_INVALID_VALUE) {
        Py_RETURN_NONE;
    }
    if (gh_check(res, GH_CU_PointerGetAttribute) < 0 ||
        gh_check(gh_cu.PointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                           (CUdeviceptr)ptr),
                 GH_CU_PointerGetAttribute) < 0 ||
        gh_check(
            gh_cu.PointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, (CUdeviceptr)ptr),
            GH_CU_PointerGetAttribute) < 0) {
        return NULL;
    }
    /* Either address may not exist (device memory has no host address): then 0. */
    if (gh_cu.PointerGetAttribute(&dptr, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, (CUdeviceptr)ptr) !=
        CUDA_SUCCESS) {
        dptr = 0;
    }
    if (gh_cu.PointerGetAttribute(&hptr, CU_POINTER_ATTRIBUTE_HOST_POINTER, (CUdeviceptr)ptr) !=
        CUDA_SUCCESS) {
        hptr = NULL;
    }
    return Py_BuildValue("iKKOO", ordinal, (unsigned long long)dptr,
                         (unsigned long long)(uintptr_t)hptr, managed ? Py_True : Py_False,
                         memtype == CU_MEMORYTYPE_HOST ? Py_True : Py_False);
}

/* (base, size) of the allocation holding device address `ptr` (cuMemGetAddressRange), in
   the current context: numba's driver.device_extents. */
static PyObject *
mod_mem_address_range(PyObject *module, PyObject *arg)
{
    gh_state *st = gh_state_of_module(module);
    unsigned long long ptr = PyLong_AsUnsignedLongLong(arg);
    CUdeviceptr base = 0;
    size_t size = 0;
    gh_context *ctx;
    int pushed;
    CUresult res;

    if (PyErr_Occurred() || (ctx = gh_current_context(st, -1)) == NULL) {
        return NULL;
    }
    if (gh_context_enter(ctx, &pushed) < 0) {
        Py_DECREF(ctx);
        return NULL;
    }
    res = gh_cu.MemGetAddressRange(&base, &size, (CUdeviceptr)ptr);
    if (leave_and_check(ctx, pushed, res, GH_CU_MemGetAddressRange) < 0) {
        return NULL;
    }
    return Py_BuildValue("KK", (unsigned long long)base, (unsigned long long)size);
}

/* The memory-pool attributes mempool_attribute() reads and writes, by name. */
static const struct {
    const char *name;
    CUmemPool_attribute attr;
    int writable;
} mempool_attrs[] = {
    {"release_threshold", CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, 1},
    {"reserved_current", CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, 0},
    {"reserved_high", CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, 0},
    {"used_current", CU_MEMPOOL_ATTR_USED_MEM_CURRENT, 0},
    {"used_high", CU_MEMPOOL_ATTR_USED_MEM_HIGH, 0},
};

static PyObject *
mod_mempool_attribute(PyObject *module, PyObject *args)
{
    const char *name;
    int device, count = 0;
    unsigned long long value = 0;
    PyObject *new_value = Py_None;
    CUmemoryPool pool;
    size_t i, n = sizeof(mempool_attrs) / sizeof(mempool_attrs[0]);
    cuuint64_t v;

    if (!PyArg_ParseTuple(args, "is|O:mempool_attribute", &device, &name, &new_value) ||
        gh_driver_ensure() < 0 ||
        gh_check(gh_cu.DeviceGetCount(&count), GH_CU_DeviceGetCount) < 0) {
        return NULL;
    }
    (void)module;
    for (i = 0; i < n && strcmp(mempool_attrs[i].name, name) != 0; i++) {
    }
    if (i == n) {
        PyErr_Format(PyExc_ValueError, "unknown memory-pool attribute '%s'", name);
        return NULL;
    }
    if (new_value != Py_None) {
        if (!mempool_attrs[i].writable) {
            PyErr_Format(PyExc_ValueError, "the memory-pool attribute '%s' is read-only", name);
            return NULL;
        }
        value = PyLong_AsUnsignedLongLong(new_value);
        if (PyErr_Occurred()) {
            return NULL;
        }
    }
    if (device < 0 || device >= count) {
        gh_raise_cuda(CUDA_ERROR_INVALID_DEVICE, GH_CU_DeviceGetDefaultMemPool);
        return NULL;
    }
    if (gh_check(gh_cu.DeviceGetDefaultMemPool(&pool, device), GH_CU_DeviceGetDefaultMemPool) < 0) {
        return NULL;
    }
    v = value;
    if (new_value != Py_None) {
        if (gh_check(gh_cu.MemPoolSetAttribute(pool, mempool_attrs[i].attr, &v),
                     GH_CU_MemPoolSetAttribute) < 0) {
            return NULL;
        }
        Py_RETURN_NONE;
    }
    if (gh_check(gh_cu.MemPoolGetAttribute(pool, mempool_attrs[i].attr, &v),
                 GH_CU_MemPoolGetAttribute) < 0) {
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(v);
}

PyMethodDef gh_address_methods[] = {
    {"memcpy", (PyCFunction)(void (*)(void))mod_memcpy, METH_VARARGS | METH_KEYWORDS,
     address_memcpy_doc},
    {"mem_prefetch", (PyCFunction)(void (*)(void))mod_mem_prefetch, METH_VARARGS | METH_KEYWORDS,
     address_mem_prefetch_doc},
    {"mem_advise", (PyCFunction)(void (*)(void))mod_mem_advise, METH_VARARGS | METH_KEYWORDS,
     address_mem_advise_doc},
    {"_pointer_info", mod_pointer_info, METH_O, address__pointer_info_doc},
    {"_mem_address_range", mod_mem_address_range, METH_O, address__mem_address_range_doc},
    {"mempool_attribute", mod_mempool_attribute, METH_VARARGS, address_mempool_attribute_doc},
    {"device_by_pci_bus_id", mod_device_by_pci_bus_id, METH_O, address_device_by_pci_bus_id_doc},
    {NULL, NULL, 0, NULL},
};
