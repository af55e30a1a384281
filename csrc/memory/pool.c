/* Pool: the Python type of gpuhost's memory pools (device memory, and pinned host memory),
 * and the module functions of the default pools: device_alloc() (the allocator of device
 * arrays) and default_pool().  A Pool's methods, properties and displays; the caching,
 * giving back and obtaining of memory they use is the engine's (pool_engine.c,
 * pool_obtain.c; memory/'s private header, memory_internal.h, says how the pools work).
 */

#include "memory_internal.h"

#include <string.h>

/* ---- the Python type ---- */

static PyObject *
pool_tp_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"kind", "mode", "host_flags", "allocator", NULL};
    gh_state *st = gh_state_of_type(type);
    const char *kind = "device", *mode_name = NULL;
    unsigned int host_flags = 0;
    PyObject *allocator = Py_None;
    gh_pool_mode mode = GH_POOL_MODE_CACHE;
    gh_context *ctx;
    gh_pool *p;
    int host;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|sz$IO:Pool", kwlist, &kind, &mode_name,
                                     &host_flags, &allocator)) {
        return NULL;
    }
    if (strcmp(kind, "device") != 0 && strcmp(kind, "pinned") != 0) {
        PyErr_Format(PyExc_ValueError, "kind must be 'device' or 'pinned', not '%s'", kind);
        return NULL;
    }
    host = kind[0] == 'p';
    if (mode_name == NULL) {
        if (!host && gh_pool_mode_from_env(&mode) < 0) {
            return NULL;
        }
    }
    else {
        for (mode = GH_POOL_MODE_CACHE; mode <= GH_POOL_MODE_PLAIN; mode++) {
            if (strcmp(mode_name, gh_pool_mode_names[mode]) == 0) {
                break;
            }
        }
        if (mode > GH_POOL_MODE_PLAIN) {
            PyErr_Format(PyExc_ValueError, "mode must be 'cache', 'driver' or 'plain', not '%s'",
                         mode_name);
            return NULL;
        }
    }
    if (host && mode == GH_POOL_MODE_DRIVER) {
        PyErr_SetString(PyExc_ValueError, "pinned memory pools have no 'driver' mode");
        return NULL;
    }
    if (allocator != Py_None && (mode == GH_POOL_MODE_DRIVER || !PyCallable_Check(allocator))) {
        PyErr_SetString(PyExc_ValueError, mode == GH_POOL_MODE_DRIVER
                                              ? "a 'driver' mode pool takes no allocator"
                                              : "allocator must be callable");
        return NULL;
    }
    if (!host && host_flags != 0) {
        PyErr_SetString(PyExc_ValueError, "host_flags are for pinned pools");
        return NULL;
    }
    ctx = gh_current_context(st, -1);
    if (ctx == NULL) {
        return NULL;
    }
    p = gh_pool_new(st, type, ctx, mode, host, host_flags, allocator == Py_None ? NULL : allocator,
                    mode_name == NULL);
    Py_DECREF(ctx);
    return (PyObject *)p;
}

/* A pool with a Python allocator is tracked by the garbage collector (gh_pool_new): the
   allocator, or the memory it handed out, may refer back to the pool.  The blocks in use
   are the Allocations' (not tracked), so only the held ones are visited. */
static int
pool_traverse(gh_pool *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->context);
    Py_VISIT(self->backing);
    for (Py_ssize_t i = 0; i < self->n_lanes; i++) {
        gh_pool_lane *l = self->lanes[i];
        Py_ssize_t left = l->n_blocks;
        Py_VISIT(l->stream_obj);
        for (int bin = 0; bin < GH_POOL_N_BINS && left > 0; bin++) {
            for (gh_pool_block *b = l->bins[bin]; b != NULL; b = b->next, left--) {
                Py_VISIT(b->stream_obj);
                Py_VISIT(b->backing);
            }
        }
    }
    return 0;
}

/* Break a cycle through the pool: give the held blocks back (which drops what they keep)
   and let the allocator go; new blocks would then come from the driver.  The context
   stays: the blocks in use go back to it. */
static int
pool_clear(gh_pool *self)
{
    if (self->mode != GH_POOL_MODE_DRIVER) {
        gh_pool_release_held(self, NULL);
    }
    Py_CLEAR(self->backing);
    return 0;
}

