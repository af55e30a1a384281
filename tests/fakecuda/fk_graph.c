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
        fk_op_drop(n->tmpl);
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

/* A context's teardown (fk_resource_destroy_all), res already unregistered.  A body is
   left to its conditional node, which frees it with its graph (a graph of the same context,
   destroyed in the same teardown, before or after): res.ctx NULL tells node_free that it
   is no longer registered. */
static void
graph_destroy_res(fk_resource *res)
{
    fk_graph *g = (fk_graph *)res;

    if (g->body) {
        res->ctx = NULL;
        return;
    }
    fk_graph_free(g);
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
                c->bodies[b]->body = 1;
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
        fk_op_drop(op);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    n->tmpl = op;
    g->capture_last = n;
    return CUDA_SUCCESS;
}

CUresult
fk_on_graph(const void *handle, fk_target *target)
{
    return fk_found(target, fk_graph_find((CUgraph)handle), CUDA_ERROR_INVALID_VALUE);
}

/* ---- building graphs ---- */

static CUresult
graph_create(fk_target *target, void *phGraph)
{
    fk_graph *g = fk_graph_new(target->ctx);

    *(CUgraph *)phGraph = g;
    return g != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult
fk_GraphCreate(CUgraph *phGraph, unsigned int flags)
{
    return fk_call(GH_CU_GraphCreate, phGraph != NULL && flags == 0, fk_on_current, NULL,
                   graph_create, phGraph);
}

static CUresult
graph_destroy(fk_target *target, void *args)
{
    fk_graph *g = target->found;

    (void)args;
    if (g->body) {
        return CUDA_ERROR_INVALID_VALUE; /* its conditional node's, destroyed with it */
    }
    fk_resource_remove(&g->res);
    fk_graph_free(g);
    return CUDA_SUCCESS;
}

CUresult
fk_GraphDestroy(CUgraph hGraph)
{
    return fk_call(GH_CU_GraphDestroy, 1, fk_on_graph, hGraph, graph_destroy, NULL);
}

static CUresult
graph_clone(fk_target *target, void *phGraphClone)
{
    const fk_graph *g = target->found;
    CUresult res;

    *(CUgraph *)phGraphClone = fk_graph_clone(g, g->res.ctx, &res);
    return res;
}

CUresult
fk_GraphClone(CUgraph *phGraphClone, CUgraph originalGraph)
{
    return fk_call(GH_CU_GraphClone, phGraphClone != NULL, fk_on_graph, originalGraph, graph_clone,
                   phGraphClone);
}

/* What `queue` queues on (ctx, lane) for an op node.  Lock held. */
typedef CUresult (*fk_queue_fn)(fk_context *ctx, fk_lane *lane, const void *arg);

/* A cuGraphAdd*Node call: where the node goes, and what `add` makes of the rest. */
typedef struct fk_add_args {
    CUgraphNode *phNode;
    const CUgraphNode *deps;
    size_t ndeps;
    CUresult (*add)(fk_graph *g, const struct fk_add_args *a); /* Lock held. */
    CUgraphNodeType type;                                      /* the node's */
    fk_queue_fn queue;                                         /* an op node's op */
    const void *arg;                                           /* the call's parameters */
    CUcontext ctx; /* a memcpy or memset node's: NULL or the graph's */
} fk_add_args;

/* The common part of cuGraphAdd*Node: the graph resolved, its dependencies checked (each a
   node of it, none twice), then a->add. */
static CUresult
add_checked(fk_target *target, void *args)
{
    fk_graph *g = target->found;
    const fk_add_args *a = args;

    for (size_t i = 0; i < a->ndeps; i++) {
        if (!graph_has(g, a->deps[i])) {
            return CUDA_ERROR_INVALID_VALUE;
        }
        for (size_t j = 0; j < i; j++) {
            if (a->deps[j] == a->deps[i]) {
                return CUDA_ERROR_INVALID_VALUE;
            }
        }
    }
    return a->add(g, a);
}

static CUresult
add_node(gh_cu_id id, CUgraphNode *phNode, CUgraph hGraph, const CUgraphNode *deps, size_t ndeps,
         fk_add_args *a)
{
    a->phNode = phNode;
    a->deps = deps;
    a->ndeps = ndeps;
    return fk_call(id, phNode != NULL && (ndeps == 0 || deps != NULL), fk_on_graph, hGraph,
                   add_checked, a);
}

/* An op node made by queueing its op (a->queue) on a private lane capturing into a scratch
   graph, then moved into g. */
static CUresult
add_op_node(fk_graph *g, const fk_add_args *a)
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
    res = a->queue(g->res.ctx, &lane, a->arg);
    if (res == CUDA_SUCCESS && lane.capture_invalid) {
        res = CUDA_ERROR_INVALID_VALUE; /* pageable memory, say */
    }
    if (res == CUDA_SUCCESS) {
        n = node_add(g, a->type, a->deps, a->ndeps);
        if (n == NULL) {
            res = CUDA_ERROR_OUT_OF_MEMORY;
        }
        else {
            n->tmpl = scratch.head != NULL ? scratch.head->tmpl : NULL; /* NULL: 0 bytes */
            if (scratch.head != NULL) {
                scratch.head->tmpl = NULL;
            }
            *a->phNode = n;
        }
    }
    if (scratch.head != NULL) {
        node_free(scratch.head);
    }
    return res;
}

