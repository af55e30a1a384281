/* Kernel: a CUfunction of a loaded Module, its attributes and occupancy, and launching it
 * (numba's kernel[grid, block, stream, shared](*args), pycuda's kernel(*args, block=...),
 * and LaunchConfig objects from configure()).
 *
 * Arguments are checked against the kernel's real parameters (cuFuncGetParamInfo for
 * offsets and sizes; the PTX, when the module came from PTX, for float vs integer) and
 * packed into one buffer: a mismatch is a TypeError naming the kernel and the parameter.
 */
#include "launch_internal.h"

#include "kernel_docs.h"

#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL gh_ARRAY_API
#include <numpy/arrayobject.h>

#include <limits.h>
#include <math.h>
#include <string.h>

#if PY_VERSION_HEX < 0x030B0000
#define PyFloat_Pack2(x, p, le) _PyFloat_Pack2((x), (unsigned char *)(p), (le))
#endif

/* ---- launch ---- */

static CUresult
launch_ex(gh_kernel *k, const launch_dims *d, CUstream stream, void **params)
{
    CUlaunchAttribute attrs[2];
    CUlaunchConfig cfg;
    unsigned int n = 0;
    memset(attrs, 0, sizeof(attrs));
    if (d->cooperative) {
        attrs[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        attrs[n++].value.cooperative = 1;
    }
    if (d->cluster[0] != 0) {
        attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attrs[n].value.clusterDim.x = d->cluster[0];
        attrs[n].value.clusterDim.y = d->cluster[1];
        attrs[n++].value.clusterDim.z = d->cluster[2];
    }
    cfg.gridDimX = d->grid[0], cfg.gridDimY = d->grid[1], cfg.gridDimZ = d->grid[2];
    cfg.blockDimX = d->block[0], cfg.blockDimY = d->block[1], cfg.blockDimZ = d->block[2];
    cfg.sharedMemBytes = d->shared;
    cfg.hStream = stream;
    cfg.attrs = attrs;
    cfg.numAttrs = n;
    return gh_cu.LaunchKernelEx(&cfg, k->handle, params, NULL);
}

static CUresult
launch_any(gh_kernel *k, const launch_dims *d, CUstream stream, void **params)
{
    if (d->cooperative || d->cluster[0] != 0) {
        return launch_ex(k, d, stream, params);
    }
    return gh_cu.LaunchKernel(k->handle, d->grid[0], d->grid[1], d->grid[2], d->block[0],
                              d->block[1], d->block[2], d->shared, stream, params, NULL);
}

/* CudaDriverError if the resolved stream belongs to another device than kernel k. */
static int
check_stream_context(gh_kernel *k, const gh_stream_ref *ref)
{
    return gh_stream_check_device(ref->context, k->module->context, "kernel %R is loaded", k->name);
}

int
gh_kernel_raise_unknown_params(gh_kernel *k)
{
    return gh_raise(GH_EXC_CUDA_SUPPORT,
                    "cannot check the arguments of kernel %R: this driver has no "
                    "cuFuncGetParamInfo (CUDA 12.4) and the module was not loaded from PTX; "
                    "update the driver or load PTX",
                    k->name);
}

int
gh_kernel_check_call(gh_kernel *k, gh_cu_id id, Py_ssize_t nargs)
{
    gh_module *m = k->module;
    if ((m->unloaded || m->generation != m->context->generation || m->context->handle == NULL) &&
        gh_module_check_usable(m, id) < 0) {
        return -1;
    }
    if (k->nparams < 0) {
        return gh_kernel_raise_unknown_params(k);
    }
    if (nargs != k->nparams) {
        PyErr_Format(PyExc_TypeError, "%U() takes %d argument%s, got %zd", k->name, k->nparams,
                     k->nparams == 1 ? "" : "s", nargs);
        return -1;
    }
    return 0;
}

/* Launch k with its arguments packed in `params` on the resolved stream `ref` (checked by
   check_stream_context); the stream object is d->stream (borrowed, NULL: the default
   stream).  0, or -1 with the error set. */
static int
launch_packed(gh_state *st, gh_kernel *k, const launch_dims *d, const gh_stream_ref *ref,
              void **params)
{
    gh_module *m = k->module;
    CUresult res;
    int pushed;

    /* A stream names its context, and the driver launches there whatever context is
       current (CUDA 13 does), so the common case spares asking which one is; a driver
       that refuses it (INVALID_CONTEXT / INVALID_HANDLE, nothing launched) gets the
       module's context made current, as the default streams always do. */
    res = CUDA_ERROR_INVALID_CONTEXT;
    if (ref->context == m->context && !ref->is_default) {
        res = launch_any(k, d, ref->handle, params);
    }
    if (res == CUDA_ERROR_INVALID_CONTEXT || res == CUDA_ERROR_INVALID_HANDLE) {
        if (gh_context_enter(m->context, &pushed) < 0) {
            return -1;
        }
        res = launch_any(k, d, ref->handle, params);
        if (gh_context_leave(m->context, pushed) < 0) {
            return -1;
        }
    }
    if (gh_check(res, (d->cooperative || d->cluster[0]) ? GH_CU_LaunchKernelEx
                                                        : GH_CU_LaunchKernel) < 0) {
        return -1;
    }
    if (d->stream != NULL && Py_IS_TYPE(d->stream, st->StreamType)) {
        gh_stream *s = (gh_stream *)d->stream;
        s->launched = 1;
        /* launched into a capture: its graph will check k's module before each launch */
        if (s->capture_kernels != NULL &&
            gh_kernel_list_add(s->capture_kernels, (PyObject *)k) < 0) {
            return -1;
        }
    }
    return 0;
}

int
gh_kernel_launch_params(gh_kernel *k, const launch_dims *d, void **params)
{
    gh_state *st = gh_state_of_type(Py_TYPE(k));
    gh_stream_ref ref;
    if (gh_kernel_check_call(k, GH_CU_LaunchKernel, k->nparams) < 0 ||
        gh_stream_resolve(st, d->stream, &ref) < 0 || check_stream_context(k, &ref) < 0) {
        return -1;
    }
    return launch_packed(st, k, d, &ref, params);
}

static PyObject *
kernel_launch(gh_kernel *k, const launch_dims *d, PyObject *const *args, Py_ssize_t nargs)
{
    gh_state *st;
    gh_stream_ref ref;
    gh_argbuf ab;
    PyObject *result = NULL;

    if (gh_kernel_check_call(k, GH_CU_LaunchKernel, nargs) < 0) {
        return NULL;
    }
    st = gh_state_of_type(Py_TYPE(k));
    if (gh_stream_resolve(st, d->stream, &ref) < 0 || check_stream_context(k, &ref) < 0) {
        return NULL;
    }
    if (gh_kernel_pack(st, k, args, nargs, &ref, &ab) < 0) {
        goto done;
    }
    if (launch_packed(st, k, d, &ref, ab.ptrs) < 0) {
        goto done;
    }
    result = Py_NewRef(Py_None);
done:
    gh_argbuf_free(&ab);
    return result;
}

/* ---- LaunchConfig ---- */

static PyObject *config_new(gh_state *st, gh_kernel *k, const launch_dims *d);

static PyObject *
config_vectorcall(gh_launchconfig *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0) {
        PyErr_Format(PyExc_TypeError, "%U[...]() takes no keyword arguments", self->kernel->name);
        return NULL;
    }
    return kernel_launch(self->kernel, &self->dims, args, PyVectorcall_NARGS(nargsf));
}

