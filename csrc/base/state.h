/* csrc/base/state.h: gpuhost._core's module state (PEP 573): the heap types, the devices made
 * so far, the releases held by defer_cleanup(), the event cache, the pools, the records of
 * live objects, and the Python functions the C code calls and the exception classes it
 * raises.  The ground of csrc/: it includes nothing of gpuhost's but the driver's table.  A
 * part of base.h, which the other folders include; errors.h and live.h stand on it.
 */
#ifndef GPUHOST_BASE_STATE_H
#define GPUHOST_BASE_STATE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <structmember.h>
#include <pthread.h>
#include <stdatomic.h>

#include "cuda_api.h"

/* The functions of gpuhost's Python side that the C code calls, registered once by the
   Python modules that define them (_core._set_helpers(name=function)); services.c calls
   them.  X(enum, name) */
#define GH_HELPER_LIST(X)                                                                          \
    X(DESCRIBE_IMAGE, "describe_image")                                                            \
    X(KERNEL_PARAM_TYPES, "kernel_param_types")                                                    \
    X(GLOBAL_ARRAY, "global_array")                                                                \
    X(COPY_DEVICE_LAYOUTS, "copy_device_layouts")                                                  \
    X(EXPORT_EVENT, "export_event")                                                                \
    X(NCCL_EMPTY, "nccl_empty")                                                                    \
    X(GC_COLLECT, "gc_collect")                                                                    \
    X(ARRAY_FIELD, "array_field")                                                                  \
    X(ARRAY_ASSIGN, "array_assign")                                                                \
    X(ARRAY_GPU_DATA, "array_gpu_data")                                                            \
    X(CTYPES_POINTER, "ctypes_pointer")                                                            \
    X(PLUGIN_CONTEXT_RESET, "plugin_context_reset")                                                \
    X(PLUGIN_MEMORY_INFO, "plugin_memory_info")                                                    \
    X(DEVICE_RESET_WARNING, "device_reset_warning")                                                \
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

/* An object's place in the list of the live objects of its kind that a Context.reset()
   frees (Allocations, Modules): `obj` is the object, borrowed (its dealloc takes it out
   first). */
typedef struct gh_live_link {
    struct gh_live_link *prev, *next;
    PyObject *obj;
} gh_live_link;

/* gpuhost's records of its live objects (live.c). */
typedef struct {
    Py_ssize_t counts[GH_LIVE__COUNT];   /* alive now, by kind */
    int recording;                       /* noting the objects made, and where */
    PyObject *skip;                      /* str: frames of files under it are looked past */
    gh_live_record *table;               /* open addressing by address, cap slots (2^k) */
    size_t cap, used, n;                 /* slots taken (removed ones too), records */
    Py_ssize_t lost;                     /* made while recording but not noted: no memory */
    gh_live_link *lists[GH_LIVE__COUNT]; /* the linked objects of each kind (live.h) */
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

/* What the floors above core/ free in a context when it is reset (numba's Context.reset():
   what gpuhost made in it goes, the context stays), registered once at module init by
   launch/ (Modules) and memory/ (Allocations, then the pools' blocks) and called by
   context.c in the order registered: the dependency inverted, as for the pools.  Never
   raise. */
#define GH_RESET_HOOKS 4
typedef void (*gh_reset_hook)(gh_state *st, gh_context *ctx);

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
    PyObject *helpers[GH_HELPER__COUNT];       /* the Python side's functions (services.c) */
    PyObject *array_allocator;                 /* device arrays' (memory/allocator.c) */
    gh_pool_hooks pool_hooks;                  /* pool.c's, for context.c and memory.c */
    gh_reset_hook reset_hooks[GH_RESET_HOOKS]; /* memory/'s and launch/'s, for context.c */
    int n_reset_hooks;
    gh_foreign_type foreign_types[GH_FOREIGN_TYPES]; /* exporters' types seen (interop.c) */
    int n_foreign_types;
    PyObject *typestrs;          /* dict: CUDA array interface typestr -> NumPy dtype (interop.c) */
    PyObject *interop_names[24]; /* interned attribute and key names (interop.c) */
    PyObject *pool_names[2];     /* "mem", "ptr", interned at init (pool.c's MemoryPointers) */
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
/* The module state of a gpuhost type that Python code may subclass, from `tp` (the type or a
   subclass: a Python subclass's own type has no module, the C base's has), the base known
   by its `dealloc`. */
static inline gh_state *
gh_state_of_subclass(PyTypeObject *tp, destructor dealloc)
{
    while (tp->tp_dealloc != dealloc && tp->tp_base != NULL) {
        tp = tp->tp_base;
    }
    return gh_state_of_type(tp);
}
static inline gh_state *
gh_state_of_module(PyObject *module)
{
    return (gh_state *)PyModule_GetState(module);
}

#endif /* GPUHOST_BASE_STATE_H */
