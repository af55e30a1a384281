/* DLPack both ways: DeviceArray.__dlpack__ / __dlpack_device__ (exporting, versioned and
 * legacy capsules) and dlpack_import (wrapping another library's capsule, no copy).
 *
 * An exported capsule holds a reference to the array until the consumer's deleter runs
 * (on any thread: the GIL is taken there).  An imported tensor is kept alive by a small
 * owner object that calls the producer's deleter when the last view of it dies.
 */
#include "arrays_internal.h"

#include "dlpack_docs.h"

#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL gh_ARRAY_API
#include <numpy/arrayobject.h>

#include <string.h>

/* ---- numpy dtype <-> DLPack dtype ---- */

static int
dl_dtype_of(PyArray_Descr *d, gh_dl_dtype *out)
{
    out->lanes = 1;
    out->bits = (uint8_t)(PyDataType_ELSIZE(d) * 8);
    switch (d->kind) {
        case 'b':
            out->code = GH_DL_BOOL;
            return 0;
        case 'i':
            out->code = GH_DL_INT;
            return 0;
        case 'u':
            out->code = GH_DL_UINT;
            return 0;
        case 'f':
            out->code = GH_DL_FLOAT;
            return 0;
        case 'c':
            out->code = GH_DL_COMPLEX;
            return 0;
        default:
            PyErr_Format(PyExc_BufferError, "dtype %S has no DLPack equivalent", (PyObject *)d);
            return -1;
    }
}

void *
gh_dlpack_descr_of(gh_dl_dtype t)
{
    static const char kinds[] = {'i', 'u', 'f', 0, 0, 'c', 'b'};
    char spec[16];
    PyObject *s;
    PyArray_Descr *d = NULL;
    if (t.lanes != 1 || t.code > GH_DL_BOOL || kinds[t.code] == 0 || t.bits % 8 != 0) {
        PyErr_Format(PyExc_BufferError,
                     "DLPack dtype (code %d, %d bits, %d lanes) has no numpy equivalent",
                     (int)t.code, (int)t.bits, (int)t.lanes);
        return NULL;
    }
    snprintf(spec, sizeof(spec), "%c%d", kinds[t.code], t.bits / 8);
    s = PyUnicode_FromString(t.code == GH_DL_BOOL ? "?" : spec);
    if (s != NULL && !PyArray_DescrConverter(s, &d)) {
        d = NULL;
    }
    Py_XDECREF(s);
    return d;
}

/* ---- export ---- */

typedef struct {
    gh_dl_managed_versioned versioned;
    gh_dl_managed legacy;
    PyObject *array; /* strong until the deleter runs */
    int64_t dims[2 * GH_MAXDIMS];
} export_block;

static void
release_block(export_block *b)
{
    if (!Py_IsInitialized() || gh_python_finalizing()) {
        return; /* leak the little block rather than touch a dying interpreter */
    }
    PyGILState_STATE gil = PyGILState_Ensure();
    Py_XDECREF(b->array);
    PyMem_RawFree(b);
    PyGILState_Release(gil);
}

static void
delete_versioned(gh_dl_managed_versioned *self)
{
    release_block((export_block *)self->manager_ctx);
}

static void
delete_legacy(gh_dl_managed *self)
{
    release_block((export_block *)self->manager_ctx);
}

/* Capsule destructor: a capsule nobody consumed still owns its tensor. */
static void
capsule_destructor(PyObject *capsule)
{
    if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
        gh_dl_managed_versioned *m = PyCapsule_GetPointer(capsule, "dltensor_versioned");
        m->deleter(m);
    }
    else if (PyCapsule_IsValid(capsule, "dltensor")) {
        gh_dl_managed *m = PyCapsule_GetPointer(capsule, "dltensor");
        m->deleter(m);
    }
}

