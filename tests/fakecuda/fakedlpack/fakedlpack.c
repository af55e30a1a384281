/* A producer of DLPack's C exchange API for the tests (PyTorch 2.10+ is the real one): the
 * extension module _fakedlpack, whose Tensor type describes memory it is told about (an
 * address, shape, strides in elements, a DLPack dtype and device) and exports it through
 * __dlpack_c_exchange_api__ (a PyCapsule of the exchange table) and __dlpack__.  The
 * table's current_work_stream answers what set_current_stream() set; calls() counts what a
 * consumer called, so a test can tell that no Python method was used.  Variants with a
 * capsule of the wrong name, of another major version, and a table without the
 * non-owning entry, exercise the consumer's checks.  Written from the DLPack header's text
 * (dmlc/dlpack, DLPackExchangeAPI), independently of gpuhost's own declarations.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    int32_t device_type, device_id;
} Device;
typedef struct {
    uint8_t code, bits;
    uint16_t lanes;
} DType;
typedef struct {
    void *data;
    Device device;
    int32_t ndim;
    DType dtype;
    int64_t *shape, *strides;
    uint64_t byte_offset;
} DLTensor;
typedef struct {
    uint32_t major, minor;
} Version;
typedef struct Managed {
    Version version;
    void *manager_ctx;
    void (*deleter)(struct Managed *);
    uint64_t flags;
    DLTensor dl_tensor;
} Managed;
typedef struct Legacy {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct Legacy *);
} Legacy;
typedef struct Header {
    Version version;
    struct Header *prev_api;
} Header;
typedef struct {
    Header header;
    void *managed_tensor_allocator;
    int (*managed_tensor_from_py_object_no_sync)(void *, Managed **);
    void *managed_tensor_to_py_object_no_sync;
    int (*dltensor_from_py_object_no_sync)(void *, DLTensor *);
    int (*current_work_stream)(int32_t, int32_t, void **);
} ExchangeAPI;

#define MAXDIMS   64
#define READ_ONLY 1ULL

typedef struct {
    PyObject_HEAD
    uintptr_t ptr;
    int ndim;
    int64_t shape[MAXDIMS], strides[MAXDIMS];
    int has_strides;
    DType dtype;
    Device device;
    int readonly;
    int fail; /* the exchange API raises for this tensor */
} Tensor;

static long n_dltensor, n_managed, n_stream, n_dlpack, n_deleted;
static void *current_stream;
static PyTypeObject *TensorType; /* the base type: the exchange API reads its instances */

/* ---- the exchange API ---- */

static void
fill(Tensor *t, DLTensor *out)
{
    out->data = (void *)t->ptr;
    out->device = t->device;
    out->ndim = t->ndim;
    out->dtype = t->dtype;
    out->shape = t->shape;
    out->strides = t->has_strides ? t->strides : NULL;
    out->byte_offset = 0;
}

static int
dltensor_from(void *obj, DLTensor *out)
{
    Tensor *t = (Tensor *)obj;
    n_dltensor++;
    if (t->fail) {
        PyErr_SetString(PyExc_RuntimeError, "fake tensor refuses to be exchanged");
        return -1;
    }
    fill(t, out);
    return 0;
}

typedef struct {
    Managed m;
    PyObject *owner;
    int64_t dims[2 * MAXDIMS];
} Block;

static void
delete_managed(Managed *m)
{
    Block *b = (Block *)m->manager_ctx;
    PyGILState_STATE g = PyGILState_Ensure();
    n_deleted++;
    Py_XDECREF(b->owner);
    PyMem_RawFree(b);
    PyGILState_Release(g);
}

