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

CUresult
fk_DeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    CUresult res = fk_enter(GH_CU_DeviceGetDefaultMemPool, FK_AFTER_INIT);

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (pool_out == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (fk_device_get(dev) == NULL) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    *pool_out = (CUmemoryPool)&fk_pools[dev];
    return CUDA_SUCCESS;
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

CUresult
fk_MemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    CUresult res = fk_enter(GH_CU_MemPoolSetAttribute, FK_AFTER_INIT);
    fk_mempool *p;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (value == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    p = find_pool(pool);
    if (p == NULL) {
        res = CUDA_ERROR_INVALID_VALUE;
    }
    else if (attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) {
        p->threshold = *(cuuint64_t *)value;
    }
    else if (reuse_index(attr) >= 0) {
        p->reuse[reuse_index(attr)] = *(int *)value != 0;
    }
    else if ((attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH || attr == CU_MEMPOOL_ATTR_USED_MEM_HIGH) &&
             *(cuuint64_t *)value == 0) {
        /* the high watermarks can only be reset, to the current value */
        if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) {
            p->reserved_high = reserved(p);
        }
        else {
            p->used_high = p->used;
        }
    }
    else {
        res = CUDA_ERROR_INVALID_VALUE;
    }
    fk_unlock();
    return res;
}

CUresult
fk_MemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    CUresult res = fk_enter(GH_CU_MemPoolGetAttribute, FK_AFTER_INIT);
    fk_mempool *p;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (value == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    p = find_pool(pool);
    if (p == NULL) {
        res = CUDA_ERROR_INVALID_VALUE;
    }
    else if (reuse_index(attr) >= 0) {
        *(int *)value = p->reuse[reuse_index(attr)];
    }
    else {
        switch (attr) {
            case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
                *(cuuint64_t *)value = p->threshold;
                break;
            case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
                *(cuuint64_t *)value = reserved(p);
                break;
            case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
                *(cuuint64_t *)value = p->reserved_high;
                break;
            case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
                *(cuuint64_t *)value = p->used;
                break;
            case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
                *(cuuint64_t *)value = p->used_high;
                break;
            default:
                res = CUDA_ERROR_INVALID_VALUE; /* not implemented by the fake */
                break;
        }
    }
    fk_unlock();
    return res;
}

CUresult
fk_MemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    CUresult res = fk_enter(GH_CU_MemPoolTrimTo, FK_AFTER_INIT);
    fk_mempool *p;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    fk_lock();
    p = find_pool(pool);
    if (p == NULL) {
        res = CUDA_ERROR_INVALID_VALUE;
    }
    else {
        trim(p, (CUdevice)(p - fk_pools), minBytesToKeep);
    }
    fk_unlock();
    return res;
}

CUresult
fk_MemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    CUresult res = fk_enter(GH_CU_MemAllocAsync, FK_AFTER_INIT);
    fk_context *ctx = NULL;
    fk_lane *lane = NULL;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (dptr == NULL || bytesize == 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    res = fk_stream_lane(hStream, &ctx, &lane);
    fk_unlock();
    if (res != CUDA_SUCCESS) {
        return res;
    }
    /* The allocation is usable at once: the single FIFO queue already orders any later
       work on the stream after everything queued before it. */
    return fk_memory_alloc_pooled(ctx, bytesize, dptr);
}

CUresult
fk_MemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    CUresult res = fk_enter(GH_CU_MemFreeAsync, FK_AFTER_INIT);
    fk_context *ctx = NULL;
    fk_lane *lane = NULL;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    fk_lock();
    res = fk_stream_lane(hStream, &ctx, &lane);
    if (res == CUDA_SUCCESS) {
        res = fk_memory_free_ordered((uintptr_t)dptr, ctx, lane);
    }
    fk_unlock();
    return res;
}