/* A memcpy or memset node: its parameters, in the graph's context. */
static CUresult
add_copy_node(fk_graph *g, const fk_add_args *a)
{
    if (a->arg == NULL || (a->ctx != NULL && a->ctx != g->res.ctx)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return add_op_node(g, a);
}

static CUresult
add_host_node(fk_graph *g, const fk_add_args *a)
{
    const CUDA_HOST_NODE_PARAMS *p = a->arg;

    return p == NULL || p->fn == NULL ? CUDA_ERROR_INVALID_VALUE : add_op_node(g, a);
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
    fk_add_args a = {.add = add_copy_node,
                     .type = CU_GRAPH_NODE_TYPE_MEMCPY,
                     .queue = queue_memcpy,
                     .arg = copyParams,
                     .ctx = ctx};

    return add_node(GH_CU_GraphAddMemcpyNode, phGraphNode, hGraph, dependencies, numDependencies,
                    &a);
}

CUresult
fk_GraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                      size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS *memsetParams,
                      CUcontext ctx)
{
    fk_add_args a = {.add = add_copy_node,
                     .type = CU_GRAPH_NODE_TYPE_MEMSET,
                     .queue = queue_memset,
                     .arg = memsetParams,
                     .ctx = ctx};

    return add_node(GH_CU_GraphAddMemsetNode, phGraphNode, hGraph, dependencies, numDependencies,
                    &a);
}

CUresult
fk_GraphAddHostNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                    size_t numDependencies, const CUDA_HOST_NODE_PARAMS *nodeParams)
{
    fk_add_args a = {.add = add_host_node,
                     .type = CU_GRAPH_NODE_TYPE_HOST,
                     .queue = queue_host,
                     .arg = nodeParams};

    return add_node(GH_CU_GraphAddHostNode, phGraphNode, hGraph, dependencies, numDependencies, &a);
}

CUresult
fk_GraphAddEventRecordNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                           const CUgraphNode *dependencies, size_t numDependencies, CUevent event)
{
    fk_add_args a = {.add = add_op_node,
                     .type = CU_GRAPH_NODE_TYPE_EVENT_RECORD,
                     .queue = queue_record,
                     .arg = event};

    return add_node(GH_CU_GraphAddEventRecordNode, phGraphNode, hGraph, dependencies,
                    numDependencies, &a);
}

CUresult
fk_GraphAddEventWaitNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                         size_t numDependencies, CUevent event)
{
    fk_add_args a = {.add = add_op_node,
                     .type = CU_GRAPH_NODE_TYPE_WAIT_EVENT,
                     .queue = queue_wait,
                     .arg = event};

    return add_node(GH_CU_GraphAddEventWaitNode, phGraphNode, hGraph, dependencies, numDependencies,
                    &a);
}

