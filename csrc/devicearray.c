/* DeviceArray: an n-dimensional array in device memory, numba.cuda's DeviceNDArray.
 *
 * An array is a view: a device address, shape, strides and dtype, and a reference to
 * whatever keeps the memory alive (an Allocation, or a foreign exporter's object).  The
 * common copies (contiguous on both sides) run here in C; strided layouts are planned in
 * gpuhost/_arrays.py over the 2D copy primitive below.
 */
#include "module.h"

#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL gh_ARRAY_API
#include <numpy/arrayobject.h>

#include <string.h>

/* ---- layout helpers ---- */

static int
is_contiguous(const gh_devicearray *a, int fortran)
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

static npy_intp
array_size(const gh_devicearray *a)
{
    npy_intp n = 1;
    for (int i = 0; i < a->ndim; i++) {
        n *= a->shape[i];
    }
    return n;
}

/* -1 with ValueError if `self` is read-only memory (a CUDA array interface export whose
   data[1] is True): nothing may write into it.  0 otherwise. */
static int
check_writable(gh_devicearray *self, const char *what)
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

/* ---- copies ---- */

/* Resolve stream= (the array's bound stream when NULL/0-default is not given).  A copy
   goes on a stream of a device it touches: the array's, or for a copy from another
   device's array (`peer`: its context, else NULL) that one's too. */
static int
copy_stream(gh_devicearray *self, PyObject *stream, gh_stream_ref *ref, gh_context *peer)
{
    gh_state *st = gh_state_of_type(Py_TYPE(self));
    if (stream == NULL && self->stream != NULL) {
        stream = self->stream;
    }
    if (gh_stream_resolve(st, stream, ref) < 0) {
        return -1;
    }
    if (ref->context == NULL || ref->context == self->context || ref->context == peer) {
        return 0;
    }
    if (peer != NULL && peer != self->context) {
        return gh_raise("CudaDriverError",
                        "the copy is from device %d to device %d but the stream is device %d's: "
                        "use a stream of either device",
                        peer->device->id, self->context->device->id, ref->context->device->id);
    }
    return gh_raise("CudaDriverError", "the array is on device %d but the stream is device %d's",
                    self->context->device->id, ref->context->device->id);
}

/* Copy `nbytes` between device address `dptr` and host `host`; async on a non-default
   stream ref (the caller keeps the host memory alive), else synchronous with the GIL
   released.  0 or -1. */
static int
linear_copy(gh_devicearray *self, int to_host, void *host, CUdeviceptr dptr, size_t nbytes,
            const gh_stream_ref *ref, int async)
{
    CUresult res;
    gh_cu_id id;
    int pushed;

    if (nbytes == 0) {
        return 0;
    }
    if (gh_context_check_alive(self->context, self->generation,
                               to_host ? GH_CU_MemcpyDtoH : GH_CU_MemcpyHtoD) < 0 ||
        gh_context_enter(self->context, &pushed) < 0) {
        return -1;
    }
    if (nbytes >= gh_staging_threshold() && gh_host_is_pageable(host)) {
        CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
        if (async && gh_cu.StreamIsCapturing(ref->handle, &capture) == CUDA_SUCCESS &&
            capture != CU_STREAM_CAPTURE_STATUS_NONE) {
            gh_context_leave(self->context, pushed);
            return gh_raise("StreamCaptureError",
                            "a copy %s pageable host memory cannot be captured into a graph "
                            "(it is made at once, through a staging buffer); use pinned "
                            "memory (gpuhost.pinned_array) for the copies of a graph",
                            to_host ? "to" : "from");
        }
        Py_BEGIN_ALLOW_THREADS
        res = gh_staged_copy(to_host, host, dptr, nbytes, ref->handle, &id);
        Py_END_ALLOW_THREADS
    }
    else if (async) {
        id = to_host ? GH_CU_MemcpyDtoHAsync : GH_CU_MemcpyHtoDAsync;
        res = to_host ? gh_cu.MemcpyDtoHAsync(host, dptr, nbytes, ref->handle)
                      : gh_cu.MemcpyHtoDAsync(dptr, host, nbytes, ref->handle);
    }
    else {
        id = to_host ? GH_CU_MemcpyDtoH : GH_CU_MemcpyHtoD;
        Py_BEGIN_ALLOW_THREADS
        res = to_host ? gh_cu.MemcpyDtoH(host, dptr, nbytes) : gh_cu.MemcpyHtoD(dptr, host, nbytes);
        Py_END_ALLOW_THREADS
    }
    if (gh_context_leave(self->context, pushed) < 0) {
        return -1;
    }
    return gh_check(res, id);
}

/* Whether a numpy array has exactly the device array's shape, dtype and strides. */
static int
same_layout(gh_devicearray *self, PyArrayObject *host)
{
    if (PyArray_NDIM(host) != self->ndim || !PyArray_EquivTypes(PyArray_DESCR(host), self->dtype)) {
        return 0;
    }
    for (int i = 0; i < self->ndim; i++) {
        if (PyArray_DIM(host, i) != self->shape[i] ||
            (self->shape[i] > 1 && PyArray_STRIDE(host, i) != self->strides[i])) {
            return 0;
        }
    }
    return 1;
}

/* Parse (ary, stream) for the copy methods. */
static int
parse_copy_args(PyObject *args, PyObject *kwargs, const char *fmt, PyObject **ary,
                PyObject **stream)
{
    static char *kwlist[] = {"ary", "stream", NULL};
    *ary = Py_None;
    *stream = NULL;
    return PyArg_ParseTupleAndKeywords(args, kwargs, fmt, kwlist, ary, stream);
}