PyObject *
gh_dims_tuple(const unsigned int *d)
{
    return Py_BuildValue("(III)", d[0], d[1], d[2]);
}

PyObject *
gh_get_dims_field(PyObject *self, void *offset)
{
    return gh_dims_tuple((const unsigned int *)((char *)self + (size_t)offset));
}

PyObject *
gh_get_shared_field(PyObject *self, void *offset)
{
    return PyLong_FromUnsignedLong(*(const unsigned int *)((char *)self + (size_t)offset));
}

static PyObject *
config_get_cluster(gh_launchconfig *self, void *Py_UNUSED(closure))
{
    return self->dims.cluster[0] ? gh_dims_tuple(self->dims.cluster) : Py_NewRef(Py_None);
}

static PyObject *
config_get_stream(gh_launchconfig *self, void *Py_UNUSED(closure))
{
    return Py_NewRef(self->dims.stream ? self->dims.stream : Py_None);
}

static PyObject *
config_get_cooperative(gh_launchconfig *self, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(self->dims.cooperative);
}

static PyObject *
config_get_kernel(gh_launchconfig *self, void *Py_UNUSED(closure))
{
    return Py_NewRef(self->kernel);
}

static PyObject *
config_repr(gh_launchconfig *self)
{
    const launch_dims *d = &self->dims;
    return PyUnicode_FromFormat("<gpuhost.LaunchConfig of %R: grid (%u, %u, %u), block (%u, %u, "
                                "%u), shared %u%s>",
                                self->kernel->name, d->grid[0], d->grid[1], d->grid[2], d->block[0],
                                d->block[1], d->block[2], d->shared,
                                d->cooperative ? ", cooperative" : "");
}

