/* fakecuda pointer queries and managed-memory hints: what the registry (fk_memory.c) says
 * of an address (cuMemGetAddressRange, cuPointerGetAttribute), and cuMemPrefetchAsync and
 * cuMemAdvise, which check the managed range and the location they name and have no effect
 * (the double has one memory).
 */
#include "fk_memory.h"

typedef struct {
    CUdeviceptr *pbase;
    size_t *psize;
    CUdeviceptr dptr;
} fk_range_args;

static CUresult
address_range(fk_target *target, void *args)
{
    fk_range_args *a = args;
    const fk_region *region = fk_region_containing(a->dptr, 1);

    (void)target;
    if (region == NULL) {
        return CUDA_ERROR_NOT_FOUND;
    }
    if (a->pbase != NULL) {
        *a->pbase = region->base;
    }
    if (a->psize != NULL) {
        *a->psize = region->size;
    }
    return CUDA_SUCCESS;
}

CUresult
fk_MemGetAddressRange(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    fk_range_args args = {pbase, psize, dptr};

    return fk_call(GH_CU_MemGetAddressRange, 1, fk_on_current, NULL, address_range, &args);
}

/* The value of `attribute` of `ptr` in `region` into `data` (types as cuda.h documents).
   Lock held. */
static CUresult
pointer_attribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr,
                  const fk_region *region)
{
    fk_context *ctx = NULL;
    CUresult res;

    switch (attribute) {
        case CU_POINTER_ATTRIBUTE_CONTEXT:
            *(CUcontext *)data = region->res.ctx;
            return CUDA_SUCCESS;
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
            *(unsigned int *)data =
                region->type == FK_REGION_PINNED || region->type == FK_REGION_REGISTERED
                    ? CU_MEMORYTYPE_HOST
                    : CU_MEMORYTYPE_DEVICE; /* managed memory too, as the driver */
            return CUDA_SUCCESS;
        case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
            res = fk_current_context(&ctx); /* the pointer kernels of the current one use */
            if (res == CUDA_SUCCESS && !fk_region_mapped(region)) {
                res = CUDA_ERROR_INVALID_VALUE;
            }
            if (res == CUDA_SUCCESS) {
                *(CUdeviceptr *)data = ptr;
            }
            return res;
        case CU_POINTER_ATTRIBUTE_HOST_POINTER:
            if (fk_region_device_only(region)) {
                return CUDA_ERROR_INVALID_VALUE;
            }
            *(void **)data = (void *)(uintptr_t)ptr;
            return CUDA_SUCCESS;
        case CU_POINTER_ATTRIBUTE_BUFFER_ID:
            *(unsigned long long *)data = region->buffer_id;
            return CUDA_SUCCESS;
        case CU_POINTER_ATTRIBUTE_IS_MANAGED:
            *(unsigned int *)data = region->type == FK_REGION_MANAGED;
            return CUDA_SUCCESS;
        case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
            *(int *)data = region->device;
            return CUDA_SUCCESS;
        case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
            *(CUdeviceptr *)data = region->base;
            return CUDA_SUCCESS;
        case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
            *(size_t *)data = region->size;
            return CUDA_SUCCESS;
        default:
            return CUDA_ERROR_INVALID_VALUE; /* not implemented by the fake */
    }
}

typedef struct {
    void *data;
    CUpointer_attribute attribute;
    CUdeviceptr ptr;
} fk_attribute_args;

static CUresult
get_attribute(fk_target *target, void *args)
{
    fk_attribute_args *a = args;
    const fk_region *region = fk_region_containing(a->ptr, 1);

    (void)target;
    return region != NULL ? pointer_attribute(a->data, a->attribute, a->ptr, region)
                          : CUDA_ERROR_INVALID_VALUE;
}

CUresult
fk_PointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    fk_attribute_args args = {data, attribute, ptr};

    return fk_call(GH_CU_PointerGetAttribute, data != NULL, NULL, NULL, get_attribute, &args);
}

/* ---- managed-memory hints: checked, with no effect (the double has one memory) ---- */

/* A location the hints accept: a device that exists, or the host.  Lock held. */
static CUresult
hint_location(CUmemLocation location)
{
    if (location.type == CU_MEM_LOCATION_TYPE_HOST) {
        return CUDA_SUCCESS;
    }
    if (location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return fk_device_get(location.id) != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

/* [devPtr, devPtr + count) inside one managed range.  Lock held. */
static CUresult
hint_range(CUdeviceptr devPtr, size_t count)
{
    fk_region *region = count > 0 ? fk_region_containing(devPtr, count) : NULL;
    return region != NULL && region->type == FK_REGION_MANAGED ? CUDA_SUCCESS
                                                               : CUDA_ERROR_INVALID_VALUE;
}

typedef struct {
    CUdeviceptr ptr;
    size_t count;
    CUmemLocation location;
} fk_hint_args;

/* A hint's range and location (after its stream, for a prefetch). */
static CUresult
hint(fk_target *target, void *args)
{
    fk_hint_args *a = args;
    CUresult res = hint_range(a->ptr, a->count);

    (void)target;
    return res == CUDA_SUCCESS ? hint_location(a->location) : res;
}

CUresult
fk_MemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags,
                    CUstream hStream)
{
    fk_hint_args args = {devPtr, count, location};

    return fk_call(GH_CU_MemPrefetchAsync, flags == 0, fk_on_stream, hStream, hint, &args);
}

CUresult
fk_MemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location)
{
    fk_hint_args args = {devPtr, count, location};

    return fk_call(GH_CU_MemAdvise,
                   advice >= CU_MEM_ADVISE_SET_READ_MOSTLY &&
                       advice <= CU_MEM_ADVISE_UNSET_ACCESSED_BY,
                   NULL, NULL, hint, &args);
}
