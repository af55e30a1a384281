/* release.c: releasing driver resources, now or later (defer_cleanup(), driver threads). */
#ifndef GPUHOST_RELEASE_H
#define GPUHOST_RELEASE_H

#include "base/state.h"

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

/* Run what defer_cleanup() blocks still hold and free the list (module teardown). */
void gh_release_free(gh_state *st);
/* _defer_cleanup_enter, _defer_cleanup_depth, _defer_cleanup_exit: module functions. */
extern PyMethodDef gh_release_methods[];

#endif /* GPUHOST_RELEASE_H */
