/* gpuhost.jit's launches in C, their arguments: the key of a launch's argument types, as
 * numba types them (int -> int64, float -> float64, a DeviceArray by dtype, ndim, layout
 * and read-only flag, tuples item by item), and the packing of numba's parameter layout
 * by a plan that gpuhost/_numba.py writes from the overload's numba types: per argument
 * 'A' ndim (an array: meminfo, parent, nitems, itemsize, data, shape, strides), 'i' size
 * signed, 'f' size (2: float16), 'c' size, 'b' (boolean), 'p' (pointer), 't' n (a tuple,
 * its n items' plans follow).
 */

#include "devicearray.h"
#include "jit.h"
#include "kernel.h"
#include "state.h"

#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL gh_ARRAY_API
#include <numpy/arrayobject.h>

#include <string.h>

/* ---- keys: what selects an overload ---- */

/* Append n bytes; 0 if they do not fit (the launch is then not keyed). */
static int
key_put(jit_keybuf *kb, const void *src, size_t n)
{
    if (kb->n + (Py_ssize_t)n > JIT_KEY_MAX) {
        return 0;
    }
    memcpy(kb->bytes + kb->n, src, n);
    kb->n += (Py_ssize_t)n;
    return 1;
}

static int
key_byte(jit_keybuf *kb, int c)
{
    unsigned char b = (unsigned char)c;
    return key_put(kb, &b, 1);
}

/* A dtype: the plain numeric types of native byte order by number, anything else (records,
   datetimes with their units, other byte orders) by the descriptor itself, kept alive. */
static int
key_dtype(jit_keybuf *kb, PyArray_Descr *d, int keep)
{
    int num = d->type_num;
    if ((num <= NPY_CLONGDOUBLE || num == NPY_HALF) && PyDataType_ISNOTSWAPPED(d) &&
        !PyDataType_HASFIELDS(d) && !PyDataType_HASSUBARRAY(d)) {
        return key_byte(kb, 'n') && key_put(kb, &num, sizeof(num));
    }
    if (keep) {
        if (kb->keep == NULL && (kb->keep = PyList_New(0)) == NULL) {
            return -1;
        }
        if (PyList_Append(kb->keep, (PyObject *)d) < 0) {
            return -1;
        }
    }
    return key_byte(kb, 'd') && key_put(kb, &d, sizeof(d));
}

/* numba's layout of an array: 'C' (C-contiguous), 'F' (Fortran-contiguous) or 'A';
   extents of 1 do not decide, an empty array is contiguous. */
char
gh_jit_array_layout(const gh_devicearray *a)
{
    Py_ssize_t itemsize = PyDataType_ELSIZE((PyArray_Descr *)a->dtype), step = itemsize;
    int c = 1, f = 1;
    if (a->ndim == 1) { /* the common case: C (and F) when contiguous or of one element */
        return (a->strides[0] == itemsize || a->shape[0] <= 1) ? 'C' : 'A';
    }
    for (int i = 0; i < a->ndim; i++) {
        if (a->shape[i] == 0) {
            return 'C';
        }
    }
    for (int i = a->ndim - 1; i >= 0; i--) {
        if (a->shape[i] != 1 && a->strides[i] != step) {
            c = 0;
        }
        step *= a->shape[i];
    }
    step = itemsize;
    for (int i = 0; i < a->ndim; i++) {
        if (a->shape[i] != 1 && a->strides[i] != step) {
            f = 0;
        }
        step *= a->shape[i];
    }
    return c ? 'C' : (f ? 'F' : 'A');
}

static int key_arg(gh_state *st, jit_keybuf *kb, PyObject *arg, int depth, int keep);

/* The numeric NumPy scalar types numba maps one to one (long double aside). */
static int
plain_numpy_scalar(PyObject *arg)
{
    return (PyArray_IsScalar(arg, Integer) || PyArray_IsScalar(arg, Floating) ||
            PyArray_IsScalar(arg, ComplexFloating) || PyArray_IsScalar(arg, Bool)) &&
           !PyArray_IsScalar(arg, LongDouble) && !PyArray_IsScalar(arg, CLongDouble) &&
           !(Py_TYPE(arg)->tp_flags & Py_TPFLAGS_HEAPTYPE);
}