static int
config_traverse(gh_launchconfig *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->kernel);
    Py_VISIT(self->dims.stream);
    return 0;
}

static int
config_clear(gh_launchconfig *self)
{
    Py_CLEAR(self->dims.stream);
    Py_CLEAR(self->kernel);
    return 0;
}

static void
config_dealloc(gh_launchconfig *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    config_clear(self);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static PyGetSetDef config_getset[] = {
    {"griddim", gh_get_dims_field, NULL, config_griddim_doc,
     (void *)offsetof(gh_launchconfig, dims.grid)},
    {"blockdim", gh_get_dims_field, NULL, config_blockdim_doc,
     (void *)offsetof(gh_launchconfig, dims.block)},
    {"cluster", (getter)config_get_cluster, NULL, config_cluster_doc, NULL},
    {"stream", (getter)config_get_stream, NULL, config_stream_doc, NULL},
    {"sharedmem", gh_get_shared_field, NULL, config_sharedmem_doc,
     (void *)offsetof(gh_launchconfig, dims.shared)},
    {"cooperative", (getter)config_get_cooperative, NULL, config_cooperative_doc, NULL},
    {"kernel", (getter)config_get_kernel, NULL, config_kernel_doc, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef config_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(gh_launchconfig, vectorcall), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot config_slots[] = {
    {Py_tp_doc, (void *)config_doc},
    {Py_tp_getset, config_getset},
    {Py_tp_members, config_members},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_repr, config_repr},
    {Py_tp_traverse, config_traverse},
    {Py_tp_clear, config_clear},
    {Py_tp_dealloc, config_dealloc},
    {0, NULL},
};

static PyType_Spec config_spec = {
    .name = "gpuhost.LaunchConfig",
    .basicsize = sizeof(gh_launchconfig),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION |
             Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC,
    .slots = config_slots,
};

static PyObject *
config_new(gh_state *st, gh_kernel *k, const launch_dims *d)
{
    gh_launchconfig *self = PyObject_GC_New(gh_launchconfig, st->LaunchConfigType);
    if (self == NULL) {
        return NULL;
    }
    self->kernel = (gh_kernel *)Py_NewRef(k);
    self->dims = *d;
    Py_XINCREF(self->dims.stream);
    self->vectorcall = (vectorcallfunc)config_vectorcall;
    PyObject_GC_Track(self);
    return (PyObject *)self;
}

/* ---- Kernel: launching ---- */

/* Whether two launch keys are the same object or tuples of the same objects: the common
   case of kernel[g, b, s] in a loop, decided without calling any comparison. */
int
gh_same_items(PyObject *a, PyObject *b)
{
    Py_ssize_t n;
    if (a == b) {
        return 1;
    }
    if (!PyTuple_CheckExact(a) || !PyTuple_CheckExact(b) ||
        (n = PyTuple_GET_SIZE(a)) != PyTuple_GET_SIZE(b)) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (PyTuple_GET_ITEM(a, i) != PyTuple_GET_ITEM(b, i)) {
            return 0;
        }
    }
    return 1;
}

/* kernel[grid, block], kernel[grid, block, stream], kernel[grid, block, stream, shared] */
static PyObject *
kernel_getitem(gh_kernel *self, PyObject *key)
{
    gh_state *st = gh_state_of_type(Py_TYPE(self));
    launch_dims d;
    Py_ssize_t n;
    PyObject *config;

    if (self->last_key != NULL) {
        int same = gh_same_items(key, self->last_key);
        if (!same) {
            same = PyObject_RichCompareBool(key, self->last_key, Py_EQ);
        }
        if (same < 0) {
            return NULL;
        }
        if (same) {
            return Py_NewRef(self->last_config);
        }
    }
    n = PyTuple_Check(key) ? PyTuple_GET_SIZE(key) : 0;
    if (n < 2 || n > 4) {
        PyErr_Format(PyExc_ValueError,
                     "a launch configuration is kernel[grid, block], kernel[grid, block, "
                     "stream] or kernel[grid, block, stream, shared], not kernel[%R]",
                     key);
        return NULL;
    }
    if (gh_kernel_make_dims(self, &d, PyTuple_GET_ITEM(key, 0), PyTuple_GET_ITEM(key, 1),
                            n > 2 ? PyTuple_GET_ITEM(key, 2) : Py_None,
                            n > 3 ? PyTuple_GET_ITEM(key, 3) : Py_None, 0, NULL) < 0) {
        return NULL;
    }
    if (d.stream != NULL) {
        gh_stream_ref ref; /* check the stream now, so a bad one is reported here */
        if (gh_stream_resolve(st, d.stream, &ref) < 0) {
            return NULL;
        }
    }
    config = config_new(st, self, &d);
    if (config == NULL) {
        return NULL;
    }
    Py_XSETREF(self->last_key, Py_NewRef(key));
    Py_XSETREF(self->last_config, Py_NewRef(config));
    return config;
}

/* kernel(*args, grid=1, block=..., stream=None, shared=0): pycuda's way. */
static PyObject *
kernel_vectorcall(gh_kernel *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    static const char *const names[] = {"grid", "block", "stream", "shared"};
    PyObject *opts[4] = {NULL, NULL, NULL, NULL};
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *one = NULL, *res;
    launch_dims d;

    for (Py_ssize_t j = 0; j < nkw; j++) {
        PyObject *kw = PyTuple_GET_ITEM(kwnames, j);
        int found = 0;
        for (int o = 0; o < 4 && !found; o++) {
            if (PyUnicode_CompareWithASCIIString(kw, names[o]) == 0) {
                opts[o] = args[nargs + j];
                found = 1;
            }
        }
        if (!found) {
            PyErr_Format(PyExc_TypeError,
                         "%U() got an unexpected keyword argument %R (launch options are grid, "
                         "block, stream and shared)",
                         self->name, kw);
            return NULL;
        }
    }
    if (opts[1] == NULL) {
        PyErr_Format(PyExc_TypeError,
                     "%U() needs block= (and grid=) to launch: kernel(*args, grid=..., "
                     "block=...), or kernel[grid, block](*args)",
                     self->name);
        return NULL;
    }
    if (opts[0] == NULL) {
        opts[0] = one = PyLong_FromLong(1);
    }
    if (gh_kernel_make_dims(self, &d, opts[0], opts[1], opts[2] ? opts[2] : Py_None, opts[3], 0,
                            NULL) < 0) {
        Py_XDECREF(one);
        return NULL;
    }
    res = kernel_launch(self, &d, args, nargs);
    Py_XDECREF(one);
    return res;
}

static PyObject *
kernel_configure(gh_kernel *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"grid", "block", "stream", "shared", "cooperative", "cluster", NULL};
    gh_state *st = gh_state_of_type(Py_TYPE(self));
    PyObject *grid, *block, *stream = Py_None, *shared = Py_None, *cluster = Py_None;
    int cooperative = 0;
    launch_dims d;
    gh_stream_ref ref;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|OO$pO:configure", kwlist, &grid, &block,
                                     &stream, &shared, &cooperative, &cluster) ||
        gh_kernel_make_dims(self, &d, grid, block, stream, shared, cooperative, cluster) < 0 ||
        (d.stream != NULL && gh_stream_resolve(st, d.stream, &ref) < 0)) {
        return NULL;
    }
    return config_new(st, self, &d);
}

