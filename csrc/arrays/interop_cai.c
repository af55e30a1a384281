/* Other libraries' device arrays read in C: the CUDA array interface's dict.  Kernel
 * launches, gpuhost.jit, copies and the public from_cuda_array_interface / as_cuda_array read
 * it through gh_foreign_read (interop.c) or gh_foreign_read_cai.  Its rules: versions 0 to 3,
 * no mask, a typestr NumPy knows (kept per string in the module state), a (pointer,
 * read-only) pair, strides in bytes (multiples of the item size where the use asks), and
 * in version 3 the exporter's stream (0 is forbidden by the protocol).  And numba's typing
 * of any foreign array read (its layout letter, the dtypes numba has no type for).
 */
#include "arrays_internal.h"

#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL gh_ARRAY_API
#include <numpy/arrayobject.h>

/* The NumPy dtype of a typestr, from the state's cache (borrowed). */
static PyArray_Descr *
typestr_descr(const gh_foreign_use *u, PyObject *obj, PyObject *typestr)
{
    gh_state *st = u->st;
    PyArray_Descr *d;
    if (!PyUnicode_Check(typestr)) {
        gh_foreign_raise(u, PyExc_TypeError,
                         "%s's __cuda_array_interface__ typestr must be a str, not %.100s",
                         Py_TYPE(obj)->tp_name, Py_TYPE(typestr)->tp_name);
        return NULL;
    }
    if (st->typestrs == NULL && (st->typestrs = PyDict_New()) == NULL) {
        return NULL;
    }
    d = (PyArray_Descr *)PyDict_GetItemWithError(st->typestrs, typestr);
    if (d != NULL || PyErr_Occurred()) {
        return d;
    }
    if (!PyArray_DescrConverter(typestr, &d)) {
        return NULL;
    }
    if (PyDataType_REFCHK(d)) {
        Py_DECREF(d);
        gh_foreign_raise(u, PyExc_TypeError,
                         "%s's typestr %R holds Python objects, which cannot live in device memory",
                         Py_TYPE(obj)->tp_name, typestr);
        return NULL;
    }
    if (PyDict_SetItem(st->typestrs, typestr, (PyObject *)d) < 0) {
        Py_DECREF(d);
        return NULL;
    }
    Py_DECREF(d); /* the cache holds it */
    return d;
}

/* dict[key] (borrowed) or NULL; `required` makes a missing key a ValueError. */
static PyObject *
cai_item(const gh_foreign_use *u, PyObject *obj, PyObject *dict, int key, int required)
{
    PyObject *v = PyDict_GetItemWithError(dict, gh_interop_name(u->st, key));
    if (v == NULL && !PyErr_Occurred() && required) {
        gh_foreign_raise(u, PyExc_ValueError, "%s's __cuda_array_interface__ has no '%s'",
                         Py_TYPE(obj)->tp_name, gh_interop_name_text[key]);
    }
    return v;
}

static int
cai_stream(const gh_foreign_use *u, PyObject *obj, PyObject *stream, gh_foreign *f)
{
    void *h;
    if (stream == NULL || stream == Py_None) {
        return 0;
    }
    if (!PyLong_Check(stream)) {
        return gh_foreign_raise(
            u, PyExc_TypeError,
            "%s's __cuda_array_interface__ stream must be an int or None, not %.100s",
            Py_TYPE(obj)->tp_name, Py_TYPE(stream)->tp_name);
    }
    h = PyLong_AsVoidPtr(stream);
    if (h == NULL && PyErr_Occurred()) {
        return -1;
    }
    if (h == NULL) {
        return gh_foreign_raise(
            u, PyExc_ValueError,
            "%s's __cuda_array_interface__ stream 0 is forbidden by the protocol "
            "(1: the legacy default stream, 2: the per-thread one)",
            Py_TYPE(obj)->tp_name);
    }
    if (gh_stream_handle_check((uintptr_t)h, "the __cuda_array_interface__ stream") < 0) {
        return -1;
    }
    f->has_producer = 1;
    f->producer = (CUstream)h;
    return 0;
}

static int
cai_data(const gh_foreign_use *u, PyObject *obj, PyObject *data, gh_foreign *f)
{
    void *ptr;
    int ro;
    if (!PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2) {
        return gh_foreign_raise(u, PyExc_TypeError,
                                "%s's __cuda_array_interface__ data must be a (pointer, read_only) "
                                "tuple, not %R",
                                Py_TYPE(obj)->tp_name, data);
    }
    if (!PyLong_Check(PyTuple_GET_ITEM(data, 0))) {
        return gh_foreign_raise(
            u, PyExc_TypeError,
            "%s's __cuda_array_interface__ data pointer must be an int, not %.100s",
            Py_TYPE(obj)->tp_name, Py_TYPE(PyTuple_GET_ITEM(data, 0))->tp_name);
    }
    ptr = PyLong_AsVoidPtr(PyTuple_GET_ITEM(data, 0));
    if ((ptr == NULL && PyErr_Occurred()) ||
        (ro = PyObject_IsTrue(PyTuple_GET_ITEM(data, 1))) < 0) {
        return -1;
    }
    f->ptr = (CUdeviceptr)(uintptr_t)ptr;
    f->readonly = (char)ro;
    return 0;
}