/* A child graph node holds its own copy of the child, as the driver's does. */
static CUresult
add_child_node(fk_graph *g, const fk_add_args *a)
{
    fk_graph *child = fk_graph_find((CUgraph)a->arg);
    fk_node *n;
    CUresult res;

    if (child == NULL || child == g) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    n = node_add(g, CU_GRAPH_NODE_TYPE_GRAPH, a->deps, a->ndeps);
    if (n == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    n->child = fk_graph_clone(child, NULL, &res);
    *a->phNode = n;
    return res;
}

CUresult
fk_GraphAddChildGraphNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                          size_t numDependencies, CUgraph childGraph)
{
    fk_add_args a = {.add = add_child_node, .arg = childGraph};

    return add_node(GH_CU_GraphAddChildGraphNode, phGraphNode, hGraph, dependencies,
                    numDependencies, &a);
}

static CUresult
add_empty_node(fk_graph *g, const fk_add_args *a)
{
    fk_node *n = node_add(g, CU_GRAPH_NODE_TYPE_EMPTY, a->deps, a->ndeps);

    *a->phNode = n;
    return n != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult
fk_GraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                     size_t numDependencies)
{
    fk_add_args a = {.add = add_empty_node};

    return add_node(GH_CU_GraphAddEmptyNode, phGraphNode, hGraph, dependencies, numDependencies,
                    &a);
}

/* The fake has no kernels (cuLaunchKernel only records launches). */
static CUresult
add_kernel_node(fk_graph *g, const fk_add_args *a)
{
    (void)g, (void)a;
    return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult
fk_GraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                      size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    fk_add_args a = {.add = add_kernel_node, .arg = nodeParams};

    return add_node(GH_CU_GraphAddKernelNode, phGraphNode, hGraph, dependencies, numDependencies,
                    &a);
}

/* No kernel nodes here: every call is invalid. */
CUresult
fk_GraphKernelNodeGetParams(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    (void)hNode, (void)nodeParams;
    return fk_call(GH_CU_GraphKernelNodeGetParams, 0, NULL, NULL, NULL, NULL);
}

CUresult
fk_GraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    (void)hGraphExec, (void)hNode, (void)nodeParams;
    return fk_call(GH_CU_GraphExecKernelNodeSetParams, 1, NULL, NULL, fk_not_supported, NULL);
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

typedef struct {
    CUgraphConditionalHandle *out;
    CUcontext ctx;
    unsigned int value, flags;
} fk_handle_args;

static CUresult
handle_create(fk_target *target, void *args)
{
    const fk_graph *g = target->found;
    fk_handle_args *a = args;

    if (a->ctx != g->res.ctx) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (fk_nhandles == FK_MAX_HANDLES) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    fk_handles[fk_nhandles].graph = g;
    fk_handles[fk_nhandles].value = a->flags ? a->value : 0;
    fk_handles[fk_nhandles].assign_default = a->flags != 0;
    *a->out = ++fk_nhandles;
    return CUDA_SUCCESS;
}

CUresult
fk_GraphConditionalHandleCreate(CUgraphConditionalHandle *pHandle_out, CUgraph hGraph,
                                CUcontext ctx, unsigned int defaultLaunchValue, unsigned int flags)
{
    fk_handle_args args = {pHandle_out, ctx, defaultLaunchValue, flags};

    return fk_call(GH_CU_GraphConditionalHandleCreate,
                   pHandle_out != NULL &&
                       (flags & ~(unsigned int)CU_GRAPH_COND_ASSIGN_DEFAULT) == 0,
                   fk_on_graph, hGraph, handle_create, &args);
}

