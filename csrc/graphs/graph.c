/* CUDA graphs: Graph (a CUgraph, from stream capture or built node by node), GraphExec (an
 * instantiated CUgraphExec: launch, upload, update, kernel-argument updates) and GraphNode.
 *
 * A Graph keeps alive what its nodes use: the kernels launched into it (so their modules
 * stay loaded, and a launch after Module.unload() is refused here instead of faulting), the
 * host functions and their arguments, the events, the child graphs, and the caching pool's
 * blocks handed out or freed on the stream while it captured (pool.c): those return to the
 * pool only when the Graph and every GraphExec made from it are gone.  Kernel nodes take
 * their arguments checked and packed exactly as a launch does (kernel_args.c).
 */
#include "graphs_internal.h"

#include "graph_docs.h"

#include <limits.h>
#include <string.h>

/* ---- shared helpers ---- */

/* Check g's context is alive and make it current; 0 or -1. */
int
gh_graph_enter(gh_graph *g, gh_cu_id id, int *pushed)
{
    *pushed = 0;
    if (gh_context_check_alive(g->context, g->generation, id) < 0) {
        return -1;
    }
    return gh_context_enter(g->context, pushed);
}

int
gh_graph_leave_check(gh_graph *g, int pushed, CUresult res, gh_cu_id id)
{
    if (gh_context_leave(g->context, pushed) < 0) {
        return -1;
    }
    return gh_check(res, id);
}

/* Each kernel of `kernels` can still be launched (its module loaded, its context alive). */
int
gh_graph_check_kernels(PyObject *kernels, gh_cu_id id)
{
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(kernels); i++) {
        gh_module *m = ((gh_kernel *)PyList_GET_ITEM(kernels, i))->module;
        if ((m->unloaded || m->generation != m->context->generation ||
             m->context->handle == NULL) &&
            gh_module_check_usable(m, id) < 0) {
            return -1;
        }
    }
    return 0;
}

/* The dependencies of a new node: GraphNodes of g, from a sequence (or one node, or None).
   New array in *out (PyMem, NULL for none), count in *n; 0 or -1. */
static int
parse_deps(gh_graph *g, PyObject *deps, CUgraphNode **out, size_t *n)
{
    PyObject *seq;
    Py_ssize_t len;

    *out = NULL;
    *n = 0;
    if (deps == NULL || deps == Py_None) {
        return 0;
    }
    if (Py_IS_TYPE(deps, gh_state_of_type(Py_TYPE(g))->GraphNodeType)) {
        seq = PyTuple_Pack(1, deps);
    }
    else {
        seq = PySequence_Fast(deps, "depends_on must be a GraphNode or a sequence of them");
    }
    if (seq == NULL) {
        return -1;
    }
    len = PySequence_Fast_GET_SIZE(seq);
    if (len > 0 && (*out = PyMem_Calloc((size_t)len, sizeof(CUgraphNode))) == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        if (!Py_IS_TYPE(item, gh_state_of_type(Py_TYPE(g))->GraphNodeType)) {
            PyErr_Format(PyExc_TypeError, "depends_on must hold GraphNodes, not %.100s",
                         Py_TYPE(item)->tp_name);
            goto fail;
        }
        if (((gh_graphnode *)item)->graph != g) {
            PyErr_SetString(PyExc_ValueError, "depends_on names a node of another graph");
            goto fail;
        }
        (*out)[i] = ((gh_graphnode *)item)->handle;
    }
    *n = (size_t)len;
    Py_DECREF(seq);
    return 0;
fail:
    Py_DECREF(seq);
    PyMem_Free(*out);
    *out = NULL;
    return -1;
}

/* ---- Graph ---- */

static void wait_for_work(gh_graph *g);

PyObject *
gh_graph_wrap(gh_state *st, gh_context *ctx, CUgraph handle, PyObject *keep, PyObject *kernels)
{
    gh_graph *g = PyObject_GC_New(gh_graph, st->GraphType);
    if (g == NULL) {
        gh_release(ctx, ctx->generation, GH_CU_GraphDestroy, handle);
        return NULL;
    }
    g->context = (gh_context *)Py_NewRef(ctx);
    g->generation = ctx->generation;
    g->handle = handle;
    g->keep = keep != NULL ? Py_NewRef(keep) : PyList_New(0);
    g->kernels = kernels != NULL ? Py_NewRef(kernels) : PyList_New(0);
    g->exec = NULL;
    g->version = g->exec_version = 0;
    g->launched = 0;
    g->owner = NULL;
    PyObject_GC_Track(g);
    if (g->keep == NULL || g->kernels == NULL) {
        Py_DECREF(g);
        return NULL;
    }
    return (PyObject *)g;
}

