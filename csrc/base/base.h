/* csrc/base/'s public header, the ground floor every file of csrc/ includes: the module
 * state (PEP 573), the loader of libraries by path, errors (the one raising path), the
 * records of live objects, the registered Python services and the display helpers.  The
 * driver's table is cuda_api.h, which the fake driver includes too; what only base/'s own
 * files share is in base_internal.h.
 */
#ifndef GPUHOST_BASE_H
#define GPUHOST_BASE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <structmember.h>
#include <pthread.h>
#include <stdatomic.h>

#include "cuda_api.h"

/* ---- the module state ---- */
/* gpuhost._core's module state (PEP 573): the heap types, the devices made so far, the
 * releases held by defer_cleanup(), the event cache, the pools, the records of live objects,
 * and the Python functions the C code calls and the exception classes it raises.  It includes
 * nothing of gpuhost's but the driver's declarations: the ground floor of csrc/, which every
 * file may include.
 */
/* The functions of gpuhost's Python side that the C code calls, registered once by the
   Python modules that define them (_core._set_helpers(name=function)); services.c calls
   them.  X(enum, name) */
#define GH_HELPER_LIST(X)                                                                          \
    X(DESCRIBE_IMAGE, "describe_image")                                                            \
    X(GLOBAL_ARRAY, "global_array")                                                                \
    X(COPY_DEVICE_LAYOUTS, "copy_device_layouts")                                                  \
    X(EXPORT_EVENT, "export_event")                                                                \
    X(NCCL_EMPTY, "nccl_empty")                                                                    \
    X(GC_COLLECT, "gc_collect")                                                                    \
    X(ARRAY_GETITEM, "array_getitem")                                                              \
    X(ARRAY_SETITEM, "array_setitem")                                                              \
    X(ARRAY_TRANSPOSE, "array_transpose")                                                          \
    X(ARRAY_GPU_DATA, "array_gpu_data")                                                            \
    X(ARRAY_HOST, "array_host")                                                                    \
    X(PLUGIN_CONTEXT_RESET, "plugin_context_reset")                                                \
    X(PLUGIN_MEMORY_INFO, "plugin_memory_info")                                                    \
    X(JIT_LAUNCH_OF, "jit_launch_of")

typedef enum {
#define GH_HELPER_ENUM(e, name) GH_HELPER_##e,
    GH_HELPER_LIST(GH_HELPER_ENUM)
#undef GH_HELPER_ENUM
        GH_HELPER__COUNT
} gh_helper;

/* The exception classes of gpuhost/errors.py that the C core raises, handed over once by
   that module when it is imported (_core._set_exceptions(Name=class, ...)); errors.c picks
   one by kind.  X(enum, the class's name, unquoted) */
#define GH_EXCEPTION_LIST(X)                                                                       \
    X(CUDA_SUPPORT, CudaSupportError)                                                              \
    X(CUDA_DRIVER, CudaDriverError)                                                                \
    X(CUDA_API, CudaAPIError)                                                                      \
    X(CUDA_OUT_OF_MEMORY, CudaOutOfMemoryError)                                                    \
    X(INVALID_DEVICE, InvalidDeviceError)                                                          \
    X(STREAM_CAPTURE, StreamCaptureError)                                                          \
    X(GRAPH_UPDATE, GraphUpdateError)                                                              \
    X(NVRTC, NvrtcError)                                                                           \
    X(NVRTC_SUPPORT, NvrtcSupportError)                                                            \
    X(NCCL, NcclError)                                                                             \
    X(NCCL_SUPPORT, NcclSupportError)

typedef enum {
#define GH_EXCEPTION_ENUM(e, name) GH_EXC_##e,
    GH_EXCEPTION_LIST(GH_EXCEPTION_ENUM)
#undef GH_EXCEPTION_ENUM
        GH_EXC__COUNT
} gh_exception;

/* The kinds of objects owning a driver resource that gpuhost keeps records of (live.c): how
   many are alive, and, while the pytest plugin's leak check records, which ones were made
   since and where.  X(enum, the type's name, unquoted) */
#define GH_LIVE_LIST(X)                                                                            \
    X(ALLOCATION, Allocation)                                                                      \
    X(STREAM, Stream)                                                                              \
    X(EVENT, Event)                                                                                \
    X(MODULE, Module)

typedef enum {
#define GH_LIVE_ENUM(e, name) GH_LIVE_##e,
    GH_LIVE_LIST(GH_LIVE_ENUM)
#undef GH_LIVE_ENUM
        GH_LIVE__COUNT
} gh_live_kind;

/* One object made while recording (live.c): its address (NULL: a free slot), its kind, and
   the code and line of the Python frame that made it (code NULL: not known). */
typedef struct {
    PyObject *obj; /* borrowed: its dealloc removes the record */
    PyObject *code;
    int line;
    int kind;
} gh_live_record;

