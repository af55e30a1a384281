/* Allocation: one piece of memory gpuhost allocated or registered, and its owner.
 *
 * Kinds: device memory (cuMemAlloc), managed (cuMemAllocManaged), pinned host memory
 * (cuMemHostAlloc, optionally mapped into the device), and registered host buffers
 * (cuMemHostRegister over another object's buffer, held while registered).  Host kinds
 * export the buffer protocol, so numpy arrays view them directly.  The memory is
 * released when the last view dies, unless its context was reset or closed first.
 */
#include "memory_internal.h"

#include "memory_docs.h"

#include <string.h>

static const char *const kind_names[] = {"device", "managed",    "pinned",
                                         "mapped", "registered", "ipc"};

gh_allocation *
gh_allocation_new(gh_state *st, gh_context *ctx, gh_alloc_kind kind, size_t size)
{
    gh_allocation *self = PyObject_New(gh_allocation, st->AllocationType);
    if (self == NULL) {
        return NULL;
    }
    self->context = (gh_context *)Py_NewRef(ctx);
    self->generation = ctx->generation;
    self->kind = kind;
    self->size = size;
    self->dptr = 0;
    self->host = NULL;
    self->exports = 0;
    self->registered.obj = NULL;
    self->pool = NULL;
    self->block = NULL;
    self->weakreflist = NULL;
    gh_live_add(st, GH_LIVE_ALLOCATION, (PyObject *)self);
    gh_live_link_add(st, GH_LIVE_ALLOCATION, &self->link, (PyObject *)self);
    return self;
}

/* Allocate in `ctx` (made current for the call); new reference or NULL.  `flags` is the
   cuMemHostAlloc / cuMemAllocManaged flags for those kinds.  Size 0 allocates nothing.
   Device memory comes from the context's default pool (pool.c). */
gh_allocation *
gh_allocate(gh_state *st, gh_context *ctx, gh_alloc_kind kind, size_t size, unsigned int flags)
{
    gh_allocation *self;
    CUresult res = CUDA_SUCCESS;
    gh_cu_id id = GH_CU_MemAlloc;
    int pushed;

    if (kind == GH_ALLOC_DEVICE && size > 0) {
        return st->pool_hooks.device_alloc(st, ctx, size, NULL);
    }
    if (gh_context_enter(ctx, &pushed) < 0) {
        return NULL;
    }
    self = gh_allocation_new(st, ctx, kind, size);
    if (self != NULL && size > 0) {
        /* Allocation can wait for queued work (host callbacks need the GIL): release it. */
        Py_BEGIN_ALLOW_THREADS
        switch (kind) {
            case GH_ALLOC_DEVICE:
                res = gh_cu.MemAlloc(&self->dptr, size);
                break;
            case GH_ALLOC_MANAGED:
                id = GH_CU_MemAllocManaged;
                res = gh_cu.MemAllocManaged(&self->dptr, size, flags);
                self->host = (void *)(uintptr_t)self->dptr;
                break;
            default: /* pinned or mapped */
                id = GH_CU_MemHostAlloc;
                res = gh_cu.MemHostAlloc(&self->host, size, flags);
                if (res == CUDA_SUCCESS && (flags & CU_MEMHOSTALLOC_DEVICEMAP)) {
                    id = GH_CU_MemHostGetDevicePointer;
                    res = gh_cu.MemHostGetDevicePointer(&self->dptr, self->host, 0);
                }
                break;
        }
        Py_END_ALLOW_THREADS
    }
    if (gh_context_leave(ctx, pushed) < 0 || self == NULL) {
        Py_XDECREF(self);
        return NULL;
    }
    if (res != CUDA_SUCCESS) {
        Py_DECREF(self); /* frees what was allocated */
        if (res == CUDA_ERROR_OUT_OF_MEMORY) {
            gh_raise_oom(ctx, kind_names[kind], size, id);
        }
        else {
            gh_raise_cuda(res, id);
        }
        return NULL;
    }
    return self;
}

/* The context's free and total memory, for error messages; zeros if unknown. */
static void
memory_info(gh_context *ctx, size_t *free_bytes, size_t *total_bytes)
{
    int pushed = 0;
    *free_bytes = *total_bytes = 0;
    if (gh_context_enter(ctx, &pushed) == 0) {
        if (gh_cu.MemGetInfo(free_bytes, total_bytes) != CUDA_SUCCESS) {
            *free_bytes = *total_bytes = 0;
        }
        gh_context_leave(ctx, pushed);
    }
    PyErr_Clear();
}

