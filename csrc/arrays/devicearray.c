/* DeviceArray: an n-dimensional array in device memory, numba.cuda's DeviceNDArray.
 *
 * An array is a view: a device address, shape, strides and dtype, and a reference to
 * whatever keeps the memory alive (an Allocation, or a foreign exporter's object).  Its
 * copies are array_copy.c's, its indexing array_index.c's (the slots the type names).
 */
#include "arrays_internal.h"

#include "devicearray_docs.h"
#include "memory/memory.h"

#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL gh_ARRAY_API
#include <numpy/arrayobject.h>

#include <string.h>

/* ---- layout helpers ---- */

int
gh_devicearray_is_contiguous(const gh_devicearray *a, int fortran)
{
    npy_intp expected = PyDataType_ELSIZE(a->dtype);
    for (int k = 0; k < a->ndim; k++) {
        int i = fortran ? k : a->ndim - 1 - k;
        if (a->shape[i] == 0) {
            return 1;
        }
        if (a->shape[i] != 1 && a->strides[i] != expected) {
            return 0;
        }
        expected *= a->shape[i];
    }
    return 1;
}

Py_ssize_t
gh_devicearray_size(const gh_devicearray *a)
{
    npy_intp n = 1;
    for (int i = 0; i < a->ndim; i++) {
        n *= a->shape[i];
    }
    return n;
}

int
gh_devicearray_check_writable(gh_devicearray *self, const char *what)
{
    if (self->readonly) {
        PyErr_Format(PyExc_ValueError,
                     "%s: the device array is read-only (its exporter's __cuda_array_interface__ "
                     "says data=(ptr, True))",
                     what);
        return -1;
    }
    return 0;
}

/* ---- construction ---- */

PyObject *
gh_devicearray_new(gh_state *st, gh_context *ctx, uint64_t generation, CUdeviceptr ptr,
                   PyObject *owner, void *dtype, int ndim, const npy_intp *shape,
                   const npy_intp *strides, PyObject *stream)
{
    gh_devicearray *self;
    if (ndim < 0 || ndim > GH_MAXDIMS) {
        PyErr_Format(PyExc_ValueError, "a device array has 0 to %d dimensions, not %d", GH_MAXDIMS,
                     ndim);
        return NULL;
    }
    self = PyObject_New(gh_devicearray, st->DeviceArrayType);
    if (self == NULL) {
        return NULL;
    }
    self->context = (gh_context *)Py_NewRef(ctx);
    self->generation = generation;
    self->ptr = ptr;
    self->owner = Py_XNewRef(owner);
    self->dtype = (PyArray_Descr *)Py_NewRef((PyObject *)dtype);
    self->ndim = ndim;
    /* None and 0 (numba's "no stream") both mean none is bound */
    if (stream == Py_None ||
        (stream != NULL && PyLong_CheckExact(stream) && !PyObject_IsTrue(stream))) {
        stream = NULL;
    }
    self->stream = Py_XNewRef(stream);
    self->weakreflist = NULL;
    self->readonly = 0;
    self->jit_key[0] = 0;
    if (ndim > 0) { /* a 0-d array may come with NULL shape and strides */
        memcpy(self->shape, shape, (size_t)ndim * sizeof(npy_intp));
        memcpy(self->strides, strides, (size_t)ndim * sizeof(npy_intp));
    }
    return (PyObject *)self;
}

