/* event.c: the Event type, and the cache of dropped events' handles. */
#ifndef GPUHOST_EVENT_H
#define GPUHOST_EVENT_H

#include "context.h"

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

#endif /* GPUHOST_EVENT_H */