/* gpuhost's records of its live objects (live.c). */
typedef struct {
    Py_ssize_t counts[GH_LIVE__COUNT]; /* alive now, by kind */
    int recording;                     /* noting the objects made, and where */
    PyObject *skip;                    /* str: frames of files under it are looked past */
    gh_live_record *table;             /* open addressing by address, cap slots (2^k) */
    size_t cap, used, n;               /* slots taken (removed ones too), records */
    Py_ssize_t lost;                   /* made while recording but not noted: no memory */
} gh_live_records;

typedef struct gh_context gh_context;
typedef struct gh_pool gh_pool;
typedef struct gh_allocation gh_allocation;
typedef struct gh_state gh_state;

/* What the pools (pool.c, above) do for contexts and allocations (below), registered once at
   module init so that those files need not know pools: the dependency inverted. */
typedef struct {
    /* free the blocks every Pool of `ctx` holds, before the context is reset or released */
    void (*context_ending)(gh_state *st, gh_context *ctx);
    /* `size` bytes of device memory in `ctx` from its default Pool, ordered on `stream`
       (NULL: the legacy default stream); new reference or NULL */
    gh_allocation *(*device_alloc)(gh_state *st, gh_context *ctx, size_t size, PyObject *stream);
    /* give a pooled Allocation's memory back to its Pool; never raises */
    void (*give_back)(gh_allocation *a);
} gh_pool_hooks;

/* DeviceArray indexing done in array_index.c (above devicearray.c, which calls these),
   registered once at module init: the dependency inverted, as for the pools. */
typedef struct {
    /* `self`'s element at byte offset `offset` from its pointer: a NumPy scalar (new
       reference), NotImplemented (gpuhost's Python side reads it), or NULL with an error */
    PyObject *(*element)(PyObject *self, Py_ssize_t offset);
    /* self[key] = value: 1 done, 0 left to gpuhost's Python side, -1 error */
    int (*assign)(PyObject *self, PyObject *key, PyObject *value);
    /* iter(self): an iterator over its first axis (new reference), or NULL with an error */
    PyObject *(*iter)(PyObject *self);
} gh_array_hooks;

/* A release of a driver resource that waits: in a defer_cleanup() block, or until a
   driver callback thread has returned. */
typedef struct {
    gh_cu_id id;
    void *handle;
    gh_context *ctx; /* strong while held */
    uint64_t generation;
} gh_pending_release;

/* A CUevent whose Event was dropped, kept for reuse (event.c). */
#define GH_EVENT_CACHE 64
typedef struct {
    gh_context *ctx; /* strong */
    uint64_t generation;
    unsigned int flags;
    void *handle; /* CUevent */
} gh_cached_event;

/* A type whose instances interop.c reads as device arrays, and how (learnt once a type). */
#define GH_FOREIGN_TYPES 16
typedef struct {
    PyTypeObject *type;   /* strong */
    unsigned int version; /* type->tp_version_tag when it was learnt */
    int kind;             /* interop.c's GH_FROM_* (0: no device array) */
    char has_dlpack;      /* the type has __dlpack__ */
    char numba_typed;     /* the type has numba's _numba_type_ */
    char checked;         /* kind GH_FROM_CUPY: read once both ways and found the same */
    const void *api;      /* kind GH_FROM_EXCHANGE: its DLPackExchangeAPI */
    PyObject *stream_fn;  /* kind GH_FROM_CUPY: CuPy's get_current_stream (strong) */
} gh_foreign_type;

/* The heap types of the module state, one field `NameType` each: the fields, the module's
   traverse and its clear are generated from this one list (module.c). */
#define GH_TYPE_LIST(X)                                                                            \
    X(Device)                                                                                      \
    X(Context)                                                                                     \
    X(MemoryInfo)                                                                                  \
    X(Stream)                                                                                      \
    X(Event)                                                                                       \
    X(Allocation)                                                                                  \
    X(DeviceArray)                                                                                 \
    X(DeviceArrayIterator)                                                                         \
    X(DLPackOwner)                                                                                 \
    X(Module)                                                                                      \
    X(Kernel)                                                                                      \
    X(LaunchConfig)                                                                                \
    X(JitDispatcher)                                                                               \
    X(JitLaunch)                                                                                   \
    X(Pool)                                                                                        \
    X(Graph)                                                                                       \
    X(GraphExec)                                                                                   \
    X(GraphNode)                                                                                   \
    X(NcclComm)                                                                                    \
    X(NcclRegistration)                                                                            \
    X(NcclMemory)

