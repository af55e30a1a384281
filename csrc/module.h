/* gpuhost._core: module state and the helpers every file shares.
 *
 * Each C file in csrc/ wraps one driver object (device.c, context.c, ...) and exports one
 * gh_<thing>_init_type(); the declarations below are the whole cross-file surface.
 */
#ifndef GPUHOST_MODULE_H
#define GPUHOST_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <structmember.h>

#include "cuda_api.h"
#include "nvrtc_api.h"

typedef struct gh_context gh_context;
typedef struct gh_pool gh_pool;

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

/* Per-module state (PEP 573): the heap types, and the Device objects made so far. */
typedef struct {
    PyTypeObject *DeviceType;
    PyTypeObject *ContextType;
    PyTypeObject *MemoryInfoType;
    PyTypeObject *StreamType;
    PyTypeObject *EventType;
    PyTypeObject *AllocationType;
    PyTypeObject *DeviceArrayType;
    PyTypeObject *DLPackOwnerType;
    PyTypeObject *ModuleType;
    PyTypeObject *KernelType;
    PyTypeObject *LaunchConfigType;
    PyTypeObject *JitDispatcherType;
    PyTypeObject *JitLaunchType;
    PyTypeObject *PoolType;
    PyTypeObject *GraphType;
    PyTypeObject *GraphExecType;
    PyTypeObject *GraphNodeType;
    PyTypeObject *NcclCommType;
    PyObject *devices;        /* list of Device or None, one per ordinal, made on first use */
    int defer_depth;          /* nesting of defer_cleanup() blocks */
    gh_pending_release *held; /* releases held by defer_cleanup(), n_held of cap_held */
    Py_ssize_t n_held, cap_held;
    gh_cached_event events[GH_EVENT_CACHE]; /* dropped events' handles, for event() to reuse */
    int n_events;
    PyObject *default_pools; /* list: each device's default Pool (pool.c) by ordinal, or None */
    gh_pool *pools;          /* every live Pool, linked through its next_pool (pool.c) */
} gh_state;

extern PyModuleDef gh_module_def;

/* The driver's function table, filled once by gh_driver_ensure(). */
extern gh_cuda_api gh_cu;

/* ---- cuda_api.c: the driver loader ---- */

/* Load libcuda and cuInit it the first time; 0, or -1 with CudaSupportError set. */
int gh_driver_ensure(void);
/* 1 if the driver loaded and has a device, else 0; never raises. */
int gh_driver_usable(void);
/* The name of entry point `id`, e.g. "cuMemAlloc". */
const char *gh_cu_name(gh_cu_id id);
/* The library path that was loaded, or NULL. */
const char *gh_driver_path(void);
/* The driver's CUDA version as an int (13000), after gh_driver_ensure() succeeded. */
int gh_driver_version(void);
/* 1 in a child made by fork() after the driver was loaded: CUDA is unusable there, and
   gh_driver_ensure() raises CudaDriverError with gh_fork_message. */
int gh_driver_forked(void);
extern const char gh_fork_message[];

/* ---- errors.c: the one raising path ---- */

/* Set CudaAPIError (or its out-of-memory subclass) for `res` returned by entry point `id`;
   returns -1.  `res` must not be CUDA_SUCCESS. */
int gh_raise_cuda(CUresult res, gh_cu_id id);
/* gh_raise_cuda with `detail` (e.g. a JIT log; may be NULL) appended to the message. */
int gh_raise_cuda_detail(CUresult res, gh_cu_id id, const char *detail);
/* 0 if res is CUDA_SUCCESS, else raise as gh_raise_cuda and return -1. */
static inline int
gh_check(CUresult res, gh_cu_id id)
{
    return res == CUDA_SUCCESS ? 0 : gh_raise_cuda(res, id);
}
/* Raise gpuhost.errors.<cls>(message); returns -1.  For the classes that take one string. */
int gh_raise(const char *cls, const char *fmt, ...);
/* The CUresult's enum name ("CUDA_ERROR_OUT_OF_MEMORY"), or NULL for an unknown code. */
const char *gh_cu_result_name(CUresult res);
/* Warn (RuntimeWarning, never raise) that cleanup call `id` failed with `res`. */
void gh_warn_cleanup(CUresult res, gh_cu_id id);

