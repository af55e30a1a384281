/* Kernel parameters' C types, where something says them: a C++ kernel's mangled name (read
 * once per kernel by gpuhost/_demangle.py, the kernel_param_types helper) or pycuda's
 * Kernel.prepare(arg_types).  kernel_args.c checks arguments against them: an array's
 * element type for a typed pointer, a Python int against its parameter's C range.  What
 * they do not say stays as the driver and the PTX tell it (decision 8).
 */
#include "launch_internal.h"

#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL gh_ARRAY_API
#include <numpy/arrayobject.h>

#include <string.h>

static const char *
kind_name(char kind)
{
    switch (kind) {
        case 'i':
            return "integer or pointer";
        case 'f':
            return "floating-point";
        case 's':
            return "struct";
        default:
            return "value";
    }
}

PyObject *
gh_param_describe(gh_kernel *k, Py_ssize_t i, const char *what)
{
    const gh_param *p = &k->params[i];
    if (p->ctype != 0 && k->ctypes != NULL) {
        return Py_NewRef(PyTuple_GET_ITEM(k->ctypes, i));
    }
    return PyUnicode_FromFormat("a %u-byte %s", p->size, what ? what : kind_name(p->kind));
}

/* The element type a typed pointer takes, in NumPy's names. */
static PyObject *
elem_text(const gh_param *p)
{
    switch (p->elem) {
        case GH_ELEM_BYTE:
            return PyUnicode_FromString("int8, uint8 or bool");
        case GH_ELEM_BFLOAT16:
            return PyUnicode_FromString("bfloat16");
        case GH_ELEM_POINTER:
            return PyUnicode_FromString("int64 or uint64 (device addresses)");
        case 'i':
            return PyUnicode_FromFormat("int%d", 8 * p->elem_size);
        case 'u':
            return PyUnicode_FromFormat("uint%d", 8 * p->elem_size);
        default:
            return PyUnicode_FromFormat("float%d", 8 * p->elem_size);
    }
}

/* An array's element for messages: its dtype's name, or kind and size. */
static PyObject *
dtype_text(char kind, Py_ssize_t itemsize, PyObject *descr)
{
    if (descr != NULL) {
        return PyObject_Str(descr);
    }
    switch (kind) {
        case 'B':
            return PyUnicode_FromString("bfloat16");
        case 'i':
            return PyUnicode_FromFormat("int%zd", 8 * itemsize);
        case 'u':
            return PyUnicode_FromFormat("uint%zd", 8 * itemsize);
        case 'f':
            return PyUnicode_FromFormat("float%zd", 8 * itemsize);
        case 'c':
            return PyUnicode_FromFormat("complex%zd", 8 * itemsize);
        case 'b':
            return PyUnicode_FromString("bool");
        default:
            return PyUnicode_FromFormat("%zd-byte items", itemsize);
    }
}

int
gh_param_raise_elem(gh_kernel *k, Py_ssize_t i, PyObject *arg, char kind, Py_ssize_t itemsize,
                    PyObject *descr)
{
    PyObject *want = elem_text(&k->params[i]), *got = dtype_text(kind, itemsize, descr);
    PyObject *desc = gh_param_describe(k, i, NULL);
    if (want != NULL && got != NULL && desc != NULL) {
        PyErr_Format(PyExc_TypeError,
                     "%U(): parameter %zd (%U) takes an array of %U, not a %.100s of %U", k->name,
                     i, desc, want, Py_TYPE(arg)->tp_name, got);
    }
    Py_XDECREF(want);
    Py_XDECREF(got);
    Py_XDECREF(desc);
    return -1;
}

/* ---- setting the types ---- */

/* One parameter's type from (name, ctype, elem, elem_size, size), checked against what the
   driver and the PTX say of the parameter: 1 taken, 0 not (it stays not known), -1 error. */
