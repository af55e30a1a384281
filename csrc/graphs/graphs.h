/* csrc/graphs/'s public header: what module.c calls to add Graph, GraphExec, GraphNode and
 * stream capture to the module.  Their layouts and helpers are private: graphs_internal.h.
 */
#ifndef GPUHOST_GRAPHS_H
#define GPUHOST_GRAPHS_H

#include "base/base.h"

/* capture.c: add stream capture's methods to the Stream type (Stream.begin_capture,
   end_capture, is_capturing), after gh_stream_init_type; 0 or -1. */
int gh_capture_init(PyObject *module, gh_state *st);

/* graph.c: add the Graph, GraphExec and GraphNode types to the module; 0 or -1. */
int gh_graph_init_type(PyObject *module, gh_state *st);

#endif /* GPUHOST_GRAPHS_H */
