/* Foreign device arrays as gpuhost DeviceArrays, over the same memory (no copy): the
 * public from_cuda_array_interface / as_cuda_array / from_dlpack / dlpack_import, the views
 * copies and gpuhost.jit's slow path take of other libraries' arrays, and the buffer
 * arguments of NCCL.  Reading them is interop.c's.
 */
#include "arrays_internal.h"

#include "interop_docs.h"

#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL gh_ARRAY_API
#include <numpy/arrayobject.h>

#include <stdio.h>

/* The context of the memory `f` describes: its device's where the exporter says, else the
   one the driver knows the address by (asked only where there are several devices), else
   the current one.  New reference or NULL. */
static gh_context *
memory_context(gh_state *st, const gh_foreign *f)
{
    int ordinal = f->device;
    gh_context *ctx;
    gh_device *dev;
    if (ordinal < 0 && f->ptr != 0 && st->devices != NULL && PyList_GET_SIZE(st->devices) > 1 &&
        gh_cu.PointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, f->ptr) !=
            CUDA_SUCCESS) {
        ordinal = -1;
    }
    if (ordinal < 0) {
        return gh_current_context(st, -1);
    }
    if ((dev = gh_device_get(st, ordinal)) == NULL || (ctx = gh_context_of(st, dev)) == NULL ||
        gh_context_activate(ctx) < 0) {
        return NULL;
    }
    return (gh_context *)Py_NewRef((PyObject *)ctx);
}

int
gh_foreign_elem(gh_foreign_use *u, PyObject *obj, gh_foreign *f, char *kind, Py_ssize_t *itemsize)
{
    static const char dl_kinds[] = {'i', 'u', 'f', 0, 'B', 'c', 'b'}; /* by DLPack type code */
    *kind = 0;
    *itemsize = 0;
    if (f->descr == NULL && f->dl.bits == 0 && f->source == GH_FROM_CUPY) {
        PyObject *v = PyObject_GetAttr(obj, gh_interop_name(u->st, N_DTYPE));
        if (v == NULL) {
            return -1;
        }
        if (!PyArray_DescrCheck(v)) {
            Py_DECREF(v);
            return 0;
        }
        f->descr = v; /* released with f */
    }
    if (f->descr != NULL) {
        *kind = ((PyArray_Descr *)f->descr)->kind;
        *itemsize = PyDataType_ELSIZE((PyArray_Descr *)f->descr);
    }
    else if (f->dl.bits != 0) {
        *kind = f->dl.code < sizeof(dl_kinds) ? dl_kinds[f->dl.code] : 0;
        *itemsize = f->dl.bits / 8;
    }
    return 0;
}

/* Raw bytes of f's item size, for a dtype NumPy lacks (new reference). */
static PyObject *
void_descr(const gh_foreign *f)
{
    char spec[32];
    PyObject *s;
    PyArray_Descr *d = NULL;
    snprintf(spec, sizeof(spec), "V%zd", f->itemsize);
    s = PyUnicode_FromString(spec);
    if (s != NULL && !PyArray_DescrConverter(s, &d)) {
        d = NULL;
    }
    Py_XDECREF(s);
    return (PyObject *)d;
}

PyObject *
gh_foreign_as_array(gh_state *st, PyObject *obj, gh_foreign *f, PyObject *stream, int void_ok)
{
    PyObject *descr, *res = NULL;
    gh_context *ctx;
    if (f->descr != NULL) {
        descr = Py_NewRef(f->descr);
    }
    else if (void_ok) {
        descr = void_descr(f);
    }
    else {
        PyErr_Format(PyExc_BufferError,
                     "%s holds DLPack dtype (code %d, %d bits), which has no NumPy equivalent",
                     Py_TYPE(obj)->tp_name, (int)f->dl.code, (int)f->dl.bits);
        return NULL;
    }
    if (descr == NULL || (ctx = memory_context(st, f)) == NULL) {
        Py_XDECREF(descr);
        return NULL;
    }
    res = gh_devicearray_new(st, ctx, ctx->generation, f->ptr, f->keep ? f->keep : obj, descr,
                             f->ndim, f->shape, f->strides, stream);
    if (res != NULL) {
        ((gh_devicearray *)res)->readonly = f->readonly;
    }
    Py_DECREF(ctx);
    Py_DECREF(descr);
    return res;
}

/* ---- the CUDA array interface ---- */

/* A DeviceArray over the memory `dict` (obj's interface, or a dict given as it is)
   describes, bound to its exporter's stream, which `sync` synchronizes first. */