static void
pool_dealloc(gh_pool *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    gh_state *st = gh_pool_state_of(self);
    gh_pool **link;

    PyObject_GC_UnTrack(self);
    if (self->mode != GH_POOL_MODE_DRIVER) {
        gh_pool_release_held(self, NULL); /* (a driver pool's memory stays with the driver) */
    }
    for (link = &st->pools; *link != NULL; link = &(*link)->next_pool) {
        if (*link == self) {
            *link = self->next_pool;
            break;
        }
    }
    if (self->order_event != NULL) {
        gh_release(self->context, self->generation, GH_CU_EventDestroy, self->order_event);
    }
    for (Py_ssize_t i = 0; i < self->n_lanes; i++) {
        PyMem_Free(self->lanes[i]); /* all empty now */
    }
    PyMem_Free(self->lanes);
    Py_XDECREF(self->backing);
    Py_DECREF(self->context);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

/* Parse (size, stream=None) from a vectorcall; 0 or -1. */
static int
parse_size_stream(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, const char *fname,
                  size_t *size, PyObject **stream)
{
    Py_ssize_t n, nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;

    *stream = NULL;
    if (nargs < 1 || nargs + nkw > 2) {
        PyErr_Format(PyExc_TypeError, "%s() takes a size and an optional stream", fname);
        return -1;
    }
    if (nargs == 2) {
        *stream = args[1];
    }
    for (Py_ssize_t i = 0; i < nkw; i++) {
        if (!PyUnicode_Check(PyTuple_GET_ITEM(kwnames, i)) ||
            PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), "stream") != 0 ||
            nargs == 2) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument %R", fname,
                         PyTuple_GET_ITEM(kwnames, i));
            return -1;
        }
        *stream = args[nargs + i];
    }
    n = PyLong_AsSsize_t(args[0]);
    if (n == -1 && PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Format(PyExc_TypeError, "%s() size must be an int, not %s", fname,
                         Py_TYPE(args[0])->tp_name);
        }
        return -1;
    }
    if (n < 0) {
        PyErr_Format(PyExc_ValueError, "allocation size must not be negative, not %zd", n);
        return -1;
    }
    *size = (size_t)n;
    return 0;
}

static PyObject *
pool_allocate_meth(gh_pool *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    size_t size;
    PyObject *stream;
    if (parse_size_stream(args, nargs, kwnames, "allocate", &size, &stream) < 0) {
        return NULL;
    }
    return (PyObject *)gh_pool_allocate(self, size, stream);
}

/* allocate_pointer(size, stream, cls): allocate(size, stream) wrapped in a new `cls`
   instance (a MemoryPointer: its `mem` the Allocation, its `ptr` the address), made here
   because CuPy's MemoryPool.malloc is a hot path. */
static PyObject *
pool_allocate_pointer(gh_pool *self, PyObject *const *args, Py_ssize_t nargs)
{
    gh_state *st = gh_pool_state_of(self);
    PyTypeObject *cls;
    PyObject *a, *ptr, *obj;
    size_t size;
    PyObject *stream;

    if (nargs != 3 || !PyType_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "allocate_pointer() takes a size, a stream and a class");
        return NULL;
    }
    if (parse_size_stream(args, 2, NULL, "allocate_pointer", &size, &stream) < 0) {
        return NULL;
    }
    cls = (PyTypeObject *)args[2];
    if ((a = (PyObject *)gh_pool_allocate(self, size, stream == Py_None ? NULL : stream)) == NULL) {
        return NULL;
    }
    ptr = PyLong_FromUnsignedLongLong(((gh_allocation *)a)->dptr);
    obj = ptr != NULL ? cls->tp_alloc(cls, 0) : NULL;
    if (obj != NULL && (PyObject_SetAttr(obj, st->pool_names[0], a) < 0 ||
                        PyObject_SetAttr(obj, st->pool_names[1], ptr) < 0)) {
        Py_CLEAR(obj);
    }
    Py_XDECREF(ptr);
    Py_DECREF(a);
    return obj;
}

static PyObject *
pool_free_all_blocks(gh_pool *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"stream", NULL};
    PyObject *stream = Py_None;
    gh_pool_key k;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:free_all_blocks", kwlist, &stream)) {
        return NULL;
    }
    if (stream == Py_None) {
        gh_pool_release_held(self, NULL);
    }
    else {
        if (gh_pool_key_from(self, stream, &k) < 0) {
            return NULL;
        }
        gh_pool_release_held(self, &k);
    }
    Py_RETURN_NONE;
}

