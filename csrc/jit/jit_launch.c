/* JitDispatcher and JitLaunch: the launch side of gpuhost.jit (design decision 12).  numba-cuda
 * compiles a Python kernel; gpuhost keeps, per compiled overload, the key of the argument
 * types that select it, the plan of numba's parameter layout, and the Kernel loaded in each
 * context.  dispatcher[grid, block, stream, shared](*args) computes its arguments' key in
 * C, finds the overload and the current context's Kernel, packs numba's parameters and
 * launches through kernel.c.  Whatever this does not know (a type not keyed here, a host
 * array, an overload not compiled or a context not loaded yet, pre-launch callbacks) goes
 * to the dispatcher's _slow_launch (gpuhost/dispatcher.py), which registers what it
 * learns with _jit_add so that the next such launch stays here.
 */

#include "jit_internal.h"
#include "jit_launch_docs.h"

#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL gh_ARRAY_API
#include <numpy/arrayobject.h>

#include <string.h>
#include <structmember.h>

#define JIT_CTX_MAX     8   /* contexts an overload is kept loaded in, here */
#define JIT_ENTRIES_MAX 64  /* overloads (by key) kept, here */
#define JIT_PARAMS_MAX  256 /* parameters packed on the stack */

/* One overload as launches reach it: `key` is what jit_key() writes for the arguments
   that select it, `plan` numba's parameter layout for them (gpuhost/_numba.py writes it):
   per argument 'A' ndim (an array: meminfo, parent, nitems, itemsize, data, shape,
   strides), 'i' size signed, 'f' size (2: float16), 'c' size, 'b' (boolean), 'p'
   (pointer), 't' n (a tuple, its n items' plans follow). */
typedef struct {
    unsigned char *key, *plan;
    Py_ssize_t keylen, planlen;
    PyObject *keep;     /* what the key names by address, kept alive */
    PyObject *overload; /* the compiled overload, for the Python side */
    int nparams, cooperative, lcs;
    launch_dims lcs_dims; /* lcs: the only launch configuration this overload is for */
    gh_kernel *kernels[JIT_CTX_MAX];
    int n_kernels;
} jit_entry;

typedef struct {
    PyObject_HEAD
    jit_entry *entries;
    int n_entries;
    PyObject *last_key, *last_launch; /* the last dispatcher[...], reused when asked again */
    PyObject *weakreflist;
} gh_jitdispatcher;

typedef struct {
    PyObject_HEAD
    gh_jitdispatcher *dispatcher; /* strong */
    launch_dims dims;             /* dims.stream: strong (NULL: the default stream) */
    PyObject *stream;             /* the stream as given (strong) */
    PyObject *callbacks;          /* pre_launch_callbacks: a list made on first use, or NULL */
    vectorcallfunc vectorcall;
} gh_jitlaunch;

/* ---- the overload table ---- */

static void
entry_clear(jit_entry *e)
{
    PyMem_Free(e->key);
    PyMem_Free(e->plan);
    e->key = e->plan = NULL;
    Py_CLEAR(e->keep);
    Py_CLEAR(e->overload);
    Py_CLEAR(e->lcs_dims.stream);
    for (int i = 0; i < e->n_kernels; i++) {
        Py_CLEAR(e->kernels[i]);
    }
    e->n_kernels = 0;
}

static jit_entry *
find_entry(gh_jitdispatcher *self, const jit_keybuf *kb)
{
    for (int i = 0; i < self->n_entries; i++) {
        jit_entry *e = &self->entries[i];
        if (e->keylen == kb->n && memcmp(e->key, kb->bytes, (size_t)kb->n) == 0) {
            return e;
        }
    }
    return NULL;
}

/* The entry's Kernel loaded in `ctx` and still usable there, or NULL. */
static gh_kernel *
entry_kernel(const jit_entry *e, gh_context *ctx)
{
    for (int i = 0; i < e->n_kernels; i++) {
        gh_module *m = e->kernels[i]->module;
        if (m->context == ctx && !m->unloaded && m->generation == ctx->generation) {
            return e->kernels[i];
        }
    }
    return NULL;
}

static int
same_dims(const launch_dims *a, const launch_dims *b)
{
    return memcmp(a->grid, b->grid, sizeof(a->grid)) == 0 &&
           memcmp(a->block, b->block, sizeof(a->block)) == 0 && a->shared == b->shared;
}

