/* fakecuda IPC memory handles: cuIpcGetMemHandle names a device allocation,
 * cuIpcOpenMemHandle maps it at a new device address over the same bytes (a range of the
 * registry, fk_memory.c: live counter "ipc_mappings"), cuIpcCloseMemHandle unmaps it.
 *
 * The fake cannot share memory across processes: a handle made by another process (or by
 * another copy of the fake loaded in this one) is refused with CUDA_ERROR_INVALID_VALUE.
 * The real driver refuses the opposite, a handle opened in the process that made it, which
 * is the one case the fake serves; IPC between processes is tested on a real GPU.
 */
#include "fk_memory.h"

#include <stdint.h>
#include <string.h>
#include <unistd.h>

/* What cuIpcGetMemHandle writes at the start of the 64 bytes. */
typedef struct {
    char magic[8];
    uint64_t pid;
    uint64_t instance; /* which copy of the fake made it: the address of fk_ipc_mem_magic */
    uint64_t base;
    uint64_t buffer_id;
} fk_ipc_mem;

_Static_assert(sizeof(fk_ipc_mem) <= CU_IPC_HANDLE_SIZE, "IPC memory handle too small");

static const char fk_ipc_mem_magic[8] = {'f', 'k', 'm', 'e', 'm', 'o', 'r', '1'};

typedef struct {
    CUipcMemHandle *handle;
    CUdeviceptr dptr;
} fk_get_args;

static CUresult
get_handle(fk_target *target, void *args)
{
    fk_get_args *a = args;
    const fk_region *region = fk_region_containing(a->dptr, 1); /* any address inside names
                                                                    the allocation */
    fk_ipc_mem ipc;

    (void)target;
    if (region == NULL || region->type != FK_REGION_DEVICE) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    memcpy(ipc.magic, fk_ipc_mem_magic, sizeof(ipc.magic));
    ipc.pid = (uint64_t)getpid();
    ipc.instance = (uint64_t)(uintptr_t)&fk_ipc_mem_magic;
    ipc.base = region->base;
    ipc.buffer_id = region->buffer_id;
    memset(a->handle, 0, sizeof(*a->handle));
    memcpy(a->handle->reserved, &ipc, sizeof(ipc));
    return CUDA_SUCCESS;
}

CUresult
fk_IpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
    fk_get_args args = {pHandle, dptr};

    return fk_call(GH_CU_IpcGetMemHandle, pHandle != NULL, fk_on_current, NULL, get_handle, &args);
}

/* The live device allocation a handle names, or NULL (see above).  Lock held. */
static fk_region *
exported_region(const CUipcMemHandle *handle)
{
    fk_ipc_mem ipc;
    fk_region *region;

    memcpy(&ipc, handle->reserved, sizeof(ipc));
    if (memcmp(ipc.magic, fk_ipc_mem_magic, sizeof(ipc.magic)) != 0 ||
        ipc.pid != (uint64_t)getpid() || ipc.instance != (uint64_t)(uintptr_t)&fk_ipc_mem_magic) {
        return NULL;
    }
    region = fk_region_at((uintptr_t)ipc.base, FK_REGION_DEVICE);
    return region != NULL && region->buffer_id == ipc.buffer_id ? region : NULL;
}

typedef struct {
    CUdeviceptr *pdptr;
    const CUipcMemHandle *handle;
    unsigned int flags;
} fk_open_args;

/* A new address over the same bytes, which outlive the source while it is open. */
static CUresult
open_handle(fk_target *target, void *args)
{
    fk_open_args *a = args;
    fk_context *ctx = target->ctx;
    fk_region *source = exported_region(a->handle), *alias;

    if (source == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (source->device != ctx->device && !fk_peer_supported(ctx->device, source->device)) {
        return CUDA_ERROR_MAP_FAILED; /* another device's memory, and no peer path to it */
    }
    source->storage->refs++;
    alias = fk_region_new(FK_REGION_IPC, ctx, 0, source->size, source->storage, a->flags,
                          source->device);
    if (alias == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *a->pdptr = alias->base;
    return CUDA_SUCCESS;
}

CUresult
fk_IpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    fk_open_args args = {pdptr, &handle, Flags};

    return fk_call(GH_CU_IpcOpenMemHandle,
                   pdptr != NULL &&
                       (Flags & ~(unsigned int)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) == 0,
                   fk_on_current, NULL, open_handle, &args);
}

CUresult
fk_IpcCloseMemHandle(CUdeviceptr dptr)
{
    return fk_memory_free(GH_CU_IpcCloseMemHandle, 1, dptr, FK_REGION_IPC, FK_REGION_IPC,
                          CUDA_ERROR_INVALID_VALUE);
}
