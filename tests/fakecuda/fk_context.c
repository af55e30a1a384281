/* fakecuda contexts: primary contexts (retain/release/reset/state) and each thread's
 * context stack (cuCtxGetCurrent/SetCurrent/Push/Pop, GetDevice, Synchronize).
 * Destroying a context destroys its streams, events and memory and drops its queued work.
 *
 * A destroyed context stays allocated but dead, so a stale handle gives
 * CUDA_ERROR_CONTEXT_IS_DESTROYED instead of a crash; a retain after destruction makes a new
 * context with a new handle.  A dead context can still be current, and popped.
 */
#include "fk_internal.h"

#include <stdlib.h>

#define FK_STACK_MAX 64 /* a push beyond it fails with CUDA_ERROR_OUT_OF_MEMORY */

/* Under the lock. */
static fk_context *fk_contexts_made; /* every context ever made, newest first */
static struct {
    fk_context *ctx; /* NULL while inactive */
    int refcount;
    unsigned int flags;
} fk_primary[FK_MAX_DEVICES];

/* This thread's context stack; the entries point at contexts, which are never freed. */
static _Thread_local fk_context *fk_stack[FK_STACK_MAX];
static _Thread_local int fk_stack_depth;

CUresult
fk_context_usable(CUcontext handle)
{
    for (fk_context *ctx = fk_contexts_made; ctx != NULL; ctx = ctx->next_made) {
        if (ctx == handle) {
            return ctx->alive ? CUDA_SUCCESS : CUDA_ERROR_CONTEXT_IS_DESTROYED;
        }
    }
    return CUDA_ERROR_INVALID_CONTEXT;
}

/* fk_context_usable, taking the lock: may `handle` be made current? */
static CUresult
context_check(CUcontext handle)
{
    CUresult res;

    fk_lock();
    res = fk_context_usable(handle);
    fk_unlock();
    return res;
}

CUresult
fk_current_context(fk_context **out)
{
    fk_context *top = fk_stack_depth > 0 ? fk_stack[fk_stack_depth - 1] : NULL;

    if (top == NULL) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (!top->alive) {
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    }
    *out = top;
    return CUDA_SUCCESS;
}

/* Destroy the primary context of `dev`, if active, with all its resources.  Lock held. */
static void
primary_destroy(CUdevice dev)
{
    fk_context *ctx = fk_primary[dev].ctx;

    fk_primary[dev].refcount = 0;
    if (ctx == NULL) {
        return;
    }
    fk_ops_drop_context(ctx);
    fk_resource_destroy_all(ctx);
    ctx->alive = 0;
    fk_primary[dev].ctx = NULL;
    fk_live_add(FK_CONTEXTS, -1);
}

