/* gpuhost.jit's launches in C, their arguments: the key of a launch's argument types, as
 * numba types them (int -> int64, float -> float64, a DeviceArray by dtype, ndim, layout
 * and read-only flag, tuples item by item), and the packing of numba's parameter layout
 * by a plan that gpuhost/_numba.py writes from the overload's numba types: per argument
 * 'A' ndim (an array: meminfo, parent, nitems, itemsize, data, shape, strides), 'i' size
 * signed, 'f' size (2: float16), 'c' size, 'b' (boolean), 'p' (pointer), 't' n (a tuple,
 * its n items' plans follow).
 */

#include "jit_internal.h"

#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL gh_ARRAY_API
#include <numpy/arrayobject.h>
#include <numpy/arrayscalars.h>

#include <string.h>

/* ---- keys: what selects an overload ---- */

void
gh_jit_keybuf_init(jit_keybuf *kb)
{
    kb->bytes = kb->small;
    kb->n = 0;
    kb->cap = JIT_KEY_SMALL;
    kb->keep = NULL;
    kb->local = 0;
}

void
gh_jit_keybuf_free(jit_keybuf *kb)
{
    if (kb->bytes != kb->small) {
        PyMem_Free(kb->bytes);
    }
    kb->bytes = kb->small;
    Py_CLEAR(kb->keep);
}

/* Append n bytes, growing the key past the stack's; 0 if memory runs out (the launch is
   then not keyed: numba's rules take it). */
