/* Device: one CUDA device (CUdevice), numba.cuda's Device.
 *
 * One Device object per ordinal and module, made on first use and kept in the module
 * state.  Fixed facts (name, compute capability, UUID, PCI id, memory) are read once;
 * every CU_DEVICE_ATTRIBUTE_* is read on demand, by name or number, and as attributes
 * spelled as numba spells them (dev.MAX_THREADS_PER_BLOCK).
 */
#include "core_internal.h"

#include "cuda_attrs.h"
#include "device_docs.h"

#include <string.h>

typedef struct {
    const char *name;
    int value;
} attr_entry;

static const attr_entry attr_table[] = {
#define GH_ATTR_ENTRY(name, value) {#name, value},
    GH_DEVICE_ATTRIBUTE_LIST(GH_ATTR_ENTRY)
#undef GH_ATTR_ENTRY
};
#define ATTR_COUNT  ((int)(sizeof(attr_table) / sizeof(attr_table[0])))
#define ATTR_PREFIX "CU_DEVICE_ATTRIBUTE_"

/* The attribute's number, or -1 if `name` (with or without the prefix) is unknown. */
static int
attr_lookup(const char *name)
{
    if (strncmp(name, ATTR_PREFIX, sizeof(ATTR_PREFIX) - 1) == 0) {
        name += sizeof(ATTR_PREFIX) - 1;
    }
    for (int i = 0; i < ATTR_COUNT; i++) {
        if (strcmp(attr_table[i].name, name) == 0) {
            return attr_table[i].value;
        }
    }
    return -1;
}

int
gh_device_count(void)
{
    int count = 0;
    if (gh_driver_ensure() < 0 || gh_check(gh_cu.DeviceGetCount(&count), GH_CU_DeviceGetCount)) {
        return -1;
    }
    return count;
}

/* Read one attribute into *value; 0 or -1 with CudaAPIError. */
static int
read_attr(gh_device *self, int attr, int *value)
{
    return gh_check(gh_cu.DeviceGetAttribute(value, (CUdevice_attribute)attr, self->handle),
                    GH_CU_DeviceGetAttribute);
}

static PyObject *
format_uuid(const CUuuid *uuid)
{
    const unsigned char *b = (const unsigned char *)uuid->bytes;
    char text[64];
    int pos = snprintf(text, sizeof(text), "GPU-");
    for (int i = 0; i < 16; i++) {
        pos += snprintf(text + pos, sizeof(text) - pos, "%s%02x",
                        (i == 4 || i == 6 || i == 8 || i == 10) ? "-" : "", b[i]);
    }
    return PyUnicode_FromString(text);
}

/* Read the fixed facts of device `ordinal` into a new Device; NULL on error. */
static gh_device *
device_new(gh_state *st, int ordinal)
{
    char name[256], bus_id[64];
    CUuuid uuid;
    gh_device *self = PyObject_GC_New(gh_device, st->DeviceType);

    if (self == NULL) {
        return NULL;
    }
    self->id = ordinal;
    self->name = self->uuid = self->pci_bus_id = self->context = NULL;
    self->weakreflist = NULL;
    PyObject_GC_Track(self);
    if (gh_check(gh_cu.DeviceGet(&self->handle, ordinal), GH_CU_DeviceGet) ||
        gh_check(gh_cu.DeviceGetName(name, sizeof(name), self->handle), GH_CU_DeviceGetName) ||
        gh_check(gh_cu.DeviceGetUuid(&uuid, self->handle), GH_CU_DeviceGetUuid) ||
        gh_check(gh_cu.DeviceGetPCIBusId(bus_id, sizeof(bus_id), self->handle),
                 GH_CU_DeviceGetPCIBusId) ||
        gh_check(gh_cu.DeviceTotalMem(&self->total_memory, self->handle), GH_CU_DeviceTotalMem) ||
        read_attr(self, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &self->cc_major) ||
        read_attr(self, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &self->cc_minor)) {
        goto error;
    }
    name[sizeof(name) - 1] = '\0';
    bus_id[sizeof(bus_id) - 1] = '\0';
    /* The documented form has a 4-digit domain ("0000:3B:00.0", what CuPy's 13-byte buffer
       gets, and what the driver writes here too); an 8-digit one ("00000000:3B:00.0", as
       nvidia-smi shows ids) loses its 4 leading zeros (a domain past 0xFFFF keeps them). */
    if (strlen(bus_id) > 8 && bus_id[8] == ':' && strncmp(bus_id, "0000", 4) == 0) {
        memmove(bus_id, bus_id + 4, strlen(bus_id + 4) + 1);
    }
    self->name = PyUnicode_DecodeUTF8(name, strlen(name), "replace");
    self->uuid = format_uuid(&uuid);
    self->pci_bus_id = PyUnicode_FromString(bus_id);
    if (self->name == NULL || self->uuid == NULL || self->pci_bus_id == NULL) {
        goto error;
    }
    return self;
error:
    Py_DECREF(self);
    return NULL;
}

