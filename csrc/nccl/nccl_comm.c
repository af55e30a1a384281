/* gpuhost._core.NcclCommunicator: one rank of an NCCL communicator on one device: making
 * one (a rank of many processes, init_all, split), its attributes, its end.  The collectives
 * are in nccl_collectives.c.  Calls that can wait (init, destroy) run without the GIL.
 */
#include "nccl_internal.h"

#include "core/core.h"
#include "nccl_comm_docs.h"

#include <stdio.h>
#include <string.h>

static void comm_dealloc(gh_nccl_comm *self);

/* The module state, from the Communicator type or a Python subclass of it (whose own type
   has no module: the state is the C base's). */
static gh_state *
comm_state(PyTypeObject *tp)
{
    return gh_state_of_subclass(tp, (destructor)comm_dealloc);
}

/* ncclCommDestroy (abort = 0) or ncclCommAbort, without the GIL; the handle is gone after
   either, whatever it returned.  A destroy that failed is followed by an abort, which frees
   what the communicator holds; the destroy's result is returned.  A communicator whose
   non-blocking creation is still under way is aborted (NCCL's destroy would wait for it). */
static gh_ncclResult_t
end_comm(gh_nccl_comm *self, int abort)
{
    gh_ncclComm_t comm = self->comm;
    gh_ncclResult_t res, state = GH_ncclSuccess;
    if (self->initializing && gh_nccl.CommGetAsyncError(comm, &state) == GH_ncclSuccess &&
        state == GH_ncclInProgress) {
        abort = 1;
    }
    gh_nccl_regs_end(self);
    gh_nccl_fast_clear(&self->fast);
    self->comm = NULL;
    self->ended = abort ? 2 : 1;
    self->initializing = 0;
    Py_BEGIN_ALLOW_THREADS
    res = abort ? gh_nccl.CommAbort(comm) : gh_nccl.CommDestroy(comm);
    if (!abort && res != GH_ncclSuccess) {
        gh_nccl.CommAbort(comm);
    }
    Py_END_ALLOW_THREADS
    return res;
}

