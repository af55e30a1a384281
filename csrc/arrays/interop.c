/* Other libraries' device arrays, read in C on every use (design decision 7): PyTorch's
 * tensors through DLPack's C exchange API (no Python call), CuPy's arrays through their
 * public attributes, any object through the CUDA array interface (its dict read here) or
 * __dlpack__; and the use's stream ordered after the exporter's, as the CUDA array
 * interface (v3) and DLPack specify.  Kernel launches (kernel_args.c), gpuhost.jit
 * (jit_args.c), NCCL buffers, copies and the public as_cuda_array / from_dlpack
 * (interop_arrays.c) all read foreign arrays here.  What is learnt of an exporter's type
 * is kept in the module state, once per type.
 */
#include "arrays_internal.h"

#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL gh_ARRAY_API
#include <numpy/arrayobject.h>

#include <stdarg.h>
#include <string.h>

const char *const gh_interop_name_text[N__COUNT] = {
    "__cuda_array_interface__",
    "version",
    "shape",
    "typestr",
    "data",
    "strides",
    "stream",
    "mask",
    "descr",
    "ptr",
    "device_id",
    "dtype",
    "__dlpack__",
    "max_version",
    "ndim",
    "_c_contiguous",
    "size",
};

int
gh_interop_init(PyObject *Py_UNUSED(module), gh_state *st)
{
    for (int i = 0; i < N__COUNT; i++) {
        if ((st->interop_names[i] = PyUnicode_InternFromString(gh_interop_name_text[i])) == NULL) {
            return -1; /* out of memory at import: the import fails, never a later NULL name */
        }
    }
    return 0;
}

PyObject *
gh_interop_name(gh_state *st, int n)
{
    return st->interop_names[n]; /* interned at init: never NULL */
}

/* ---- errors: "<kernel>(): parameter 3: <what was wrong>" ---- */

/* What a message of the use starts with: "<who>(): <what> <index>: " (as much as the use
   names), or "".  New reference or NULL. */
static PyObject *
use_prefix(const gh_foreign_use *u)
{
    if (u != NULL && u->who != NULL && u->index >= 0) {
        return PyUnicode_FromFormat("%U(): %s %zd: ", u->who, u->what, u->index);
    }
    if (u != NULL && u->index >= 0) {
        return PyUnicode_FromFormat("%s %zd: ", u->what, u->index);
    }
    if (u != NULL && u->who != NULL) {
        return PyUnicode_FromFormat("%U(): %s: ", u->who, u->what);
    }
    return PyUnicode_FromString("");
}

int
gh_foreign_raise(const gh_foreign_use *u, PyObject *exc, const char *fmt, ...)
{
    va_list va;
    PyObject *text, *prefix;
    va_start(va, fmt);
    text = PyUnicode_FromFormatV(fmt, va);
    va_end(va);
    if (text == NULL || (prefix = use_prefix(u)) == NULL) {
        Py_XDECREF(text);
        return -1;
    }
    PyErr_Format(exc, "%U%U", prefix, text);
    Py_DECREF(prefix);
    Py_DECREF(text);
    return -1;
}

void
gh_foreign_use_init(gh_foreign_use *u, gh_state *st, gh_context *ctx, CUstream consumer, int need)
{
    memset(u, 0, sizeof(*u));
    u->st = st;
    u->context = ctx;
    u->consumer = consumer;
    u->need = need;
    u->what = "argument";
    u->index = -1;
}

void
gh_foreign_release(gh_foreign *f)
{
    Py_CLEAR(f->keep);
    Py_CLEAR(f->descr);
}

/* ---- what an exporter's type is: learnt once per type ---- */

static void
type_entry_clear(gh_foreign_type *e)
{
    Py_CLEAR(e->type);
    Py_CLEAR(e->stream_fn);
    e->api = NULL;
    e->kind = 0;
}

/* The exchange API in the type's __dlpack_c_exchange_api__, or NULL (none; or an error,
   told apart with PyErr_Occurred: a capsule of the wrong name or version). */
