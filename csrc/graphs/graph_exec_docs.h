/* The docstrings of gpuhost.GraphExec and gpuhost.GraphNode (csrc/graph_exec.c): the types,
 * their methods and their properties, as PyDoc_STRVAR definitions that graph_exec.c's method
 * and property tables name.  numpydoc sections (docs/ renders them through napoleon); the
 * >>> examples run against the fake driver (tests/fakecuda) as well as a GPU.  Included by
 * graph_exec.c only.
 */
#ifndef GH_GRAPH_EXEC_DOCS_H
#define GH_GRAPH_EXEC_DOCS_H

#include <Python.h>

PyDoc_STRVAR(
    exec_launch_doc,
    "launch($self, stream=None)\n--\n\n"
    "Launch the executable graph on `stream` (cuGraphLaunch).\n\n"
    "Asynchronous, as a kernel launch: synchronize the stream to wait for it. Launches of one\n"
    "GraphExec run one after the other.\n\n"
    "Parameters\n"
    "----------\n"
    "stream : Stream, optional\n"
    "    A stream of the graph's device; None: the default stream.\n\n"
    "Raises\n"
    "------\n"
    "ValueError\n"
    "    For a stream of another device.\n"
    "CudaAPIError\n"
    "    If the driver refuses the launch, or a kernel of the graph belongs to a module that\n"
    "    was unloaded.\n\n"
    "Examples\n"
    "--------\n"
    ">>> d = gpuhost.device_array(4, np.int32)\n"
    ">>> g = gpuhost.Graph()\n"
    ">>> node = g.add_memset(d, 2)\n"
    ">>> exe = g.instantiate()\n"
    ">>> s = gpuhost.stream()\n"
    ">>> for _ in range(3):\n"
    "...     exe.launch(s)\n"
    ">>> s.synchronize()\n"
    ">>> d.copy_to_host()\n"
    "array([2, 2, 2, 2], dtype=int32)");

PyDoc_STRVAR(exec_upload_doc,
             "upload($self, stream=None)\n--\n\n"
             "Upload it to the device ahead of its first launch.\n\n"
             "cuGraphUpload: the first launch is then as fast as the following ones.\n\n"
             "Parameters\n"
             "----------\n"
             "stream : Stream, optional\n"
             "    The stream to upload on; None: the default stream.\n\n"
             "Raises\n"
             "------\n"
             "ValueError\n"
             "    For a stream of another device.\n\n"
             "Examples\n"
             "--------\n"
             ">>> g = gpuhost.Graph()\n"
             ">>> node = g.add_empty()\n"
             ">>> exe = g.instantiate()\n"
             ">>> s = gpuhost.stream()\n"
             ">>> exe.upload(s)\n"
             ">>> exe.launch(s)\n"
             ">>> s.synchronize()");

PyDoc_STRVAR(
    exec_update_doc,
    "update($self, graph)\n--\n\n"
    "Take the parameters of `graph`, which must have this graph's topology.\n\n"
    "cuGraphExecUpdate: cheaper than instantiating `graph` anew, the nodes keep their places\n"
    "and take the new graph's parameters (kernel arguments, copy addresses, memset values).\n\n"
    "Parameters\n"
    "----------\n"
    "graph : Graph\n"
    "    A graph of the same device with the same nodes and dependencies.\n\n"
    "Raises\n"
    "------\n"
    "TypeError\n"
    "    If `graph` is not a Graph.\n"
    "ValueError\n"
    "    For a graph of another device.\n"
    "GraphUpdateError\n"
    "    With the driver's reason, when it refuses the update.\n\n"
    "Examples\n"
    "--------\n"
    ">>> d = gpuhost.device_array(4, np.int32)\n"
    ">>> g = gpuhost.Graph()\n"
    ">>> node = g.add_memset(d, 1)\n"
    ">>> exe = g.instantiate()\n"
    ">>> g2 = gpuhost.Graph()\n"
    ">>> node2 = g2.add_memset(d, 4)\n"
    ">>> exe.update(g2)\n"
    ">>> exe.launch()\n"
    ">>> d.copy_to_host()\n"
    "array([4, 4, 4, 4], dtype=int32)\n"
    ">>> node3 = g2.add_empty()\n"
    ">>> exe.update(g2)\n"
    "Traceback (most recent call last):\n"
    "    ...\n"
    "gpuhost.errors.GraphUpdateError: update() refused: the graph's topology differs (nodes or "
    "dependencies added or removed) (CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE)");