static PyObject *
devicearray_copy_to_host(gh_devicearray *self, PyObject *args, PyObject *kwargs)
{
    PyObject *ary, *stream, *out = NULL;
    gh_stream_ref ref;
    int contiguous_c = is_contiguous(self, 0), contiguous_f = is_contiguous(self, 1);

    if (!parse_copy_args(args, kwargs, "|OO:copy_to_host", &ary, &stream) ||
        copy_stream(self, stream, &ref, NULL) < 0) {
        return NULL;
    }
    if (ary == Py_None && (contiguous_c || contiguous_f)) {
        npy_intp *strides = self->strides;
        Py_INCREF(self->dtype);
        out = PyArray_NewFromDescr(&PyArray_Type, self->dtype, self->ndim, self->shape, strides,
                                   NULL, contiguous_c ? 0 : NPY_ARRAY_F_CONTIGUOUS, NULL);
        if (out == NULL) {
            return NULL;
        }
    }
    else if (ary != Py_None && PyArray_Check(ary) && same_layout(self, (PyArrayObject *)ary) &&
             (contiguous_c || contiguous_f) && PyArray_ISWRITEABLE((PyArrayObject *)ary)) {
        out = Py_NewRef(ary);
    }
    if (out == NULL) {
        PyObject *a = Py_BuildValue("(OOO)", (PyObject *)self, ary, stream ? stream : Py_None);
        PyObject *res =
            a ? gh_call_python("gpuhost._arrays", "copy_to_host_strided", a, NULL) : NULL;
        Py_XDECREF(a);
        return res;
    }
    if (linear_copy(self, 1, PyArray_DATA((PyArrayObject *)out), self->ptr,
                    (size_t)(array_size(self) * PyDataType_ELSIZE(self->dtype)), &ref,
                    !ref.is_default) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* A device-to-device copy between arrays of one contiguous layout, on one device or two
   (a peer copy): None, NotImplemented (another layout), or NULL with an exception. */
static PyObject *
copy_from_device(gh_devicearray *self, gh_devicearray *src, const gh_stream_ref *ref)
{
    size_t nbytes = (size_t)(array_size(self) * PyDataType_ELSIZE(self->dtype));
    CUresult res;
    gh_cu_id id;
    int pushed;

    if (src->ndim != self->ndim || !PyArray_EquivTypes(src->dtype, self->dtype) ||
        !(is_contiguous(self, 0) || is_contiguous(self, 1))) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    for (int i = 0; i < self->ndim; i++) {
        if (src->shape[i] != self->shape[i] ||
            (self->shape[i] > 1 && src->strides[i] != self->strides[i])) {
            Py_RETURN_NOTIMPLEMENTED;
        }
    }
    if (gh_context_check_alive(src->context, src->generation, GH_CU_MemcpyDtoD) < 0 ||
        gh_context_check_alive(self->context, self->generation, GH_CU_MemcpyDtoD) < 0 ||
        gh_context_enter(self->context, &pushed) < 0) {
        return NULL;
    }
    if (nbytes == 0) {
        res = CUDA_SUCCESS;
        id = GH_CU_MemcpyDtoD;
    }
    else if (src->context != self->context) {
        /* another device's memory: a peer copy (staged by the driver without peer access) */
        id = ref->is_default ? GH_CU_MemcpyPeer : GH_CU_MemcpyPeerAsync;
        if (!ref->is_default) {
            res = gh_cu.MemcpyPeerAsync(self->ptr, self->context->handle, src->ptr,
                                        src->context->handle, nbytes, ref->handle);
        }
        else {
            Py_BEGIN_ALLOW_THREADS
            res = gh_cu.MemcpyPeer(self->ptr, self->context->handle, src->ptr, src->context->handle,
                                   nbytes);
            Py_END_ALLOW_THREADS
        }
    }
    else if (!ref->is_default) {
        id = GH_CU_MemcpyDtoDAsync;
        res = gh_cu.MemcpyDtoDAsync(self->ptr, src->ptr, nbytes, ref->handle);
    }
    else {
        id = GH_CU_MemcpyDtoD;
        Py_BEGIN_ALLOW_THREADS
        res = gh_cu.MemcpyDtoD(self->ptr, src->ptr, nbytes);
        Py_END_ALLOW_THREADS
    }
    if (gh_context_leave(self->context, pushed) < 0 || gh_check(res, id) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
devicearray_copy_to_device(gh_devicearray *self, PyObject *args, PyObject *kwargs)
{
    PyObject *ary, *stream, *host = NULL, *res = NULL;
    gh_context *peer = NULL;
    gh_stream_ref ref;
    int fortran;

    if (check_writable(self, "copy_to_device()") < 0) {
        return NULL;
    }

    if (!parse_copy_args(args, kwargs, "O|O:copy_to_device", &ary, &stream)) {
        return NULL;
    }
    if (Py_IS_TYPE(ary, Py_TYPE(self))) {
        peer = ((gh_devicearray *)ary)->context;
    }
    if (copy_stream(self, stream, &ref, peer) < 0) {
        return NULL;
    }
    if (Py_IS_TYPE(ary, Py_TYPE(self))) {
        res = copy_from_device(self, (gh_devicearray *)ary, &ref);
        if (res != Py_NotImplemented) {
            return res;
        }
        Py_DECREF(res); /* another layout or device: planned in Python */
    }
    fortran = !is_contiguous(self, 0) && is_contiguous(self, 1);
    if ((is_contiguous(self, 0) || fortran) && PyArray_Check(ary) &&
        same_layout(self, (PyArrayObject *)ary)) {
        host = Py_NewRef(ary);
    }
    if (host == NULL) {
        PyObject *a = Py_BuildValue("(OOO)", (PyObject *)self, ary, stream ? stream : Py_None);
        res = a ? gh_call_python("gpuhost._arrays", "copy_to_device_strided", a, NULL) : NULL;
        Py_XDECREF(a);
        return res;
    }
    if (linear_copy(self, 0, PyArray_DATA((PyArrayObject *)host), self->ptr,
                    (size_t)(array_size(self) * PyDataType_ELSIZE(self->dtype)), &ref,
                    !ref.is_default) == 0) {
        res = Py_NewRef(Py_None);
    }
    Py_DECREF(host);
    return res;
}

/* _core.copy_2d(array, to_host, host_ptr, host_pitch, dev_ptr, dev_pitch, width, height,
   stream): one cuMemcpy2D(Async) between host and the array's device memory. */
static PyObject *
mod_copy_2d(PyObject *module, PyObject *args)
{
    gh_state *st = gh_state_of_module(module);
    PyObject *array, *stream;
    int to_host;
    unsigned long long host, dev;
    Py_ssize_t host_pitch, dev_pitch, width, height;
    CUDA_MEMCPY2D p;
    gh_stream_ref ref;
    gh_devicearray *self;
    CUresult res;
    int pushed;

    if (!PyArg_ParseTuple(args, "O!pKnKnnnO:copy_2d", st->DeviceArrayType, &array, &to_host, &host,
                          &host_pitch, &dev, &dev_pitch, &width, &height, &stream)) {
        return NULL;
    }
    self = (gh_devicearray *)array;
    if (host_pitch < 0 || dev_pitch < 0 || width < 0 || height < 0) {
        PyErr_SetString(PyExc_ValueError, "copy_2d takes non-negative pitches and sizes");
        return NULL;
    }
    if (copy_stream(self, stream == Py_None ? NULL : stream, &ref, NULL) < 0 ||
        gh_context_check_alive(self->context, self->generation, GH_CU_Memcpy2D) < 0) {
        return NULL;
    }
    if (width == 0 || height == 0) {
        Py_RETURN_NONE;
    }
    memset(&p, 0, sizeof(p));
    p.WidthInBytes = (size_t)width;
    p.Height = (size_t)height;
    if (to_host) {
        p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
        p.srcDevice = (CUdeviceptr)dev;
        p.srcPitch = (size_t)dev_pitch;
        p.dstMemoryType = CU_MEMORYTYPE_HOST;
        p.dstHost = (void *)(uintptr_t)host;
        p.dstPitch = (size_t)host_pitch;
    }
    else {
        p.srcMemoryType = CU_MEMORYTYPE_HOST;
        p.srcHost = (const void *)(uintptr_t)host;
        p.srcPitch = (size_t)host_pitch;
        p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        p.dstDevice = (CUdeviceptr)dev;
        p.dstPitch = (size_t)dev_pitch;
    }
    if (gh_context_enter(self->context, &pushed) < 0) {
        return NULL;
    }
    if (!ref.is_default) {
        res = gh_cu.Memcpy2DAsync(&p, ref.handle);
    }
    else {
        Py_BEGIN_ALLOW_THREADS
        res = gh_cu.Memcpy2D(&p);
        Py_END_ALLOW_THREADS
    }
    if (gh_context_leave(self->context, pushed) < 0 ||
        gh_check(res, ref.is_default ? GH_CU_Memcpy2D : GH_CU_Memcpy2DAsync) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ---- views and element access, planned in gpuhost/_arrays.py ---- */

/* gpuhost._arrays.<name>(self, *args, **kwargs) */
static PyObject *
delegate(const char *name, PyObject *self, PyObject *args, PyObject *kwargs)
{
    return gh_call_python_method("gpuhost._arrays", name, self, args, kwargs);
}

/* A view of `self`'s memory at `ptr` with another layout or stream; read-only if it is. */
static PyObject *
view_of(gh_devicearray *self, CUdeviceptr ptr, int ndim, const npy_intp *shape,
        const npy_intp *strides, PyObject *stream)
{
    PyObject *res =
        gh_devicearray_new(gh_state_of_type(Py_TYPE(self)), self->context, self->generation, ptr,
                           self->owner, self->dtype, ndim, shape, strides, stream);
    if (res != NULL) {
        ((gh_devicearray *)res)->readonly = self->readonly;
    }
    return res;
}

/* self[key] for the common keys, without Python: a slice, an int, or a tuple of them
   indexing at most ndim axes and not every axis with an int.  The view, or NotImplemented
   for any other key and any index out of range (planned, and errors worded, in Python). */
static PyObject *
fast_view(gh_devicearray *self, PyObject *key)
{
    PyObject *const *items = &key;
    Py_ssize_t n = 1, start, stop, step;
    npy_intp shape[GH_MAXDIMS], strides[GH_MAXDIMS], offset = 0;
    int out = 0, ints = 0;

    if (PyTuple_CheckExact(key)) {
        items = &PyTuple_GET_ITEM(key, 0);
        n = PyTuple_GET_SIZE(key);
    }
    if (n > self->ndim) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = items[i];
        if (PySlice_Check(k)) {
            if (PySlice_Unpack(k, &start, &stop, &step) < 0) {
                return NULL;
            }
            shape[out] = PySlice_AdjustIndices(self->shape[i], &start, &stop, step);
            if (shape[out] == 0) {
                start = 0, step = 1; /* numpy's rule for an empty slice */
            }
            strides[out++] = self->strides[i] * step;
            offset += start * self->strides[i];
        }
        else if (PyLong_CheckExact(k)) {
            Py_ssize_t v = PyLong_AsSsize_t(k);
            if (v == -1 && PyErr_Occurred()) {
                PyErr_Clear();
                Py_RETURN_NOTIMPLEMENTED;
            }
            if (v < 0) {
                v += self->shape[i];
            }
            if (v < 0 || v >= self->shape[i]) {
                Py_RETURN_NOTIMPLEMENTED;
            }
            offset += v * self->strides[i];
            ints++;
        }
        else {
            Py_RETURN_NOTIMPLEMENTED;
        }
    }
    if (ints == self->ndim) {
        Py_RETURN_NOTIMPLEMENTED; /* an element: a numpy scalar, read in Python */
    }
    for (int i = (int)n; i < self->ndim; i++, out++) {
        shape[out] = self->shape[i];
        strides[out] = self->strides[i];
    }
    return view_of(self, self->ptr + (CUdeviceptr)offset, out, shape, strides, self->stream);
}

static PyObject *
da_getitem(PyObject *self, PyObject *key)
{
    PyObject *args, *res = fast_view((gh_devicearray *)self, key);
    if (res != Py_NotImplemented) {
        return res;
    }
    Py_DECREF(res);
    args = PyTuple_Pack(1, key);
    if (args == NULL) {
        return NULL;
    }
    res = delegate("getitem", self, args, NULL);
    Py_DECREF(args);
    return res;
}

static int
da_setitem(PyObject *self, PyObject *key, PyObject *value)
{
    PyObject *args, *res;
    if (value == NULL) {
        PyErr_SetString(PyExc_TypeError, "device array elements cannot be deleted");
        return -1;
    }
    if (check_writable((gh_devicearray *)self, "assignment") < 0) {
        return -1;
    }
    args = PyTuple_Pack(2, key, value);
    if (args == NULL) {
        return -1;
    }
    res = delegate("setitem", self, args, NULL);
    Py_DECREF(args);
    if (res == NULL) {
        return -1;
    }
    Py_DECREF(res);
    return 0;
}

#define GH_DELEGATE(pyname)                                                                        \
    static PyObject *da_##pyname(PyObject *self, PyObject *args, PyObject *kwargs)                 \
    {                                                                                              \
        return delegate(#pyname, self, args, kwargs);                                              \
    }
GH_DELEGATE(reshape)
GH_DELEGATE(ravel)
GH_DELEGATE(view)
GH_DELEGATE(transpose)
GH_DELEGATE(split)
GH_DELEGATE(get_ipc_handle)
#undef GH_DELEGATE

static PyObject *
da_T(PyObject *self, void *Py_UNUSED(c))
{
    return delegate("transpose", self, NULL, NULL);
}

/* ---- memsets ---- */

/* Fill `width` units (of `unit` bytes) on each of `height` rows `pitch` bytes apart. */
static CUresult
memset_rows(CUdeviceptr ptr, int unit, unsigned int value, size_t width, size_t height,
            size_t pitch, const gh_stream_ref *ref, gh_cu_id *id)
{
    int async = !ref->is_default;
    CUstream s = ref->handle;
    if (height == 1) {
        switch (unit) {
            case 1:
                *id = async ? GH_CU_MemsetD8Async : GH_CU_MemsetD8;
                return async ? gh_cu.MemsetD8Async(ptr, (unsigned char)value, width, s)
                             : gh_cu.MemsetD8(ptr, (unsigned char)value, width);
            case 2:
                *id = async ? GH_CU_MemsetD16Async : GH_CU_MemsetD16;
                return async ? gh_cu.MemsetD16Async(ptr, (unsigned short)value, width, s)
                             : gh_cu.MemsetD16(ptr, (unsigned short)value, width);
            default:
                *id = async ? GH_CU_MemsetD32Async : GH_CU_MemsetD32;
                return async ? gh_cu.MemsetD32Async(ptr, value, width, s)
                             : gh_cu.MemsetD32(ptr, value, width);
        }
    }
    switch (unit) {
        case 1:
            *id = async ? GH_CU_MemsetD2D8Async : GH_CU_MemsetD2D8;
            return async ? gh_cu.MemsetD2D8Async(ptr, pitch, (unsigned char)value, width, height, s)
                         : gh_cu.MemsetD2D8(ptr, pitch, (unsigned char)value, width, height);
        case 2:
            *id = async ? GH_CU_MemsetD2D16Async : GH_CU_MemsetD2D16;
            return async
                       ? gh_cu.MemsetD2D16Async(ptr, pitch, (unsigned short)value, width, height, s)
                       : gh_cu.MemsetD2D16(ptr, pitch, (unsigned short)value, width, height);
        default:
            *id = async ? GH_CU_MemsetD2D32Async : GH_CU_MemsetD2D32;
            return async ? gh_cu.MemsetD2D32Async(ptr, pitch, value, width, height, s)
                         : gh_cu.MemsetD2D32(ptr, pitch, value, width, height);
    }
}

/* _core.memset(array, ptr, unit, value, width, height, pitch, stream): fill part of
   `array`'s memory with a 1-, 2- or 4-byte pattern (planned in gpuhost/_arrays.py). */
static PyObject *
mod_memset(PyObject *module, PyObject *args)
{
    gh_state *st = gh_state_of_module(module);
    PyObject *array, *stream;
    unsigned long long ptr;
    unsigned int value;
    int unit, pushed;
    Py_ssize_t width, height, pitch;
    gh_stream_ref ref;
    gh_devicearray *self;
    gh_cu_id id = GH_CU_MemsetD8;
    CUresult res;

    if (!PyArg_ParseTuple(args, "O!KiInnnO:memset", st->DeviceArrayType, &array, &ptr, &unit,
                          &value, &width, &height, &pitch, &stream)) {
        return NULL;
    }
    self = (gh_devicearray *)array;
    if ((unit != 1 && unit != 2 && unit != 4) || width < 0 || height < 0 || pitch < 0) {
        PyErr_SetString(PyExc_ValueError, "memset takes a unit of 1, 2 or 4 bytes and "
                                          "non-negative sizes");
        return NULL;
    }
    if (copy_stream(self, stream == Py_None ? NULL : stream, &ref, NULL) < 0 ||
        gh_context_check_alive(self->context, self->generation, GH_CU_MemsetD8) < 0) {
        return NULL;
    }
    if (width == 0 || height == 0) {
        Py_RETURN_NONE;
    }
    if (gh_context_enter(self->context, &pushed) < 0) {
        return NULL;
    }
    if (!ref.is_default) {
        res = memset_rows((CUdeviceptr)ptr, unit, value, (size_t)width, (size_t)height,
                          (size_t)pitch, &ref, &id);
    }
    else {
        Py_BEGIN_ALLOW_THREADS
        res = memset_rows((CUdeviceptr)ptr, unit, value, (size_t)width, (size_t)height,
                          (size_t)pitch, &ref, &id);
        Py_END_ALLOW_THREADS
    }
    if (gh_context_leave(self->context, pushed) < 0 || gh_check(res, id) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
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
    return PyLong_FromSsize_t(array_size(self));
}

static PyObject *
da_itemsize(gh_devicearray *self, void *Py_UNUSED(c))
{
    return PyLong_FromSsize_t(PyDataType_ELSIZE(self->dtype));
}

static PyObject *
da_nbytes(gh_devicearray *self, void *Py_UNUSED(c))
{
    return PyLong_FromSsize_t(array_size(self) * PyDataType_ELSIZE(self->dtype));
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

static PyObject *
da_gpu_data(PyObject *self, void *Py_UNUSED(c))
{
    return delegate("gpu_data", self, NULL, NULL);
}

/* numba's device_ctypes_pointer: the address as a ctypes.c_void_p (None inside when 0). */
static PyObject *
da_ctypes_pointer(gh_devicearray *self, void *Py_UNUSED(c))
{
    PyObject *res = NULL, *ctypes = PyImport_ImportModule("ctypes");
    if (ctypes != NULL) {
        res = PyObject_CallMethod(ctypes, "c_void_p", "K", (unsigned long long)self->ptr);
        Py_DECREF(ctypes);
    }
    return res;
}

/* numba's alloc_size: the bytes the elements span, from the lowest to the highest. */
static PyObject *
da_alloc_size(gh_devicearray *self, void *Py_UNUSED(c))
{
    npy_intp span = PyDataType_ELSIZE(self->dtype);
    if (array_size(self) == 0) {
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
    return Py_BuildValue("{sOsOsO}", "C_CONTIGUOUS", is_contiguous(self, 0) ? Py_True : Py_False,
                         "F_CONTIGUOUS", is_contiguous(self, 1) ? Py_True : Py_False, "WRITEABLE",
                         self->readonly ? Py_False : Py_True);
}

static PyObject *
da_is_c_contiguous(gh_devicearray *self, PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(is_contiguous(self, 0));
}

static PyObject *
da_is_f_contiguous(gh_devicearray *self, PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(is_contiguous(self, 1));
}

/* __cuda_array_interface__, version 3. */
static PyObject *
da_cai(gh_devicearray *self, void *Py_UNUSED(c))
{
    PyObject *typestr = NULL, *shape = NULL, *strides = NULL, *stream = NULL, *res = NULL;
    PyObject *descr = NULL;
    npy_intp n = array_size(self);

    if (gh_context_check_alive(self->context, self->generation, GH_CU_PointerGetAttribute) < 0) {
        return NULL;
    }
    typestr = PyObject_GetAttrString((PyObject *)self->dtype, "str");
    descr = PyObject_GetAttrString((PyObject *)self->dtype, "descr");
    shape = intp_tuple(self->shape, self->ndim);
    if (is_contiguous(self, 0)) {
        strides = Py_NewRef(Py_None);
    }
    else {
        strides = intp_tuple(self->strides, self->ndim);
    }
    if (self->stream == NULL) {
        stream = Py_NewRef(Py_None); /* no stream bound: nothing to synchronize, as numba says */
    }
    else {
        stream = PyObject_GetAttrString(self->stream, "handle");
        if (stream != NULL && PyLong_AsLong(stream) == 0) {
            Py_SETREF(stream, PyLong_FromLong(1));
        }
    }
    if (typestr && descr && shape && strides && stream) {
        res =
            Py_BuildValue("{sOsOsOsOs(KO)sisO}", "shape", shape, "typestr", typestr, "descr", descr,
                          "strides", strides, "data", (unsigned long long)(n ? self->ptr : 0),
                          Py_False, "version", 3, "stream", stream);
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

static PyObject *
da_array(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return delegate("host_array", self, args, kwargs);
}

static PyObject *
da_bind(gh_devicearray *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"stream", NULL};
    gh_state *st = gh_state_of_type(Py_TYPE(self));
    PyObject *stream = Py_None;
    gh_stream_ref ref;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:bind", kwlist, &stream) ||
        gh_stream_resolve(st, stream, &ref) < 0) {
        return NULL;
    }
    if (stream != Py_None && !Py_IS_TYPE(stream, st->StreamType)) {
        PyErr_SetString(PyExc_TypeError, "bind() takes a gpuhost Stream or None");
        return NULL;
    }
    if (ref.context != NULL && ref.context != self->context) {
        gh_raise("CudaDriverError",
                 "cannot bind device %d's array to a stream of device %d: its copies go on "
                 "its own device's streams",
                 self->context->device->id, ref.context->device->id);
        return NULL;
    }
    return view_of(self, self->ptr, self->ndim, self->shape, self->strides, stream);
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
    int c = is_contiguous(self, 0), f = is_contiguous(self, 1);
    const char *layout = c && f ? "C and Fortran contiguous"
                         : c    ? "C contiguous"
                         : f    ? "Fortran contiguous"
                                : "strided";
    gh_device *dev = self->context->device;

    if ((shape = intp_tuple(self->shape, self->ndim)) == NULL ||
        (strides = intp_tuple(self->strides, self->ndim)) == NULL ||
        (nbytes = gh_format_bytes((unsigned long long)array_size(self) *
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
    {"copy_to_host", (PyCFunction)(void (*)(void))devicearray_copy_to_host,
     METH_VARARGS | METH_KEYWORDS,
     "copy_to_host($self, /, ary=None, stream=0)\n--\n\n"
     "Copy the array to the host.\n\n"
     "Parameters\n"
     "----------\n"
     "ary : numpy.ndarray, optional\n"
     "    The array to copy into: same shape and dtype. Only its elements are written, never\n"
     "    the gaps between them. A new array is made when None.\n"
     "stream : Stream or 0, optional\n"
     "    The stream to copy on; the copy is then asynchronous, so synchronize the stream\n"
     "    before reading the result. 0: the array's bound stream, else synchronous.\n\n"
     "Returns\n"
     "-------\n"
     "numpy.ndarray\n"
     "    `ary`, or the new array.\n\n"
     "Raises\n"
     "------\n"
     "ValueError\n"
     "    If `ary`'s shape or dtype differs from the array's.\n\n"
     "Examples\n"
     "--------\n"
     ">>> d = gpuhost.to_device(np.arange(4, dtype=np.float32))\n"
     ">>> d.copy_to_host()\n"
     "array([0., 1., 2., 3.], dtype=float32)\n"
     ">>> out = np.empty(4, np.float32)\n"
     ">>> s = gpuhost.stream()\n"
     ">>> _ = d.copy_to_host(out, stream=s)\n"
     ">>> s.synchronize()\n"
     ">>> out\n"
     "array([0., 1., 2., 3.], dtype=float32)"},
    {"copy_to_device", (PyCFunction)(void (*)(void))devicearray_copy_to_device,
     METH_VARARGS | METH_KEYWORDS,
     "copy_to_device($self, /, ary, stream=0)\n--\n\n"
     "Copy an array of the same shape and dtype into this one.\n\n"
     "Parameters\n"
     "----------\n"
     "ary : array_like or DeviceArray\n"
     "    The source: a host array, or a device array (a device-to-device copy).\n"
     "stream : Stream or 0, optional\n"
     "    The stream to copy on (asynchronous); 0: the array's bound stream, else\n"
     "    synchronous.\n\n"
     "Raises\n"
     "------\n"
     "ValueError\n"
     "    If the shapes or dtypes differ.\n\n"
     "Examples\n"
     "--------\n"
     ">>> d = gpuhost.device_array(3, np.int64)\n"
     ">>> d.copy_to_device(np.array([7, 8, 9]))\n"
     ">>> d.copy_to_host()\n"
     "array([7, 8, 9])"},
    {"is_c_contiguous", (PyCFunction)da_is_c_contiguous, METH_NOARGS,
     "is_c_contiguous($self, /)\n--\n\n"
     "Whether the array is C-contiguous (row-major, no gaps).\n\n"
     "Examples\n"
     "--------\n"
     ">>> d = gpuhost.device_array((2, 3), np.float32)\n"
     ">>> d.is_c_contiguous(), d.T.is_c_contiguous()\n"
     "(True, False)"},
    {"is_f_contiguous", (PyCFunction)da_is_f_contiguous, METH_NOARGS,
     "is_f_contiguous($self, /)\n--\n\n"
     "Whether the array is Fortran-contiguous (column-major, no gaps).\n\n"
     "Examples\n"
     "--------\n"
     ">>> d = gpuhost.device_array((2, 3), np.float32)\n"
     ">>> d.is_f_contiguous(), d.T.is_f_contiguous()\n"
     "(False, True)"},
    {"bind", (PyCFunction)(void (*)(void))da_bind, METH_VARARGS | METH_KEYWORDS,
     "bind($self, /, stream=None)\n--\n\n"
     "A view of the same memory whose copies default to `stream`.\n\n"
     "Parameters\n"
     "----------\n"
     "stream : Stream, optional\n"
     "    The stream that copy_to_host(), copy_to_device() and the like use when given no\n"
     "    stream; None: none (synchronous copies).\n\n"
     "Returns\n"
     "-------\n"
     "DeviceArray\n"
     "    A view; this array keeps its own stream.\n\n"
     "Examples\n"
     "--------\n"
     ">>> s = gpuhost.stream()\n"
     ">>> d = gpuhost.device_array(8, np.float32)\n"
     ">>> d.bind(s).stream is s, d.stream\n"
     "(True, 0)"},
    {"reshape", (PyCFunction)(void (*)(void))da_reshape, METH_VARARGS | METH_KEYWORDS,
     "reshape($self, /, *newshape, order='C')\n--\n\n"
     "A view of the same memory with a new shape.\n\n"
     "Parameters\n"
     "----------\n"
     "*newshape : int or tuple of int\n"
     "    The new shape, as separate ints or one tuple; one dimension may be -1 (inferred).\n"
     "order : {'C', 'F'}, optional\n"
     "    The order the elements are read in; the array must be contiguous in it.\n\n"
     "Returns\n"
     "-------\n"
     "DeviceArray\n"
     "    A view; no data is copied.\n\n"
     "Raises\n"
     "------\n"
     "NotImplementedError\n"
     "    If the array is not contiguous in `order` (the reshape would need a copy).\n"
     "ValueError\n"
     "    If the sizes do not match.\n\n"
     "Examples\n"
     "--------\n"
     ">>> d = gpuhost.to_device(np.arange(6))\n"
     ">>> d.reshape(2, 3).shape, d.reshape((3, -1)).shape\n"
     "((2, 3), (3, 2))"},
    {"ravel", (PyCFunction)(void (*)(void))da_ravel, METH_VARARGS | METH_KEYWORDS,
     "ravel($self, /, order='C', stream=0)\n--\n\n"
     "A 1-d view of the array's elements.\n\n"
     "Parameters\n"
     "----------\n"
     "order : {'C', 'F', 'A'}, optional\n"
     "    The order the array must be contiguous in; 'A': whichever it is.\n"
     "stream : Stream or 0, optional\n"
     "    The stream the view is bound to (see bind()); 0: the array's.\n\n"
     "Raises\n"
     "------\n"
     "NotImplementedError\n"
     "    If the array is not contiguous in `order` (the ravel would need a copy).\n"
     "ValueError\n"
     "    For another `order`.\n\n"
     "Examples\n"
     "--------\n"
     ">>> d = gpuhost.device_array((2, 3), np.float32)\n"
     ">>> d.ravel().shape, d.T.ravel(order='F').shape\n"
     "((6,), (6,))"},
    {"view", (PyCFunction)(void (*)(void))da_view, METH_VARARGS | METH_KEYWORDS,
     "view($self, /, dtype)\n--\n\n"
     "The same memory seen as another dtype.\n\n"
     "The last dimension is rescaled by the ratio of the item sizes, as numpy's\n"
     "`ndarray.view` does; it must be contiguous.\n\n"
     "Parameters\n"
     "----------\n"
     "dtype : dtype_like\n"
     "    The new element type.\n\n"
     "Returns\n"
     "-------\n"
     "DeviceArray\n"
     "    A view; no data is copied.\n\n"
     "Examples\n"
     "--------\n"
     ">>> d = gpuhost.to_device(np.zeros(4, np.float32))\n"
     ">>> v = d.view(np.uint8)\n"
     ">>> v.dtype, v.shape\n"
     "(dtype('uint8'), (16,))"},
    {"transpose", (PyCFunction)(void (*)(void))da_transpose, METH_VARARGS | METH_KEYWORDS,
     "transpose($self, /, axes=None)\n--\n\n"
     "A view with the axes permuted.\n\n"
     "Parameters\n"
     "----------\n"
     "axes : tuple of int, optional\n"
     "    The new order of the axes; None reverses them (as the `T` attribute).\n\n"
     "Examples\n"
     "--------\n"
     ">>> d = gpuhost.device_array((2, 3, 4), np.float32)\n"
     ">>> d.transpose().shape, d.transpose((1, 0, 2)).shape\n"
     "((4, 3, 2), (3, 2, 4))"},
    {"split", (PyCFunction)(void (*)(void))da_split, METH_VARARGS | METH_KEYWORDS,
     "split($self, /, section, stream=0)\n--\n\n"
     "Split a 1-d array into views of `section` elements each.\n\n"
     "Parameters\n"
     "----------\n"
     "section : int\n"
     "    Elements per view; the last view may be shorter.\n"
     "stream : Stream or 0, optional\n"
     "    The stream the views are bound to.\n\n"
     "Returns\n"
     "-------\n"
     "list of DeviceArray\n\n"
     "Examples\n"
     "--------\n"
     ">>> d = gpuhost.device_array(10, np.float32)\n"
     ">>> [part.shape for part in d.split(4)]\n"
     "[(4,), (4,), (2,)]"},
    {"get_ipc_handle", (PyCFunction)(void (*)(void))da_get_ipc_handle, METH_VARARGS | METH_KEYWORDS,
     "get_ipc_handle($self, /)\n--\n\n"
     "Export the array's memory to another process.\n\n"
     "Returns\n"
     "-------\n"
     "IpcArrayHandle\n"
     "    A picklable handle; the other process opens it (`with handle as arr:` or\n"
     "    `handle.open()`) and uses this array's memory without a copy.\n\n"
     "Examples\n"
     "--------\n"
     ">>> d = gpuhost.device_array(1024, np.float32)\n"
     ">>> h = d.get_ipc_handle()  # doctest: +SKIP\n"
     ">>> queue.put(h)            # pickled to the other process  # doctest: +SKIP"},
    {"__dlpack__", (PyCFunction)(void (*)(void))da_dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__($self, /, *, stream=None, max_version=None, dl_device=None, copy=None)\n--\n\n"
     "A DLPack capsule of the array, for another library's `from_dlpack`.\n\n"
     "The capsule is versioned when `max_version` >= (1, 0). The consumer's `stream` is\n"
     "made to wait for the array's stream. No data is copied."},
    {"__dlpack_device__", (PyCFunction)da_dlpack_device, METH_NOARGS,
     "__dlpack_device__($self, /)\n--\n\n"
     "(2, device id): DLPack's code for CUDA device memory, and the device's number."},
    {"__array__", (PyCFunction)(void (*)(void))da_array, METH_VARARGS | METH_KEYWORDS,
     "__array__($self, /, dtype=None, copy=None)\n--\n\n"
     "A copy on the host, for `np.array(d)` and `np.asarray(d)`, as numba's.\n\n"
     "`dtype` converts the copy. copy=False raises ValueError, since a device array cannot\n"
     "be seen from the host without a copy.\n\n"
     "Examples\n"
     "--------\n"
     ">>> np.asarray(gpuhost.to_device(np.arange(3)))\n"
     "array([0, 1, 2])"},
    {"_repr_html_", (PyCFunction)da_repr_html, METH_NOARGS,
     "_repr_html_($self, /)\n--\n\n"
     "An HTML table of the array's shape, dtype, layout, size and device, for Jupyter; the "
     "elements stay on the device (no copy)."},
    {"_repr_pretty_", (PyCFunction)da_repr_pretty, METH_VARARGS,
     "_repr_pretty_($self, p, cycle, /)\n--\n\n"
     "IPython's pretty printer: the repr, then the array's layout and device one per line; "
     "no copy from the device."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef da_getset[] = {
    {"shape", (getter)da_shape, NULL, "The shape, a tuple of ints.", NULL},
    {"strides", (getter)da_strides, NULL, "The strides in bytes, a tuple of ints.", NULL},
    {"ndim", (getter)da_ndim, NULL, "The number of dimensions.", NULL},
    {"size", (getter)da_size, NULL, "The number of elements.", NULL},
    {"itemsize", (getter)da_itemsize, NULL, "Bytes per element.", NULL},
    {"nbytes", (getter)da_nbytes, NULL, "Bytes of the elements (size * itemsize).", NULL},
    {"dtype", (getter)da_dtype, NULL, "The element type, a numpy.dtype.", NULL},
    {"ptr", (getter)da_ptr, NULL,
     "The device address of the first element, an int (for a kernel's pointer argument or "
     "a driver call).",
     NULL},
    {"device_ctypes_pointer", (getter)da_ctypes_pointer, NULL,
     "The device address of the first element as a ctypes.c_void_p (numba's name).", NULL},
    {"alloc_size", (getter)da_alloc_size, NULL,
     "The bytes the elements span in memory, first to last (numba's name).", NULL},
    {"device", (getter)da_device, NULL, "The Device the memory is on.", NULL},
    {"context", (getter)da_context, NULL, "The Context the memory belongs to.", NULL},
    {"stream", (getter)da_stream, NULL,
     "The stream copies default to (see bind()), or 0 when none is bound (numba's value).", NULL},
    {"owner", (getter)da_owner, NULL,
     "The object keeping the memory alive: an Allocation, or a foreign owner (an array "
     "imported through DLPack or the CUDA array interface).",
     NULL},
    {"gpu_data", (getter)da_gpu_data, NULL,
     "numba's gpu_data: a MemoryPointer over the bytes the array spans (device_pointer, "
     "size, view(), memset(), owner), keeping the memory alive; the owner's other "
     "attributes (an Allocation's pool, kind, ...) read through it.",
     NULL},
    {"flags", (getter)da_flags, NULL,
     "A dict of the layout: {'C_CONTIGUOUS': bool, 'F_CONTIGUOUS': bool, 'WRITEABLE': bool}.",
     NULL},
    {"T", (getter)da_T, NULL, "The transposed view (transpose() with the axes reversed).", NULL},
    {"__cuda_array_interface__", (getter)da_cai, NULL,
     "The CUDA array interface, version 3, for CuPy, PyTorch, numba and the like: the bound "
     "stream's handle (1 for the default stream), or None when no stream is bound, as numba "
     "reports it.",
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
    {Py_tp_doc, "An array in device memory, numba.cuda's DeviceNDArray.\n\n"
                "Make one with to_device(), device_array() and friends; it is not made\n"
                "directly. Indexing and slicing give views (d[1:3]), assigning to a slice\n"
                "copies from the host (d[:] = host), and np.asarray(d) copies to the host.\n\n"
                "Examples\n"
                "--------\n"
                ">>> d = gpuhost.to_device(np.arange(6, dtype=np.float32).reshape(2, 3))\n"
                ">>> d.shape, d.dtype, d.nbytes\n"
                "((2, 3), dtype('float32'), 24)\n"
                ">>> d[1].copy_to_host()\n"
                "array([3., 4., 5.], dtype=float32)\n"
                ">>> d[:, 0] = 0\n"
                ">>> d.copy_to_host()\n"
                "array([[0., 1., 2.],\n"
                "       [0., 4., 5.]], dtype=float32)"},
    {Py_tp_methods, da_methods},
    {Py_tp_getset, da_getset},
    {Py_tp_repr, da_repr},
    {Py_sq_length, da_len},
    {Py_mp_length, da_len},
    {Py_mp_subscript, da_getitem},
    {Py_mp_ass_subscript, da_setitem},
    {Py_tp_dealloc, da_dealloc},
    {0, NULL},
};

static PyType_Spec da_spec = {
    .name = "gpuhost.DeviceArray",
    .basicsize = sizeof(gh_devicearray),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = da_slots,
};

/* _core.to_device(host, stream=None): to_device()'s fast path for a contiguous numpy array
   (exactly numpy.ndarray, C or Fortran order, no object fields, at least one element):
   memory from the context's default pool and one copy, without leaving C.  Returns
   NotImplemented for anything else, which gpuhost._arrays.to_device then handles. */
static PyObject *
mod_to_device(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    gh_state *st = gh_state_of_module(module);
    PyObject *stream = nargs > 1 ? args[1] : Py_None, *bound, *res = NULL;
    PyArrayObject *host;
    gh_context *ctx;
    gh_allocation *alloc = NULL;
    gh_stream_ref ref;
    npy_intp strides[GH_MAXDIMS], acc;
    int ndim, fortran;
    size_t nbytes;

    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "to_device() takes 1 or 2 arguments");
        return NULL;
    }
    if (!PyArray_CheckExact(args[0])) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    host = (PyArrayObject *)args[0];
    ndim = PyArray_NDIM(host);
    fortran = !PyArray_IS_C_CONTIGUOUS(host);
    if ((fortran && !PyArray_IS_F_CONTIGUOUS(host)) || ndim > GH_MAXDIMS ||
        PyArray_SIZE(host) == 0 || PyDataType_REFCHK(PyArray_DESCR(host))) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    bound = (stream == Py_None || (PyLong_CheckExact(stream) && PyLong_AsLong(stream) == 0))
                ? NULL
                : stream;
    if (gh_stream_resolve(st, bound, &ref) < 0 || (ctx = gh_current_context(st, -1)) == NULL) {
        return NULL;
    }
    if (ref.context != NULL && ref.context != ctx) {
        Py_DECREF(ctx);
        Py_RETURN_NOTIMPLEMENTED; /* the Python path explains the mismatch */
    }
    acc = PyArray_ITEMSIZE(host);
    for (int k = 0; k < ndim; k++) {
        int i = fortran ? k : ndim - 1 - k;
        strides[i] = acc;
        acc *= PyArray_DIM(host, i);
    }
    nbytes = (size_t)acc;
    alloc = gh_pool_device_alloc(st, ctx, nbytes, bound);
    if (alloc != NULL) {
        res = gh_devicearray_new(st, ctx, alloc->generation, alloc->dptr, (PyObject *)alloc,
                                 PyArray_DESCR(host), ndim, PyArray_DIMS(host), strides, bound);
    }
    if (res != NULL && linear_copy((gh_devicearray *)res, 0, PyArray_DATA(host), alloc->dptr,
                                   nbytes, &ref, !ref.is_default) < 0) {
        Py_CLEAR(res);
    }
    Py_XDECREF(alloc);
    Py_DECREF(ctx);
    return res;
}

static PyMethodDef da_module_methods[] = {
    {"to_device", (PyCFunction)(void (*)(void))mod_to_device, METH_FASTCALL,
     "to_device(host, stream=None, /)\n--\n\n"
     "to_device()'s fast path for a contiguous numpy array: a new DeviceArray with its data, or "
     "NotImplemented for anything else (gpuhost internal)."},
    {"make_array", (PyCFunction)(void (*)(void))mod_make_array, METH_VARARGS | METH_KEYWORDS,
     "make_array(owner, ptr, shape, strides, dtype, stream=None, context=None)\n--\n\n"
     "A DeviceArray over device memory at `ptr` kept alive by `owner` (gpuhost internal)."},
    {"memset", mod_memset, METH_VARARGS,
     "memset(array, ptr, unit, value, width, height, pitch, stream)\n--\n\n"
     "Fill rows of `array`'s memory with a 1-, 2- or 4-byte pattern (gpuhost internal)."},
    {"copy_2d", mod_copy_2d, METH_VARARGS,
     "copy_2d(array, to_host, host_ptr, host_pitch, dev_ptr, dev_pitch, width, height, "
     "stream)\n--\n\nOne 2D copy between the host and `array`'s memory (gpuhost internal)."},
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