static PyObject *
pool_stop_holding(gh_pool *self, PyObject *Py_UNUSED(ignored))
{
    self->holding = 0;
    gh_pool_release_held(self, NULL);
    Py_RETURN_NONE;
}

static PyObject *
pool_bin_number(gh_pool *Py_UNUSED(self), PyObject *arg)
{
    Py_ssize_t size = PyLong_AsSsize_t(arg);
    if (size == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (size < 0 || (size_t)size > GH_POOL_MAX_SIZE) {
        PyErr_Format(PyExc_ValueError, "size must be from 0 to 2**62, not %zd", size);
        return NULL;
    }
    return PyLong_FromLong(gh_pool_bin_of((size_t)size));
}

static PyObject *
pool_alloc_size(gh_pool *Py_UNUSED(self), PyObject *arg)
{
    long bin = PyLong_AsLong(arg);
    if (bin == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (bin < 0 || bin >= GH_POOL_N_BINS) {
        PyErr_Format(PyExc_ValueError, "bin must be from 0 to %d, not %ld", GH_POOL_N_BINS - 1,
                     bin);
        return NULL;
    }
    return PyLong_FromSize_t(gh_pool_bin_size((int)bin));
}

/* Driver mode: bytes the driver's pool reserves beyond what is in use; 0 if unknown. */
static size_t
driver_pool_free(gh_pool *p)
{
    cuuint64_t reserved = 0, used = 0;
    if (gh_cu.MemPoolGetAttribute(p->mempool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) !=
            CUDA_SUCCESS ||
        gh_cu.MemPoolGetAttribute(p->mempool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used) !=
            CUDA_SUCCESS) {
        return 0;
    }
    return reserved > used ? (size_t)(reserved - used) : 0;
}

static size_t
free_bytes_of(gh_pool *p)
{
    gh_pool_sync(p);
    return p->mode == GH_POOL_MODE_DRIVER ? driver_pool_free(p) : p->held_bytes;
}

static PyObject *
pool_get_used_bytes(gh_pool *self, void *Py_UNUSED(c))
{
    gh_pool_sync(self);
    return PyLong_FromSize_t(self->used_bytes);
}

static PyObject *
pool_get_free_bytes(gh_pool *self, void *Py_UNUSED(c))
{
    return PyLong_FromSize_t(free_bytes_of(self));
}

static PyObject *
pool_get_total_bytes(gh_pool *self, void *Py_UNUSED(c))
{
    size_t free_bytes = free_bytes_of(self);
    return PyLong_FromSize_t(self->used_bytes + free_bytes);
}

static PyObject *
pool_get_n_free_blocks(gh_pool *self, void *Py_UNUSED(c))
{
    gh_pool_sync(self);
    return PyLong_FromSsize_t(self->held_blocks);
}

static PyObject *
pool_get_n_used_blocks(gh_pool *self, void *Py_UNUSED(c))
{
    gh_pool_sync(self);
    return PyLong_FromSsize_t(self->used_blocks);
}

static PyObject *
pool_get_limit(gh_pool *self, void *Py_UNUSED(c))
{
    return PyLong_FromSize_t(self->limit);
}

static int
pool_set_limit(gh_pool *self, PyObject *value, void *Py_UNUSED(c))
{
    Py_ssize_t limit = 0;
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "the limit cannot be deleted; set 0 for none");
        return -1;
    }
    if (value != Py_None) {
        limit = PyLong_AsSsize_t(value);
        if (limit == -1 && PyErr_Occurred()) {
            return -1;
        }
        if (limit < 0) {
            PyErr_Format(PyExc_ValueError, "the limit must not be negative, not %zd", limit);
            return -1;
        }
    }
    self->limit = (size_t)limit;
    return 0;
}

static PyObject *
pool_get_mode(gh_pool *self, void *Py_UNUSED(c))
{
    return PyUnicode_FromString(gh_pool_mode_names[self->mode]);
}

static PyObject *
pool_get_kind(gh_pool *self, void *Py_UNUSED(c))
{
    return PyUnicode_FromString(self->host ? "pinned" : "device");
}