static PyObject *
comm_destroy(gh_nccl_comm *self, PyObject *unused)
{
    gh_ncclResult_t res;
    (void)unused;
    if (self->comm == NULL) {
        Py_RETURN_NONE;
    }
    if ((res = end_comm(self, 0)) != GH_ncclSuccess) {
        return gh_raise_nccl(res, GH_NCCL_CommDestroy, NULL), NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
comm_abort(gh_nccl_comm *self, PyObject *unused)
{
    gh_ncclResult_t res;
    (void)unused;
    if (self->comm == NULL) {
        Py_RETURN_NONE;
    }
    if ((res = end_comm(self, 1)) != GH_ncclSuccess) {
        return gh_raise_nccl(res, GH_NCCL_CommAbort, NULL), NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
comm_check_async_error(gh_nccl_comm *self, PyObject *unused)
{
    gh_ncclResult_t res, async = GH_ncclSuccess;
    (void)unused;
    if (self->comm == NULL) {
        return gh_nccl_comm_live(self, "check_async_error"), NULL;
    }
    res = gh_nccl.CommGetAsyncError(self->comm, &async);
    if (res != GH_ncclSuccess) {
        return gh_raise_nccl(res, GH_NCCL_CommGetAsyncError, self->comm), NULL;
    }
    if (async != GH_ncclSuccess && async != GH_ncclInProgress) {
        return gh_raise_nccl(async, GH_NCCL_CommGetAsyncError, self->comm), NULL;
    }
    if (async == GH_ncclSuccess) {
        self->initializing = 0;
    }
    return PyBool_FromLong(async == GH_ncclInProgress);
}

/* Abort after a failed or timed-out wait for `what` and raise: NcclError for an error state,
   TimeoutError for ncclInProgress after `timeout`. */
static int
abort_and_raise(gh_nccl_comm *self, gh_ncclResult_t state, int query_failed, gh_nccl_id what,
                double timeout)
{
    gh_ncclComm_t comm = self->comm;
    if (state == GH_ncclInProgress) {
        char text[300];
        snprintf(text, sizeof(text),
                 "rank %d of %d: %s did not complete within %g s (a rank that never came or "
                 "died keeps the others waiting); the Communicator was aborted",
                 self->rank, self->size, gh_nccl_name(what), timeout);
        end_comm(self, 1);
        PyErr_SetString(PyExc_TimeoutError, text);
        return -1;
    }
    gh_raise_nccl(state, query_failed ? GH_NCCL_CommGetAsyncError : what, comm);
    {
        PyObject *type, *value, *tb; /* the error raised first is the one the caller sees */
        PyErr_Fetch(&type, &value, &tb);
        end_comm(self, 1);
        PyErr_Restore(type, value, tb);
    }
    return -1;
}

/* Wait (`timeout` seconds at most, < 0: no limit) for the non-blocking creation of `self`. */
static int
wait_created(gh_nccl_comm *self, double timeout, gh_nccl_id what)
{
    gh_ncclResult_t state;
    int rc = gh_nccl_comm_settle(self, timeout, &state);
    if (rc < 0) { /* a signal: the creation stops too */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        end_comm(self, 1);
        PyErr_Restore(type, value, tb);
        return -1;
    }
    if (rc == 0 && state == GH_ncclSuccess) {
        self->initializing = 0;
        return 0;
    }
    return abort_and_raise(self, state, rc == 1, what, timeout);
}

static PyObject *
comm_wait_ready(gh_nccl_comm *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"timeout", NULL};
    PyObject *timeout_o = Py_None;
    double timeout = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:wait_ready", kwlist, &timeout_o)) {
        return NULL;
    }
    if (timeout_o != Py_None &&
        ((timeout = PyFloat_AsDouble(timeout_o)) < 0 || timeout != timeout)) {
        if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_ValueError, "wait_ready(): timeout must be at least 0, not %R",
                         timeout_o);
        }
        return NULL;
    }
    if (self->comm == NULL) {
        return gh_nccl_comm_live(self, "wait_ready"), NULL;
    }
    if (self->initializing && wait_created(self, timeout, GH_NCCL_CommInitRankConfig) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static void
comm_dealloc(gh_nccl_comm *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (self->comm != NULL) {
        PyObject *type, *value, *tb; /* dropped while an exception is being raised */
        gh_ncclResult_t res;
        PyErr_Fetch(&type, &value, &tb);
        res = end_comm(self, 0);
        if (res != GH_ncclSuccess && PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                                                      "ncclCommDestroy failed (%d) for a dropped "
                                                      "Communicator",
                                                      (int)res) < 0) {
            PyErr_WriteUnraisable((PyObject *)self);
        }
        PyErr_Restore(type, value, tb);
    }
    gh_nccl_fast_clear(&self->fast);
    Py_CLEAR(self->context);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

/* ---- making communicators ---- */

/* A Communicator object of type `tp` (whose module state is `st`) over `comm` (taken over:
   destroyed on failure) on ctx's device; its rank and size asked of NCCL, unless `rank` is at
   least 0 (a creation still under way, which cannot answer yet: the caller's are then
   kept). */
static PyObject *
wrap_comm(gh_state *st, PyTypeObject *tp, gh_ncclComm_t comm, gh_context *ctx, int rank, int size)
{
    gh_nccl_comm *self = (gh_nccl_comm *)tp->tp_alloc(tp, 0);
    gh_ncclResult_t res;
    if (self == NULL) {
        Py_BEGIN_ALLOW_THREADS
        gh_nccl.CommAbort(comm);
        Py_END_ALLOW_THREADS
        return NULL;
    }
    self->st = st;
    self->comm = comm;
    self->context = (gh_context *)Py_NewRef((PyObject *)ctx);
    self->device = ctx->device->id;
    self->rank = rank;
    self->size = size;
    if (rank >= 0) {
        return (PyObject *)self;
    }
    if ((res = gh_nccl.CommUserRank(comm, &self->rank)) != GH_ncclSuccess) {
        gh_raise_nccl(res, GH_NCCL_CommUserRank, comm);
        Py_DECREF(self);
        return NULL;
    }
    if ((res = gh_nccl.CommCount(comm, &self->size)) != GH_ncclSuccess) {
        gh_raise_nccl(res, GH_NCCL_CommCount, comm);
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static int
parse_unique_id(PyObject *obj, gh_ncclUniqueId *id)
{
    Py_buffer view;
    if (!PyObject_CheckBuffer(obj) || PyUnicode_Check(obj)) {
        PyErr_Format(PyExc_TypeError,
                     "unique_id must be the 128 bytes of get_unique_id(), not %.100s",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0) {
        return -1;
    }
    if (view.len != GH_NCCL_UNIQUE_ID_BYTES) {
        PyErr_Format(PyExc_ValueError,
                     "unique_id must be the %d bytes of get_unique_id(); this one has %zd",
                     GH_NCCL_UNIQUE_ID_BYTES, view.len);
        PyBuffer_Release(&view);
        return -1;
    }
    memcpy(id->internal, view.buf, GH_NCCL_UNIQUE_ID_BYTES);
    PyBuffer_Release(&view);
    return 0;
}

/* A config asking for `split_share` (None: NCCL's default, *use = 0) and `blocking` (-1:
   NCCL's default; 0 or 1 sets *use). */
static int
make_config(PyObject *split_share, int blocking, gh_ncclConfig_t *config, int *use)
{
    *config = (gh_ncclConfig_t){
        .size = sizeof(gh_ncclConfig_t),
        .magic = GH_NCCL_CONFIG_MAGIC,
        .version = GH_NCCL_CONFIG_VERSION,
        .blocking = GH_NCCL_CONFIG_UNDEF_INT,
        .cgaClusterSize = GH_NCCL_CONFIG_UNDEF_INT,
        .minCTAs = GH_NCCL_CONFIG_UNDEF_INT,
        .maxCTAs = GH_NCCL_CONFIG_UNDEF_INT,
        .netName = NULL,
        .splitShare = GH_NCCL_CONFIG_UNDEF_INT,
    };
    *use = split_share != NULL && split_share != Py_None;
    if (blocking >= 0) {
        config->blocking = blocking;
        *use = 1;
    }
    if (split_share != NULL && split_share != Py_None) {
        int v = PyObject_IsTrue(split_share);
        if (v < 0) {
            return -1;
        }
        config->splitShare = v;
    }
    return 0;
}

/* The Context of device argument `obj` (None: the current device), a new reference. */
static gh_context *
rank_context(gh_state *st, PyObject *obj)
{
    gh_device *dev;
    gh_context *ctx;
    if (obj == NULL || obj == Py_None) {
        return gh_current_context(st, -1);
    }
    if ((dev = gh_device_from_object(st, obj, "device")) == NULL ||
        (ctx = gh_context_of(st, dev)) == NULL) {
        return NULL;
    }
    return (gh_context *)Py_NewRef((PyObject *)ctx);
}

/* Split `self` into one communicator of the same ranks, left in self->child: NCCL's own way
   to turn a non-blocking communicator (whose creation could be bounded in time) into a
   blocking one, whose collectives are NCCL's fast path (a non-blocking communicator's run
   each group on a thread of NCCL's).  Waits `timeout` seconds at most (< 0: no limit). */
static int
split_blocking(gh_nccl_comm *self, double timeout)
{
    gh_ncclConfig_t config;
    gh_ncclComm_t parent = self->comm;
    gh_ncclResult_t res;
    int use, pushed;
    if (make_config(NULL, 1, &config, &use) < 0 || gh_context_enter(self->context, &pushed) < 0) {
        return -1;
    }
    self->child = NULL;
    Py_BEGIN_ALLOW_THREADS
    res = gh_nccl.CommSplit(parent, 0, self->rank, &self->child, &config);
    Py_END_ALLOW_THREADS
    if (gh_context_leave(self->context, pushed) < 0) {
        return -1;
    }
    if (res != GH_ncclSuccess && res != GH_ncclInProgress) {
        return abort_and_raise(self, res, 0, GH_NCCL_CommSplit, timeout);
    }
    self->initializing = 1; /* the parent's state now tells the split's */
    if (wait_created(self, timeout, GH_NCCL_CommSplit) < 0) {
        return -1;
    }
    if (self->child == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "ncclCommSplit made no communicator");
        end_comm(self, 1);
        return -1;
    }
    self->comm = self->child; /* the parent served its purpose */
    self->child = NULL;
    self->nonblocking = 0;
    Py_BEGIN_ALLOW_THREADS
    if (gh_nccl.CommDestroy(parent) != GH_ncclSuccess) {
        gh_nccl.CommAbort(parent);
    }
    Py_END_ALLOW_THREADS
    return 0;
}

/* ncclCommInitRank, or ncclCommInitRankConfig where a config is asked for; without the GIL,
   with ctx current.  -1 with an error, or 0 with *res NCCL's answer. */
static int
init_rank(gh_context *ctx, gh_ncclComm_t *comm, int nranks, gh_ncclUniqueId id, int rank,
          gh_ncclConfig_t *config, gh_ncclResult_t *res)
{
    int pushed;
    if (gh_context_enter(ctx, &pushed) < 0) {
        return -1;
    }
    Py_BEGIN_ALLOW_THREADS
    *res = config ? gh_nccl.CommInitRankConfig(comm, nranks, id, rank, config)
                  : gh_nccl.CommInitRank(comm, nranks, id, rank);
    Py_END_ALLOW_THREADS
    return gh_context_leave(ctx, pushed);
}

static PyObject *
comm_new(PyTypeObject *tp, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"nranks",      "unique_id", "rank",    "device",
                             "split_share", "blocking",  "timeout", NULL};
    gh_state *st = comm_state(tp);
    PyObject *id_o, *device_o = Py_None, *split_o = Py_None, *timeout_o = Py_None, *out = NULL;
    int nranks, rank, use_config, blocking = 1, nonblocking_init;
    double timeout = -1;
    gh_ncclUniqueId id;
    gh_ncclConfig_t config;
    gh_ncclComm_t comm = NULL;
    gh_ncclResult_t res;
    gh_context *ctx;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iOi|O$OpO:Communicator", kwlist, &nranks, &id_o,
                                     &rank, &device_o, &split_o, &blocking, &timeout_o)) {
        return NULL;
    }
    if (nranks < 1) {
        PyErr_Format(PyExc_ValueError, "nranks must be at least 1, not %d", nranks);
        return NULL;
    }
    if (rank < 0 || rank >= nranks) {
        PyErr_Format(PyExc_ValueError, "rank %d is not in 0 to %d (nranks %d)", rank, nranks - 1,
                     nranks);
        return NULL;
    }
    if (timeout_o != Py_None &&
        ((timeout = PyFloat_AsDouble(timeout_o)) < 0 || timeout != timeout)) {
        if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_ValueError, "timeout must be at least 0 seconds, not %R", timeout_o);
        }
        return NULL;
    }
    nonblocking_init = !blocking || timeout_o != Py_None;
    if (parse_unique_id(id_o, &id) < 0 ||
        make_config(split_o, nonblocking_init ? 0 : -1, &config, &use_config) < 0 ||
        gh_nccl_ensure() < 0 || (ctx = rank_context(st, device_o)) == NULL) {
        return NULL;
    }
    if (init_rank(ctx, &comm, nranks, id, rank, use_config ? &config : NULL, &res) == 0) {
        if (res != GH_ncclSuccess && !(nonblocking_init && res == GH_ncclInProgress)) {
            gh_raise_nccl(res, use_config ? GH_NCCL_CommInitRankConfig : GH_NCCL_CommInitRank,
                          comm);
            if (comm != NULL) {
                Py_BEGIN_ALLOW_THREADS
                gh_nccl.CommAbort(comm);
                Py_END_ALLOW_THREADS
            }
        }
        else {
            out = wrap_comm(st, tp, comm, ctx, nonblocking_init ? rank : -1, nranks);
        }
    }
    Py_DECREF(ctx);
    if (out != NULL && nonblocking_init) {
        gh_nccl_comm *self = (gh_nccl_comm *)out;
        double start = gh_nccl_now();
        self->nonblocking = self->initializing = 1;
        if (blocking || timeout >= 0) { /* wait for it; then, blocking, make it so */
            if (wait_created(self, timeout, GH_NCCL_CommInitRankConfig) < 0 ||
                (blocking && split_blocking(self, timeout < 0 ? -1
                                                  : timeout - (gh_nccl_now() - start) > 0
                                                      ? timeout - (gh_nccl_now() - start)
                                                      : 0) < 0)) {
                Py_CLEAR(out);
            }
        }
    }
    return out;
}