int
gh_raise_oom(gh_context *ctx, const char *what, size_t size, gh_cu_id id)
{
    return gh_raise_oom_detail(ctx, what, size, id, NULL);
}

int
gh_raise_oom_detail(gh_context *ctx, const char *what, size_t size, gh_cu_id id, const char *detail)
{
    size_t free_bytes, total_bytes;
    PyObject *type, *value, *tb, *msg, *requested;

    memory_info(ctx, &free_bytes, &total_bytes);
    gh_raise_cuda(CUDA_ERROR_OUT_OF_MEMORY, id);
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    msg = PyUnicode_FromFormat("out of memory allocating %zu bytes of %s memory on device %d "
                               "(%zu of %zu bytes free)%s%s",
                               size, what, ctx->device->id, free_bytes, total_bytes,
                               detail ? "; " : "", detail ? detail : "");
    requested = PyLong_FromSize_t(size);
    if (value != NULL && msg != NULL && requested != NULL) {
        PyObject_SetAttrString(value, "msg", msg);
        PyObject_SetAttrString(value, "requested", requested);
    }
    Py_XDECREF(msg);
    Py_XDECREF(requested);
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
    return -1;
}

/* Register the buffer of `obj` (held until the Allocation dies); new reference or NULL. */
gh_allocation *
gh_register(gh_state *st, gh_context *ctx, PyObject *obj, unsigned int flags)
{
    gh_allocation *self = gh_allocation_new(st, ctx, GH_ALLOC_REGISTERED, 0);
    CUresult res = CUDA_SUCCESS;
    gh_cu_id id;
    int pushed;

    if (self == NULL) {
        return NULL;
    }
    if (PyObject_GetBuffer(obj, &self->registered, PyBUF_WRITABLE | PyBUF_ANY_CONTIGUOUS) < 0) {
        PyErr_Clear();
        if (PyObject_GetBuffer(obj, &self->registered, PyBUF_ANY_CONTIGUOUS) < 0) {
            PyErr_Format(PyExc_TypeError, "cannot register %s: it has no contiguous buffer",
                         Py_TYPE(obj)->tp_name);
            Py_DECREF(self);
            return NULL;
        }
        flags |= CU_MEMHOSTREGISTER_READ_ONLY;
    }
    self->size = (size_t)self->registered.len;
    self->host = self->registered.buf;
    if (self->size == 0) {
        return self;
    }
    if (gh_context_enter(ctx, &pushed) < 0) {
        self->host = NULL; /* not registered: dealloc must not unregister it */
        Py_DECREF(self);
        return NULL;
    }
    id = GH_CU_MemHostRegister;
    res = gh_cu.MemHostRegister(self->host, self->size, flags);
    if (res == CUDA_SUCCESS && (flags & CU_MEMHOSTREGISTER_DEVICEMAP)) {
        id = GH_CU_MemHostGetDevicePointer;
        res = gh_cu.MemHostGetDevicePointer(&self->dptr, self->host, 0);
        if (res != CUDA_SUCCESS) {
            gh_cu.MemHostUnregister(self->host);
        }
    }
    if (res != CUDA_SUCCESS) {
        self->host = NULL; /* nothing registered: dealloc only releases the buffer */
    }
    if (gh_context_leave(ctx, pushed) < 0) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        Py_DECREF(self); /* dealloc unregisters a registered buffer */
        PyErr_Restore(type, value, tb);
        if (res != CUDA_SUCCESS) {
            gh_raise_cuda(res, id);
        }
        return NULL;
    }
    if (res != CUDA_SUCCESS) {
        Py_DECREF(self);
        gh_raise_cuda(res, id);
        return NULL;
    }
    return self;
}

/* ---- the Python type ---- */

