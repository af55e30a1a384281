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
#include "kernel.h"

#include <string.h>

typedef struct {
    PyObject_HEAD
    gh_context *context; /* strong */
    uint64_t generation;
    CUgraph handle;
    PyObject *keep;    /* list: objects the nodes use */
    PyObject *kernels; /* set: the Kernels of its kernel nodes, checked before each launch */
    PyObject *exec;    /* the GraphExec launch() instantiated, or NULL */
    unsigned long version, exec_version; /* bumped by each node added; exec made at which */
    int launched; /* a GraphExec of it was launched: its work may still run */
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

/* ---- shared helpers ---- */

/* Check g's context is alive and make it current; 0 or -1. */
static int
graph_enter(gh_graph *g, gh_cu_id id, int *pushed)
{
    *pushed = 0;
    if (gh_context_check_alive(g->context, g->generation, id) < 0) {
        return -1;
    }
    return gh_context_enter(g->context, pushed);
}

static int
graph_leave_check(gh_graph *g, int pushed, CUresult res, gh_cu_id id)
{
    if (gh_context_leave(g->context, pushed) < 0) {
        return -1;
    }
    return gh_check(res, id);
}

/* Add the kernels of list `from` missing from list `to`; 0 or -1. */
int
gh_graph_add_kernels(PyObject *to, PyObject *from)
{
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(from); i++) {
        PyObject *k = PyList_GET_ITEM(from, i);
        int has = 0;
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(to) && !has; j++) {
            has = PyList_GET_ITEM(to, j) == k;
        }
        if (!has && PyList_Append(to, k) < 0) {
            return -1;
        }
    }
    return 0;
}

/* Each kernel of `kernels` can still be launched (its module loaded, its context alive). */
static int
check_kernels(PyObject *kernels, gh_cu_id id)
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

static PyObject *
node_new(gh_graph *g, CUgraphNode handle, PyObject *kernel)
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
    if (self->handle != NULL) {
        gh_release(self->context, self->generation, GH_CU_GraphDestroy, self->handle);
    }
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

static PyObject *exec_new(gh_graph *g, unsigned long long flags);

static PyObject *
graph_instantiate(gh_graph *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"flags", NULL};
    unsigned long long flags = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|K:instantiate", kwlist, &flags)) {
        return NULL;
    }
    return exec_new(self, flags);
}

/* The GraphExec launch() and upload() use: made once, again after nodes were added. */
static gh_graphexec *
cached_exec(gh_graph *self)
{
    if (self->exec == NULL || self->exec_version != self->version) {
        PyObject *e = exec_new(self, 0);
        if (e == NULL) {
            return NULL;
        }
        Py_XSETREF(self->exec, e);
        self->exec_version = self->version;
    }
    return (gh_graphexec *)self->exec;
}

static PyObject *exec_launch(gh_graphexec *self, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames);
static PyObject *exec_upload(gh_graphexec *self, PyObject *args, PyObject *kwargs);

static PyObject *
graph_launch(gh_graph *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    gh_graphexec *e = cached_exec(self);
    return e != NULL ? exec_launch(e, args, nargs, kwnames) : NULL;
}

static PyObject *
graph_upload(gh_graph *self, PyObject *args, PyObject *kwargs)
{
    gh_graphexec *e = cached_exec(self);
    return e != NULL ? exec_upload(e, args, kwargs) : NULL;
}