static PyObject *
graph_tp_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    gh_state *st = gh_state_of_type(type);
    gh_context *ctx;
    CUgraph handle = NULL;
    CUresult res;
    int pushed;

    if (!PyArg_ParseTuple(args, ":Graph") || (kwargs != NULL && PyDict_GET_SIZE(kwargs) > 0)) {
        PyErr_SetString(PyExc_TypeError, "Graph() takes no arguments");
        return NULL;
    }
    if ((ctx = gh_current_context(st, -1)) == NULL) {
        return NULL;
    }
    if (gh_context_enter(ctx, &pushed) < 0) {
        Py_DECREF(ctx);
        return NULL;
    }
    res = gh_cu.GraphCreate(&handle, 0);
    if (gh_context_leave(ctx, pushed) < 0 || gh_check(res, GH_CU_GraphCreate) < 0) {
        Py_DECREF(ctx);
        return NULL;
    }
    PyObject *g = gh_graph_wrap(st, ctx, handle, NULL, NULL);
    Py_DECREF(ctx);
    return g;
}

static int
graph_traverse(gh_graph *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->context);
    Py_VISIT(self->keep);
    Py_VISIT(self->kernels);
    Py_VISIT(self->exec);
    Py_VISIT(self->owner);
    return 0;
}

static int
graph_clear(gh_graph *self)
{
    Py_CLEAR(self->exec);
    return 0;
}

static void
graph_dealloc(gh_graph *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->exec);
    if (self->handle != NULL && self->owner == NULL) { /* a body is its owner's */
        gh_release(self->context, self->generation, GH_CU_GraphDestroy, self->handle);
    }
    Py_CLEAR(self->owner);
    if (self->launched && self->keep != NULL && PyList_GET_SIZE(self->keep) > 0) {
        wait_for_work(self); /* what it holds may be in use by a launch still running */
    }
    Py_CLEAR(self->keep); /* pool blocks go back to their pools */
    Py_CLEAR(self->kernels);
    Py_CLEAR(self->context);
    tp->tp_free(self);
    Py_DECREF(tp);
}

/* Wait for the work of the graph's context (its launches among it), before the pool blocks
   it holds go back.  Never raises: a failure is a warning. */
static void
wait_for_work(gh_graph *g)
{
    PyObject *type, *value, *tb;
    CUresult res;
    int pushed;

    if (gh_on_driver_thread || g->context->handle == NULL ||
        g->generation != g->context->generation) {
        return;
    }
    PyErr_Fetch(&type, &value, &tb);
    if (gh_context_enter(g->context, &pushed) == 0) {
        Py_BEGIN_ALLOW_THREADS
        res = gh_cu.CtxSynchronize();
        Py_END_ALLOW_THREADS
        if (res != CUDA_SUCCESS) {
            gh_warn_cleanup(res, GH_CU_CtxSynchronize);
        }
        gh_context_leave(g->context, pushed);
    }
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
}

static PyObject *
graph_instantiate(gh_graph *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"flags", NULL};
    unsigned long long flags = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|K:instantiate", kwlist, &flags)) {
        return NULL;
    }
    return gh_graphexec_new(self, flags);
}

/* The GraphExec launch() and upload() use: made once, again after nodes were added. */
static gh_graphexec *
cached_exec(gh_graph *self)
{
    if (self->exec == NULL || self->exec_version != self->version) {
        PyObject *e = gh_graphexec_new(self, 0);
        if (e == NULL) {
            return NULL;
        }
        Py_XSETREF(self->exec, e);
        self->exec_version = self->version;
    }
    return (gh_graphexec *)self->exec;
}

static PyObject *
graph_launch(gh_graph *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    gh_graphexec *e = cached_exec(self);
    return e != NULL ? gh_graphexec_launch(e, args, nargs, kwnames) : NULL;
}