/* _core.make_array(owner, ptr, shape, strides, dtype, stream=None, context=None) */
static PyObject *
mod_make_array(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"owner",  "ptr",     "shape", "strides",  "dtype",
                             "stream", "context", "base",  "readonly", NULL};
    gh_state *st = gh_state_of_module(module);
    PyObject *owner, *shape_obj, *strides_obj, *dtype_obj, *stream = Py_None, *ctx_obj = Py_None;
    PyObject *base = Py_None;
    int readonly = 0;
    unsigned long long ptr;
    PyArray_Descr *dtype = NULL;
    PyArray_Dims shape = {NULL, 0}, strides = {NULL, 0};
    gh_context *ctx = NULL;
    PyObject *res = NULL;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OKOOO|OOOp:make_array", kwlist, &owner, &ptr,
                                     &shape_obj, &strides_obj, &dtype_obj, &stream, &ctx_obj, &base,
                                     &readonly) ||
        !PyArray_DescrConverter(dtype_obj, &dtype) || !PyArray_IntpConverter(shape_obj, &shape) ||
        !PyArray_IntpConverter(strides_obj, &strides)) {
        goto done;
    }
    if (shape.len != strides.len) {
        PyErr_Format(PyExc_ValueError, "shape has %d dimensions but strides has %d", shape.len,
                     strides.len);
        goto done;
    }
    for (int i = 0; i < shape.len; i++) {
        if (shape.ptr[i] < 0) {
            PyErr_Format(PyExc_ValueError, "negative dimension %zd in shape", shape.ptr[i]);
            goto done;
        }
    }
    if (base != Py_None) {
        /* a view of `base`: same context and generation */
        gh_devicearray *b = (gh_devicearray *)base;
        if (!Py_IS_TYPE(base, st->DeviceArrayType)) {
            PyErr_SetString(PyExc_TypeError, "base must be a DeviceArray");
            goto done;
        }
        res = gh_devicearray_new(st, b->context, b->generation, ptr, owner, dtype, shape.len,
                                 shape.ptr, strides.ptr, stream);
        if (res != NULL) {
            ((gh_devicearray *)res)->readonly = b->readonly || readonly;
        }
        goto done;
    }
    if (ctx_obj == Py_None) {
        ctx = gh_current_context(st, -1);
    }
    else if (Py_IS_TYPE(ctx_obj, st->ContextType)) {
        ctx = (gh_context *)Py_NewRef(ctx_obj);
    }
    else {
        PyErr_SetString(PyExc_TypeError, "context must be a gpuhost Context or None");
    }
    if (ctx == NULL || gh_context_activate(ctx) < 0) {
        goto done;
    }
    if (Py_IS_TYPE(owner, st->AllocationType) && ((gh_allocation *)owner)->context == ctx) {
        res = gh_devicearray_new(st, ctx, ((gh_allocation *)owner)->generation, ptr, owner, dtype,
                                 shape.len, shape.ptr, strides.ptr, stream);
    }
    else {
        res = gh_devicearray_new(st, ctx, ctx->generation, ptr, owner, dtype, shape.len, shape.ptr,
                                 strides.ptr, stream);
    }
    if (res != NULL) {
        ((gh_devicearray *)res)->readonly = readonly;
    }
done:
    Py_XDECREF(ctx);
    Py_XDECREF(dtype);
    PyDimMem_FREE(shape.ptr);
    PyDimMem_FREE(strides.ptr);
    return res;
}

/* A tuple of `ndim` ints into out; 0, or -1 with TypeError naming `what`. */
static int
intp_items(PyObject *tuple, int ndim, npy_intp *out, const char *what)
{
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != ndim) {
        PyErr_Format(PyExc_TypeError, "empty_array(): %s must be a tuple of %d ints", what, ndim);
        return -1;
    }
    for (int i = 0; i < ndim; i++) {
        out[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(tuple, i));
        if (out[i] == -1 && PyErr_Occurred()) {
            return -1;
        }
    }
    return 0;
}

/* _core.empty_array(nbytes, shape, strides, dtype, stream): device_array()'s new array, its
   layout checked by gpuhost/_arrays.py's _layout, its memory from the current allocator
   (memory/allocator.c), in one call. */