gh_device *
gh_device_get(gh_state *st, long ordinal)
{
    int count;
    PyObject *dev;

    /* The device list never changes in a process: once made, a Device is looked up. */
    if (st->devices != NULL && ordinal >= 0 && ordinal < PyList_GET_SIZE(st->devices)) {
        dev = PyList_GET_ITEM(st->devices, ordinal); /* borrowed */
        if (dev != Py_None) {
            return (gh_device *)dev;
        }
    }
    count = gh_device_count();
    if (count < 0) {
        return NULL;
    }
    if (ordinal < 0 || ordinal >= count) {
        gh_raise(GH_EXC_INVALID_DEVICE, "no CUDA device %ld: %d device%s found (ids 0 to %d)",
                 ordinal, count, count == 1 ? "" : "s", count - 1);
        return NULL;
    }
    if (st->devices == NULL) {
        st->devices = PyList_New(count);
        if (st->devices == NULL) {
            return NULL;
        }
        for (int i = 0; i < count; i++) {
            PyList_SET_ITEM(st->devices, i, Py_NewRef(Py_None));
        }
    }
    dev = (PyObject *)device_new(st, (int)ordinal);
    if (dev == NULL) {
        return NULL;
    }
    PyList_SetItem(st->devices, ordinal, dev); /* steals dev; the list keeps it alive */
    return (gh_device *)dev;
}

gh_device *
gh_device_from_object(gh_state *st, PyObject *obj, const char *what)
{
    long ordinal;
    if (Py_IS_TYPE(obj, st->DeviceType)) {
        return (gh_device *)obj;
    }
    if (Py_IS_TYPE(obj, st->ContextType)) {
        return ((gh_context *)obj)->device;
    }
    if (!PyLong_Check(obj) || PyBool_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be a Device, a Context or a device id (int), not %s",
                     what, Py_TYPE(obj)->tp_name);
        return NULL;
    }
    ordinal = PyLong_AsLong(obj);
    if (ordinal == -1 && PyErr_Occurred()) {
        return NULL;
    }
    return gh_device_get(st, ordinal);
}

int
gh_device_can_access_peer(gh_device *dev, gh_device *peer, int *out)
{
    *out = 1;
    if (dev == peer) {
        return 0; /* a device always reaches its own memory (the driver answers 0 here) */
    }
    return gh_check(gh_cu.DeviceCanAccessPeer(out, dev->handle, peer->handle),
                    GH_CU_DeviceCanAccessPeer);
}

/* ---- Python methods ---- */

static PyObject *
device_can_access_peer(gh_device *self, PyObject *other)
{
    gh_device *peer = gh_device_from_object(gh_state_of_type(Py_TYPE(self)), other, "the peer");
    int can = 0;
    if (peer == NULL || gh_device_can_access_peer(self, peer, &can) < 0) {
        return NULL;
    }
    return PyBool_FromLong(can);
}