static PyObject *
graph_upload(gh_graph *self, PyObject *args, PyObject *kwargs)
{
    gh_graphexec *e = cached_exec(self);
    return e != NULL ? gh_graphexec_upload(e, args, kwargs) : NULL;
}

static PyObject *
graph_get_nodes(gh_graph *self, void *Py_UNUSED(closure))
{
    CUgraphNode *nodes = NULL;
    size_t n = 0;
    PyObject *list = NULL;
    CUresult res;
    int pushed;

    if (gh_graph_enter(self, GH_CU_GraphGetNodes, &pushed) < 0) {
        return NULL;
    }
    res = gh_cu.GraphGetNodes(self->handle, NULL, &n);
    if (res == CUDA_SUCCESS && n > 0) {
        nodes = PyMem_Calloc(n, sizeof(*nodes));
        res =
            nodes != NULL ? gh_cu.GraphGetNodes(self->handle, nodes, &n) : CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (gh_graph_leave_check(self, pushed, res, GH_CU_GraphGetNodes) < 0) {
        PyMem_Free(nodes);
        return NULL;
    }
    list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list != NULL && i < n; i++) {
        PyObject *node = gh_graphnode_new(self, nodes[i], NULL);
        if (node == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, node);
    }
    PyMem_Free(nodes);
    return list;
}