static int
read_one(const gh_param *p, PyObject *item, gh_param *out, PyObject **name)
{
    const char *ctype, *elem;
    int elem_size;
    unsigned int size;
    if (item == Py_None) {
        return 0;
    }
    if (!PyTuple_Check(item) ||
        !PyArg_ParseTuple(item, "UssiI;a parameter type is (name, ctype, elem, elem_size, size)",
                          name, &ctype, &elem, &elem_size, &size)) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "a parameter type is a tuple or None");
        }
        return -1;
    }
    if (size != p->size || strlen(ctype) != 1 || !strchr("piunbf", ctype[0]) || strlen(elem) > 1 ||
        elem_size < 0 || elem_size > 255 || (ctype[0] == 'p' && size != sizeof(CUdeviceptr))) {
        return 0; /* another width than the parameter's: trust the driver, check nothing */
    }
    if (p->kind != '?' && p->kind != (ctype[0] == 'f' ? 'f' : 'i') &&
        !(ctype[0] == 'f' && size == 2 && p->kind == 's')) { /* NVRTC's __half: 2 bytes (.b8) */
        return 0;
    }
    *out = *p;
    out->ctype = ctype[0];
    out->kind = ctype[0] == 'f' ? 'f' : 'i';
    /* a pointer's element; GH_ELEM_ADDRESS for an 8-byte integer that takes addresses */
    out->elem =
        (ctype[0] == 'p' || (elem[0] == GH_ELEM_ADDRESS && size == 8)) ? elem[0] : GH_ELEM_ANY;
    out->elem_size = (uint8_t)elem_size;
    return 1;
}

/* Apply `types` (None: none known; else a tuple, one item per parameter) to k, all or
   nothing.  0, or -1 with TypeError. */
static int
apply_types(gh_kernel *k, PyObject *types)
{
    gh_param *params;
    PyObject *names;
    int known = 0;

    if (types == Py_None) {
        for (int i = 0; i < k->nparams; i++) {
            k->params[i].ctype = 0, k->params[i].elem = GH_ELEM_ANY;
        }
        Py_CLEAR(k->ctypes);
        return 0;
    }
    if (!PyTuple_Check(types) || PyTuple_GET_SIZE(types) != k->nparams) {
        PyErr_Format(PyExc_TypeError, "%U has %d parameters: their types are a tuple of %d items",
                     k->name, k->nparams, k->nparams);
        return -1;
    }
    params = PyMem_Calloc((size_t)k->nparams + 1, sizeof(gh_param));
    names = PyTuple_New(k->nparams);
    if (params == NULL || names == NULL) {
        PyMem_Free(params);
        Py_XDECREF(names);
        PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < k->nparams; i++) {
        PyObject *name = NULL;
        int r = read_one(&k->params[i], PyTuple_GET_ITEM(types, i), &params[i], &name);
        if (r < 0) {
            PyMem_Free(params);
            Py_DECREF(names);
            return -1;
        }
        if (r == 0) {
            params[i] = k->params[i];
            params[i].ctype = 0, params[i].elem = GH_ELEM_ANY;
        }
        known += r;
        PyTuple_SET_ITEM(names, i, Py_NewRef(r ? name : Py_None));
    }
    memcpy(k->params, params, (size_t)k->nparams * sizeof(gh_param));
    PyMem_Free(params);
    if (known) {
        Py_XSETREF(k->ctypes, names);
    }
    else {
        Py_DECREF(names);
        Py_CLEAR(k->ctypes);
    }
    return 0;
}

int
gh_kernel_read_types(gh_state *st, gh_kernel *k)
{
    PyObject *fn = st->helpers[GH_HELPER_KERNEL_PARAM_TYPES], *types;
    const char *symbol;
    int rc;

    if (k->nparams <= 0 || fn == NULL || !PyUnicode_Check(k->symbol)) {
        return 0;
    }
    if ((symbol = PyUnicode_AsUTF8(k->symbol)) == NULL) {
        return -1;
    }
    if (strncmp(symbol, "_Z", 2) != 0) {
        return 0; /* extern "C": the name says nothing of the types */
    }
    types = PyObject_CallOneArg(fn, k->symbol);
    if (types == NULL) {
        return -1;
    }
    /* as many types as parameters, or none: a compiler that splits a parameter in several
       (numba's arrays) or leaves one out says nothing of the others' places */
    rc =
        (PyTuple_Check(types) && PyTuple_GET_SIZE(types) == k->nparams) ? apply_types(k, types) : 0;
    Py_DECREF(types);
    return rc;
}

PyObject *
gh_kernel_set_param_types(gh_kernel *k, PyObject *types)
{
    if (k->nparams < 0) { /* param_info says why (kernel.c), which prepare() reads first */
        PyErr_Format(PyExc_TypeError, "the parameters of kernel %R are not known", k->name);
        return NULL;
    }
    return apply_types(k, types) < 0 ? NULL : Py_NewRef(Py_None);
}

PyObject *
gh_kernel_get_param_types(gh_kernel *k, void *Py_UNUSED(closure))
{
    return Py_NewRef(k->ctypes != NULL ? k->ctypes : Py_None);
}