/* Key one argument as numba types it: 1 keyed, 0 not keyed here, -1 error. */
static int
key_arg(gh_state *st, jit_keybuf *kb, PyObject *arg, int depth, int keep)
{
    PyTypeObject *tp = Py_TYPE(arg);
    if (tp == st->DeviceArrayType) {
        gh_devicearray *a = (gh_devicearray *)arg;
        PyArray_Descr *d = (PyArray_Descr *)a->dtype;
        int num = d->type_num, r;
        if (a->jit_key[0] == 0) {
            /* the common case, made once per array (its layout never changes): 'A', the
               type number, ndim, layout, read-only; other dtypes (records, byte orders)
               are keyed below each time */
            int simple = (num <= NPY_CLONGDOUBLE || num == NPY_HALF) &&
                         PyDataType_ISNOTSWAPPED(d) && !PyDataType_HASFIELDS(d) &&
                         !PyDataType_HASSUBARRAY(d);
            a->jit_key[1] = 'n';
            a->jit_key[2] = (unsigned char)num;
            a->jit_key[3] = (unsigned char)a->ndim;
            a->jit_key[4] = (unsigned char)gh_jit_array_layout(a);
            a->jit_key[5] = (unsigned char)a->readonly;
            a->jit_key[0] = simple ? 'A' : 'x';
        }
        if (a->jit_key[0] == 'A') {
            return key_put(kb, a->jit_key, sizeof(a->jit_key));
        }
        r = key_byte(kb, 'A') ? key_dtype(kb, d, keep) : 0;
        if (r <= 0) {
            return r;
        }
        return key_byte(kb, a->ndim) && key_byte(kb, gh_jit_array_layout(a)) &&
               key_byte(kb, a->readonly);
    }
    if (tp == &PyLong_Type) {
        /* numba: int64 when it fits, uint64 for 2**63 .. 2**64-1, else an error */
        int overflow = 0;
        (void)PyLong_AsLongLongAndOverflow(arg, &overflow);
        if (overflow == 0) {
            return key_byte(kb, 'i');
        }
        if (overflow > 0) {
            (void)PyLong_AsUnsignedLongLong(arg);
            if (!PyErr_Occurred()) {
                return key_byte(kb, 'u');
            }
            PyErr_Clear();
        }
        return 0;
    }
    if (tp == &PyFloat_Type) {
        return key_byte(kb, 'f');
    }
    if (tp == &PyBool_Type) {
        return key_byte(kb, 'b');
    }
    if (tp == &PyComplex_Type) {
        return key_byte(kb, 'c');
    }
    if (tp == &PyTuple_Type) {
        Py_ssize_t n = PyTuple_GET_SIZE(arg);
        if (n > 255 || depth >= JIT_DEPTH_MAX || !key_byte(kb, 't') || !key_byte(kb, (int)n)) {
            return 0;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            int r = key_arg(st, kb, PyTuple_GET_ITEM(arg, i), depth + 1, keep);
            if (r <= 0) {
                return r;
            }
        }
        return 1;
    }
    if (plain_numpy_scalar(arg)) {
        return key_byte(kb, 's') && key_put(kb, &tp, sizeof(tp));
    }
    return 0;
}

int
gh_jit_key_args(gh_state *st, jit_keybuf *kb, PyObject *const *args, Py_ssize_t nargs, int keep)
{
    kb->n = 0;
    kb->keep = NULL;
    if (nargs > 255 || !key_byte(kb, (int)nargs)) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        int r = key_arg(st, kb, args[i], 0, keep);
        if (r <= 0) {
            return r;
        }
    }
    return 1;
}

/* ---- plans: numba's parameter layout ---- */

