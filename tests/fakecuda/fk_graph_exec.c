/* fakecuda stream capture (cuStreamBeginCapture, cuStreamEndCapture, the capture checks of
 * other calls, cuThreadExchangeStreamCaptureMode) and executable graphs (instantiate,
 * launch, upload, update).  See fk_graph.c for graphs and nodes.
 */
#include "fk_graph.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static int
mode_known(CUstreamCaptureMode mode)
{
    return mode == CU_STREAM_CAPTURE_MODE_GLOBAL || mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL ||
           mode == CU_STREAM_CAPTURE_MODE_RELAXED;
}

static _Thread_local CUstreamCaptureMode fk_thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

/* A potentially unsafe call of this thread (cuMemAlloc, a synchronization...), as the driver
   judges it: refused while this thread captures in global or thread-local mode, or, in this
   thread's global mode (the default), while another thread captures in global mode. */
CUresult
fk_unsafe_call_check(const fk_context *ctx)
{
    pthread_t self = pthread_self();

    if (fk_thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED) {
        return CUDA_SUCCESS;
    }
    for (int i = 0; i < ctx->strict_captures; i++) {
        int own = pthread_equal(ctx->strict[i].thread, self);
        if (own || (fk_thread_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
                    ctx->strict[i].mode == CU_STREAM_CAPTURE_MODE_GLOBAL)) {
            return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        }
    }
    return CUDA_SUCCESS;
}

/* Note or forget the capture on `lane` among the context's strict ones. */
static void
strict_add(fk_context *ctx, const fk_lane *lane)
{
    if (lane->capture_mode != CU_STREAM_CAPTURE_MODE_RELAXED &&
        ctx->strict_captures < FK_STRICT_CAPTURES) {
        ctx->strict[ctx->strict_captures].thread = pthread_self();
        ctx->strict[ctx->strict_captures].mode = lane->capture_mode;
        ctx->strict[ctx->strict_captures].lane = lane;
        ctx->strict_captures++;
    }
}

static void
strict_remove(fk_context *ctx, const fk_lane *lane)
{
    for (int i = 0; i < ctx->strict_captures; i++) {
        if (ctx->strict[i].lane == lane) {
            ctx->strict[i] = ctx->strict[--ctx->strict_captures];
            return;
        }
    }
}

