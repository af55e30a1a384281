/* csrc/core/'s public header: devices, contexts, streams, events and deferred releases,
 * as the floors above (memory, arrays, launch, graphs, jit, nccl) and module.c use them.
 * What only core/'s files share is in core_internal.h.
 */
#ifndef GPUHOST_CORE_H
#define GPUHOST_CORE_H

#include "base/base.h"

/* ---- address_api.c ---- */
/* address_api.c: memcpy, mem_prefetch, mem_advise, device_by_pci_bus_id. */
extern PyMethodDef gh_address_methods[];

/* ---- device.c ---- */
/* device.c: the Device type (a CUdevice and what gpuhost knows of it). */
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
/* context.c: the Context type (a device's primary context as gpuhost holds it) and this
 * thread's context stack.
 */
/* A device's primary context, as gpuhost holds it.  `handle` is NULL while gpuhost holds
   no retain on it (before first use, after close() or a reset of the device).
   `generation` counts the ends of what gpuhost made in it: close(), Device.reset() and
   Context.reset() (numba's: gpuhost's memory and modules freed, the context alive), so an
   object made under an older generation knows its memory is gone.  `live_since` is the
   generation since which gpuhost holds the driver context it holds now: an object of a
   generation at or past it lives in that context (its handle is valid: a stream, an event,
   a graph made before a Context.reset() is still released), an older one's handle died
   with its context. */