/* ---- Kernel: attributes and occupancy ---- */

static int
func_attr(gh_kernel *k, CUfunction_attribute attr, int *out)
{
    if (gh_module_check_usable(k->module, GH_CU_FuncGetAttribute) < 0) {
        return -1;
    }
    return gh_check(gh_cu.FuncGetAttribute(out, attr, k->handle), GH_CU_FuncGetAttribute);
}

static PyObject *
kernel_get_attr(gh_kernel *self, void *closure)
{
    int value = 0;
    if (func_attr(self, (CUfunction_attribute)(intptr_t)closure, &value) < 0) {
        return NULL;
    }
    return PyLong_FromLong(value);
}

static int
kernel_set_attr(gh_kernel *self, PyObject *value, void *closure)
{
    CUfunction_attribute attr = (CUfunction_attribute)(intptr_t)closure;
    long v;
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "kernel attributes cannot be deleted");
        return -1;
    }
    v = PyLong_AsLong(value);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (v < 0 || v > INT_MAX) {
        PyErr_Format(PyExc_ValueError, "kernel attribute values are 0 to %d, not %ld", INT_MAX, v);
        return -1;
    }
    if (gh_module_check_usable(self->module, GH_CU_FuncSetAttribute) < 0 ||
        gh_check(gh_cu.FuncSetAttribute(self->handle, attr, (int)v), GH_CU_FuncSetAttribute) < 0) {
        return -1;
    }
    if (attr == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
        self->max_dyn_shared = (int)v;
    }
    return 0;
}