static PyObject *
graph_debug_dot_print(gh_graph *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"path", "flags", NULL};
    PyObject *path;
    unsigned int flags = 0;
    CUresult res;
    int pushed;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|I:debug_dot_print", kwlist,
                                     PyUnicode_FSConverter, &path, &flags)) {
        return NULL;
    }
    if (gh_graph_enter(self, GH_CU_GraphDebugDotPrint, &pushed) < 0) {
        Py_DECREF(path);
        return NULL;
    }
    res = gh_cu.GraphDebugDotPrint(self->handle, PyBytes_AS_STRING(path), flags);
    Py_DECREF(path);
    if (gh_graph_leave_check(self, pushed, res, GH_CU_GraphDebugDotPrint) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
graph_clone(gh_graph *self, PyObject *Py_UNUSED(ignored))
{
    CUgraph handle = NULL;
    PyObject *keep, *kernels, *g;
    CUresult res;
    int pushed;

    if (gh_graph_enter(self, GH_CU_GraphClone, &pushed) < 0) {
        return NULL;
    }
    res = gh_cu.GraphClone(&handle, self->handle);
    if (gh_graph_leave_check(self, pushed, res, GH_CU_GraphClone) < 0) {
        return NULL;
    }
    keep = PyList_New(1); /* the clone's nodes use what this graph's do */
    kernels = PyList_GetSlice(self->kernels, 0, PY_SSIZE_T_MAX);
    if (keep == NULL || kernels == NULL) {
        Py_XDECREF(keep);
        Py_XDECREF(kernels);
        gh_release(self->context, self->generation, GH_CU_GraphDestroy, handle);
        return NULL;
    }
    PyList_SET_ITEM(keep, 0, Py_NewRef(self->keep));
    g = gh_graph_wrap(gh_state_of_type(Py_TYPE(self)), self->context, handle, keep, kernels);
    Py_DECREF(keep);
    Py_DECREF(kernels);
    return g;
}

/* ---- Graph: adding nodes ---- */

/* After cuGraphAdd*Node returned `res` for node `handle`: the GraphNode (keeping `obj`
   alive with the graph unless NULL), or NULL with the error. */
static PyObject *
node_added(gh_graph *self, CUresult res, gh_cu_id id, int pushed, CUgraphNode *deps,
           CUgraphNode handle, PyObject *obj, PyObject *kernel)
{
    PyMem_Free(deps);
    if (gh_graph_leave_check(self, pushed, res, id) < 0) {
        return NULL;
    }
    self->version++;
    if (obj != NULL && PyList_Append(self->keep, obj) < 0) {
        return NULL;
    }
    if (kernel != NULL && gh_kernel_list_add(self->kernels, kernel) < 0) {
        return NULL;
    }
    return gh_graphnode_new(self, handle, kernel);
}

/* Common start of the _add methods: deps parsed, context entered. */
static int
add_begin(gh_graph *self, PyObject *depends_on, gh_cu_id id, CUgraphNode **deps, size_t *n,
          int *pushed)
{
    if (parse_deps(self, depends_on, deps, n) < 0) {
        return -1;
    }
    if (gh_graph_enter(self, id, pushed) < 0) {
        PyMem_Free(*deps);
        return -1;
    }
    return 0;
}

static void
kernel_node_params(CUDA_KERNEL_NODE_PARAMS *p, gh_kernel *k, const launch_dims *d, void **ptrs)
{
    memset(p, 0, sizeof(*p));
    p->func = k->handle;
    p->gridDimX = d->grid[0], p->gridDimY = d->grid[1], p->gridDimZ = d->grid[2];
    p->blockDimX = d->block[0], p->blockDimY = d->block[1], p->blockDimZ = d->block[2];
    p->sharedMemBytes = d->shared;
    p->kernelParams = ptrs;
}

/* add_kernel(config, *args, depends_on=()): config is kernel[grid, block(, stream, shared)]
   or kernel.configure(...); its stream does not matter (a node has none). */
static PyObject *
graph_add_kernel(gh_graph *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    gh_state *st = gh_state_of_type(Py_TYPE(self));
    PyObject *depends_on = NULL, *node;
    gh_launchconfig *cfg;
    gh_kernel *k;
    CUDA_KERNEL_NODE_PARAMS p;
    CUgraphNode *deps = NULL, handle = NULL;
    size_t n = 0;
    gh_argbuf ab;
    CUresult res;
    int pushed;

    for (Py_ssize_t i = 0; kwnames != NULL && i < PyTuple_GET_SIZE(kwnames); i++) {
        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), "depends_on") != 0) {
            PyErr_Format(PyExc_TypeError, "add_kernel() got an unexpected keyword argument %R",
                         PyTuple_GET_ITEM(kwnames, i));
            return NULL;
        }
        depends_on = args[nargs + i];
    }
    if (nargs < 1 || !Py_IS_TYPE(args[0], st->LaunchConfigType)) {
        PyErr_Format(PyExc_TypeError,
                     "add_kernel() takes a launch configuration (kernel[grid, block]) and the "
                     "kernel's arguments, not %.100s",
                     nargs < 1 ? "nothing" : Py_TYPE(args[0])->tp_name);
        return NULL;
    }
    cfg = (gh_launchconfig *)args[0];
    k = cfg->kernel;
    if (k->module->context != self->context) {
        PyErr_Format(PyExc_ValueError, "kernel %R is loaded on device %d; the graph is device %d's",
                     k->name, k->module->context->device->id, self->context->device->id);
        return NULL;
    }
    if (cfg->dims.cooperative || cfg->dims.cluster[0] != 0) {
        PyErr_SetString(PyExc_ValueError,
                        "add_kernel(): cooperative and cluster launches are captured from a "
                        "stream (begin_capture), not added as nodes");
        return NULL;
    }
    if (gh_kernel_check_call(k, GH_CU_GraphAddKernelNode, nargs - 1) < 0) {
        return NULL;
    }
    if (gh_kernel_pack(st, k, args + 1, nargs - 1, NULL, &ab) < 0) {
        gh_argbuf_free(&ab);
        return NULL;
    }
    if (add_begin(self, depends_on, GH_CU_GraphAddKernelNode, &deps, &n, &pushed) < 0) {
        gh_argbuf_free(&ab);
        return NULL;
    }
    kernel_node_params(&p, k, &cfg->dims, ab.ptrs);
    res = gh_cu.GraphAddKernelNode(&handle, self->handle, deps, n, &p); /* copies the args */
    gh_argbuf_free(&ab);
    node =
        node_added(self, res, GH_CU_GraphAddKernelNode, pushed, deps, handle, NULL, (PyObject *)k);
    return node;
}

