/* fakecuda graphs: stream capture (cuStreamBeginCapture, cuStreamEndCapture), graphs built
 * node by node (memcpy, memset, host function, event record and wait, child graph, empty),
 * instantiation, launch, upload, whole-graph update, the node list and a DOT dump.
 *
 * A node keeps a template op (fk_queue.c): the op that was captured, or the one an explicit
 * node would queue, made by queueing it on a private capturing lane.  An executable graph
 * holds its own copy of the graph; launching it queues a copy of each template op in node
 * order (insertion order is a topological order: dependencies exist before their
 * dependents), after the op's `replay` hook took what the copy holds.  Kernel nodes are as
 * unsupported as kernel launches: the fake has no kernels.  Conditional nodes run their
 * bodies by their handle's default value (no kernel can set it here); a 'while' whose
 * value is non-zero would never end, and is refused at launch (CUDA_ERROR_NOT_SUPPORTED).
 *
 * Graphs and executable graphs are resources of the context current when they were made
 * (live counters "graphs" and "graph_execs").
 */
#include "fk_graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- graphs and nodes ---- */

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
        fk_graph_free(n->child);
    }
    for (unsigned int i = 0; i < n->nbodies; i++) {
        if (n->bodies[i] != NULL) {
            if (n->bodies[i]->res.ctx != NULL) {
                fk_resource_remove(&n->bodies[i]->res);
            }
            fk_graph_free(n->bodies[i]);
        }
    }
    free(n->bodies);
    free(n->deps);
    free(n);
}

/* Free a graph's nodes and the graph.  Lock held. */
void
fk_graph_free(fk_graph *g)
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
    fk_graph_free((fk_graph *)res);
}

/* A new empty graph, registered with `ctx` (NULL: unregistered), or NULL.  Lock held. */
fk_graph *
fk_graph_new(fk_context *ctx)
{
    fk_graph *g = calloc(1, sizeof(*g));

    if (g != NULL && ctx != NULL) {
        fk_resource_add(&g->res, FK_GRAPHS, ctx, graph_destroy_res);
    }
    return g;
}

