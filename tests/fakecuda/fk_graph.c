/* fakecuda graphs: stream capture (cuStreamBeginCapture, cuStreamEndCapture), graphs built
 * node by node (memcpy, memset, host function, event record and wait, child graph, empty),
 * instantiation, launch, upload, whole-graph update, the node list and a DOT dump.
 *
 * A node keeps a template op (fk_queue.c): the op that was captured, or the one an explicit
 * node would queue, made by queueing it on a private capturing lane.  An executable graph
 * holds its own copy of the graph; launching it queues a copy of each template op in node
 * order (insertion order is a topological order: dependencies exist before their
 * dependents), after the op's `replay` hook took what the copy holds.  Kernel nodes are as
 * unsupported as kernel launches: the fake has no kernels.
 *
 * Graphs and executable graphs are resources of the context current when they were made
 * (live counters "graphs" and "graph_execs").
 */
#include "fk_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct CUgraphNode_st {
    struct CUgraphNode_st *next; /* in its graph, oldest first */
    struct CUgraph_st *graph;
    CUgraphNodeType type;
    fk_op *tmpl;              /* the op a launch queues a copy of; NULL: none */
    struct CUgraph_st *child; /* a child graph node's own copy of the graph */
    size_t ndeps;
    struct CUgraphNode_st **deps;
};
typedef struct CUgraphNode_st fk_node;

struct CUgraph_st {
    fk_resource res; /* first: the handle is its address (unregistered for an exec's copy) */
    fk_node *head, *tail;
    size_t count;
    fk_node *capture_last; /* while captured into: the newest node, the next one's dependency */
};
typedef struct CUgraph_st fk_graph;

struct CUgraphExec_st {
    fk_resource res;
    fk_graph *graph; /* its own copy */
};
typedef struct CUgraphExec_st fk_exec;

/* ---- graphs and nodes ---- */

static void graph_free(fk_graph *g);

static void
node_free(fk_node *n)
{
    if (n->tmpl != NULL) {
        if (n->tmpl->cancel != NULL) {
            n->tmpl->cancel(n->tmpl);
        }
        free(n->tmpl);
    }
    if (n->child != NULL) {
        graph_free(n->child);
    }
    free(n->deps);
    free(n);
}

/* Free a graph's nodes and the graph.  Lock held. */
static void
graph_free(fk_graph *g)
{
    fk_node *n = g->head, *next;

    for (; n != NULL; n = next) {
        next = n->next;
        node_free(n);
    }
    free(g);
}

static void
graph_destroy_res(fk_resource *res)
{
    graph_free((fk_graph *)res);
}

/* A new empty graph, registered with `ctx` (NULL: unregistered), or NULL.  Lock held. */
static fk_graph *
graph_new(fk_context *ctx)
{
    fk_graph *g = calloc(1, sizeof(*g));

    if (g != NULL && ctx != NULL) {
        fk_resource_add(&g->res, FK_GRAPHS, ctx, graph_destroy_res);
    }
    return g;
}

static fk_graph *
find_graph(CUgraph handle)
{
    return (fk_graph *)fk_resource_find(handle, FK_GRAPHS);
}

/* Whether `node` is one of g's (compared, never followed). */
static int
graph_has(const fk_graph *g, const fk_node *node)
{
    for (const fk_node *n = g->head; n != NULL; n = n->next) {
        if (n == node) {
            return 1;
        }
    }
    return 0;
}

/* A new node of `type` at the end of g, after `deps`; NULL when out of memory. */
static fk_node *
node_add(fk_graph *g, CUgraphNodeType type, fk_node *const *deps, size_t ndeps)
{
    fk_node *n = calloc(1, sizeof(*n));

    if (n == NULL || (ndeps > 0 && (n->deps = calloc(ndeps, sizeof(*n->deps))) == NULL)) {
        free(n);
        return NULL;
    }
    if (ndeps > 0) {
        memcpy(n->deps, deps, ndeps * sizeof(*deps));
    }
    n->ndeps = ndeps;
    n->type = type;
    n->graph = g;
    if (g->tail != NULL) {
        g->tail->next = n;
    }
    else {
        g->head = n;
    }
    g->tail = n;
    g->count++;
    return n;
}