/* ---- module.c ---- */

/* Call <module>.<name>(*args, **kwargs) (args may be NULL: no arguments), for the parts of
   gpuhost written in Python; new reference or NULL. */
PyObject *gh_call_python(const char *module, const char *name, PyObject *args, PyObject *kwargs);
/* module.name(self, *args, **kwargs): a C method written in Python. */
PyObject *gh_call_python_method(const char *module, const char *name, PyObject *self,
                                PyObject *args, PyObject *kwargs);

/* Set while a driver thread runs a host callback: CUDA calls are not allowed there. */
extern _Thread_local int gh_on_driver_thread;
/* Free a driver resource of `ctx` made in its `generation`: `id` is the destroy call
   (StreamDestroy, EventDestroy, MemFree, MemFreeHost, MemHostUnregister).  Done now; at
   the end of the outermost defer_cleanup() block; or, on a driver callback thread, soon
   after on the main thread.  Nothing is done if the context was reset or closed since.
   Never raises; a failure becomes a warning. */
void gh_release(gh_context *ctx, uint64_t generation, gh_cu_id id, void *handle);

/* Hold every gh_release until the matching gh_cleanup_resume (as a defer_cleanup() block
   does): while gpuhost captures on a stream, a free the garbage collector triggers would
   otherwise be a call the driver refuses during a capture, and would invalidate it. */
void gh_cleanup_defer(gh_state *st);
void gh_cleanup_resume(gh_state *st);

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

/* ---- device.c ---- */

typedef struct {
    PyObject_HEAD
    CUdevice handle;
    int id;
    PyObject *name;       /* str */
    PyObject *uuid;       /* str "GPU-..." */
    PyObject *pci_bus_id; /* str */
    PyObject *context;    /* the Device's Context, made on first use; or NULL */
    PyObject *weakreflist;
    size_t total_memory;
    int cc_major, cc_minor;
} gh_device;

int gh_device_init_type(PyObject *module, gh_state *st);
/* Number of devices; -1 with an exception set if the driver is unusable. */
int gh_device_count(void);
/* Borrowed reference to Device `ordinal` (0 <= ordinal < count), made on first use;
   NULL with InvalidDeviceError (which says how many devices exist) for a bad ordinal. */
gh_device *gh_device_get(gh_state *st, long ordinal);
/* Borrowed Device named by `obj`: a Device, a Context (its device) or an ordinal; NULL with
   TypeError naming `what`, or InvalidDeviceError. */
gh_device *gh_device_from_object(gh_state *st, PyObject *obj, const char *what);
/* *out = whether `dev` can access `peer`'s memory directly (1 for the same device); 0 or -1. */
int gh_device_can_access_peer(gh_device *dev, gh_device *peer, int *out);

/* ---- context.c ---- */

/* A device's primary context, as gpuhost holds it.  `handle` is NULL while gpuhost holds
   no retain on it (before first use, after close() or reset()); `generation` counts those
   ends, so an object made under an older generation knows its resources are gone. */
struct gh_context {
    PyObject_HEAD
    gh_device *device; /* strong */
    CUcontext handle;
    uint64_t generation;
    CUcontext stale; /* the handle gpuhost held last (a thread may still have it current) */
    PyObject *weakreflist;
    /* What ended the last generation, for the errors of objects made before it (a static
       string: "gpuhost.close()" or "a reset() of the device"), or NULL. */
    const char *ended_by;
};

int gh_context_init_type(PyObject *module, gh_state *st);
/* Borrowed reference to the Context of `dev`, made (not yet retained) on first use. */
gh_context *gh_context_of(gh_state *st, gh_device *dev);
/* Retain the primary context if gpuhost does not hold it yet; 0 or -1. */
int gh_context_activate(gh_context *ctx);
/* New reference to the Context current in this thread; when none is, device `devnum`'s
   (devnum < 0: device 0) is made current.  devnum >= 0 naming another device than the
   current one raises CudaDriverError. */