fk_graph *
fk_graph_find(CUgraph handle)
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
fk_op *
fk_op_copy(const fk_op *op, CUresult *res)
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
fk_graph *
fk_graph_clone(const fk_graph *g, fk_context *ctx, CUresult *res)
{
    fk_graph *copy = fk_graph_new(NULL);
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
        if (n->tmpl != NULL && (c->tmpl = fk_op_copy(n->tmpl, res)) == NULL) {
            goto fail;
        }
        if (n->child != NULL && (c->child = fk_graph_clone(n->child, NULL, res)) == NULL) {
            goto fail;
        }
        if (n->nbodies > 0) {
            c->cond = n->cond;
            c->cond_type = n->cond_type;
            if ((c->bodies = calloc(n->nbodies, sizeof(*c->bodies))) == NULL) {
                goto fail;
            }
            c->nbodies = n->nbodies;
            for (unsigned int b = 0; b < n->nbodies; b++) {
                if ((c->bodies[b] = fk_graph_clone(n->bodies[b], NULL, res)) == NULL) {
                    goto fail;
                }
            }
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
    fk_graph_free(copy);
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
        g = fk_graph_new(ctx);
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
    g = fk_graph_find(hGraph);
    if (g == NULL) {
        res = CUDA_ERROR_INVALID_VALUE;
    }
    else {
        fk_resource_remove(&g->res);
        fk_graph_free(g);
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
    g = fk_graph_find(originalGraph);
    if (g == NULL) {
        res = CUDA_ERROR_INVALID_VALUE;
    }
    else {
        *phGraphClone = fk_graph_clone(g, g->res.ctx, &res);
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
    *g = fk_graph_find(hGraph);
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
    child = fk_graph_find(childGraph);
    if (child == NULL || child == g) {
        res = CUDA_ERROR_INVALID_VALUE;
    }
    else {
        n = node_add(g, CU_GRAPH_NODE_TYPE_GRAPH, dependencies, numDependencies);
        res = n != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
        if (n != NULL) {
            n->child = fk_graph_clone(child, NULL, &res); /* the driver keeps a copy too */
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

/* ---- conditional nodes ---- */

#define FK_MAX_HANDLES 4096

/* Conditional handles, by handle - 1.  Under the lock. */
static struct {
    const fk_graph *graph;
    unsigned int value;
    int assign_default;
} fk_handles[FK_MAX_HANDLES];
static unsigned int fk_nhandles;

/* The value a conditional handle has at a node (its default, assigned at each launch). */
unsigned int
fk_cond_value(CUgraphConditionalHandle h)
{
    return h >= 1 && h <= fk_nhandles ? fk_handles[h - 1].value : 0;
}

CUresult
fk_GraphConditionalHandleCreate(CUgraphConditionalHandle *pHandle_out, CUgraph hGraph,
                                CUcontext ctx, unsigned int defaultLaunchValue, unsigned int flags)
{
    CUresult res = fk_enter(GH_CU_GraphConditionalHandleCreate, FK_AFTER_INIT);
    fk_graph *g;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (pHandle_out == NULL || (flags & ~(unsigned int)CU_GRAPH_COND_ASSIGN_DEFAULT) != 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    g = fk_graph_find(hGraph);
    if (g == NULL || ctx != g->res.ctx) {
        res = CUDA_ERROR_INVALID_VALUE;
    }
    else if (fk_nhandles == FK_MAX_HANDLES) {
        res = CUDA_ERROR_OUT_OF_MEMORY;
    }
    else {
        fk_handles[fk_nhandles].graph = g;
        fk_handles[fk_nhandles].value = flags ? defaultLaunchValue : 0;
        fk_handles[fk_nhandles].assign_default = flags != 0;
        *pHandle_out = ++fk_nhandles;
    }
    fk_unlock();
    return res;
}

/* Only conditional nodes come through cuGraphAddNode here. */
CUresult
fk_GraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                const CUgraphEdgeData *dependencyData, size_t numDependencies,
                CUgraphNodeParams *nodeParams)
{
    fk_graph *g;
    fk_node *n;
    const CUDA_CONDITIONAL_NODE_PARAMS *p;
    CUresult res =
        add_begin(GH_CU_GraphAddNode, phGraphNode, hGraph, dependencies, numDependencies, &g);

    if (res != CUDA_SUCCESS) {
        return res;
    }
    (void)dependencyData;
    p = nodeParams != NULL ? &nodeParams->conditional : NULL;
    if (p == NULL || nodeParams->type != CU_GRAPH_NODE_TYPE_CONDITIONAL) {
        res = p == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_SUPPORTED;
    }
    else if (p->handle < 1 || p->handle > fk_nhandles || fk_handles[p->handle - 1].graph != g ||
             p->ctx != g->res.ctx || p->size == 0 ||
             (p->type == CU_GRAPH_COND_TYPE_IF && p->size > 2) ||
             (p->type == CU_GRAPH_COND_TYPE_WHILE && p->size != 1) ||
             (p->type != CU_GRAPH_COND_TYPE_IF && p->type != CU_GRAPH_COND_TYPE_WHILE &&
              p->type != CU_GRAPH_COND_TYPE_SWITCH)) {
        res = CUDA_ERROR_INVALID_VALUE;
    }
    else if ((n = node_add(g, CU_GRAPH_NODE_TYPE_CONDITIONAL, dependencies, numDependencies)) ==
                 NULL ||
             (n->bodies = calloc(p->size, sizeof(*n->bodies))) == NULL) {
        res = CUDA_ERROR_OUT_OF_MEMORY; /* a node without bodies launches as empty */
    }
    else {
        n->cond = p->handle;
        n->cond_type = p->type;
        n->nbodies = p->size;
        for (unsigned int i = 0; i < p->size && res == CUDA_SUCCESS; i++) {
            n->bodies[i] = fk_graph_new(g->res.ctx);
            if (n->bodies[i] == NULL) {
                res = CUDA_ERROR_OUT_OF_MEMORY;
            }
        }
        nodeParams->conditional.phGraph_out = n->bodies; /* the driver's array: the node's */
        *phGraphNode = n;
    }
    fk_unlock();
    return res;
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
    g = fk_graph_find(hGraph);
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
        case CU_GRAPH_NODE_TYPE_CONDITIONAL:
            return "conditional";
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
    g = fk_graph_find(hGraph);
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