static const gh_dl_exchange_api *
exchange_api_of(PyTypeObject *tp)
{
    PyObject *cap = PyObject_GetAttrString((PyObject *)tp, "__dlpack_c_exchange_api__");
    const gh_dl_exchange_api *api;
    if (cap == NULL || cap == Py_None) {
        if (cap == NULL && PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
        }
        Py_XDECREF(cap);
        return NULL;
    }
    if (!PyCapsule_IsValid(cap, GH_DL_EXCHANGE_CAPSULE)) {
        PyErr_Format(PyExc_TypeError,
                     "%s.__dlpack_c_exchange_api__ is not a DLPack exchange API (a PyCapsule "
                     "named '" GH_DL_EXCHANGE_CAPSULE "'), but %R",
                     tp->tp_name, cap);
        Py_DECREF(cap);
        return NULL;
    }
    api = PyCapsule_GetPointer(cap, GH_DL_EXCHANGE_CAPSULE);
    Py_DECREF(cap); /* the table lives as long as the process (DLPack's rule) */
    if (api->header.version.major != 1) {
        PyErr_Format(PyExc_BufferError,
                     "%s's DLPack exchange API is version %u.%u; gpuhost reads version 1.x",
                     tp->tp_name, api->header.version.major, api->header.version.minor);
        return NULL;
    }
    if ((api->dltensor_from_py_object_no_sync == NULL &&
         api->managed_tensor_from_py_object_no_sync == NULL) ||
        api->current_work_stream == NULL) {
        PyErr_Format(PyExc_BufferError,
                     "%s's DLPack exchange API lacks the functions a consumer needs "
                     "(a tensor from an object, the current work stream)",
                     tp->tp_name);
        return NULL;
    }
    return api;
}

/* Whether tp is CuPy's ndarray (its module is CuPy's and it has CuPy's public attributes). */
static int
is_cupy_ndarray(PyTypeObject *tp)
{
    PyObject *mod = PyObject_GetAttrString((PyObject *)tp, "__module__");
    const char *m = (mod != NULL && PyUnicode_Check(mod)) ? PyUnicode_AsUTF8(mod) : NULL;
    const char *dot = strrchr(tp->tp_name, '.');
    int yes = m != NULL && (strncmp(m, "cupy.", 5) == 0 || strcmp(m, "cupy") == 0) &&
              strcmp(dot ? dot + 1 : tp->tp_name, "ndarray") == 0 &&
              PyObject_HasAttrString((PyObject *)tp, "data") &&
              PyObject_HasAttrString((PyObject *)tp, "__cuda_array_interface__");
    Py_XDECREF(mod);
    PyErr_Clear();
    return yes;
}

/* CuPy's get_current_stream, or NULL (not importable: the type is read through its CUDA
   array interface instead).  Once per type. */
static PyObject *
cupy_stream_fn(void)
{
    PyObject *mod = PyImport_ImportModule("cupy.cuda");
    PyObject *fn = mod ? PyObject_GetAttrString(mod, "get_current_stream") : NULL;
    Py_XDECREF(mod);
    if (fn == NULL) {
        PyErr_Clear();
    }
    return fn;
}

static int
learn_type(gh_foreign_type *e, PyTypeObject *tp)
{
    const gh_dl_exchange_api *api = exchange_api_of(tp);
    if (api == NULL && PyErr_Occurred()) {
        return -1;
    }
    e->type = (PyTypeObject *)Py_NewRef((PyObject *)tp);
    e->api = api;
    e->has_dlpack = (char)PyObject_HasAttrString((PyObject *)tp, "__dlpack__");
    e->numba_typed = (char)PyObject_HasAttrString((PyObject *)tp, "_numba_type_");
    e->checked = 0;
    e->stream_fn = NULL;
    e->kind = GH_FROM_CAI; /* the instance's CUDA array interface, else its __dlpack__ */
    if (api != NULL) {
        e->kind = GH_FROM_EXCHANGE;
    }
    else if (is_cupy_ndarray(tp) && (e->stream_fn = cupy_stream_fn()) != NULL) {
        e->kind = GH_FROM_CUPY;
    }
    e->version = tp->tp_version_tag;
    return 0;
}

/* The entry of obj's type, learnt on first sight (the oldest forgotten when full); NULL
   with an error. */
static gh_foreign_type *
foreign_type(gh_state *st, PyTypeObject *tp)
{
    gh_foreign_type *e;
    for (int i = 0; i < st->n_foreign_types; i++) {
        e = &st->foreign_types[i];
        if (e->type == tp) {
            /* a tag of 0 is one not assigned yet (some types keep none): trusted */
            if (e->version == tp->tp_version_tag || tp->tp_version_tag == 0) {
                return e;
            }
            type_entry_clear(e); /* the type changed since: learn it again */
            return learn_type(e, tp) < 0 ? NULL : e;
        }
    }
    if (st->n_foreign_types == GH_FOREIGN_TYPES) {
        type_entry_clear(&st->foreign_types[0]);
        memmove(&st->foreign_types[0], &st->foreign_types[1],
                sizeof(gh_foreign_type) * (GH_FOREIGN_TYPES - 1));
        st->n_foreign_types--;
    }
    e = &st->foreign_types[st->n_foreign_types];
    memset(e, 0, sizeof(*e));
    if (learn_type(e, tp) < 0) {
        return NULL;
    }
    st->n_foreign_types++;
    return e;
}