/* A conditional node (the only kind cuGraphAddNode makes here), with its empty bodies. */
static CUresult
add_conditional_node(fk_graph *g, const fk_add_args *a)
{
    CUgraphNodeParams *params = (CUgraphNodeParams *)a->arg;
    const CUDA_CONDITIONAL_NODE_PARAMS *p = params != NULL ? &params->conditional : NULL;
    fk_node *n;
    CUresult res = CUDA_SUCCESS;

    if (p == NULL || params->type != CU_GRAPH_NODE_TYPE_CONDITIONAL) {
        return p == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_SUPPORTED;
    }
    if (p->handle < 1 || p->handle > fk_nhandles || fk_handles[p->handle - 1].graph != g ||
        p->ctx != g->res.ctx || p->size == 0 || (p->type == CU_GRAPH_COND_TYPE_IF && p->size > 2) ||
        (p->type == CU_GRAPH_COND_TYPE_WHILE && p->size != 1) ||
        (p->type != CU_GRAPH_COND_TYPE_IF && p->type != CU_GRAPH_COND_TYPE_WHILE &&
         p->type != CU_GRAPH_COND_TYPE_SWITCH)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if ((n = node_add(g, CU_GRAPH_NODE_TYPE_CONDITIONAL, a->deps, a->ndeps)) == NULL ||
        (n->bodies = calloc(p->size, sizeof(*n->bodies))) == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY; /* a node without bodies launches as empty */
    }
    n->cond = p->handle;
    n->cond_type = p->type;
    n->nbodies = p->size;
    for (unsigned int i = 0; i < p->size && res == CUDA_SUCCESS; i++) {
        n->bodies[i] = fk_graph_new(g->res.ctx);
        if (n->bodies[i] == NULL) {
            res = CUDA_ERROR_OUT_OF_MEMORY;
        }
        else {
            n->bodies[i]->body = 1;
        }
    }
    params->conditional.phGraph_out = n->bodies; /* the driver's array: the node's */
    *a->phNode = n;
    return res;
}

CUresult
fk_GraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                const CUgraphEdgeData *dependencyData, size_t numDependencies,
                CUgraphNodeParams *nodeParams)
{
    fk_add_args a = {.add = add_conditional_node, .arg = nodeParams};

    (void)dependencyData;
    return add_node(GH_CU_GraphAddNode, phGraphNode, hGraph, dependencies, numDependencies, &a);
}

/* ---- inspecting ---- */

typedef struct {
    CUgraphNode *nodes;
    size_t *count;
} fk_nodes_args;

static CUresult
get_nodes(fk_target *target, void *args)
{
    const fk_graph *g = target->found;
    fk_nodes_args *a = args;
    size_t i = 0;

    if (a->nodes != NULL) {
        for (fk_node *n = g->head; n != NULL && i < *a->count; n = n->next) {
            a->nodes[i++] = n;
        }
        for (; i < *a->count; i++) {
            a->nodes[i] = NULL;
        }
    }
    *a->count = g->count;
    return CUDA_SUCCESS;
}

CUresult
fk_GraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
    fk_nodes_args args = {nodes, numNodes};

    return fk_call(GH_CU_GraphGetNodes, numNodes != NULL, fk_on_graph, hGraph, get_nodes, &args);
}

typedef struct {
    CUgraphNode node;
    CUgraphNodeType *type;
} fk_type_args;

/* Only nodes of live graphs are followed: gpuhost keeps the graph of each node it hands out
   alive, so a node handle from it is always one. */
static CUresult
get_type(fk_target *target, void *args)
{
    fk_type_args *a = args;

    (void)target;
    *a->type = a->node->type;
    return CUDA_SUCCESS;
}

CUresult
fk_GraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
    fk_type_args args = {hNode, type};

    return fk_call(GH_CU_GraphNodeGetType, type != NULL && hNode != NULL, NULL, NULL, get_type,
                   &args);
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

static CUresult
dot_print(fk_target *target, void *path)
{
    FILE *f = fopen(path, "w");

    if (f == NULL) {
        return CUDA_ERROR_OPERATING_SYSTEM;
    }
    fprintf(f, "digraph fakecuda_graph {\n");
    dot_graph(f, target->found, "node");
    fprintf(f, "}\n");
    return fclose(f) == 0 ? CUDA_SUCCESS : CUDA_ERROR_OPERATING_SYSTEM;
}

CUresult
fk_GraphDebugDotPrint(CUgraph hGraph, const char *path, unsigned int flags)
{
    (void)flags;
    return fk_call(GH_CU_GraphDebugDotPrint, path != NULL, fk_on_graph, hGraph, dot_print,
                   (void *)path);
}