/* An attribute number from an int or a name; -1 with an exception on bad input. */
static int
attr_from_object(PyObject *arg)
{
    if (PyUnicode_Check(arg)) {
        const char *name = PyUnicode_AsUTF8(arg);
        int attr = name ? attr_lookup(name) : -1;
        if (attr < 0 && name != NULL) {
            PyErr_Format(PyExc_ValueError,
                         "unknown device attribute %R: expected a CU_DEVICE_ATTRIBUTE_* name "
                         "such as 'MAX_THREADS_PER_BLOCK', or its number",
                         arg);
        }
        return attr;
    }
    if (PyLong_Check(arg)) {
        long value = PyLong_AsLong(arg);
        for (int i = 0; i < ATTR_COUNT && !PyErr_Occurred(); i++) {
            if (attr_table[i].value == value) {
                return (int)value;
            }
        }
        if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_ValueError, "unknown device attribute number %ld", value);
        }
        return -1;
    }
    PyErr_Format(PyExc_TypeError, "device attribute must be a name (str) or a number (int), not %s",
                 Py_TYPE(arg)->tp_name);
    return -1;
}

static PyObject *
device_get_attribute(gh_device *self, PyObject *arg)
{
    int value, attr = attr_from_object(arg);
    if (attr < 0 || read_attr(self, attr, &value) < 0) {
        return NULL;
    }
    return PyLong_FromLong(value);
}

static PyObject *
device_attributes(gh_device *self, void *Py_UNUSED(closure))
{
    PyObject *dict = PyDict_New();
    for (int i = 0; dict != NULL && i < ATTR_COUNT; i++) {
        int value;
        PyObject *item;
        CUresult res =
            gh_cu.DeviceGetAttribute(&value, (CUdevice_attribute)attr_table[i].value, self->handle);
        if (res == CUDA_ERROR_INVALID_VALUE) {
            continue; /* newer than this driver */
        }
        if (gh_check(res, GH_CU_DeviceGetAttribute) < 0) {
            Py_CLEAR(dict);
            break;
        }
        item = PyLong_FromLong(value);
        if (item == NULL || PyDict_SetItemString(dict, attr_table[i].name, item) < 0) {
            Py_XDECREF(item);
            Py_CLEAR(dict);
            break;
        }
        Py_DECREF(item);
    }
    return dict;
}

static int
is_attr_style_name(const char *s)
{
    for (; *s; s++) {
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_')) {
            return 0;
        }
    }
    return 1;
}

/* Normal attribute lookup; UPPER_CASE names fall back to the device attribute table. */
static PyObject *
device_getattro(PyObject *self, PyObject *name)
{
    PyObject *res = PyObject_GenericGetAttr(self, name);
    const char *s;
    int attr, value;

    if (res != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError)) {
        return res;
    }
    s = PyUnicode_AsUTF8(name);
    if (s == NULL || !is_attr_style_name(s) || (attr = attr_lookup(s)) < 0) {
        return NULL; /* keep the AttributeError */
    }
    PyErr_Clear();
    if (read_attr((gh_device *)self, attr, &value) < 0) {
        return NULL;
    }
    return PyLong_FromLong(value);
}

static PyObject *
device_dir(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *names = NULL, *base = NULL, *type = (PyObject *)Py_TYPE(self);
    base = PyObject_Dir(type);
    if (base == NULL) {
        return NULL;
    }
    names = PySequence_List(base);
    Py_DECREF(base);
    for (int i = 0; names != NULL && i < ATTR_COUNT; i++) {
        PyObject *s = PyUnicode_FromString(attr_table[i].name);
        if (s == NULL || PyList_Append(names, s) < 0) {
            Py_CLEAR(names);
        }
        Py_XDECREF(s);
    }
    return names;
}

