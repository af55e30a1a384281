/* GraphExec (an instantiated graph: launch, upload, update, kernel-argument updates) and
 * GraphNode (a node of a Graph).  See graph.c for Graph and what a graph keeps alive.
 */

#include "graphs_internal.h"
#include "graph_exec_docs.h"

#include <string.h>

PyObject *
gh_graphnode_new(gh_graph *g, CUgraphNode handle, PyObject *kernel)
{
    gh_graphnode *n = PyObject_GC_New(gh_graphnode, gh_state_of_type(Py_TYPE(g))->GraphNodeType);
    if (n == NULL) {
        return NULL;
    }
    n->graph = (gh_graph *)Py_NewRef(g);
    n->handle = handle;
    n->kernel = Py_XNewRef(kernel);
    PyObject_GC_Track(n);
    return (PyObject *)n;
}

/* ---- GraphExec ---- */

PyObject *
gh_graphexec_new(gh_graph *g, unsigned long long flags)
{
    gh_graphexec *e;
    CUgraphExec handle = NULL;
    CUresult res;
    int pushed;

    if (gh_graph_check_kernels(g->kernels, GH_CU_GraphInstantiateWithFlags) < 0 ||
        gh_graph_enter(g, GH_CU_GraphInstantiateWithFlags, &pushed) < 0) {
        return NULL;
    }
    res = gh_cu.GraphInstantiateWithFlags(&handle, g->handle, flags);
    if (gh_graph_leave_check(g, pushed, res, GH_CU_GraphInstantiateWithFlags) < 0) {
        return NULL;
    }
    e = PyObject_GC_New(gh_graphexec, gh_state_of_type(Py_TYPE(g))->GraphExecType);
    if (e == NULL) {
        gh_release(g->context, g->generation, GH_CU_GraphExecDestroy, handle);
        return NULL;
    }
    e->graph = (gh_graph *)Py_NewRef(g);
    e->handle = handle;
    e->keep = PyList_New(0);
    e->kernels = PyList_GetSlice(g->kernels, 0, PY_SSIZE_T_MAX);
    PyObject_GC_Track(e);
    if (e->keep == NULL || e->kernels == NULL) {
        Py_DECREF(e);
        return NULL;
    }
    return (PyObject *)e;
}

static int
exec_traverse(gh_graphexec *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->graph);
    Py_VISIT(self->keep);
    Py_VISIT(self->kernels);
    return 0;
}

static void
exec_dealloc(gh_graphexec *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (self->handle != NULL && self->graph != NULL) {
        gh_release(self->graph->context, self->graph->generation, GH_CU_GraphExecDestroy,
                   self->handle);
    }
    Py_CLEAR(self->keep);
    Py_CLEAR(self->kernels);
    Py_CLEAR(self->graph);
    tp->tp_free(self);
    Py_DECREF(tp);
}

/* Resolve `stream` for g: its handle, and whether g's context must be made current. */
static int
exec_stream(gh_graphexec *self, PyObject *stream, gh_stream_ref *ref)
{
    gh_graph *g = self->graph;
    if (gh_stream_resolve(gh_state_of_type(Py_TYPE(self)), stream, ref) < 0) {
        return -1;
    }
    return gh_stream_check_device(ref->context, g->context, "the graph is");
}