/* A stream argument of __dlpack__ as a handle: None is the legacy default stream. */
static int
consumer_stream(PyObject *stream, CUstream *out, int *no_sync)
{
    long long v;
    *no_sync = 0;
    if (stream == Py_None) {
        *out = CU_STREAM_LEGACY;
        return 0;
    }
    if (!PyLong_Check(stream)) {
        PyErr_Format(PyExc_TypeError, "__dlpack__ stream must be an int or None, not %s",
                     Py_TYPE(stream)->tp_name);
        return -1;
    }
    v = PyLong_AsLongLong(stream);
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        v = -2; /* out of range for any handle: rejected below */
    }
    if (v == -1) {
        *no_sync = 1;
        return 0;
    }
    if (v == 0) {
        PyErr_SetString(PyExc_ValueError,
                        "__dlpack__ stream 0 is ambiguous for CUDA and not allowed: use 1 "
                        "(legacy default), 2 (per-thread default) or a stream handle");
        return -1;
    }
    /* a negative value becomes an address past user space, which the check refuses */
    if (gh_stream_handle_check((uintptr_t)v, "__dlpack__ stream") < 0) {
        return -1;
    }
    *out = (CUstream)(uintptr_t)v;
    return 0;
}

/* Make `consumer` wait for the work queued so far on the array's stream. */
static int
order_streams(gh_devicearray *a, CUstream consumer)
{
    gh_state *st = gh_state_of_type(Py_TYPE(a));
    gh_stream_ref producer;
    if (gh_stream_resolve(st, a->stream, &producer) < 0) {
        return -1;
    }
    if (producer.handle == NULL) {
        producer.handle = CU_STREAM_LEGACY;
    }
    if (producer.handle == consumer) {
        return 0;
    }
    return gh_stream_order_after(a->context, producer.handle, a->context, consumer);
}

static int
wants_versioned(PyObject *max_version)
{
    PyObject *major;
    long v;
    if (max_version == Py_None) {
        return 0;
    }
    if (!PyTuple_Check(max_version) || PyTuple_GET_SIZE(max_version) < 1) {
        PyErr_SetString(PyExc_TypeError, "max_version must be a (major, minor) tuple or None");
        return -1;
    }
    major = PyTuple_GET_ITEM(max_version, 0);
    v = PyLong_AsLong(major);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    return v >= 1;
}

PyObject *
gh_dlpack_export(gh_devicearray *a, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
    PyArray_Descr *descr = (PyArray_Descr *)a->dtype;
    npy_intp item = PyDataType_ELSIZE(descr);
    gh_dl_tensor t;
    export_block *b;
    CUstream consumer = NULL;
    int no_sync, versioned;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", kwlist, &stream,
                                     &max_version, &dl_device, &copy) ||
        (versioned = wants_versioned(max_version)) < 0 ||
        consumer_stream(stream, &consumer, &no_sync) < 0) {
        return NULL;
    }
    if (copy == Py_True) {
        PyErr_SetString(PyExc_BufferError, "a DeviceArray exports its memory without copying; "
                                           "copy=True is not supported");
        return NULL;
    }
    if (dl_device != Py_None) {
        PyObject *want = Py_BuildValue("(ii)", GH_DL_CUDA, a->context->device->id);
        int same = want ? PyObject_RichCompareBool(dl_device, want, Py_EQ) : -1;
        Py_XDECREF(want);
        if (same <= 0) {
            if (same == 0) {
                PyErr_Format(PyExc_BufferError, "the array is on CUDA device %d, not %R",
                             a->context->device->id, dl_device);
            }
            return NULL;
        }
    }
    memset(&t, 0, sizeof(t));
    if (gh_context_check_alive(a->context, a->generation, GH_CU_StreamWaitEvent) < 0 ||
        dl_dtype_of(descr, &t.dtype) < 0) {
        return NULL;
    }
    for (int i = 0; i < a->ndim; i++) {
        if (a->strides[i] % item != 0) {
            PyErr_SetString(PyExc_BufferError,
                            "DLPack strides count elements: this array's byte strides are not "
                            "a multiple of its item size");
            return NULL;
        }
    }
    if (!no_sync && order_streams(a, consumer) < 0) {
        return NULL;
    }
    b = PyMem_RawCalloc(1, sizeof(*b));
    if (b == NULL) {
        return PyErr_NoMemory();
    }
    b->array = Py_NewRef((PyObject *)a);
    for (int i = 0; i < a->ndim; i++) {
        b->dims[i] = a->shape[i];
        b->dims[GH_MAXDIMS + i] = a->strides[i] / item;
    }
    t.data = (void *)(uintptr_t)a->ptr;
    t.device.device_type = GH_DL_CUDA;
    t.device.device_id = a->context->device->id;
    t.ndim = a->ndim;
    t.shape = b->dims;
    t.strides = b->dims + GH_MAXDIMS;
    if (versioned) {
        b->versioned.version.major = 1;
        b->versioned.version.minor = 0;
        b->versioned.manager_ctx = b;
        b->versioned.deleter = delete_versioned;
        b->versioned.dl_tensor = t;
        return PyCapsule_New(&b->versioned, "dltensor_versioned", capsule_destructor);
    }
    b->legacy.manager_ctx = b;
    b->legacy.deleter = delete_legacy;
    b->legacy.dl_tensor = t;
    return PyCapsule_New(&b->legacy, "dltensor", capsule_destructor);
}