static int
key_put(jit_keybuf *kb, const void *src, size_t n)
{
    if (kb->n + (Py_ssize_t)n > kb->cap) {
        Py_ssize_t cap = 2 * (kb->n + (Py_ssize_t)n);
        unsigned char *grown = PyMem_Malloc((size_t)cap);
        if (grown == NULL) {
            return 0;
        }
        memcpy(grown, kb->bytes, (size_t)kb->n);
        if (kb->bytes != kb->small) {
            PyMem_Free(kb->bytes);
        }
        kb->bytes = grown;
        kb->cap = cap;
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
    kb->local = 1;
    return key_byte(kb, 'd') && key_put(kb, &d, sizeof(d));
}

/* numba's layout of an array: 'C' (C-contiguous), 'F' (Fortran-contiguous) or 'A';
   extents of 1 do not decide, an empty array is contiguous (interop.c's rule, which is
   also numba's for other libraries' arrays read through DLPack). */
char
gh_jit_array_layout(const gh_devicearray *a)
{
    return gh_layout_of(a->ndim, a->shape, a->strides,
                        PyDataType_ELSIZE((PyArray_Descr *)a->dtype));
}

/* ---- other libraries' arrays: read once, keyed, packed, ordered ---- */

void
gh_jit_views_init(jit_views *vs, gh_state *st, PyObject *stream)
{
    vs->v = vs->small;
    vs->n = vs->next = 0;
    vs->cap = JIT_VIEWS_SMALL;
    vs->use_ready = 0;
    vs->stream = stream;
    vs->st = st;
}

void
gh_jit_views_free(jit_views *vs)
{
    for (int i = 0; i < vs->n; i++) {
        gh_foreign_release(&vs->v[i]);
    }
    if (vs->v != vs->small) {
        PyMem_Free(vs->v);
    }
    vs->v = vs->small;
    vs->n = vs->next = 0;
}

/* The launch's use of other libraries' arrays, its stream resolved on first need. */
static gh_foreign_use *
views_use(jit_views *vs)
{
    gh_stream_ref ref;
    if (!vs->use_ready) {
        if (gh_stream_resolve(vs->st, vs->stream, &ref) < 0) {
            return NULL;
        }
        gh_foreign_use_init(&vs->use, vs->st, ref.context, ref.handle, GH_FOREIGN_LAYOUT);
        vs->use_ready = 1;
    }
    return &vs->use;
}

/* Room for one more view; NULL with MemoryError. */
static gh_foreign *
views_slot(jit_views *vs)
{
    if (vs->n == vs->cap) {
        gh_foreign *grown = PyMem_Malloc(sizeof(gh_foreign) * (size_t)vs->cap * 2);
        if (grown == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        memcpy(grown, vs->v, sizeof(gh_foreign) * (size_t)vs->n);
        if (vs->v != vs->small) {
            PyMem_Free(vs->v);
        }
        vs->v = grown;
        vs->cap *= 2;
    }
    return &vs->v[vs->n];
}

int
gh_jit_views_order(jit_views *vs, gh_kernel *k)
{
    if (vs->n == 0) {
        return 0;
    }
    vs->use.context = k->module->context;
    for (int i = 0; i < vs->n; i++) {
        if (gh_foreign_order(&vs->use, &vs->v[i]) < 0) {
            return -1;
        }
    }
    return 0;
}

/* A plain numeric dtype of native byte order, keyed by its number (as DeviceArrays are). */
static int
plain_dtype(PyArray_Descr *d)
{
    int num = d->type_num;
    return (num <= NPY_CLONGDOUBLE || num == NPY_HALF) && PyDataType_ISNOTSWAPPED(d) &&
           !PyDataType_HASFIELDS(d) && !PyDataType_HASSUBARRAY(d);
}

/* Key another library's array as numba-cuda 0.30 types it (interop.c reads it): dtype,
   ndim, numba's layout, read-only.  1 keyed, 0 not keyed here, -1 error. */
static int
key_foreign(jit_keybuf *kb, jit_views *vs, PyObject *arg)
{
    gh_foreign_use *u = views_use(vs);
    gh_foreign *f = u ? views_slot(vs) : NULL;
    unsigned char key[7];
    char layout;
    int r;
    if (f == NULL) {
        return -1;
    }
    u->index = vs->arg;
    if ((r = gh_foreign_read(u, arg, f)) < 0) {
        return -1;
    }
    if (r != 1) {
        return 0; /* no device array: numba's rules decide what it is */
    }
    vs->n++; /* read: released with the views */
    if (f->numba_typed || (layout = gh_foreign_numba_layout(f)) == 0) {
        return 0; /* typed by numba itself, or numba's typing fails: its rules say so */
    }
    key[0] = 'A';
    if (f->descr != NULL && plain_dtype((PyArray_Descr *)f->descr)) {
        key[1] = 'n'; /* the same key as a DeviceArray's: numba types both alike */
        key[2] = (unsigned char)((PyArray_Descr *)f->descr)->type_num;
        key[3] = (unsigned char)f->ndim, key[4] = (unsigned char)layout;
        key[5] = (unsigned char)f->readonly;
        return key_put(kb, key, 6);
    }
    if (f->descr == NULL && f->dl.code == GH_DL_BFLOAT && f->dl.bits == 16) {
        key[1] = 'L', key[2] = f->dl.code, key[3] = (unsigned char)f->ndim;
        key[4] = (unsigned char)layout, key[5] = (unsigned char)f->readonly;
        return key_put(kb, key, 6);
    }
    if (f->descr == NULL) {
        return gh_foreign_raise_type(u, arg, f);
    }
    return 0;
}

static int key_arg(gh_state *st, jit_keybuf *kb, PyObject *arg, int depth, int keep, jit_views *vs);

/* The numeric NumPy scalar types numba maps one to one (long double aside). */
static int
plain_numpy_scalar(PyObject *arg)
{
    return (PyArray_IsScalar(arg, Integer) || PyArray_IsScalar(arg, Floating) ||
            PyArray_IsScalar(arg, ComplexFloating) || PyArray_IsScalar(arg, Bool)) &&
           !PyArray_IsScalar(arg, LongDouble) && !PyArray_IsScalar(arg, CLongDouble) &&
           !(Py_TYPE(arg)->tp_flags & Py_TPFLAGS_HEAPTYPE);
}

/* The common NumPy scalar types by a small number (the others are keyed by their type's
   address): 1 .. 14, or 0. */
static int
numpy_scalar_code(PyTypeObject *tp)
{
    PyTypeObject *const known[] = {
        &PyFloatArrType_Type,     &PyDoubleArrType_Type,   &PyHalfArrType_Type,
        &PyByteArrType_Type,      &PyShortArrType_Type,    &PyIntArrType_Type,
        &PyLongArrType_Type,      &PyLongLongArrType_Type, &PyUByteArrType_Type,
        &PyUShortArrType_Type,    &PyUIntArrType_Type,     &PyULongArrType_Type,
        &PyULongLongArrType_Type, &PyBoolArrType_Type,     &PyCFloatArrType_Type,
        &PyCDoubleArrType_Type,
    };
    for (int i = 0; i < (int)(sizeof(known) / sizeof(known[0])); i++) {
        if (tp == known[i]) {
            return i + 1;
        }
    }
    return 0;
}

/* Key one argument as numba types it: 1 keyed, 0 not keyed here, -1 error. */
static int
key_arg(gh_state *st, jit_keybuf *kb, PyObject *arg, int depth, int keep, jit_views *vs)
{
    PyTypeObject *tp = Py_TYPE(arg);
    int code;
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
            int r = key_arg(st, kb, PyTuple_GET_ITEM(arg, i), depth + 1, keep, vs);
            if (r <= 0) {
                return r;
            }
        }
        return 1;
    }
    if (vs != NULL && gh_foreign_known(st, tp)) {
        return key_foreign(kb, vs, arg); /* learnt to be another library's array */
    }
    if ((code = numpy_scalar_code(tp)) != 0) {
        unsigned char key[2] = {'S', (unsigned char)code};
        return key_put(kb, key, 2);
    }
    if (plain_numpy_scalar(arg)) {
        kb->local = 1;
        return key_byte(kb, 's') && key_put(kb, &tp, sizeof(tp));
    }
    if (vs == NULL || PyArray_Check(arg) || arg == Py_None) {
        return 0; /* host arrays are numba's to copy in and out */
    }
    return key_foreign(kb, vs, arg);
}

