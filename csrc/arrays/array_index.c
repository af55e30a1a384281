/* DeviceArray indexing in C, the type's mapping and iteration slots (devicearray.c's type
 * names them): self[key] for every basic key (ints and integer-likes, slices, ..., None) as
 * a view, or the element read as a NumPy scalar; self[key] = value for a host array or
 * scalar, a gpuhost or foreign device array of the view's shape, or a scalar whose bytes a
 * driver memset can lay (the strided-copy planner of array_copy.c does the copies).  A
 * record's fields are viewed, and what needs broadcasting, a cast on the device or the copy
 * kernel is assigned, by gpuhost/_arrays.py (one call each).  And iteration over the first
 * axis, element by element (or view by view).
 */
#include "arrays_internal.h"

#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL gh_ARRAY_API
#include <numpy/arrayobject.h>

#include <math.h>
#include <string.h>

/* ---- keys ---- */

/* What a key selects of an array: the view's layout and byte offset, and whether every axis
   was indexed by an int (no ..., no None): the element itself. */
typedef struct {
    int ndim;
    int element;
    npy_intp offset;
    npy_intp shape[GH_MAXDIMS];
    npy_intp strides[GH_MAXDIMS];
} gh_key_view;

enum { K_INT, K_SLICE, K_NONE, K_ELLIPSIS };

/* TypeError for a key item that is not basic indexing, as gpuhost words it; -1. */
static int
raise_not_basic(PyObject *k)
{
    PyObject *name = PyObject_GetAttrString((PyObject *)Py_TYPE(k), "__name__");
    if (name != NULL) {
        PyErr_Format(PyExc_TypeError,
                     "only basic indexing (ints, slices, ..., None) is supported on a device "
                     "array, not %U",
                     name);
        Py_DECREF(name);
    }
    return -1;
}

/* The kind of key item `k` (K_*), its int in *value for K_INT; -1 with TypeError for any
   other item.  A bool is no int here (numpy's boolean indexing is not basic); an integer
   array, a 0-d one too, is its int (numpy would index with it as advanced indexing). */
static int
item_kind(PyObject *k, Py_ssize_t *value)
{
    PyObject *index;
    if (PyLong_CheckExact(k)) {
        *value = PyLong_AsSsize_t(k);
        if (*value == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            PyErr_SetString(PyExc_IndexError, "cannot fit 'int' into an index-sized integer");
            return -1;
        }
        return K_INT;
    }
    if (PySlice_Check(k)) {
        return K_SLICE;
    }
    if (k == Py_None) {
        return K_NONE;
    }
    if (k == Py_Ellipsis) {
        return K_ELLIPSIS;
    }
    if (PyBool_Check(k) || PyArray_IsScalar(k, Bool) || !PyIndex_Check(k)) {
        return raise_not_basic(k);
    }
    if ((index = PyNumber_Index(k)) == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) {
            return -1;
        }
        PyErr_Clear();
        return raise_not_basic(k);
    }
    *value = PyNumber_AsSsize_t(index, PyExc_IndexError);
    Py_DECREF(index);
    return *value == -1 && PyErr_Occurred() ? -1 : K_INT;
}

/* One slice item over axis `axis` of `a` into the view `v`; 0 or -1. */
static int
take_slice(const gh_devicearray *a, int axis, PyObject *k, gh_key_view *v)
{
    Py_ssize_t start, stop, step, n;
    if (PySlice_Unpack(k, &start, &stop, &step) < 0) {
        return -1;
    }
    n = PySlice_AdjustIndices(a->shape[axis], &start, &stop, step);
    if (n == 0) {
        start = 0, step = 1; /* numpy's rule for an empty slice */
    }
    v->shape[v->ndim] = n;
    v->strides[v->ndim++] = a->strides[axis] * step;
    v->offset += start * a->strides[axis];
    return 0;
}

/* The view key `key` selects of `a`, by numpy's rules of basic indexing: 0, 1 for a field
   name (a str: the caller's), or -1 with numpy's IndexError (an int out of bounds, too many
   indices, two ellipses) or gpuhost's TypeError (any other item). */