static int
allocation_getbuffer(gh_allocation *self, Py_buffer *view, int flags)
{
    if (self->host == NULL && self->size > 0) {
        PyErr_Format(PyExc_BufferError,
                     "%s memory lives on the device: copy it to the host to read it",
                     kind_names[self->kind]);
        return -1;
    }
    if (gh_context_check_alive(self->context, self->generation, GH_CU_MemHostGetDevicePointer) <
        0) {
        PyErr_Clear();
        PyErr_SetString(PyExc_BufferError, "the memory's context was reset or closed");
        return -1;
    }
    if (PyBuffer_FillInfo(view, (PyObject *)self, self->host, (Py_ssize_t)self->size, 0, flags) <
        0) {
        return -1;
    }
    self->exports++;
    return 0;
}

static void
allocation_releasebuffer(gh_allocation *self, Py_buffer *Py_UNUSED(view))
{
    self->exports--;
}

static PyObject *
allocation_get_ptr(gh_allocation *self, void *Py_UNUSED(closure))
{
    return PyLong_FromUnsignedLongLong((unsigned long long)self->dptr);
}

static PyObject *
allocation_get_host_ptr(gh_allocation *self, void *Py_UNUSED(closure))
{
    if (self->host == NULL) {
        Py_RETURN_NONE;
    }
    return PyLong_FromVoidPtr(self->host);
}

static PyObject *
allocation_get_size(gh_allocation *self, void *Py_UNUSED(closure))
{
    return PyLong_FromSize_t(self->size);
}

static PyObject *
allocation_get_kind(gh_allocation *self, void *Py_UNUSED(closure))
{
    return PyUnicode_FromString(kind_names[self->kind]);
}

static PyObject *
allocation_get_device(gh_allocation *self, void *Py_UNUSED(closure))
{
    return Py_NewRef(self->context->device);
}

static PyObject *
allocation_get_context(gh_allocation *self, void *Py_UNUSED(closure))
{
    return Py_NewRef(self->context);
}

static PyObject *
allocation_get_device_id(gh_allocation *self, void *Py_UNUSED(closure))
{
    return PyLong_FromLong(self->context->device->id);
}

static PyObject *
allocation_get_pool(gh_allocation *self, void *Py_UNUSED(closure))
{
    return Py_NewRef(self->pool != NULL ? (PyObject *)self->pool : Py_None);
}

/* int(allocation): the device address, or the host address of unmapped host memory. */
static PyObject *
allocation_int(gh_allocation *self)
{
    if (self->dptr == 0 && self->host != NULL) {
        return PyLong_FromVoidPtr(self->host);
    }
    return PyLong_FromUnsignedLongLong((unsigned long long)self->dptr);
}

static Py_ssize_t
allocation_len(gh_allocation *self)
{
    return (Py_ssize_t)self->size;
}

static PyObject *
allocation_repr(gh_allocation *self)
{
    return PyUnicode_FromFormat("<gpuhost.Allocation of %zu bytes of %s memory at %p on device %d>",
                                self->size, kind_names[self->kind],
                                self->dptr ? (void *)(uintptr_t)self->dptr : self->host,
                                self->context->device->id);
}

/* Give the memory back now (free, or unregister and let go of the buffer); idempotent. */
static void
allocation_release(gh_allocation *self)
{
    gh_context *ctx = self->context;
    if (self->pool != NULL) {
        gh_state_of_type(Py_TYPE(self))->pool_hooks.give_back(self); /* back to its pool */
    }
    else if (self->kind == GH_ALLOC_DEVICE || self->kind == GH_ALLOC_MANAGED ||
             self->kind == GH_ALLOC_IPC) {
        if (self->dptr) {
            gh_release(ctx, self->generation,
                       self->kind == GH_ALLOC_IPC ? GH_CU_IpcCloseMemHandle : GH_CU_MemFree,
                       (void *)(uintptr_t)self->dptr);
        }
    }
    else if (self->host != NULL && (self->size > 0 || self->kind != GH_ALLOC_REGISTERED)) {
        /* an empty buffer was never registered (gh_register) */
        gh_release(ctx, self->generation,
                   self->kind == GH_ALLOC_REGISTERED ? GH_CU_MemHostUnregister : GH_CU_MemFreeHost,
                   self->host);
    }
    self->dptr = 0;
    self->host = NULL;
    self->size = 0;
    if (self->registered.obj != NULL) {
        PyBuffer_Release(&self->registered);
    }
}