static PyObject *
kernel_get_param_info(gh_kernel *self, void *Py_UNUSED(closure))
{
    PyObject *t;
    if (self->nparams < 0) {
        gh_kernel_raise_unknown_params(self);
        return NULL;
    }
    t = PyTuple_New(self->nparams);
    for (int i = 0; t != NULL && i < self->nparams; i++) {
        const gh_param *p = &self->params[i];
        PyObject *item = Py_BuildValue("(IIC)", p->offset, p->size, (int)p->kind);
        if (item == NULL) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, item);
    }
    return t;
}

static PyObject *
kernel_get_num_params(gh_kernel *self, void *Py_UNUSED(closure))
{
    if (self->nparams < 0) {
        gh_kernel_raise_unknown_params(self);
        return NULL;
    }
    return PyLong_FromLong(self->nparams);
}

static PyObject *
kernel_get_handle(gh_kernel *self, void *Py_UNUSED(closure))
{
    return PyLong_FromVoidPtr(self->handle);
}

static PyObject *
kernel_max_active_blocks(gh_kernel *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"block_size", "dynamic_shared_memory_size", NULL};
    int block_size, blocks = 0;
    Py_ssize_t smem = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "i|n:max_active_blocks_per_multiprocessor",
                                     kwlist, &block_size, &smem)) {
        return NULL;
    }
    if (block_size < 1 || smem < 0) {
        PyErr_SetString(PyExc_ValueError, "block_size must be positive and "
                                          "dynamic_shared_memory_size not negative");
        return NULL;
    }
    if (gh_module_check_usable(self->module, GH_CU_OccupancyMaxActiveBlocksPerMultiprocessor) < 0 ||
        gh_check(gh_cu.OccupancyMaxActiveBlocksPerMultiprocessor(&blocks, self->handle, block_size,
                                                                 (size_t)smem),
                 GH_CU_OccupancyMaxActiveBlocksPerMultiprocessor) < 0) {
        return NULL;
    }
    return PyLong_FromLong(blocks);
}

static PyObject *
kernel_max_potential_block_size(gh_kernel *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"dynamic_shared_memory_size", "block_size_limit", NULL};
    int min_grid = 0, block = 0, limit = 0;
    Py_ssize_t smem = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|ni:max_potential_block_size", kwlist, &smem,
                                     &limit)) {
        return NULL;
    }
    if (smem < 0 || limit < 0) {
        PyErr_SetString(PyExc_ValueError, "sizes must not be negative");
        return NULL;
    }
    if (gh_module_check_usable(self->module, GH_CU_OccupancyMaxPotentialBlockSize) < 0 ||
        gh_check(gh_cu.OccupancyMaxPotentialBlockSize(&min_grid, &block, self->handle, NULL,
                                                      (size_t)smem, limit),
                 GH_CU_OccupancyMaxPotentialBlockSize) < 0) {
        return NULL;
    }
    return Py_BuildValue("(ii)", min_grid, block);
}