/* A copy of template op `op` for a launch or a clone, its replay hook run; NULL when out of
   memory.  Lock held. */
static fk_op *
op_copy(const fk_op *op, CUresult *res)
{
    fk_op *copy = malloc(op->size);

    *res = CUDA_ERROR_OUT_OF_MEMORY;
    if (copy == NULL) {
        return NULL;
    }
    memcpy(copy, op, op->size);
    copy->next = NULL;
    copy->seq = 0;
    *res = copy->replay != NULL ? copy->replay(copy) : CUDA_SUCCESS;
    if (*res != CUDA_SUCCESS) {
        free(copy);
        return NULL;
    }
    return copy;
}

/* A deep copy of g (registered with ctx unless NULL), or NULL.  Lock held. */
static fk_graph *
graph_clone(const fk_graph *g, fk_context *ctx, CUresult *res)
{
    fk_graph *copy = graph_new(NULL);
    fk_node **map = calloc(g->count + 1, sizeof(*map));
    size_t i = 0;

    *res = CUDA_ERROR_OUT_OF_MEMORY;
    if (copy == NULL || map == NULL) {
        free(copy);
        free(map);
        return NULL;
    }
    for (const fk_node *n = g->head; n != NULL; n = n->next, i++) {
        fk_node *deps[64], **dp = deps, *c;
        size_t j = 0;

        if (n->ndeps > 64 && (dp = calloc(n->ndeps, sizeof(*dp))) == NULL) {
            goto fail;
        }
        for (const fk_node *m = g->head; m != n; m = m->next) { /* map deps by position */
            for (size_t d = 0; d < n->ndeps; d++) {
                if (n->deps[d] == m) {
                    dp[d] = map[j];
                }
            }
            j++;
        }
        c = node_add(copy, n->type, dp, n->ndeps);
        if (dp != deps) {
            free(dp);
        }
        if (c == NULL) {
            goto fail;
        }
        map[i] = c;
        if (n->tmpl != NULL && (c->tmpl = op_copy(n->tmpl, res)) == NULL) {
            goto fail;
        }
        if (n->child != NULL && (c->child = graph_clone(n->child, NULL, res)) == NULL) {
            goto fail;
        }
    }
    free(map);
    if (ctx != NULL) {
        fk_resource_add(&copy->res, FK_GRAPHS, ctx, graph_destroy_res);
    }
    *res = CUDA_SUCCESS;
    return copy;
fail:
    free(map);
    graph_free(copy);
    if (*res == CUDA_SUCCESS) {
        *res = CUDA_ERROR_OUT_OF_MEMORY;
    }
    return NULL;
}