int
gh_foreign_known(gh_state *st, PyTypeObject *tp)
{
    for (int i = 0; i < st->n_foreign_types; i++) {
        if (st->foreign_types[i].type == tp) {
            int kind = st->foreign_types[i].kind;
            return kind == GH_FROM_EXCHANGE || kind == GH_FROM_CUPY;
        }
    }
    return 0;
}

/* ---- DLPack tensors (the exchange API's, or a capsule's) ---- */

static int
dl_type_num(gh_dl_dtype t)
{
    switch (t.code) {
        case GH_DL_INT:
            return t.bits == 8    ? NPY_INT8
                   : t.bits == 16 ? NPY_INT16
                   : t.bits == 32 ? NPY_INT32
                   : t.bits == 64 ? NPY_INT64
                                  : -1;
        case GH_DL_UINT:
            return t.bits == 8    ? NPY_UINT8
                   : t.bits == 16 ? NPY_UINT16
                   : t.bits == 32 ? NPY_UINT32
                   : t.bits == 64 ? NPY_UINT64
                                  : -1;
        case GH_DL_FLOAT:
            return t.bits == 16   ? NPY_HALF
                   : t.bits == 32 ? NPY_FLOAT
                   : t.bits == 64 ? NPY_DOUBLE
                                  : -1;
        case GH_DL_COMPLEX:
            return t.bits == 64 ? NPY_CFLOAT : t.bits == 128 ? NPY_CDOUBLE : -1;
        case GH_DL_BOOL:
            return t.bits == 8 ? NPY_BOOL : -1;
        default:
            return -1;
    }
}

static const char *
dl_device_name(int device_type)
{
    switch (device_type) {
        case GH_DL_CPU:
            return "host memory (CPU)";
        case GH_DL_CUDA_HOST:
            return "pinned host memory (CUDAHost)";
        default:
            return "memory of another kind than CUDA's";
    }
}

/* Fill f from a DLPack tensor (its shape and strides copied). */
int
gh_foreign_fill_dl(gh_foreign_use *u, PyObject *obj, const gh_dl_tensor *t, gh_foreign *f)
{
    int num;
    if (t->device.device_type != GH_DL_CUDA && t->device.device_type != GH_DL_CUDA_MANAGED) {
        if (u->host_ok) {
            return 1;
        }
        return gh_foreign_raise(
            u, PyExc_TypeError,
            "%s is in %s (DLPack device type %d), not device memory; move it to "
            "the GPU first",
            Py_TYPE(obj)->tp_name, dl_device_name(t->device.device_type),
            (int)t->device.device_type);
    }
    if (t->ndim < 0 || t->ndim > GH_MAXDIMS) {
        return gh_foreign_raise(u, PyExc_BufferError, "%s is a DLPack tensor of %d dimensions",
                                Py_TYPE(obj)->tp_name, (int)t->ndim);
    }
    if (t->dtype.lanes != 1 || t->dtype.bits == 0 || t->dtype.bits % 8 != 0) {
        return gh_foreign_raise(u, PyExc_BufferError,
                                "%s holds DLPack dtype (code %d, %d bits, %d lanes): gpuhost takes "
                                "whole bytes, one lane",
                                Py_TYPE(obj)->tp_name, (int)t->dtype.code, (int)t->dtype.bits,
                                (int)t->dtype.lanes);
    }
    f->dl = t->dtype;
    f->itemsize = t->dtype.bits / 8;
    num = u->need == GH_FOREIGN_LAYOUT ? dl_type_num(t->dtype) : -1;
    if (num >= 0) {
        f->descr = (PyObject *)PyArray_DescrFromType(num);
    }
    f->ndim = t->ndim;
    f->device = t->device.device_id;
    f->ptr = (CUdeviceptr)(uintptr_t)t->data + (CUdeviceptr)t->byte_offset;
    for (int i = f->ndim - 1; i >= 0; i--) {
        f->shape[i] = (Py_ssize_t)t->shape[i];
        if (f->shape[i] < 0) {
            return gh_foreign_raise(u, PyExc_BufferError,
                                    "%s has a negative extent (%zd) on axis %d",
                                    Py_TYPE(obj)->tp_name, f->shape[i], i);
        }
        f->strides[i] = t->strides != NULL ? (Py_ssize_t)t->strides[i] * f->itemsize
                        : i == f->ndim - 1 ? f->itemsize
                                           : f->strides[i + 1] * f->shape[i + 1];
    }
    return 0;
}