struct gh_context {
    PyObject_HEAD
    gh_device *device; /* strong */
    CUcontext handle;
    uint64_t generation;
    uint64_t live_since;
    /* The handles gpuhost held before, newest at stale[0] (a thread may still have one
       current, or deeper on its stack: it stands for the device's context then). */
#define GH_CONTEXT_STALE 4
    CUcontext stale[GH_CONTEXT_STALE];
    PyObject *weakreflist;
    /* What ended the last generation (a static string: "gpuhost.close()", "Device.reset()",
       "Context.reset()"), and the last driver context gpuhost held (one of the first two),
       for the errors of objects made before; or NULL. */
    const char *ended_by, *context_ended_by;
    /* The event that orders one stream after another (gh_stream_order_after), made on first
       use in generation `order_generation`, destroyed when gpuhost's retain ends. */
    CUevent order_event;
    uint64_t order_generation;
    /* gpuhost streams capturing a graph in it now (capture.c counts them): a reset refuses
       to free memory and modules that the capture may be using. */
    int capturing;
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

/* Raise CudaAPIError(CUDA_ERROR_CONTEXT_IS_DESTROYED) for call `id` and return -1 if
   `generation` is not `ctx`'s live generation (the context was reset or closed since the
   object was made: memory, modules, arrays and graphs made before are gone); else 0. */
int gh_context_check_alive(gh_context *ctx, uint64_t generation, gh_cu_id id);
/* The same for streams and events, which a Context.reset() leaves alive: -1 (raised) only if
   the driver context they were made in is gone (close(), a reset of the device). */
int gh_context_check_live(gh_context *ctx, uint64_t generation, gh_cu_id id);
/* Whether a handle made in `generation` of `ctx` is still valid in the context gpuhost
   holds (no raise). */
static inline int
gh_context_handle_live(const gh_context *ctx, uint64_t generation)
{
    return ctx->handle != NULL && generation >= ctx->live_since;
}
/* numba's Device.reset(): Context.reset() (what gpuhost made in the context freed), gpuhost's
   retain released, then cuDevicePrimaryCtxReset; where the context was current in this
   thread, the device's new one is.  If other libraries still hold the primary context, a
   DeviceResetWarning names them and the context is left to them, unless `force`.  0 or
   -1. */
int gh_device_reset(gh_state *st, gh_device *dev, int force);

/* ---- current.c ---- */
/* current.c: the module functions of this thread's current device and context
 * (device_count, get_device, select_device, current_device, current_context, synchronize,
 * close).
 */
extern PyMethodDef gh_current_methods[];

/* ---- event.c ---- */
/* event.c: the Event type, and the cache of dropped events' handles. */
int gh_event_init_type(PyObject *module, gh_state *st);
/* Destroy the cached event handles (module teardown). */
void gh_event_cache_clear(gh_state *st);
/* An Event: a CUevent of a context (event.c's gh_event_new makes one; core_internal.h
   declares it for core/'s own files, stream.c's Stream.record). */
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

/* ---- nvtx.c ---- */
/* nvtx.c: NVTX ranges and marks (module functions). */
extern PyMethodDef gh_nvtx_methods[];

/* ---- release.c ---- */
/* release.c: releasing driver resources, now or later (defer_cleanup(), driver threads). */
/* Set while a driver thread runs a host callback: CUDA calls are not allowed there. */
extern _Thread_local int gh_on_driver_thread;
/* Free a driver resource of `ctx` made in its `generation`: `id` is the destroy call
   (StreamDestroy, EventDestroy, MemFree, MemFreeHost, MemHostUnregister).  Done now; at
   the end of the outermost defer_cleanup() block; or, on a driver callback thread, soon
   after on the main thread.  Nothing is done if the driver context it was made in is gone
   (close(), a reset of the device); after a Context.reset() it is still done.  Never raises;
   a failure becomes a warning. */
void gh_release(gh_context *ctx, uint64_t generation, gh_cu_id id, void *handle);

/* Hold every gh_release until the matching gh_cleanup_resume (as a defer_cleanup() block
   does): while gpuhost captures on a stream, a free the garbage collector triggers would
   otherwise be a call the driver refuses during a capture, and would invalidate it. */
void gh_cleanup_defer(gh_state *st);
void gh_cleanup_resume(gh_state *st);

/* Run now the releases defer_cleanup() blocks hold for `ctx` (a reset frees them, as numba's
   frees its pending deallocations); the others stay held.  Never raises. */
void gh_release_held_of(gh_state *st, gh_context *ctx);
/* Run what defer_cleanup() blocks still hold and free the list (module teardown). */
void gh_release_free(gh_state *st);
/* _defer_cleanup_enter, _defer_cleanup_depth, _defer_cleanup_exit: module functions. */
extern PyMethodDef gh_release_methods[];

/* ---- stream.c ---- */
/* stream.c: the Stream type and the resolution of every stream= argument. */
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
/* Make the stream's context current for call `id` where its handle does not name it (the
   default streams); *pushed as gh_context_enter's.  0 or -1 (the context is gone). */
int gh_stream_enter(gh_stream *self, gh_cu_id id, int *pushed);
/* Resolve a `stream=` argument: NULL, None or 0 (the default stream), a gpuhost Stream,
   or an object exporting __cuda_stream__ (cuda.core, CuPy) or a CuPy / PyTorch stream.
   0, or -1 with TypeError naming what is accepted. */
int gh_stream_resolve(gh_state *st, PyObject *obj, gh_stream_ref *out);
/* The one check that a stream is of the device of what it is used with (a copy, a launch, a
   pool, an event): 0 where `stream` (a resolved stream's context; NULL: a default stream, or
   one whose context is not known) is NULL or `ctx`, else -1 with CudaDriverError "<what> on
   device A but the stream is device B's", <what> formatted from `fmt` and what follows as
   PyUnicode_FromFormat formats ("the array is", "kernel %R is loaded"). */
int gh_stream_check_device(const gh_context *stream, const gh_context *ctx, const char *fmt, ...);
/* A Stream object over `handle` of context `ctx`, not gpuhost's to destroy: the default
   stream (NULL), the legacy or per-thread one, or an external stream.  New reference. */
PyObject *gh_stream_of_handle(gh_state *st, gh_context *ctx, CUstream handle);
/* Make work queued next on `consumer` (of context `cctx`) wait for the work queued so far on
   `producer` (of context `pctx`): the context's reused event recorded on one and waited for
   on the other, no event made per call.  Handles as the driver takes them (NULL: the
   context's default stream).  0 or -1 with CudaAPIError. */
int gh_stream_order_after(gh_context *pctx, CUstream producer, gh_context *cctx, CUstream consumer);
/* The host function of graph host nodes and captured host functions: `data` is a
   (fn, *args) tuple the graph keeps; fn(*args) runs with the GIL. */
void CUDA_CB gh_host_fn_trampoline(void *data);

#endif /* GPUHOST_CORE_H */
