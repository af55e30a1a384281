/* The copies of a DeviceArray: host to device, device to host, device to device (one
 * contiguous layout, on one device or two), in any layout, planned here once (a strided
 * layout becomes 2D copies of rows); memsets; and to_device() for numpy arrays.
 */
#include "arrays_internal.h"

#include "memory/memory.h"

#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL gh_ARRAY_API
#include <numpy/arrayobject.h>

#include <string.h>

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
        return gh_raise(GH_EXC_CUDA_DRIVER,
                        "the copy is from device %d to device %d but the stream is device %d's: "
                        "use a stream of either device",
                        peer->device->id, self->context->device->id, ref->context->device->id);
    }
    return gh_stream_check_device(ref->context, self->context, "the array is");
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
            return gh_raise(GH_EXC_STREAM_CAPTURE,
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
        if (res == CUDA_SUCCESS && !to_host) {
            /* From pageable memory the driver returns once the bytes are staged, and writes
               them on the legacy stream later: a synchronous copy is one whose data is on
               the device, for another device's or a non-blocking stream's work too. */
            id = GH_CU_StreamSynchronize;
            res = gh_cu.StreamSynchronize(CU_STREAM_LEGACY);
        }
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

/* ---- strided layouts: planned once, here ---- */

/* One axis of a planned layout: `len` elements `stride` bytes apart. */
typedef struct {
    Py_ssize_t len, stride;
} gh_axis;

/* `a`'s layout as a copy walks it: negative strides flipped (*ptr moves to the lowest
   address; flipped[i] says axis i was), length-1 axes dropped, and each axis merged into
   the one before it where they are contiguous.  axes[0..*naxes) run outer to inner. */
static void
plan_layout(const gh_devicearray *a, CUdeviceptr *ptr, gh_axis *axes, int *naxes, int *flipped)
{
    CUdeviceptr p = a->ptr;
    int n = 0;
    for (int i = 0; i < a->ndim; i++) {
        Py_ssize_t len = a->shape[i], stride = a->strides[i];
        flipped[i] = stride < 0 && len > 1;
        if (flipped[i]) {
            p -= (CUdeviceptr)((len - 1) * -stride);
            stride = -stride;
        }
        if (len == 1) {
            continue;
        }
        if (n > 0 && axes[n - 1].stride == len * stride) {
            axes[n - 1].len *= len;
            axes[n - 1].stride = stride;
        }
        else {
            axes[n].len = len;
            axes[n].stride = stride;
            n++;
        }
    }
    *ptr = p;
    *naxes = n;
}

/* _core.plan_layout(array) -> (ptr, ((n, stride), ...)), for gpuhost/_arrays.py's fills. */
static PyObject *
mod_plan_layout(PyObject *module, PyObject *arg)
{
    gh_state *st = gh_state_of_module(module);
    gh_axis axes[GH_MAXDIMS];
    int flipped[GH_MAXDIMS], n;
    CUdeviceptr ptr;
    PyObject *list;

    if (!Py_IS_TYPE(arg, st->DeviceArrayType)) {
        return PyErr_Format(PyExc_TypeError, "plan_layout() takes a DeviceArray, not %s",
                            Py_TYPE(arg)->tp_name);
    }
    plan_layout((gh_devicearray *)arg, &ptr, axes, &n, flipped);
    if ((list = PyTuple_New(n)) == NULL) {
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        PyObject *axis = Py_BuildValue("(nn)", axes[i].len, axes[i].stride);
        if (axis == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyTuple_SET_ITEM(list, i, axis);
    }
    return Py_BuildValue("(KN)", (unsigned long long)ptr, list);
}

/* Queue or make one cuMemcpy2D of `rows` rows of `width` bytes between host rows at `host`
   (`host_pitch` bytes apart) and device rows at `dev` (`dev_pitch` apart); the context is
   current.  The driver's result. */
static CUresult
copy_rows(int to_host, char *host, size_t host_pitch, CUdeviceptr dev, size_t dev_pitch,
          size_t width, size_t rows, const gh_stream_ref *ref)
{
    CUDA_MEMCPY2D p;
    CUresult res;
    memset(&p, 0, sizeof(p));
    p.WidthInBytes = width;
    p.Height = rows;
    p.srcMemoryType = to_host ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    p.dstMemoryType = to_host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
    if (to_host) {
        p.srcDevice = dev;
        p.srcPitch = dev_pitch;
        p.dstHost = host;
        p.dstPitch = host_pitch;
    }
    else {
        p.srcHost = host;
        p.srcPitch = host_pitch;
        p.dstDevice = dev;
        p.dstPitch = dev_pitch;
    }
    if (!ref->is_default) {
        return gh_cu.Memcpy2DAsync(&p, ref->handle);
    }
    Py_BEGIN_ALLOW_THREADS
    res = gh_cu.Memcpy2D(&p);
    Py_END_ALLOW_THREADS
    return res;
}

/* Move `a`'s elements between the device and `host`, a C-contiguous buffer holding them in
   `a`'s logical order with the flipped axes reversed; the copy is complete on return (a
   copy queued on a stream is waited for: `host` may be a temporary).  0 or -1. */
static int
copy_planned(gh_devicearray *a, int to_host, char *host, const gh_stream_ref *ref)
{
    gh_axis axes[GH_MAXDIMS];
    int flipped[GH_MAXDIMS], n, outer, pushed;
    Py_ssize_t item = PyDataType_ELSIZE(a->dtype), index[GH_MAXDIMS] = {0};
    size_t width, rows, pitch;
    CUdeviceptr ptr;
    CUresult res = CUDA_SUCCESS;
    gh_cu_id id = ref->is_default ? GH_CU_Memcpy2D : GH_CU_Memcpy2DAsync;

    plan_layout(a, &ptr, axes, &n, flipped);
    if (n == 0) {
        axes[n++] = (gh_axis){1, item};
    }
    if (axes[n - 1].stride == item) { /* rows of contiguous elements */
        width = (size_t)(axes[n - 1].len * item);
        rows = n > 1 ? (size_t)axes[n - 2].len : 1;
        pitch = n > 1 ? (size_t)axes[n - 2].stride : width;
        outer = n > 1 ? n - 2 : 0;
    }
    else { /* every element its own row */
        width = (size_t)item;
        rows = (size_t)axes[n - 1].len;
        pitch = (size_t)axes[n - 1].stride;
        outer = n - 1;
    }
    if (gh_context_check_alive(a->context, a->generation, id) < 0 ||
        gh_context_enter(a->context, &pushed) < 0) {
        return -1;
    }
    for (;;) { /* each index of the outer axes, last fastest */
        Py_ssize_t offset = 0;
        for (int i = 0; i < outer; i++) {
            offset += index[i] * axes[i].stride;
        }
        res = copy_rows(to_host, host, width, ptr + (CUdeviceptr)offset, pitch, width, rows, ref);
        host += width * rows;
        int i = outer - 1;
        while (i >= 0 && ++index[i] == axes[i].len) {
            index[i--] = 0;
        }
        if (res != CUDA_SUCCESS || i < 0) {
            break;
        }
    }
    if (res == CUDA_SUCCESS && (!ref->is_default || !to_host)) {
        /* a stream's copies waited for; synchronous ones to the device landed, not only
           staged (see linear_copy) */
        id = GH_CU_StreamSynchronize;
        Py_BEGIN_ALLOW_THREADS
        res = gh_cu.StreamSynchronize(ref->is_default ? CU_STREAM_LEGACY : ref->handle);
        Py_END_ALLOW_THREADS
    }
    if (gh_context_leave(a->context, pushed) < 0) {
        return -1;
    }
    return gh_check(res, id);
}

/* A view of `arr` with the axes `flipped` says reversed (`arr` itself when none is); new
   reference or NULL. */
static PyArrayObject *
flipped_view(PyArrayObject *arr, const int *flipped)
{
    npy_intp strides[GH_MAXDIMS];
    char *data = PyArray_BYTES(arr);
    int any = 0, nd = PyArray_NDIM(arr);
    PyObject *view;
    for (int i = 0; i < nd; i++) {
        strides[i] = PyArray_STRIDE(arr, i);
        if (flipped[i]) {
            data += (PyArray_DIM(arr, i) - 1) * strides[i];
            strides[i] = -strides[i];
            any = 1;
        }
    }
    if (!any) {
        return (PyArrayObject *)Py_NewRef(arr);
    }
    Py_INCREF(PyArray_DESCR(arr));
    view = PyArray_NewFromDescr(&PyArray_Type, PyArray_DESCR(arr), nd, PyArray_DIMS(arr), strides,
                                data, PyArray_FLAGS(arr) & NPY_ARRAY_WRITEABLE, NULL);
    if (view != NULL && PyArray_SetBaseObject((PyArrayObject *)view, Py_NewRef(arr)) < 0) {
        Py_CLEAR(view);
    }
    return (PyArrayObject *)view;
}

/* ValueError unless host array `h` has `a`'s shape and dtype; `what` names it. */
static int
check_match(gh_devicearray *a, PyArrayObject *h, const char *what)
{
    PyObject *hs, *ds;
    int same = PyArray_NDIM(h) == a->ndim && PyArray_EquivTypes(PyArray_DESCR(h), a->dtype);
    for (int i = 0; same && i < a->ndim; i++) {
        same = PyArray_DIM(h, i) == a->shape[i];
    }
    if (same) {
        return 0;
    }
    hs = PyArray_IntTupleFromIntp(PyArray_NDIM(h), PyArray_DIMS(h));
    ds = PyArray_IntTupleFromIntp(a->ndim, a->shape);
    if (hs != NULL && ds != NULL) {
        PyErr_Format(PyExc_ValueError,
                     "%s has shape %S and dtype %S; the device array has shape %S and dtype %S",
                     what, hs, (PyObject *)PyArray_DESCR(h), ds, (PyObject *)a->dtype);
    }
    Py_XDECREF(hs);
    Py_XDECREF(ds);
    return -1;
}

/* copy_to_host(ary) for a layout a single copy cannot do: the device's rows into a
   C-contiguous temporary, then numpy's copy into `ary` (None: a new C-order array). */
static PyObject *
strided_to_host(gh_devicearray *self, PyObject *ary, const gh_stream_ref *ref)
{
    int flipped[GH_MAXDIMS];
    PyArrayObject *tmp, *view;
    PyObject *out;
    gh_axis axes[GH_MAXDIMS];
    CUdeviceptr ptr;
    int n;

    if (ary != Py_None) {
        if (!PyArray_Check(ary)) {
            return PyErr_Format(PyExc_TypeError, "copy_to_host() copies into a numpy array, not %s",
                                Py_TYPE(ary)->tp_name);
        }
        if (check_match(self, (PyArrayObject *)ary, "the target array") < 0) {
            return NULL;
        }
        if (!PyArray_ISWRITEABLE((PyArrayObject *)ary)) {
            PyErr_SetString(PyExc_ValueError, "the target array is read-only");
            return NULL;
        }
    }
    Py_INCREF(self->dtype);
    tmp = (PyArrayObject *)PyArray_NewFromDescr(&PyArray_Type, self->dtype, self->ndim, self->shape,
                                                NULL, NULL, 0, NULL);
    if (tmp == NULL) {
        return NULL;
    }
    if (gh_devicearray_size(self) > 0 && copy_planned(self, 1, PyArray_BYTES(tmp), ref) < 0) {
        Py_DECREF(tmp);
        return NULL;
    }
    plan_layout(self, &ptr, axes, &n, flipped);
    view = flipped_view(tmp, flipped);
    Py_DECREF(tmp);
    if (view == NULL) {
        return NULL;
    }
    if (ary == Py_None && view == tmp) {
        return (PyObject *)view; /* nothing flipped: the temporary is the answer */
    }
    out = ary != Py_None ? Py_NewRef(ary) : PyArray_NewLikeArray(view, NPY_CORDER, NULL, 0);
    if (out != NULL && PyArray_CopyInto((PyArrayObject *)out, view) < 0) {
        Py_CLEAR(out);
    }
    Py_DECREF(view);
    return out;
}

/* copy_to_device(ary) from a numpy array in a layout a single copy cannot do: the host's
   elements into a C-contiguous temporary in the device's walking order (unless `ary`
   already is one), then the device's rows from it. */
static PyObject *
strided_to_device(gh_devicearray *self, PyArrayObject *ary, const gh_stream_ref *ref)
{
    int flipped[GH_MAXDIMS], n, rc;
    gh_axis axes[GH_MAXDIMS];
    CUdeviceptr ptr;
    PyArrayObject *view, *tmp;

    if (PyDataType_REFCHK(PyArray_DESCR(ary))) {
        PyObject *dt = PyObject_Str((PyObject *)PyArray_DESCR(ary));
        if (dt != NULL) {
            PyErr_Format(PyExc_TypeError,
                         "dtype %U holds Python objects, which cannot live in device memory", dt);
            Py_DECREF(dt);
        }
        return NULL;
    }
    if (check_match(self, ary, "the source array") < 0) {
        return NULL;
    }
    if (gh_devicearray_size(self) == 0) {
        Py_RETURN_NONE;
    }
    plan_layout(self, &ptr, axes, &n, flipped);
    if ((view = flipped_view(ary, flipped)) == NULL) {
        return NULL;
    }
    tmp = (PyArrayObject *)PyArray_FromArray(view, NULL, NPY_ARRAY_C_CONTIGUOUS);
    Py_DECREF(view);
    if (tmp == NULL) {
        return NULL;
    }
    rc = copy_planned(self, 0, PyArray_BYTES(tmp), ref);
    Py_DECREF(tmp);
    if (rc < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
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

PyObject *
gh_devicearray_copy_to_host(gh_devicearray *self, PyObject *args, PyObject *kwargs)
{
    PyObject *ary, *stream, *out = NULL;
    gh_stream_ref ref;
    int contiguous_c = gh_devicearray_is_contiguous(self, 0),
        contiguous_f = gh_devicearray_is_contiguous(self, 1);

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
        return strided_to_host(self, ary, &ref);
    }
    if (linear_copy(self, 1, PyArray_DATA((PyArrayObject *)out), self->ptr,
                    (size_t)(gh_devicearray_size(self) * PyDataType_ELSIZE(self->dtype)), &ref,
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
    size_t nbytes = (size_t)(gh_devicearray_size(self) * PyDataType_ELSIZE(self->dtype));
    CUresult res;
    gh_cu_id id;
    int pushed;

    if (src->ndim != self->ndim || !PyArray_EquivTypes(src->dtype, self->dtype) ||
        !(gh_devicearray_is_contiguous(self, 0) || gh_devicearray_is_contiguous(self, 1))) {
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

PyObject *
gh_devicearray_copy_to_device(gh_devicearray *self, PyObject *args, PyObject *kwargs)
{
    PyObject *ary, *stream, *host = NULL, *res = NULL;
    gh_context *peer = NULL;
    gh_stream_ref ref;
    int fortran;

    if (gh_devicearray_check_writable(self, "copy_to_device()") < 0) {
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
        Py_DECREF(res); /* another layout or device: below */
    }
    fortran = !gh_devicearray_is_contiguous(self, 0) && gh_devicearray_is_contiguous(self, 1);
    if ((gh_devicearray_is_contiguous(self, 0) || fortran) && PyArray_Check(ary) &&
        same_layout(self, (PyArrayObject *)ary)) {
        host = Py_NewRef(ary);
    }
    if (host == NULL) {
        if (PyArray_Check(ary)) {
            return strided_to_device(self, (PyArrayObject *)ary, &ref);
        }
        /* a device array of another layout, a foreign device array, a list: Python's */
        PyObject *a = Py_BuildValue("(OOO)", (PyObject *)self, ary, stream ? stream : Py_None);
        res = a ? gh_helper_call(gh_state_of_type(Py_TYPE(self)), GH_HELPER_COPY_DEVICE_LAYOUTS, a)
                : NULL;
        Py_XDECREF(a);
        return res;
    }
    if (linear_copy(self, 0, PyArray_DATA((PyArrayObject *)host), self->ptr,
                    (size_t)(gh_devicearray_size(self) * PyDataType_ELSIZE(self->dtype)), &ref,
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
    gh_stream_ref ref;
    gh_devicearray *self;
    CUresult res;
    gh_cu_id id;
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
    if (gh_context_enter(self->context, &pushed) < 0) {
        return NULL;
    }
    res = copy_rows(to_host, (char *)(uintptr_t)host, (size_t)host_pitch, (CUdeviceptr)dev,
                    (size_t)dev_pitch, (size_t)width, (size_t)height, &ref);
    id = ref.is_default ? GH_CU_Memcpy2D : GH_CU_Memcpy2DAsync;
    if (res == CUDA_SUCCESS && ref.is_default && !to_host) { /* landed: see linear_copy */
        id = GH_CU_StreamSynchronize;
        Py_BEGIN_ALLOW_THREADS
        res = gh_cu.StreamSynchronize(CU_STREAM_LEGACY);
        Py_END_ALLOW_THREADS
    }
    if (gh_context_leave(self->context, pushed) < 0 || gh_check(res, id) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
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

/* Fill `rows` (height) x `width` units at ptr, `pitch` apart, on `stream` as memset does. */
static int
memset_planned(gh_devicearray *self, CUdeviceptr ptr, int unit, unsigned int value, size_t width,
               size_t height, size_t pitch, PyObject *stream)
{
    gh_stream_ref ref;
    gh_cu_id id = GH_CU_MemsetD8;
    CUresult res;
    int pushed;
    if (copy_stream(self, stream, &ref, NULL) < 0 ||
        gh_context_check_alive(self->context, self->generation, GH_CU_MemsetD8) < 0) {
        return -1;
    }
    if (width == 0 || height == 0) {
        return 0;
    }
    if (gh_context_enter(self->context, &pushed) < 0) {
        return -1;
    }
    /* a memset of device memory is queued, even the default stream's: kept with the GIL,
       as launches are (taking it back costs more than the call) */
    res = memset_rows(ptr, unit, value, width, height, pitch, &ref, &id);
    if (gh_context_leave(self->context, pushed) < 0) {
        return -1;
    }
    return gh_check(res, id);
}

int
gh_array_fill(gh_devicearray *a, const char *item, PyObject *stream)
{
    Py_ssize_t size = PyDataType_ELSIZE((PyArray_Descr *)a->dtype), width, height, pitch;
    int unit = 0, flipped[GH_MAXDIMS], n;
    gh_axis axes[GH_MAXDIMS];
    unsigned int value = 0;
    CUdeviceptr ptr;

    for (int u = 1; u <= 4 && unit == 0; u *= 2) { /* the item repeats a 1-, 2- or 4-byte unit */
        int repeats = size % u == 0;
        for (Py_ssize_t i = u; repeats && i < size; i += u) {
            repeats = memcmp(item, item + i, (size_t)u) == 0;
        }
        unit = repeats ? u : 0;
    }
    if (unit == 0) {
        return 0;
    }
    if (gh_devicearray_size(a) == 0) {
        return 1;
    }
    plan_layout(a, &ptr, axes, &n, flipped);
    if (n == 0) {
        axes[0].len = 1, axes[0].stride = size, n = 1;
    }
    if (axes[n - 1].stride != size || n > 2) {
        return 0;
    }
    width = axes[n - 1].len * size / unit;
    height = n == 2 ? axes[0].len : 1;
    pitch = n == 2 ? axes[0].stride : width * unit;
    if (pitch % unit != 0) {
        return 0;
    }
    memcpy(&value, item, (size_t)unit); /* little-endian: the unit's bytes as the driver sets */
    return memset_planned(a, ptr, unit, value, (size_t)width, (size_t)height, (size_t)pitch,
                          stream) < 0
               ? -1
               : 1;
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
    int unit;
    Py_ssize_t width, height, pitch;

    if (!PyArg_ParseTuple(args, "O!KiInnnO:memset", st->DeviceArrayType, &array, &ptr, &unit,
                          &value, &width, &height, &pitch, &stream)) {
        return NULL;
    }
    if ((unit != 1 && unit != 2 && unit != 4) || width < 0 || height < 0 || pitch < 0) {
        PyErr_SetString(PyExc_ValueError, "memset takes a unit of 1, 2 or 4 bytes and "
                                          "non-negative sizes");
        return NULL;
    }
    if (memset_planned((gh_devicearray *)array, (CUdeviceptr)ptr, unit, value, (size_t)width,
                       (size_t)height, (size_t)pitch, stream == Py_None ? NULL : stream) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* _core.to_device(host, stream=None): to_device() for a numpy array (exactly numpy.ndarray,
   no object fields, at least one element) in any layout: memory from the current allocator
   (memory/allocator.c; C order, or Fortran order for a Fortran-contiguous array) and the
   copy, without leaving C.  Returns NotImplemented for anything else, which
   gpuhost._arrays.to_device then handles. */
static PyObject *
mod_to_device(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    gh_state *st = gh_state_of_module(module);
    PyObject *stream = nargs > 1 ? args[1] : Py_None, *bound, *res = NULL;
    PyArrayObject *host;
    gh_context *ctx;
    PyObject *owner = NULL;
    CUdeviceptr dptr = 0;
    uint64_t generation;
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
    fortran = !PyArray_IS_C_CONTIGUOUS(host) && PyArray_IS_F_CONTIGUOUS(host);
    if (ndim > GH_MAXDIMS || PyArray_SIZE(host) == 0 || PyDataType_REFCHK(PyArray_DESCR(host))) {
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
    if (gh_array_memory(st, ctx, nbytes, bound, &owner, &dptr, &generation) == 0) {
        res = gh_devicearray_new(st, ctx, generation, dptr, owner, PyArray_DESCR(host), ndim,
                                 PyArray_DIMS(host), strides, bound);
    }
    if (res != NULL && (PyArray_IS_C_CONTIGUOUS(host) || fortran)) {
        if (linear_copy((gh_devicearray *)res, 0, PyArray_DATA(host), dptr, nbytes, &ref,
                        !ref.is_default) < 0) {
            Py_CLEAR(res);
        }
    }
    else if (res != NULL) {
        PyObject *done = strided_to_device((gh_devicearray *)res, host, &ref);
        if (done == NULL) {
            Py_CLEAR(res);
        }
        Py_XDECREF(done);
    }
    Py_XDECREF(owner);
    Py_DECREF(ctx);
    return res;
}

PyMethodDef gh_array_copy_methods[] = {
    {"to_device", (PyCFunction)(void (*)(void))mod_to_device, METH_FASTCALL,
     "to_device(host, stream=None, /)\n--\n\n"
     "to_device() for a numpy array in any layout: a new DeviceArray with its data, or "
     "NotImplemented for anything else (gpuhost internal)."},
    {"memset", mod_memset, METH_VARARGS,
     "memset(array, ptr, unit, value, width, height, pitch, stream)\n--\n\n"
     "Fill rows of `array`'s memory with a 1-, 2- or 4-byte pattern (gpuhost internal)."},
    {"copy_2d", mod_copy_2d, METH_VARARGS,
     "copy_2d(array, to_host, host_ptr, host_pitch, dev_ptr, dev_pitch, width, height, "
     "stream)\n--\n\nOne 2D copy between the host and `array`'s memory (gpuhost internal)."},
    {"plan_layout", mod_plan_layout, METH_O,
     "plan_layout(array, /)\n--\n\n"
     "(ptr, ((n, stride), ...)): `array`'s layout as its copies and fills walk it: negative "
     "strides flipped, length-1 axes dropped, contiguous axes merged (gpuhost internal)."},
    {NULL, NULL, 0, NULL},
};