gh_context *gh_current_context(gh_state *st, int devnum);
/* Borrowed Context current in this thread, or NULL with no exception when none is
   (or the current one is not a gpuhost primary context); NULL with an error on failure:
   tell them apart with PyErr_Occurred(). */
gh_context *gh_context_current_or_null(gh_state *st);
/* Make `ctx` current in place of the top of this thread's stack; 0 or -1. */
int gh_context_make_current(gh_context *ctx);
/* Push `ctx` on this thread's stack (retaining it first if needed); 0 or -1. */
int gh_context_push(gh_context *ctx);
/* Pop `ctx`, which must be on top of this thread's stack (else CudaDriverError); 0 or -1. */
int gh_context_pop(gh_context *ctx);
/* Make `ctx` current for a short operation: *pushed says whether gh_context_leave must
   pop it.  0 or -1.  Pair every successful enter with one leave. */
int gh_context_enter(gh_context *ctx, int *pushed);
/* Undo gh_context_enter; 0, or -1 with an exception if the pop failed. */
int gh_context_leave(gh_context *ctx, int pushed);
/* cuCtxEnablePeerAccess (enable) or cuCtxDisablePeerAccess from `ctx` to `peer`'s primary
   context (another device); already as asked counts as done.  0 or -1 (a device without a
   peer path: CudaAPIError PEER_ACCESS_UNSUPPORTED, saying so). */
int gh_context_peer_access(gh_context *ctx, gh_device *peer, int enable);
/* cuDevicePrimaryCtxReset for the context's device: everything in it is destroyed, its
   generation moves on; if it was current in this thread, a fresh one is.  0 or -1. */
int gh_context_reset(gh_context *ctx);
/* Pop primary contexts off this thread's stack; with `release_all` also release every
   primary context gpuhost holds (numba's cuda.close() in the main thread). 0 or -1. */
int gh_context_close_all(gh_state *st, int release_all);

/* Raise CudaAPIError(CUDA_ERROR_CONTEXT_IS_DESTROYED) for call `id` and return -1 if
   `generation` is not `ctx`'s live generation (the context was reset or closed since the
   object was made); else 0. */
int gh_context_check_alive(gh_context *ctx, uint64_t generation, gh_cu_id id);

/* ---- stream.c ---- */

/* 0 if `h` can be a stream handle (0, 1, 2, or an aligned user-space address past the
   first 64 KiB); else -1 with ValueError naming `what`.  The driver follows a handle
   unchecked, so an impossible one must never reach it; a stale one cannot be detected. */
int gh_stream_handle_check(uintptr_t h, const char *what);

typedef enum {
    GH_STREAM_OWNED,      /* made by gpuhost, destroyed with its object */
    GH_STREAM_DEFAULT,    /* handle 0: the current context's default stream */
    GH_STREAM_LEGACY,     /* CU_STREAM_LEGACY */
    GH_STREAM_PER_THREAD, /* CU_STREAM_PER_THREAD */
    GH_STREAM_EXTERNAL,   /* someone else's: never destroyed by gpuhost */
} gh_stream_kind;

typedef struct {
    PyObject_HEAD
    gh_context *context; /* strong */
    CUstream handle;
    uint64_t generation;
    gh_stream_kind kind;
    /* A kernel was launched on it since its last synchronize(), which then waits at once
       instead of first asking whether the stream is idle.  A hint only (races are
       harmless): either way the wait is the driver's. */
    int launched;
    /* While gpuhost captures on it (begin_capture): a list of what the captured work uses
       (host functions, pool blocks), and a list of the Kernels launched; both go to the
       Graph end_capture() makes.  NULL when not capturing. */
    PyObject *capture, *capture_kernels;
    PyObject *weakreflist;
} gh_stream;

/* A stream argument resolved: the handle to pass to the driver, the gpuhost Context it
   is known to belong to (borrowed; NULL for a foreign stream whose context is not known),
   and whether it is one of the per-context default streams, which refer to whatever
   context is current and so need `context` made current around the call. */
typedef struct {
    CUstream handle;
    gh_context *context;
    int is_default;
} gh_stream_ref;