static int
key_view(const gh_devicearray *a, PyObject *key, gh_key_view *v)
{
    PyObject *const *items = &key;
    Py_ssize_t n = 1, values[GH_MAXDIMS + 1];
    int kinds[GH_MAXDIMS + 1], count[4] = {0, 0, 0, 0}, axes, out, axis = 0;

    if (PyUnicode_Check(key)) {
        return 1;
    }
    if (PyTuple_Check(key)) {
        items = &PyTuple_GET_ITEM(key, 0);
        n = PyTuple_GET_SIZE(key);
    }
    if (n > GH_MAXDIMS) {
        PyErr_Format(PyExc_IndexError, "an index of a device array has at most %d items, not %zd",
                     GH_MAXDIMS, n);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if ((kinds[i] = item_kind(items[i], &values[i])) < 0) {
            return -1;
        }
        count[kinds[i]]++;
    }
    axes = count[K_INT] + count[K_SLICE];
    out = count[K_SLICE] + count[K_NONE] + (a->ndim - axes);
    if (count[K_ELLIPSIS] > 1) {
        PyErr_SetString(PyExc_IndexError, "an index can only have a single ellipsis ('...')");
        return -1;
    }
    if (axes > a->ndim) {
        PyErr_Format(PyExc_IndexError,
                     "too many indices for array: array is %d-dimensional, "
                     "but %d were indexed",
                     a->ndim, axes);
        return -1;
    }
    if (out > GH_MAXDIMS) {
        PyErr_Format(PyExc_ValueError, "a device array has 0 to %d dimensions, not %d", GH_MAXDIMS,
                     out);
        return -1;
    }
    v->ndim = 0;
    v->offset = 0;
    v->element = count[K_INT] == n && axes == a->ndim;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (kinds[i] == K_INT) {
            Py_ssize_t x = values[i] < 0 ? values[i] + a->shape[axis] : values[i];
            if (x < 0 || x >= a->shape[axis]) {
                PyErr_Format(PyExc_IndexError,
                             "index %zd is out of bounds for axis %d with size %zd", values[i],
                             axis, a->shape[axis]);
                return -1;
            }
            v->offset += x * a->strides[axis++];
        }
        else if (kinds[i] == K_SLICE) {
            if (take_slice(a, axis++, items[i], v) < 0) {
                return -1;
            }
        }
        else if (kinds[i] == K_NONE) {
            v->shape[v->ndim] = 1;
            v->strides[v->ndim++] = 0;
        }
        else { /* the ellipsis: every axis the other items leave */
            for (int left = a->ndim - axes; left > 0; left--, axis++) {
                v->shape[v->ndim] = a->shape[axis];
                v->strides[v->ndim++] = a->strides[axis];
            }
        }
    }
    for (; axis < a->ndim; axis++) {
        v->shape[v->ndim] = a->shape[axis];
        v->strides[v->ndim++] = a->strides[axis];
    }
    return 0;
}

/* The view `v` of `self` (its memory, stream and read-only flag); new reference or NULL. */
static PyObject *
make_view(gh_devicearray *self, const gh_key_view *v)
{
    return gh_devicearray_view(self, self->ptr + (CUdeviceptr)v->offset, v->ndim, v->shape,
                               v->strides);
}

/* A 0-d view's element copied to the host as copy_to_host copies it (on the array's
   stream), as a NumPy scalar; a record stays on the device (numba's DeviceRecord): the view
   itself.  Steals `cell`; new reference or NULL. */
static PyObject *
element_of(PyObject *cell)
{
    PyObject *none, *host;
    if (cell == NULL || PyDataType_HASFIELDS((PyArray_Descr *)((gh_devicearray *)cell)->dtype)) {
        return cell;
    }
    if ((none = PyTuple_New(0)) == NULL) {
        Py_DECREF(cell);
        return NULL;
    }
    host = gh_devicearray_copy_to_host((gh_devicearray *)cell, none, NULL);
    Py_DECREF(none);
    Py_DECREF(cell);
    return host == NULL ? NULL : PyArray_Return((PyArrayObject *)host);
}