static PyObject *
exec_on_stream(gh_graphexec *self, PyObject *stream, int launch)
{
    gh_graph *g = self->graph;
    gh_cu_id id = launch ? GH_CU_GraphLaunch : GH_CU_GraphUpload;
    gh_stream_ref ref;
    CUresult res = CUDA_ERROR_INVALID_CONTEXT;
    int pushed;

    if ((g->generation != g->context->generation || g->context->handle == NULL) &&
        gh_context_check_alive(g->context, g->generation, id) < 0) {
        return NULL;
    }
    if (PyList_GET_SIZE(self->kernels) > 0 && gh_graph_check_kernels(self->kernels, id) < 0) {
        return NULL;
    }
    if (exec_stream(self, stream, &ref) < 0) {
        return NULL;
    }
    if (ref.context == g->context && !ref.is_default) {
        res = launch ? gh_cu.GraphLaunch(self->handle, ref.handle)
                     : gh_cu.GraphUpload(self->handle, ref.handle);
    }
    if (res == CUDA_ERROR_INVALID_CONTEXT || res == CUDA_ERROR_INVALID_HANDLE) {
        if (gh_context_enter(g->context, &pushed) < 0) {
            return NULL;
        }
        res = launch ? gh_cu.GraphLaunch(self->handle, ref.handle)
                     : gh_cu.GraphUpload(self->handle, ref.handle);
        if (gh_context_leave(g->context, pushed) < 0) {
            return NULL;
        }
    }
    if (gh_check(res, id) < 0) {
        return NULL;
    }
    g->launched |= launch;
    if (launch && stream != NULL &&
        Py_IS_TYPE(stream, gh_state_of_type(Py_TYPE(self))->StreamType)) {
        ((gh_stream *)stream)->launched = 1;
    }
    Py_RETURN_NONE;
}

PyObject *
gh_graphexec_launch(gh_graphexec *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *stream = nargs > 0 ? args[0] : NULL;
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;

    if (nargs + nkw > 1 || (nkw == 1 && PyUnicode_CompareWithASCIIString(
                                            PyTuple_GET_ITEM(kwnames, 0), "stream") != 0)) {
        PyErr_SetString(PyExc_TypeError, "launch() takes one argument, stream=None");
        return NULL;
    }
    if (nkw == 1) {
        stream = args[nargs];
    }
    return exec_on_stream(self, stream == Py_None ? NULL : stream, 1);
}

PyObject *
gh_graphexec_upload(gh_graphexec *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"stream", NULL};
    PyObject *stream = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:upload", kwlist, &stream)) {
        return NULL;
    }
    return exec_on_stream(self, stream == Py_None ? NULL : stream, 0);
}

static const char *
update_reason(CUgraphExecUpdateResult r)
{
    switch (r) {
        case CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED:
            return "the graph's topology differs (nodes or dependencies added or removed)";
        case CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED:
            return "a node's type differs";
        case CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED:
            return "a kernel node runs another function";
        case CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED:
            return "a node's parameters changed in a way that cannot be updated";
        case CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED:
            return "something about the nodes cannot be updated";
        case CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE:
            return "a kernel node's function changed in an unsupported way";
        case CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED:
            return "a node's attributes changed";
        default:
            return "the driver refused the update";
    }
}