int
gh_jit_key_args(gh_state *st, jit_keybuf *kb, PyObject *const *args, Py_ssize_t nargs, int keep,
                jit_views *vs)
{
    uint32_t count = (uint32_t)nargs;
    gh_jit_keybuf_init(kb);
    if (!key_put(kb, &count, sizeof(count))) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        int r;
        if (vs != NULL) {
            vs->arg = i; /* for the messages of a foreign argument's reading */
        }
        r = key_arg(st, kb, args[i], 0, keep, vs);
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
/* meminfo, parent, nitems, itemsize, data, shape..., strides... of one array argument. */
static int
pack_layout(jit_packer *pk, CUdeviceptr ptr, Py_ssize_t itemsize, int ndim, const Py_ssize_t *shape,
            const Py_ssize_t *strides)
{
    int n = 5 + 2 * ndim;
    if (pk->n + n > pk->nparams) {
        return 0;
    }
    /* locals, not pk's fields: the stores through the buffer could alias them */
    const gh_param *p = pk->params + pk->n;
    char *buf = pk->buf;
    void **ptrs = pk->ptrs + pk->n;
    long long head[5] = {0, 0, 1, (long long)itemsize, (long long)ptr};
    for (int i = 0; i < ndim; i++) {
        long long extent = shape[i], stride = strides[i];
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

/* Whether another library's array is memory kernel k's device reaches as its own: the
   exporter's device, or (not said, several devices) the driver's answer. */
static int
foreign_on_device(gh_kernel *k, const gh_foreign *f)
{
    int ordinal = f->device;
    gh_context *ctx = k->module->context;
    gh_state *st = gh_state_of_type(Py_TYPE(k));
    if (ordinal < 0 && (st->devices == NULL || PyList_GET_SIZE(st->devices) < 2)) {
        return 1; /* one device: all device memory is its */
    }
    if (ordinal < 0 && f->ptr != 0 &&
        gh_cu.PointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, f->ptr) !=
            CUDA_SUCCESS) {
        ordinal = -1;
    }
    return ordinal < 0 || ordinal == ctx->device->id;
}

static int
pack_array(gh_kernel *k, jit_packer *pk, PyObject *arg, int ndim)
{
    gh_devicearray *a = (gh_devicearray *)arg;
    if (Py_TYPE(arg) != pk->array_type) {
        jit_views *vs = pk->views;
        gh_foreign *f = (vs != NULL && vs->next < vs->n) ? &vs->v[vs->next] : NULL;
        if (f == NULL || f->obj != arg || f->ndim != ndim ||
            (f->device != k->module->context->device->id && !foreign_on_device(k, f))) {
            return 0; /* the slow path reports it */
        }
        vs->next++;
        return pack_layout(pk, f->ptr, f->itemsize, ndim, f->shape, f->strides);
    }
    if (a->ndim != ndim || a->context != k->module->context ||
        a->generation != a->context->generation) {
        return 0; /* the slow path reports it */
    }
    return pack_layout(pk, a->ptr, PyDataType_ELSIZE((PyArray_Descr *)a->dtype), ndim, a->shape,
                       a->strides);
}

static int
pack_float(jit_packer *pk, PyObject *arg, int size)
{
    double x;
    char *dst;
    if (size == 4 && PyArray_IsScalar(arg, Float)) { /* np.float32: its bits as they are */
        if ((dst = next_param(pk, 4)) == NULL) {
            return 0;
        }
        memcpy(dst, &PyArrayScalar_VAL(arg, Float), 4);
        return 1;
    }
    if (PyComplex_Check(arg) || PyArray_IsScalar(arg, ComplexFloating)) {
        return 0;
    }
    x = PyFloat_CheckExact(arg) ? PyFloat_AS_DOUBLE(arg) : PyFloat_AsDouble(arg);
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
