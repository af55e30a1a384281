/* context.c: the Context type (a device's primary context as gpuhost holds it) and this
 * thread's context stack.
 */
#ifndef GPUHOST_CONTEXT_H
#define GPUHOST_CONTEXT_H

#include "device.h"

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
    /* The event that orders one stream after another (gh_stream_order_after), made on first
       use in generation `order_generation`, destroyed when gpuhost's retain ends. */
    CUevent order_event;
    uint64_t order_generation;
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

/* A hook run before a context of gpuhost's is reset or released (pool.c frees its blocks):
   registered once at module init.  At most GH_CONTEXT_HOOKS of them. */
typedef void (*gh_context_hook)(gh_state *st, gh_context *ctx);
int gh_context_on_ending(gh_context_hook hook);

#endif /* GPUHOST_CONTEXT_H */
