/* Module: a CUmodule loaded from PTX, cubin or fatbin; and the JIT linker (cuLink*).
 *
 * A Module belongs to the context current when it was loaded.  Its kernels and the arrays
 * get_global() returns hold it, so its code stays loaded while they live; unload() ends
 * its use at once (kernels then refuse to launch) and frees the code as soon as no array
 * refers to it.  Reading the image (a path, PTX parameter types, lowered names) is done in
 * gpuhost/_code_images.py (the describe_image helper).
 */
#include "launch_internal.h"

#include "code_image_docs.h"

#include <string.h>

#define GH_JIT_LOG_SIZE 16384

/* ---- loading ---- */

/* Hints for the load errors a user can act on; NULL for the others. */
static const char *
load_hint(CUresult res)
{
    switch (res) {
        case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
            return "the PTX was made for a newer CUDA version than this driver supports: "
                   "compile for an older target or with an older NVRTC, or update the driver";
        case CUDA_ERROR_NO_BINARY_FOR_GPU:
            return "the image has no code this device can run: compile it for the device's "
                   "compute capability (or include PTX)";
        case CUDA_ERROR_INVALID_IMAGE:
            return "the data is not a valid PTX, cubin or fatbin image for this driver";
        default:
            return NULL;
    }
}

/* cuModuleLoadDataEx of `data` in `ctx`, with the JIT's logs; GIL released around it.
   0, or -1 with CudaAPIError carrying the error log. */
static int
load_module(gh_context *ctx, const char *data, CUmodule *out, PyObject **info)
{
    char *error_log = NULL, *info_log = NULL;
    CUjit_option opts[4] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
    void *vals[4];
    CUresult res;
    int pushed, rc = -1;

    error_log = PyMem_Calloc(2, GH_JIT_LOG_SIZE);
    if (error_log == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    info_log = error_log + GH_JIT_LOG_SIZE;
    vals[0] = error_log;
    vals[1] = (void *)(uintptr_t)(GH_JIT_LOG_SIZE - 1);
    vals[2] = info_log;
    vals[3] = (void *)(uintptr_t)(GH_JIT_LOG_SIZE - 1);
    if (gh_context_enter(ctx, &pushed) < 0) {
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    res = gh_cu.ModuleLoadDataEx(out, data, 4, opts, vals);
    Py_END_ALLOW_THREADS
    if (gh_context_leave(ctx, pushed) < 0) {
        goto done;
    }
    if (res != CUDA_SUCCESS) {
        const char *hint = load_hint(res);
        PyObject *detail = PyUnicode_FromFormat("%s%s%s", hint ? hint : "",
                                                hint && error_log[0] ? "\n" : "", error_log);
        if (detail != NULL) {
            gh_raise_cuda_detail(res, GH_CU_ModuleLoadDataEx, PyUnicode_AsUTF8(detail));
            Py_DECREF(detail);
        }
        goto done;
    }
    *info = PyUnicode_DecodeUTF8(info_log, (Py_ssize_t)strlen(info_log), "replace");
    if (*info == NULL) {
        gh_release(ctx, ctx->generation, GH_CU_ModuleUnload, *out);
        goto done;
    }
    rc = 0;
done:
    PyMem_Free(error_log);
    return rc;
}

/* Module(image) */
static PyObject *
module_new(PyTypeObject *tp, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"image", NULL};
    gh_state *st = gh_state_of_type(tp);
    PyObject *image, *argt, *desc = NULL, *info = NULL;
    gh_module *self = NULL;
    gh_context *ctx = NULL;
    CUmodule handle = NULL;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:Module", kwlist, &image)) {
        return NULL;
    }
    /* (data: bytes, param_types: dict or None, lowered_names: dict or None) */
    argt = PyTuple_Pack(1, image);
    desc = argt ? gh_helper_call(st, GH_HELPER_DESCRIBE_IMAGE, argt) : NULL;
    Py_XDECREF(argt);
    if (desc == NULL) {
        goto done;
    }
    if (!PyTuple_Check(desc) || PyTuple_GET_SIZE(desc) != 3 ||
        !PyBytes_Check(PyTuple_GET_ITEM(desc, 0))) {
        PyErr_SetString(PyExc_SystemError, "gpuhost._code_images.describe() returned a bad value");
        goto done;
    }
    ctx = gh_driver_ensure() < 0 ? NULL : gh_current_context(st, -1);
    if (ctx == NULL ||
        load_module(ctx, PyBytes_AS_STRING(PyTuple_GET_ITEM(desc, 0)), &handle, &info) < 0) {
        goto done;
    }
    self = (gh_module *)tp->tp_alloc(tp, 0);
    if (self == NULL) {
        gh_release(ctx, ctx->generation, GH_CU_ModuleUnload, handle);
        goto done;
    }
    gh_live_add(st, GH_LIVE_MODULE, (PyObject *)self);
    gh_live_link_add(st, GH_LIVE_MODULE, &self->link, (PyObject *)self);
    self->context = (gh_context *)Py_NewRef(ctx);
    self->generation = ctx->generation;
    self->handle = handle;
    self->param_types = Py_NewRef(PyTuple_GET_ITEM(desc, 1));
    self->lowered = Py_NewRef(PyTuple_GET_ITEM(desc, 2));
    self->info_log = Py_NewRef(info);
done:
    Py_XDECREF(info);
    Py_XDECREF(ctx);
    Py_XDECREF(desc);
    return (PyObject *)self;
}

