/* fakecuda allocations: cuMemGetInfo, cuMemAlloc, cuMemAllocManaged and cuMemFree, the
 * allocating half of cuMemHostAlloc (fk_host_memory.c), and the stream-ordered allocations
 * of the devices' default pools (cuMemAllocAsync, cuMemFreeAsync: fk_pool.c).
 *
 * Device memory is claimed from its device (or pool) before its storage is made, so
 * cuMemGetInfo sees it at once; the storage is made with the lock let go, since filling a
 * large allocation takes a while.  Each allocation is a range of the registry (fk_memory.c).
 */
#include "fk_memory.h"

#include <stdlib.h>

typedef struct {
    size_t *free_bytes, *total_bytes;
} fk_info_args;

static CUresult
mem_get_info(fk_target *target, void *args)
{
    const fk_device *dev = fk_device_get(target->ctx->device);
    fk_info_args *a = args;

    *a->total_bytes = dev->total_mem;
    *a->free_bytes = dev->total_mem - dev->used_mem;
    return CUDA_SUCCESS;
}

CUresult
fk_MemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    fk_info_args args = {free_bytes, total_bytes};

    return fk_call(GH_CU_MemGetInfo, free_bytes != NULL && total_bytes != NULL, fk_on_current, NULL,
                   mem_get_info, &args);
}

/* Make the storage of a `type` allocation of `size` bytes for `ctx` (its bytes claimed
   already if it is device memory) and register it, unless memory or the context ran out
   meanwhile.  CUDA_SUCCESS with *out the range, CUDA_ERROR_OUT_OF_MEMORY or
   CUDA_ERROR_CONTEXT_IS_DESTROYED.  Lock held, let go while the storage is made. */
static CUresult
allocate(fk_region **out, fk_region_type type, fk_context *ctx, size_t size, unsigned int flags)
{
    fk_storage *storage;

    *out = NULL;
    fk_unlock();
    storage = fk_storage_new(size, type != FK_REGION_DEVICE);
    fk_lock();
    if (storage == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (!ctx->alive) {
        fk_storage_unref(storage);
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    }
    *out = fk_region_new(type, ctx, type == FK_REGION_DEVICE ? 0 : (uintptr_t)storage->data, size,
                         storage, flags, ctx->device);
    return *out != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

/* A device allocation of `size` bytes for `ctx` at *dptr, its bytes claimed from the device
   (or, `pooled`, from its default pool) and given back if it fails.  Lock held, let go
   while the storage is made. */
static CUresult
device_alloc(fk_context *ctx, size_t size, int pooled, CUdeviceptr *dptr)
{
    fk_device *dev = fk_device_get(ctx->device);
    fk_region *region;
    CUresult res;

    if (pooled) {
        res = fk_mempool_claim(ctx->device, size);
    }
    else if (size > dev->total_mem - dev->used_mem) {
        res = CUDA_ERROR_OUT_OF_MEMORY;
    }
    else {
        dev->used_mem += size;
        res = CUDA_SUCCESS;
    }
    if (res != CUDA_SUCCESS) {
        return res;
    }
    res = allocate(&region, FK_REGION_DEVICE, ctx, size, 0);
    if (res == CUDA_SUCCESS) {
        region->pooled = pooled;
        *dptr = region->base;
    }
    else if (pooled) {
        fk_mempool_release(ctx->device, size);
    }
    else {
        dev->used_mem -= size;
    }
    return res;
}

typedef struct {
    fk_region_type type;
    size_t size;
    unsigned int flags;
    CUdeviceptr *dptr;
    void **pp;
} fk_alloc_args;

/* An allocation in the current context: not while a capture forbids it. */
static CUresult
mem_alloc(fk_target *target, void *args)
{
    fk_alloc_args *a = args;
    fk_region *region;
    CUresult res = fk_unsafe_call_check(target->ctx);

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (a->type == FK_REGION_DEVICE) {
        return device_alloc(target->ctx, a->size, 0, a->dptr);
    }
    /* host-visible storage at its own address */
    res = allocate(&region, a->type, target->ctx, a->size, a->flags);
    if (res == CUDA_SUCCESS && a->dptr != NULL) {
        *a->dptr = region->base;
    }
    else if (res == CUDA_SUCCESS) {
        *a->pp = (void *)region->base;
    }
    return res;
}

CUresult
fk_memory_alloc(gh_cu_id id, int args_ok, fk_region_type type, size_t size, unsigned int flags,
                CUdeviceptr *dptr, void **pp)
{
    fk_alloc_args args = {type, size, flags, dptr, pp};

    return fk_call(id, args_ok, fk_on_current, NULL, mem_alloc, &args);
}

CUresult
fk_MemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
    return fk_memory_alloc(GH_CU_MemAlloc, dptr != NULL && bytesize != 0, FK_REGION_DEVICE,
                           bytesize, 0, dptr, NULL);
}

CUresult
fk_MemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    return fk_memory_alloc(GH_CU_MemAllocManaged,
                           dptr != NULL && bytesize != 0 &&
                               (flags == CU_MEM_ATTACH_GLOBAL || flags == CU_MEM_ATTACH_HOST),
                           FK_REGION_MANAGED, bytesize, flags, dptr, NULL);
}

CUresult
fk_MemFree(CUdeviceptr dptr)
{
    return fk_memory_free(GH_CU_MemFree, 1, dptr, FK_REGION_DEVICE, FK_REGION_MANAGED,
                          CUDA_ERROR_INVALID_VALUE);
}

/* ---- stream-ordered allocations (cuMemAllocAsync / cuMemFreeAsync, fk_pool.c) ---- */

CUresult
fk_memory_alloc_pooled(fk_context *ctx, size_t size, CUdeviceptr *dptr)
{
    return device_alloc(ctx, size, 1, dptr);
}

typedef struct {
    fk_op op;
    uintptr_t base;
    unsigned long long buffer_id; /* the allocation meant: its address is never reused */
} fk_free_op;

/* On the worker: the queue reached the free. */
static void
run_free(fk_op *op)
{
    fk_free_op *f = (fk_free_op *)op;
    fk_region *region;

    fk_lock();
    region = fk_region_at(f->base, FK_REGION_DEVICE);
    if (region != NULL && region->buffer_id == f->buffer_id) {
        fk_region_free(region);
    }
    fk_unlock();
}

CUresult
fk_memory_free_ordered(uintptr_t dptr, fk_context *ctx, fk_lane *lane)
{
    fk_region *region = fk_region_at(dptr, FK_REGION_DEVICE);
    fk_free_op *f;

    if (region == NULL || region->free_queued) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    f = calloc(1, sizeof(*f));
    if (f == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    f->op.run = run_free;
    f->base = region->base;
    f->buffer_id = region->buffer_id;
    /* Dropped with its context, the op frees nothing: the allocation went with it. */
    if (fk_op_enqueue(&f->op, ctx, lane) != CUDA_SUCCESS) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    region->free_queued = 1; /* the worker cannot run the op before the lock is let go */
    return CUDA_SUCCESS;
}
