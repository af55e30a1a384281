/* fakecuda stream-ordered allocation: each device's default memory pool
 * (cuDeviceGetDefaultMemPool), its attributes, cuMemPoolTrimTo, and cuMemAllocAsync /
 * cuMemFreeAsync.
 *
 * A pool keeps the bytes of freed allocations reserved (claimed from the device, so
 * cuMemGetInfo counts them as used) until its reserved total would pass the release
 * threshold (default 0: everything goes back at the free) or cuMemPoolTrimTo lets them go.
 * The allocations themselves are device ranges of fk_memory.c (live counter "allocations");
 * a free queued with cuMemFreeAsync runs when the work queue reaches it.
 */
#include "fk_internal.h"

/* All under the lock. */
typedef struct {
    cuuint64_t threshold; /* CU_MEMPOOL_ATTR_RELEASE_THRESHOLD */
    size_t used;          /* bytes of live allocations */
    size_t cached;        /* bytes of freed ones, still reserved */
    size_t used_high, reserved_high;
    int reuse[3]; /* the CU_MEMPOOL_ATTR_REUSE_* flags, stored and reported */
} fk_mempool;

static fk_mempool fk_pools[FK_MAX_DEVICES];

/* The pool `pool` names, or NULL for anything else (never dereferenced). */
static fk_mempool *
find_pool(CUmemoryPool pool)
{
    for (int i = 0; i < FK_MAX_DEVICES; i++) {
        if ((CUmemoryPool)&fk_pools[i] == pool) {
            return fk_device_get(i) != NULL ? &fk_pools[i] : NULL;
        }
    }
    return NULL;
}

static size_t
reserved(const fk_mempool *p)
{
    return p->used + p->cached;
}

/* Give back to the device the cached bytes above `keep` reserved bytes.  Lock held. */
static void
trim(fk_mempool *p, CUdevice dev, size_t keep)
{
    size_t excess = reserved(p) > keep ? reserved(p) - keep : 0;

    if (excess > p->cached) {
        excess = p->cached;
    }
    p->cached -= excess;
    fk_device_get(dev)->used_mem -= excess;
}

CUresult
fk_mempool_claim(CUdevice dev, size_t size)
{
    fk_mempool *p = &fk_pools[dev];
    fk_device *device = fk_device_get(dev);
    size_t need = size > p->cached ? size - p->cached : 0;

    if (need > device->total_mem - device->used_mem) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    device->used_mem += need;
    p->cached -= size - need;
    p->used += size;
    if (p->used > p->used_high) {
        p->used_high = p->used;
    }
    if (reserved(p) > p->reserved_high) {
        p->reserved_high = reserved(p);
    }
    return CUDA_SUCCESS;
}

void
fk_mempool_release(CUdevice dev, size_t size)
{
    fk_mempool *p = &fk_pools[dev];

    p->used -= size;
    p->cached += size;
    if (reserved(p) > p->threshold) {
        trim(p, dev, (size_t)p->threshold);
    }
}

static CUresult
default_pool(fk_target *target, void *pool_out)
{
    *(CUmemoryPool *)pool_out = (CUmemoryPool)&fk_pools[((fk_device *)target->found)->ordinal];
    return CUDA_SUCCESS;
}

CUresult
fk_DeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    return fk_call(GH_CU_DeviceGetDefaultMemPool, pool_out != NULL, fk_on_device, FK_ORDINAL(dev),
                   default_pool, pool_out);
}

/* The pool `handle` (target->found), else CUDA_ERROR_INVALID_VALUE. */
static CUresult
on_pool(const void *handle, fk_target *target)
{
    return fk_found(target, find_pool((CUmemoryPool)handle), CUDA_ERROR_INVALID_VALUE);
}

/* The index of a CU_MEMPOOL_ATTR_REUSE_* attribute, or -1. */
static int
reuse_index(CUmemPool_attribute attr)
{
    switch (attr) {
        case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
            return 0;
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
            return 1;
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
            return 2;
        default:
            return -1;
    }
}

typedef struct {
    CUmemPool_attribute attr;
    void *value;
} fk_pool_attr_args;

static CUresult
set_attribute(fk_target *target, void *args)
{
    fk_mempool *p = target->found;
    fk_pool_attr_args *a = args;

    if (a->attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) {
        p->threshold = *(cuuint64_t *)a->value;
    }
    else if (reuse_index(a->attr) >= 0) {
        p->reuse[reuse_index(a->attr)] = *(int *)a->value != 0;
    }
    else if ((a->attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH ||
              a->attr == CU_MEMPOOL_ATTR_USED_MEM_HIGH) &&
             *(cuuint64_t *)a->value == 0) {
        /* the high watermarks can only be reset, to the current value */
        if (a->attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) {
            p->reserved_high = reserved(p);
        }
        else {
            p->used_high = p->used;
        }
    }
    else {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult
fk_MemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    fk_pool_attr_args args = {attr, value};

    return fk_call(GH_CU_MemPoolSetAttribute, value != NULL, on_pool, pool, set_attribute, &args);
}

static CUresult
get_attribute(fk_target *target, void *args)
{
    const fk_mempool *p = target->found;
    fk_pool_attr_args *a = args;

    if (reuse_index(a->attr) >= 0) {
        *(int *)a->value = p->reuse[reuse_index(a->attr)];
        return CUDA_SUCCESS;
    }
    switch (a->attr) {
        case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
            *(cuuint64_t *)a->value = p->threshold;
            return CUDA_SUCCESS;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
            *(cuuint64_t *)a->value = reserved(p);
            return CUDA_SUCCESS;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
            *(cuuint64_t *)a->value = p->reserved_high;
            return CUDA_SUCCESS;
        case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
            *(cuuint64_t *)a->value = p->used;
            return CUDA_SUCCESS;
        case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
            *(cuuint64_t *)a->value = p->used_high;
            return CUDA_SUCCESS;
        default:
            return CUDA_ERROR_INVALID_VALUE; /* not implemented by the fake */
    }
}

CUresult
fk_MemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    fk_pool_attr_args args = {attr, value};

    return fk_call(GH_CU_MemPoolGetAttribute, value != NULL, on_pool, pool, get_attribute, &args);
}

static CUresult
trim_to(fk_target *target, void *min_bytes)
{
    fk_mempool *p = target->found;

    trim(p, (CUdevice)(p - fk_pools), *(size_t *)min_bytes);
    return CUDA_SUCCESS;
}

CUresult
fk_MemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    return fk_call(GH_CU_MemPoolTrimTo, 1, on_pool, pool, trim_to, &minBytesToKeep);
}

typedef struct {
    CUdeviceptr *dptr;
    size_t size;
} fk_alloc_args;

/* The allocation is usable at once: the single FIFO queue already orders any later work on
   the stream after everything queued before it. */
static CUresult
alloc_async(fk_target *target, void *args)
{
    fk_alloc_args *a = args;

    return fk_memory_alloc_pooled(target->ctx, a->size, a->dptr);
}

CUresult
fk_MemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    fk_alloc_args args = {dptr, bytesize};

    return fk_call(GH_CU_MemAllocAsync, dptr != NULL && bytesize != 0, fk_on_stream, hStream,
                   alloc_async, &args);
}

static CUresult
free_async(fk_target *target, void *dptr)
{
    return fk_memory_free_ordered(*(CUdeviceptr *)dptr, target->ctx, target->lane);
}

CUresult
fk_MemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    return fk_call(GH_CU_MemFreeAsync, 1, fk_on_stream, hStream, free_async, &dptr);
}