static PyObject *
allocation_close(gh_allocation *self, PyObject *Py_UNUSED(ignored))
{
    if (self->exports > 0) {
        PyErr_Format(PyExc_BufferError,
                     "cannot release memory that numpy arrays still view (%zd views)",
                     self->exports);
        return NULL;
    }
    allocation_release(self);
    Py_RETURN_NONE;
}

/* One Allocation at a reset of `ctx`: its memory goes if it is device memory made before.
   Host and managed memory stays: NumPy arrays view it by address, with no count of their
   views to ask, so it stays valid until its object goes. */
static void
allocation_reset(PyObject *obj, void *ctx)
{
    gh_allocation *a = (gh_allocation *)obj;
    if (a->context == ctx && a->generation < a->context->generation &&
        (a->kind == GH_ALLOC_DEVICE || a->kind == GH_ALLOC_IPC)) {
        allocation_release(a);
    }
}

void
gh_allocations_reset(gh_state *st, gh_context *ctx)
{
    gh_live_each(st, GH_LIVE_ALLOCATION, allocation_reset, ctx);
}

static void
allocation_dealloc(gh_allocation *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    /* out of the list first: a weakref callback below may run a reset's walk */
    gh_live_link_remove(gh_state_of_type(tp), GH_LIVE_ALLOCATION, &self->link);
    if (self->weakreflist != NULL) {
        PyObject_ClearWeakRefs((PyObject *)self);
    }
    allocation_release(self);
    Py_DECREF(self->context);
    gh_live_remove(gh_state_of_type(tp), GH_LIVE_ALLOCATION, (PyObject *)self);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static PyMethodDef allocation_methods[] = {
    {"close", (PyCFunction)allocation_close, METH_NOARGS, allocation_close_doc},
    {"free", (PyCFunction)allocation_close, METH_NOARGS, allocation_free_doc},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef allocation_getset[] = {
    {"ptr", (getter)allocation_get_ptr, NULL, allocation_ptr_doc, NULL},
    {"host_ptr", (getter)allocation_get_host_ptr, NULL, allocation_host_ptr_doc, NULL},
    {"size", (getter)allocation_get_size, NULL, allocation_size_doc, NULL},
    {"kind", (getter)allocation_get_kind, NULL, allocation_kind_doc, NULL},
    {"device", (getter)allocation_get_device, NULL, allocation_device_doc, NULL},
    {"context", (getter)allocation_get_context, NULL, allocation_context_doc, NULL},
    {"device_id", (getter)allocation_get_device_id, NULL, allocation_device_id_doc, NULL},
    {"pool", (getter)allocation_get_pool, NULL, allocation_pool_doc, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* Weak references, as to numba's memory pointers and CuPy's memory objects. */
static PyMemberDef allocation_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(gh_allocation, weakreflist), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot allocation_slots[] = {
    {Py_tp_members, allocation_members},
    {Py_tp_doc, (void *)allocation_doc},
    {Py_tp_getset, allocation_getset},
    {Py_tp_methods, allocation_methods},
    {Py_tp_repr, allocation_repr},
    {Py_nb_int, allocation_int},
    {Py_sq_length, allocation_len},
    {Py_tp_dealloc, allocation_dealloc},
    {Py_bf_getbuffer, allocation_getbuffer},
    {Py_bf_releasebuffer, allocation_releasebuffer},
    {0, NULL},
};

static PyType_Spec allocation_spec = {
    .name = "gpuhost.Allocation",
    .basicsize = sizeof(gh_allocation),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = allocation_slots,
};

/* ---- module functions (gpuhost/_arrays.py builds numba's names on these) ---- */

static gh_context *
current(PyObject *module)
{
    return gh_current_context(gh_state_of_module(module), -1);
}

static PyObject *
mod_mem_alloc(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"size", "kind", "portable", "wc", "attach_global", NULL};
    Py_ssize_t size;
    const char *kind = "device";
    int portable = 0, wc = 0, attach_global = 1;
    unsigned int flags = 0;
    gh_alloc_kind k;
    gh_context *ctx;
    PyObject *res;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "n|s$ppp:mem_alloc", kwlist, &size, &kind,
                                     &portable, &wc, &attach_global)) {
        return NULL;
    }
    if (size < 0) {
        PyErr_Format(PyExc_ValueError, "allocation size must not be negative, not %zd", size);
        return NULL;
    }
    for (k = GH_ALLOC_DEVICE; k < GH_ALLOC_REGISTERED; k++) {
        if (strcmp(kind, kind_names[k]) == 0) {
            break;
        }
    }
    if (k == GH_ALLOC_REGISTERED) {
        PyErr_Format(PyExc_ValueError,
                     "kind must be 'device', 'managed', 'pinned' or 'mapped', not '%s'", kind);
        return NULL;
    }
    if (k == GH_ALLOC_MANAGED) {
        flags = attach_global ? CU_MEM_ATTACH_GLOBAL : CU_MEM_ATTACH_HOST;
    }
    else if (k != GH_ALLOC_DEVICE) {
        flags = (portable ? CU_MEMHOSTALLOC_PORTABLE : 0) |
                (wc ? CU_MEMHOSTALLOC_WRITECOMBINED : 0) |
                (k == GH_ALLOC_MAPPED ? CU_MEMHOSTALLOC_DEVICEMAP : 0);
    }
    ctx = current(module);
    if (ctx == NULL) {
        return NULL;
    }
    res = (PyObject *)gh_allocate(gh_state_of_module(module), ctx, k, (size_t)size, flags);
    Py_DECREF(ctx);
    return res;
}

static PyObject *
mod_mem_register(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"obj", "mapped", "portable", NULL};
    PyObject *obj, *res;
    int mapped = 0, portable = 0;
    gh_context *ctx;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$pp:mem_register", kwlist, &obj, &mapped,
                                     &portable)) {
        return NULL;
    }
    ctx = current(module);
    if (ctx == NULL) {
        return NULL;
    }
    res = (PyObject *)gh_register(gh_state_of_module(module), ctx, obj,
                                  (mapped ? CU_MEMHOSTREGISTER_DEVICEMAP : 0) |
                                      (portable ? CU_MEMHOSTREGISTER_PORTABLE : 0));
    Py_DECREF(ctx);
    return res;
}