/* ---- JitLaunch: dispatcher[grid, block, stream, shared] ---- */

static PyObject *
slow_launch(gh_jitlaunch *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *tuple = PyTuple_New(nargs), *res;
    if (tuple == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        PyTuple_SET_ITEM(tuple, i, Py_NewRef(args[i]));
    }
    res = PyObject_CallMethod((PyObject *)self->dispatcher, "_slow_launch", "OO", self, tuple);
    Py_DECREF(tuple);
    return res;
}

/* Pack by the entry's plan (other libraries' arrays from `vs`, read while keying) and
   launch k, its stream ordered after theirs: 1 launched, 0 not packed here, -1 error. */
static int
launch_entry(gh_jitlaunch *self, jit_entry *e, gh_kernel *k, PyObject *const *args,
             Py_ssize_t nargs, jit_views *vs)
{
    union {
        max_align_t align;
        char bytes[2048];
    } small;
    void *small_ptrs[JIT_PARAMS_MAX];
    jit_packer pk = {small.bytes, small_ptrs, k->params,
                     0,           k->nparams, gh_state_of_type(Py_TYPE(self))->DeviceArrayType,
                     vs};
    Py_ssize_t pos = 0;
    launch_dims d = self->dims;
    int ok = 1, r;

    if (k->nparams > JIT_PARAMS_MAX || k->argsize > sizeof(small.bytes)) {
        pk.buf = PyMem_Malloc(k->argsize + (size_t)k->nparams * sizeof(void *) + 16);
        if (pk.buf == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        pk.ptrs = (void **)(pk.buf + ((k->argsize + 15) & ~(size_t)15));
    }
    for (Py_ssize_t i = 0; i < nargs && ok; i++) {
        ok = gh_jit_pack_planned(k, &pk, e->plan, e->planlen, &pos, args[i]);
    }
    r = 0;
    if (ok && pk.n == k->nparams) {
        d.cooperative = e->cooperative;
        if (gh_kernel_check_dims(k, &d) < 0) {
            /* dimensions the driver refuses (past the device's or the kernel's limits, its
               launch_bounds): the slow path raises that as numba's launch does */
            PyErr_Clear();
        }
        else {
            r = (gh_jit_views_order(vs, k) < 0 || gh_kernel_launch_params(k, &d, pk.ptrs) < 0) ? -1
                                                                                               : 1;
        }
    }
    if (pk.buf != small.bytes) {
        PyMem_Free(pk.buf);
    }
    return r;
}

/* The context a launch on `stream` goes to, where the stream decides it: a gpuhost stream's
   own (sparing the driver the question).  Borrowed; NULL: the current context decides, as
   numba launches (launch_kernel here, _jit_context for the launches Python makes). */
static gh_context *
stream_launch_context(gh_state *st, PyObject *stream)
{
    if (stream != NULL && Py_IS_TYPE(stream, st->StreamType) &&
        ((gh_stream *)stream)->kind == GH_STREAM_OWNED) {
        return ((gh_stream *)stream)->context;
    }
    return NULL;
}

/* The kernel of the launch's context (stream_launch_context's, else the current one).  NULL:
   none here (with an error, or not: PyErr_Occurred). */
static gh_kernel *
launch_kernel(gh_state *st, gh_jitlaunch *self, const jit_entry *e)
{
    gh_context *ctx = stream_launch_context(st, self->dims.stream);
    if (ctx == NULL && (ctx = gh_context_current_or_null(st)) == NULL) {
        return NULL;
    }
    return entry_kernel(e, ctx);
}

static PyObject *
jitlaunch_vectorcall(gh_jitlaunch *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    gh_state *st = gh_state_of_type(Py_TYPE(self));
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *res = NULL;
    jit_keybuf kb;
    jit_views vs;
    jit_entry *e;
    gh_kernel *k;
    int r;

    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0) {
        PyErr_SetString(PyExc_TypeError, "a kernel launch takes no keyword arguments");
        return NULL;
    }
    if (self->callbacks != NULL && PyList_GET_SIZE(self->callbacks) > 0) {
        return slow_launch(self, args, nargs);
    }
    gh_jit_views_init(&vs, st, self->dims.stream);
    r = gh_jit_key_args(st, &kb, args, nargs, 0, &vs);
    if (r < 0) {
        goto done;
    }
    if (r == 0 || (e = find_entry(self->dispatcher, &kb)) == NULL ||
        (e->lcs && !same_dims(&e->lcs_dims, &self->dims)) ||
        (k = launch_kernel(st, self, e)) == NULL) {
        if (!PyErr_Occurred()) {
            res = slow_launch(self, args, nargs);
        }
        goto done;
    }
    r = launch_entry(self, e, k, args, nargs, &vs);
    if (r >= 0) {
        res = r ? Py_NewRef(Py_None) : slow_launch(self, args, nargs);
    }
done:
    gh_jit_views_free(&vs);
    gh_jit_keybuf_free(&kb);
    return res;
}

