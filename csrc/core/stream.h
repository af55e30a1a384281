/* stream.c: the Stream type and the resolution of every stream= argument. */
#ifndef GPUHOST_STREAM_H
#define GPUHOST_STREAM_H

#include "context.h"

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
/* A Stream object over `handle` of context `ctx`, not gpuhost's to destroy: the default
   stream (NULL), the legacy or per-thread one, or an external stream.  New reference. */
PyObject *gh_stream_of_handle(gh_state *st, gh_context *ctx, CUstream handle);
/* Make work queued next on `consumer` (of context `cctx`) wait for the work queued so far on
   `producer` (of context `pctx`): the context's reused event recorded on one and waited for
   on the other, no event made per call.  Handles as the driver takes them (NULL: the
   context's default stream).  0 or -1 with CudaAPIError. */
int gh_stream_order_after(gh_context *pctx, CUstream producer, gh_context *cctx, CUstream consumer);
/* The host function of graph host nodes and captured host functions: `data` is a
   (fn,) or (fn, arg) tuple the graph keeps; fn() or fn(arg) runs with the GIL. */
void CUDA_CB gh_host_fn_trampoline(void *data);

#endif /* GPUHOST_STREAM_H */