/* ---- import ---- */

/* Keeps an imported tensor alive; its dealloc calls the producer's deleter. */
typedef struct {
    PyObject_HEAD
    gh_dl_managed *legacy;
    gh_dl_managed_versioned *versioned;
} dl_owner;

static void
dl_owner_dealloc(dl_owner *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (self->versioned != NULL && self->versioned->deleter != NULL) {
        self->versioned->deleter(self->versioned);
    }
    if (self->legacy != NULL && self->legacy->deleter != NULL) {
        self->legacy->deleter(self->legacy);
    }
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static PyType_Slot dl_owner_slots[] = {
    {Py_tp_doc, (void *)dl_owner_doc},
    {Py_tp_dealloc, dl_owner_dealloc},
    {0, NULL},
};

static PyType_Spec dl_owner_spec = {
    .name = "gpuhost._DLPackOwner",
    .basicsize = sizeof(dl_owner),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = dl_owner_slots,
};

int
gh_dlpack_take(gh_state *st, PyObject *capsule, gh_dl_tensor **t, PyObject **owner)
{
    gh_dl_managed_versioned *v = NULL;
    gh_dl_managed *l = NULL;
    dl_owner *o;

    if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
        v = PyCapsule_GetPointer(capsule, "dltensor_versioned");
        if (v->version.major != 1) {
            PyErr_Format(PyExc_BufferError, "DLPack version %u.%u is not supported",
                         v->version.major, v->version.minor);
            return -1;
        }
        *t = &v->dl_tensor;
    }
    else if (PyCapsule_IsValid(capsule, "dltensor")) {
        l = PyCapsule_GetPointer(capsule, "dltensor");
        *t = &l->dl_tensor;
    }
    else {
        PyErr_SetString(PyExc_TypeError,
                        (PyCapsule_IsValid(capsule, "used_dltensor") ||
                         PyCapsule_IsValid(capsule, "used_dltensor_versioned"))
                            ? "this DLPack capsule was consumed already: a capsule can be "
                              "imported once"
                            : "expected an unconsumed DLPack capsule ('dltensor' or "
                              "'dltensor_versioned')");
        return -1;
    }
    if ((o = PyObject_New(dl_owner, st->DLPackOwnerType)) == NULL) {
        return -1;
    }
    o->legacy = l;
    o->versioned = v;
    /* consumed: the owner calls the deleter, the capsule must not */
    PyCapsule_SetName(capsule, v ? "used_dltensor_versioned" : "used_dltensor");
    *owner = (PyObject *)o;
    return 0;
}

PyObject *
gh_dlpack_own(gh_state *st, gh_dl_managed_versioned *m)
{
    dl_owner *o = PyObject_New(dl_owner, st->DLPackOwnerType);
    if (o == NULL) {
        if (m->deleter != NULL) {
            m->deleter(m);
        }
        return NULL;
    }
    o->legacy = NULL;
    o->versioned = m;
    return (PyObject *)o;
}

/* Whether a versioned capsule's tensor was exported read-only (its flags). */
int
gh_dlpack_owner_readonly(PyObject *owner)
{
    dl_owner *o = (dl_owner *)owner;
    return o->versioned != NULL && (o->versioned->flags & GH_DL_FLAG_READ_ONLY) != 0;
}

int
gh_dlpack_init(PyObject *module, gh_state *st)
{
    st->DLPackOwnerType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &dl_owner_spec, NULL);
    if (st->DLPackOwnerType == NULL) {
        return -1;
    }
    return 0;
}