static PyObject *
array_from_cai(gh_state *st, PyObject *obj, PyObject *dict, PyObject *owner, int sync)
{
    gh_foreign_use u;
    gh_foreign f;
    gh_context *ctx = NULL;
    PyObject *stream = NULL, *res = NULL;

    gh_foreign_use_init(&u, st, NULL, NULL, GH_FOREIGN_LAYOUT);
    u.any_strides = 1;
    memset(&f, 0, sizeof(f));
    if (gh_foreign_read_cai(&u, obj, dict, &f) < 0) {
        goto done;
    }
    if (f.has_producer) {
        if ((ctx = memory_context(st, &f)) == NULL ||
            (stream = gh_stream_of_handle(st, ctx, f.producer)) == NULL) {
            goto done;
        }
        if (sync && f.producer != CU_STREAM_LEGACY && f.producer != CU_STREAM_PER_THREAD) {
            PyObject *r = PyObject_CallMethod(stream, "synchronize", NULL);
            if (r == NULL) {
                goto done;
            }
            Py_DECREF(r);
        }
    }
    res = gh_foreign_as_array(st, owner, &f, stream, 0);
    if (res != NULL && owner == Py_None) {
        Py_CLEAR(((gh_devicearray *)res)->owner); /* a dict alone keeps nothing alive */
    }
done:
    Py_XDECREF(stream);
    Py_XDECREF(ctx);
    gh_foreign_release(&f);
    return res;
}

static PyObject *
mod_from_cuda_array_interface(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"desc", "owner", "sync", NULL};
    PyObject *desc, *owner = Py_None;
    int sync = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|Op:from_cuda_array_interface", kwlist, &desc,
                                     &owner, &sync)) {
        return NULL;
    }
    return array_from_cai(gh_state_of_module(module), owner == Py_None ? desc : owner, desc, owner,
                          sync);
}

static PyObject *
mod_as_cuda_array(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"obj", "sync", NULL};
    gh_state *st = gh_state_of_module(module);
    PyObject *obj, *dict, *res;
    int sync = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|p:as_cuda_array", kwlist, &obj, &sync)) {
        return NULL;
    }
    if (PyObject_TypeCheck(obj, st->DeviceArrayType)) {
        return Py_NewRef(obj);
    }
    dict = PyObject_GetAttrString(obj, "__cuda_array_interface__");
    if (dict == NULL) {
        if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Format(PyExc_TypeError, "%s does not export __cuda_array_interface__",
                         Py_TYPE(obj)->tp_name);
        }
        return NULL;
    }
    res = array_from_cai(st, obj, dict, obj, sync);
    Py_DECREF(dict);
    return res;
}

/* ---- DLPack ---- */

static int
check_cuda_device(int type)
{
    if (type != GH_DL_CUDA && type != GH_DL_CUDA_MANAGED) {
        PyErr_Format(PyExc_BufferError,
                     "the tensor is not in CUDA device memory (DLPack device type %d): copy it "
                     "with to_device()",
                     type);
        return -1;
    }
    return 0;
}

/* A DeviceArray over a capsule's tensor (taken over: its owner keeps it). */
static PyObject *
array_from_capsule(gh_state *st, PyObject *obj, PyObject *capsule)
{
    gh_foreign_use u;
    gh_foreign f;
    gh_dl_tensor *t;
    PyObject *res = NULL;
    gh_foreign_use_init(&u, st, NULL, NULL, GH_FOREIGN_LAYOUT);
    memset(&f, 0, sizeof(f));
    if (gh_dlpack_take(st, capsule, &t, &f.keep) == 0 &&
        check_cuda_device(t->device.device_type) == 0 && gh_foreign_fill_dl(&u, obj, t, &f) == 0) {
        f.readonly = (char)gh_dlpack_owner_readonly(f.keep);
        res = gh_foreign_as_array(st, obj, &f, NULL, 0);
    }
    gh_foreign_release(&f);
    return res;
}

static PyObject *
mod_dlpack_import(PyObject *module, PyObject *capsule)
{
    return array_from_capsule(gh_state_of_module(module), capsule, capsule);
}

/* from_dlpack through a type's exchange API: an owning tensor, the legacy default stream
   ordered after the producer's current one (what __dlpack__(stream=1) would have done). */