static PyObject *
mod_empty_array(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    gh_state *st = gh_state_of_module(module);
    npy_intp shape[GH_MAXDIMS], strides[GH_MAXDIMS];
    PyObject *stream, *owner, *res = NULL;
    Py_ssize_t nbytes, ndim;
    CUdeviceptr ptr;
    uint64_t generation;
    gh_context *ctx;

    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError, "empty_array() takes 5 arguments (%zd given)", nargs);
        return NULL;
    }
    if (!PyArray_DescrCheck(args[3])) {
        PyErr_SetString(PyExc_TypeError, "empty_array(): dtype must be a numpy dtype");
        return NULL;
    }
    ndim = PyTuple_Check(args[1]) ? PyTuple_GET_SIZE(args[1]) : -1;
    if (ndim < 0 || ndim > GH_MAXDIMS) {
        PyErr_Format(PyExc_ValueError, "a device array has 0 to %d dimensions, not %zd", GH_MAXDIMS,
                     ndim);
        return NULL;
    }
    if ((nbytes = PyLong_AsSsize_t(args[0])) == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (nbytes < 0 || intp_items(args[1], (int)ndim, shape, "shape") < 0 ||
        intp_items(args[2], (int)ndim, strides, "strides") < 0) {
        return nbytes < 0 ? PyErr_Format(PyExc_ValueError, "nbytes must be >= 0, not %zd", nbytes)
                          : NULL;
    }
    stream = args[4] == Py_None || (PyLong_CheckExact(args[4]) && PyLong_AsLong(args[4]) == 0)
                 ? NULL
                 : args[4];
    if ((ctx = gh_current_context(st, -1)) == NULL) {
        return NULL;
    }
    if (gh_array_memory(st, ctx, (size_t)nbytes, stream, &owner, &ptr, &generation) == 0) {
        res = gh_devicearray_new(st, ctx, generation, ptr, owner, args[3], (int)ndim, shape,
                                 strides, stream);
        Py_DECREF(owner);
    }
    Py_DECREF(ctx);
    return res;
}

/* ---- views (indexing is array_index.c's, the other views gpuhost/_arrays.py's) ---- */

PyObject *
gh_devicearray_view(gh_devicearray *self, CUdeviceptr ptr, int ndim, const npy_intp *shape,
                    const npy_intp *strides)
{
    PyObject *res =
        gh_devicearray_new(gh_state_of_type(Py_TYPE(self)), self->context, self->generation, ptr,
                           self->owner, self->dtype, ndim, shape, strides, self->stream);
    if (res != NULL) {
        ((gh_devicearray *)res)->readonly = self->readonly;
    }
    return res;
}

/* self.T: the view with the axes reversed (numpy's transpose()). */
static PyObject *
da_T(gh_devicearray *self, void *Py_UNUSED(c))
{
    npy_intp shape[GH_MAXDIMS], strides[GH_MAXDIMS];
    for (int i = 0; i < self->ndim; i++) {
        shape[i] = self->shape[self->ndim - 1 - i];
        strides[i] = self->strides[self->ndim - 1 - i];
    }
    return gh_devicearray_view(self, self->ptr, self->ndim, shape, strides);
}

/* ---- properties ---- */

static PyObject *
intp_tuple(const npy_intp *v, int n)
{
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t != NULL && i < n; i++) {
        PyObject *x = PyLong_FromSsize_t(v[i]);
        if (x == NULL) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, x);
    }
    return t;
}

static PyObject *
da_shape(gh_devicearray *self, void *Py_UNUSED(c))
{
    return intp_tuple(self->shape, self->ndim);
}

static PyObject *
da_strides(gh_devicearray *self, void *Py_UNUSED(c))
{
    return intp_tuple(self->strides, self->ndim);
}

static PyObject *
da_ndim(gh_devicearray *self, void *Py_UNUSED(c))
{
    return PyLong_FromLong(self->ndim);
}

static PyObject *
da_size(gh_devicearray *self, void *Py_UNUSED(c))
{
    return PyLong_FromSsize_t(gh_devicearray_size(self));
}