static PyObject *
pool_get_host_flags(gh_pool *self, void *Py_UNUSED(c))
{
    return PyLong_FromUnsignedLong(self->host_flags);
}

static PyObject *
pool_get_context(gh_pool *self, void *Py_UNUSED(c))
{
    return Py_NewRef(self->context);
}

static PyObject *
pool_get_holding(gh_pool *self, void *Py_UNUSED(c))
{
    return PyBool_FromLong(self->holding);
}

static PyObject *
pool_get_stats(gh_pool *self, void *Py_UNUSED(c))
{
    gh_pool_sync(self);
    return gh_pool_stats(self);
}

static PyObject *
pool_repr(gh_pool *self)
{
    gh_pool_sync(self);
    return PyUnicode_FromFormat("<gpuhost.Pool of %s memory on device %d, %s mode: %zu bytes in "
                                "use in %zd blocks, %zu bytes held in %zd blocks>",
                                self->host ? "pinned" : "device", self->context->device->id,
                                gh_pool_mode_names[self->mode], self->used_bytes, self->used_blocks,
                                self->held_bytes, self->held_blocks);
}

/* (label, value) rows for the displays: the pool's statistics. New list or NULL. */
static PyObject *
pool_display_rows(gh_pool *self)
{
    gh_device *dev = self->context->device;
    PyObject *used = NULL, *held = NULL, *limit = NULL, *device = NULL, *rows = NULL;

    gh_pool_sync(self);
    if ((used = gh_format_bytes(self->used_bytes)) == NULL ||
        (held = gh_format_bytes(self->held_bytes)) == NULL ||
        (limit = self->limit ? gh_format_bytes(self->limit) : PyUnicode_FromString("none")) ==
            NULL ||
        (device = PyUnicode_FromFormat("%d (%U)", dev->id, dev->name)) == NULL) {
        goto done;
    }
    rows = Py_BuildValue(
        "[(ss)(ss)(sO)(sN)(sN)(sO)]", "kind", self->host ? "pinned" : "device", "mode",
        gh_pool_mode_names[self->mode], "device", device, "in use",
        PyUnicode_FromFormat("%U in %zd blocks", used, self->used_blocks), "held for reuse",
        PyUnicode_FromFormat("%U in %zd blocks", held, self->held_blocks), "limit", limit);
done:
    Py_XDECREF(used);
    Py_XDECREF(held);
    Py_XDECREF(limit);
    Py_XDECREF(device);
    return rows;
}

static PyObject *
pool_repr_html(gh_pool *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *rows = pool_display_rows(self);
    return rows ? gh_repr_html(rows, PyUnicode_FromString("gpuhost.Pool")) : NULL;
}

static PyObject *
pool_repr_pretty(gh_pool *self, PyObject *args)
{
    return gh_repr_pretty((PyObject *)self, args, pool_display_rows(self));
}