static PyObject *
graph_add_memcpy(gh_graph *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"dst", "src", "nbytes", "depends_on", NULL};
    unsigned long long dst, src, nbytes;
    PyObject *depends_on = NULL;
    CUDA_MEMCPY3D p;
    CUgraphNode *deps = NULL, handle = NULL;
    size_t n = 0;
    CUresult res;
    int pushed;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "KKK|O:_add_memcpy", kwlist, &dst, &src, &nbytes,
                                     &depends_on)) {
        return NULL;
    }
    memset(&p, 0, sizeof(p));
    p.srcMemoryType = p.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
    p.srcDevice = (CUdeviceptr)src;
    p.dstDevice = (CUdeviceptr)dst;
    p.WidthInBytes = p.srcPitch = p.dstPitch = (size_t)nbytes;
    p.Height = p.Depth = p.srcHeight = p.dstHeight = 1;
    if (add_begin(self, depends_on, GH_CU_GraphAddMemcpyNode, &deps, &n, &pushed) < 0) {
        return NULL;
    }
    res = gh_cu.GraphAddMemcpyNode(&handle, self->handle, deps, n, &p, self->context->handle);
    return node_added(self, res, GH_CU_GraphAddMemcpyNode, pushed, deps, handle, NULL, NULL);
}

static PyObject *
graph_add_memset(gh_graph *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"dst", "value", "element_size", "count", "depends_on", NULL};
    unsigned long long dst, count;
    unsigned int value, elem;
    PyObject *depends_on = NULL;
    CUDA_MEMSET_NODE_PARAMS p;
    CUgraphNode *deps = NULL, handle = NULL;
    size_t n = 0;
    CUresult res;
    int pushed;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "KIIK|O:_add_memset", kwlist, &dst, &value,
                                     &elem, &count, &depends_on)) {
        return NULL;
    }
    if (elem != 1 && elem != 2 && elem != 4) {
        PyErr_Format(PyExc_ValueError, "a memset node sets 1-, 2- or 4-byte elements, not %u",
                     elem);
        return NULL;
    }
    memset(&p, 0, sizeof(p));
    p.dst = (CUdeviceptr)dst;
    p.value = value;
    p.elementSize = elem;
    p.width = (size_t)count;
    p.height = 1;
    p.pitch = (size_t)count * elem;
    if (add_begin(self, depends_on, GH_CU_GraphAddMemsetNode, &deps, &n, &pushed) < 0) {
        return NULL;
    }
    res = gh_cu.GraphAddMemsetNode(&handle, self->handle, deps, n, &p, self->context->handle);
    return node_added(self, res, GH_CU_GraphAddMemsetNode, pushed, deps, handle, NULL, NULL);
}

static PyObject *
graph_add_host(gh_graph *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"fn", "arg", "depends_on", NULL};
    PyObject *fn, *arg = NULL, *depends_on = NULL, *item;
    CUDA_HOST_NODE_PARAMS p;
    CUgraphNode *deps = NULL, handle = NULL;
    size_t n = 0;
    CUresult res;
    int pushed;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO:add_host", kwlist, &fn, &arg,
                                     &depends_on)) {
        return NULL;
    }
    if (!PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "fn must be callable, not %.100s", Py_TYPE(fn)->tp_name);
        return NULL;
    }
    item = arg != NULL ? PyTuple_Pack(2, fn, arg) : PyTuple_Pack(1, fn);
    if (item == NULL) {
        return NULL;
    }
    if (add_begin(self, depends_on, GH_CU_GraphAddHostNode, &deps, &n, &pushed) < 0) {
        Py_DECREF(item);
        return NULL;
    }
    p.fn = gh_host_fn_trampoline;
    p.userData = item; /* kept by the graph: run at every launch */
    res = gh_cu.GraphAddHostNode(&handle, self->handle, deps, n, &p);
    PyObject *node =
        node_added(self, res, GH_CU_GraphAddHostNode, pushed, deps, handle, item, NULL);
    Py_DECREF(item);
    return node;
}