static PyObject *
da_itemsize(gh_devicearray *self, void *Py_UNUSED(c))
{
    return PyLong_FromSsize_t(PyDataType_ELSIZE(self->dtype));
}

static PyObject *
da_nbytes(gh_devicearray *self, void *Py_UNUSED(c))
{
    return PyLong_FromSsize_t(gh_devicearray_size(self) * PyDataType_ELSIZE(self->dtype));
}

static PyObject *
da_dtype(gh_devicearray *self, void *Py_UNUSED(c))
{
    return Py_NewRef(self->dtype);
}

static PyObject *
da_ptr(gh_devicearray *self, void *Py_UNUSED(c))
{
    return PyLong_FromUnsignedLongLong((unsigned long long)self->ptr);
}

/* numba's gpu_data: its MemoryPointer over the bytes the array spans, numba's face's class
   (gpuhost/memory_manager.py's ArrayMemory, registered once) called on the array. */
static PyObject *
da_gpu_data(PyObject *self, void *Py_UNUSED(c))
{
    PyObject *args = PyTuple_Pack(1, self), *res;
    if (args == NULL) {
        return NULL;
    }
    res = gh_helper_call(gh_state_of_type(Py_TYPE(self)), GH_HELPER_ARRAY_GPU_DATA, args);
    Py_DECREF(args);
    return res;
}

/* numba's device_ctypes_pointer: the address as a ctypes.c_void_p (None inside when 0), the
   class gpuhost/_arrays.py registered once. */
static PyObject *
da_ctypes_pointer(gh_devicearray *self, void *Py_UNUSED(c))
{
    PyObject *ptr = PyLong_FromUnsignedLongLong((unsigned long long)self->ptr);
    PyObject *args = ptr != NULL ? PyTuple_Pack(1, ptr) : NULL;
    PyObject *res = args != NULL ? gh_helper_call(gh_state_of_type(Py_TYPE(self)),
                                                  GH_HELPER_CTYPES_POINTER, args)
                                 : NULL;
    Py_XDECREF(args);
    Py_XDECREF(ptr);
    return res;
}

/* numba's alloc_size: the bytes the elements span, from the lowest to the highest. */
static PyObject *
da_alloc_size(gh_devicearray *self, void *Py_UNUSED(c))
{
    npy_intp span = PyDataType_ELSIZE(self->dtype);
    if (gh_devicearray_size(self) == 0) {
        return PyLong_FromLong(0);
    }
    for (int i = 0; i < self->ndim; i++) {
        npy_intp stride = self->strides[i] < 0 ? -self->strides[i] : self->strides[i];
        span += (self->shape[i] - 1) * stride;
    }
    return PyLong_FromSsize_t(span);
}

static PyObject *
da_device(gh_devicearray *self, void *Py_UNUSED(c))
{
    return Py_NewRef(self->context->device);
}

static PyObject *
da_context(gh_devicearray *self, void *Py_UNUSED(c))
{
    return Py_NewRef(self->context);
}

static PyObject *
da_stream(gh_devicearray *self, void *Py_UNUSED(c))
{
    if (self->stream == NULL) {
        return PyLong_FromLong(0); /* numba's value for "no stream bound" */
    }
    return Py_NewRef(self->stream);
}

static PyObject *
da_owner(gh_devicearray *self, void *Py_UNUSED(c))
{
    return Py_NewRef(self->owner ? self->owner : Py_None);
}

static PyObject *
da_flags(gh_devicearray *self, void *Py_UNUSED(c))
{
    return Py_BuildValue("{sOsOsO}", "C_CONTIGUOUS",
                         gh_devicearray_is_contiguous(self, 0) ? Py_True : Py_False, "F_CONTIGUOUS",
                         gh_devicearray_is_contiguous(self, 1) ? Py_True : Py_False, "WRITEABLE",
                         self->readonly ? Py_False : Py_True);
}

static PyObject *
da_is_c_contiguous(gh_devicearray *self, PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(gh_devicearray_is_contiguous(self, 0));
}

