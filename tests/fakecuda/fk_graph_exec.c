/* fakecuda stream capture (cuStreamBeginCapture, cuStreamEndCapture, the capture checks of
 * other calls, cuThreadExchangeStreamCaptureMode) and executable graphs (instantiate,
 * launch, upload, update).  See fk_graph.c for graphs and nodes.
 */
#include "fk_graph.h"

#include <stdlib.h>
#include <string.h>

static int
mode_known(CUstreamCaptureMode mode)
{
    return mode == CU_STREAM_CAPTURE_MODE_GLOBAL || mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL ||
           mode == CU_STREAM_CAPTURE_MODE_RELAXED;
}

static _Thread_local CUstreamCaptureMode fk_thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

CUresult
fk_unsafe_call_check(const fk_context *ctx)
{
    if (ctx->strict_captures > 0 && fk_thread_mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    return CUDA_SUCCESS;
}

CUresult
fk_ThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    CUresult res = fk_enter(GH_CU_ThreadExchangeStreamCaptureMode, FK_AFTER_INIT);
    CUstreamCaptureMode old = fk_thread_mode;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (mode == NULL || !mode_known(*mode)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_thread_mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}

CUresult
fk_capture_check(fk_context *ctx, fk_lane *lane)
{
    if (lane != NULL && lane->capture != NULL) {
        lane->capture_invalid = 1;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if ((lane == NULL || lane == &ctx->legacy) && ctx->blocking_captures > 0) {
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    }
    return CUDA_SUCCESS;
}

/* ---- capture ---- */

/* Take the capture off `lane`: its graph, or NULL. */
static fk_graph *
capture_end(fk_context *ctx, fk_lane *lane)
{
    fk_graph *g = lane->capture;

    lane->capture = NULL;
    ctx->captures--;
    ctx->blocking_captures -= !lane->non_blocking;
    ctx->strict_captures -= lane->capture_mode != CU_STREAM_CAPTURE_MODE_RELAXED;
    g->capture_last = NULL;
    return g;
}

void
fk_capture_abandon(fk_context *ctx, fk_lane *lane)
{
    fk_graph *g = capture_end(ctx, lane);

    lane->capture_invalid = 0;
    fk_resource_remove(&g->res);
    fk_graph_free(g);
}

CUresult
fk_StreamBeginCapture(CUstream hStream, CUstreamCaptureMode mode)
{
    CUresult res = fk_enter(GH_CU_StreamBeginCapture, FK_AFTER_INIT);
    fk_context *ctx = NULL;
    fk_lane *lane = NULL;
    fk_graph *g;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (!mode_known(mode)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    res = fk_stream_lane(hStream, &ctx, &lane);
    if (res == CUDA_SUCCESS && lane == &ctx->legacy) {
        res = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* the legacy stream cannot capture */
    }
    else if (res == CUDA_SUCCESS && lane->capture != NULL) {
        res = CUDA_ERROR_ILLEGAL_STATE;
    }
    if (res == CUDA_SUCCESS) {
        g = fk_graph_new(ctx);
        if (g == NULL) {
            res = CUDA_ERROR_OUT_OF_MEMORY;
        }
        else {
            lane->capture = g;
            lane->capture_invalid = 0;
            lane->capture_mode = mode;
            ctx->captures++;
            ctx->blocking_captures += !lane->non_blocking;
            ctx->strict_captures += mode != CU_STREAM_CAPTURE_MODE_RELAXED;
        }
    }
    fk_unlock();
    return res;
}

CUresult
fk_StreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
    CUresult res = fk_enter(GH_CU_StreamEndCapture, FK_AFTER_INIT);
    fk_context *ctx = NULL;
    fk_lane *lane = NULL;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (phGraph == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    res = fk_stream_lane(hStream, &ctx, &lane);
    if (res == CUDA_SUCCESS && lane->capture == NULL) {
        res = CUDA_ERROR_ILLEGAL_STATE; /* not capturing */
    }
    if (res == CUDA_SUCCESS) {
        *phGraph = NULL;
        if (lane->capture_invalid) {
            fk_capture_abandon(ctx, lane);
            res = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        }
        else {
            *phGraph = capture_end(ctx, lane);
        }
    }
    fk_unlock();
    return res;
}

/* ---- executable graphs ---- */

static void
exec_destroy_res(fk_resource *res)
{
    fk_exec *e = (fk_exec *)res;

    fk_graph_free(e->graph);
    free(e);
}

static fk_exec *
find_exec(CUgraphExec handle)
{
    return (fk_exec *)fk_resource_find(handle, FK_GRAPH_EXECS);
}

CUresult
fk_GraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags)
{
    CUresult res = fk_enter(GH_CU_GraphInstantiateWithFlags, FK_AFTER_INIT);
    const unsigned long long known =
        CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
        CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
    fk_graph *g;
    fk_exec *e = NULL;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (phGraphExec == NULL || (flags & ~known) != 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    g = fk_graph_find(hGraph);
    if (g == NULL) {
        res = CUDA_ERROR_INVALID_VALUE;
    }
    else if ((e = calloc(1, sizeof(*e))) == NULL) {
        res = CUDA_ERROR_OUT_OF_MEMORY;
    }
    else if ((e->graph = fk_graph_clone(g, NULL, &res)) == NULL) {
        free(e);
    }
    else {
        fk_resource_add(&e->res, FK_GRAPH_EXECS, g->res.ctx, exec_destroy_res);
        *phGraphExec = e;
    }
    fk_unlock();
    return res;
}

CUresult
fk_GraphExecDestroy(CUgraphExec hGraphExec)
{
    CUresult res = fk_enter(GH_CU_GraphExecDestroy, FK_AFTER_INIT);
    fk_exec *e;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    fk_lock();
    e = find_exec(hGraphExec);
    if (e == NULL) {
        res = CUDA_ERROR_INVALID_VALUE;
    }
    else {
        fk_resource_remove(&e->res); /* its launches already queued hold copies */
        exec_destroy_res(&e->res);
    }
    fk_unlock();
    return res;
}

static CUresult launch_nodes(const fk_graph *g, fk_context *ctx, fk_lane *lane);

/* The body a conditional node runs now, or NULL; CUDA_ERROR_NOT_SUPPORTED for a 'while'
   that would never end here.  Lock held. */
static CUresult
conditional_body(const fk_node *n, const fk_graph **body)
{
    unsigned int value = fk_cond_value(n->cond);

    *body = NULL;
    switch (n->cond_type) {
        case CU_GRAPH_COND_TYPE_IF:
            *body = value != 0 ? n->bodies[0] : n->nbodies == 2 ? n->bodies[1] : NULL;
            return CUDA_SUCCESS;
        case CU_GRAPH_COND_TYPE_WHILE:
            return value != 0 ? CUDA_ERROR_NOT_SUPPORTED : CUDA_SUCCESS;
        default:
            *body = value < n->nbodies ? n->bodies[value] : NULL;
            return CUDA_SUCCESS;
    }
}

/* Queue a copy of each node's op on `lane` of `ctx`, children inline.  Lock held. */
static CUresult
launch_nodes(const fk_graph *g, fk_context *ctx, fk_lane *lane)
{
    CUresult res = CUDA_SUCCESS;

    for (const fk_node *n = g->head; n != NULL && res == CUDA_SUCCESS; n = n->next) {
        if (n->nbodies > 0) {
            const fk_graph *body;
            res = conditional_body(n, &body);
            if (res == CUDA_SUCCESS && body != NULL) {
                res = launch_nodes(body, ctx, lane);
            }
            continue;
        }
        if (n->tmpl != NULL) {
            fk_op *op = fk_op_copy(n->tmpl, &res);
            if (op != NULL) {
                res = fk_op_enqueue(op, ctx, lane);
            }
        }
        if (n->child != NULL && res == CUDA_SUCCESS) {
            res = launch_nodes(n->child, ctx, lane);
        }
    }
    return res;
}

static CUresult
exec_on_stream(gh_cu_id id, CUgraphExec hGraphExec, CUstream hStream, int launch)
{
    CUresult res = fk_enter(id, FK_AFTER_INIT);
    fk_context *ctx = NULL;
    fk_lane *lane = NULL;
    fk_exec *e;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    fk_lock();
    e = find_exec(hGraphExec);
    res = e != NULL ? fk_stream_lane(hStream, &ctx, &lane) : CUDA_ERROR_INVALID_VALUE;
    if (res == CUDA_SUCCESS && ctx != e->res.ctx) {
        res = CUDA_ERROR_INVALID_VALUE; /* a stream of another context */
    }
    if (res == CUDA_SUCCESS && launch) {
        res = launch_nodes(e->graph, ctx, lane);
    }
    fk_unlock();
    return res;
}

CUresult
fk_GraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    return exec_on_stream(GH_CU_GraphLaunch, hGraphExec, hStream, 1);
}

CUresult
fk_GraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
    return exec_on_stream(GH_CU_GraphUpload, hGraphExec, hStream, 0);
}

/* Whether `b` has a's topology: the same node types, dependencies and children.  Sets the
   first node that differs and why. */
static int
same_topology(const fk_graph *a, const fk_graph *b, CUgraphExecUpdateResultInfo *info)
{
    const fk_node *m = a->head, *n = b->head;

    if (a->count != b->count) {
        info->result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
        return 0;
    }
    for (; m != NULL; m = m->next, n = n->next) {
        if (m->type != n->type) {
            info->result = CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
            info->errorNode = (CUgraphNode)n;
            return 0;
        }
        if (m->ndeps != n->ndeps ||
            (m->child != NULL && n->child != NULL && !same_topology(m->child, n->child, info))) {
            info->result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
            info->errorNode = (CUgraphNode)n;
            return 0;
        }
    }
    return 1;
}

CUresult
fk_GraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo *resultInfo)
{
    CUresult res = fk_enter(GH_CU_GraphExecUpdate, FK_AFTER_INIT);
    CUgraphExecUpdateResultInfo info;
    fk_exec *e;
    fk_graph *g, *copy;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    memset(&info, 0, sizeof(info));
    fk_lock();
    e = find_exec(hGraphExec);
    g = fk_graph_find(hGraph);
    if (e == NULL || g == NULL) {
        res = CUDA_ERROR_INVALID_VALUE;
    }
    else if (!same_topology(e->graph, g, &info)) {
        res = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    }
    else if ((copy = fk_graph_clone(g, NULL, &res)) != NULL) {
        fk_graph_free(e->graph);
        e->graph = copy;
        info.result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    }
    fk_unlock();
    if (resultInfo != NULL) {
        *resultInfo = info;
    }
    return res;
}