static PyObject *
add_event_node(gh_graph *self, PyObject *args, PyObject *kwargs, int record)
{
    static char *kwlist[] = {"event", "depends_on", NULL};
    gh_state *st = gh_state_of_type(Py_TYPE(self));
    PyObject *event, *depends_on = NULL;
    CUgraphNode *deps = NULL, handle = NULL;
    gh_cu_id id = record ? GH_CU_GraphAddEventRecordNode : GH_CU_GraphAddEventWaitNode;
    size_t n = 0;
    CUresult res;
    int pushed;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs,
                                     record ? "O|O:add_event_record" : "O|O:add_event_wait", kwlist,
                                     &event, &depends_on)) {
        return NULL;
    }
    if (!PyObject_TypeCheck(event, st->EventType)) {
        PyErr_Format(PyExc_TypeError, "event must be a gpuhost Event, not %.100s",
                     Py_TYPE(event)->tp_name);
        return NULL;
    }
    if (gh_context_check_live(((gh_event *)event)->context, ((gh_event *)event)->generation, id) <
        0) {
        return NULL;
    }
    if (add_begin(self, depends_on, id, &deps, &n, &pushed) < 0) {
        return NULL;
    }
    res = record ? gh_cu.GraphAddEventRecordNode(&handle, self->handle, deps, n,
                                                 ((gh_event *)event)->handle)
                 : gh_cu.GraphAddEventWaitNode(&handle, self->handle, deps, n,
                                               ((gh_event *)event)->handle);
    return node_added(self, res, id, pushed, deps, handle, event, NULL);
}

static PyObject *
graph_add_event_record(gh_graph *self, PyObject *args, PyObject *kwargs)
{
    return add_event_node(self, args, kwargs, 1);
}

static PyObject *
graph_add_event_wait(gh_graph *self, PyObject *args, PyObject *kwargs)
{
    return add_event_node(self, args, kwargs, 0);
}

static PyObject *
graph_add_child(gh_graph *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"graph", "depends_on", NULL};
    PyObject *child, *depends_on = NULL, *node;
    CUgraphNode *deps = NULL, handle = NULL;
    size_t n = 0;
    CUresult res;
    int pushed;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!|O:add_child_graph", kwlist,
                                     gh_state_of_type(Py_TYPE(self))->GraphType, &child,
                                     &depends_on)) {
        return NULL;
    }
    if (child == (PyObject *)self) {
        PyErr_SetString(PyExc_ValueError, "a graph cannot be its own child");
        return NULL;
    }
    if (((gh_graph *)child)->context != self->context) {
        PyErr_SetString(PyExc_ValueError, "the child graph is of another device");
        return NULL;
    }
    if (add_begin(self, depends_on, GH_CU_GraphAddChildGraphNode, &deps, &n, &pushed) < 0) {
        return NULL;
    }
    res = gh_cu.GraphAddChildGraphNode(&handle, self->handle, deps, n, ((gh_graph *)child)->handle);
    node = node_added(self, res, GH_CU_GraphAddChildGraphNode, pushed, deps, handle,
                      ((gh_graph *)child)->keep, NULL);
    if (node != NULL && gh_kernel_list_merge(self->kernels, ((gh_graph *)child)->kernels) < 0) {
        Py_CLEAR(node);
    }
    return node;
}

static PyObject *
graph_add_empty(gh_graph *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"depends_on", NULL};
    PyObject *depends_on = NULL;
    CUgraphNode *deps = NULL, handle = NULL;
    size_t n = 0;
    CUresult res;
    int pushed;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:add_empty", kwlist, &depends_on)) {
        return NULL;
    }
    if (add_begin(self, depends_on, GH_CU_GraphAddEmptyNode, &deps, &n, &pushed) < 0) {
        return NULL;
    }
    res = gh_cu.GraphAddEmptyNode(&handle, self->handle, deps, n);
    return node_added(self, res, GH_CU_GraphAddEmptyNode, pushed, deps, handle, NULL, NULL);
}

/* ---- Graph: conditional nodes (CUDA 12.4) ---- */

static int
need_conditionals(void)
{
    if (gh_cu.GraphConditionalHandleCreate == NULL || gh_cu.GraphAddNode == NULL) {
        return gh_raise(GH_EXC_CUDA_SUPPORT,
                        "conditional graph nodes need a CUDA 12.4 driver or newer (this one is "
                        "%d)",
                        gh_driver_version());
    }
    return 0;
}

