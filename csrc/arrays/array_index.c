/* DeviceArray indexing in C, registered with devicearray.c at init (the module
 * state's gh_array_hooks): an element read as a NumPy scalar, and self[key] = value for keys of
 * ints and slices with a host array or scalar, a gpuhost or foreign device array of the
 * view's shape, or a scalar whose bytes a driver memset can lay (the strided-copy planner
 * of array_copy.c does the copies).  What needs broadcasting, a cast on the device, a
 * record's fields or the copy kernel stays with gpuhost/_arrays.py's setitem.  And
 * iteration over the first axis, element by element (or view by view), in C.
 */
#include "arrays_internal.h"

#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL gh_ARRAY_API
#include <numpy/arrayobject.h>

#include <math.h>

/* self[i, j, ...]: the element at byte `offset`, copied to the host as copy_to_host copies
   (on the array's stream), as a NumPy scalar; records stay on the device (Python's). */
static PyObject *
element_read(PyObject *self_obj, Py_ssize_t offset)
{
    gh_devicearray *self = (gh_devicearray *)self_obj;
    PyArray_Descr *d = (PyArray_Descr *)self->dtype;
    PyObject *cell, *none, *host;
    if (PyDataType_HASFIELDS(d) || PyDataType_HASSUBARRAY(d)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    cell = gh_devicearray_new(gh_state_of_type(Py_TYPE(self)), self->context, self->generation,
                              self->ptr + (CUdeviceptr)offset, self->owner, self->dtype, 0, NULL,
                              NULL, self->stream);
    if (cell == NULL || (none = PyTuple_New(0)) == NULL) {
        Py_XDECREF(cell);
        return NULL;
    }
    host = gh_devicearray_copy_to_host((gh_devicearray *)cell, none, NULL);
    Py_DECREF(none);
    Py_DECREF(cell);
    return host == NULL ? NULL : PyArray_Return((PyArrayObject *)host);
}

/* Whether `value` can only be host data (numbers, sequences, numpy arrays without the
   CUDA array interface): asked before looking for a device array in it. */
static int
plainly_host(PyObject *value)
{
    return PyLong_Check(value) || PyFloat_Check(value) || PyComplex_Check(value) ||
           PyTuple_Check(value) || PyList_Check(value) || PyArray_IsScalar(value, Generic) ||
           (PyArray_Check(value) && !PyObject_HasAttrString(value, "__cuda_array_interface__"));
}

/* `value` as a DeviceArray where it is device memory (the target's stream ordered after its
   exporter's), else NULL: host data, or an error (PyErr_Occurred). */
static PyObject *
device_source(gh_state *st, gh_devicearray *target, PyObject *value)
{
    gh_stream_ref ref;
    gh_foreign_use u;
    gh_foreign f;
    PyObject *res = NULL;
    int r;
    if (PyObject_TypeCheck(value, st->DeviceArrayType)) {
        return Py_NewRef(value);
    }
    if (plainly_host(value) || gh_stream_resolve(st, target->stream, &ref) < 0) {
        return NULL;
    }
    gh_foreign_use_init(&u, st, target->context, ref.handle, GH_FOREIGN_LAYOUT);
    u.host_ok = u.any_strides = 1;
    r = gh_foreign_read(&u, value, &f);
    if (r == 1) {
        if (gh_foreign_order(&u, &f) == 0) {
            res = gh_foreign_as_array(st, value, &f, NULL, 0);
        }
        gh_foreign_release(&f);
    }
    return res;
}

static int
same_shape(const gh_devicearray *a, int ndim, const Py_ssize_t *shape)
{
    if (a->ndim != ndim) {
        return 0;
    }
    for (int i = 0; i < ndim; i++) {
        if (a->shape[i] != shape[i]) {
            return 0;
        }
    }
    return 1;
}

/* Whether value is a Python 0, 0.0 (not -0.0) or False: zero bytes in any numeric dtype. */
static int
is_zero(PyObject *value)
{
    if (PyLong_CheckExact(value) || PyBool_Check(value)) {
        int overflow = 0;
        return PyLong_AsLongLongAndOverflow(value, &overflow) == 0 && !overflow;
    }
    if (PyFloat_CheckExact(value)) {
        double x = PyFloat_AS_DOUBLE(value);
        return x == 0.0 && !signbit(x);
    }
    return 0;
}

/* target.copy_to_device(src): 1, or -1. */
static int
copy_in(gh_devicearray *target, PyObject *src)
{
    PyObject *args = PyTuple_Pack(1, src), *r;
    r = args ? gh_devicearray_copy_to_device(target, args, NULL) : NULL;
    Py_XDECREF(args);
    Py_XDECREF(r);
    return r == NULL ? -1 : 1;
}

/* target[...] = value: 1 done, 0 left to Python, -1 error. */
static int
assign_to(gh_state *st, gh_devicearray *target, PyObject *value)
{
    PyObject *src = device_source(st, target, value), *host;
    int rc = 0;
    if (src != NULL) {
        gh_devicearray *s = (gh_devicearray *)src;
        if (same_shape(target, s->ndim, s->shape) && s->context == target->context &&
            PyArray_EquivTypes((PyArray_Descr *)s->dtype, (PyArray_Descr *)target->dtype)) {
            rc = copy_in(target, src); /* a device copy, or the copy kernel for other layouts */
        }
        Py_DECREF(src);
        return rc; /* broadcasting, casting, another device: Python's */
    }
    if (PyErr_Occurred()) {
        return -1;
    }
    if (is_zero(value) && PyTypeNum_ISNUMBER(((PyArray_Descr *)target->dtype)->type_num)) {
        char zeros[64] = {0}; /* a numeric zero is zero bytes at every width */
        if (PyDataType_ELSIZE((PyArray_Descr *)target->dtype) <= (Py_ssize_t)sizeof(zeros)) {
            return gh_array_fill(target, zeros, NULL);
        }
    }
    Py_INCREF(target->dtype); /* PyArray_FromAny steals it */
    host = PyArray_FromAny(value, (PyArray_Descr *)target->dtype, 0, 0, NPY_ARRAY_FORCECAST, NULL);
    if (host == NULL) {
        return -1;
    }
    if (same_shape(target, PyArray_NDIM((PyArrayObject *)host),
                   PyArray_SHAPE((PyArrayObject *)host))) {
        rc = copy_in(target, host);
    }
    else if (PyArray_NDIM((PyArrayObject *)host) == 0) {
        rc = gh_array_fill(target, PyArray_BYTES((PyArrayObject *)host), NULL);
    }
    Py_DECREF(host);
    return rc;
}

/* self[key] = value for keys of ints and slices: 1 done, 0 left to Python, -1 error. */
static int
assign(PyObject *self, PyObject *key, PyObject *value)
{
    gh_state *st = gh_state_of_type(Py_TYPE(self));
    PyObject *target;
    int rc;
    if (PyDataType_HASFIELDS((PyArray_Descr *)((gh_devicearray *)self)->dtype)) {
        return 0; /* records: field by field, in Python */
    }
    target = gh_devicearray_key_view((gh_devicearray *)self, key);
    if (target == NULL || target == Py_NotImplemented) {
        Py_XDECREF(target);
        return target == NULL ? -1 : 0;
    }
    rc = assign_to(st, (gh_devicearray *)target, value);
    Py_DECREF(target);
    return rc;
}

/* ---- iteration ---- */

/* iter(DeviceArray): numba's arrays iterate by indexing 0, 1, ... (elements for a vector,
   sub-arrays for more axes); this does the same in C, one element or view per step. */
typedef struct {
    PyObject_HEAD
    gh_devicearray *array; /* strong */
    Py_ssize_t next;
} gh_array_iter;

static PyObject *
iter_next(gh_array_iter *self)
{
    gh_devicearray *a = self->array;
    PyObject *index, *res;
    if (a == NULL || self->next >= a->shape[0]) {
        Py_CLEAR(self->array);
        return NULL; /* StopIteration */
    }
    if (a->ndim == 1) {
        res = element_read((PyObject *)a, self->next * a->strides[0]);
        if (res != Py_NotImplemented) {
            self->next += res != NULL;
            return res;
        }
        Py_DECREF(res); /* a record: it stays on the device, as self[i] gives it */
    }
    if ((index = PyLong_FromSsize_t(self->next)) == NULL) {
        return NULL;
    }
    res = a->ndim == 1 ? PyObject_GetItem((PyObject *)a, index) : gh_devicearray_key_view(a, index);
    Py_DECREF(index);
    if (res == Py_NotImplemented) {
        Py_DECREF(res);
        res = NULL;
        PyErr_SetString(PyExc_SystemError, "a device array's row could not be viewed");
    }
    self->next += res != NULL;
    return res;
}

static PyObject *
iter_length_hint(gh_array_iter *self, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromSsize_t(self->array ? self->array->shape[0] - self->next : 0);
}

static int
iter_traverse(gh_array_iter *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->array);
    return 0;
}