/* The exporter's current stream on `device`, asked once per use: `ask` is 0 or -1. */
static int
current_stream(gh_foreign_use *u, const void *key, int device, gh_foreign *f,
               int (*ask)(const void *key, int device, CUstream *out))
{
    CUstream s = NULL;
    for (int i = 0; i < u->n_streams; i++) {
        if (u->streams[i].api == key && u->streams[i].device == device) {
            s = u->streams[i].stream;
            goto found;
        }
    }
    if (ask(key, device, &s) < 0) {
        return -1;
    }
    if (u->n_streams < (int)(sizeof(u->streams) / sizeof(u->streams[0]))) {
        u->streams[u->n_streams].api = key;
        u->streams[u->n_streams].device = device;
        u->streams[u->n_streams++].stream = s;
    }
found:
    f->has_producer = 1;
    f->producer = s != NULL ? s : CU_STREAM_LEGACY;
    return 0;
}

static int
ask_exchange(const void *key, int device, CUstream *out)
{
    const gh_dl_exchange_api *api = key;
    void *s = NULL;
    if (api->current_work_stream(GH_DL_CUDA, device, &s) != 0) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_RuntimeError, "the DLPack exchange API's current_work_stream "
                                                "failed without saying why");
        }
        return -1;
    }
    *out = (CUstream)s;
    return 0;
}

static int
read_exchange(gh_foreign_use *u, const gh_foreign_type *e, PyObject *obj, gh_foreign *f)
{
    const gh_dl_exchange_api *api = e->api;
    gh_dl_managed_versioned *m = NULL;
    gh_dl_tensor t;
    int rc;

    memset(&t, 0, sizeof(t));
    rc = api->dltensor_from_py_object_no_sync != NULL
             ? api->dltensor_from_py_object_no_sync(obj, &t)
             : api->managed_tensor_from_py_object_no_sync(obj, &m);
    if (rc != 0) {
        if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_RuntimeError, "%s's DLPack exchange API gave no tensor",
                         Py_TYPE(obj)->tp_name);
        }
        return -1;
    }
    if (m != NULL) {
        t = m->dl_tensor;
        f->readonly = (m->flags & GH_DL_FLAG_READ_ONLY) != 0;
    }
    rc = gh_foreign_fill_dl(u, obj, &t, f);
    if (m != NULL && m->deleter != NULL) {
        m->deleter(m); /* shape and strides are copied; the object keeps the memory */
    }
    if (rc != 0) {
        return rc;
    }
    f->source = GH_FROM_EXCHANGE;
    return current_stream(u, api, f->device, f, ask_exchange);
}

/* ---- CuPy's ndarray: its public attributes ---- */

static int
ask_cupy(const void *key, int device, CUstream *out)
{
    const gh_foreign_type *e = key;
    PyObject *s = PyObject_CallNoArgs(e->stream_fn), *ptr;
    void *h;
    (void)device;
    if (s == NULL) {
        return -1;
    }
    ptr = PyObject_GetAttrString(s, "ptr");
    Py_DECREF(s);
    if (ptr == NULL) {
        return -1;
    }
    h = PyLong_AsVoidPtr(ptr);
    Py_DECREF(ptr);
    if (h == NULL && PyErr_Occurred()) {
        return -1;
    }
    *out = (CUstream)h;
    return 0;
}

/* A tuple of ndim ints into out; -1 with TypeError naming `what` otherwise. */
int
gh_foreign_int_tuple(const gh_foreign_use *u, PyObject *obj, PyObject *tuple, int ndim,
                     Py_ssize_t *out, const char *what)
{
    if (!PyTuple_Check(tuple) && !PyList_Check(tuple)) {
        return gh_foreign_raise(u, PyExc_TypeError, "%s's %s must be a tuple of ints, not %.100s",
                                Py_TYPE(obj)->tp_name, what, Py_TYPE(tuple)->tp_name);
    }
    if (ndim >= 0 && PySequence_Fast_GET_SIZE(tuple) != ndim) {
        return gh_foreign_raise(u, PyExc_ValueError, "%s's %s has %zd items for %d dimensions",
                                Py_TYPE(obj)->tp_name, what, PySequence_Fast_GET_SIZE(tuple), ndim);
    }
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(tuple); i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(tuple, i);
        if (!PyLong_Check(item)) {
            return gh_foreign_raise(u, PyExc_TypeError, "%s's %s must hold ints, not %.100s",
                                    Py_TYPE(obj)->tp_name, what, Py_TYPE(item)->tp_name);
        }
        out[i] = PyLong_AsSsize_t(item);
        if (out[i] == -1 && PyErr_Occurred()) {
            return -1;
        }
    }
    return 0;
}