int
gh_module_check_usable(gh_module *m, gh_cu_id id)
{
    if (m->unloaded) {
        return gh_raise_cuda_detail(CUDA_ERROR_INVALID_HANDLE, id, "the module was unloaded");
    }
    return gh_context_check_alive(m->context, m->generation, id);
}

/* The symbol for `name`: its lowered (mangled) name when it is a name expression the
   module was compiled with, else `name` itself.  Borrowed reference. */
static PyObject *
symbol_of(gh_module *self, PyObject *name)
{
    PyObject *lowered;
    if (PyDict_Check(self->lowered)) {
        lowered = PyDict_GetItemWithError(self->lowered, name);
        if (lowered != NULL) {
            return lowered;
        }
        if (PyErr_Occurred()) {
            return NULL;
        }
    }
    return name;
}

/* Raise for a symbol the module lacks, listing the kernels it has when they are known. */
static void
raise_not_found(gh_module *self, gh_cu_id id, const char *what, PyObject *name)
{
    PyObject *detail, *known = NULL;
    if (PyDict_Check(self->param_types) && PyDict_GET_SIZE(self->param_types) > 0) {
        PyObject *keys = PyDict_Keys(self->param_types);
        PyObject *sep = PyUnicode_FromString(", ");
        if (keys != NULL && sep != NULL) {
            known = PyUnicode_Join(sep, keys);
        }
        Py_XDECREF(keys);
        Py_XDECREF(sep);
        PyErr_Clear();
    }
    if (known != NULL) {
        detail = PyUnicode_FromFormat("the module has no %s named %R (its kernels: %U)", what, name,
                                      known);
    }
    else {
        detail = PyUnicode_FromFormat("the module has no %s named %R", what, name);
    }
    if (detail != NULL) {
        gh_raise_cuda_detail(CUDA_ERROR_NOT_FOUND, id, PyUnicode_AsUTF8(detail));
        Py_DECREF(detail);
    }
    Py_XDECREF(known);
}

/* Look `name` up with cuModuleGetFunction (what = "kernel") or cuModuleGetGlobal
   ("global"), with the module's context current.  Sets *symbol (borrowed) to the symbol
   looked for; 0, or -1 with TypeError, CudaAPIError naming what is missing, or another. */
static int
lookup(gh_module *self, PyObject *name, const char *what, PyObject **symbol, CUfunction *f,
       CUdeviceptr *ptr, size_t *size)
{
    gh_cu_id id = f != NULL ? GH_CU_ModuleGetFunction : GH_CU_ModuleGetGlobal;
    CUresult res;
    int pushed;

    if (!PyUnicode_Check(name)) {
        PyErr_Format(PyExc_TypeError, "get_%s() takes a str, not %.100s",
                     f != NULL ? "function" : "global", Py_TYPE(name)->tp_name);
        return -1;
    }
    if (gh_module_check_usable(self, id) < 0 || (*symbol = symbol_of(self, name)) == NULL ||
        gh_context_enter(self->context, &pushed) < 0) {
        return -1;
    }
    res = f != NULL ? gh_cu.ModuleGetFunction(f, self->handle, PyUnicode_AsUTF8(*symbol))
                    : gh_cu.ModuleGetGlobal(ptr, size, self->handle, PyUnicode_AsUTF8(*symbol));
    if (gh_context_leave(self->context, pushed) < 0) {
        return -1;
    }
    if (res == CUDA_ERROR_NOT_FOUND) {
        raise_not_found(self, id, what, name);
        return -1;
    }
    return gh_check(res, id);
}

