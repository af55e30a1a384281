/* User buffers for NCCL (NCCL 2.19 and later): Communicator.register(array), which registers
 * an array's memory with the communicator (ncclCommRegister: NCCL then moves it without
 * copying it through its own buffers) until the Registration is closed, and NCCL's own
 * allocator (ncclMemAlloc), whose memory NCCL can register for every transport.
 *
 * Both entry points are optional: with an older libnccl, register() and nccl_mem_alloc()
 * raise NcclSupportError naming the version that added them.  A communicator's end
 * deregisters what is still registered (gh_nccl_regs_end).
 */
#include "nccl_internal.h"
#include "core/core.h"
#include "arrays/arrays.h"
#include "nccl_register_docs.h"

#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL gh_ARRAY_API
#include <numpy/arrayobject.h>

#include <structmember.h>

/* The memory of one ncclMemAlloc, freed (ncclMemFree) when the object goes. */
typedef struct {
    PyObject_HEAD
    gh_context *context; /* strong: the memory's device's */
    uint64_t generation;
    void *ptr;
    Py_ssize_t size;
} gh_nccl_memory;

/* ---- Registration ---- */

static void
reg_unlink(gh_nccl_reg *r)
{
    if (r->comm == NULL) {
        return;
    }
    if (r->prev != NULL) {
        r->prev->next = r->next;
    }
    else if (r->comm->regs == r) {
        r->comm->regs = r->next;
    }
    if (r->next != NULL) {
        r->next->prev = r->prev;
    }
    r->prev = r->next = NULL;
}

/* ncclCommDeregister, without the GIL, if still registered; NCCL's answer. */
static gh_ncclResult_t
reg_end(gh_nccl_reg *r)
{
    gh_ncclResult_t res = GH_ncclSuccess;
    void *handle = r->handle;
    gh_ncclComm_t comm = r->comm ? r->comm->comm : NULL;
    r->handle = NULL;
    reg_unlink(r);
    if (handle != NULL && comm != NULL) {
        Py_BEGIN_ALLOW_THREADS
        res = gh_nccl.CommDeregister(comm, handle);
        Py_END_ALLOW_THREADS
    }
    return res;
}

void
gh_nccl_regs_end(gh_nccl_comm *self)
{
    while (self->regs != NULL) {
        reg_end(self->regs); /* errors: the communicator's end frees them anyway */
    }
}