CUresult
fk_graph_capture_op(fk_graph *g, fk_op *op)
{
    fk_node *last = g->capture_last;
    fk_node *n = node_add(g, op->node_type, &last, last != NULL);

    if (n == NULL) {
        if (op->cancel != NULL) {
            op->cancel(op);
        }
        free(op);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    n->tmpl = op;
    g->capture_last = n;
    return CUDA_SUCCESS;
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
    if (mode == NULL ||
        (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL && *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
         *mode != CU_STREAM_CAPTURE_MODE_RELAXED)) {
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
    graph_free(g);
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
    if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
        mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
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
        g = graph_new(ctx);
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

/* ---- building graphs ---- */

CUresult
fk_GraphCreate(CUgraph *phGraph, unsigned int flags)
{
    CUresult res = fk_enter(GH_CU_GraphCreate, FK_AFTER_INIT);
    fk_context *ctx = NULL;
    fk_graph *g;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (phGraph == NULL || flags != 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    res = fk_current_context(&ctx);
    if (res == CUDA_SUCCESS) {
        g = graph_new(ctx);
        res = g != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
        *phGraph = g;
    }
    fk_unlock();
    return res;
}

CUresult
fk_GraphDestroy(CUgraph hGraph)
{
    CUresult res = fk_enter(GH_CU_GraphDestroy, FK_AFTER_INIT);
    fk_graph *g;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    fk_lock();
    g = find_graph(hGraph);
    if (g == NULL) {
        res = CUDA_ERROR_INVALID_VALUE;
    }
    else {
        fk_resource_remove(&g->res);
        graph_free(g);
    }
    fk_unlock();
    return res;
}

CUresult
fk_GraphClone(CUgraph *phGraphClone, CUgraph originalGraph)
{
    CUresult res = fk_enter(GH_CU_GraphClone, FK_AFTER_INIT);
    fk_graph *g;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (phGraphClone == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    g = find_graph(originalGraph);
    if (g == NULL) {
        res = CUDA_ERROR_INVALID_VALUE;
    }
    else {
        *phGraphClone = graph_clone(g, g->res.ctx, &res);
    }
    fk_unlock();
    return res;
}

/* The common start of cuGraphAdd*Node: the graph, its dependencies checked (each a node of
   it, none twice).  CUDA_SUCCESS with *g set, lock held; otherwise the lock is let go. */
static CUresult
add_begin(gh_cu_id id, CUgraphNode *phNode, CUgraph hGraph, const CUgraphNode *deps, size_t ndeps,
          fk_graph **g)
{
    CUresult res = fk_enter(id, FK_AFTER_INIT);

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (phNode == NULL || (ndeps > 0 && deps == NULL)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    *g = find_graph(hGraph);
    res = *g != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; res == CUDA_SUCCESS && i < ndeps; i++) {
        if (!graph_has(*g, deps[i])) {
            res = CUDA_ERROR_INVALID_VALUE;
        }
        for (size_t j = 0; j < i; j++) {
            if (deps[j] == deps[i]) {
                res = CUDA_ERROR_INVALID_VALUE;
            }
        }
    }
    if (res != CUDA_SUCCESS) {
        fk_unlock();
    }
    return res;
}

/* A node made by queueing its op on a private lane capturing into a scratch graph, then
   moved into g after `deps`: what `queue` queues on (ctx, lane).  Lock held. */
typedef CUresult (*fk_queue_fn)(fk_context *ctx, fk_lane *lane, const void *arg);

static CUresult
add_op_node(fk_graph *g, CUgraphNodeType type, const CUgraphNode *deps, size_t ndeps,
            fk_queue_fn queue, const void *arg, CUgraphNode *phNode)
{
    fk_graph scratch;
    fk_lane lane;
    fk_node *n;
    CUresult res;

    memset(&scratch, 0, sizeof(scratch));
    memset(&lane, 0, sizeof(lane));
    lane.capture = &scratch;
    lane.non_blocking = 1;
    lane.node_builder = 1;
    res = queue(g->res.ctx, &lane, arg);
    if (res == CUDA_SUCCESS && lane.capture_invalid) {
        res = CUDA_ERROR_INVALID_VALUE; /* pageable memory, say */
    }
    if (res == CUDA_SUCCESS) {
        n = node_add(g, type, deps, ndeps);
        if (n == NULL) {
            res = CUDA_ERROR_OUT_OF_MEMORY;
        }
        else {
            n->tmpl = scratch.head != NULL ? scratch.head->tmpl : NULL; /* NULL: 0 bytes */
            if (scratch.head != NULL) {
                scratch.head->tmpl = NULL;
            }
            *phNode = n;
        }
    }
    if (scratch.head != NULL) {
        node_free(scratch.head);
    }
    return res;
}

static CUresult
queue_memcpy(fk_context *ctx, fk_lane *lane, const void *arg)
{
    return fk_copy_3d_on((const CUDA_MEMCPY3D *)arg, ctx, lane);
}

static CUresult
queue_memset(fk_context *ctx, fk_lane *lane, const void *arg)
{
    const CUDA_MEMSET_NODE_PARAMS *p = arg;

    return fk_memset_on(p->dst, p->pitch, p->value, p->elementSize, p->width, p->height, ctx, lane);
}

static CUresult
queue_host(fk_context *ctx, fk_lane *lane, const void *arg)
{
    const CUDA_HOST_NODE_PARAMS *p = arg;

    return fk_host_func_on(p->fn, p->userData, NULL, ctx, lane);
}

static CUresult
queue_record(fk_context *ctx, fk_lane *lane, const void *arg)
{
    return fk_event_record_on((CUevent)arg, ctx, lane);
}

static CUresult
queue_wait(fk_context *ctx, fk_lane *lane, const void *arg)
{
    return fk_event_wait_on((CUevent)arg, ctx, lane);
}

CUresult
fk_GraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                      size_t numDependencies, const CUDA_MEMCPY3D *copyParams, CUcontext ctx)
{
    fk_graph *g;
    CUresult res =
        add_begin(GH_CU_GraphAddMemcpyNode, phGraphNode, hGraph, dependencies, numDependencies, &g);

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (copyParams == NULL || (ctx != NULL && ctx != g->res.ctx)) {
        res = CUDA_ERROR_INVALID_VALUE;
    }
    else {
        res = add_op_node(g, CU_GRAPH_NODE_TYPE_MEMCPY, dependencies, numDependencies, queue_memcpy,
                          copyParams, phGraphNode);
    }
    fk_unlock();
    return res;
}

CUresult
fk_GraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                      size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS *memsetParams,
                      CUcontext ctx)
{
    fk_graph *g;
    CUresult res =
        add_begin(GH_CU_GraphAddMemsetNode, phGraphNode, hGraph, dependencies, numDependencies, &g);

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (memsetParams == NULL || (ctx != NULL && ctx != g->res.ctx)) {
        res = CUDA_ERROR_INVALID_VALUE;
    }
    else {
        res = add_op_node(g, CU_GRAPH_NODE_TYPE_MEMSET, dependencies, numDependencies, queue_memset,
                          memsetParams, phGraphNode);
    }
    fk_unlock();
    return res;
}

CUresult
fk_GraphAddHostNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                    size_t numDependencies, const CUDA_HOST_NODE_PARAMS *nodeParams)
{
    fk_graph *g;
    CUresult res =
        add_begin(GH_CU_GraphAddHostNode, phGraphNode, hGraph, dependencies, numDependencies, &g);

    if (res != CUDA_SUCCESS) {
        return res;
    }
    res = (nodeParams == NULL || nodeParams->fn == NULL)
              ? CUDA_ERROR_INVALID_VALUE
              : add_op_node(g, CU_GRAPH_NODE_TYPE_HOST, dependencies, numDependencies, queue_host,
                            nodeParams, phGraphNode);
    fk_unlock();
    return res;
}

CUresult
fk_GraphAddEventRecordNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                           const CUgraphNode *dependencies, size_t numDependencies, CUevent event)
{
    fk_graph *g;
    CUresult res = add_begin(GH_CU_GraphAddEventRecordNode, phGraphNode, hGraph, dependencies,
                             numDependencies, &g);

    if (res != CUDA_SUCCESS) {
        return res;
    }
    res = add_op_node(g, CU_GRAPH_NODE_TYPE_EVENT_RECORD, dependencies, numDependencies,
                      queue_record, event, phGraphNode);
    fk_unlock();
    return res;
}

CUresult
fk_GraphAddEventWaitNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                         size_t numDependencies, CUevent event)
{
    fk_graph *g;
    CUresult res = add_begin(GH_CU_GraphAddEventWaitNode, phGraphNode, hGraph, dependencies,
                             numDependencies, &g);

    if (res != CUDA_SUCCESS) {
        return res;
    }
    res = add_op_node(g, CU_GRAPH_NODE_TYPE_WAIT_EVENT, dependencies, numDependencies, queue_wait,
                      event, phGraphNode);
    fk_unlock();
    return res;
}