CUresult
fk_DevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUresult res = fk_enter(GH_CU_DevicePrimaryCtxRetain, FK_AFTER_INIT);
    fk_context *ctx;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (pctx == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (fk_device_get(dev) == NULL) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    fk_lock();
    ctx = fk_primary[dev].ctx;
    if (ctx == NULL) {
        ctx = calloc(1, sizeof(*ctx));
        if (ctx == NULL) {
            fk_unlock();
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        ctx->device = dev;
        ctx->alive = 1;
        ctx->next_made = fk_contexts_made;
        fk_contexts_made = ctx;
        fk_primary[dev].ctx = ctx;
        fk_live_add(FK_CONTEXTS, 1);
    }
    fk_primary[dev].refcount++;
    *pctx = ctx;
    fk_unlock();
    return CUDA_SUCCESS;
}

CUresult
fk_DevicePrimaryCtxRelease(CUdevice dev)
{
    CUresult res = fk_enter(GH_CU_DevicePrimaryCtxRelease, FK_AFTER_INIT);

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (fk_device_get(dev) == NULL) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    fk_lock();
    if (fk_primary[dev].refcount == 0) {
        res = CUDA_ERROR_INVALID_CONTEXT;
    }
    else if (--fk_primary[dev].refcount == 0) {
        primary_destroy(dev);
    }
    fk_unlock();
    return res;
}

CUresult
fk_DevicePrimaryCtxReset(CUdevice dev)
{
    CUresult res = fk_enter(GH_CU_DevicePrimaryCtxReset, FK_AFTER_INIT);

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (fk_device_get(dev) == NULL) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    fk_lock();
    primary_destroy(dev);
    fk_unlock();
    return CUDA_SUCCESS;
}

CUresult
fk_DevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    CUresult res = fk_enter(GH_CU_DevicePrimaryCtxGetState, FK_AFTER_INIT);

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (flags == NULL || active == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (fk_device_get(dev) == NULL) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    fk_lock();
    *flags = fk_primary[dev].flags;
    *active = fk_primary[dev].ctx != NULL;
    fk_unlock();
    return CUDA_SUCCESS;
}

CUresult
fk_CtxGetCurrent(CUcontext *pctx)
{
    CUresult res = fk_enter(GH_CU_CtxGetCurrent, FK_AFTER_INIT);

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (pctx == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    /* Like the driver, a destroyed context that is still current is returned as is. */
    *pctx = fk_stack_depth > 0 ? fk_stack[fk_stack_depth - 1] : NULL;
    return CUDA_SUCCESS;
}

CUresult
fk_CtxSetCurrent(CUcontext ctx)
{
    CUresult res = fk_enter(GH_CU_CtxSetCurrent, FK_AFTER_INIT);

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (ctx == NULL) { /* unbind: pop the top, if any */
        if (fk_stack_depth > 0) {
            fk_stack_depth--;
        }
        return CUDA_SUCCESS;
    }
    res = context_check(ctx);
    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (fk_stack_depth == 0) {
        fk_stack_depth = 1;
    }
    fk_stack[fk_stack_depth - 1] = ctx;
    return CUDA_SUCCESS;
}

CUresult
fk_CtxPushCurrent(CUcontext ctx)
{
    CUresult res = fk_enter(GH_CU_CtxPushCurrent, FK_AFTER_INIT);

    if (res != CUDA_SUCCESS) {
        return res;
    }
    res = context_check(ctx);
    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (fk_stack_depth == FK_STACK_MAX) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    fk_stack[fk_stack_depth++] = ctx;
    return CUDA_SUCCESS;
}

CUresult
fk_CtxPopCurrent(CUcontext *pctx)
{
    CUresult res = fk_enter(GH_CU_CtxPopCurrent, FK_AFTER_INIT);

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (fk_stack_depth == 0) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    fk_stack_depth--;
    if (pctx != NULL) {
        *pctx = fk_stack[fk_stack_depth];
    }
    return CUDA_SUCCESS;
}

CUresult
fk_CtxGetDevice(CUdevice *device)
{
    CUresult res = fk_enter(GH_CU_CtxGetDevice, FK_AFTER_INIT);
    fk_context *ctx = NULL;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (device == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    res = fk_current_context(&ctx);
    if (res == CUDA_SUCCESS) {
        *device = ctx->device;
    }
    fk_unlock();
    return res;
}

CUresult
fk_CtxSynchronize(void)
{
    CUresult res = fk_enter(GH_CU_CtxSynchronize, FK_AFTER_INIT);
    fk_context *ctx = NULL;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    fk_lock();
    res = fk_current_context(&ctx);
    if (res == CUDA_SUCCESS && ctx->captures > 0) {
        res = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* it would wait on a capturing stream */
    }
    if (res == CUDA_SUCCESS) {
        fk_ops_wait(ctx->ops.last_seq); /* the lock is released while waiting */
        if (!ctx->alive) {
            res = CUDA_ERROR_CONTEXT_IS_DESTROYED; /* reset meanwhile: its work was dropped */
        }
    }
    fk_unlock();
    return res;
}

int
fakecuda_thread_stack_depth(void)
{
    return fk_stack_depth;
}