int gh_stream_init_type(PyObject *module, gh_state *st);
/* Resolve a `stream=` argument: NULL, None or 0 (the default stream), a gpuhost Stream,
   or an object exporting __cuda_stream__ (cuda.core, CuPy) or a CuPy / PyTorch stream.
   0, or -1 with TypeError naming what is accepted. */
int gh_stream_resolve(gh_state *st, PyObject *obj, gh_stream_ref *out);

/* ---- event.c ---- */

int gh_event_init_type(PyObject *module, gh_state *st);
/* Destroy the cached event handles (module teardown). */
void gh_event_cache_clear(gh_state *st);
/* A new Event in `ctx` made with cuEventCreate `flags` (`ctx_is_current`: the caller
   knows ctx is current, so it is not made so); new reference or NULL. */
typedef struct {
    PyObject_HEAD
    gh_context *context; /* strong */
    CUevent handle;
    uint64_t generation;
    unsigned int flags;
    int recorded;
    int imported; /* opened from another process's IPC handle */
    PyObject *weakreflist;
} gh_event;
PyObject *gh_event_new(gh_state *st, gh_context *ctx, unsigned int flags, int ctx_is_current);

/* ---- memory.c ---- */

typedef enum {
    GH_ALLOC_DEVICE,
    GH_ALLOC_MANAGED,
    GH_ALLOC_PINNED,
    GH_ALLOC_MAPPED,
    GH_ALLOC_REGISTERED,
    GH_ALLOC_IPC, /* another process's device memory, opened with cuIpcOpenMemHandle */
} gh_alloc_kind;

/* One allocation (or host registration); arrays viewing it hold a reference. */
typedef struct {
    PyObject_HEAD
    gh_context *context; /* strong */
    uint64_t generation;
    gh_alloc_kind kind;
    size_t size;
    CUdeviceptr dptr;     /* device address; 0 for host memory not mapped */
    void *host;           /* host address for host kinds and managed memory, else NULL */
    Py_buffer registered; /* the registered object's buffer (GH_ALLOC_REGISTERED) */
    gh_pool *pool;        /* strong: the Pool the memory goes back to, or NULL (pool.c) */
    void *block;          /* the pool's record of the memory, while pool is set */
    Py_ssize_t exports;   /* buffer views handed out */
    PyObject *weakreflist;
} gh_allocation;

int gh_memory_init_type(PyObject *module, gh_state *st);
/* Allocate `size` bytes of `kind` in `ctx`; `flags` for cuMemHostAlloc/cuMemAllocManaged.
   New reference, or NULL with CudaOutOfMemoryError stating the size, or CudaAPIError. */
gh_allocation *gh_allocate(gh_state *st, gh_context *ctx, gh_alloc_kind kind, size_t size,
                           unsigned int flags);
/* Page-lock `obj`'s buffer with cuMemHostRegister `flags`; new reference or NULL. */
gh_allocation *gh_register(gh_state *st, gh_context *ctx, PyObject *obj, unsigned int flags);
/* Raise CudaOutOfMemoryError for `size` bytes of `what` with the device's free/total. -1. */
int gh_raise_oom(gh_context *ctx, const char *what, size_t size, gh_cu_id id);
/* gh_raise_oom with `detail` (e.g. a pool's statistics; may be NULL) after the sizes. */
int gh_raise_oom_detail(gh_context *ctx, const char *what, size_t size, gh_cu_id id,
                        const char *detail);
/* A new Allocation of `size` bytes of `kind` in `ctx` that owns no memory yet (the caller
   sets dptr/host, or pool and block); new reference or NULL. */
gh_allocation *gh_allocation_new(gh_state *st, gh_context *ctx, gh_alloc_kind kind, size_t size);

/* ---- pool.c: memory pools, the default allocator of device memory ---- */

int gh_pool_init_type(PyObject *module, gh_state *st);
/* `size` bytes of device memory in `ctx` from its default Pool (GPUHOST_ALLOCATOR picks
   its mode), ordered on `stream` (a stream= argument; NULL: the legacy default stream).
   New reference, or NULL with CudaOutOfMemoryError (after releasing held blocks and
   collecting garbage once) or another error. */