/* shape: a tuple of at most GH_MAXDIMS ints, none negative. */
static int
cai_shape(const gh_foreign_use *u, PyObject *obj, PyObject *dict, gh_foreign *f)
{
    PyObject *shape = cai_item(u, obj, dict, N_SHAPE, 1);
    if (shape == NULL) {
        return -1;
    }
    if ((!PyTuple_Check(shape) && !PyList_Check(shape)) ||
        PySequence_Fast_GET_SIZE(shape) > GH_MAXDIMS) {
        return gh_foreign_raise(u, PyExc_TypeError,
                                "%s's __cuda_array_interface__ shape must be a tuple of at most "
                                "%d ints, not %R",
                                Py_TYPE(obj)->tp_name, GH_MAXDIMS, shape);
    }
    f->ndim = (int)PySequence_Fast_GET_SIZE(shape);
    if (gh_foreign_int_tuple(u, obj, shape, f->ndim, f->shape, "__cuda_array_interface__ shape") <
        0) {
        return -1;
    }
    for (int i = 0; i < f->ndim; i++) {
        if (f->shape[i] < 0) {
            return gh_foreign_raise(u, PyExc_ValueError,
                                    "%s's __cuda_array_interface__ shape %R has a negative extent",
                                    Py_TYPE(obj)->tp_name, shape);
        }
    }
    return 0;
}

/* strides: None or absent (C-contiguous), else ndim ints in bytes, multiples of the item
   size unless the use takes any (views, copies: a record's field has such strides). */
static int
cai_strides(const gh_foreign_use *u, PyObject *obj, PyObject *dict, gh_foreign *f)
{
    PyObject *strides = cai_item(u, obj, dict, N_STRIDES, 0);
    Py_ssize_t size = 1;
    if (strides == NULL && PyErr_Occurred()) {
        return -1;
    }
    f->strides_given = strides != NULL && strides != Py_None;
    for (int i = f->ndim - 1; i >= 0; i--) {
        f->strides[i] = i == f->ndim - 1 ? f->itemsize : f->strides[i + 1] * f->shape[i + 1];
        size *= f->shape[i];
    }
    if (f->strides_given && gh_foreign_int_tuple(u, obj, strides, f->ndim, f->strides,
                                                 "__cuda_array_interface__ strides") < 0) {
        return -1;
    }
    for (int i = 0; f->strides_given && !u->any_strides && i < f->ndim; i++) {
        if (f->strides[i] % f->itemsize != 0) {
            return gh_foreign_raise(u, PyExc_ValueError,
                                    "%s's __cuda_array_interface__ strides %R are not multiples "
                                    "of its item size (%zd bytes)",
                                    Py_TYPE(obj)->tp_name, strides, f->itemsize);
        }
    }
    if (f->ptr == 0 && size != 0) {
        PyObject *shape = PyDict_GetItemWithError(dict, gh_interop_name(u->st, N_SHAPE));
        return gh_foreign_raise(u, PyExc_ValueError,
                                "%s's __cuda_array_interface__ data pointer is null for an array "
                                "of shape %R: no memory to use",
                                Py_TYPE(obj)->tp_name, shape ? shape : Py_None);
    }
    return 0;
}

/* The record dtype a '|V' typestr's descr gives (new reference), for views of it. */
static int
cai_record(const gh_foreign_use *u, PyObject *obj, PyObject *dict, gh_foreign *f)
{
    PyObject *descr = cai_item(u, obj, dict, N_DESCR, 0);
    PyArray_Descr *d = NULL;
    if (descr == NULL) {
        return PyErr_Occurred() ? -1 : 0;
    }
    if (!PyArray_DescrConverter(descr, &d)) {
        return -1;
    }
    if (PyDataType_ELSIZE(d) != f->itemsize || PyDataType_REFCHK(d)) {
        Py_DECREF(d);
        return 0; /* not a description of these bytes: keep the typestr's */
    }
    Py_SETREF(f->descr, (PyObject *)d);
    return 0;
}