/* An int attribute of obj (a Py_ssize_t); -1 with an error. */
static Py_ssize_t
int_attr(gh_state *st, PyObject *obj, int n)
{
    PyObject *v = PyObject_GetAttr(obj, gh_interop_name(st, n));
    Py_ssize_t x = v ? PyLong_AsSsize_t(v) : -1;
    Py_XDECREF(v);
    return x;
}

/* A CuPy array's layout: from its size and contiguity flag where it is 0-d or a C-ordered
   vector (no tuple made), else from its shape and strides. */
static int
cupy_layout(gh_foreign_use *u, PyObject *obj, gh_foreign *f)
{
    gh_state *st = u->st;
    PyObject *v = PyObject_GetAttr(obj, gh_interop_name(st, N_DTYPE));
    Py_ssize_t ndim;
    int contiguous;
    if (v == NULL || !PyArray_DescrCheck(v)) {
        Py_XDECREF(v);
        return PyErr_Occurred()
                   ? -1
                   : gh_foreign_raise(u, PyExc_TypeError, "%s's dtype is not a NumPy dtype",
                                      Py_TYPE(obj)->tp_name);
    }
    f->descr = v;
    f->itemsize = PyDataType_ELSIZE((PyArray_Descr *)v);
    if ((ndim = int_attr(st, obj, N_NDIM)) < 0 || ndim > GH_MAXDIMS) {
        return PyErr_Occurred() ? -1
                                : gh_foreign_raise(u, PyExc_TypeError, "%s has %zd dimensions",
                                                   Py_TYPE(obj)->tp_name, ndim);
    }
    f->ndim = (int)ndim;
    if (ndim <= 1) {
        v = PyObject_GetAttr(obj, gh_interop_name(st, N_C_CONTIGUOUS));
        contiguous = v ? PyObject_IsTrue(v) : -1;
        Py_XDECREF(v);
        if (contiguous < 0) {
            return -1;
        }
        if (ndim == 0 || contiguous) {
            if (ndim == 1 && (f->shape[0] = int_attr(st, obj, N_SIZE)) < 0) {
                return -1;
            }
            f->strides[0] = f->itemsize;
            return 0;
        }
    }
    v = PyObject_GetAttr(obj, gh_interop_name(st, N_SHAPE));
    if (v == NULL || gh_foreign_int_tuple(u, obj, v, f->ndim, f->shape, "shape") < 0) {
        Py_XDECREF(v);
        return -1;
    }
    Py_SETREF(v, PyObject_GetAttr(obj, gh_interop_name(st, N_STRIDES)));
    if (v == NULL || gh_foreign_int_tuple(u, obj, v, f->ndim, f->strides, "strides") < 0) {
        Py_XDECREF(v);
        return -1;
    }
    Py_DECREF(v);
    return 0;
}

static int
read_cupy(gh_foreign_use *u, const gh_foreign_type *e, PyObject *obj, gh_foreign *f)
{
    gh_state *st = u->st;
    PyObject *data = PyObject_GetAttr(obj, gh_interop_name(st, N_DATA)), *v = NULL;
    void *ptr;
    int rc = -1;

    if (data == NULL || (v = PyObject_GetAttr(data, gh_interop_name(st, N_PTR))) == NULL) {
        goto done;
    }
    ptr = PyLong_AsVoidPtr(v);
    if (ptr == NULL && PyErr_Occurred()) {
        goto done;
    }
    f->ptr = (CUdeviceptr)(uintptr_t)ptr;
    f->source = GH_FROM_CUPY;
    if (st->devices != NULL && PyList_GET_SIZE(st->devices) > 1) { /* one device: its own */
        Py_ssize_t dev = int_attr(st, data, N_DEVICE_ID);
        if (dev < 0) {
            goto done;
        }
        f->device = (int)dev;
    }
    if (u->need == GH_FOREIGN_LAYOUT && cupy_layout(u, obj, f) < 0) {
        goto done;
    }
    rc = current_stream(u, e, f->device, f, ask_cupy);
done:
    Py_XDECREF(v);
    Py_XDECREF(data);
    return rc;
}