gh_allocation *gh_pool_device_alloc(gh_state *st, gh_context *ctx, size_t size, PyObject *stream);
/* Give a pooled Allocation's memory back to its Pool and clear a->pool; never raises. */
void gh_pool_release(gh_allocation *a);
/* Free the blocks every Pool of `ctx` holds, before the context is reset or released. */
void gh_pool_context_ending(gh_state *st, gh_context *ctx);

/* ---- devicearray.c ---- */

#define GH_MAXDIMS 64 /* NumPy 2's limit */

/* A view of device memory: address, layout, and what keeps the memory alive. */
typedef struct {
    PyObject_HEAD
    gh_context *context; /* strong */
    uint64_t generation;
    CUdeviceptr ptr;  /* address of the first element */
    PyObject *owner;  /* keeps the memory alive (an Allocation or a foreign object); or NULL */
    void *dtype;      /* PyArray_Descr *, strong */
    PyObject *stream; /* the bound stream, or NULL */
    PyObject *weakreflist;
    int ndim;
    int readonly; /* memory its exporter declared read-only (CUDA array interface data[1]) */
    /* gpuhost.jit's key of this array's numba type (jit_args.c), made on its first launch
       (the layout never changes): jit_key[0] 0 not made yet, 'A' made, 'x' not cacheable */
    unsigned char jit_key[6];
    Py_ssize_t shape[GH_MAXDIMS];
    Py_ssize_t strides[GH_MAXDIMS];
} gh_devicearray;

int gh_devicearray_init_type(PyObject *module, gh_state *st);
/* A new DeviceArray viewing `ptr` in `ctx` (made in `generation`), kept alive by `owner`;
   `dtype` is a PyArray_Descr *.  New reference or NULL. */
PyObject *gh_devicearray_new(gh_state *st, gh_context *ctx, uint64_t generation, CUdeviceptr ptr,
                             PyObject *owner, void *dtype, int ndim, const Py_ssize_t *shape,
                             const Py_ssize_t *strides, PyObject *stream);

/* ---- staging.c: pageable host copies through a pinned ring ---- */

/* Bytes from which a pageable copy is staged: GPUHOST_STAGING_THRESHOLD both ways, else
   2 MiB (below that the driver's own copy is as fast: the ring's fixed costs are not paid
   back). */
size_t gh_staging_threshold(void);
/* Whether `host` is pageable memory (not pinned or registered with the driver). */
int gh_host_is_pageable(const void *host);
/* Copy nbytes between pageable `host` and `dptr` (to_host: device to host) on `stream`,
   through the staging ring, and wait for it; the context must be current and the GIL
   released.  The driver's result; on failure *failed names the call. */
CUresult gh_staged_copy(int to_host, void *host, CUdeviceptr dptr, size_t nbytes, CUstream stream,
                        gh_cu_id *failed);

/* ---- dlpack.c ---- */

int gh_dlpack_init(PyObject *module, gh_state *st);
/* DeviceArray.__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None). */
PyObject *gh_dlpack_export(gh_devicearray *a, PyObject *args, PyObject *kwargs);

/* ---- cumodule.c ---- */

/* A loaded CUmodule. */
typedef struct {
    PyObject_HEAD
    gh_context *context; /* strong */
    uint64_t generation;
    CUmodule handle;       /* NULL once freed */
    PyObject *param_types; /* {symbol: ((kind, size, align), ...)} from the PTX, or None */
    PyObject *lowered;     /* {name expression: lowered name}, or None */
    PyObject *info_log;    /* str */
    int unloaded;          /* unload() was called: no more launches */
    int globals_out;       /* get_global() handed out addresses: free only at dealloc */
    PyObject *weakreflist;
} gh_module;

int gh_cumodule_init_type(PyObject *module, gh_state *st);
/* 0 if module `m` can still be used by call `id`; else CudaAPIError and -1 (unloaded, or
   its context reset or closed). */
int gh_module_check_usable(gh_module *m, gh_cu_id id);

/* ---- kernel.c ---- */

int gh_kernel_init_type(PyObject *module, gh_state *st);

/* ---- jit_launch.c: gpuhost.jit's launches ---- */

