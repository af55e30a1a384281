/* fakecuda peer access: cuDeviceCanAccessPeer over FAKECUDA_PEER_ACCESS's matrix, and
 * cuCtxEnablePeerAccess / cuCtxDisablePeerAccess with the driver's error codes.
 *
 * Each context records, per device, the peer context it was given access to; access to a
 * context that has since been destroyed counts as not enabled.
 */
#include "fk_internal.h"

typedef struct {
    int *can;
    CUdevice peer;
} fk_can_access_args;

static CUresult
can_access_peer(fk_target *target, void *args)
{
    fk_can_access_args *a = args;

    if (fk_device_get(a->peer) == NULL) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    *a->can = fk_peer_supported(((fk_device *)target->found)->ordinal, a->peer);
    return CUDA_SUCCESS;
}

CUresult
fk_DeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
    fk_can_access_args args = {canAccessPeer, peerDev};

    return fk_call(GH_CU_DeviceCanAccessPeer, canAccessPeer != NULL, fk_on_device, FK_ORDINAL(dev),
                   can_access_peer, &args);
}

/* `peer` must be a live context other than the current one (target->ctx): CUDA_SUCCESS, or
   CUDA_ERROR_INVALID_CONTEXT (`peer` is no context or is the current one) or
   CUDA_ERROR_CONTEXT_IS_DESTROYED.  Lock held. */
static CUresult
peer_check(const fk_target *target, CUcontext peer)
{
    CUresult res = fk_context_usable(peer);

    if (res == CUDA_SUCCESS && peer == target->ctx) {
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

static CUresult
enable_peer(fk_target *target, void *peer_context)
{
    fk_context *cur = target->ctx, *peer = peer_context;
    CUresult res = peer_check(target, peer);

    if (res == CUDA_SUCCESS && !fk_peer_supported(cur->device, peer->device)) {
        res = CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
    }
    if (res == CUDA_SUCCESS && peer_enabled(cur, peer)) {
        res = CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    }
    if (res == CUDA_SUCCESS) {
        cur->peers[peer->device] = peer;
    }
    return res;
}

CUresult
fk_CtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
    return fk_call(GH_CU_CtxEnablePeerAccess, Flags == 0, fk_on_current, NULL, enable_peer,
                   peerContext);
}

static CUresult
disable_peer(fk_target *target, void *peer_context)
{
    fk_context *cur = target->ctx, *peer = peer_context;
    CUresult res = peer_check(target, peer);

    if (res == CUDA_SUCCESS && !peer_enabled(cur, peer)) {
        res = CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
    }
    if (res == CUDA_SUCCESS) {
        cur->peers[peer->device] = NULL;
    }
    return res;
}

CUresult
fk_CtxDisablePeerAccess(CUcontext peerContext)
{
    return fk_call(GH_CU_CtxDisablePeerAccess, 1, fk_on_current, NULL, disable_peer, peerContext);
}