/* ---- __dlpack__ ---- */

/* The __dlpack__ stream argument for the use's stream. */
static PyObject *
dlpack_stream_arg(const gh_foreign_use *u)
{
    if (u->consumer == NULL || u->consumer == CU_STREAM_LEGACY) {
        return PyLong_FromLong(1);
    }
    return PyLong_FromVoidPtr((void *)u->consumer);
}

/* obj.__dlpack__(stream=..., max_version=(1, 0)), or without max_version for a producer
   older than DLPack 1.0.  New reference or NULL. */
static PyObject *
call_dlpack(gh_foreign_use *u, PyObject *obj)
{
    gh_state *st = u->st;
    PyObject *stream = dlpack_stream_arg(u), *version = Py_BuildValue("(ii)", 1, 0);
    PyObject *kw =
        Py_BuildValue("(OO)", gh_interop_name(st, N_STREAM), gh_interop_name(st, N_MAX_VERSION));
    PyObject *res = NULL;
    if (stream != NULL && version != NULL && kw != NULL) {
        PyObject *args[3] = {obj, stream, version};
        res = PyObject_VectorcallMethod(gh_interop_name(st, N_DLPACK), args,
                                        1 | PY_VECTORCALL_ARGUMENTS_OFFSET, kw);
        if (res == NULL && PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            Py_SETREF(kw, Py_BuildValue("(O)", gh_interop_name(st, N_STREAM)));
            res = kw ? PyObject_VectorcallMethod(gh_interop_name(st, N_DLPACK), args,
                                                 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, kw)
                     : NULL;
        }
    }
    Py_XDECREF(stream);
    Py_XDECREF(version);
    Py_XDECREF(kw);
    return res;
}

PyObject *
gh_foreign_dlpack_capsule(gh_state *st, PyObject *obj, CUstream consumer)
{
    gh_foreign_use u;
    gh_foreign_use_init(&u, st, NULL, consumer, GH_FOREIGN_LAYOUT);
    return call_dlpack(&u, obj);
}

const gh_dl_exchange_api *
gh_foreign_exchange_api(gh_state *st, PyObject *obj)
{
    gh_foreign_type *e = foreign_type(st, Py_TYPE(obj));
    return (e != NULL && e->kind == GH_FROM_EXCHANGE) ? e->api : NULL;
}

/* The DLPack device type obj says it is on (__dlpack_device__), or -1 (cannot tell). */
static int
dlpack_device_type(PyObject *obj)
{
    PyObject *dev = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
    long t = -1;
    if (dev != NULL && PyTuple_Check(dev) && PyTuple_GET_SIZE(dev) == 2) {
        t = PyLong_AsLong(PyTuple_GET_ITEM(dev, 0));
    }
    Py_XDECREF(dev);
    PyErr_Clear();
    return (int)t;
}

static int
read_capsule(gh_foreign_use *u, PyObject *obj, PyObject *capsule, gh_foreign *f)
{
    gh_dl_tensor *t;
    int rc;
    if (gh_dlpack_take(u->st, capsule, &t, &f->keep) < 0) {
        return -1;
    }
    if ((rc = gh_foreign_fill_dl(u, obj, t, f)) != 0) {
        return rc;
    }
    f->readonly = (char)gh_dlpack_owner_readonly(f->keep);
    f->source = GH_FROM_DLPACK;
    return 0;
}

static int
read_dlpack(gh_foreign_use *u, PyObject *obj, gh_foreign *f)
{
    PyObject *capsule = call_dlpack(u, obj);
    int rc;
    if (capsule == NULL) {
        PyObject *exc_type, *exc, *tb; /* kept while asking where the tensor is */
        int type;
        PyErr_Fetch(&exc_type, &exc, &tb);
        type = dlpack_device_type(obj);
        PyErr_Restore(exc_type, exc, tb);
        if (type > 0 && type != GH_DL_CUDA && type != GH_DL_CUDA_MANAGED) {
            PyErr_Clear();
            if (u->host_ok) {
                return 1;
            }
            return gh_foreign_raise(
                u, PyExc_TypeError,
                "%s is in %s (DLPack device type %d), not device memory; move it "
                "to the GPU first",
                Py_TYPE(obj)->tp_name, dl_device_name(type), type);
        }
        return -1;
    }
    rc = read_capsule(u, obj, capsule, f);
    Py_DECREF(capsule);
    return rc; /* the producer ordered its work before the stream it was given */
}