static PyObject *
da_is_f_contiguous(gh_devicearray *self, PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(gh_devicearray_is_contiguous(self, 1));
}

/* The interface's stream: None with no stream bound (nothing to synchronize, as numba
   says), else the bound stream's handle (1 for the legacy default stream's 0).  New
   reference or NULL. */
static PyObject *
cai_stream(gh_devicearray *self)
{
    PyObject *stream;
    if (self->stream == NULL) {
        return Py_NewRef(Py_None);
    }
    stream = PyObject_GetAttrString(self->stream, "handle");
    if (stream != NULL && PyLong_Check(stream) && PyLong_AsLong(stream) == 0) {
        Py_SETREF(stream, PyLong_FromLong(1));
    }
    return stream;
}

/* __cuda_array_interface__, version 3. */
static PyObject *
da_cai(gh_devicearray *self, void *Py_UNUSED(c))
{
    PyObject *typestr = NULL, *shape = NULL, *strides = NULL, *stream = NULL, *res = NULL;
    PyObject *descr = NULL;
    npy_intp n = gh_devicearray_size(self);

    /* each step only once the one before it worked: no call with an exception pending */
    if (gh_context_check_alive(self->context, self->generation, GH_CU_PointerGetAttribute) < 0 ||
        (typestr = PyObject_GetAttrString((PyObject *)self->dtype, "str")) == NULL ||
        (descr = PyObject_GetAttrString((PyObject *)self->dtype, "descr")) == NULL ||
        (shape = intp_tuple(self->shape, self->ndim)) == NULL ||
        (strides = gh_devicearray_is_contiguous(self, 0)
                       ? Py_NewRef(Py_None)
                       : intp_tuple(self->strides, self->ndim)) == NULL ||
        (stream = cai_stream(self)) == NULL) {
        goto done;
    }
    res = Py_BuildValue("{sOsOsOsOs(KO)sisO}", "shape", shape, "typestr", typestr, "descr", descr,
                        "strides", strides, "data", (unsigned long long)(n ? self->ptr : 0),
                        Py_False, "version", 3, "stream", stream);
done:
    if (res != NULL && PyErr_Occurred()) {
        Py_CLEAR(res); /* a getter that answered and also raised (out of memory): its error */
    }
    Py_XDECREF(typestr);
    Py_XDECREF(descr);
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    Py_XDECREF(stream);
    return res;
}

static PyObject *
da_dlpack(gh_devicearray *self, PyObject *args, PyObject *kwargs)
{
    return gh_dlpack_export(self, args, kwargs);
}

static PyObject *
da_dlpack_device(gh_devicearray *self, PyObject *Py_UNUSED(ignored))
{
    return Py_BuildValue("(ii)", 2 /* kDLCUDA */, self->context->device->id);
}

/* __array__(dtype=None, copy=None): numba's implicit copy to the host (np.asarray(d)). */
static PyObject *
da_array(gh_devicearray *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"dtype", "copy", NULL};
    PyObject *dtype_obj = Py_None, *copy = Py_None, *none, *host;
    PyArray_Descr *dtype = NULL;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:__array__", kwlist, &dtype_obj, &copy)) {
        return NULL;
    }
    if (copy == Py_False) {
        PyErr_SetString(PyExc_ValueError,
                        "`copy=False` is not supported. A copy is always created.");
        return NULL;
    }
    if (dtype_obj != Py_None && !PyArray_DescrConverter(dtype_obj, &dtype)) {
        return NULL;
    }
    if ((none = PyTuple_New(0)) == NULL) {
        Py_XDECREF(dtype);
        return NULL;
    }
    host = gh_devicearray_copy_to_host(self, none, NULL);
    Py_DECREF(none);
    if (host != NULL && dtype != NULL &&
        !PyArray_EquivTypes(PyArray_DESCR((PyArrayObject *)host), dtype)) {
        Py_SETREF(host, PyArray_CastToType((PyArrayObject *)host, dtype,
                                           PyArray_IS_F_CONTIGUOUS((PyArrayObject *)host) &&
                                               !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)host)));
        return host; /* PyArray_CastToType took the dtype */
    }
    Py_XDECREF(dtype);
    return host;
}