static PyObject *
kernel_max_active_clusters(gh_kernel *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"grid", "block", "cluster", "shared", NULL};
    PyObject *grid, *block, *cluster, *shared = Py_None;
    CUlaunchAttribute attr;
    CUlaunchConfig cfg;
    launch_dims d;
    int n = 0, pushed;
    CUresult res;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|O:max_active_clusters", kwlist, &grid,
                                     &block, &cluster, &shared) ||
        gh_kernel_make_dims(self, &d, grid, block, Py_None, shared, 0, cluster) < 0 ||
        gh_module_check_usable(self->module, GH_CU_OccupancyMaxActiveClusters) < 0) {
        return NULL;
    }
    memset(&attr, 0, sizeof(attr));
    memset(&cfg, 0, sizeof(cfg));
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = d.cluster[0];
    attr.value.clusterDim.y = d.cluster[1];
    attr.value.clusterDim.z = d.cluster[2];
    cfg.gridDimX = d.grid[0], cfg.gridDimY = d.grid[1], cfg.gridDimZ = d.grid[2];
    cfg.blockDimX = d.block[0], cfg.blockDimY = d.block[1], cfg.blockDimZ = d.block[2];
    cfg.sharedMemBytes = d.shared;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    if (gh_context_enter(self->module->context, &pushed) < 0) {
        return NULL;
    }
    res = gh_cu.OccupancyMaxActiveClusters(&n, self->handle, &cfg);
    if (gh_context_leave(self->module->context, pushed) < 0 ||
        gh_check(res, GH_CU_OccupancyMaxActiveClusters) < 0) {
        return NULL;
    }
    return PyLong_FromLong(n);
}

static PyObject *
kernel_repr(gh_kernel *self)
{
    if (self->nparams < 0) {
        return PyUnicode_FromFormat("<gpuhost.Kernel %R on device %d>", self->name,
                                    self->module->context->device->id);
    }
    return PyUnicode_FromFormat("<gpuhost.Kernel %R (%d parameter%s) on device %d>", self->name,
                                self->nparams, self->nparams == 1 ? "" : "s",
                                self->module->context->device->id);
}

/* A Kernel and its cached LaunchConfig refer to each other: both are GC types. */
static int
kernel_traverse(gh_kernel *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->module);
    Py_VISIT(self->last_key);
    Py_VISIT(self->last_config);
    return 0;
}

static int
kernel_clear(gh_kernel *self)
{
    Py_CLEAR(self->last_key);
    Py_CLEAR(self->last_config);
    return 0;
}