static CUresult
exchange_mode(fk_target *target, void *mode)
{
    CUstreamCaptureMode old = fk_thread_mode;

    (void)target;
    if (!mode_known(*(CUstreamCaptureMode *)mode)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_thread_mode = *(CUstreamCaptureMode *)mode;
    *(CUstreamCaptureMode *)mode = old;
    return CUDA_SUCCESS;
}

CUresult
fk_ThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    return fk_call(GH_CU_ThreadExchangeStreamCaptureMode, mode != NULL, NULL, NULL, exchange_mode,
                   mode);
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
    strict_remove(ctx, lane);
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

static CUresult
begin_capture(fk_target *target, void *mode)
{
    fk_context *ctx = target->ctx;
    fk_lane *lane = target->lane;
    fk_graph *g;

    if (lane == &ctx->legacy) {
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* the legacy stream cannot capture */
    }
    if (lane->capture != NULL) {
        return CUDA_ERROR_ILLEGAL_STATE;
    }
    g = fk_graph_new(ctx);
    if (g == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    lane->capture = g;
    lane->capture_invalid = 0;
    lane->capture_mode = *(CUstreamCaptureMode *)mode;
    ctx->captures++;
    ctx->blocking_captures += !lane->non_blocking;
    strict_add(ctx, lane);
    return CUDA_SUCCESS;
}

CUresult
fk_StreamBeginCapture(CUstream hStream, CUstreamCaptureMode mode)
{
    return fk_call(GH_CU_StreamBeginCapture, mode_known(mode), fk_on_stream, hStream, begin_capture,
                   &mode);
}

static CUresult
end_capture(fk_target *target, void *phGraph)
{
    fk_lane *lane = target->lane;

    if (lane->capture == NULL) {
        return CUDA_ERROR_ILLEGAL_STATE; /* not capturing */
    }
    *(CUgraph *)phGraph = NULL;
    if (lane->capture_invalid) {
        fk_capture_abandon(target->ctx, lane);
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    *(CUgraph *)phGraph = capture_end(target->ctx, lane);
    return CUDA_SUCCESS;
}

CUresult
fk_StreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
    return fk_call(GH_CU_StreamEndCapture, phGraph != NULL, fk_on_stream, hStream, end_capture,
                   phGraph);
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

/* The executable graph `handle` (target->found), else CUDA_ERROR_INVALID_VALUE. */
static CUresult
on_exec(const void *handle, fk_target *target)
{
    return fk_found(target, find_exec((CUgraphExec)handle), CUDA_ERROR_INVALID_VALUE);
}

static CUresult
instantiate(fk_target *target, void *phGraphExec)
{
    const fk_graph *g = target->found;
    fk_exec *e = calloc(1, sizeof(*e));
    CUresult res;

    if (e == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    e->graph = fk_graph_clone(g, NULL, &res);
    if (e->graph == NULL) {
        free(e);
        return res;
    }
    fk_resource_add(&e->res, FK_GRAPH_EXECS, g->res.ctx, exec_destroy_res);
    *(CUgraphExec *)phGraphExec = e;
    return CUDA_SUCCESS;
}

CUresult
fk_GraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags)
{
    const unsigned long long known =
        CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
        CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;

    return fk_call(GH_CU_GraphInstantiateWithFlags, phGraphExec != NULL && (flags & ~known) == 0,
                   fk_on_graph, hGraph, instantiate, phGraphExec);
}

static CUresult
exec_destroy(fk_target *target, void *args)
{
    fk_exec *e = target->found;

    (void)args;
    fk_resource_remove(&e->res); /* its launches already queued hold copies */
    exec_destroy_res(&e->res);
    return CUDA_SUCCESS;
}

CUresult
fk_GraphExecDestroy(CUgraphExec hGraphExec)
{
    return fk_call(GH_CU_GraphExecDestroy, 1, on_exec, hGraphExec, exec_destroy, NULL);
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

typedef struct {
    CUstream stream;
    int launch; /* 0: an upload, which has nothing to do here */
} fk_exec_args;

/* Launch (or upload) the executable graph resolved on a stream of its context. */
static CUresult
exec_on_stream(fk_target *target, void *args)
{
    const fk_exec *e = target->found;
    fk_exec_args *a = args;
    CUresult res = fk_on_stream(a->stream, target);

    if (res == CUDA_SUCCESS && target->ctx != e->res.ctx) {
        res = CUDA_ERROR_INVALID_VALUE; /* a stream of another context */
    }
    if (res == CUDA_SUCCESS && a->launch) {
        res = launch_nodes(e->graph, target->ctx, target->lane);
    }
    return res;
}

CUresult
fk_GraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    fk_exec_args args = {hStream, 1};

    return fk_call(GH_CU_GraphLaunch, 1, on_exec, hGraphExec, exec_on_stream, &args);
}

CUresult
fk_GraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
    fk_exec_args args = {hStream, 0};

    return fk_call(GH_CU_GraphUpload, 1, on_exec, hGraphExec, exec_on_stream, &args);
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

typedef struct {
    CUgraphExec exec;
    CUgraph graph;
    CUgraphExecUpdateResultInfo *info;
} fk_update_args;

/* The result info is written whatever went wrong, unless nothing could be looked at. */
static CUresult
exec_update(fk_target *target, void *args)
{
    fk_update_args *a = args;
    fk_exec *e = find_exec(a->exec);
    fk_graph *g = fk_graph_find(a->graph), *copy;
    CUgraphExecUpdateResultInfo info;
    CUresult res = CUDA_SUCCESS;

    (void)target;
    memset(&info, 0, sizeof(info));
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
    if (a->info != NULL) {
        *a->info = info;
    }
    return res;
}

CUresult
fk_GraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo *resultInfo)
{
    fk_update_args args = {hGraphExec, hGraph, resultInfo};

    return fk_call(GH_CU_GraphExecUpdate, 1, NULL, NULL, exec_update, &args);
}