/* ---- any object ---- */

/* Check the CuPy reading of a type's first object against its CUDA array interface; a
   type whose two readings differ is read through the interface from then on. */
static int
check_cupy(gh_foreign_use *u, gh_foreign_type *e, PyObject *obj, gh_foreign *f)
{
    gh_foreign_use cu;
    gh_foreign c;
    PyObject *dict;
    int same;
    e->checked = 1;
    memset(&c, 0, sizeof(c));
    gh_foreign_use_init(&cu, u->st, u->context, u->consumer, GH_FOREIGN_LAYOUT);
    dict = PyObject_GetAttr(obj, gh_interop_name(u->st, N_CAI));
    if (dict == NULL || gh_foreign_read_cai(&cu, obj, dict, &c) < 0) {
        Py_XDECREF(dict);
        gh_foreign_release(&c);
        return -1;
    }
    Py_DECREF(dict);
    same = c.ptr == f->ptr &&
           (u->need != GH_FOREIGN_LAYOUT ||
            (c.ndim == f->ndim && memcmp(c.shape, f->shape, sizeof(Py_ssize_t) * c.ndim) == 0 &&
             PyArray_EquivTypes((PyArray_Descr *)c.descr, (PyArray_Descr *)f->descr)));
    for (int i = 0; same && u->need == GH_FOREIGN_LAYOUT && i < c.ndim; i++) {
        same = c.shape[i] <= 1 || c.strides[i] == f->strides[i]; /* extents of 1: any */
    }
    gh_foreign_release(&c);
    if (!same) {
        e->kind = GH_FROM_CAI;
    }
    return same;
}

static int read_any(gh_foreign_use *u, PyObject *obj, gh_foreign *f);

int
gh_foreign_read(gh_foreign_use *u, PyObject *obj, gh_foreign *f)
{
    int rc = read_any(u, obj, f);
    if (rc != 1) {
        gh_foreign_release(f); /* what a failed or empty read took: nothing to release after */
    }
    return rc;
}

static int
read_any(gh_foreign_use *u, PyObject *obj, gh_foreign *f)
{
    gh_foreign_type *e = foreign_type(u->st, Py_TYPE(obj));
    PyObject *dict;
    int rc;

    memset(f, 0, offsetof(gh_foreign, shape));
    f->obj = obj;
    f->device = -1;
    if (e == NULL) {
        return -1;
    }
    f->has_dlpack = e->has_dlpack || e->kind == GH_FROM_EXCHANGE;
    f->numba_typed = e->numba_typed;
    switch (e->kind) {
        case GH_FROM_EXCHANGE:
            rc = read_exchange(u, e, obj, f);
            return rc < 0 ? -1 : rc == 0 ? 1 : 2;
        case GH_FROM_CUPY:
            if (read_cupy(u, e, obj, f) < 0) {
                return -1;
            }
            if (e->checked || (rc = check_cupy(u, e, obj, f)) == 1) {
                return 1;
            }
            if (rc < 0) {
                return -1;
            }
            gh_foreign_release(f);
            memset(f, 0, offsetof(gh_foreign, shape));
            f->obj = obj;
            f->device = -1;
            f->has_dlpack = e->has_dlpack;
            break; /* read it through its interface */
        default:
            break;
    }
    dict = PyObject_GetAttr(obj, gh_interop_name(u->st, N_CAI));
    if (dict == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
            return -1; /* the exporter refused (e.g. a tensor that requires grad) */
        }
        PyErr_Clear();
        if (!e->has_dlpack) {
            return 0;
        }
        rc = read_dlpack(u, obj, f);
        return rc < 0 ? -1 : rc == 0 ? 1 : 2;
    }
    rc = gh_foreign_read_cai(u, obj, dict, f);
    Py_DECREF(dict);
    return rc < 0 ? -1 : 1;
}

/* ---- ordering ---- */

static int
is_legacy(CUstream s)
{
    return s == NULL || s == CU_STREAM_LEGACY;
}

/* The context of device `ordinal` (made and retained on first use). */
static gh_context *
device_context(gh_state *st, int ordinal)
{
    gh_device *dev = gh_device_get(st, ordinal);
    gh_context *ctx = dev ? gh_context_of(st, dev) : NULL;
    return (ctx == NULL || gh_context_activate(ctx) < 0) ? NULL : ctx;
}

