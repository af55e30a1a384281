/* memory.c: the Allocation type (device, managed, pinned, mapped, registered and IPC
 * memory) and out-of-memory errors.
 */
#ifndef GPUHOST_MEMORY_H
#define GPUHOST_MEMORY_H

#include "core/context.h"

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

#endif /* GPUHOST_MEMORY_H */