/* self[name]: the view of a record's field, gpuhost/_arrays.py's (numpy's rules for a
   field's offset and subarray); new reference or NULL. */
static PyObject *
field_view(gh_devicearray *self, PyObject *name)
{
    PyObject *args = PyTuple_Pack(2, (PyObject *)self, name), *res;
    if (args == NULL) {
        return NULL;
    }
    res = gh_helper_call(gh_state_of_type(Py_TYPE(self)), GH_HELPER_ARRAY_FIELD, args);
    Py_DECREF(args);
    return res;
}

PyObject *
gh_devicearray_getitem(PyObject *self_obj, PyObject *key)
{
    gh_devicearray *self = (gh_devicearray *)self_obj;
    gh_key_view v;
    PyObject *view;
    int r = key_view(self, key, &v);
    if (r < 0) {
        return NULL;
    }
    if (r == 1) { /* a field: a scalar field of a record is its value, as numba gives it */
        view = field_view(self, key);
        if (view != NULL && Py_IS_TYPE(view, Py_TYPE(self)) &&
            ((gh_devicearray *)view)->ndim == 0) {
            return element_of(view);
        }
        return view;
    }
    view = make_view(self, &v);
    return v.element ? element_of(view) : view;
}

/* ---- assignment ---- */

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

/* self[key] = value (value NULL: del self[key], refused): the view the key selects, then
   what C assigns itself, the rest by gpuhost/_arrays.py's assign(view, value).  0 or -1. */
int
gh_devicearray_setitem(PyObject *self_obj, PyObject *key, PyObject *value)
{
    gh_devicearray *self = (gh_devicearray *)self_obj;
    gh_state *st = gh_state_of_type(Py_TYPE(self));
    PyObject *target, *args, *res;
    gh_key_view v;
    int r;
    if (value == NULL) {
        PyErr_SetString(PyExc_TypeError, "device array elements cannot be deleted");
        return -1;
    }
    if (gh_devicearray_check_writable(self, "assignment") < 0 ||
        (r = key_view(self, key, &v)) < 0) {
        return -1;
    }
    target = r == 1 ? field_view(self, key) : make_view(self, &v);
    if (target == NULL) {
        return -1;
    }
    r = PyDataType_HASFIELDS((PyArray_Descr *)self->dtype) || !Py_IS_TYPE(target, Py_TYPE(self))
            ? 0 /* records: field by field, in Python */
            : assign_to(st, (gh_devicearray *)target, value);
    if (r == 0 && (args = PyTuple_Pack(2, target, value)) != NULL) {
        res = gh_helper_call(st, GH_HELPER_ARRAY_ASSIGN, args);
        Py_DECREF(args);
        r = res == NULL ? -1 : 1;
        Py_XDECREF(res);
    }
    Py_DECREF(target);
    return r < 0 ? -1 : 0;
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
    gh_key_view v;
    PyObject *res;
    if (a == NULL || self->next >= a->shape[0]) {
        Py_CLEAR(self->array);
        return NULL; /* StopIteration */
    }
    v.ndim = a->ndim - 1; /* a[next]: the row, or the element of a vector */
    v.offset = self->next * a->strides[0];
    memcpy(v.shape, a->shape + 1, (size_t)v.ndim * sizeof(npy_intp));
    memcpy(v.strides, a->strides + 1, (size_t)v.ndim * sizeof(npy_intp));
    res = make_view(a, &v);
    if (v.ndim == 0) {
        res = element_of(res);
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

PyObject *
gh_devicearray_iter(PyObject *self)
{
    gh_state *st = gh_state_of_type(Py_TYPE(self));
    gh_array_iter *it;
    if (((gh_devicearray *)self)->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "iteration over a 0-d device array");
        return NULL;
    }
    if ((it = PyObject_GC_New(gh_array_iter, st->DeviceArrayIteratorType)) == NULL) {
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
    return st->DeviceArrayIteratorType == NULL ? -1 : 0;
}