static PyObject *
from_exchange(gh_state *st, PyObject *obj, const gh_dl_exchange_api *api)
{
    gh_dl_managed_versioned *m = NULL;
    gh_foreign_use u;
    gh_foreign f;
    PyObject *res = NULL;
    void *producer = NULL;

    gh_foreign_use_init(&u, st, NULL, NULL, GH_FOREIGN_LAYOUT);
    memset(&f, 0, sizeof(f));
    if (api->managed_tensor_from_py_object_no_sync(obj, &m) != 0) {
        return PyErr_Occurred()
                   ? NULL
                   : PyErr_Format(PyExc_RuntimeError, "%s's DLPack exchange API gave no tensor",
                                  Py_TYPE(obj)->tp_name);
    }
    if ((f.keep = gh_dlpack_own(st, m)) == NULL ||
        check_cuda_device(m->dl_tensor.device.device_type) < 0 ||
        gh_foreign_fill_dl(&u, obj, &m->dl_tensor, &f) < 0) {
        goto done;
    }
    f.readonly = (m->flags & GH_DL_FLAG_READ_ONLY) != 0;
    if (api->current_work_stream(GH_DL_CUDA, f.device, &producer) != 0) {
        goto done;
    }
    f.has_producer = 1;
    f.producer = producer ? (CUstream)producer : CU_STREAM_LEGACY;
    u.consumer = CU_STREAM_LEGACY;
    if (gh_foreign_order(&u, &f) == 0) {
        res = gh_foreign_as_array(st, obj, &f, NULL, 0);
    }
done:
    gh_foreign_release(&f);
    return res;
}

static PyObject *
mod_from_dlpack(PyObject *module, PyObject *obj)
{
    gh_state *st = gh_state_of_module(module);
    const gh_dl_exchange_api *api;
    PyObject *capsule, *res;

    if (PyObject_TypeCheck(obj, st->DeviceArrayType)) {
        return Py_NewRef(obj);
    }
    if ((api = gh_foreign_exchange_api(st, obj)) != NULL) {
        if (api->managed_tensor_from_py_object_no_sync != NULL) {
            return from_exchange(st, obj, api);
        }
    }
    else if (PyErr_Occurred()) {
        return NULL;
    }
    if (!PyObject_HasAttrString(obj, "__dlpack__")) {
        return PyErr_Format(PyExc_TypeError, "%s does not export __dlpack__",
                            Py_TYPE(obj)->tp_name);
    }
    if (PyObject_HasAttrString(obj, "__dlpack_device__")) {
        PyObject *dev = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
        long type = -1;
        if (dev == NULL) {
            return NULL;
        }
        if (PyTuple_Check(dev) && PyTuple_GET_SIZE(dev) == 2) {
            type = PyLong_AsLong(PyTuple_GET_ITEM(dev, 0));
        }
        Py_DECREF(dev);
        if ((type == -1 && PyErr_Occurred()) || check_cuda_device((int)type) < 0) {
            return NULL;
        }
    }
    capsule = gh_foreign_dlpack_capsule(st, obj, CU_STREAM_LEGACY);
    if (capsule == NULL) {
        return NULL;
    }
    res = array_from_capsule(st, obj, capsule);
    Py_DECREF(capsule);
    return res;
}

/* ---- views for copies and launches ---- */

PyObject *
gh_foreign_device_array(gh_state *st, PyObject *obj, PyObject *stream, const char *who,
                        const char *what)
{
    gh_stream_ref ref;
    gh_foreign_use u;
    gh_foreign f;
    PyObject *res = NULL, *name = NULL;
    int r;

    if (PyObject_TypeCheck(obj, st->DeviceArrayType)) {
        return Py_NewRef(obj);
    }
    what = what ? what : "the argument";
    if (PyArray_Check(obj) && !PyObject_HasAttrString(obj, "__cuda_array_interface__")) {
        return PyErr_Format(PyExc_TypeError,
                            "%s%s%s is a host (numpy) array; it needs device memory: copy it "
                            "with gpuhost.to_device() first",
                            who ? who : "", who ? "(): " : "", what);
    }
    if (gh_stream_resolve(st, stream, &ref) < 0 ||
        (who != NULL && (name = PyUnicode_FromString(who)) == NULL)) {
        return NULL;
    }
    gh_foreign_use_init(&u, st, ref.context, ref.handle, GH_FOREIGN_LAYOUT);
    u.who = name;
    u.what = what;
    memset(&f, 0, sizeof(f));
    r = gh_foreign_read(&u, obj, &f);
    if (r == 0) {
        PyErr_Format(PyExc_TypeError,
                     "%s%s%s must be a device array (a gpuhost DeviceArray, or an object "
                     "exporting __cuda_array_interface__ or DLPack), not %s",
                     who ? who : "", who ? "(): " : "", what, Py_TYPE(obj)->tp_name);
    }
    if (r == 1 && gh_foreign_order(&u, &f) == 0) {
        res = gh_foreign_as_array(st, obj, &f, NULL, 0);
    }
    gh_foreign_release(&f);
    Py_XDECREF(name);
    return res;
}