static PyObject *
graph_conditional_handle(gh_graph *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"default", NULL};
    PyObject *dflt = Py_None;
    CUgraphConditionalHandle handle = 0;
    unsigned int value = 0, flags = 0;
    CUresult res;
    int pushed;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:conditional_handle", kwlist, &dflt) ||
        need_conditionals() < 0) {
        return NULL;
    }
    if (dflt != Py_None) {
        unsigned long v = PyLong_AsUnsignedLong(dflt);
        if (v == (unsigned long)-1 && PyErr_Occurred()) {
            return NULL;
        }
        if (v > UINT_MAX) {
            PyErr_SetString(PyExc_OverflowError, "default must fit an unsigned int");
            return NULL;
        }
        value = (unsigned int)v;
        flags = CU_GRAPH_COND_ASSIGN_DEFAULT;
    }
    if (gh_graph_enter(self, GH_CU_GraphConditionalHandleCreate, &pushed) < 0) {
        return NULL;
    }
    res = gh_cu.GraphConditionalHandleCreate(&handle, self->handle, self->context->handle, value,
                                             flags);
    if (gh_graph_leave_check(self, pushed, res, GH_CU_GraphConditionalHandleCreate) < 0) {
        return NULL;
    }
    return PyLong_FromUnsignedLongLong((unsigned long long)handle);
}

/* A body graph of a conditional node: the owner's, sharing what it keeps and checks. */
static PyObject *
body_wrap(gh_graph *owner, CUgraph handle)
{
    gh_graph *b = PyObject_GC_New(gh_graph, Py_TYPE(owner));
    if (b == NULL) {
        return NULL;
    }
    b->context = (gh_context *)Py_NewRef(owner->context);
    b->generation = owner->generation;
    b->handle = handle;
    b->keep = Py_NewRef(owner->keep);
    b->kernels = Py_NewRef(owner->kernels);
    b->exec = NULL;
    b->version = b->exec_version = 0;
    b->launched = 0;
    b->owner = Py_NewRef(owner);
    PyObject_GC_Track(b);
    return (PyObject *)b;
}

static PyObject *
graph_add_conditional(gh_graph *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"handle", "kind", "size", "depends_on", NULL};
    static const char *kinds[] = {"if", "while", "switch"};
    static const CUgraphConditionalNodeType types[] = {
        CU_GRAPH_COND_TYPE_IF, CU_GRAPH_COND_TYPE_WHILE, CU_GRAPH_COND_TYPE_SWITCH};
    unsigned long long handle;
    const char *kind = "if";
    unsigned int size = 0;
    PyObject *depends_on = NULL, *node, *bodies, *result;
    CUgraphNodeParams p;
    CUgraphNode *deps = NULL, hnode = NULL;
    size_t n = 0;
    int which = -1, pushed;
    CUresult res;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "K|sIO:add_conditional", kwlist, &handle, &kind,
                                     &size, &depends_on) ||
        need_conditionals() < 0) {
        return NULL;
    }
    for (int i = 0; i < 3; i++) {
        if (strcmp(kind, kinds[i]) == 0) {
            which = i;
        }
    }
    if (which < 0) {
        PyErr_Format(PyExc_ValueError, "kind must be 'if', 'while' or 'switch', not %R",
                     PyTuple_GET_SIZE(args) > 1 ? PyTuple_GET_ITEM(args, 1) : Py_None);
        return NULL;
    }
    if (size == 0) {
        size = 1;
    }
    if ((which == 0 && size > 2) || (which == 1 && size != 1)) {
        PyErr_Format(PyExc_ValueError,
                     "an 'if' node has 1 or 2 bodies (then, else) and a 'while' node 1, not %u",
                     size);
        return NULL;
    }
    if (add_begin(self, depends_on, GH_CU_GraphAddNode, &deps, &n, &pushed) < 0) {
        return NULL;
    }
    memset(&p, 0, sizeof(p));
    p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    p.conditional.handle = (CUgraphConditionalHandle)handle;
    p.conditional.type = types[which];
    p.conditional.size = size;
    p.conditional.ctx = self->context->handle;
    res = gh_cu.GraphAddNode(&hnode, self->handle, deps, NULL, n, &p);
    node = node_added(self, res, GH_CU_GraphAddNode, pushed, deps, hnode, NULL, NULL);
    if (node == NULL) {
        return NULL;
    }
    bodies = PyList_New(size);
    for (unsigned int i = 0; bodies != NULL && i < size; i++) {
        PyObject *b = body_wrap(self, p.conditional.phGraph_out[i]);
        if (b == NULL) {
            Py_CLEAR(bodies);
            break;
        }
        PyList_SET_ITEM(bodies, i, b);
    }
    result = bodies != NULL ? PyTuple_Pack(2, node, bodies) : NULL;
    Py_DECREF(node);
    Py_XDECREF(bodies);
    return result;
}