/* The device list of init_all(devices): an int n (devices 0 to n-1) or a sequence of
   devices (ordinals or Devices), each once; PyMem_Malloc'd, *n set. */
static int *
device_list(gh_state *st, PyObject *devices, int *n)
{
    PyObject *seq;
    int *list;
    if (PyLong_Check(devices)) {
        long count = PyLong_AsLong(devices);
        if (count == -1 && PyErr_Occurred()) {
            return NULL;
        }
        if (count < 1 || count > gh_device_count()) {
            if (!PyErr_Occurred()) {
                PyErr_Format(PyExc_ValueError, "init_all(%ld): there are %d devices", count,
                             gh_device_count());
            }
            return NULL;
        }
        if ((list = PyMem_Calloc((size_t)count, sizeof(int))) == NULL) {
            return (int *)PyErr_NoMemory();
        }
        for (long i = 0; i < count; i++) {
            list[i] = (int)i;
        }
        *n = (int)count;
        return list;
    }
    if ((seq = PySequence_Fast(devices, "init_all(devices): devices must be a number of "
                                        "devices or a list of devices")) == NULL) {
        return NULL;
    }
    *n = (int)PySequence_Fast_GET_SIZE(seq);
    list = *n > 0 ? PyMem_Calloc((size_t)*n, sizeof(int)) : NULL;
    if (*n == 0) {
        PyErr_SetString(PyExc_ValueError, "init_all(devices): the list of devices is empty");
    }
    else if (list == NULL) {
        PyErr_NoMemory();
    }
    for (int i = 0; list != NULL && i < *n; i++) {
        gh_device *dev = gh_device_from_object(st, PySequence_Fast_GET_ITEM(seq, i), "devices");
        for (int j = 0; dev != NULL && j < i; j++) {
            if (list[j] == dev->id) {
                PyErr_Format(PyExc_ValueError,
                             "init_all(devices): device %d appears twice; NCCL puts one rank "
                             "on each device",
                             dev->id);
                dev = NULL;
            }
        }
        if (dev == NULL) {
            PyMem_Free(list);
            list = NULL;
        }
        else {
            list[i] = dev->id;
        }
    }
    Py_DECREF(seq);
    return list;
}