static PyObject *
device_compute_capability(gh_device *self, void *Py_UNUSED(closure))
{
    return Py_BuildValue("(ii)", self->cc_major, self->cc_minor);
}

static PyObject *
device_supports_float16(gh_device *self, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(self->cc_major * 10 + self->cc_minor >= 53);
}

static PyObject *
device_supports_bfloat16(gh_device *self, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(self->cc_major >= 8);
}

static PyObject *
device_total_memory(gh_device *self, void *Py_UNUSED(closure))
{
    return PyLong_FromSize_t(self->total_memory);
}

static PyObject *
device_get_primary_context(gh_device *self, PyObject *Py_UNUSED(ignored))
{
    gh_context *ctx = gh_context_of(gh_state_of_type(Py_TYPE(self)), self);
    if (ctx == NULL || gh_context_activate(ctx) < 0) {
        return NULL;
    }
    return Py_NewRef(ctx);
}

static PyObject *
device_reset(gh_device *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"force", NULL};
    int force = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$p:reset", kwlist, &force) ||
        gh_device_reset(gh_state_of_type(Py_TYPE(self)), self, force) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
device_enter(gh_device *self, PyObject *Py_UNUSED(ignored))
{
    gh_context *ctx = gh_context_of(gh_state_of_type(Py_TYPE(self)), self);
    if (ctx == NULL || gh_context_push(ctx) < 0) {
        return NULL;
    }
    return Py_NewRef(self);
}

static PyObject *
device_exit(gh_device *self, PyObject *const *Py_UNUSED(args), Py_ssize_t Py_UNUSED(nargs))
{
    gh_context *ctx = gh_context_of(gh_state_of_type(Py_TYPE(self)), self);
    if (ctx == NULL || gh_context_pop(ctx) < 0) {
        return NULL;
    }
    Py_RETURN_FALSE;
}

static PyObject *
device_repr(gh_device *self)
{
    return PyUnicode_FromFormat("<CUDA device %d '%U'>", self->id, self->name);
}

/* (label, value) rows for the displays: what detect() prints for a device. New list or NULL. */
static PyObject *
device_display_rows(gh_device *self)
{
    PyObject *cc = NULL, *memory = NULL, *sms = NULL, *threads = NULL, *rows = NULL;

    if ((cc = PyUnicode_FromFormat("%d.%d", self->cc_major, self->cc_minor)) == NULL ||
        (memory = gh_format_bytes(self->total_memory)) == NULL ||
        (sms = PyObject_GetAttrString((PyObject *)self, "MULTIPROCESSOR_COUNT")) == NULL ||
        (threads = PyObject_GetAttrString((PyObject *)self, "MAX_THREADS_PER_BLOCK")) == NULL) {
        goto done;
    }
    rows = Py_BuildValue("[(sO)(sO)(sO)(sO)(sO)(sO)(sO)]", "name", self->name, "compute capability",
                         cc, "memory", memory, "multiprocessors", sms, "max threads per block",
                         threads, "PCI bus id", self->pci_bus_id, "UUID", self->uuid);
done:
    Py_XDECREF(cc);
    Py_XDECREF(memory);
    Py_XDECREF(sms);
    Py_XDECREF(threads);
    return rows;
}

static PyObject *
device_repr_html(gh_device *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *rows = device_display_rows(self);
    return rows ? gh_repr_html(rows, PyUnicode_FromFormat("CUDA device %d", self->id)) : NULL;
}

static PyObject *
device_repr_pretty(gh_device *self, PyObject *args)
{
    return gh_repr_pretty((PyObject *)self, args, device_display_rows(self));
}

static Py_hash_t
device_hash(gh_device *self)
{
    return (Py_hash_t)self->id + 0x9e3779b9; /* never -1 */
}