static PyObject *
da_bind(gh_devicearray *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"stream", NULL};
    gh_state *st = gh_state_of_type(Py_TYPE(self));
    PyObject *stream = Py_None, *res;
    gh_stream_ref ref;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:bind", kwlist, &stream) ||
        gh_stream_resolve(st, stream, &ref) < 0) {
        return NULL;
    }
    if (stream != Py_None && !Py_IS_TYPE(stream, st->StreamType)) {
        PyErr_SetString(PyExc_TypeError, "bind() takes a gpuhost Stream or None");
        return NULL;
    }
    if (gh_stream_check_device(ref.context, self->context, "bind(): the array is") < 0) {
        return NULL; /* its copies go on its own device's streams */
    }
    res = gh_devicearray_view(self, self->ptr, self->ndim, self->shape, self->strides);
    if (res != NULL) {
        Py_XSETREF(((gh_devicearray *)res)->stream, stream == Py_None ? NULL : Py_NewRef(stream));
    }
    return res;
}

static Py_ssize_t
da_len(gh_devicearray *self)
{
    if (self->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a 0-d device array");
        return -1;
    }
    return self->shape[0];
}

static PyObject *
da_repr(gh_devicearray *self)
{
    PyObject *shape = intp_tuple(self->shape, self->ndim), *res;
    if (shape == NULL) {
        return NULL;
    }
    res = PyUnicode_FromFormat("<gpuhost.DeviceArray shape=%R dtype=%S on device %d at %p>", shape,
                               (PyObject *)self->dtype, self->context->device->id,
                               (void *)(uintptr_t)self->ptr);
    Py_DECREF(shape);
    return res;
}

/* (label, value) rows for the displays: the layout and where the memory is; never the
   elements, which would need a copy from the device. New list or NULL. */
static PyObject *
da_display_rows(gh_devicearray *self)
{
    PyObject *shape = NULL, *strides = NULL, *nbytes = NULL, *device = NULL, *address = NULL;
    PyObject *stream = NULL, *rows = NULL;
    int c = gh_devicearray_is_contiguous(self, 0), f = gh_devicearray_is_contiguous(self, 1);
    const char *layout = c && f ? "C and Fortran contiguous"
                         : c    ? "C contiguous"
                         : f    ? "Fortran contiguous"
                                : "strided";
    gh_device *dev = self->context->device;

    if ((shape = intp_tuple(self->shape, self->ndim)) == NULL ||
        (strides = intp_tuple(self->strides, self->ndim)) == NULL ||
        (nbytes = gh_format_bytes((unsigned long long)gh_devicearray_size(self) *
                                  (unsigned long long)PyDataType_ELSIZE(self->dtype))) == NULL ||
        (device = PyUnicode_FromFormat("%d (%U)", dev->id, dev->name)) == NULL ||
        (address = PyUnicode_FromFormat("%p", (void *)(uintptr_t)self->ptr)) == NULL ||
        (stream = self->stream ? PyObject_Repr(self->stream)
                               : PyUnicode_FromString("none (the default stream)")) == NULL) {
        goto done;
    }
    rows = Py_BuildValue("[(sO)(sO)(sO)(ss)(sO)(sO)(sO)(sO)]", "shape", shape, "dtype",
                         (PyObject *)self->dtype, "strides", strides, "layout", layout, "nbytes",
                         nbytes, "device", device, "stream", stream, "address", address);
done:
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    Py_XDECREF(nbytes);
    Py_XDECREF(device);
    Py_XDECREF(address);
    Py_XDECREF(stream);
    return rows;
}