/* The use's context: its own, else the current one (borrowed). */
static gh_context *
use_context(gh_foreign_use *u)
{
    if (u->context == NULL) {
        gh_context *ctx = gh_current_context(u->st, -1);
        if (ctx == NULL) {
            return NULL;
        }
        u->context = ctx; /* the current one: alive as long as its Device, held by the state */
        Py_DECREF(ctx);
    }
    return u->context;
}

/* CudaDriverError: the exporter's stream `f->producer` is of context `owner`, not `ctx`'s,
   where the array is (gh_stream_check_device's message; "another context's" where `owner`
   is no device's primary context gpuhost knows).  -1. */
static int
raise_producer_device(gh_foreign_use *u, const gh_foreign *f, gh_context *ctx, CUcontext owner)
{
    PyObject *prefix = use_prefix(u);
    gh_context *pctx = NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(u->st->devices); i++) {
        gh_device *dev = (gh_device *)PyList_GET_ITEM(u->st->devices, i);
        if ((PyObject *)dev != Py_None && dev->context != NULL &&
            ((gh_context *)dev->context)->handle == owner) {
            pctx = (gh_context *)dev->context;
        }
    }
    if (prefix == NULL) {
        return -1;
    }
    if (pctx != NULL) {
        gh_stream_check_device(pctx, ctx, "%Uthe array exported with stream %p is", prefix,
                               (void *)f->producer);
    }
    else {
        gh_raise(GH_EXC_CUDA_DRIVER,
                 "%Uthe array exported with stream %p is on device %d but the stream is "
                 "another context's",
                 prefix, (void *)f->producer, ctx->device->id);
    }
    Py_DECREF(prefix);
    return -1;
}

/* CudaDriverError if an exporter's stream is of another context than `ctx`: only asked
   where there are several devices (one device's streams all share its primary context). */
static int
check_producer_context(gh_foreign_use *u, const gh_foreign *f, gh_context *ctx)
{
    CUcontext owner = NULL;
    CUresult res;
    if (f->producer == CU_STREAM_LEGACY || f->producer == CU_STREAM_PER_THREAD ||
        u->st->devices == NULL || PyList_GET_SIZE(u->st->devices) < 2) {
        return 0;
    }
    res = gh_cu.StreamGetCtx(f->producer, &owner);
    if (res != CUDA_SUCCESS || owner == ctx->handle) {
        return gh_check(res, GH_CU_StreamGetCtx);
    }
    return raise_producer_device(u, f, ctx, owner);
}

int
gh_foreign_order(gh_foreign_use *u, const gh_foreign *f)
{
    gh_context *cctx, *pctx;
    if (!f->has_producer || f->producer == u->consumer ||
        (is_legacy(f->producer) && is_legacy(u->consumer))) {
        return 0;
    }
    for (int i = 0; i < u->n_ordered; i++) {
        if (u->ordered[i] == f->producer) {
            return 0;
        }
    }
    if ((cctx = use_context(u)) == NULL) {
        return -1;
    }
    pctx =
        f->device >= 0 && f->device != cctx->device->id ? device_context(u->st, f->device) : cctx;
    if (pctx == NULL || check_producer_context(u, f, pctx) < 0 ||
        gh_stream_order_after(pctx, f->producer, cctx, u->consumer) < 0) {
        return -1;
    }
    if (u->n_ordered < (int)(sizeof(u->ordered) / sizeof(u->ordered[0]))) {
        u->ordered[u->n_ordered++] = f->producer;
    }
    return 0;
}

/* ---- module state ---- */

void
gh_interop_clear(gh_state *st)
{
    for (int i = 0; i < st->n_foreign_types; i++) {
        type_entry_clear(&st->foreign_types[i]);
    }
    st->n_foreign_types = 0;
    Py_CLEAR(st->typestrs);
    for (int i = 0; i < N__COUNT; i++) {
        Py_CLEAR(st->interop_names[i]);
    }
}

int
gh_interop_traverse(gh_state *st, visitproc visit, void *arg)
{
    for (int i = 0; i < st->n_foreign_types; i++) {
        Py_VISIT(st->foreign_types[i].type);
        Py_VISIT(st->foreign_types[i].stream_fn);
    }
    Py_VISIT(st->typestrs);
    for (int i = 0; i < N__COUNT; i++) {
        Py_VISIT(st->interop_names[i]);
    }
    return 0;
}