/* The next parameter's slot, which must hold `size` bytes; NULL if the plan and the
   kernel disagree (checked when the overload was added, so only a broken plan). */
static char *
next_param(jit_packer *pk, size_t size)
{
    char *dst;
    if (pk->n >= pk->nparams || pk->params[pk->n].size != size) {
        return NULL;
    }
    dst = pk->buf + pk->params[pk->n].offset;
    pk->ptrs[pk->n++] = dst;
    return dst;
}

/* An integer value as ctypes' c_intN(value) takes it: an int (or an index) modulo 2**64. */
static int
int_value(PyObject *arg, unsigned long long *out)
{
    PyObject *idx;
    if (PyFloat_Check(arg) || PyComplex_Check(arg) || PyArray_IsScalar(arg, Inexact)) {
        return 0;
    }
    if (PyArray_IsScalar(arg, Bool)) {
        *out = PyObject_IsTrue(arg) ? 1 : 0;
        return 1;
    }
    idx = PyNumber_Index(arg);
    if (idx == NULL) {
        PyErr_Clear();
        return 0;
    }
    *out = PyLong_AsUnsignedLongLongMask(idx);
    Py_DECREF(idx);
    if (*out == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return 1;
}

/* An array: meminfo, parent, nitems, itemsize, data, shape..., strides..., each 8 bytes
   (the sizes were checked against the kernel when the plan was added: not again here). */
static int
pack_array(gh_kernel *k, jit_packer *pk, PyObject *arg, int ndim)
{
    gh_devicearray *a = (gh_devicearray *)arg;
    int n = 5 + 2 * ndim;
    if (Py_TYPE(arg) != pk->array_type || a->ndim != ndim || a->context != k->module->context ||
        a->generation != a->context->generation || pk->n + n > pk->nparams) {
        return 0; /* the slow path reports it */
    }
    /* locals, not pk's fields: the stores through the buffer could alias them */
    const gh_param *p = pk->params + pk->n;
    char *buf = pk->buf;
    void **ptrs = pk->ptrs + pk->n;
    long long head[5] = {0, 0, 1, PyDataType_ELSIZE((PyArray_Descr *)a->dtype), (long long)a->ptr};
    for (int i = 0; i < ndim; i++) {
        long long extent = a->shape[i], stride = a->strides[i];
        char *d_extent = buf + p[5 + i].offset, *d_stride = buf + p[5 + ndim + i].offset;
        head[2] *= extent;
        memcpy(d_extent, &extent, 8);
        memcpy(d_stride, &stride, 8);
        ptrs[5 + i] = d_extent;
        ptrs[5 + ndim + i] = d_stride;
    }
    for (int j = 0; j < 5; j++) {
        char *dst = buf + p[j].offset;
        memcpy(dst, &head[j], 8);
        ptrs[j] = dst;
    }
    pk->n += n;
    return 1;
}

static int
pack_float(jit_packer *pk, PyObject *arg, int size)
{
    double x;
    char *dst;
    if (PyComplex_Check(arg) || PyArray_IsScalar(arg, ComplexFloating)) {
        return 0;
    }
    x = PyFloat_AsDouble(arg);
    if (x == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    if ((dst = next_param(pk, (size_t)size)) == NULL) {
        return 0;
    }
    if (size == 8) {
        memcpy(dst, &x, 8);
    }
    else if (size == 4) {
        float f = (float)x;
        memcpy(dst, &f, 4);
    }
    else if (PyFloat_Pack2(x, dst, 1) < 0) {
        PyErr_Clear();
        return 0;
    }
    return 1;
}

static int
pack_complex(jit_packer *pk, PyObject *arg, int size)
{
    Py_complex z = PyComplex_AsCComplex(arg);
    char *re, *im;
    if (z.real == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    if ((re = next_param(pk, (size_t)size / 2)) == NULL ||
        (im = next_param(pk, (size_t)size / 2)) == NULL) {
        return 0;
    }
    if (size == 16) {
        memcpy(re, &z.real, 8);
        memcpy(im, &z.imag, 8);
    }
    else {
        float fr = (float)z.real, fi = (float)z.imag;
        memcpy(re, &fr, 4);
        memcpy(im, &fi, 4);
    }
    return 1;
}

/* Pack one argument by the plan at *pos: 1 packed, 0 not here (the slow path decides). */
int
gh_jit_pack_planned(gh_kernel *k, jit_packer *pk, const unsigned char *plan, Py_ssize_t planlen,
                    Py_ssize_t *pos, PyObject *arg)
{
    unsigned char op, a1 = 0;
    unsigned long long u;
    char *dst;
    if (*pos + 2 > planlen) {
        return 0;
    }
    op = plan[(*pos)++];
    a1 = plan[(*pos)++];
    switch (op) {
        case 'A':
            return pack_array(k, pk, arg, a1);
        case 'i':
            if (*pos >= planlen || !int_value(arg, &u) || (dst = next_param(pk, a1)) == NULL) {
                return 0;
            }
            (*pos)++;            /* signedness: the same bytes either way */
            memcpy(dst, &u, a1); /* little-endian: the low bytes */
            return 1;
        case 'p':
            if (!int_value(arg, &u) || (dst = next_param(pk, 8)) == NULL) {
                return 0;
            }
            memcpy(dst, &u, 8);
            return 1;
        case 'f':
            return pack_float(pk, arg, a1);
        case 'c':
            return pack_complex(pk, arg, a1);
        case 'b': {
            int truth = PyObject_IsTrue(arg);
            if (truth < 0 || (dst = next_param(pk, 1)) == NULL) {
                PyErr_Clear();
                return 0;
            }
            *dst = (char)truth;
            return 1;
        }
        case 't':
            if (!PyTuple_Check(arg) || PyTuple_GET_SIZE(arg) != a1) {
                return 0;
            }
            for (int i = 0; i < a1; i++) {
                if (!gh_jit_pack_planned(k, pk, plan, planlen, pos, PyTuple_GET_ITEM(arg, i))) {
                    return 0;
                }
            }
            return 1;
        default:
            return 0;
    }
}

/* The sizes of the parameters a plan makes, in order, appended to `sizes` (a list). */
int
gh_jit_plan_sizes(const unsigned char *plan, Py_ssize_t planlen, Py_ssize_t *pos, PyObject *sizes)
{
    unsigned char op, a1;
    int n = 0, sz[2] = {0, 0};
    if (*pos + 2 > planlen) {
        PyErr_SetString(PyExc_ValueError, "jit plan: truncated");
        return -1;
    }
    op = plan[(*pos)++];
    a1 = plan[(*pos)++];
    switch (op) {
        case 'A':
            for (int i = 0; i < 5 + 2 * a1; i++) {
                PyObject *eight = PyLong_FromLong(8);
                if (eight == NULL || PyList_Append(sizes, eight) < 0) {
                    Py_XDECREF(eight);
                    return -1;
                }
                Py_DECREF(eight);
            }
            return 0;
        case 'i':
            (*pos)++;
            n = 1, sz[0] = a1;
            break;
        case 'f':
            n = 1, sz[0] = a1;
            break;
        case 'p':
            n = 1, sz[0] = 8;
            break;
        case 'b':
            n = 1, sz[0] = 1;
            break;
        case 'c':
            n = 2, sz[0] = sz[1] = a1 / 2;
            break;
        case 't':
            for (int i = 0; i < a1; i++) {
                if (gh_jit_plan_sizes(plan, planlen, pos, sizes) < 0) {
                    return -1;
                }
            }
            return 0;
        default:
            PyErr_Format(PyExc_ValueError, "jit plan: unknown operation %c", (int)op);
            return -1;
    }
    for (int i = 0; i < n; i++) {
        PyObject *s = PyLong_FromLong(sz[i]);
        if (s == NULL || PyList_Append(sizes, s) < 0) {
            Py_XDECREF(s);
            return -1;
        }
        Py_DECREF(s);
    }
    return 0;
}