static Block *
new_block(Tensor *t)
{
    Block *b = PyMem_RawCalloc(1, sizeof(Block));
    if (b == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    fill(t, &b->m.dl_tensor);
    memcpy(b->dims, t->shape, sizeof(int64_t) * t->ndim);
    memcpy(b->dims + MAXDIMS, t->strides, sizeof(int64_t) * t->ndim);
    b->m.dl_tensor.shape = b->dims;
    b->m.dl_tensor.strides = t->has_strides ? b->dims + MAXDIMS : NULL;
    b->m.version.major = 1;
    b->m.version.minor = 3;
    b->m.manager_ctx = b;
    b->m.deleter = delete_managed;
    b->m.flags = t->readonly ? READ_ONLY : 0;
    b->owner = Py_NewRef((PyObject *)t);
    return b;
}

static int
managed_from(void *obj, Managed **out)
{
    Tensor *t = (Tensor *)obj;
    Block *b;
    n_managed++;
    if (t->fail) {
        PyErr_SetString(PyExc_RuntimeError, "fake tensor refuses to be exchanged");
        return -1;
    }
    if ((b = new_block(t)) == NULL) {
        return -1;
    }
    *out = &b->m;
    return 0;
}

static int
work_stream(int32_t device_type, int32_t device_id, void **out)
{
    (void)device_id;
    n_stream++;
    *out = device_type == 2 ? current_stream : NULL;
    return 0;
}

static ExchangeAPI api_v1 = {{{1, 3}, NULL}, NULL, managed_from, NULL, dltensor_from, work_stream};
static ExchangeAPI api_v2 = {{{2, 0}, NULL}, NULL, managed_from, NULL, dltensor_from, work_stream};
static ExchangeAPI api_owning = {{{1, 3}, NULL}, NULL, managed_from, NULL, NULL, work_stream};

/* ---- Tensor ---- */

static int
read_ints(PyObject *seq, int64_t *out, int n, const char *what)
{
    if (!PyTuple_Check(seq) || PyTuple_GET_SIZE(seq) != n) {
        PyErr_Format(PyExc_TypeError, "%s must be a tuple of %d ints", what, n);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        out[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(seq, i));
        if (out[i] == -1 && PyErr_Occurred()) {
            return -1;
        }
    }
    return 0;
}

static int
tensor_init(Tensor *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"ptr",    "shape",    "strides", "dtype",
                             "device", "readonly", "fail",    NULL};
    unsigned long long ptr;
    PyObject *shape, *strides = Py_None;
    int code = 2, bits = 32, lanes = 1, dtype_ = 2, did = 0;
    self->readonly = self->fail = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "KO|O(iii)(ii)pp", kwlist, &ptr, &shape,
                                     &strides, &code, &bits, &lanes, &dtype_, &did, &self->readonly,
                                     &self->fail)) {
        return -1;
    }
    if (!PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) > MAXDIMS) {
        PyErr_SetString(PyExc_TypeError, "shape must be a tuple of at most 64 ints");
        return -1;
    }
    self->ptr = (uintptr_t)ptr;
    self->ndim = (int)PyTuple_GET_SIZE(shape);
    self->has_strides = strides != Py_None;
    if (read_ints(shape, self->shape, self->ndim, "shape") < 0 ||
        (self->has_strides && read_ints(strides, self->strides, self->ndim, "strides") < 0)) {
        return -1;
    }
    self->dtype.code = (uint8_t)code;
    self->dtype.bits = (uint8_t)bits;
    self->dtype.lanes = (uint16_t)lanes;
    self->device.device_type = dtype_;
    self->device.device_id = did;
    return 0;
}

static void
delete_legacy(Legacy *l)
{
    Managed *m = (Managed *)l->manager_ctx;
    PyMem_RawFree(l);
    delete_managed(m);
}

static void
capsule_destructor(PyObject *cap)
{
    if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
        Managed *m = PyCapsule_GetPointer(cap, "dltensor_versioned");
        m->deleter(m);
    }
    else if (PyCapsule_IsValid(cap, "dltensor")) {
        Legacy *l = PyCapsule_GetPointer(cap, "dltensor");
        l->deleter(l);
    }
}

/* __dlpack__(stream=None, max_version=None): versioned when max_version's major is 1. */
static PyObject *
tensor_dlpack(Tensor *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
    Block *b;
    n_dlpack++;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", kwlist, &stream,
                                     &max_version, &dl_device, &copy)) {
        return NULL;
    }
    if (self->device.device_type != 2 && stream != Py_None) {
        PyErr_SetString(PyExc_BufferError, "a CPU tensor takes no stream");
        return NULL;
    }
    if ((b = new_block(self)) == NULL) {
        return NULL;
    }
    if (max_version != Py_None) {
        return PyCapsule_New(&b->m, "dltensor_versioned", capsule_destructor);
    }
    {
        Legacy *l = PyMem_RawCalloc(1, sizeof(Legacy));
        if (l == NULL) {
            delete_managed(&b->m);
            return PyErr_NoMemory();
        }
        l->dl_tensor = b->m.dl_tensor;
        l->manager_ctx = &b->m;
        l->deleter = delete_legacy;
        return PyCapsule_New(l, "dltensor", capsule_destructor);
    }
}