static PyObject *
graph_get_nodes(gh_graph *self, void *Py_UNUSED(closure))
{
    CUgraphNode *nodes = NULL;
    size_t n = 0;
    PyObject *list = NULL;
    CUresult res;
    int pushed;

    if (graph_enter(self, GH_CU_GraphGetNodes, &pushed) < 0) {
        return NULL;
    }
    res = gh_cu.GraphGetNodes(self->handle, NULL, &n);
    if (res == CUDA_SUCCESS && n > 0) {
        nodes = PyMem_Calloc(n, sizeof(*nodes));
        res =
            nodes != NULL ? gh_cu.GraphGetNodes(self->handle, nodes, &n) : CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (graph_leave_check(self, pushed, res, GH_CU_GraphGetNodes) < 0) {
        PyMem_Free(nodes);
        return NULL;
    }
    list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list != NULL && i < n; i++) {
        PyObject *node = node_new(self, nodes[i], NULL);
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
    if (graph_enter(self, GH_CU_GraphDebugDotPrint, &pushed) < 0) {
        Py_DECREF(path);
        return NULL;
    }
    res = gh_cu.GraphDebugDotPrint(self->handle, PyBytes_AS_STRING(path), flags);
    Py_DECREF(path);
    if (graph_leave_check(self, pushed, res, GH_CU_GraphDebugDotPrint) < 0) {
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

    if (graph_enter(self, GH_CU_GraphClone, &pushed) < 0) {
        return NULL;
    }
    res = gh_cu.GraphClone(&handle, self->handle);
    if (graph_leave_check(self, pushed, res, GH_CU_GraphClone) < 0) {
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
    if (graph_leave_check(self, pushed, res, id) < 0) {
        return NULL;
    }
    self->version++;
    if (obj != NULL && PyList_Append(self->keep, obj) < 0) {
        return NULL;
    }
    if (kernel != NULL) {
        PyObject *one = PyList_New(1);
        int err = one == NULL;
        if (one != NULL) {
            PyList_SET_ITEM(one, 0, Py_NewRef(kernel));
            err = gh_graph_add_kernels(self->kernels, one) < 0;
            Py_DECREF(one);
        }
        if (err) {
            return NULL;
        }
    }
    return node_new(self, handle, kernel);
}

/* Common start of the _add methods: deps parsed, context entered. */
static int
add_begin(gh_graph *self, PyObject *depends_on, gh_cu_id id, CUgraphNode **deps, size_t *n,
          int *pushed)
{
    if (parse_deps(self, depends_on, deps, n) < 0) {
        return -1;
    }
    if (graph_enter(self, id, pushed) < 0) {
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
        if (!PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), "depends_on") == 0) {
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
graph_add_memcpy_py(gh_graph *self, PyObject *args, PyObject *kwargs)
{
    return gh_call_python_method("gpuhost.graphs", "_add_memcpy", (PyObject *)self, args, kwargs);
}

static PyObject *
graph_add_memset_py(gh_graph *self, PyObject *args, PyObject *kwargs)
{
    return gh_call_python_method("gpuhost.graphs", "_add_memset", (PyObject *)self, args, kwargs);
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
    if (gh_context_check_alive(((gh_event *)event)->context, ((gh_event *)event)->generation, id) <
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
    if (node != NULL && gh_graph_add_kernels(self->kernels, ((gh_graph *)child)->kernels) < 0) {
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
     "instantiate($self, flags=0)\n--\n\nA new executable graph of this graph as it is now "
     "(cuGraphInstantiateWithFlags)."},
    {"launch", (PyCFunction)(void (*)(void))graph_launch, METH_FASTCALL | METH_KEYWORDS,
     "launch($self, stream=None)\n--\n\nLaunch the graph on `stream`, through an executable graph "
     "made "
     "at the first launch (and again after nodes were added)."},
    {"upload", (PyCFunction)(void (*)(void))graph_upload, METH_VARARGS | METH_KEYWORDS,
     "upload($self, stream=None)\n--\n\nUpload the executable graph launch() uses, ahead of its "
     "first "
     "launch."},
    {"debug_dot_print", (PyCFunction)(void (*)(void))graph_debug_dot_print,
     METH_VARARGS | METH_KEYWORDS,
     "debug_dot_print($self, path, flags=0)\n--\n\nWrite the graph as Graphviz DOT to `path` "
     "(cuGraphDebugDotPrint)."},
    {"clone", (PyCFunction)graph_clone, METH_NOARGS,
     "clone($self)\n--\n\nA copy of the graph (cuGraphClone)."},
    {"add_kernel", (PyCFunction)(void (*)(void))graph_add_kernel, METH_FASTCALL | METH_KEYWORDS,
     "add_kernel($self, config, /, *args, depends_on=())\n--\n\nA kernel node (a GraphNode): "
     "`config` is "
     "kernel[grid, block] (or kernel[grid, block, stream, shared]; the stream is not used), "
     "`args` checked and packed as a launch's."},
    {"add_memcpy", (PyCFunction)(void (*)(void))graph_add_memcpy_py, METH_VARARGS | METH_KEYWORDS,
     "add_memcpy($self, dst, src, nbytes=None, depends_on=())\n--\n\nA copy node (a GraphNode): "
     "dst "
     "and src are device arrays, pinned or mapped host arrays, or addresses; nbytes "
     "defaults to the arrays' size."},
    {"add_memset", (PyCFunction)(void (*)(void))graph_add_memset_py, METH_VARARGS | METH_KEYWORDS,
     "add_memset($self, dst, value, count=None, element_size=None, depends_on=())\n--\n\n"
     "A memset node: `count` elements of `element_size` bytes (1, 2 or 4; default the "
     "array's itemsize) at dst set to `value`."},
    {"_add_memcpy", (PyCFunction)(void (*)(void))graph_add_memcpy, METH_VARARGS | METH_KEYWORDS,
     "_add_memcpy($self, dst, src, nbytes, depends_on=())\n--\n\nA copy node between addresses."},
    {"_add_memset", (PyCFunction)(void (*)(void))graph_add_memset, METH_VARARGS | METH_KEYWORDS,
     "_add_memset($self, dst, value, element_size, count, depends_on=())\n--\n\nA memset node at "
     "an address."},
    {"add_host", (PyCFunction)(void (*)(void))graph_add_host, METH_VARARGS | METH_KEYWORDS,
     "add_host($self, fn, arg=None, depends_on=())\n--\n\nA host-function node (a GraphNode): "
     "fn(arg) "
     "(fn() when arg is not given) on a driver thread at each launch."},
    {"add_event_record", (PyCFunction)(void (*)(void))graph_add_event_record,
     METH_VARARGS | METH_KEYWORDS,
     "add_event_record($self, event, depends_on=())\n--\n\nAn event-record node (a GraphNode)."},
    {"add_event_wait", (PyCFunction)(void (*)(void))graph_add_event_wait,
     METH_VARARGS | METH_KEYWORDS,
     "add_event_wait($self, event, depends_on=())\n--\n\nAn event-wait node (a GraphNode)."},
    {"add_child_graph", (PyCFunction)(void (*)(void))graph_add_child, METH_VARARGS | METH_KEYWORDS,
     "add_child_graph($self, graph, depends_on=())\n--\n\nA node (a GraphNode) running a copy of "
     "`graph`."},
    {"add_empty", (PyCFunction)(void (*)(void))graph_add_empty, METH_VARARGS | METH_KEYWORDS,
     "add_empty($self, depends_on=())\n--\n\nA node (a GraphNode) that does nothing: a join "
     "point."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef graph_getset[] = {
    {"nodes", (getter)graph_get_nodes, NULL, "The graph's nodes (list of GraphNode).", NULL},
    {"handle", (getter)graph_get_handle, NULL, "The CUgraph as an int.", NULL},
    {"context", (getter)graph_get_context, NULL, "The Context the graph belongs to.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot graph_slots[] = {
    {Py_tp_doc, "Graph()\n--\n\nA CUDA graph on the current device: from Stream.end_capture() "
                "or gpuhost.graph_capture(), or empty, to build node by node."},
    {Py_tp_new, graph_tp_new},
    {Py_tp_dealloc, graph_dealloc},
    {Py_tp_traverse, graph_traverse},
    {Py_tp_clear, graph_clear},
    {Py_tp_methods, graph_methods},
    {Py_tp_getset, graph_getset},
    {Py_tp_repr, graph_repr},
    {0, NULL},
};

static PyType_Spec graph_spec = {
    .name = "gpuhost.Graph",
    .basicsize = sizeof(gh_graph),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = graph_slots,
};

/* ---- GraphExec ---- */

static PyObject *
exec_new(gh_graph *g, unsigned long long flags)
{
    gh_graphexec *e;
    CUgraphExec handle = NULL;
    CUresult res;
    int pushed;

    if (check_kernels(g->kernels, GH_CU_GraphInstantiateWithFlags) < 0 ||
        graph_enter(g, GH_CU_GraphInstantiateWithFlags, &pushed) < 0) {
        return NULL;
    }
    res = gh_cu.GraphInstantiateWithFlags(&handle, g->handle, flags);
    if (graph_leave_check(g, pushed, res, GH_CU_GraphInstantiateWithFlags) < 0) {
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
    if (ref->context != NULL && ref->context != g->context) {
        PyErr_Format(PyExc_ValueError,
                     "the graph is device %d's; it cannot be launched on a stream of device %d",
                     g->context->device->id, ref->context->device->id);
        return -1;
    }
    return 0;
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
    if (PyList_GET_SIZE(self->kernels) > 0 && check_kernels(self->kernels, id) < 0) {
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

static PyObject *
exec_launch(gh_graphexec *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *stream = nargs > 0 ? args[0] : NULL;
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;

    if (nargs + nkw > 1 || (nkw == 1 && !PyUnicode_CompareWithASCIIString(
                                            PyTuple_GET_ITEM(kwnames, 0), "stream") == 0)) {
        PyErr_SetString(PyExc_TypeError, "launch() takes one argument, stream=None");
        return NULL;
    }
    if (nkw == 1) {
        stream = args[nargs];
    }
    return exec_on_stream(self, stream == Py_None ? NULL : stream, 1);
}

static PyObject *
exec_upload(gh_graphexec *self, PyObject *args, PyObject *kwargs)
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
    if (check_kernels(other->kernels, GH_CU_GraphExecUpdate) < 0 ||
        graph_enter(g, GH_CU_GraphExecUpdate, &pushed) < 0) {
        return NULL;
    }
    memset(&info, 0, sizeof(info));
    res = gh_cu.GraphExecUpdate(self->handle, other->handle, &info);
    if (gh_context_leave(g->context, pushed) < 0) {
        return NULL;
    }
    if (res == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE) {
        gh_raise("GraphUpdateError", "update() refused: %s (%s)", update_reason(info.result),
                 gh_cu_result_name(res));
        return NULL;
    }
    if (gh_check(res, GH_CU_GraphExecUpdate) < 0) {
        return NULL;
    }
    if (PyList_Append(self->keep, other->keep) < 0 ||
        gh_graph_add_kernels(self->kernels, other->kernels) < 0) {
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
    if (graph_enter(self->graph, GH_CU_GraphExecKernelNodeSetParams, &pushed) < 0) {
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
    if (graph_leave_check(self->graph, pushed, res, GH_CU_GraphExecKernelNodeSetParams) < 0) {
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
    {"launch", (PyCFunction)(void (*)(void))exec_launch, METH_FASTCALL | METH_KEYWORDS,
     "launch($self, stream=None)\n--\n\nLaunch the executable graph on `stream` (cuGraphLaunch)."},
    {"upload", (PyCFunction)(void (*)(void))exec_upload, METH_VARARGS | METH_KEYWORDS,
     "upload($self, stream=None)\n--\n\nUpload it to the device ahead of its first launch."},
    {"update", (PyCFunction)exec_update, METH_O,
     "update($self, graph)\n--\n\nTake the parameters of `graph`, which must have this graph's "
     "topology "
     "(cuGraphExecUpdate); GraphUpdateError with the driver's reason when refused."},
    {"set_kernel_args", (PyCFunction)(void (*)(void))exec_set_kernel_args, METH_FASTCALL,
     "set_kernel_args($self, node, /, *args)\n--\n\nNew arguments for kernel node `node` (from "
     "Graph.add_kernel), checked and packed as a launch's."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef exec_getset[] = {
    {"graph", (getter)exec_get_graph, NULL, "The Graph it was made from.", NULL},
    {"handle", (getter)exec_get_handle, NULL, "The CUgraphExec as an int.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot exec_slots[] = {
    {Py_tp_doc, "An executable graph: Graph.instantiate()."},
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
    if (graph_enter(self->graph, GH_CU_GraphNodeGetType, &pushed) < 0) {
        return NULL;
    }
    res = gh_cu.GraphNodeGetType(self->handle, &t);
    if (graph_leave_check(self->graph, pushed, res, GH_CU_GraphNodeGetType) < 0) {
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
    return _Py_HashPointer(self->handle);
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
    {"type", (getter)node_get_type, NULL,
     "The node's kind: 'kernel', 'memcpy', 'memset', 'host', 'graph', 'empty', 'event_wait', "
     "'event_record', 'mem_alloc', 'mem_free', 'conditional' or 'other'.",
     NULL},
    {"graph", (getter)node_get_graph, NULL, "The Graph it belongs to.", NULL},
    {"handle", (getter)node_get_handle, NULL, "The CUgraphNode as an int.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot node_slots[] = {
    {Py_tp_doc, "A node of a Graph (Graph.nodes, Graph.add_*)."},
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
gh_graph_init_type(PyObject *module, gh_state *st)
{
    st->GraphType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &graph_spec, NULL);
    st->GraphExecType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &exec_spec, NULL);
    st->GraphNodeType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &node_spec, NULL);
    if (st->GraphType == NULL || st->GraphExecType == NULL || st->GraphNodeType == NULL) {
        return -1;
    }
    if (PyModule_AddType(module, st->GraphType) < 0 ||
        PyModule_AddType(module, st->GraphExecType) < 0 ||
        PyModule_AddType(module, st->GraphNodeType) < 0) {
        return -1;
    }
    return 0;
}