static PyMethodDef pool_methods[] = {
    {"allocate", (PyCFunction)(void (*)(void))pool_allocate_meth, METH_FASTCALL | METH_KEYWORDS,
     "allocate($self, /, size, stream=None)\n--\n\n"
     "Allocate memory from the pool.\n\n"
     "The memory goes back to the pool when the Allocation dies or is closed.\n\n"
     "Parameters\n"
     "----------\n"
     "size : int\n"
     "    Bytes; the pool may round the block up (in 'cache' mode, to its size class).\n"
     "stream : Stream, optional\n"
     "    The stream the memory is used on, which orders its reuse; None: the legacy\n"
     "    default stream.\n\n"
     "Returns\n"
     "-------\n"
     "Allocation\n\n"
     "Raises\n"
     "------\n"
     "CudaOutOfMemoryError\n"
     "    A MemoryError, with the pool's statistics and the device's free memory.\n\n"
     "Examples\n"
     "--------\n"
     ">>> pool = gpuhost._core.Pool('device')\n"
     ">>> a = pool.allocate(1000)\n"
     ">>> a.size, pool.used_bytes\n"
     "(1000, 1024)\n"
     ">>> a.close()\n"
     ">>> pool.used_bytes, pool.free_bytes\n"
     "(0, 1024)"},
    {"allocate_pointer", (PyCFunction)(void (*)(void))pool_allocate_pointer, METH_FASTCALL,
     "allocate_pointer($self, size, stream, cls, /)\n--\n\n"
     "allocate(size, stream) as a new `cls` instance whose `mem` is the Allocation and "
     "`ptr` its address (gpuhost.memory's MemoryPointer, made in C for MemoryPool.malloc)."},
    {"free_all_blocks", (PyCFunction)(void (*)(void))pool_free_all_blocks,
     METH_VARARGS | METH_KEYWORDS,
     "free_all_blocks($self, /, stream=None)\n--\n\n"
     "Give the blocks the pool holds for reuse back to the device.\n\n"
     "In 'driver' mode, the context is synchronized and the driver's pool trimmed. Inside\n"
     "defer_cleanup() the frees wait for the end of the block. Blocks in use are not\n"
     "affected.\n\n"
     "Parameters\n"
     "----------\n"
     "stream : Stream, optional\n"
     "    Free only the blocks freed on this stream.\n\n"
     "Examples\n"
     "--------\n"
     ">>> pool = gpuhost._core.Pool('device')\n"
     ">>> pool.allocate(1 << 20).close()\n"
     ">>> pool.free_bytes\n"
     "1048576\n"
     ">>> pool.free_all_blocks()\n"
     ">>> pool.free_bytes\n"
     "0"},
    {"stop_holding", (PyCFunction)pool_stop_holding, METH_NOARGS,
     "stop_holding($self, /)\n--\n\n"
     "Stop holding freed blocks for reuse (pycuda's DeviceMemoryPool.stop_holding).\n\n"
     "The blocks held now are freed, and from now on a block that comes back is freed at once\n"
     "instead of being kept; `holding` becomes False. For a pool about to be dropped, or to\n"
     "give memory back while its allocations live on.\n\n"
     "Examples\n"
     "--------\n"
     ">>> pool = gpuhost._core.Pool('device')\n"
     ">>> a, b = pool.allocate(1000), pool.allocate(1000)\n"
     ">>> b.close()\n"
     ">>> pool.n_free_blocks\n"
     "1\n"
     ">>> pool.stop_holding()\n"
     ">>> pool.holding, pool.n_free_blocks\n"
     "(False, 0)\n"
     ">>> a.close()  # freed at once\n"
     ">>> pool.free_bytes\n"
     "0"},
    {"bin_number", (PyCFunction)pool_bin_number, METH_O,
     "bin_number($self, size, /)\n--\n\n"
     "The size class that a request of `size` bytes falls in (pycuda's name).\n\n"
     "The 'cache' mode rounds a request up to its class's size (alloc_size()): 512 bytes,\n"
     "then 8 classes per doubling.\n\n"
     "Parameters\n"
     "----------\n"
     "size : int\n"
     "    Bytes, 0 to 2**62.\n\n"
     "Returns\n"
     "-------\n"
     "int\n"
     "    The class number.\n\n"
     "Raises\n"
     "------\n"
     "ValueError\n"
     "    For a size out of range.\n\n"
     "Examples\n"
     "--------\n"
     ">>> pool = gpuhost._core.Pool('device')\n"
     ">>> pool.bin_number(1000), pool.bin_number(4096)\n"
     "(1, 7)\n"
     ">>> pool.alloc_size(pool.bin_number(1000))\n"
     "1024"},
    {"alloc_size", (PyCFunction)pool_alloc_size, METH_O,
     "alloc_size($self, bin, /)\n--\n\n"
     "The bytes a block of size class `bin` has (pycuda's name).\n\n"
     "Parameters\n"
     "----------\n"
     "bin : int\n"
     "    A class number, as bin_number() gives.\n\n"
     "Returns\n"
     "-------\n"
     "int\n\n"
     "Raises\n"
     "------\n"
     "ValueError\n"
     "    For a class number out of range.\n\n"
     "Examples\n"
     "--------\n"
     ">>> pool = gpuhost._core.Pool('device')\n"
     ">>> [pool.alloc_size(b) for b in range(4)]\n"
     "[512, 1024, 1536, 2048]"},
    {"_repr_html_", (PyCFunction)pool_repr_html, METH_NOARGS,
     "_repr_html_($self, /)\n--\n\nAn HTML table of the pool's statistics, for Jupyter."},
    {"_repr_pretty_", (PyCFunction)pool_repr_pretty, METH_VARARGS,
     "_repr_pretty_($self, p, cycle, /)\n--\n\n"
     "IPython's pretty printer: the repr, then the statistics one per line."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef pool_getset[] = {
    {"used_bytes", (getter)pool_get_used_bytes, NULL,
     "Bytes of the blocks in use (int).\n\n"
     "In 'cache' mode a block counts its class's size (alloc_size()), not the bytes asked\n"
     "for.\n\n"
     "Examples\n"
     "--------\n"
     ">>> pool = gpuhost._core.Pool('device')\n"
     ">>> a = pool.allocate(1000)\n"
     ">>> pool.used_bytes\n"
     "1024",
     NULL},
    {"free_bytes", (getter)pool_get_free_bytes, NULL,
     "Bytes the pool holds for reuse (int).\n\n"
     "In 'driver' mode: what the driver's pool reserves beyond what is in use.\n"
     "free_all_blocks() gives them back.\n\n"
     "Examples\n"
     "--------\n"
     ">>> pool = gpuhost._core.Pool('device')\n"
     ">>> pool.allocate(1000).close()\n"
     ">>> pool.free_bytes\n"
     "1024",
     NULL},
    {"total_bytes", (getter)pool_get_total_bytes, NULL,
     "Bytes the pool has taken from the device: used_bytes + free_bytes (int).\n\n"
     "Examples\n"
     "--------\n"
     ">>> pool = gpuhost._core.Pool('device')\n"
     ">>> a, b = pool.allocate(1000), pool.allocate(3000)\n"
     ">>> b.close()\n"
     ">>> pool.used_bytes, pool.free_bytes, pool.total_bytes\n"
     "(1024, 3072, 4096)",
     NULL},
    {"n_free_blocks", (getter)pool_get_n_free_blocks, NULL,
     "The number of blocks held for reuse (int).\n\n"
     "0 in 'driver' mode, where the driver keeps them.\n\n"
     "Examples\n"
     "--------\n"
     ">>> pool = gpuhost._core.Pool('device')\n"
     ">>> pool.allocate(1000).close()\n"
     ">>> pool.n_free_blocks\n"
     "1",
     NULL},
    {"n_used_blocks", (getter)pool_get_n_used_blocks, NULL,
     "The number of blocks in use (int).\n\n"
     "Examples\n"
     "--------\n"
     ">>> pool = gpuhost._core.Pool('device')\n"
     ">>> a, b = pool.allocate(1000), pool.allocate(1000)\n"
     ">>> pool.n_used_blocks\n"
     "2",
     NULL},
    {"limit", (getter)pool_get_limit, (setter)pool_set_limit,
     "Most bytes the pool may take from the device (in use + held); 0: no limit. "
     "Settable: an allocation past it raises CudaOutOfMemoryError.",
     NULL},
    {"mode", (getter)pool_get_mode, NULL, "'cache', 'driver' or 'plain' (see Pool).", NULL},
    {"kind", (getter)pool_get_kind, NULL, "'device' or 'pinned'.", NULL},
    {"host_flags", (getter)pool_get_host_flags, NULL, "The cuMemHostAlloc flags of a pinned pool.",
     NULL},
    {"context", (getter)pool_get_context, NULL, "The Context the pool allocates in.", NULL},
    {"holding", (getter)pool_get_holding, NULL,
     "Whether the pool holds freed blocks for reuse (bool).\n\n"
     "True until stop_holding().\n\n"
     "Examples\n"
     "--------\n"
     ">>> pool = gpuhost._core.Pool('device')\n"
     ">>> pool.holding\n"
     "True",
     NULL},
    {"stats", (getter)pool_get_stats, NULL,
     "The pool's statistics as a dict.\n\n"
     "Its keys: used_bytes, used_blocks, free_bytes, free_blocks, total_bytes, limit and mode;\n"
     "a snapshot, taken when read.\n\n"
     "Examples\n"
     "--------\n"
     ">>> pool = gpuhost._core.Pool('device')\n"
     ">>> a = pool.allocate(1000)\n"
     ">>> pool.stats\n"
     "{'used_bytes': 1024, 'used_blocks': 1, 'free_bytes': 0, 'free_blocks': 0, 'total_bytes': "
     "1024, 'limit': 0, 'mode': 'cache'}",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot pool_slots[] = {
    {Py_tp_doc, "Pool(kind='device', mode=None, *, host_flags=0, allocator=None)\n--\n\n"
                "A pool of device or pinned host memory in the current context.\n\n"
                "Device arrays allocate from their context's default pool "
                "(d.owner.pool); a Pool of\nyour own keeps its memory apart.\n\n"
                "Parameters\n"
                "----------\n"
                "kind : {'device', 'pinned'}, optional\n"
                "    Device memory, or page-locked host memory (cuMemHostAlloc).\n"
                "mode : {'cache', 'driver', 'plain'}, optional\n"
                "    'cache': gpuhost's caching pool, which holds freed blocks for reuse;\n"
                "    'driver': cuMemAllocAsync on the device's default memory pool;\n"
                "    'plain': cuMemAlloc and cuMemFree each time. None: the\n"
                "    GPUHOST_ALLOCATOR environment variable's, default 'cache'.\n"
                "host_flags : int, optional\n"
                "    The cuMemHostAlloc flags of a pinned pool.\n"
                "allocator : callable, optional\n"
                "    allocator(size) makes new blocks: it returns an object with an int\n"
                "    `ptr`, kept while the block lives.\n\n"
                "Examples\n"
                "--------\n"
                ">>> pool = gpuhost._core.Pool('device', 'cache')\n"
                ">>> pool.limit = 1 << 30  # at most 1 GiB from the device\n"
                ">>> a = pool.allocate(4096)\n"
                ">>> pool.stats['used_blocks']\n"
                "1"},
    {Py_tp_new, pool_tp_new},
    {Py_tp_dealloc, pool_dealloc},
    {Py_tp_traverse, pool_traverse},
    {Py_tp_clear, pool_clear},
    {Py_tp_methods, pool_methods},
    {Py_tp_getset, pool_getset},
    {Py_tp_repr, pool_repr},
    {0, NULL},
};

static PyType_Spec pool_spec = {
    .name = "gpuhost.Pool",
    .basicsize = sizeof(gh_pool),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_HAVE_GC,
    .slots = pool_slots,
};

/* ---- module functions ---- */

/* _core.device_alloc(size, stream=None): the hot path behind device_array(). */
static PyObject *
mod_device_alloc(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    gh_state *st = gh_state_of_module(module);
    gh_context *ctx;
    gh_allocation *a;
    PyObject *stream;
    size_t size;

    if (parse_size_stream(args, nargs, kwnames, "device_alloc", &size, &stream) < 0 ||
        (ctx = gh_current_context(st, -1)) == NULL) {
        return NULL;
    }
    a = gh_pool_device_alloc(st, ctx, size, stream);
    Py_DECREF(ctx);
    return (PyObject *)a;
}

static PyObject *
mod_default_pool(PyObject *module, PyObject *args)
{
    gh_state *st = gh_state_of_module(module);
    PyObject *arg = Py_None;
    gh_context *ctx;
    gh_pool *p;

    if (!PyArg_ParseTuple(args, "|O:default_pool", &arg)) {
        return NULL;
    }
    if (arg == Py_None) {
        ctx = gh_current_context(st, -1);
    }
    else if (Py_IS_TYPE(arg, st->ContextType)) {
        ctx = (gh_context *)Py_NewRef(arg);
    }
    else {
        PyErr_Format(PyExc_TypeError, "default_pool() takes a Context or None, not %s",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    if (ctx == NULL) {
        return NULL;
    }
    p = gh_pool_default(st, ctx);
    Py_DECREF(ctx);
    return Py_XNewRef((PyObject *)p);
}

/* _core._release_pool_blocks(context=None): every live pool (of `context`) gives back what
   it holds; the pytest plugin's leak check, before it counts and measures. */
static PyObject *
mod_release_pool_blocks(PyObject *module, PyObject *args)
{
    gh_state *st = gh_state_of_module(module);
    PyObject *arg = Py_None, *pools;
    size_t before = 0, after = 0;

    if (!PyArg_ParseTuple(args, "|O:_release_pool_blocks", &arg)) {
        return NULL;
    }
    if (arg != Py_None && !Py_IS_TYPE(arg, st->ContextType)) {
        PyErr_Format(PyExc_TypeError, "_release_pool_blocks() takes a Context or None, not %s",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    if ((pools = PyList_New(0)) == NULL) {
        return NULL;
    }
    /* A snapshot: giving blocks back lets go of objects, which may free other pools. */
    for (gh_pool *p = st->pools; p != NULL; p = p->next_pool) {
        if ((arg == Py_None || (PyObject *)p->context == arg) &&
            PyList_Append(pools, (PyObject *)p) < 0) {
            Py_DECREF(pools);
            return NULL;
        }
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(pools); i++) {
        gh_pool *p = (gh_pool *)PyList_GET_ITEM(pools, i);
        gh_pool_sync(p);
        before += p->held_bytes;
        gh_pool_release_held(p, NULL);
        after += p->held_bytes;
    }
    Py_DECREF(pools);
    return PyLong_FromSize_t(before - after);
}

static PyMethodDef pool_module_methods[] = {
    {"device_alloc", (PyCFunction)(void (*)(void))mod_device_alloc, METH_FASTCALL | METH_KEYWORDS,
     "device_alloc(size, stream=None)\n--\n\n"
     "Device memory from the current context's default pool (gpuhost internal).\n\n"
     "An Allocation of `size` bytes, ordered on `stream`; see device_array().\n\n"
     "Raises\n"
     "------\n"
     "CudaOutOfMemoryError\n"
     "    A MemoryError stating the size, the pool's statistics and the device's free\n"
     "    and total memory."},
    {"default_pool", (PyCFunction)mod_default_pool, METH_VARARGS,
     "default_pool(context=None, /)\n--\n\n"
     "The default device Pool of `context` (the current one if None).\n\n"
     "Device arrays allocate from it.\n\n"
     "Examples\n"
     "--------\n"
     ">>> pool = gpuhost._core.default_pool()\n"
     ">>> gpuhost.device_array(16, np.uint8).owner.pool is pool\n"
     "True"},
    {"_release_pool_blocks", (PyCFunction)mod_release_pool_blocks, METH_VARARGS,
     "_release_pool_blocks(context=None, /)\n--\n\n"
     "Every live Pool (of `context`, if given) gives the blocks it holds back (gpuhost\n"
     "internal: the pytest plugin's leak check).\n\n"
     "free_all_blocks() of each pool gpuhost knows, the default pools and those made from\n"
     "Python (CuPy's MemoryPool, pycuda's DeviceMemoryPool, ...), found in gpuhost's own list\n"
     "of live pools. A 'driver' mode pool synchronizes its context and trims the driver's\n"
     "pool. Never raises for what a release does: that is warned about.\n\n"
     "Returns\n"
     "-------\n"
     "int\n"
     "    The bytes the 'cache' and 'plain' mode pools held and gave back.\n\n"
     "Raises\n"
     "------\n"
     "TypeError\n"
     "    `context` is neither a Context nor None.\n\n"
     "Examples\n"
     "--------\n"
     ">>> pool = gpuhost._core.Pool('device', 'cache')\n"
     ">>> pool.allocate(1000).close()\n"
     ">>> gpuhost._core._release_pool_blocks(pool.context) >= 1024, pool.free_bytes\n"
     "(True, 0)"},
    {NULL, NULL, 0, NULL},
};

/* Context.reset(): every Allocation's memory back (pooled blocks to their pools), then
   what every pool of `ctx` holds freed. */
static void
memory_context_reset(gh_state *st, gh_context *ctx)
{
    gh_allocations_reset(st, ctx);
    gh_pool_context_ending(st, ctx);
}

int
gh_pool_init_type(PyObject *module, gh_state *st)
{
    st->PoolType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &pool_spec, NULL);
    if (st->PoolType == NULL || PyModule_AddType(module, st->PoolType) < 0 ||
        (st->pool_names[0] = PyUnicode_InternFromString("mem")) == NULL ||
        (st->pool_names[1] = PyUnicode_InternFromString("ptr")) == NULL) {
        return -1;
    }
    st->pool_hooks.context_ending = gh_pool_context_ending;
    st->reset_hooks[st->n_reset_hooks++] = memory_context_reset;
    st->pool_hooks.device_alloc = gh_pool_device_alloc;
    st->pool_hooks.give_back = gh_pool_release;
    return PyModule_AddFunctions(module, pool_module_methods);
}