static void
iter_dealloc(gh_array_iter *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->array);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyMethodDef iter_methods[] = {
    {"__length_hint__", (PyCFunction)iter_length_hint, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot iter_slots[] = {
    {Py_tp_iter, PyObject_SelfIter}, {Py_tp_iternext, iter_next},   {Py_tp_methods, iter_methods},
    {Py_tp_traverse, iter_traverse}, {Py_tp_dealloc, iter_dealloc}, {0, NULL},
};

static PyType_Spec iter_spec = {
    .name = "gpuhost._core.DeviceArrayIterator",
    .basicsize = sizeof(gh_array_iter),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = iter_slots,
};

static PyObject *
array_iter(PyObject *self)
{
    gh_state *st = gh_state_of_type(Py_TYPE(self));
    gh_array_iter *it = PyObject_GC_New(gh_array_iter, st->DeviceArrayIteratorType);
    if (it == NULL) {
        return NULL;
    }
    it->array = (gh_devicearray *)Py_NewRef(self);
    it->next = 0;
    PyObject_GC_Track(it);
    return (PyObject *)it;
}

int
gh_array_index_init(PyObject *module, gh_state *st)
{
    st->DeviceArrayIteratorType =
        (PyTypeObject *)PyType_FromModuleAndSpec(module, &iter_spec, NULL);
    if (st->DeviceArrayIteratorType == NULL) {
        return -1;
    }
    st->array_hooks.element = element_read;
    st->array_hooks.assign = assign;
    st->array_hooks.iter = array_iter;
    return 0;
}
