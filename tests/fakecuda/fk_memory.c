/* fakecuda memory: device memory accounting (cuMemGetInfo).
 *
 * Allocations will count against their device's used_mem, so free = total - used.
 */
#include "fk_internal.h"

CUresult
fk_MemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    CUresult res = fk_enter(GH_CU_MemGetInfo, FK_AFTER_INIT);
    fk_context *ctx = NULL;
    fk_device *dev;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (free_bytes == NULL || total_bytes == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    res = fk_current_context(&ctx);
    if (res == CUDA_SUCCESS) {
        dev = fk_device_get(ctx->device);
        *total_bytes = dev->total_mem;
        *free_bytes = dev->total_mem - dev->used_mem;
    }
    fk_unlock();
    return res;
}