CUresult
fk_GraphAddChildGraphNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                          size_t numDependencies, CUgraph childGraph)
{
    fk_graph *g, *child;
    fk_node *n;
    CUresult res = add_begin(GH_CU_GraphAddChildGraphNode, phGraphNode, hGraph, dependencies,
                             numDependencies, &g);

    if (res != CUDA_SUCCESS) {
        return res;
    }
    child = find_graph(childGraph);
    if (child == NULL || child == g) {
        res = CUDA_ERROR_INVALID_VALUE;
    }
    else {
        n = node_add(g, CU_GRAPH_NODE_TYPE_GRAPH, dependencies, numDependencies);
        res = n != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
        if (n != NULL) {
            n->child = graph_clone(child, NULL, &res); /* the driver keeps a copy too */
            *phGraphNode = n;
        }
    }
    fk_unlock();
    return res;
}

CUresult
fk_GraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                     size_t numDependencies)
{
    fk_graph *g;
    fk_node *n;
    CUresult res =
        add_begin(GH_CU_GraphAddEmptyNode, phGraphNode, hGraph, dependencies, numDependencies, &g);

    if (res != CUDA_SUCCESS) {
        return res;
    }
    n = node_add(g, CU_GRAPH_NODE_TYPE_EMPTY, dependencies, numDependencies);
    res = n != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    *phGraphNode = n;
    fk_unlock();
    return res;
}