static PyObject *
da_repr_html(gh_devicearray *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *rows = da_display_rows(self);
    return rows ? gh_repr_html(rows, PyUnicode_FromString(
                                         "gpuhost.DeviceArray (in device memory: copy_to_host() to "
                                         "see the values)"))
                : NULL;
}

static PyObject *
da_repr_pretty(gh_devicearray *self, PyObject *args)
{
    return gh_repr_pretty((PyObject *)self, args, da_display_rows(self));
}

static void
da_dealloc(gh_devicearray *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (self->weakreflist != NULL) {
        PyObject_ClearWeakRefs((PyObject *)self);
    }
    Py_XDECREF(self->owner);
    Py_XDECREF(self->stream);
    Py_DECREF(self->dtype);
    Py_DECREF(self->context);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static PyMethodDef da_methods[] = {
    {"copy_to_host", (PyCFunction)(void (*)(void))gh_devicearray_copy_to_host,
     METH_VARARGS | METH_KEYWORDS, devicearray_copy_to_host_doc},
    {"copy_to_device", (PyCFunction)(void (*)(void))gh_devicearray_copy_to_device,
     METH_VARARGS | METH_KEYWORDS, devicearray_copy_to_device_doc},
    {"is_c_contiguous", (PyCFunction)da_is_c_contiguous, METH_NOARGS,
     devicearray_is_c_contiguous_doc},
    {"is_f_contiguous", (PyCFunction)da_is_f_contiguous, METH_NOARGS,
     devicearray_is_f_contiguous_doc},
    {"bind", (PyCFunction)(void (*)(void))da_bind, METH_VARARGS | METH_KEYWORDS,
     devicearray_bind_doc},
    {"__dlpack__", (PyCFunction)(void (*)(void))da_dlpack, METH_VARARGS | METH_KEYWORDS,
     devicearray___dlpack___doc},
    {"__dlpack_device__", (PyCFunction)da_dlpack_device, METH_NOARGS,
     devicearray___dlpack_device___doc},
    {"__array__", (PyCFunction)(void (*)(void))da_array, METH_VARARGS | METH_KEYWORDS,
     devicearray___array___doc},
    {"_repr_html_", (PyCFunction)da_repr_html, METH_NOARGS, devicearray__repr_html__doc},
    {"_repr_pretty_", (PyCFunction)da_repr_pretty, METH_VARARGS, devicearray__repr_pretty__doc},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef da_getset[] = {
    {"shape", (getter)da_shape, NULL, devicearray_shape_doc, NULL},
    {"strides", (getter)da_strides, NULL, devicearray_strides_doc, NULL},
    {"ndim", (getter)da_ndim, NULL, devicearray_ndim_doc, NULL},
    {"size", (getter)da_size, NULL, devicearray_size_doc, NULL},
    {"itemsize", (getter)da_itemsize, NULL, devicearray_itemsize_doc, NULL},
    {"nbytes", (getter)da_nbytes, NULL, devicearray_nbytes_doc, NULL},
    {"dtype", (getter)da_dtype, NULL, devicearray_dtype_doc, NULL},
    {"ptr", (getter)da_ptr, NULL, devicearray_ptr_doc, NULL},
    {"device_ctypes_pointer", (getter)da_ctypes_pointer, NULL,
     devicearray_device_ctypes_pointer_doc, NULL},
    {"alloc_size", (getter)da_alloc_size, NULL, devicearray_alloc_size_doc, NULL},
    {"device", (getter)da_device, NULL, devicearray_device_doc, NULL},
    {"context", (getter)da_context, NULL, devicearray_context_doc, NULL},
    {"stream", (getter)da_stream, NULL, devicearray_stream_doc, NULL},
    {"owner", (getter)da_owner, NULL, devicearray_owner_doc, NULL},
    {"gpu_data", (getter)da_gpu_data, NULL, devicearray_gpu_data_doc, NULL},
    {"flags", (getter)da_flags, NULL, devicearray_flags_doc, NULL},
    {"T", (getter)da_T, NULL, devicearray_T_doc, NULL},
    {"__cuda_array_interface__", (getter)da_cai, NULL, devicearray___cuda_array_interface___doc,
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* Weak references, as to numba's and CuPy's arrays (caches keyed by array, IPC exports). */
static PyMemberDef da_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(gh_devicearray, weakreflist), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot da_slots[] = {
    {Py_tp_members, da_members},
    {Py_tp_doc, (void *)devicearray_doc},
    {Py_tp_methods, da_methods},
    {Py_tp_getset, da_getset},
    {Py_tp_repr, da_repr},
    {Py_sq_length, da_len},
    {Py_tp_iter, gh_devicearray_iter},
    {Py_mp_length, da_len},
    {Py_mp_subscript, gh_devicearray_getitem},
    {Py_mp_ass_subscript, gh_devicearray_setitem},
    {Py_tp_dealloc, da_dealloc},
    {0, NULL},
};

static PyType_Spec da_spec = {
    .name = "gpuhost.DeviceArray",
    .basicsize = sizeof(gh_devicearray),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = da_slots,
};

/* _core.ipc_get_handle(array) -> (64 handle bytes, byte offset of the array in its
   allocation, allocation size), in the array's context. */
static PyObject *
mod_ipc_get_handle(PyObject *module, PyObject *arg)
{
    gh_state *st = gh_state_of_module(module);
    gh_devicearray *a;
    CUipcMemHandle handle;
    CUdeviceptr base = 0;
    size_t size = 0;
    CUresult res;
    gh_cu_id id = GH_CU_MemGetAddressRange;
    int pushed;

    if (!Py_IS_TYPE(arg, st->DeviceArrayType)) {
        PyErr_Format(PyExc_TypeError, "ipc_get_handle() takes a DeviceArray, not %s",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    a = (gh_devicearray *)arg;
    if (gh_context_check_alive(a->context, a->generation, GH_CU_IpcGetMemHandle) < 0 ||
        gh_context_enter(a->context, &pushed) < 0) {
        return NULL;
    }
    res = gh_cu.MemGetAddressRange(&base, &size, a->ptr);
    if (res == CUDA_SUCCESS) {
        id = GH_CU_IpcGetMemHandle;
        res = gh_cu.IpcGetMemHandle(&handle, base);
    }
    if (gh_context_leave(a->context, pushed) < 0) {
        return NULL;
    }
    if (res == CUDA_ERROR_NOT_FOUND || res == CUDA_ERROR_INVALID_VALUE) {
        PyErr_SetString(PyExc_ValueError, "only arrays in device memory that gpuhost or another "
                                          "CUDA library allocated can be shared between processes");
        return NULL;
    }
    if (gh_check(res, id) < 0) {
        return NULL;
    }
    return Py_BuildValue("(y#KK)", handle.reserved, (Py_ssize_t)sizeof(handle.reserved),
                         (unsigned long long)(a->ptr - base), (unsigned long long)size);
}

static PyMethodDef da_module_methods[] = {
    {"ipc_get_handle", mod_ipc_get_handle, METH_O, devicearray_module_ipc_get_handle_doc},
    {"make_array", (PyCFunction)(void (*)(void))mod_make_array, METH_VARARGS | METH_KEYWORDS,
     devicearray_module_make_array_doc},
    {"empty_array", (PyCFunction)(void (*)(void))mod_empty_array, METH_FASTCALL,
     devicearray_module_empty_array_doc},
    {NULL, NULL, 0, NULL},
};

int
gh_devicearray_init_type(PyObject *module, gh_state *st)
{
    st->DeviceArrayType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &da_spec, NULL);
    if (st->DeviceArrayType == NULL || PyModule_AddType(module, st->DeviceArrayType) < 0) {
        return -1;
    }
    return PyModule_AddFunctions(module, da_module_methods);
}
