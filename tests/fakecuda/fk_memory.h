/* fakecuda memory's shared parts: the live ranges of the registry (fk_memory.c) and the
 * helpers the files of the memory entry points share: fk_alloc.c (device and managed
 * allocations, stream-ordered ones), fk_host_memory.c (pinned and registered host memory),
 * fk_pointer.c (pointer queries, managed-memory hints), fk_ipc_memory.c (IPC handles).
 * All under the driver lock unless said otherwise.
 */
#ifndef FAKECUDA_FK_MEMORY_H
#define FAKECUDA_FK_MEMORY_H

#include "fk_internal.h"

typedef enum {
    FK_REGION_DEVICE,     /* cuMemAlloc: a fake address over heap storage */
    FK_REGION_MANAGED,    /* cuMemAllocManaged: the device address is the host address */
    FK_REGION_PINNED,     /* cuMemHostAlloc */
    FK_REGION_REGISTERED, /* cuMemHostRegister: the caller's memory */
    FK_REGION_IPC,        /* cuIpcOpenMemHandle: a fake address over a device range's storage */
} fk_region_type;

struct fk_storage {
    unsigned char *data;
    size_t mapped; /* bytes mmap'ed at data (host-visible kinds); 0: malloc'ed */
    long refs;     /* the ranges over it and the accesses in flight */
    int owned;     /* 0: the caller's memory (a registration), never freed here */
};

typedef struct fk_region {
    fk_resource res;               /* first; its kind follows its type */
    struct fk_region *prev, *next; /* in the registry, newest first */
    fk_region_type type;
    uintptr_t base;
    size_t size;
    fk_storage *storage;
    CUdevice device;    /* where the bytes are */
    unsigned int flags; /* as allocated, registered or opened with */
    unsigned long long buffer_id;
    int pooled;      /* from the device's default pool (cuMemAllocAsync): its bytes go back there */
    int free_queued; /* cuMemFreeAsync was called: the free waits in the work queue */
} fk_region;

/* Whether the range answers at a fake device address (else at its host address). */
static inline int
fk_region_device_only(const fk_region *region)
{
    return region->type == FK_REGION_DEVICE || region->type == FK_REGION_IPC;
}

/* Whether kernels could reach the range through a device pointer (DEVICEMAP for host). */
static inline int
fk_region_mapped(const fk_region *region)
{
    if (region->type == FK_REGION_PINNED) {
        return (region->flags & CU_MEMHOSTALLOC_DEVICEMAP) != 0;
    }
    if (region->type == FK_REGION_REGISTERED) {
        return (region->flags & CU_MEMHOSTREGISTER_DEVICEMAP) != 0;
    }
    return 1;
}

/* Whether the range touches [addr, addr + len). */
static inline int
fk_region_overlaps(const fk_region *region, uintptr_t addr, size_t len)
{
    return addr < region->base + region->size && region->base < addr + len;
}

/* New storage of `size` bytes holding garbage: whole mmap'ed pages if `host_visible`, else
   heap.  NULL if out of memory.  Unlocked: filling a large one takes a while. */
FK_HIDDEN fk_storage *fk_storage_new(size_t size, int host_visible);
/* Storage over the caller's memory at `p`, or NULL. */
FK_HIDDEN fk_storage *fk_storage_borrow(void *p);
/* Drop one reference; the last frees the bytes if they are ours. */
FK_HIDDEN void fk_storage_unref(fk_storage *storage);

/* Whether [addr, addr + len) touches reserved device address space. */
FK_HIDDEN int fk_va_overlaps(uintptr_t addr, size_t len);

/* The newest live range (the others follow through ->next), or NULL. */
FK_HIDDEN fk_region *fk_region_first(void);
/* The live range holding all of [addr, addr + len) (len >= 1), or NULL. */
FK_HIDDEN fk_region *fk_region_containing(uintptr_t addr, size_t len);
/* The live range of `type` starting exactly at `addr`, or NULL. */
FK_HIDDEN fk_region *fk_region_at(uintptr_t addr, fk_region_type type);
/* Register a `type` range of `ctx` over `storage` (whose reference passes to it) at `base`
   (0: a new device address).  The range, or NULL when out of memory or address space (the
   storage reference is then dropped). */
FK_HIDDEN fk_region *fk_region_new(fk_region_type type, fk_context *ctx, uintptr_t base,
                                   size_t size, fk_storage *storage, unsigned int flags,
                                   CUdevice device);
/* Unregister and free a range (its storage lives on while accesses pin it). */
FK_HIDDEN void fk_region_free(fk_region *region);

/* fk_memory.c: the free entry points (cuMemFree, cuMemFreeHost, cuMemHostUnregister,
   cuIpcCloseMemHandle) in fk_call: CUDA_ERROR_INVALID_VALUE unless `args_ok`, then the range
   of `type` (or `alt`) starting at `addr` freed, or `missing` if there is none.  Lock NOT
   held. */
FK_HIDDEN CUresult fk_memory_free(gh_cu_id id, int args_ok, uintptr_t addr, fk_region_type type,
                                  fk_region_type alt, CUresult missing);

/* fk_alloc.c: the allocating entry points (cuMemAlloc, cuMemAllocManaged, cuMemHostAlloc) in
   fk_call: CUDA_ERROR_INVALID_VALUE unless `args_ok`, then a `type` allocation of `size`
   bytes in the current context, its address into *dptr or *pp (whichever is not NULL).
   Lock NOT held. */
FK_HIDDEN CUresult fk_memory_alloc(gh_cu_id id, int args_ok, fk_region_type type, size_t size,
                                   unsigned int flags, CUdeviceptr *dptr, void **pp);

#endif /* FAKECUDA_FK_MEMORY_H */