/* The fake has no kernels (cuLaunchKernel is unsupported too). */
CUresult
fk_GraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                      size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    fk_graph *g;
    CUresult res =
        add_begin(GH_CU_GraphAddKernelNode, phGraphNode, hGraph, dependencies, numDependencies, &g);

    if (res != CUDA_SUCCESS) {
        return res;
    }
    (void)nodeParams;
    fk_unlock();
    return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult
fk_GraphKernelNodeGetParams(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    CUresult res = fk_enter(GH_CU_GraphKernelNodeGetParams, FK_AFTER_INIT);

    (void)hNode, (void)nodeParams;
    return res != CUDA_SUCCESS ? res : CUDA_ERROR_INVALID_VALUE; /* no kernel nodes here */
}

CUresult
fk_GraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    CUresult res = fk_enter(GH_CU_GraphExecKernelNodeSetParams, FK_AFTER_INIT);

    (void)hGraphExec, (void)hNode, (void)nodeParams;
    return res != CUDA_SUCCESS ? res : CUDA_ERROR_NOT_SUPPORTED;
}

/* ---- inspecting ---- */

CUresult
fk_GraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
    CUresult res = fk_enter(GH_CU_GraphGetNodes, FK_AFTER_INIT);
    fk_graph *g;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (numNodes == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    g = find_graph(hGraph);
    if (g == NULL) {
        res = CUDA_ERROR_INVALID_VALUE;
    }
    else {
        size_t i = 0;
        if (nodes != NULL) {
            for (fk_node *n = g->head; n != NULL && i < *numNodes; n = n->next) {
                nodes[i++] = n;
            }
            for (; i < *numNodes; i++) {
                nodes[i] = NULL;
            }
        }
        *numNodes = g->count;
    }
    fk_unlock();
    return res;
}

CUresult
fk_GraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
    CUresult res = fk_enter(GH_CU_GraphNodeGetType, FK_AFTER_INIT);

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (type == NULL || hNode == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    /* Only nodes of live graphs are followed: gpuhost keeps the graph of each node it hands
       out alive, so a node handle from it is always one. */
    *type = hNode->type;
    fk_unlock();
    return res;
}