static PyObject *
exec_update(gh_graphexec *self, PyObject *arg)
{
    gh_graph *g = self->graph, *other;
    CUgraphExecUpdateResultInfo info;
    CUresult res;
    int pushed;

    if (!Py_IS_TYPE(arg, gh_state_of_type(Py_TYPE(self))->GraphType)) {
        PyErr_Format(PyExc_TypeError, "update() takes a Graph, not %.100s", Py_TYPE(arg)->tp_name);
        return NULL;
    }
    other = (gh_graph *)arg;
    if (other->context != g->context) {
        PyErr_SetString(PyExc_ValueError, "update(): the graph is of another device");
        return NULL;
    }
    if (gh_graph_check_kernels(other->kernels, GH_CU_GraphExecUpdate) < 0 ||
        gh_graph_enter(g, GH_CU_GraphExecUpdate, &pushed) < 0) {
        return NULL;
    }
    memset(&info, 0, sizeof(info));
    res = gh_cu.GraphExecUpdate(self->handle, other->handle, &info);
    if (gh_context_leave(g->context, pushed) < 0) {
        return NULL;
    }
    if (res == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE) {
        gh_raise(GH_EXC_GRAPH_UPDATE, "update() refused: %s (%s)", update_reason(info.result),
                 gh_cu_result_name(res));
        return NULL;
    }
    if (gh_check(res, GH_CU_GraphExecUpdate) < 0) {
        return NULL;
    }
    if (PyList_Append(self->keep, other->keep) < 0 ||
        gh_kernel_list_merge(self->kernels, other->kernels) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* set_kernel_args(node, *args): new arguments for a kernel node of the executable graph,
   checked and packed as a launch's (cuGraphExecKernelNodeSetParams). */
static PyObject *
exec_set_kernel_args(gh_graphexec *self, PyObject *const *args, Py_ssize_t nargs)
{
    gh_state *st = gh_state_of_type(Py_TYPE(self));
    gh_graphnode *node;
    gh_kernel *k;
    CUDA_KERNEL_NODE_PARAMS p;
    gh_argbuf ab;
    CUresult res;
    int pushed;

    if (nargs < 1 || !Py_IS_TYPE(args[0], st->GraphNodeType)) {
        PyErr_SetString(PyExc_TypeError, "set_kernel_args() takes a GraphNode, then the arguments");
        return NULL;
    }
    node = (gh_graphnode *)args[0];
    if (node->graph != self->graph) {
        PyErr_SetString(PyExc_ValueError,
                        "set_kernel_args(): the node is not of the graph this was made from");
        return NULL;
    }
    if (node->kernel == NULL) {
        PyErr_SetString(PyExc_ValueError,
                        "set_kernel_args() takes a kernel node that Graph.add_kernel() returned");
        return NULL;
    }
    k = (gh_kernel *)node->kernel;
    if (gh_kernel_check_call(k, GH_CU_GraphExecKernelNodeSetParams, nargs - 1) < 0) {
        return NULL;
    }
    if (gh_kernel_pack(st, k, args + 1, nargs - 1, NULL, &ab) < 0) {
        gh_argbuf_free(&ab);
        return NULL;
    }
    if (gh_graph_enter(self->graph, GH_CU_GraphExecKernelNodeSetParams, &pushed) < 0) {
        gh_argbuf_free(&ab);
        return NULL;
    }
    res = gh_cu.GraphKernelNodeGetParams(node->handle, &p);
    if (res == CUDA_SUCCESS) {
        p.kernelParams = ab.ptrs;
        p.extra = NULL;
        res = gh_cu.GraphExecKernelNodeSetParams(self->handle, node->handle, &p);
    }
    gh_argbuf_free(&ab);
    if (gh_graph_leave_check(self->graph, pushed, res, GH_CU_GraphExecKernelNodeSetParams) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
exec_get_graph(gh_graphexec *self, void *Py_UNUSED(closure))
{
    return Py_NewRef(self->graph);
}

static PyObject *
exec_get_handle(gh_graphexec *self, void *Py_UNUSED(closure))
{
    return PyLong_FromVoidPtr(self->handle);
}

static PyObject *
exec_repr(gh_graphexec *self)
{
    return PyUnicode_FromFormat("<gpuhost.GraphExec %p of %R>", (void *)self->handle,
                                (PyObject *)self->graph);
}

static PyMethodDef exec_methods[] = {
    {"launch", (PyCFunction)(void (*)(void))gh_graphexec_launch, METH_FASTCALL | METH_KEYWORDS,
     exec_launch_doc},
    {"upload", (PyCFunction)(void (*)(void))gh_graphexec_upload, METH_VARARGS | METH_KEYWORDS,
     exec_upload_doc},
    {"update", (PyCFunction)exec_update, METH_O, exec_update_doc},
    {"set_kernel_args", (PyCFunction)(void (*)(void))exec_set_kernel_args, METH_FASTCALL,
     exec_set_kernel_args_doc},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef exec_getset[] = {
    {"graph", (getter)exec_get_graph, NULL, exec_graph_doc, NULL},
    {"handle", (getter)exec_get_handle, NULL, exec_handle_doc, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot exec_slots[] = {
    {Py_tp_doc, (void *)exec_doc},
    {Py_tp_dealloc, exec_dealloc},
    {Py_tp_traverse, exec_traverse},
    {Py_tp_methods, exec_methods},
    {Py_tp_getset, exec_getset},
    {Py_tp_repr, exec_repr},
    {0, NULL},
};

static PyType_Spec exec_spec = {
    .name = "gpuhost.GraphExec",
    .basicsize = sizeof(gh_graphexec),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = exec_slots,
};

/* ---- GraphNode ---- */

static int
node_traverse(gh_graphnode *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->graph);
    Py_VISIT(self->kernel);
    return 0;
}

static void
node_dealloc(gh_graphnode *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->graph);
    Py_CLEAR(self->kernel);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static const char *
node_type_name(CUgraphNodeType t)
{
    switch (t) {
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
            return "event_wait";
        case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
            return "event_record";
        case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
            return "mem_alloc";
        case CU_GRAPH_NODE_TYPE_MEM_FREE:
            return "mem_free";
        case CU_GRAPH_NODE_TYPE_CONDITIONAL:
            return "conditional";
        default:
            return "other";
    }
}

static PyObject *
node_get_type(gh_graphnode *self, void *Py_UNUSED(closure))
{
    CUgraphNodeType t = CU_GRAPH_NODE_TYPE_EMPTY;
    CUresult res;
    int pushed;
    if (gh_graph_enter(self->graph, GH_CU_GraphNodeGetType, &pushed) < 0) {
        return NULL;
    }
    res = gh_cu.GraphNodeGetType(self->handle, &t);
    if (gh_graph_leave_check(self->graph, pushed, res, GH_CU_GraphNodeGetType) < 0) {
        return NULL;
    }
    return PyUnicode_FromString(node_type_name(t));
}

static PyObject *
node_get_graph(gh_graphnode *self, void *Py_UNUSED(closure))
{
    return Py_NewRef(self->graph);
}

static PyObject *
node_get_handle(gh_graphnode *self, void *Py_UNUSED(closure))
{
    return PyLong_FromVoidPtr(self->handle);
}

static PyObject *
node_repr(gh_graphnode *self)
{
    PyObject *t = node_get_type(self, NULL), *r;
    if (t == NULL) {
        PyErr_Clear();
        t = PyUnicode_FromString("?");
    }
    r = t ? PyUnicode_FromFormat("<gpuhost.GraphNode %U %p>", t, (void *)self->handle) : NULL;
    Py_XDECREF(t);
    return r;
}

static Py_hash_t
node_hash(gh_graphnode *self)
{
#if PY_VERSION_HEX >= 0x030D0000
    return Py_HashPointer(self->handle);
#else
    return _Py_HashPointer(self->handle); /* public from 3.13, deprecated in 3.14 */
#endif
}

static PyObject *
node_richcompare(PyObject *a, PyObject *b, int op)
{
    if (!Py_IS_TYPE(b, Py_TYPE(a)) || (op != Py_EQ && op != Py_NE)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    int eq = ((gh_graphnode *)a)->handle == ((gh_graphnode *)b)->handle;
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static PyGetSetDef node_getset[] = {
    {"type", (getter)node_get_type, NULL, node_type_doc, NULL},
    {"graph", (getter)node_get_graph, NULL, node_graph_doc, NULL},
    {"handle", (getter)node_get_handle, NULL, node_handle_doc, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot node_slots[] = {
    {Py_tp_doc, (void *)node_doc},
    {Py_tp_dealloc, node_dealloc},
    {Py_tp_traverse, node_traverse},
    {Py_tp_getset, node_getset},
    {Py_tp_repr, node_repr},
    {Py_tp_hash, node_hash},
    {Py_tp_richcompare, node_richcompare},
    {0, NULL},
};

static PyType_Spec node_spec = {
    .name = "gpuhost.GraphNode",
    .basicsize = sizeof(gh_graphnode),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = node_slots,
};

int
gh_graphexec_init_types(PyObject *module, gh_state *st)
{
    st->GraphExecType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &exec_spec, NULL);
    st->GraphNodeType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &node_spec, NULL);
    if (st->GraphExecType == NULL || st->GraphNodeType == NULL) {
        return -1;
    }
    if (PyModule_AddType(module, st->GraphExecType) < 0 ||
        PyModule_AddType(module, st->GraphNodeType) < 0) {
        return -1;
    }
    return 0;
}