/* Per-module state (PEP 573): the heap types, and the Device objects made so far. */
struct gh_state {
#define GH_TYPE_FIELD(name) PyTypeObject *name##Type;
    GH_TYPE_LIST(GH_TYPE_FIELD)
#undef GH_TYPE_FIELD
    PyObject *devices;        /* list of Device or None, one per ordinal, made on first use */
    int defer_depth;          /* nesting of defer_cleanup() blocks */
    gh_pending_release *held; /* releases held by defer_cleanup(), n_held of cap_held */
    Py_ssize_t n_held, cap_held;
    gh_cached_event events[GH_EVENT_CACHE]; /* dropped events' handles, for event() to reuse */
    int n_events;
    PyObject *default_pools; /* list: each device's default Pool (pool.c) by ordinal, or None */
    gh_pool *pools;          /* every live Pool, linked through its next_pool (pool.c) */
    PyObject *helpers[GH_HELPER__COUNT];             /* the Python side's functions (services.c) */
    PyObject *array_allocator;                       /* device arrays' (memory/allocator.c) */
    gh_pool_hooks pool_hooks;                        /* pool.c's, for context.c and memory.c */
    gh_array_hooks array_hooks;                      /* array_index.c's, for devicearray.c */
    gh_foreign_type foreign_types[GH_FOREIGN_TYPES]; /* exporters' types seen (interop.c) */
    int n_foreign_types;
    PyObject *typestrs;          /* dict: CUDA array interface typestr -> NumPy dtype (interop.c) */
    PyObject *interop_names[24]; /* interned attribute and key names (interop.c) */
    gh_live_records live;        /* live.c's records of the objects owning resources */
    /* Last: read only when raising, so that the fields above, which every allocation and
       launch reads, keep their places and cache lines. */
    PyObject *exceptions[GH_EXC__COUNT]; /* gpuhost.errors' classes (errors.c) */
};

/* Whether the interpreter is shutting down (a driver thread must not take the GIL). */
static inline int
gh_python_finalizing(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsFinalizing();
#else
    return _Py_IsFinalizing();
#endif
}

/* The module state of a gpuhost type's instance, or of the module itself. */
static inline gh_state *
gh_state_of_type(PyTypeObject *tp)
{
    return (gh_state *)PyType_GetModuleState(tp);
}
static inline gh_state *
gh_state_of_module(PyObject *module)
{
    return (gh_state *)PyModule_GetState(module);
}

/* ---- display.c ---- */
/* display.c: rich displays for Jupyter and IPython. */
/* A type's _repr_html_: its display `rows` (non-NULL) as an HTML table under `caption`
   (NULL passes its error on); steals both. */
PyObject *gh_repr_html(PyObject *rows, PyObject *caption);
/* A type's _repr_pretty_(printer, cycle) for `obj` from its display `rows` (NULL passes
   its error on); steals `rows`. */
PyObject *gh_repr_pretty(PyObject *obj, PyObject *args, PyObject *rows);
/* `n` bytes for people: "512 bytes", "1.5 MiB". New reference or NULL. */
PyObject *gh_format_bytes(unsigned long long n);
extern PyMethodDef gh_display_methods[];

/* ---- errors.c ---- */
/* errors.c: the one raising path.  CUDA, NVRTC and gpuhost's own errors become the
 * classes of gpuhost/errors.py; a driver that does not load becomes CudaSupportError.
 */
/* Set CudaAPIError, or the subclass `res` calls for (CudaOutOfMemoryError,
   StreamCaptureError), for `res` returned by entry point `id`; returns -1.  `res` must not
   be CUDA_SUCCESS. */
int gh_raise_cuda(CUresult res, gh_cu_id id);
/* gh_raise_cuda with `detail` (e.g. a JIT log; may be NULL) appended to the message. */
int gh_raise_cuda_detail(CUresult res, gh_cu_id id, const char *detail);
/* 0 if res is CUDA_SUCCESS, else raise as gh_raise_cuda and return -1. */
static inline int
gh_check(CUresult res, gh_cu_id id)
{
    return res == CUDA_SUCCESS ? 0 : gh_raise_cuda(res, id);
}
/* Raise gpuhost.errors' class `kind` (message); returns -1.  For the classes that take one
   string. */
int gh_raise(gh_exception kind, const char *fmt, ...);
/* Warn (RuntimeWarning, never raise) that cleanup call `id` failed with `res`. */
void gh_warn_cleanup(CUresult res, gh_cu_id id);
/* errors.c: raise NvrtcError(code, name, call, log); returns -1. */
int gh_raise_nvrtc(int code, const char *name, const char *call, const char *log);
/* Load the driver the first time (cuda_api.c's gh_driver_load); 0, or -1 with
   CudaSupportError (no usable driver) or CudaDriverError (a child forked after it loaded)
   set. */
int gh_driver_ensure(void);
/* _set_exceptions, is_available, driver_version, driver_library: module functions. */
extern PyMethodDef gh_errors_methods[];
/* New reference to gpuhost.errors' class `kind`, as registered in the module state `st` (NULL:
   in this interpreter's gpuhost._core); NULL with RuntimeError if it never was. */