static PyObject *
comm_init_all(PyTypeObject *tp, PyObject *devices)
{
    gh_state *st = comm_state(tp);
    gh_ncclComm_t *comms = NULL;
    gh_ncclResult_t res;
    PyObject *out = NULL;
    int n = 0, *list;
    if (gh_nccl_ensure() < 0 || (list = device_list(st, devices, &n)) == NULL) {
        return NULL;
    }
    for (int i = 0; i < n; i++) { /* each device's primary context, retained for NCCL */
        gh_device *dev = gh_device_get(st, list[i]);
        gh_context *ctx = dev ? gh_context_of(st, dev) : NULL;
        if (ctx == NULL || gh_context_activate(ctx) < 0) {
            goto done;
        }
    }
    if ((comms = PyMem_Calloc((size_t)n, sizeof(gh_ncclComm_t))) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    res = gh_nccl.CommInitAll(comms, n, list);
    Py_END_ALLOW_THREADS
    if (res != GH_ncclSuccess) {
        gh_raise_nccl(res, GH_NCCL_CommInitAll, NULL);
        goto done;
    }
    if ((out = PyList_New(n)) == NULL) {
        goto done; /* the comms leak: nothing to wrap them in */
    }
    for (int i = 0; i < n; i++) {
        gh_context *ctx = gh_context_of(st, gh_device_get(st, list[i]));
        PyObject *c = wrap_comm(st, tp, comms[i], ctx, -1, 0);
        comms[i] = NULL;
        if (c == NULL) {
            for (int j = i + 1; j < n; j++) {
                Py_BEGIN_ALLOW_THREADS
                gh_nccl.CommDestroy(comms[j]);
                Py_END_ALLOW_THREADS
            }
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, c);
    }
done:
    PyMem_Free(comms);
    PyMem_Free(list);
    return out;
}

static PyObject *
comm_split(gh_nccl_comm *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"color", "key", "split_share", NULL};
    PyObject *split_o = Py_None;
    int color, key, use_config, pushed;
    gh_ncclConfig_t config;
    gh_ncclResult_t res;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "ii|$O:split", kwlist, &color, &key, &split_o) ||
        gh_nccl_comm_live(self, "split") < 0 ||
        make_config(split_o, -1, &config, &use_config) < 0) {
        return NULL;
    }
    if (color < -1) {
        PyErr_Format(PyExc_ValueError,
                     "split(): color must be -1 (no new communicator) or at "
                     "least 0, not %d",
                     color);
        return NULL;
    }
    if (gh_context_enter(self->context, &pushed) < 0) {
        return NULL;
    }
    self->child = NULL;
    Py_BEGIN_ALLOW_THREADS
    res = gh_nccl.CommSplit(self->comm, color, key, &self->child, use_config ? &config : NULL);
    Py_END_ALLOW_THREADS
    if (gh_context_leave(self->context, pushed) < 0) {
        return NULL;
    }
    /* A non-blocking parent splits on a thread of NCCL's: ncclCommSplit answers ncclSuccess
       (or, in some versions, ncclInProgress) with *newcomm still NULL, and the parent's state
       says when the child is written. */
    if (self->nonblocking && (res == GH_ncclSuccess || res == GH_ncclInProgress)) {
        int rc = gh_nccl_comm_settle(self, -1, &res);
        if (rc < 0) {
            return NULL;
        }
        if (rc == 1) {
            return gh_raise_nccl(res, GH_NCCL_CommGetAsyncError, self->comm), NULL;
        }
    }
    if (res != GH_ncclSuccess) {
        return gh_raise_nccl(res, GH_NCCL_CommSplit, self->comm), NULL;
    }
    if (self->child == NULL) {
        Py_RETURN_NONE;
    }
    {
        gh_ncclComm_t child = self->child;
        PyObject *out;
        self->child = NULL;
        out = wrap_comm(self->st, Py_TYPE(self), child, self->context, -1, 0);
        if (out != NULL) { /* the child has the parent's config, blocking or not */
            ((gh_nccl_comm *)out)->nonblocking = self->nonblocking;
        }
        return out;
    }
}

