/* fakecuda peer access: cuDeviceCanAccessPeer over FAKECUDA_PEER_ACCESS's matrix, and
 * cuCtxEnablePeerAccess / cuCtxDisablePeerAccess with the driver's error codes.
 *
 * Each context records, per device, the peer context it was given access to; access to a
 * context that has since been destroyed counts as not enabled.
 */
#include "fk_internal.h"

CUresult
fk_DeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
    CUresult res = fk_enter(GH_CU_DeviceCanAccessPeer, FK_AFTER_INIT);

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (canAccessPeer == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (fk_device_get(dev) == NULL || fk_device_get(peerDev) == NULL) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    *canAccessPeer = fk_peer_supported(dev, peerDev);
    return CUDA_SUCCESS;
}

/* The current context and the live context `peer`, which must differ: CUDA_SUCCESS, or
   CUDA_ERROR_INVALID_CONTEXT (no current context, `peer` is no context or is the current
   one) or CUDA_ERROR_CONTEXT_IS_DESTROYED.  Lock held. */
static CUresult
peer_pair(CUcontext peer, fk_context **cur)
{
    CUresult res = fk_current_context(cur);

    if (res == CUDA_SUCCESS) {
        res = fk_context_usable(peer);
    }
    if (res == CUDA_SUCCESS && peer == *cur) {
        res = CUDA_ERROR_INVALID_CONTEXT;
    }
    return res;
}

/* Whether `ctx` has access to the live context `peer`.  Lock held. */
static int
peer_enabled(const fk_context *ctx, const fk_context *peer)
{
    return ctx->peers[peer->device] == peer;
}

CUresult
fk_CtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
    CUresult res = fk_enter(GH_CU_CtxEnablePeerAccess, FK_AFTER_INIT);
    fk_context *cur = NULL;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (Flags != 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    res = peer_pair(peerContext, &cur);
    if (res == CUDA_SUCCESS && !fk_peer_supported(cur->device, peerContext->device)) {
        res = CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
    }
    if (res == CUDA_SUCCESS && peer_enabled(cur, peerContext)) {
        res = CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    }
    if (res == CUDA_SUCCESS) {
        cur->peers[peerContext->device] = peerContext;
    }
    fk_unlock();
    return res;
}

CUresult
fk_CtxDisablePeerAccess(CUcontext peerContext)
{
    CUresult res = fk_enter(GH_CU_CtxDisablePeerAccess, FK_AFTER_INIT);
    fk_context *cur = NULL;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    fk_lock();
    res = peer_pair(peerContext, &cur);
    if (res == CUDA_SUCCESS && !peer_enabled(cur, peerContext)) {
        res = CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
    }
    if (res == CUDA_SUCCESS) {
        cur->peers[peerContext->device] = NULL;
    }
    fk_unlock();
    return res;
}