int gh_jit_init_type(PyObject *module, gh_state *st);
/* _jit_layout(array) and _jit_usable(kernel), module functions for gpuhost/_numba.py */
extern PyMethodDef gh_jit_methods[];

/* ---- graph.c ---- */

int gh_graph_init_type(PyObject *module, gh_state *st);
/* A new Graph owning `handle` (a graph of ctx), keeping alive the objects of list `keep` and
   checking the Kernels of list `kernels` before each launch (either NULL: empty).  On
   failure the handle is destroyed. */
PyObject *gh_graph_wrap(gh_state *st, gh_context *ctx, CUgraph handle, PyObject *keep,
                        PyObject *kernels);
/* Add `kernel` to list `list` (a graph's or a capture's Kernels) unless it is there, and
   the items of list `from` missing from list `to`; 0 or -1. */
int gh_graph_add_kernel(PyObject *list, PyObject *kernel);
int gh_graph_add_kernels(PyObject *to, PyObject *from);
/* The host function of graph host nodes and captured host functions: `data` is a
   (fn,) or (fn, arg) tuple the graph keeps; fn() or fn(arg) runs with the GIL. */
void CUDA_CB gh_host_fn_trampoline(void *data);
/* A new Kernel for function `f` of module `m`, asked for as `name`, with symbol `symbol`;
   `types` is the PTX's ((kind, size, align), ...) for it, or NULL/None when unknown.
   New reference or NULL. */
PyObject *gh_kernel_new(gh_state *st, gh_module *m, CUfunction f, PyObject *name, PyObject *symbol,
                        PyObject *types);

/* ---- nvtx.c ---- */

extern PyMethodDef gh_nvtx_methods[];

/* ---- address_api.c: memcpy, mem_prefetch, mem_advise, device_by_pci_bus_id ---- */

extern PyMethodDef gh_address_methods[];

/* ---- nvrtc_api.c: the NVRTC loader ---- */

extern gh_nvrtc_api gh_nvrtc;
/* Load libnvrtc the first time; 0, or -1 with NvrtcSupportError listing the paths tried. */
int gh_nvrtc_ensure(void);
/* The libnvrtc path that was loaded, or NULL. */
const char *gh_nvrtc_path(void);
/* 0 if res is NVRTC_SUCCESS, else raise NvrtcError naming entry point `id`; -1. */
int gh_check_nvrtc(nvrtcResult res, gh_nvrtc_id id);
/* errors.c: raise NvrtcError(code, name, call, log); returns -1. */
int gh_raise_nvrtc(int code, const char *name, const char *call, const char *log);

/* ---- program.c: NVRTC compilation (nvrtc_compile, nvrtc_supported_archs) ---- */

extern PyMethodDef gh_program_methods[];

/* ---- display.c: rich displays for Jupyter and IPython ---- */

/* An HTML table: `caption` (or NULL/None), `header` (a sequence of column names, or
   NULL/None: the first cell of each row is its label), `rows` (a sequence of sequences);
   every cell is str()'d and HTML-escaped. New reference or NULL. */
PyObject *gh_html_table(PyObject *caption, PyObject *header, PyObject *rows);
/* IPython's _repr_pretty_: printer.text(repr(obj) + one "\n  label: value" per (label,
   value) tuple of `rows`), repr(obj) alone when `cycle`. New reference or NULL. */
PyObject *gh_pretty(PyObject *printer, int cycle, PyObject *obj, PyObject *rows);
/* A type's _repr_html_: its display `rows` (non-NULL) as an HTML table under `caption`
   (NULL passes its error on); steals both. */
PyObject *gh_repr_html(PyObject *rows, PyObject *caption);
/* A type's _repr_pretty_(printer, cycle) for `obj` from its display `rows` (NULL passes
   its error on); steals `rows`. */
PyObject *gh_repr_pretty(PyObject *obj, PyObject *args, PyObject *rows);
/* `n` bytes for people: "512 bytes", "1.5 MiB". New reference or NULL. */
PyObject *gh_format_bytes(unsigned long long n);
extern PyMethodDef gh_display_methods[];

#endif /* GPUHOST_MODULE_H */