int
gh_foreign_read_cai(gh_foreign_use *u, PyObject *obj, PyObject *dict, gh_foreign *f)
{
    PyObject *v;
    PyArray_Descr *d;
    long version;

    if (!PyDict_Check(dict)) {
        return gh_foreign_raise(u, PyExc_TypeError,
                                "%s's __cuda_array_interface__ must be a dict, not %.100s",
                                Py_TYPE(obj)->tp_name, Py_TYPE(dict)->tp_name);
    }
    if ((v = cai_item(u, obj, dict, N_VERSION, 1)) == NULL) {
        return -1;
    }
    version = PyLong_Check(v) ? PyLong_AsLong(v) : -1;
    if (version < 0 || version > 3) {
        PyErr_Clear();
        return gh_foreign_raise(u, PyExc_ValueError,
                                "%s's __cuda_array_interface__ version %R is not one gpuhost knows "
                                "(0, 1, 2, 3)",
                                Py_TYPE(obj)->tp_name, v);
    }
    if ((v = cai_item(u, obj, dict, N_MASK, 0)) != NULL && v != Py_None) {
        return gh_foreign_raise(u, PyExc_NotImplementedError, "Masked arrays are not supported");
    }
    if (PyErr_Occurred() || cai_shape(u, obj, dict, f) < 0 ||
        (v = cai_item(u, obj, dict, N_TYPESTR, 1)) == NULL ||
        (d = typestr_descr(u, obj, v)) == NULL) {
        return -1;
    }
    f->descr = Py_NewRef((PyObject *)d);
    f->itemsize = PyDataType_ELSIZE(d);
    if (f->itemsize == 0) {
        return gh_foreign_raise(u, PyExc_ValueError,
                                "%s's __cuda_array_interface__ typestr %R has no item size",
                                Py_TYPE(obj)->tp_name, v);
    }
    if (d->type_num == NPY_VOID && cai_record(u, obj, dict, f) < 0) {
        return -1;
    }
    if ((v = cai_item(u, obj, dict, N_DATA, 1)) == NULL || cai_data(u, obj, v, f) < 0 ||
        cai_strides(u, obj, dict, f) < 0) {
        return -1;
    }
    f->source = GH_FROM_CAI;
    f->device = -1;
    if (version >= 3) {
        v = cai_item(u, obj, dict, N_STREAM, 0);
        return (v == NULL && PyErr_Occurred()) ? -1 : cai_stream(u, obj, v, f);
    }
    return 0;
}

/* ---- numba's typing of it ---- */

int
gh_foreign_raise_type(const gh_foreign_use *u, PyObject *obj, const gh_foreign *f)
{
    const char *what = f->dl.code >= 7 ? "a float8/float6/float4 format" : "no NumPy dtype";
    return gh_foreign_raise(u, PyExc_TypeError,
                            "%s holds DLPack dtype (code %d, %d bits): %s, which numba has no "
                            "type for; pass a view of it as unsigned integers (e.g. "
                            "tensor.view(torch.uint8))",
                            Py_TYPE(obj)->tp_name, (int)f->dl.code, (int)f->dl.bits, what);
}

/* NumPy's contiguity (extents of 1 do not decide; an empty array is contiguous): 'C' before
   'F', else 'A'.  gpuhost's DeviceArrays are keyed by the same rule (jit_args.c). */
char
gh_layout_of(int ndim, const Py_ssize_t *shape, const Py_ssize_t *strides, Py_ssize_t itemsize)
{
    Py_ssize_t step = itemsize;
    int c = 1, f = 1;
    if (ndim == 1) {
        return (strides[0] == itemsize || shape[0] <= 1) ? 'C' : 'A';
    }
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 0) {
            return 'C';
        }
    }
    for (int i = ndim - 1; i >= 0; i--) {
        if (shape[i] != 1 && strides[i] != step) {
            c = 0;
        }
        step *= shape[i];
    }
    step = itemsize;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] != 1 && strides[i] != step) {
            f = 0;
        }
        step *= shape[i];
    }
    return c ? 'C' : (f ? 'F' : 'A');
}

/* numba-cuda 0.30's rule for a CUDA array interface without DLPack: 'C' without strides;
   else the strides compared with contiguous ones computed from the dtype's *bit* width
   (numba's typeof does so), which C-ordered byte strides match only by accident. */
static char
cai_numba_layout(const gh_foreign *f)
{
    Py_ssize_t bits = f->itemsize * 8, step;
    int c = 1;
    if (f->ndim == 0 || !f->strides_given) {
        return 'C';
    }
    if (f->strides[f->ndim - 1] == bits) {
        step = bits;
        for (int i = f->ndim - 1; i >= 0; i--) {
            c &= f->strides[i] == step;
            step *= f->shape[i];
        }
        return c ? 'C' : 'A';
    }
    if (f->strides[0] == bits) {
        step = bits;
        for (int i = 0; i < f->ndim; i++) {
            c &= f->strides[i] == step;
            step *= f->shape[i];
        }
        return c ? 'F' : 'A';
    }
    return 'A';
}

char
gh_foreign_numba_layout(const gh_foreign *f)
{
    if (f->has_dlpack) {
        return gh_layout_of(f->ndim, f->shape, f->strides, f->itemsize);
    }
    /* numba's interface typing reads dtype.bitwidth, which its booleans, datetimes and
       records lack: its typeof fails there, and so the launch goes to numba */
    if (f->descr == NULL || f->dl.code == GH_DL_BOOL ||
        !PyTypeNum_ISNUMBER(((PyArray_Descr *)f->descr)->type_num) ||
        PyTypeNum_ISBOOL(((PyArray_Descr *)f->descr)->type_num)) {
        return f->strides_given && f->ndim > 0 ? 0 : 'C';
    }
    return cai_numba_layout(f);
}
