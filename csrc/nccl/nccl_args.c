/* The argument helpers of the Communicator's collectives (nccl_collectives.c): FASTCALL
 * arguments by position or name, ints, reduction ops, and the NCCL type reducing a dtype.
 */
#include "nccl_internal.h"

#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL gh_ARRAY_API
#include <numpy/arrayobject.h>

#include <limits.h>
#include <string.h>

static const char *const op_names[] = {"sum", "prod", "max", "min", "avg"};

/* FASTCALL arguments of `call` by position or name: out[i] is names[i]'s (NULL where not
   given); the first `required` must be given. */
int
gh_nccl_parse_args(const char *call, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                   const char *const *names, int n, int required, PyObject **out)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (int i = 0; i < n; i++) {
        out[i] = i < nargs ? args[i] : NULL;
    }
    if (nargs > n) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most %d arguments (%zd given)", call, n,
                     nargs);
        return -1;
    }
    for (Py_ssize_t j = 0; j < nkw; j++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, j);
        int i = 0;
        while (i < n && PyUnicode_CompareWithASCIIString(key, names[i]) != 0) {
            i++;
        }
        if (i == n) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", call,
                         key);
            return -1;
        }
        if (out[i] != NULL) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", call,
                         names[i]);
            return -1;
        }
        out[i] = args[nargs + j];
    }
    for (int i = 0; i < required; i++) {
        if (out[i] == NULL) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s' (pos %d)", call,
                         names[i], i + 1);
            return -1;
        }
    }
    return 0;
}

/* An int argument (NULL: `dflt`). */
int
gh_nccl_int_arg(const char *call, const char *name, PyObject *obj, int dflt, int *out)
{
    long v;
    if (obj == NULL) {
        *out = dflt;
        return 0;
    }
    if (!PyLong_Check(obj) || PyBool_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s(): %s must be an int, not %.100s", call, name,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    v = PyLong_AsLong(obj);
    if ((v == -1 && PyErr_Occurred()) || v < INT_MIN || v > INT_MAX) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s(): %s %R is out of range", call, name, obj);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* The NCCL type reducing `d` with `op`; *mult: NCCL elements per array element (complex
   numbers are reduced as pairs of reals, for sum and avg).  -1 with TypeError. */
int
gh_nccl_reduce_dtype(const char *call, void *descr, int op, size_t *mult)
{
    PyArray_Descr *d = descr;
    int size = (int)PyDataType_ELSIZE(d);
    *mult = 1;
    switch (d->kind) {
        case 'i':
            if (size == 1 || size == 4 || size == 8) {
                return size == 1 ? GH_ncclInt8 : size == 4 ? GH_ncclInt32 : GH_ncclInt64;
            }
            break;
        case 'u':
            if (size == 1 || size == 4 || size == 8) {
                return size == 1 ? GH_ncclUint8 : size == 4 ? GH_ncclUint32 : GH_ncclUint64;
            }
            break;
        case 'f':
            if (size == 2 || size == 4 || size == 8) {
                return size == 2 ? GH_ncclFloat16 : size == 4 ? GH_ncclFloat32 : GH_ncclFloat64;
            }
            break;
        case 'c':
            if ((size == 8 || size == 16) && (op == GH_ncclSum || op == GH_ncclAvg)) {
                *mult = 2;
                return size == 8 ? GH_ncclFloat32 : GH_ncclFloat64;
            }
            if (size == 8 || size == 16) {
                PyErr_Format(PyExc_TypeError,
                             "%s(): complex numbers reduce with op 'sum' or 'avg' only, not '%s'",
                             call, op_names[op]);
                return -1;
            }
            break;
        default: { /* ml_dtypes' bfloat16 and float8 types (PyTorch's, through DLPack) */
            PyObject *name = PyObject_GetAttrString((PyObject *)d, "name");
            const char *s = name ? PyUnicode_AsUTF8(name) : NULL;
            int t = !s                                ? -2
                    : strcmp(s, "bfloat16") == 0      ? GH_ncclBfloat16
                    : strcmp(s, "float8_e4m3fn") == 0 ? GH_ncclFloat8e4m3
                    : strcmp(s, "float8_e5m2") == 0   ? GH_ncclFloat8e5m2
                                                      : -1;
            Py_XDECREF(name);
            if (t == -2) {
                return -1;
            }
            if (t >= 0) {
                return t;
            }
        }
    }
    PyErr_Format(PyExc_TypeError,
                 "%s(): NCCL cannot reduce %S; it reduces int8, uint8, int32, uint32, int64, "
                 "uint64, float16, bfloat16, float32, float64 (and complex64/complex128 with "
                 "'sum' or 'avg')",
                 call, (PyObject *)d);
    return -1;
}

int
gh_nccl_parse_op(const char *call, PyObject *obj)
{
    if (obj == NULL) {
        return GH_ncclSum;
    }
    if (PyUnicode_Check(obj)) {
        for (int i = 0; i < 5; i++) {
            if (PyUnicode_CompareWithASCIIString(obj, op_names[i]) == 0) {
                return i;
            }
        }
    }
    else if (PyLong_Check(obj) && !PyBool_Check(obj)) {
        long v = PyLong_AsLong(obj);
        if (v >= 0 && v < 5) {
            return (int)v;
        }
        if (v == -1 && PyErr_Occurred()) {
            PyErr_Clear();
        }
    }
    PyErr_Format(PyExc_ValueError,
                 "%s(): op must be 'sum', 'prod', 'max', 'min' or 'avg' (or NCCL's code 0-4), "
                 "not %R",
                 call, obj);
    return -1;
}
