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

CUresult
fk_on_current(const void *handle, fk_target *target)
{
    (void)handle;
    return fk_current_context(&target->ctx);
}

CUresult
fk_on_context(const void *handle, fk_target *target)
{
    target->ctx = (fk_context *)handle;
    return fk_context_usable((CUcontext)handle);
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

/* The primary context of the device resolved, made if inactive, one more reference. */
static CUresult
primary_retain(fk_target *target, void *pctx)
{
    CUdevice dev = ((fk_device *)target->found)->ordinal;
    fk_context *ctx = fk_primary[dev].ctx;

    if (ctx == NULL) {
        ctx = calloc(1, sizeof(*ctx));
        if (ctx == NULL) {
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        ctx->device = dev;
        ctx->alive = 1;
        ctx->id = fk_contexts_made != NULL ? fk_contexts_made->id + 1 : 1;
        ctx->next_made = fk_contexts_made;
        fk_contexts_made = ctx;
        fk_primary[dev].ctx = ctx;
        fk_live_add(FK_CONTEXTS, 1);
    }
    fk_primary[dev].refcount++;
    *(CUcontext *)pctx = ctx;
    return CUDA_SUCCESS;
}

CUresult
fk_DevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    return fk_call(GH_CU_DevicePrimaryCtxRetain, pctx != NULL, fk_on_device, FK_ORDINAL(dev),
                   primary_retain, pctx);
}

static CUresult
primary_release(fk_target *target, void *args)
{
    CUdevice dev = ((fk_device *)target->found)->ordinal;

    (void)args;
    if (fk_primary[dev].refcount == 0) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (--fk_primary[dev].refcount == 0) {
        primary_destroy(dev);
    }
    return CUDA_SUCCESS;
}

CUresult
fk_DevicePrimaryCtxRelease(CUdevice dev)
{
    return fk_call(GH_CU_DevicePrimaryCtxRelease, 1, fk_on_device, FK_ORDINAL(dev), primary_release,
                   NULL);
}

static CUresult
primary_reset(fk_target *target, void *args)
{
    (void)args;
    primary_destroy(((fk_device *)target->found)->ordinal);
    return CUDA_SUCCESS;
}

CUresult
fk_DevicePrimaryCtxReset(CUdevice dev)
{
    return fk_call(GH_CU_DevicePrimaryCtxReset, 1, fk_on_device, FK_ORDINAL(dev), primary_reset,
                   NULL);
}

typedef struct {
    unsigned int *flags;
    int *active;
} fk_state_args;

static CUresult
primary_state(fk_target *target, void *args)
{
    CUdevice dev = ((fk_device *)target->found)->ordinal;
    fk_state_args *a = args;

    *a->flags = fk_primary[dev].flags;
    *a->active = fk_primary[dev].ctx != NULL;
    return CUDA_SUCCESS;
}

CUresult
fk_DevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    fk_state_args args = {flags, active};

    return fk_call(GH_CU_DevicePrimaryCtxGetState, flags != NULL && active != NULL, fk_on_device,
                   FK_ORDINAL(dev), primary_state, &args);
}

/* Like the driver, a destroyed context that is still current is returned as is. */
static CUresult
get_current(fk_target *target, void *pctx)
{
    (void)target;
    *(CUcontext *)pctx = fk_stack_depth > 0 ? fk_stack[fk_stack_depth - 1] : NULL;
    return CUDA_SUCCESS;
}

CUresult
fk_CtxGetCurrent(CUcontext *pctx)
{
    return fk_call(GH_CU_CtxGetCurrent, pctx != NULL, NULL, NULL, get_current, pctx);
}

/* The context resolved replaces the top of the stack; none (a NULL handle) unbinds, popping
   the top if any. */
static CUresult
set_current(fk_target *target, void *args)
{
    (void)args;
    if (target->ctx == NULL) {
        if (fk_stack_depth > 0) {
            fk_stack_depth--;
        }
        return CUDA_SUCCESS;
    }
    if (fk_stack_depth == 0) {
        fk_stack_depth = 1;
    }
    fk_stack[fk_stack_depth - 1] = target->ctx;
    return CUDA_SUCCESS;
}

CUresult
fk_CtxSetCurrent(CUcontext ctx)
{
    return fk_call(GH_CU_CtxSetCurrent, 1, ctx != NULL ? fk_on_context : NULL, ctx, set_current,
                   NULL);
}

static CUresult
push_current(fk_target *target, void *args)
{
    (void)args;
    if (fk_stack_depth == FK_STACK_MAX) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    fk_stack[fk_stack_depth++] = target->ctx;
    return CUDA_SUCCESS;
}

CUresult
fk_CtxPushCurrent(CUcontext ctx)
{
    return fk_call(GH_CU_CtxPushCurrent, 1, fk_on_context, ctx, push_current, NULL);
}

static CUresult
pop_current(fk_target *target, void *pctx)
{
    (void)target;
    if (fk_stack_depth == 0) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    fk_stack_depth--;
    if (pctx != NULL) {
        *(CUcontext *)pctx = fk_stack[fk_stack_depth];
    }
    return CUDA_SUCCESS;
}

CUresult
fk_CtxPopCurrent(CUcontext *pctx)
{
    return fk_call(GH_CU_CtxPopCurrent, 1, NULL, NULL, pop_current, pctx);
}

static CUresult
get_device(fk_target *target, void *device)
{
    *(CUdevice *)device = target->ctx->device;
    return CUDA_SUCCESS;
}

CUresult
fk_CtxGetDevice(CUdevice *device)
{
    return fk_call(GH_CU_CtxGetDevice, device != NULL, fk_on_current, NULL, get_device, device);
}

static CUresult
get_id(fk_target *target, void *id)
{
    *(unsigned long long *)id = target->ctx->id;
    return CUDA_SUCCESS;
}

/* The id of `ctx`, or of the current context for NULL; a destroyed one's is refused. */
CUresult
fk_CtxGetId(CUcontext ctx, unsigned long long *id)
{
    return fk_call(GH_CU_CtxGetId, id != NULL, ctx != NULL ? fk_on_context : fk_on_current, ctx,
                   get_id, id);
}

static CUresult
synchronize(fk_target *target, void *args)
{
    fk_context *ctx = target->ctx;

    (void)args;
    if (ctx->captures > 0) {
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* it would wait on a capturing stream */
    }
    fk_ops_wait(ctx->ops.last_seq); /* the lock is released while waiting */
    /* reset meanwhile: its work was dropped */
    return ctx->alive ? CUDA_SUCCESS : CUDA_ERROR_CONTEXT_IS_DESTROYED;
}

CUresult
fk_CtxSynchronize(void)
{
    return fk_call(GH_CU_CtxSynchronize, 1, fk_on_current, NULL, synchronize, NULL);
}

int
fakecuda_thread_stack_depth(void)
{
    return fk_stack_depth;
}
