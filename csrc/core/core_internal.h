/* csrc/core/'s private header: what only core/'s files share.  Each file of core/ includes
 * it (it includes core.h); no file of another folder does.
 */
#ifndef GPUHOST_CORE_INTERNAL_H
#define GPUHOST_CORE_INTERNAL_H

#include "core.h"

/* ---- context.c ---- */
/* Make `ctx` current in place of the top of this thread's stack; 0 or -1. */
int gh_context_make_current(gh_context *ctx);

/* Push `ctx` on this thread's stack (retaining it first if needed); 0 or -1. */
int gh_context_push(gh_context *ctx);

/* numba's Context.reset(): what gpuhost made in `ctx` is freed (its EMM plugin's memory, every
   Allocation and pool block, every Module, the releases held), and the CUDA context stays
   alive for every other library; objects made before that hold memory or code raise when
   used, streams and events go on.  Refused (StreamCaptureError) while a gpuhost stream
   captures in it.  0 or -1. */
int gh_context_reset(gh_context *ctx);

/* Pop primary contexts off this thread's stack; with `release_all` also release every
   primary context gpuhost holds (numba's cuda.close() in the main thread). 0 or -1. */
int gh_context_close_all(gh_state *st, int release_all);

/* ---- event.c ---- */
/* A new Event of `ctx` with the driver's `flags`, from the event cache when one is there
   (`ctx_is_current`: no need to push it). New reference or NULL. */
PyObject *gh_event_new(gh_state *st, gh_context *ctx, unsigned int flags, int ctx_is_current);

#endif /* GPUHOST_CORE_INTERNAL_H */