PyDoc_STRVAR(
    exec_set_kernel_args_doc,
    "set_kernel_args($self, node, /, *args)\n--\n\n"
    "New arguments for a kernel node of the executable graph.\n\n"
    "cuGraphExecKernelNodeSetParams. The arguments are checked and packed as a launch's;\n"
    "the next launches use them. The Graph itself keeps its old ones.\n\n"
    "Parameters\n"
    "----------\n"
    "node : GraphNode\n"
    "    A kernel node that Graph.add_kernel() returned, of the graph this was made from.\n"
    "*args\n"
    "    The kernel's arguments.\n\n"
    "Raises\n"
    "------\n"
    "TypeError\n"
    "    If `node` is not a GraphNode, or for arguments that do not fit the kernel's\n"
    "    parameters.\n"
    "ValueError\n"
    "    For a node of another graph, or one that is not a kernel node.\n\n"
    "Examples\n"
    "--------\n"
    ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
    "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
    ">>> scale = gpuhost.Module(ptx).get_function('scale')\n"
    ">>> d = gpuhost.to_device(np.ones(1000, np.float32))\n"
    ">>> g = gpuhost.Graph()\n"
    ">>> node = g.add_kernel(scale[4, 256], d, np.float32(2), d.size)  # doctest: +SKIP\n"
    ">>> exe = g.instantiate()\n"
    ">>> exe.set_kernel_args(node, d, np.float32(3), d.size)  # doctest: +SKIP\n"
    ">>> exe.set_kernel_args(g.add_empty())\n"
    "Traceback (most recent call last):\n"
    "    ...\n"
    "ValueError: set_kernel_args() takes a kernel node that Graph.add_kernel() returned");

PyDoc_STRVAR(exec_graph_doc, "The Graph it was made from.\n\n"
                             "Examples\n"
                             "--------\n"
                             ">>> g = gpuhost.Graph()\n"
                             ">>> g.instantiate().graph is g\n"
                             "True");

PyDoc_STRVAR(exec_handle_doc, "The CUgraphExec as an int.\n\n"
                              "Examples\n"
                              "--------\n"
                              ">>> exe = gpuhost.Graph().instantiate()\n"
                              ">>> exe.handle != 0\n"
                              "True");

PyDoc_STRVAR(
    exec_doc,
    "An executable graph, made by Graph.instantiate(): launch it, upload it, update it.\n\n"
    "It is not made directly. It keeps its Graph alive, and what the graph's nodes use.\n\n"
    "Examples\n"
    "--------\n"
    ">>> d = gpuhost.device_array(4, np.int32)\n"
    ">>> g = gpuhost.Graph()\n"
    ">>> node = g.add_memset(d, 6)\n"
    ">>> exe = g.instantiate()\n"
    ">>> exe\n"
    "<gpuhost.GraphExec 0x... of <gpuhost.Graph 0x... on device 0>>\n"
    ">>> exe.launch()\n"
    ">>> d.copy_to_host()\n"
    "array([6, 6, 6, 6], dtype=int32)");

PyDoc_STRVAR(node_type_doc,
             "The node's kind, a str.\n\n"
             "One of 'kernel', 'memcpy', 'memset', 'host', 'graph', 'empty', 'event_wait',\n"
             "'event_record', 'mem_alloc', 'mem_free', 'conditional' or 'other'.\n\n"
             "Examples\n"
             "--------\n"
             ">>> g = gpuhost.Graph()\n"
             ">>> g.add_empty().type\n"
             "'empty'\n"
             ">>> g.add_host(print, 'hello').type\n"
             "'host'");

PyDoc_STRVAR(node_graph_doc, "The Graph it belongs to.\n\n"
                             "Examples\n"
                             "--------\n"
                             ">>> g = gpuhost.Graph()\n"
                             ">>> g.add_empty().graph is g\n"
                             "True");

PyDoc_STRVAR(node_handle_doc,
             "The CUgraphNode as an int.\n\n"
             "Nodes compare equal (and hash alike) when their handles are equal.\n\n"
             "Examples\n"
             "--------\n"
             ">>> g = gpuhost.Graph()\n"
             ">>> node = g.add_empty()\n"
             ">>> node.handle == g.nodes[0].handle\n"
             "True\n"
             ">>> node == g.nodes[0]\n"
             "True");

PyDoc_STRVAR(
    node_doc,
    "A node of a Graph, returned by the Graph.add_* methods and listed by Graph.nodes.\n\n"
    "It is not made directly. A node is passed to `depends_on` of the nodes added after it,\n"
    "and a kernel node to GraphExec.set_kernel_args().\n\n"
    "Examples\n"
    "--------\n"
    ">>> d = gpuhost.device_array(4, np.int32)\n"
    ">>> g = gpuhost.Graph()\n"
    ">>> fill = g.add_memset(d, 0)\n"
    ">>> fill\n"
    "<gpuhost.GraphNode memset 0x...>\n"
    ">>> done = g.add_host(print, 'filled', depends_on=fill)\n"
    ">>> [n.type for n in g.nodes]\n"
    "['memset', 'host']");

#endif /* GH_GRAPH_EXEC_DOCS_H */