static PyObject *
reg_close(gh_nccl_reg *self, PyObject *unused)
{
    gh_ncclResult_t res;
    gh_ncclComm_t comm = self->comm ? self->comm->comm : NULL;
    (void)unused;
    if ((res = reg_end(self)) != GH_ncclSuccess) {
        return gh_raise_nccl(res, GH_NCCL_CommDeregister, comm), NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
reg_enter(gh_nccl_reg *self, PyObject *unused)
{
    (void)unused;
    return Py_NewRef((PyObject *)self);
}

static PyObject *
reg_exit(gh_nccl_reg *self, PyObject *args)
{
    (void)args;
    return reg_close(self, NULL);
}

static void
reg_dealloc(gh_nccl_reg *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (self->handle != NULL) {
        PyObject *type, *value, *tb;
        gh_ncclResult_t res;
        PyErr_Fetch(&type, &value, &tb);
        if ((res = reg_end(self)) != GH_ncclSuccess &&
            PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                             "ncclCommDeregister failed (%d) for a dropped Registration",
                             (int)res) < 0) {
            PyErr_WriteUnraisable((PyObject *)self);
        }
        PyErr_Restore(type, value, tb);
    }
    reg_unlink(self);
    Py_CLEAR(self->comm);
    Py_CLEAR(self->array);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static PyObject *
reg_get_closed(gh_nccl_reg *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(self->handle == NULL);
}

static PyObject *
reg_repr(gh_nccl_reg *self)
{
    return PyUnicode_FromFormat("<gpuhost.nccl.Registration of %zu bytes at 0x%llx%s>", self->size,
                                (unsigned long long)self->ptr,
                                self->handle == NULL ? ", closed" : "");
}

/* The registered span of `a`: contiguous, on the communicator's device. */
static int
reg_span(gh_nccl_comm *comm, gh_devicearray *a, CUdeviceptr *ptr, size_t *size)
{
    Py_ssize_t n = gh_devicearray_size(a);
    if (a->context->device->id != comm->device) {
        PyErr_Format(PyExc_ValueError,
                     "register(): the array is memory of device %d; this Communicator's rank %d "
                     "is on device %d",
                     a->context->device->id, comm->rank, comm->device);
        return -1;
    }
    if (!gh_devicearray_is_contiguous(a, 0) && !gh_devicearray_is_contiguous(a, 1)) {
        PyErr_SetString(PyExc_ValueError, "register(): the array is not contiguous; NCCL "
                                          "registers one block of memory");
        return -1;
    }
    if (n == 0) {
        PyErr_SetString(PyExc_ValueError, "register(): the array is empty");
        return -1;
    }
    *ptr = a->ptr;
    *size = (size_t)n * (size_t)PyDataType_ELSIZE((PyArray_Descr *)a->dtype);
    return 0;
}

PyObject *
gh_nccl_register(gh_nccl_comm *self, PyObject *array)
{
    gh_state *st = self->st;
    gh_devicearray *a = (gh_devicearray *)array;
    gh_nccl_reg *r;
    gh_ncclResult_t res;
    CUdeviceptr ptr;
    void *handle = NULL;
    size_t size;
    int pushed;
    if (!PyObject_TypeCheck(array, st->DeviceArrayType)) {
        PyErr_Format(PyExc_TypeError,
                     "register(): array must be a gpuhost DeviceArray (see "
                     "gpuhost.nccl.device_array), not %.100s",
                     Py_TYPE(array)->tp_name);
        return NULL;
    }
    if (gh_nccl_comm_live(self, "register") < 0 || gh_nccl_optional(GH_NCCL_CommRegister) < 0 ||
        gh_nccl_optional(GH_NCCL_CommDeregister) < 0 ||
        gh_context_check_alive(a->context, a->generation, GH_CU_LaunchKernel) < 0 ||
        reg_span(self, a, &ptr, &size) < 0 || gh_context_enter(self->context, &pushed) < 0) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    res = gh_nccl.CommRegister(self->comm, (void *)ptr, size, &handle);
    Py_END_ALLOW_THREADS
    if (gh_context_leave(self->context, pushed) < 0) {
        return NULL;
    }
    if (res != GH_ncclSuccess) {
        return gh_raise_nccl(res, GH_NCCL_CommRegister, self->comm), NULL;
    }
    if ((r = (gh_nccl_reg *)st->NcclRegistrationType->tp_alloc(st->NcclRegistrationType, 0)) ==
        NULL) {
        Py_BEGIN_ALLOW_THREADS
        gh_nccl.CommDeregister(self->comm, handle);
        Py_END_ALLOW_THREADS
        return NULL;
    }
    r->comm = (gh_nccl_comm *)Py_NewRef((PyObject *)self);
    r->array = Py_NewRef(array);
    r->handle = handle;
    r->ptr = ptr;
    r->size = size;
    r->next = self->regs;
    if (self->regs != NULL) {
        self->regs->prev = r;
    }
    self->regs = r;
    return (PyObject *)r;
}

static PyMemberDef reg_members[] = {
    {"array", T_OBJECT, offsetof(gh_nccl_reg, array), READONLY, reg_array_doc},
    {"nbytes", T_PYSSIZET, offsetof(gh_nccl_reg, size), READONLY, reg_nbytes_doc},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef reg_getset[] = {
    {"closed", (getter)reg_get_closed, NULL, reg_closed_doc, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef reg_methods[] = {
    {"close", (PyCFunction)reg_close, METH_NOARGS, reg_close_doc},
    {"__enter__", (PyCFunction)reg_enter, METH_NOARGS, reg_enter_doc},
    {"__exit__", (PyCFunction)reg_exit, METH_VARARGS, reg_exit_doc},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot reg_slots[] = {
    {Py_tp_doc, (void *)reg_doc},
    {Py_tp_dealloc, reg_dealloc},
    {Py_tp_repr, reg_repr},
    {Py_tp_members, reg_members},
    {Py_tp_getset, reg_getset},
    {Py_tp_methods, reg_methods},
    {0, NULL},
};

static PyType_Spec reg_spec = {
    .name = "gpuhost._core.NcclRegistration",
    .basicsize = sizeof(gh_nccl_reg),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = reg_slots,
};

/* ---- ncclMemAlloc ---- */

static void
mem_dealloc(gh_nccl_memory *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    gh_context *ctx = self->context;
    if (self->ptr != NULL && ctx != NULL && ctx->handle != NULL &&
        ctx->generation == self->generation) { /* a reset context took the memory with it */
        PyObject *type, *value, *tb;
        gh_ncclResult_t res = GH_ncclSuccess;
        int pushed;
        PyErr_Fetch(&type, &value, &tb);
        if (gh_context_enter(ctx, &pushed) == 0) {
            Py_BEGIN_ALLOW_THREADS
            res = gh_nccl.MemFree(self->ptr);
            Py_END_ALLOW_THREADS
            gh_context_leave(ctx, pushed);
        }
        if (PyErr_Occurred() ||
            (res != GH_ncclSuccess &&
             PyErr_WarnFormat(PyExc_RuntimeWarning, 1, "ncclMemFree failed (%d)", (int)res) < 0)) {
            PyErr_WriteUnraisable((PyObject *)self);
        }
        PyErr_Restore(type, value, tb);
    }
    Py_CLEAR(self->context);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static PyObject *
mem_get_ptr(gh_nccl_memory *self, void *closure)
{
    (void)closure;
    return PyLong_FromVoidPtr(self->ptr);
}

static PyObject *
mem_get_device(gh_nccl_memory *self, void *closure)
{
    (void)closure;
    return Py_NewRef((PyObject *)self->context->device);
}

static PyMemberDef mem_members[] = {
    {"size", T_PYSSIZET, offsetof(gh_nccl_memory, size), READONLY, mem_size_doc},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef mem_getset[] = {
    {"ptr", (getter)mem_get_ptr, NULL, mem_ptr_doc, NULL},
    {"device", (getter)mem_get_device, NULL, mem_device_doc, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot mem_slots[] = {
    {Py_tp_doc, (void *)mem_doc},
    {Py_tp_dealloc, mem_dealloc},
    {Py_tp_members, mem_members},
    {Py_tp_getset, mem_getset},
    {0, NULL},
};

static PyType_Spec mem_spec = {
    .name = "gpuhost._core.NcclMemory",
    .basicsize = sizeof(gh_nccl_memory),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = mem_slots,
};

/* nccl_mem_alloc(nbytes, device=None) */
static PyObject *
mod_nccl_mem_alloc(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"nbytes", "device", NULL};
    gh_state *st = gh_state_of_module(module);
    PyObject *device_o = Py_None;
    Py_ssize_t nbytes;
    gh_context *ctx = NULL;
    gh_nccl_memory *mem = NULL;
    gh_ncclResult_t res;
    void *ptr = NULL;
    int pushed;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "n|O:nccl_mem_alloc", kwlist, &nbytes,
                                     &device_o)) {
        return NULL;
    }
    if (nbytes < 1) {
        PyErr_Format(PyExc_ValueError, "nccl_mem_alloc(): nbytes must be at least 1, not %zd",
                     nbytes);
        return NULL;
    }
    if (gh_nccl_ensure() < 0 || gh_nccl_optional(GH_NCCL_MemAlloc) < 0 ||
        gh_nccl_optional(GH_NCCL_MemFree) < 0) {
        return NULL;
    }
    if (device_o == Py_None) {
        ctx = gh_current_context(st, -1);
    }
    else {
        gh_device *dev = gh_device_from_object(st, device_o, "device");
        ctx = dev ? (gh_context *)Py_XNewRef((PyObject *)gh_context_of(st, dev)) : NULL;
    }
    if (ctx == NULL || gh_context_enter(ctx, &pushed) < 0) {
        Py_XDECREF(ctx);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    res = gh_nccl.MemAlloc(&ptr, (size_t)nbytes);
    Py_END_ALLOW_THREADS
    if (gh_context_leave(ctx, pushed) == 0) {
        if (res != GH_ncclSuccess) {
            gh_raise_nccl(res, GH_NCCL_MemAlloc, NULL);
        }
        else if ((mem = (gh_nccl_memory *)st->NcclMemoryType->tp_alloc(st->NcclMemoryType, 0)) !=
                 NULL) {
            mem->context = (gh_context *)Py_NewRef((PyObject *)ctx);
            mem->generation = ctx->generation;
            mem->ptr = ptr;
            mem->size = nbytes;
            ptr = NULL;
        }
    }
    if (ptr != NULL && res == GH_ncclSuccess) { /* no object to own it */
        gh_nccl.MemFree(ptr);
    }
    Py_DECREF(ctx);
    return (PyObject *)mem;
}

static PyMethodDef register_methods[] = {
    {"nccl_mem_alloc", (PyCFunction)(void (*)(void))mod_nccl_mem_alloc,
     METH_VARARGS | METH_KEYWORDS, nccl_mem_alloc_doc},
    {NULL, NULL, 0, NULL},
};

int
gh_nccl_register_init(PyObject *module, gh_state *st)
{
    st->NcclRegistrationType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &reg_spec, NULL);
    st->NcclMemoryType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &mem_spec, NULL);
    if (st->NcclRegistrationType == NULL || st->NcclMemoryType == NULL ||
        PyModule_AddObjectRef(module, "NcclRegistration", (PyObject *)st->NcclRegistrationType) <
            0 ||
        PyModule_AddObjectRef(module, "NcclMemory", (PyObject *)st->NcclMemoryType) < 0) {
        return -1;
    }
    return PyModule_AddFunctions(module, register_methods);
}