static void
kernel_dealloc(gh_kernel *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    kernel_clear(self);
    PyMem_Free(self->params);
    Py_XDECREF(self->ctypes);
    Py_XDECREF(self->name);
    Py_XDECREF(self->symbol);
    Py_XDECREF(self->module);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

/* ---- Kernel: construction ---- */

/* Fill k->params from the driver (cuFuncGetParamInfo) or, failing that, from the PTX's
   ((kind, size, align), ...) in `types`; kinds come from `types` when it matches. */
static int
read_params(gh_kernel *k, PyObject *types)
{
    Py_ssize_t ntypes = (types != NULL && PyTuple_Check(types)) ? PyTuple_GET_SIZE(types) : -1;
    size_t n = 0, cap = 8;
    gh_param *params = PyMem_Calloc(cap, sizeof(gh_param));

    if (params == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    while (gh_cu.FuncGetParamInfo != NULL) {
        size_t offset = 0, size = 0;
        CUresult res = gh_cu.FuncGetParamInfo(k->handle, n, &offset, &size);
        if (res == CUDA_ERROR_INVALID_VALUE) {
            break; /* past the last parameter */
        }
        if (gh_check(res, GH_CU_FuncGetParamInfo) < 0) {
            PyMem_Free(params);
            return -1;
        }
        if (n == cap) {
            gh_param *grown = PyMem_Realloc(params, 2 * cap * sizeof(gh_param));
            if (grown == NULL) {
                PyMem_Free(params);
                PyErr_NoMemory();
                return -1;
            }
            params = grown, cap *= 2;
        }
        params[n].offset = (uint32_t)offset, params[n].size = (uint32_t)size;
        params[n++].kind = '?';
    }
    if (gh_cu.FuncGetParamInfo == NULL && ntypes >= 0) {
        /* An old driver: lay the parameters out from the PTX, as the ABI does. */
        gh_param *grown = PyMem_Realloc(params, ((size_t)ntypes + 1) * sizeof(gh_param));
        uint32_t offset = 0;
        if (grown == NULL) {
            PyMem_Free(params);
            PyErr_NoMemory();
            return -1;
        }
        params = grown;
        for (n = 0; n < (size_t)ntypes; n++) {
            unsigned int size = 0, align = 1;
            int kind = '?'; /* 'C' stores an int */
            if (!PyArg_ParseTuple(PyTuple_GET_ITEM(types, n), "CII", &kind, &size, &align)) {
                PyMem_Free(params);
                return -1;
            }
            offset = (offset + align - 1) / align * align;
            params[n].offset = offset, params[n].size = size;
            offset += size;
        }
    }
    else if (gh_cu.FuncGetParamInfo == NULL) {
        PyMem_Free(params);
        k->nparams = -1;
        return 0;
    }
    k->params = params;
    k->nparams = (int)n;
    k->argsize = 0;
    for (size_t i = 0; i < n; i++) {
        params[i].ctype = 0, params[i].elem = GH_ELEM_ANY, params[i].elem_size = 0;
        if (ntypes == (Py_ssize_t)n) {
            PyObject *kind = PyTuple_GET_ITEM(PyTuple_GET_ITEM(types, i), 0);
            const char *s = PyUnicode_Check(kind) ? PyUnicode_AsUTF8(kind) : NULL;
            params[i].kind = (s != NULL && strchr("ifs", s[0]) && s[0]) ? s[0] : '?';
            PyErr_Clear();
        }
        if (params[i].offset + params[i].size > k->argsize) {
            k->argsize = params[i].offset + params[i].size;
        }
    }
    return 0;
}

/* The device's launch limits and the kernel's own. */
static int
read_limits(gh_kernel *k)
{
    static const CUdevice_attribute dev_attrs[7] = {
        CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
        CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
        CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z,
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z,
        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
    };
    int values[7];
    gh_device *dev = k->module->context->device;
    for (int i = 0; i < 7; i++) {
        if (gh_check(gh_cu.DeviceGetAttribute(&values[i], dev_attrs[i], dev->handle),
                     GH_CU_DeviceGetAttribute) < 0) {
            return -1;
        }
    }
    for (int i = 0; i < 3; i++) {
        k->max_block[i] = (unsigned int)values[i];
        k->max_grid[i] = (unsigned int)values[3 + i];
    }
    k->optin_shared = values[6];
    k->cc_major = dev->cc_major;
    if (func_attr(k, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &k->max_threads) < 0 ||
        func_attr(k, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, &k->static_shared) < 0 ||
        func_attr(k, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, &k->max_dyn_shared) < 0) {
        return -1;
    }
    return 0;
}

PyObject *
gh_kernel_new(gh_state *st, gh_module *m, CUfunction f, PyObject *name, PyObject *symbol,
              PyObject *types)
{
    gh_kernel *self = PyObject_GC_New(gh_kernel, st->KernelType);
    int pushed;
    if (self == NULL) {
        return NULL;
    }
    self->module = (gh_module *)Py_NewRef(m);
    self->handle = f;
    self->name = Py_NewRef(name);
    self->symbol = Py_NewRef(symbol);
    self->nparams = -1;
    self->params = NULL;
    self->ctypes = NULL;
    self->argsize = 0;
    self->last_key = self->last_config = NULL;
    self->vectorcall = (vectorcallfunc)kernel_vectorcall;
    if (gh_context_enter(m->context, &pushed) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    if (read_params(self, types) < 0 || read_limits(self) < 0) {
        gh_context_leave(m->context, pushed);
        Py_DECREF(self);
        return NULL;
    }
    if (gh_context_leave(m->context, pushed) < 0 || gh_kernel_read_types(st, self) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    PyObject_GC_Track(self);
    return (PyObject *)self;
}

#define ATTR_GETTER(pyname, attr, doc)                                                             \
    {                                                                                              \
        pyname, (getter)kernel_get_attr, NULL, doc, (void *)(intptr_t)(attr)                       \
    }
#define ATTR_GETSET(pyname, attr, doc)                                                             \
    {                                                                                              \
        pyname, (getter)kernel_get_attr, (setter)kernel_set_attr, doc, (void *)(intptr_t)(attr)    \
    }

static PyGetSetDef kernel_getset[] = {
    ATTR_GETTER("num_regs", CU_FUNC_ATTRIBUTE_NUM_REGS, kernel_num_regs_doc),
    ATTR_GETTER("shared_size_bytes", CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                kernel_shared_size_bytes_doc),
    ATTR_GETTER("const_size_bytes", CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES,
                kernel_const_size_bytes_doc),
    ATTR_GETTER("local_size_bytes", CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
                kernel_local_size_bytes_doc),
    ATTR_GETTER("max_threads_per_block", CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                kernel_max_threads_per_block_doc),
    ATTR_GETTER("ptx_version", CU_FUNC_ATTRIBUTE_PTX_VERSION, kernel_ptx_version_doc),
    ATTR_GETTER("binary_version", CU_FUNC_ATTRIBUTE_BINARY_VERSION, kernel_binary_version_doc),
    ATTR_GETSET("max_dynamic_shared_size_bytes", CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                kernel_max_dynamic_shared_size_bytes_doc),
    ATTR_GETSET("preferred_shared_memory_carveout",
                CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                kernel_preferred_shared_memory_carveout_doc),
    {"num_params", (getter)kernel_get_num_params, NULL, kernel_num_params_doc, NULL},
    {"param_info", (getter)kernel_get_param_info, NULL, kernel_param_info_doc, NULL},
    {"param_types", (getter)gh_kernel_get_param_types, NULL, kernel_param_types_doc, NULL},
    {"handle", (getter)kernel_get_handle, NULL, kernel_handle_doc, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef kernel_members[] = {
    {"name", T_OBJECT, offsetof(gh_kernel, name), READONLY, kernel_name_doc},
    {"symbol", T_OBJECT, offsetof(gh_kernel, symbol), READONLY, kernel_symbol_doc},
    {"module", T_OBJECT, offsetof(gh_kernel, module), READONLY, kernel_module_doc},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(gh_kernel, vectorcall), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyMethodDef kernel_methods[] = {
    {"configure", (PyCFunction)(void (*)(void))kernel_configure, METH_VARARGS | METH_KEYWORDS,
     kernel_configure_doc},
    {"_set_param_types", (PyCFunction)gh_kernel_set_param_types, METH_O,
     kernel_set_param_types_doc},
    {"max_active_blocks_per_multiprocessor", (PyCFunction)(void (*)(void))kernel_max_active_blocks,
     METH_VARARGS | METH_KEYWORDS, kernel_max_active_blocks_per_multiprocessor_doc},
    {"max_potential_block_size", (PyCFunction)(void (*)(void))kernel_max_potential_block_size,
     METH_VARARGS | METH_KEYWORDS, kernel_max_potential_block_size_doc},
    {"max_active_clusters", (PyCFunction)(void (*)(void))kernel_max_active_clusters,
     METH_VARARGS | METH_KEYWORDS, kernel_max_active_clusters_doc},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot kernel_slots[] = {
    {Py_tp_doc, (void *)kernel_doc},
    {Py_tp_getset, kernel_getset},
    {Py_tp_members, kernel_members},
    {Py_tp_methods, kernel_methods},
    {Py_mp_subscript, kernel_getitem},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_repr, kernel_repr},
    {Py_tp_traverse, kernel_traverse},
    {Py_tp_clear, kernel_clear},
    {Py_tp_dealloc, kernel_dealloc},
    {0, NULL},
};

static PyType_Spec kernel_spec = {
    .name = "gpuhost.Kernel",
    .basicsize = sizeof(gh_kernel),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION |
             Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC,
    .slots = kernel_slots,
};

int
gh_kernel_list_add(PyObject *list, PyObject *kernel)
{
    Py_ssize_t n = PyList_GET_SIZE(list);
    if (n > 0 && PyList_GET_ITEM(list, n - 1) == kernel) {
        return 0; /* the common loop: the same kernel again */
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (PyList_GET_ITEM(list, i) == kernel) {
            return 0;
        }
    }
    return PyList_Append(list, kernel);
}

int
gh_kernel_list_merge(PyObject *to, PyObject *from)
{
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(from); i++) {
        if (gh_kernel_list_add(to, PyList_GET_ITEM(from, i)) < 0) {
            return -1;
        }
    }
    return 0;
}

int
gh_kernel_init_type(PyObject *module, gh_state *st)
{
    st->KernelType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &kernel_spec, NULL);
    if (st->KernelType == NULL || PyModule_AddType(module, st->KernelType) < 0) {
        return -1;
    }
    st->LaunchConfigType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &config_spec, NULL);
    if (st->LaunchConfigType == NULL || PyModule_AddType(module, st->LaunchConfigType) < 0) {
        return -1;
    }
    return 0;
}
