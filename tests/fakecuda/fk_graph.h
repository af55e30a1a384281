/* fakecuda graphs' shared parts: the graph, node and executable-graph structs and the
 * helpers fk_graph.c (graphs, nodes, conditionals) and fk_graph_exec.c (capture,
 * instantiation, launch, update) share.  All under the driver lock.
 */
#ifndef FAKECUDA_FK_GRAPH_H
#define FAKECUDA_FK_GRAPH_H

#include "fk_internal.h"

struct CUgraphNode_st {
    struct CUgraphNode_st *next; /* in its graph, oldest first */
    struct CUgraph_st *graph;
    CUgraphNodeType type;
    fk_op *tmpl;              /* the op a launch queues a copy of; NULL: none */
    struct CUgraph_st *child; /* a child graph node's own copy of the graph */
    size_t ndeps;
    struct CUgraphNode_st **deps;
    CUgraphConditionalHandle cond; /* a conditional node's handle */
    CUgraphConditionalNodeType cond_type;
    unsigned int nbodies;
    struct CUgraph_st **bodies; /* its body graphs, owned (registered in the user's graph) */
};
typedef struct CUgraphNode_st fk_node;

struct CUgraph_st {
    fk_resource res; /* first: the handle is its address (unregistered for an exec's copy) */
    fk_node *head, *tail;
    size_t count;
    fk_node *capture_last; /* while captured into: the newest node, the next one's dependency */
    int body; /* a conditional node's body: that node frees it (fk_graph_free of its graph) */
};
typedef struct CUgraph_st fk_graph;

struct CUgraphExec_st {
    fk_resource res;
    fk_graph *graph; /* its own copy */
};
typedef struct CUgraphExec_st fk_exec;

/* A new empty graph, registered with `ctx` (NULL: unregistered), or NULL. */
FK_HIDDEN fk_graph *fk_graph_new(fk_context *ctx);
/* Free a graph's nodes and the graph (unregistered first by the caller). */
FK_HIDDEN void fk_graph_free(fk_graph *g);
/* The live registered graph `handle`, or NULL. */
FK_HIDDEN fk_graph *fk_graph_find(CUgraph handle);
/* Resolver: the live registered graph `handle` (target->found), else
   CUDA_ERROR_INVALID_VALUE. */
FK_HIDDEN CUresult fk_on_graph(const void *handle, fk_target *target);
/* A deep copy of g (registered with ctx unless NULL), or NULL with *res set. */
FK_HIDDEN fk_graph *fk_graph_clone(const fk_graph *g, fk_context *ctx, CUresult *res);
/* A copy of template op `op` for a launch or a clone, its replay hook run; NULL with *res
   set when out of memory or refused. */
FK_HIDDEN fk_op *fk_op_copy(const fk_op *op, CUresult *res);
/* The value conditional handle `h` has (its default, assigned at each launch). */
FK_HIDDEN unsigned int fk_cond_value(CUgraphConditionalHandle h);

#endif /* FAKECUDA_FK_GRAPH_H */
