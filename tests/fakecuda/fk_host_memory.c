/* fakecuda host memory the device can reach: pinned allocations (cuMemHostAlloc,
 * cuMemFreeHost), registrations of the caller's memory (cuMemHostRegister,
 * cuMemHostUnregister), and their device pointers (cuMemHostGetDevicePointer).
 *
 * Both are ranges of the registry (fk_memory.c) at their host addresses (unified
 * addressing): live counters "host_allocations" and "registrations".  A registration
 * borrows the caller's bytes, which are never freed here.
 */
#include "fk_memory.h"

#define FK_MEMHOSTALLOC_FLAGS                                                                      \
    (CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED)
#define FK_MEMHOSTREGISTER_FLAGS                                                                   \
    (CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_READ_ONLY)

CUresult
fk_MemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    return fk_memory_alloc(GH_CU_MemHostAlloc,
                           pp != NULL && bytesize != 0 &&
                               (Flags & ~(unsigned int)FK_MEMHOSTALLOC_FLAGS) == 0,
                           FK_REGION_PINNED, bytesize, Flags, NULL, pp);
}

CUresult
fk_MemFreeHost(void *p)
{
    return fk_memory_free(GH_CU_MemFreeHost, 1, (uintptr_t)p, FK_REGION_PINNED, FK_REGION_PINNED,
                          CUDA_ERROR_INVALID_VALUE);
}

typedef struct {
    CUdeviceptr *pdptr;
    void *p;
} fk_device_pointer_args;

/* Unified addressing: the device pointer of mapped host memory is its host address. */
static CUresult
device_pointer(fk_target *target, void *args)
{
    fk_device_pointer_args *a = args;
    const fk_region *region = fk_region_containing((uintptr_t)a->p, 1);

    (void)target;
    if (region == NULL ||
        (region->type != FK_REGION_PINNED && region->type != FK_REGION_REGISTERED) ||
        !fk_region_mapped(region)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *a->pdptr = (CUdeviceptr)(uintptr_t)a->p;
    return CUDA_SUCCESS;
}

CUresult
fk_MemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    fk_device_pointer_args args = {pdptr, p};

    return fk_call(GH_CU_MemHostGetDevicePointer, pdptr != NULL && p != NULL && Flags == 0,
                   fk_on_current, NULL, device_pointer, &args);
}

typedef struct {
    void *p;
    size_t size;
    unsigned int flags;
} fk_register_args;

/* Register [p, p + size), which must be host memory no other host range overlaps. */
static CUresult
host_register(fk_target *target, void *args)
{
    fk_register_args *a = args;
    uintptr_t addr = (uintptr_t)a->p;
    fk_storage *storage;

    if (fk_va_overlaps(addr, a->size)) {
        return CUDA_ERROR_INVALID_VALUE; /* a device address, not host memory */
    }
    for (const fk_region *region = fk_region_first(); region != NULL; region = region->next) {
        if (!fk_region_device_only(region) && fk_region_overlaps(region, addr, a->size)) {
            return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
        }
    }
    storage = fk_storage_borrow(a->p);
    if (storage == NULL || fk_region_new(FK_REGION_REGISTERED, target->ctx, addr, a->size, storage,
                                         a->flags, target->ctx->device) == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

CUresult
fk_MemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
    fk_register_args args = {p, bytesize, Flags};

    return fk_call(GH_CU_MemHostRegister,
                   p != NULL && bytesize != 0 && (uintptr_t)p <= UINTPTR_MAX - bytesize &&
                       (Flags & ~(unsigned int)FK_MEMHOSTREGISTER_FLAGS) == 0,
                   fk_on_current, NULL, host_register, &args);
}

CUresult
fk_MemHostUnregister(void *p)
{
    return fk_memory_free(GH_CU_MemHostUnregister, p != NULL, (uintptr_t)p, FK_REGION_REGISTERED,
                          FK_REGION_REGISTERED, CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
}