/* _core.ipc_open(handle_bytes, size) -> Allocation of kind 'ipc' in the current context. */
static PyObject *
mod_ipc_open(PyObject *module, PyObject *args)
{
    gh_state *st = gh_state_of_module(module);
    CUipcMemHandle handle;
    const char *data;
    Py_ssize_t len, size;
    gh_context *ctx;
    gh_allocation *self = NULL;
    CUresult res;

    if (!PyArg_ParseTuple(args, "y#n:ipc_open", &data, &len, &size)) {
        return NULL;
    }
    if (len != (Py_ssize_t)sizeof(handle.reserved)) {
        PyErr_Format(PyExc_ValueError, "an IPC memory handle has %zu bytes, not %zd",
                     sizeof(handle.reserved), len);
        return NULL;
    }
    memcpy(handle.reserved, data, sizeof(handle.reserved));
    ctx = gh_current_context(st, -1);
    if (ctx == NULL) {
        return NULL;
    }
    self = gh_allocation_new(st, ctx, GH_ALLOC_IPC, (size_t)size);
    if (self != NULL) {
        Py_BEGIN_ALLOW_THREADS
        res = gh_cu.IpcOpenMemHandle(&self->dptr, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
        Py_END_ALLOW_THREADS
        if (gh_check(res, GH_CU_IpcOpenMemHandle) < 0) {
            self->dptr = 0;
            Py_CLEAR(self);
        }
    }
    Py_DECREF(ctx);
    return (PyObject *)self;
}

static PyMethodDef memory_module_methods[] = {
    {"ipc_open", mod_ipc_open, METH_VARARGS, memory_module_ipc_open_doc},
    {"mem_alloc", (PyCFunction)(void (*)(void))mod_mem_alloc, METH_VARARGS | METH_KEYWORDS,
     memory_module_mem_alloc_doc},
    {"mem_register", (PyCFunction)(void (*)(void))mod_mem_register, METH_VARARGS | METH_KEYWORDS,
     memory_module_mem_register_doc},
    {NULL, NULL, 0, NULL},
};

int
gh_memory_init_type(PyObject *module, gh_state *st)
{
    st->AllocationType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &allocation_spec, NULL);
    if (st->AllocationType == NULL || PyModule_AddType(module, st->AllocationType) < 0) {
        return -1;
    }
    return PyModule_AddFunctions(module, memory_module_methods);
}