PyObject *gh_exception_class(gh_state *st, gh_exception kind);
/* Visit, clear (module teardown) the registered classes. */
int gh_errors_traverse(gh_state *st, visitproc visit, void *arg);
void gh_errors_clear(gh_state *st);

/* ---- libload.c ---- */
/* Loading a shared library at run time by a list of candidate paths: the one place that
 * calls dlopen/dlsym for the libraries gpuhost finds on its own (NVRTC, NCCL).
 *
 * The paths come from a function of gpuhost._libpaths, called with `major`; the first path
 * that loads and has every required symbol in `names` wins, and its addresses fill `slots`;
 * the optional ones (those a newer version added) are looked up when first used.  The
 * outcome (success, or the list of what was tried and why each failed) is kept for the life
 * of the process.
 */
typedef struct {
    const char *what;         /* "libnvrtc", for messages */
    const char *candidates;   /* the gpuhost._libpaths function that lists the paths */
    int major;                /* its argument */
    const char *const *names; /* symbol names, n_names of them */
    int n_names;
    int n_required;       /* the first n_required must load (0: all); the rest are optional */
    void **slots;         /* filled with the symbols' addresses */
    void *handle;         /* dlopen's, once loaded */
    pthread_mutex_t lock; /* PTHREAD_MUTEX_INITIALIZER */
    atomic_int state;     /* 0 not tried, 1 loaded, 2 failed */
    char error[4096];     /* "<what> was not found. Tried:\n  path: why..." */
    char path[1024];      /* the path that loaded */
} gh_lib;

/* Load `lib` the first time (without the GIL while dlopen runs); 1 if it is loaded, 0 if it
   could not be (lib->error says why; nothing raised), -1 with an exception (the candidate
   list could not be had). */
int gh_lib_ensure(gh_lib *lib);

/* The address of optional symbol `index` (n_required or past) of a loaded `lib`, looked up
   the first time it is asked for; NULL where the library has none (an older version). */
void *gh_lib_optional(gh_lib *lib, int index);

/* The path that loaded, or NULL. */
const char *gh_lib_path(gh_lib *lib);

/* ---- live.c ---- */
/* live.c: gpuhost's records of its objects that own driver resources (allocations, streams,
 * events, modules): how many of each are alive, and, while the pytest plugin's leak check
 * records, which ones were made since and by which line of Python.  Each type's file calls
 * gh_live_add when it makes one and gh_live_remove when it frees one.
 */
/* Note `obj` (a new object of `kind`) while recording; out of line, for gh_live_add. */
void gh_live_note(gh_state *st, gh_live_kind kind, PyObject *obj);
/* Drop the record of `obj`, if there is one; for gh_live_remove. */
void gh_live_forget(gh_state *st, PyObject *obj);
/* Free the records (module_free). */
void gh_live_free(gh_state *st);

/* A new object of `kind` was made.  Never raises: a record that cannot be made is
   counted as lost. */
static inline void
gh_live_add(gh_state *st, gh_live_kind kind, PyObject *obj)
{
    st->live.counts[kind]++;
    if (st->live.recording) {
        gh_live_note(st, kind, obj);
    }
}

/* An object of `kind` is being freed (its dealloc).  Never raises. */
static inline void
gh_live_remove(gh_state *st, gh_live_kind kind, PyObject *obj)
{
    st->live.counts[kind]--;
    if (st->live.n > 0) {
        gh_live_forget(st, obj);
    }
}

extern PyMethodDef gh_live_methods[];

/* ---- services.c ---- */
/* services.c: calling the Python functions gpuhost's Python side registers once (the module
 * state's GH_HELPER_LIST), and extending a type from another file (C) or module (Python).
 */
/* Call the Python function registered as helper `h` with `args` (a tuple; NULL: no
   arguments).  New reference, or NULL (RuntimeError if gpuhost's Python side never
   registered it). */
PyObject *gh_helper_call(gh_state *st, gh_helper h, PyObject *args);
/* gh_helper_call with keyword arguments `kwargs` (a dict, or NULL; only with a tuple of
   args). */
PyObject *gh_helper_call_kw(gh_state *st, gh_helper h, PyObject *args, PyObject *kwargs);
/* Add each method of `defs` (NULL-terminated) to `tp` as gh_type_attach does; 0 or -1. */
int gh_type_attach_methods(PyTypeObject *tp, PyMethodDef *defs);
/* _set_helpers(**functions), _attach(type, name, value): module functions. */
extern PyMethodDef gh_services_methods[];
/* Visit, clear (module teardown) the registered helpers. */
int gh_services_traverse(gh_state *st, visitproc visit, void *arg);
void gh_services_clear(gh_state *st);

#endif /* GPUHOST_BASE_H */