/* _foreign_array(obj, stream=None, *, void_ok=False, host_ok=False) */
static PyObject *
mod_foreign_array(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"obj", "stream", "void_ok", "host_ok", NULL};
    gh_state *st = gh_state_of_module(module);
    PyObject *obj, *stream = Py_None, *res = NULL;
    gh_stream_ref ref;
    gh_foreign_use u;
    gh_foreign f;
    int void_ok = 0, host_ok = 0, r;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O$pp:_foreign_array", kwlist, &obj, &stream,
                                     &void_ok, &host_ok)) {
        return NULL;
    }
    if (PyObject_TypeCheck(obj, st->DeviceArrayType)) {
        return Py_NewRef(obj);
    }
    if (gh_stream_resolve(st, stream, &ref) < 0) {
        return NULL;
    }
    gh_foreign_use_init(&u, st, ref.context, ref.handle, GH_FOREIGN_LAYOUT);
    u.host_ok = host_ok;
    u.any_strides = 1;
    memset(&f, 0, sizeof(f));
    r = gh_foreign_read(&u, obj, &f);
    if (r == 0 || r == 2) {
        if (host_ok) {
            gh_foreign_release(&f);
            Py_RETURN_NONE; /* host data */
        }
        PyErr_Format(PyExc_TypeError,
                     "%s is not a device array (a gpuhost DeviceArray, or an object exporting "
                     "__cuda_array_interface__ or DLPack)",
                     Py_TYPE(obj)->tp_name);
    }
    if (r == 1 && gh_foreign_order(&u, &f) == 0) {
        res = gh_foreign_as_array(st, obj, &f, NULL, void_ok);
    }
    gh_foreign_release(&f);
    return res;
}

/* _foreign_info(obj, stream=None): what the C reading of obj gives, as a dict (tests). */
static PyObject *
mod_foreign_info(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"obj", "stream", "need", NULL};
    gh_state *st = gh_state_of_module(module);
    PyObject *obj, *stream = Py_None, *shape = NULL, *strides = NULL, *res = NULL;
    gh_stream_ref ref;
    gh_foreign_use u;
    gh_foreign f;
    int need = GH_FOREIGN_LAYOUT, r;
    char layout[2] = {0, 0};

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|Oi:_foreign_info", kwlist, &obj, &stream,
                                     &need) ||
        gh_stream_resolve(st, stream, &ref) < 0) {
        return NULL;
    }
    gh_foreign_use_init(&u, st, ref.context, ref.handle, need);
    memset(&f, 0, sizeof(f));
    r = gh_foreign_read(&u, obj, &f);
    if (r <= 0) {
        return r < 0 ? NULL : Py_NewRef(Py_None);
    }
    if (gh_foreign_order(&u, &f) < 0 || (shape = PyTuple_New(f.ndim)) == NULL ||
        (strides = PyTuple_New(f.ndim)) == NULL) {
        goto done;
    }
    for (int i = 0; i < f.ndim; i++) {
        PyTuple_SET_ITEM(shape, i, PyLong_FromSsize_t(f.shape[i]));
        PyTuple_SET_ITEM(strides, i, PyLong_FromSsize_t(f.strides[i]));
    }
    layout[0] = need == GH_FOREIGN_LAYOUT ? gh_foreign_numba_layout(&f) : 0;
    res =
        Py_BuildValue("{s:K,s:i,s:O,s:O,s:n,s:O,s:(iii),s:C,s:O,s:i,s:N,s:s,s:O}", "ptr",
                      (unsigned long long)f.ptr, "ndim", f.ndim, "shape", shape, "strides", strides,
                      "itemsize", f.itemsize, "dtype", f.descr ? f.descr : Py_None, "dl",
                      (int)f.dl.code, (int)f.dl.bits, (int)f.dl.lanes, "source", (int)f.source,
                      "readonly", f.readonly ? Py_True : Py_False, "device", f.device, "producer",
                      f.has_producer ? PyLong_FromVoidPtr((void *)f.producer) : Py_NewRef(Py_None),
                      "layout", layout, "keeps", f.keep ? Py_True : Py_False);
done:
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    gh_foreign_release(&f);
    return res;
}

PyMethodDef gh_interop_methods[] = {
    {"from_cuda_array_interface", (PyCFunction)(void (*)(void))mod_from_cuda_array_interface,
     METH_VARARGS | METH_KEYWORDS, interop_from_cuda_array_interface_doc},
    {"as_cuda_array", (PyCFunction)(void (*)(void))mod_as_cuda_array, METH_VARARGS | METH_KEYWORDS,
     interop_as_cuda_array_doc},
    {"from_dlpack", mod_from_dlpack, METH_O, interop_from_dlpack_doc},
    {"dlpack_import", mod_dlpack_import, METH_O, interop_dlpack_import_doc},
    {"_foreign_array", (PyCFunction)(void (*)(void))mod_foreign_array, METH_VARARGS | METH_KEYWORDS,
     interop__foreign_array_doc},
    {"_foreign_info", (PyCFunction)(void (*)(void))mod_foreign_info, METH_VARARGS | METH_KEYWORDS,
     interop__foreign_info_doc},
    {NULL, NULL, 0, NULL},
};