static PyObject *
tensor_dlpack_device(Tensor *self, PyObject *Py_UNUSED(ignored))
{
    return Py_BuildValue("(ii)", self->device.device_type, self->device.device_id);
}

static PyMethodDef tensor_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))tensor_dlpack, METH_VARARGS | METH_KEYWORDS, NULL},
    {"__dlpack_device__", (PyCFunction)tensor_dlpack_device, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot tensor_slots[] = {
    {Py_tp_init, tensor_init},
    {Py_tp_methods, tensor_methods},
    {Py_tp_new, PyType_GenericNew},
    {0, NULL},
};

static PyType_Spec tensor_spec = {.name = "_fakedlpack.Tensor",
                                  .basicsize = sizeof(Tensor),
                                  .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
                                  .slots = tensor_slots};

/* ---- module ---- */

static PyObject *
set_current_stream(PyObject *m, PyObject *arg)
{
    (void)m;
    current_stream = PyLong_AsVoidPtr(arg);
    if (current_stream == NULL && PyErr_Occurred()) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
calls(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    (void)m;
    return Py_BuildValue("{s:l,s:l,s:l,s:l,s:l}", "dltensor", n_dltensor, "managed", n_managed,
                         "stream", n_stream, "dlpack", n_dlpack, "deleted", n_deleted);
}

static PyMethodDef module_methods[] = {
    {"set_current_stream", set_current_stream, METH_O, NULL},
    {"calls", calls, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, .m_name = "_fakedlpack", .m_size = -1,
                                       .m_methods = module_methods};

/* A subclass of Tensor whose __dlpack_c_exchange_api__ is a capsule of `api` named `cname`. */
static int
add_variant(PyObject *m, const char *name, ExchangeAPI *api, const char *cname)
{
    PyObject *cap = PyCapsule_New(api, cname, NULL);
    PyObject *bases = PyTuple_Pack(1, (PyObject *)TensorType);
    PyObject *dict = cap ? Py_BuildValue("{s:O}", "__dlpack_c_exchange_api__", cap) : NULL;
    PyObject *t = bases && dict
                      ? PyObject_CallFunction((PyObject *)&PyType_Type, "sOO", name, bases, dict)
                      : NULL;
    int rc = t ? PyModule_AddObjectRef(m, name, t) : -1;
    Py_XDECREF(t);
    Py_XDECREF(dict);
    Py_XDECREF(bases);
    Py_XDECREF(cap);
    return rc;
}

PyMODINIT_FUNC PyInit__fakedlpack(void);

PyMODINIT_FUNC
PyInit__fakedlpack(void)
{
    PyObject *m = PyModule_Create(&moduledef), *cap;
    if (m == NULL) {
        return NULL;
    }
    TensorType = (PyTypeObject *)PyType_FromSpec(&tensor_spec);
    cap = PyCapsule_New(&api_v1, "dlpack_exchange_api", NULL);
    if (TensorType == NULL || cap == NULL ||
        PyObject_SetAttrString((PyObject *)TensorType, "__dlpack_c_exchange_api__", cap) < 0 ||
        PyModule_AddObjectRef(m, "Tensor", (PyObject *)TensorType) < 0 ||
        add_variant(m, "WrongNameTensor", &api_v1, "not_dlpack") < 0 ||
        add_variant(m, "Version2Tensor", &api_v2, "dlpack_exchange_api") < 0 ||
        add_variant(m, "OwningOnlyTensor", &api_owning, "dlpack_exchange_api") < 0) {
        Py_XDECREF(cap);
        Py_DECREF(m);
        return NULL;
    }
    Py_DECREF(cap);
    return m;
}