static PyObject *
module_get_function(gh_module *self, PyObject *name)
{
    gh_state *st = gh_state_of_type(Py_TYPE(self));
    PyObject *symbol = NULL, *types = NULL;
    CUfunction f = NULL;

    if (lookup(self, name, "kernel", &symbol, &f, NULL, NULL) < 0) {
        return NULL;
    }
    if (PyDict_Check(self->param_types)) {
        types = PyDict_GetItemWithError(self->param_types, symbol); /* borrowed */
        if (types == NULL && PyErr_Occurred()) {
            return NULL;
        }
    }
    return gh_kernel_new(st, self, f, name, symbol, types);
}

/* _get_global(name) -> (address, size): the raw lookup behind get_global(). */
static PyObject *
module_get_global_raw(gh_module *self, PyObject *name)
{
    PyObject *symbol = NULL;
    CUdeviceptr ptr = 0;
    size_t size = 0;

    if (lookup(self, name, "global", &symbol, NULL, &ptr, &size) < 0) {
        return NULL;
    }
    self->globals_out = 1; /* an array may now point into the module: unload at dealloc */
    return Py_BuildValue("Kn", (unsigned long long)ptr, (Py_ssize_t)size);
}

static PyObject *
module_get_global(gh_module *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"name", "dtype", "shape", NULL};
    PyObject *name, *dtype = Py_None, *shape = Py_None, *raw, *argt, *res;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "U|OO:get_global", kwlist, &name, &dtype,
                                     &shape)) {
        return NULL;
    }
    raw = module_get_global_raw(self, name);
    if (raw == NULL) {
        return NULL;
    }
    argt = Py_BuildValue("(OOOOO)", (PyObject *)self, name, raw, dtype, shape);
    res =
        argt ? gh_helper_call(gh_state_of_type(Py_TYPE(self)), GH_HELPER_GLOBAL_ARRAY, argt) : NULL;
    Py_XDECREF(argt);
    Py_DECREF(raw);
    return res;
}

static PyObject *
module_unload(gh_module *self, PyObject *Py_UNUSED(ignored))
{
    if (self->unloaded) {
        Py_RETURN_NONE;
    }
    self->unloaded = 1;
    if (!self->globals_out && self->handle != NULL) {
        gh_release(self->context, self->generation, GH_CU_ModuleUnload, self->handle);
        self->handle = NULL;
    }
    Py_RETURN_NONE;
}

/* Context.reset(): every Module loaded in `ctx` before its present generation is unloaded
   now, as numba's reset drops its modules; the arrays over their globals are of that
   generation too, so none is used again.  Never raises. */
static void
module_reset(PyObject *obj, void *ctx)
{
    gh_module *m = (gh_module *)obj;
    if (m->context == ctx && m->generation < m->context->generation && m->handle != NULL) {
        gh_release(m->context, m->generation, GH_CU_ModuleUnload, m->handle);
        m->handle = NULL;
    }
}

static void
modules_reset(gh_state *st, gh_context *ctx)
{
    gh_live_each(st, GH_LIVE_MODULE, module_reset, ctx);
}

static PyObject *
module_enter(gh_module *self, PyObject *Py_UNUSED(ignored))
{
    return Py_NewRef(self);
}

static PyObject *
module_exit(gh_module *self, PyObject *Py_UNUSED(args))
{
    return module_unload(self, NULL);
}

static PyObject *
module_get_handle(gh_module *self, void *Py_UNUSED(closure))
{
    return PyLong_FromVoidPtr(self->unloaded ? NULL : self->handle);
}

static PyObject *
module_get_context(gh_module *self, void *Py_UNUSED(closure))
{
    return Py_NewRef(self->context);
}

static PyObject *
module_get_unloaded(gh_module *self, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(self->unloaded || self->generation != self->context->generation);
}

static PyObject *
module_repr(gh_module *self)
{
    return PyUnicode_FromFormat("<gpuhost.Module on device %d%s>", self->context->device->id,
                                self->unloaded ? ", unloaded" : "");
}

