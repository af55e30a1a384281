/* gpuhost._core's module: its initialization (PEP 489 multi-phase, with the per-module
 * state of base/state.h, PEP 573) and nothing else.  Importing it twice (after removing it
 * from sys.modules, or in a subinterpreter) gives fresh types.  The top floor of csrc/: it
 * includes every subsystem's public header to register their types and functions; nothing
 * includes it.
 */
#define PY_SSIZE_T_CLEAN
#include "base/base.h"

#include "core/core.h"
#include "memory/memory.h"
#include "arrays/arrays.h"
#include "graphs/graphs.h"
#include "launch/launch.h"
#include "jit/jit.h"
#include "nccl/nccl.h"

#define PY_ARRAY_UNIQUE_SYMBOL gh_ARRAY_API
#include <numpy/arrayobject.h>

/* The module functions, each table in the file of what it is about. */
static PyMethodDef *const function_tables[] = {
    gh_errors_methods,  gh_nvrtc_methods,     gh_current_methods,    gh_services_methods,
    gh_release_methods, gh_nvtx_methods,      gh_jit_methods,        gh_address_methods,
    gh_program_methods, gh_display_methods,   gh_array_copy_methods, gh_interop_methods,
    gh_live_methods,    gh_allocator_methods,
};

/* Each file's init of its types (into the module state's GH_TYPE_LIST fields) and of
   what else it adds to the module, in this order: a type's base comes before it. */
static int (*const type_inits[])(PyObject *module, gh_state *st) = {
    gh_device_init_type,     gh_context_init_type,   gh_stream_init_type,      gh_capture_init,
    gh_event_init_type,      gh_memory_init_type,    gh_devicearray_init_type, gh_dlpack_init,
    gh_code_image_init_type, gh_kernel_init_type,    gh_jit_init_type,         gh_pool_init_type,
    gh_graph_init_type,      gh_nccl_comm_init_type, gh_nccl_register_init,    gh_nccl_init,
    gh_array_index_init,     gh_interop_init,
};

static int
module_exec(PyObject *module)
{
    gh_state *st = gh_state_of_module(module);
    if (PyArray_ImportNumPyAPI() < 0) {
        return -1;
    }
    for (size_t i = 0; i < sizeof(type_inits) / sizeof(type_inits[0]); i++) {
        if (type_inits[i](module, st) < 0) {
            return -1;
        }
    }
    for (size_t i = 0; i < sizeof(function_tables) / sizeof(function_tables[0]); i++) {
        if (PyModule_AddFunctions(module, function_tables[i]) < 0) {
            return -1;
        }
    }
    return PyModule_AddIntConstant(module, "CUDA_HEADERS_VERSION", CUDA_VERSION);
}

static int
module_traverse(PyObject *module, visitproc visit, void *arg)
{
    gh_state *st = gh_state_of_module(module);
#define GH_TYPE_VISIT(name) Py_VISIT(st->name##Type);
    GH_TYPE_LIST(GH_TYPE_VISIT)
#undef GH_TYPE_VISIT
    Py_VISIT(st->default_pools);
    Py_VISIT(st->devices);
    Py_VISIT(st->array_allocator);
    Py_VISIT(st->pool_names[0]);
    Py_VISIT(st->pool_names[1]);
    int r = gh_interop_traverse(st, visit, arg);
    if (r == 0) {
        r = gh_services_traverse(st, visit, arg);
    }
    return r != 0 ? r : gh_errors_traverse(st, visit, arg);
}

static int
module_clear(PyObject *module)
{
    gh_state *st = gh_state_of_module(module);
    gh_event_cache_clear(st);
    Py_CLEAR(st->default_pools); /* before the types: the pools free what they hold */
    Py_CLEAR(st->devices);
    Py_CLEAR(st->array_allocator);
    Py_CLEAR(st->pool_names[0]);
    Py_CLEAR(st->pool_names[1]);
    gh_thread_array_allocator_clear(st);
    gh_interop_clear(st);
#define GH_TYPE_CLEAR(name) Py_CLEAR(st->name##Type);
    GH_TYPE_LIST(GH_TYPE_CLEAR)
#undef GH_TYPE_CLEAR
    gh_services_clear(st);
    gh_errors_clear(st);
    return 0;
}

static void
module_free(void *module)
{
    gh_state *st = gh_state_of_module((PyObject *)module);
    gh_release_free(st);
    module_clear((PyObject *)module);
    gh_live_free(st);
}

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, module_exec},
#ifdef Py_mod_gil
    /* Said outright for free-threaded CPython: the C core relies on the GIL throughout (pool
       lists, caches, the module state), so such an interpreter keeps the GIL on for it. */
    {Py_mod_gil, Py_MOD_GIL_USED},
#endif
    {0, NULL},
};

static PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "gpuhost._core",
    .m_doc = "gpuhost's C core: the CUDA driver and NVRTC, loaded at run time.",
    .m_size = sizeof(gh_state),
    .m_slots = module_slots,
    .m_traverse = module_traverse,
    .m_clear = module_clear,
    .m_free = module_free,
};

PyMODINIT_FUNC PyInit__core(void);

PyMODINIT_FUNC
PyInit__core(void)
{
    return PyModuleDef_Init(&module_def);
}