static PyObject *
graph_get_handle(gh_graph *self, void *Py_UNUSED(closure))
{
    return PyLong_FromVoidPtr(self->handle);
}

static PyObject *
graph_get_context(gh_graph *self, void *Py_UNUSED(closure))
{
    return Py_NewRef(self->context);
}

static PyObject *
graph_repr(gh_graph *self)
{
    return PyUnicode_FromFormat("<gpuhost.Graph %p on device %d>", (void *)self->handle,
                                self->context->device->id);
}

static PyMethodDef graph_methods[] = {
    {"instantiate", (PyCFunction)(void (*)(void))graph_instantiate, METH_VARARGS | METH_KEYWORDS,
     graph_instantiate_doc},
    {"launch", (PyCFunction)(void (*)(void))graph_launch, METH_FASTCALL | METH_KEYWORDS,
     graph_launch_doc},
    {"upload", (PyCFunction)(void (*)(void))graph_upload, METH_VARARGS | METH_KEYWORDS,
     graph_upload_doc},
    {"debug_dot_print", (PyCFunction)(void (*)(void))graph_debug_dot_print,
     METH_VARARGS | METH_KEYWORDS, graph_debug_dot_print_doc},
    {"clone", (PyCFunction)graph_clone, METH_NOARGS, graph_clone_doc},
    {"add_kernel", (PyCFunction)(void (*)(void))graph_add_kernel, METH_FASTCALL | METH_KEYWORDS,
     graph_add_kernel_doc},
    {"_add_memcpy", (PyCFunction)(void (*)(void))graph_add_memcpy, METH_VARARGS | METH_KEYWORDS,
     graph__add_memcpy_doc},
    {"_add_memset", (PyCFunction)(void (*)(void))graph_add_memset, METH_VARARGS | METH_KEYWORDS,
     graph__add_memset_doc},
    {"add_host", (PyCFunction)(void (*)(void))graph_add_host, METH_VARARGS | METH_KEYWORDS,
     graph_add_host_doc},
    {"add_event_record", (PyCFunction)(void (*)(void))graph_add_event_record,
     METH_VARARGS | METH_KEYWORDS, graph_add_event_record_doc},
    {"add_event_wait", (PyCFunction)(void (*)(void))graph_add_event_wait,
     METH_VARARGS | METH_KEYWORDS, graph_add_event_wait_doc},
    {"add_child_graph", (PyCFunction)(void (*)(void))graph_add_child, METH_VARARGS | METH_KEYWORDS,
     graph_add_child_graph_doc},
    {"conditional_handle", (PyCFunction)(void (*)(void))graph_conditional_handle,
     METH_VARARGS | METH_KEYWORDS, graph_conditional_handle_doc},
    {"add_conditional", (PyCFunction)(void (*)(void))graph_add_conditional,
     METH_VARARGS | METH_KEYWORDS, graph_add_conditional_doc},
    {"add_empty", (PyCFunction)(void (*)(void))graph_add_empty, METH_VARARGS | METH_KEYWORDS,
     graph_add_empty_doc},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef graph_getset[] = {
    {"nodes", (getter)graph_get_nodes, NULL, graph_nodes_doc, NULL},
    {"handle", (getter)graph_get_handle, NULL, graph_handle_doc, NULL},
    {"context", (getter)graph_get_context, NULL, graph_context_doc, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot graph_slots[] = {
    {Py_tp_doc, (void *)graph_doc},   {Py_tp_new, graph_tp_new},  {Py_tp_dealloc, graph_dealloc},
    {Py_tp_traverse, graph_traverse}, {Py_tp_clear, graph_clear}, {Py_tp_methods, graph_methods},
    {Py_tp_getset, graph_getset},     {Py_tp_repr, graph_repr},   {0, NULL},
};

static PyType_Spec graph_spec = {
    .name = "gpuhost.Graph",
    .basicsize = sizeof(gh_graph),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = graph_slots,
};

int
gh_graph_init_type(PyObject *module, gh_state *st)
{
    st->GraphType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &graph_spec, NULL);
    if (st->GraphType == NULL || PyModule_AddType(module, st->GraphType) < 0) {
        return -1;
    }
    return gh_graphexec_init_types(module, st);
}