static void
module_dealloc(gh_module *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    /* out of the list first: a weakref callback below may run a reset's walk */
    gh_live_link_remove(gh_state_of_type(tp), GH_LIVE_MODULE, &self->link);
    if (self->weakreflist != NULL) {
        PyObject_ClearWeakRefs((PyObject *)self);
    }
    if (self->handle != NULL) {
        gh_release(self->context, self->generation, GH_CU_ModuleUnload, self->handle);
    }
    Py_XDECREF(self->param_types);
    Py_XDECREF(self->lowered);
    Py_XDECREF(self->info_log);
    Py_XDECREF(self->context);
    gh_live_remove(gh_state_of_type(tp), GH_LIVE_MODULE, (PyObject *)self);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static PyMethodDef module_methods[] = {
    {"get_function", (PyCFunction)module_get_function, METH_O, module_get_function_doc},
    {"get_global", (PyCFunction)(void (*)(void))module_get_global, METH_VARARGS | METH_KEYWORDS,
     module_get_global_doc},
    {"_get_global", (PyCFunction)module_get_global_raw, METH_O, module__get_global_doc},
    {"unload", (PyCFunction)module_unload, METH_NOARGS, module_unload_doc},
    {"__enter__", (PyCFunction)module_enter, METH_NOARGS, module___enter___doc},
    {"__exit__", (PyCFunction)module_exit, METH_VARARGS, module___exit___doc},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef module_members[] = {
    {"info_log", T_OBJECT, offsetof(gh_module, info_log), READONLY, module_info_log_doc},
    {"lowered_names", T_OBJECT, offsetof(gh_module, lowered), READONLY, module_lowered_names_doc},
    {"param_types", T_OBJECT, offsetof(gh_module, param_types), READONLY, module_param_types_doc},
    /* weak references, as numba hands out weakref.proxy(module) */
    {"__weaklistoffset__", T_PYSSIZET, offsetof(gh_module, weakreflist), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef module_getset[] = {
    {"handle", (getter)module_get_handle, NULL, module_handle_doc, NULL},
    {"context", (getter)module_get_context, NULL, module_context_doc, NULL},
    {"unloaded", (getter)module_get_unloaded, NULL, module_unloaded_doc, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot module_slots[] = {
    {Py_tp_doc, (void *)module_doc}, {Py_tp_new, module_new},
    {Py_tp_methods, module_methods}, {Py_tp_members, module_members},
    {Py_tp_getset, module_getset},   {Py_tp_repr, module_repr},
    {Py_tp_dealloc, module_dealloc}, {0, NULL},
};

static PyType_Spec module_spec = {
    .name = "gpuhost.Module",
    .basicsize = sizeof(gh_module),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = module_slots,
};

/* ---- the JIT linker ---- */

/* One cuLinkAddData input, read from a (bytes, CUjitInputType, name) tuple. */
typedef struct {
    const char *data;
    size_t size;
    CUjitInputType type;
    const char *name;
} link_input;

typedef struct {
    CUresult res;
    gh_cu_id failed;
    void *cubin;
    size_t cubin_size;
} link_outcome;

/* The whole link, without the GIL: create, add every input, complete, copy out. */
static void
run_link(const link_input *inputs, Py_ssize_t n, CUjit_option *opts, void **vals,
         unsigned int nopts, link_outcome *out)
{
    CUlinkState state = NULL;
    void *cubin = NULL;
    size_t size = 0;

    out->failed = GH_CU_LinkCreate;
    out->res = gh_cu.LinkCreate(nopts, opts, vals, &state);
    for (Py_ssize_t i = 0; out->res == CUDA_SUCCESS && i < n; i++) {
        out->failed = GH_CU_LinkAddData;
        out->res = gh_cu.LinkAddData(state, inputs[i].type, (void *)inputs[i].data, inputs[i].size,
                                     inputs[i].name, 0, NULL, NULL);
    }
    if (out->res == CUDA_SUCCESS) {
        out->failed = GH_CU_LinkComplete;
        out->res = gh_cu.LinkComplete(state, &cubin, &size);
    }
    if (out->res == CUDA_SUCCESS) {
        out->cubin = malloc(size ? size : 1); /* the linker owns `cubin`: copy it out */
        if (out->cubin != NULL) {
            memcpy(out->cubin, cubin, size);
            out->cubin_size = size;
        }
    }
    if (state != NULL) {
        gh_cu.LinkDestroy(state);
    }
}

/* Parse [(bytes, int, str), ...] into `inputs` (borrowing from the list). */
static int
parse_link_inputs(PyObject *seq, link_input *inputs)
{
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        Py_ssize_t size;
        int type;
        if (!PyTuple_Check(item) ||
            !PyArg_ParseTuple(item, "y#is", &inputs[i].data, &size, &type, &inputs[i].name)) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_TypeError, "link inputs are (bytes, int, str) tuples");
            }
            return -1;
        }
        inputs[i].size = (size_t)size;
        inputs[i].type = (CUjitInputType)type;
    }
    return 0;
}

/* _core.link(inputs, max_registers=0, debug=False, lineinfo=False) -> (cubin, info_log) */
static PyObject *
mod_link(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"inputs", "max_registers", "debug", "lineinfo", NULL};
    gh_state *st = gh_state_of_module(module);
    PyObject *inputs_obj, *seq = NULL, *result = NULL;
    link_input *inputs = NULL;
    char *logs = NULL;
    gh_context *ctx = NULL;
    link_outcome out = {CUDA_SUCCESS, GH_CU_LinkCreate, NULL, 0};
    CUjit_option opts[7];
    void *vals[7];
    unsigned int nopts = 0;
    int max_registers = 0, debug = 0, lineinfo = 0, pushed;
    Py_ssize_t ninputs;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|ipp:link", kwlist, &inputs_obj,
                                     &max_registers, &debug, &lineinfo) ||
        (seq = PySequence_Fast(inputs_obj, "link() takes a list of inputs")) == NULL) {
        return NULL;
    }
    /* A tuple, counted here: the link reads the inputs, which borrow their bytes from it,
       with the GIL released, while another thread could change a list. */
    Py_SETREF(seq, PySequence_Tuple(seq));
    if (seq == NULL) {
        return NULL;
    }
    ninputs = PyTuple_GET_SIZE(seq);
    inputs = PyMem_Calloc((size_t)ninputs + 1, sizeof(link_input));
    logs = PyMem_Calloc(2, GH_JIT_LOG_SIZE);
    if (inputs == NULL || logs == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (parse_link_inputs(seq, inputs) < 0 || (ctx = gh_current_context(st, -1)) == NULL) {
        goto done;
    }
    opts[nopts] = CU_JIT_ERROR_LOG_BUFFER, vals[nopts++] = logs;
    opts[nopts] = CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
    vals[nopts++] = (void *)(uintptr_t)(GH_JIT_LOG_SIZE - 1);
    opts[nopts] = CU_JIT_INFO_LOG_BUFFER, vals[nopts++] = logs + GH_JIT_LOG_SIZE;
    opts[nopts] = CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
    vals[nopts++] = (void *)(uintptr_t)(GH_JIT_LOG_SIZE - 1);
    if (max_registers > 0) {
        opts[nopts] = CU_JIT_MAX_REGISTERS, vals[nopts++] = (void *)(uintptr_t)max_registers;
    }
    if (debug) {
        opts[nopts] = CU_JIT_GENERATE_DEBUG_INFO, vals[nopts++] = (void *)(uintptr_t)1;
    }
    if (lineinfo) {
        opts[nopts] = CU_JIT_GENERATE_LINE_INFO, vals[nopts++] = (void *)(uintptr_t)1;
    }
    if (gh_context_enter(ctx, &pushed) < 0) {
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    run_link(inputs, ninputs, opts, vals, nopts, &out);
    Py_END_ALLOW_THREADS
    if (gh_context_leave(ctx, pushed) < 0) {
        goto done;
    }
    if (out.res != CUDA_SUCCESS) {
        gh_raise_cuda_detail(out.res, out.failed, logs);
        goto done;
    }
    if (out.cubin == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    result = Py_BuildValue("(y#s)", (const char *)out.cubin, (Py_ssize_t)out.cubin_size,
                           logs + GH_JIT_LOG_SIZE);
done:
    free(out.cubin);
    Py_XDECREF(ctx);
    PyMem_Free(logs);
    PyMem_Free(inputs);
    Py_XDECREF(seq);
    return result;
}

static PyMethodDef code_image_functions[] = {
    {"link", (PyCFunction)(void (*)(void))mod_link, METH_VARARGS | METH_KEYWORDS,
     code_image_link_doc},
    {NULL, NULL, 0, NULL},
};

int
gh_code_image_init_type(PyObject *module, gh_state *st)
{
    st->ModuleType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &module_spec, NULL);
    if (st->ModuleType == NULL || PyModule_AddType(module, st->ModuleType) < 0) {
        return -1;
    }
    st->reset_hooks[st->n_reset_hooks++] = modules_reset;
    return PyModule_AddFunctions(module, code_image_functions);
}
