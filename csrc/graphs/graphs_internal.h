/* csrc/graphs/'s private header: the Graph, GraphExec and GraphNode objects' layout and the
 * helpers graph.c, graph_exec.c and capture.c share.  Each file of graphs/ includes it (it
 * includes graphs.h); no file of another folder does.
 */
#ifndef GPUHOST_GRAPHS_INTERNAL_H
#define GPUHOST_GRAPHS_INTERNAL_H

#include "graphs.h"
#include "launch/launch.h"

/* ---- graph.c and graph_exec.c ---- */
/* Graphs' shared parts: the Graph, GraphExec and GraphNode objects' layout and the helpers
 * graph.c (Graph: capture results, building, conditionals) and graph_exec.c (GraphExec,
 * GraphNode) share.
 */
typedef struct {
    PyObject_HEAD
    gh_context *context; /* strong */
    uint64_t generation;
    CUgraph handle;
    PyObject *keep;    /* list: objects the nodes use */
    PyObject *kernels; /* set: the Kernels of its kernel nodes, checked before each launch */
    PyObject *exec;    /* the GraphExec launch() instantiated, or NULL */
    unsigned long version, exec_version; /* bumped by each node added; exec made at which */
    int launched;    /* a GraphExec of it was launched: its work may still run */
    PyObject *owner; /* a conditional node's body: the Graph that owns its handle, else NULL */
} gh_graph;

typedef struct {
    PyObject_HEAD
    gh_graph *graph; /* strong: what it launches stays alive */
    CUgraphExec handle;
    PyObject *keep; /* list: what updates and set_kernel_args() put in it */
    PyObject *kernels;
} gh_graphexec;

typedef struct {
    PyObject_HEAD
    gh_graph *graph; /* strong: the node is the graph's */
    CUgraphNode handle;
    PyObject *kernel; /* a kernel node's Kernel, when known, else NULL */
} gh_graphnode;

/* ---- graph.c ---- */
/* Check g's context is alive and make it current for call `id`; 0 or -1. */
int gh_graph_enter(gh_graph *g, gh_cu_id id, int *pushed);

/* Leave g's context, then check `res` of call `id`; 0 or -1. */
int gh_graph_leave_check(gh_graph *g, int pushed, CUresult res, gh_cu_id id);

/* Each Kernel of list `kernels` can still be launched (module loaded, context alive). */
int gh_graph_check_kernels(PyObject *kernels, gh_cu_id id);

/* A new Graph owning `handle` (a graph of ctx), keeping alive the objects of list `keep` and
   checking the Kernels of list `kernels` before each launch (either NULL: empty).  On
   failure the handle is destroyed. */
PyObject *gh_graph_wrap(gh_state *st, gh_context *ctx, CUgraph handle, PyObject *keep,
                        PyObject *kernels);

/* ---- graph_exec.c ---- */
/* A new GraphNode of g (keeping g alive); `kernel` is a kernel node's Kernel or NULL. */
PyObject *gh_graphnode_new(gh_graph *g, CUgraphNode handle, PyObject *kernel);

/* A new GraphExec of g as it is now (cuGraphInstantiateWithFlags). */
PyObject *gh_graphexec_new(gh_graph *g, unsigned long long flags);

/* GraphExec.launch(stream=None) and GraphExec.upload(stream=None). */
PyObject *gh_graphexec_launch(gh_graphexec *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames);

PyObject *gh_graphexec_upload(gh_graphexec *self, PyObject *args, PyObject *kwargs);

/* The GraphExec and GraphNode types (graph_exec.c), made by gh_graph_init_type. */
int gh_graphexec_init_types(PyObject *module, gh_state *st);

#endif /* GPUHOST_GRAPHS_INTERNAL_H */