/* ---- attributes ---- */

static PyObject *
comm_get_device(gh_nccl_comm *self, void *closure)
{
    (void)closure;
    return Py_NewRef((PyObject *)self->context->device);
}

static PyObject *
comm_get_handle(gh_nccl_comm *self, void *closure)
{
    (void)closure;
    return PyLong_FromVoidPtr(self->comm);
}

static PyObject *
comm_get_closed(gh_nccl_comm *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(self->comm == NULL);
}

static PyObject *
comm_repr(gh_nccl_comm *self)
{
    return PyUnicode_FromFormat("<gpuhost.nccl.Communicator rank %d of %d on device %d%s>",
                                self->rank, self->size, self->device,
                                self->ended == 1     ? ", destroyed"
                                : self->ended == 2   ? ", aborted"
                                : self->initializing ? ", being created"
                                                     : "");
}

static PyMemberDef comm_members[] = {
    {"rank", T_INT, offsetof(gh_nccl_comm, rank), READONLY, comm_rank_doc},
    {"size", T_INT, offsetof(gh_nccl_comm, size), READONLY, comm_size_doc},
    {"_fast_calls", T_PYSSIZET, offsetof(gh_nccl_comm, fast_calls), READONLY,
     "How many all_reduce calls took the fast path (the same arguments as the last)."},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef comm_getset[] = {
    {"device", (getter)comm_get_device, NULL, comm_device_doc, NULL},
    {"handle", (getter)comm_get_handle, NULL, comm_handle_doc, NULL},
    {"closed", (getter)comm_get_closed, NULL, comm_closed_doc, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

#define KW   (METH_VARARGS | METH_KEYWORDS)
#define FAST (METH_FASTCALL | METH_KEYWORDS)
static PyMethodDef comm_methods[] = {
    {"all_reduce", (PyCFunction)(void (*)(void))gh_nccl_all_reduce, FAST, comm_all_reduce_doc},
    {"reduce", (PyCFunction)(void (*)(void))gh_nccl_reduce, FAST, comm_reduce_doc},
    {"broadcast", (PyCFunction)(void (*)(void))gh_nccl_broadcast, FAST, comm_broadcast_doc},
    {"all_gather", (PyCFunction)(void (*)(void))gh_nccl_all_gather, FAST, comm_all_gather_doc},
    {"reduce_scatter", (PyCFunction)(void (*)(void))gh_nccl_reduce_scatter, FAST,
     comm_reduce_scatter_doc},
    {"send", (PyCFunction)(void (*)(void))gh_nccl_send, FAST, comm_send_doc},
    {"recv", (PyCFunction)(void (*)(void))gh_nccl_recv, FAST, comm_recv_doc},
    {"all_to_all", (PyCFunction)(void (*)(void))gh_nccl_all_to_all, FAST, comm_all_to_all_doc},
    {"_raw", (PyCFunction)gh_nccl_raw, METH_VARARGS, comm__raw_doc},
    {"split", (PyCFunction)(void (*)(void))comm_split, KW, comm_split_doc},
    {"check_async_error", (PyCFunction)comm_check_async_error, METH_NOARGS,
     comm_check_async_error_doc},
    {"wait_ready", (PyCFunction)(void (*)(void))comm_wait_ready, KW, comm_wait_ready_doc},
    {"register", (PyCFunction)gh_nccl_register, METH_O, comm_register_doc},
    {"abort", (PyCFunction)comm_abort, METH_NOARGS, comm_abort_doc},
    {"destroy", (PyCFunction)comm_destroy, METH_NOARGS, comm_destroy_doc},
    {"init_all", (PyCFunction)comm_init_all, METH_O | METH_CLASS, comm_init_all_doc},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot comm_slots[] = {
    {Py_tp_doc, (void *)comm_doc}, {Py_tp_new, comm_new},
    {Py_tp_dealloc, comm_dealloc}, {Py_tp_repr, comm_repr},
    {Py_tp_members, comm_members}, {Py_tp_getset, comm_getset},
    {Py_tp_methods, comm_methods}, {0, NULL},
};

static PyType_Spec comm_spec = {
    .name = "gpuhost._core.NcclCommunicator",
    .basicsize = sizeof(gh_nccl_comm),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_BASETYPE,
    .slots = comm_slots,
};

int
gh_nccl_comm_init_type(PyObject *module, gh_state *st)
{
    st->NcclCommType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &comm_spec, NULL);
    if (st->NcclCommType == NULL) {
        return -1;
    }
    return PyModule_AddObjectRef(module, "NcclCommunicator", (PyObject *)st->NcclCommType);
}