static const char *
type_name(CUgraphNodeType type)
{
    switch (type) {
        case CU_GRAPH_NODE_TYPE_KERNEL:
            return "kernel";
        case CU_GRAPH_NODE_TYPE_MEMCPY:
            return "memcpy";
        case CU_GRAPH_NODE_TYPE_MEMSET:
            return "memset";
        case CU_GRAPH_NODE_TYPE_HOST:
            return "host";
        case CU_GRAPH_NODE_TYPE_GRAPH:
            return "graph";
        case CU_GRAPH_NODE_TYPE_EMPTY:
            return "empty";
        case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
            return "wait_event";
        case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
            return "event_record";
        default:
            return "other";
    }
}

static void
dot_graph(FILE *f, const fk_graph *g, const char *prefix)
{
    size_t i = 0;

    for (const fk_node *n = g->head; n != NULL; n = n->next, i++) {
        fprintf(f, "  \"%s%zu\" [label=\"%s\"];\n", prefix, i, type_name(n->type));
        for (size_t d = 0; d < n->ndeps; d++) {
            size_t j = 0;
            for (const fk_node *m = g->head; m != NULL && m != n->deps[d]; m = m->next) {
                j++;
            }
            fprintf(f, "  \"%s%zu\" -> \"%s%zu\";\n", prefix, j, prefix, i);
        }
    }
}

CUresult
fk_GraphDebugDotPrint(CUgraph hGraph, const char *path, unsigned int flags)
{
    CUresult res = fk_enter(GH_CU_GraphDebugDotPrint, FK_AFTER_INIT);
    fk_graph *g;
    FILE *f;

    (void)flags;
    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (path == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    g = find_graph(hGraph);
    if (g == NULL) {
        res = CUDA_ERROR_INVALID_VALUE;
    }
    else if ((f = fopen(path, "w")) == NULL) {
        res = CUDA_ERROR_OPERATING_SYSTEM;
    }
    else {
        fprintf(f, "digraph fakecuda_graph {\n");
        dot_graph(f, g, "node");
        fprintf(f, "}\n");
        res = fclose(f) == 0 ? CUDA_SUCCESS : CUDA_ERROR_OPERATING_SYSTEM;
    }
    fk_unlock();
    return res;
}

/* ---- executable graphs ---- */

static void
exec_destroy_res(fk_resource *res)
{
    fk_exec *e = (fk_exec *)res;

    graph_free(e->graph);
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
    g = find_graph(hGraph);
    if (g == NULL) {
        res = CUDA_ERROR_INVALID_VALUE;
    }
    else if ((e = calloc(1, sizeof(*e))) == NULL) {
        res = CUDA_ERROR_OUT_OF_MEMORY;
    }
    else if ((e->graph = graph_clone(g, NULL, &res)) == NULL) {
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

/* Queue a copy of each node's op on `lane` of `ctx`, children inline.  Lock held. */
static CUresult
launch_nodes(const fk_graph *g, fk_context *ctx, fk_lane *lane)
{
    CUresult res = CUDA_SUCCESS;

    for (const fk_node *n = g->head; n != NULL && res == CUDA_SUCCESS; n = n->next) {
        if (n->tmpl != NULL) {
            fk_op *op = op_copy(n->tmpl, &res);
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
    g = find_graph(hGraph);
    if (e == NULL || g == NULL) {
        res = CUDA_ERROR_INVALID_VALUE;
    }
    else if (!same_topology(e->graph, g, &info)) {
        res = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    }
    else if ((copy = graph_clone(g, NULL, &res)) != NULL) {
        graph_free(e->graph);
        e->graph = copy;
        info.result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    }
    fk_unlock();
    if (resultInfo != NULL) {
        *resultInfo = info;
    }
    return res;
}