static PyObject *
jitlaunch_get_callbacks(gh_jitlaunch *self, void *Py_UNUSED(closure))
{
    if (self->callbacks == NULL && (self->callbacks = PyList_New(0)) == NULL) {
        return NULL;
    }
    return Py_NewRef(self->callbacks);
}

static PyObject *
jitlaunch_repr(gh_jitlaunch *self)
{
    const unsigned int *g = self->dims.grid, *b = self->dims.block;
    return PyUnicode_FromFormat("<JitLaunch of %R: grid (%u, %u, %u), block (%u, %u, %u), "
                                "shared %u, stream %R>",
                                self->dispatcher, g[0], g[1], g[2], b[0], b[1], b[2],
                                self->dims.shared, self->stream);
}

static int
jitlaunch_traverse(gh_jitlaunch *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->dispatcher);
    Py_VISIT(self->dims.stream);
    Py_VISIT(self->stream);
    Py_VISIT(self->callbacks);
    return 0;
}

static int
jitlaunch_clear(gh_jitlaunch *self)
{
    Py_CLEAR(self->dispatcher);
    Py_CLEAR(self->dims.stream);
    Py_CLEAR(self->stream);
    Py_CLEAR(self->callbacks);
    return 0;
}

static void
jitlaunch_dealloc(gh_jitlaunch *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    jitlaunch_clear(self);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyGetSetDef jitlaunch_getset[] = {
    {"griddim", gh_get_dims_field, NULL, jitlaunch_griddim_doc,
     (void *)offsetof(gh_jitlaunch, dims.grid)},
    {"blockdim", gh_get_dims_field, NULL, jitlaunch_blockdim_doc,
     (void *)offsetof(gh_jitlaunch, dims.block)},
    {"sharedmem", gh_get_shared_field, NULL, jitlaunch_sharedmem_doc,
     (void *)offsetof(gh_jitlaunch, dims.shared)},
    {"pre_launch_callbacks", (getter)jitlaunch_get_callbacks, NULL,
     jitlaunch_pre_launch_callbacks_doc, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef jitlaunch_members[] = {
    {"dispatcher", T_OBJECT, offsetof(gh_jitlaunch, dispatcher), READONLY,
     jitlaunch_dispatcher_doc},
    {"stream", T_OBJECT, offsetof(gh_jitlaunch, stream), READONLY, jitlaunch_stream_doc},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(gh_jitlaunch, vectorcall), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyObject *jitlaunch_reduce(gh_jitlaunch *self, PyObject *Py_UNUSED(ignored));

static PyMethodDef jitlaunch_methods[] = {
    {"__reduce__", (PyCFunction)jitlaunch_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot jitlaunch_slots[] = {
    {Py_tp_methods, jitlaunch_methods},   {Py_tp_doc, (void *)jitlaunch_doc},
    {Py_tp_getset, jitlaunch_getset},     {Py_tp_members, jitlaunch_members},
    {Py_tp_call, PyVectorcall_Call},      {Py_tp_repr, jitlaunch_repr},
    {Py_tp_traverse, jitlaunch_traverse}, {Py_tp_clear, jitlaunch_clear},
    {Py_tp_dealloc, jitlaunch_dealloc},   {0, NULL},
};

static PyType_Spec jitlaunch_spec = {
    .name = "gpuhost._core.JitLaunch",
    .basicsize = sizeof(gh_jitlaunch),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
             Py_TPFLAGS_DISALLOW_INSTANTIATION | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = jitlaunch_slots,
};

/* ---- JitDispatcher ---- */

static void jitdispatcher_dealloc(gh_jitdispatcher *self);

/* The module state of a JitDispatcher, whose type is a Python subclass. */
static gh_state *
dispatcher_state(PyObject *self)
{
    return gh_state_of_subclass(Py_TYPE(self), (destructor)jitdispatcher_dealloc);
}

/* numba's checks of griddim and blockdim, with its messages: 1 to 3 integers (an int is
   one); the values' range is gh_launch_dims_parse's to check. */
static int
numba_dims_check(PyObject *dim, const char *name)
{
    PyObject *list;
    int rc = 0;
    if (dim == Py_None) {
        PyErr_SetString(PyExc_ValueError, "Kernel launch configuration was not specified. Use "
                                          "the syntax: kernel_function[blockspergrid, "
                                          "threadsperblock](arg0, arg1, ..., argn)");
        return -1;
    }
    list = (PyTuple_Check(dim) || PyList_Check(dim)) ? PySequence_List(dim)
                                                     : Py_BuildValue("[O]", dim);
    if (list == NULL) {
        return -1;
    }
    if (PyList_GET_SIZE(list) > 3) {
        PyErr_Format(PyExc_ValueError, "%s must be a sequence of 1, 2 or 3 integers, got %R", name,
                     list);
        rc = -1;
    }
    for (Py_ssize_t i = 0; rc == 0 && i < PyList_GET_SIZE(list); i++) {
        if (!PyIndex_Check(PyList_GET_ITEM(list, i))) {
            PyErr_Format(PyExc_TypeError, "%s must be a sequence of integers, got %R", name, list);
            rc = -1;
        }
    }
    Py_DECREF(list);
    return rc;
}

/* JitLaunch.__reduce__: dispatcher[griddim, blockdim, stream, sharedmem] again, as numba
   pickles a configured launch (not with pre-launch callbacks). */
static PyObject *
jitlaunch_reduce(gh_jitlaunch *self, PyObject *Py_UNUSED(ignored))
{
    gh_state *st = gh_state_of_type(Py_TYPE(self));
    PyObject *fn, *res;
    if (self->callbacks != NULL && PyList_GET_SIZE(self->callbacks) > 0) {
        PyObject *pickle = PyImport_ImportModule("pickle");
        PyObject *err = pickle ? PyObject_GetAttrString(pickle, "PicklingError") : NULL;
        if (err != NULL) {
            PyErr_SetString(err, "Cannot pickle configured launches with pre-launch callbacks");
        }
        Py_XDECREF(err);
        Py_XDECREF(pickle);
        return NULL;
    }
    /* the rebuilding function: gpuhost/dispatcher.py's, registered once */
    if ((fn = st->helpers[GH_HELPER_JIT_LAUNCH_OF]) == NULL) {
        return gh_helper_call(st, GH_HELPER_JIT_LAUNCH_OF, NULL); /* its RuntimeError */
    }
    Py_INCREF(fn);
    res = Py_BuildValue("(N(O(III)(III)OI))", fn, (PyObject *)self->dispatcher, self->dims.grid[0],
                        self->dims.grid[1], self->dims.grid[2], self->dims.block[0],
                        self->dims.block[1], self->dims.block[2], self->stream, self->dims.shared);
    return res;
}

static PyObject *
make_launch(gh_jitdispatcher *self, PyObject *key)
{
    gh_state *st = dispatcher_state((PyObject *)self);
    Py_ssize_t n = PyTuple_Check(key) ? PyTuple_GET_SIZE(key) : 0;
    PyObject *stream = n > 2 ? PyTuple_GET_ITEM(key, 2) : Py_None;
    gh_jitlaunch *l;
    launch_dims d;

    if (n < 2 || n > 4) {
        PyErr_SetString(PyExc_ValueError, "must specify at least the griddim and blockdim");
        return NULL;
    }
    if (numba_dims_check(PyTuple_GET_ITEM(key, 0), "griddim") < 0 ||
        numba_dims_check(PyTuple_GET_ITEM(key, 1), "blockdim") < 0) {
        return NULL;
    }
    if (gh_launch_dims_parse(&d, PyTuple_GET_ITEM(key, 0), PyTuple_GET_ITEM(key, 1),
                             (PyLong_CheckExact(stream) && PyLong_AsLong(stream) == 0) ? Py_None
                                                                                       : stream,
                             n > 3 ? PyTuple_GET_ITEM(key, 3) : Py_None, 0, NULL) < 0) {
        return NULL;
    }
    if (d.stream != NULL) {
        gh_stream_ref ref; /* check the stream now, so a bad one is reported here */
        if (gh_stream_resolve(st, d.stream, &ref) < 0) {
            return NULL;
        }
    }
    l = PyObject_GC_New(gh_jitlaunch, st->JitLaunchType);
    if (l == NULL) {
        return NULL;
    }
    l->dispatcher = (gh_jitdispatcher *)Py_NewRef(self);
    l->dims = d;
    Py_XINCREF(d.stream);
    l->stream = Py_NewRef(stream);
    l->callbacks = NULL;
    l->vectorcall = (vectorcallfunc)jitlaunch_vectorcall;
    PyObject_GC_Track(l);
    return (PyObject *)l;
}

/* dispatcher[grid, block], [grid, block, stream], [grid, block, stream, shared] */
static PyObject *
jitdispatcher_getitem(gh_jitdispatcher *self, PyObject *key)
{
    PyObject *launch;
    if (self->last_key != NULL && gh_same_items(key, self->last_key)) {
        return Py_NewRef(self->last_launch);
    }
    if ((launch = make_launch(self, key)) == NULL) {
        return NULL;
    }
    /* a Python subclass hears of each configuration made (numba's occupancy warning) */
    if (Py_TYPE(self) != dispatcher_state((PyObject *)self)->JitDispatcherType) {
        PyObject *r = PyObject_CallMethod((PyObject *)self, "_configured", "O", launch);
        if (r == NULL) {
            Py_DECREF(launch);
            return NULL;
        }
        Py_DECREF(r);
    }
    Py_XSETREF(self->last_key, Py_NewRef(key));
    Py_XSETREF(self->last_launch, Py_NewRef(launch));
    return launch;
}

static PyObject *
jitdispatcher_key(gh_jitdispatcher *self, PyObject *args)
{
    gh_state *st = dispatcher_state((PyObject *)self);
    jit_keybuf kb;
    jit_views vs;
    PyObject *res;
    int r;
    if (!PyTuple_Check(args)) {
        PyErr_SetString(PyExc_TypeError, "_jit_key() takes a tuple of arguments");
        return NULL;
    }
    gh_jit_views_init(&vs, st, NULL);
    r = gh_jit_key_args(st, &kb, &PyTuple_GET_ITEM(args, 0), PyTuple_GET_SIZE(args), 1, &vs);
    gh_jit_views_free(&vs);
    if (r <= 0) {
        gh_jit_keybuf_free(&kb);
        return r < 0 ? NULL : Py_NewRef(Py_None);
    }
    res = Py_BuildValue("(y#NO)", (const char *)kb.bytes, kb.n,
                        kb.keep ? PyList_AsTuple(kb.keep) : PyTuple_New(0),
                        kb.local ? Py_False : Py_True);
    gh_jit_keybuf_free(&kb);
    return res;
}

/* Check the plan against the kernel's parameters: the same count and sizes. */
static int
check_plan(gh_kernel *k, const unsigned char *plan, Py_ssize_t planlen, Py_ssize_t nargs)
{
    PyObject *sizes = PyList_New(0);
    Py_ssize_t pos = 0;
    int ok = sizes != NULL;
    for (Py_ssize_t i = 0; i < nargs && ok; i++) {
        ok = gh_jit_plan_sizes(plan, planlen, &pos, sizes) == 0;
    }
    if (ok && (pos != planlen || k->nparams < 0 || PyList_GET_SIZE(sizes) != k->nparams)) {
        ok = 0;
    }
    for (Py_ssize_t i = 0; ok && i < k->nparams; i++) {
        ok = PyLong_AsLong(PyList_GET_ITEM(sizes, i)) == (long)k->params[i].size;
    }
    if (!ok && !PyErr_Occurred()) {
        PyErr_Format(PyExc_ValueError,
                     "the parameters of kernel %R (%d) are not numba's layout for its "
                     "arguments (%R)",
                     k->name, k->nparams, sizes);
    }
    Py_XDECREF(sizes);
    return ok ? 0 : -1;
}

static int
entry_set(jit_entry *e, const char *key, Py_ssize_t keylen, const char *plan, Py_ssize_t planlen)
{
    e->key = PyMem_Malloc((size_t)keylen + 1);
    e->plan = PyMem_Malloc((size_t)planlen + 1);
    if (e->key == NULL || e->plan == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(e->key, key, (size_t)keylen);
    memcpy(e->plan, plan, (size_t)planlen);
    e->keylen = keylen;
    e->planlen = planlen;
    return 0;
}

/* _jit_add(key, keep, plan, nargs, overload, kernel, cooperative, lcs_launch): remember
   that arguments of `key` launch `overload`, packed by `plan`, as Kernel `kernel` in its
   context (replacing the one there); lcs_launch, a JitLaunch or None: the overload is only
   for that launch's dimensions.  False when the table is full (nothing kept). */
static PyObject *
jitdispatcher_add(gh_jitdispatcher *self, PyObject *args)
{
    gh_state *st = dispatcher_state((PyObject *)self);
    const char *key, *plan;
    Py_ssize_t keylen, planlen, nargs;
    PyObject *keep, *overload, *kernel, *lcs;
    int cooperative;
    jit_keybuf kb;
    jit_entry *e;
    gh_kernel *k;

    if (!PyArg_ParseTuple(args, "y#O!y#nOO!pO:_jit_add", &key, &keylen, &PyTuple_Type, &keep, &plan,
                          &planlen, &nargs, &overload, st->KernelType, &kernel, &cooperative,
                          &lcs)) {
        return NULL;
    }
    k = (gh_kernel *)kernel;
    if (check_plan(k, (const unsigned char *)plan, planlen, nargs) < 0) {
        return NULL;
    }
    kb.bytes = (unsigned char *)key; /* find_entry reads bytes and n alone */
    kb.n = keylen;
    if ((e = find_entry(self, &kb)) == NULL) {
        if (self->n_entries >= JIT_ENTRIES_MAX) {
            Py_RETURN_FALSE;
        }
        if (self->entries == NULL &&
            (self->entries = PyMem_Calloc(JIT_ENTRIES_MAX, sizeof(jit_entry))) == NULL) {
            return PyErr_NoMemory();
        }
        e = &self->entries[self->n_entries];
        memset(e, 0, sizeof(*e));
        if (entry_set(e, key, keylen, plan, planlen) < 0) {
            entry_clear(e);
            return NULL;
        }
        self->n_entries++;
    }
    else if (e->planlen != planlen || memcmp(e->plan, plan, (size_t)planlen) != 0 ||
             e->overload != overload) {
        entry_clear(e); /* another overload for these types now: start afresh */
        if (entry_set(e, key, keylen, plan, planlen) < 0) {
            memmove(e, e + 1, (size_t)(--self->n_entries - (e - self->entries)) * sizeof(*e));
            return NULL;
        }
    }
    Py_XSETREF(e->keep, Py_NewRef(keep));
    Py_XSETREF(e->overload, Py_NewRef(overload));
    e->nparams = k->nparams;
    e->cooperative = cooperative;
    e->lcs = lcs != Py_None;
    if (e->lcs) {
        if (!Py_IS_TYPE(lcs, st->JitLaunchType)) {
            PyErr_SetString(PyExc_TypeError, "_jit_add(): lcs_launch must be a JitLaunch or None");
            return NULL;
        }
        e->lcs_dims = ((gh_jitlaunch *)lcs)->dims;
        e->lcs_dims.stream = NULL;
    }
    for (int i = 0; i < e->n_kernels; i++) {
        if (e->kernels[i]->module->context == k->module->context) {
            Py_SETREF(e->kernels[i], (gh_kernel *)Py_NewRef(kernel));
            Py_RETURN_TRUE;
        }
    }
    if (e->n_kernels == JIT_CTX_MAX) {
        Py_SETREF(e->kernels[0], e->kernels[--e->n_kernels]);
    }
    e->kernels[e->n_kernels++] = (gh_kernel *)Py_NewRef(kernel);
    Py_RETURN_TRUE;
}

static void
clear_entries(gh_jitdispatcher *self)
{
    for (int i = 0; i < self->n_entries; i++) {
        entry_clear(&self->entries[i]);
    }
    self->n_entries = 0;
}

static PyObject *
jitdispatcher_clear_entries(gh_jitdispatcher *self, PyObject *Py_UNUSED(ignored))
{
    clear_entries(self);
    Py_CLEAR(self->last_key);
    Py_CLEAR(self->last_launch);
    Py_RETURN_NONE;
}

static PyObject *
jitdispatcher_entries(gh_jitdispatcher *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *list = PyList_New(0);
    for (int i = 0; list != NULL && i < self->n_entries; i++) {
        jit_entry *e = &self->entries[i];
        PyObject *item =
            Py_BuildValue("(y#y#Oi)", (const char *)e->key, e->keylen, (const char *)e->plan,
                          e->planlen, e->overload, e->n_kernels);
        if (item == NULL || PyList_Append(list, item) < 0) {
            Py_XDECREF(item);
            Py_CLEAR(list);
        }
        Py_XDECREF(item);
    }
    return list;
}

/* _jit_pack(plan, args, kernel): the parameter bytes a launch of `kernel` would pass for
   `args` by `plan`, as one bytes object (the parameters at their offsets), or None where
   the plan does not take these arguments here.  For tests. */
static PyObject *
jitdispatcher_pack(gh_jitdispatcher *self, PyObject *args)
{
    gh_state *st = dispatcher_state((PyObject *)self);
    const char *plan;
    Py_ssize_t planlen, pos = 0;
    PyObject *argt, *kernel, *res = NULL;
    jit_packer pk;
    jit_keybuf kb;
    jit_views vs;
    gh_kernel *k;
    int ok = 1;

    if (!PyArg_ParseTuple(args, "y#O!O!:_jit_pack", &plan, &planlen, &PyTuple_Type, &argt,
                          st->KernelType, &kernel)) {
        return NULL;
    }
    k = (gh_kernel *)kernel;
    if (k->nparams < 0) {
        return PyErr_Format(PyExc_ValueError, "kernel %R's parameters are not known", k->name);
    }
    pk.buf = PyMem_Calloc(1, k->argsize + (size_t)k->nparams * sizeof(void *) + 16);
    if (pk.buf == NULL) {
        return PyErr_NoMemory();
    }
    pk.ptrs = (void **)(pk.buf + ((k->argsize + 15) & ~(size_t)15));
    pk.params = k->params;
    pk.n = 0;
    pk.nparams = k->nparams;
    pk.array_type = st->DeviceArrayType;
    pk.views = &vs;
    gh_jit_views_init(&vs, st, NULL); /* other libraries' arrays: read as a launch keys them */
    ok = gh_jit_key_args(st, &kb, &PyTuple_GET_ITEM(argt, 0), PyTuple_GET_SIZE(argt), 0, &vs) >= 0;
    gh_jit_keybuf_free(&kb);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(argt) && ok; i++) {
        ok = gh_jit_pack_planned(k, &pk, (const unsigned char *)plan, planlen, &pos,
                                 PyTuple_GET_ITEM(argt, i));
    }
    res = PyErr_Occurred()             ? NULL
          : (ok && pk.n == k->nparams) ? PyBytes_FromStringAndSize(pk.buf, (Py_ssize_t)k->argsize)
                                       : Py_NewRef(Py_None);
    gh_jit_views_free(&vs);
    PyMem_Free(pk.buf);
    return res;
}

static PyObject *
jit_layout(PyObject *module, PyObject *arr)
{
    gh_state *st = gh_state_of_module(module);
    if (!PyObject_TypeCheck(arr, st->DeviceArrayType)) {
        PyErr_SetString(PyExc_TypeError, "_jit_layout() takes a DeviceArray");
        return NULL;
    }
    char c = gh_jit_array_layout((gh_devicearray *)arr);
    return Py_BuildValue("(s#O)", &c, (Py_ssize_t)1,
                         ((gh_devicearray *)arr)->readonly ? Py_True : Py_False);
}

static PyObject *
jit_usable(PyObject *module, PyObject *kernel)
{
    gh_state *st = gh_state_of_module(module);
    gh_module *m;
    if (!PyObject_TypeCheck(kernel, st->KernelType)) {
        PyErr_SetString(PyExc_TypeError, "_jit_usable() takes a Kernel");
        return NULL;
    }
    m = ((gh_kernel *)kernel)->module;
    return PyBool_FromLong(!m->unloaded && m->context->handle != NULL &&
                           m->generation == m->context->generation);
}

/* _jit_context(stream): the Context a launch on `stream` goes to, as launch_kernel picks it;
   where the current context decides and none is current, the one current_context() makes. */
static PyObject *
jit_context(PyObject *module, PyObject *stream)
{
    gh_state *st = gh_state_of_module(module);
    gh_context *ctx = stream_launch_context(st, stream);
    if (ctx != NULL) {
        return Py_NewRef((PyObject *)ctx);
    }
    return (PyObject *)gh_current_context(st, -1);
}

static int
jitdispatcher_init(gh_jitdispatcher *self, PyObject *args, PyObject *kwargs)
{
    (void)args;
    (void)kwargs;
    clear_entries(self);
    return 0;
}

static int
jitdispatcher_traverse(gh_jitdispatcher *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->last_key);
    Py_VISIT(self->last_launch);
    for (int i = 0; i < self->n_entries; i++) {
        jit_entry *e = &self->entries[i];
        Py_VISIT(e->keep);
        Py_VISIT(e->overload);
        for (int j = 0; j < e->n_kernels; j++) {
            Py_VISIT(e->kernels[j]);
        }
    }
    return 0;
}

static int
jitdispatcher_clear(gh_jitdispatcher *self)
{
    clear_entries(self);
    Py_CLEAR(self->last_key);
    Py_CLEAR(self->last_launch);
    return 0;
}

static void
jitdispatcher_dealloc(gh_jitdispatcher *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (self->weakreflist != NULL) {
        PyObject_ClearWeakRefs((PyObject *)self);
    }
    jitdispatcher_clear(self);
    PyMem_Free(self->entries);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyMethodDef jitdispatcher_methods[] = {
    {"_jit_key", (PyCFunction)jitdispatcher_key, METH_O, jitdispatcher__jit_key_doc},
    {"_jit_add", (PyCFunction)jitdispatcher_add, METH_VARARGS, jitdispatcher__jit_add_doc},
    {"_jit_clear", (PyCFunction)jitdispatcher_clear_entries, METH_NOARGS,
     jitdispatcher__jit_clear_doc},
    {"_jit_entries", (PyCFunction)jitdispatcher_entries, METH_NOARGS,
     jitdispatcher__jit_entries_doc},
    {"_jit_pack", (PyCFunction)jitdispatcher_pack, METH_VARARGS, jitdispatcher__jit_pack_doc},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef jitdispatcher_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(gh_jitdispatcher, weakreflist), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot jitdispatcher_slots[] = {
    {Py_tp_doc, (void *)jitdispatcher_doc},
    {Py_tp_methods, jitdispatcher_methods},
    {Py_tp_members, jitdispatcher_members},
    {Py_mp_subscript, jitdispatcher_getitem},
    {Py_tp_init, jitdispatcher_init},
    {Py_tp_traverse, jitdispatcher_traverse},
    {Py_tp_clear, jitdispatcher_clear},
    {Py_tp_dealloc, jitdispatcher_dealloc},
    {0, NULL},
};

static PyType_Spec jitdispatcher_spec = {
    .name = "gpuhost._core.JitDispatcher",
    .basicsize = sizeof(gh_jitdispatcher),
    .flags =
        Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_BASETYPE,
    .slots = jitdispatcher_slots,
};

PyMethodDef gh_jit_methods[] = {
    {"_jit_layout", (PyCFunction)jit_layout, METH_O, jit__jit_layout_doc},
    {"_jit_usable", (PyCFunction)jit_usable, METH_O, jit__jit_usable_doc},
    {"_jit_context", (PyCFunction)jit_context, METH_O, jit__jit_context_doc},
    {NULL, NULL, 0, NULL},
};

int
gh_jit_init_type(PyObject *module, gh_state *st)
{
    st->JitDispatcherType =
        (PyTypeObject *)PyType_FromModuleAndSpec(module, &jitdispatcher_spec, NULL);
    if (st->JitDispatcherType == NULL || PyModule_AddType(module, st->JitDispatcherType) < 0) {
        return -1;
    }
    st->JitLaunchType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &jitlaunch_spec, NULL);
    if (st->JitLaunchType == NULL || PyModule_AddType(module, st->JitLaunchType) < 0) {
        return -1;
    }
    return 0;
}
