/* csrc/memory/'s public header: Allocation, the current allocator of device arrays, the
 * Pool type's init and the staging ring, as arrays/ and module.c use them.  The pools'
 * engine (their structs, size classes, lanes, the out-of-memory policy) is private to the
 * folder: memory_internal.h.
 */
#ifndef GPUHOST_MEMORY_H
#define GPUHOST_MEMORY_H

#include "base/base.h"
#include "core/core.h"

#include <stddef.h>

/* ---- allocator.c ---- */
/* The current allocator of device arrays (allocator.c): its one owner.  None set, arrays
 * take their memory from the current context's default Pool; else from the Python
 * allocator gpuhost.memory (CuPy's set_allocator) or gpuhost.memory_manager (numba's
 * set_memory_manager) installed with _core.set_array_allocator, or from the one a thread
 * set for itself (CuPy's using_allocator, _core.set_thread_array_allocator).
 */
/* `size` bytes for a device array in `ctx` (current), ordered on `stream` (NULL: the legacy
   default stream): *owner (a new reference keeping the memory alive), *ptr its address and
   *generation the context generation it belongs to.  Zero bytes always come from the pool.
   0, or -1 with the allocator's error, or a TypeError when it answered something other than
   an (owner, address) pair. */
int gh_array_memory(gh_state *st, gh_context *ctx, size_t size, PyObject *stream, PyObject **owner,
                    CUdeviceptr *ptr, uint64_t *generation);
extern PyMethodDef gh_allocator_methods[]; /* set_array_allocator, array_allocator, ... */
/* Drop the calling thread's own allocator of `st`'s module (at the module's clear). */
void gh_thread_array_allocator_clear(gh_state *st);

/* ---- memory.c ---- */
/* memory.c: the Allocation type (device, managed, pinned, mapped, registered and IPC
 * memory) and out-of-memory errors.
 */
typedef enum {
    GH_ALLOC_DEVICE,
    GH_ALLOC_MANAGED,
    GH_ALLOC_PINNED,
    GH_ALLOC_MAPPED,
    GH_ALLOC_REGISTERED,
    GH_ALLOC_IPC, /* another process's device memory, opened with cuIpcOpenMemHandle */
} gh_alloc_kind;

/* One allocation (or host registration); arrays viewing it hold a reference. */
struct gh_allocation {
    PyObject_HEAD
    gh_live_link link;   /* in the list of live Allocations a Context.reset() frees */
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
};

int gh_memory_init_type(PyObject *module, gh_state *st);

/* ---- pool.c ---- */
/* Memory pools, the default allocator of device memory: the Pool type (pool.c) and the
 * engine's entry points for other files (pool_engine.c).
 */
int gh_pool_init_type(PyObject *module, gh_state *st);

/* ---- staging.c ---- */
/* staging.c: pageable host copies through a pinned ring. */
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

#endif /* GPUHOST_MEMORY_H */