static PyObject *
device_richcompare(PyObject *a, PyObject *b, int op)
{
    int equal;
    if ((op != Py_EQ && op != Py_NE) || Py_TYPE(a) != Py_TYPE(b)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    equal = ((gh_device *)a)->id == ((gh_device *)b)->id;
    return PyBool_FromLong(op == Py_EQ ? equal : !equal);
}

static int
device_traverse(gh_device *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->context);
    return 0;
}

static int
device_clear(gh_device *self)
{
    Py_CLEAR(self->context);
    return 0;
}

static void
device_dealloc(gh_device *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (self->weakreflist != NULL) {
        PyObject_ClearWeakRefs((PyObject *)self);
    }
    device_clear(self);
    Py_XDECREF(self->name);
    Py_XDECREF(self->uuid);
    Py_XDECREF(self->pci_bus_id);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static PyMethodDef device_methods[] = {
    {"get_attribute", (PyCFunction)device_get_attribute, METH_O, device_get_attribute_doc},
    {"can_access_peer", (PyCFunction)device_can_access_peer, METH_O, device_can_access_peer_doc},
    {"get_primary_context", (PyCFunction)device_get_primary_context, METH_NOARGS,
     device_get_primary_context_doc},
    {"reset", (PyCFunction)(void (*)(void))device_reset, METH_VARARGS | METH_KEYWORDS,
     device_reset_doc},
    {"__enter__", (PyCFunction)device_enter, METH_NOARGS, device___enter___doc},
    {"__exit__", (PyCFunction)(void (*)(void))device_exit, METH_FASTCALL, device___exit___doc},
    {"__dir__", (PyCFunction)device_dir, METH_NOARGS, device___dir___doc},
    {"_repr_html_", (PyCFunction)device_repr_html, METH_NOARGS, device__repr_html__doc},
    {"_repr_pretty_", (PyCFunction)device_repr_pretty, METH_VARARGS, device__repr_pretty__doc},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef device_members[] = {
    {"id", T_INT, offsetof(gh_device, id), READONLY, device_id_doc},
    {"name", T_OBJECT, offsetof(gh_device, name), READONLY, device_name_doc},
    {"uuid", T_OBJECT, offsetof(gh_device, uuid), READONLY, device_uuid_doc},
    {"pci_bus_id", T_OBJECT, offsetof(gh_device, pci_bus_id), READONLY, device_pci_bus_id_doc},
    /* weak references, as numba hands out weakref.proxy(device) */
    {"__weaklistoffset__", T_PYSSIZET, offsetof(gh_device, weakreflist), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef device_getset[] = {
    {"compute_capability", (getter)device_compute_capability, NULL, device_compute_capability_doc,
     NULL},
    {"total_memory", (getter)device_total_memory, NULL, device_total_memory_doc, NULL},
    {"attributes", (getter)device_attributes, NULL, device_attributes_doc, NULL},
    {"supports_float16", (getter)device_supports_float16, NULL, device_supports_float16_doc, NULL},
    {"supports_bfloat16", (getter)device_supports_bfloat16, NULL, device_supports_bfloat16_doc,
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot device_slots[] = {
    {Py_tp_doc, (void *)device_doc},   {Py_tp_methods, device_methods},
    {Py_tp_members, device_members},   {Py_tp_getset, device_getset},
    {Py_tp_getattro, device_getattro}, {Py_tp_repr, device_repr},
    {Py_tp_hash, device_hash},         {Py_tp_richcompare, device_richcompare},
    {Py_tp_traverse, device_traverse}, {Py_tp_clear, device_clear},
    {Py_tp_dealloc, device_dealloc},   {0, NULL},
};

static PyType_Spec device_spec = {
    .name = "gpuhost.Device",
    .basicsize = sizeof(gh_device),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = device_slots,
};

int
gh_device_init_type(PyObject *module, gh_state *st)
{
    st->DeviceType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &device_spec, NULL);
    if (st->DeviceType == NULL) {
        return -1;
    }
    return PyModule_AddType(module, st->DeviceType);
}
