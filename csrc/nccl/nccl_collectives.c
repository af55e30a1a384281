/* The collectives of gpuhost._core.NcclCommunicator (nccl_comm.c): buffer arguments resolved
 * and checked, then NCCL called without the GIL.
 *
 * Buffers are DeviceArrays; anything else that exports the CUDA array interface or DLPack
 * is viewed as one first (foreign_buffer(), which orders the call's stream after the
 * exporter's).  Every check (device, layout, dtype, counts, ranks, stream) is made before
 * NCCL is called; NCCL's own errors become NcclError with ncclGetLastError's text.  An
 * all_reduce called again with the very same arguments skips the checks it passed (the fast
 * path: no Python between the call and ncclAllReduce).  On a stream capturing into a graph,
 * the arrays are kept alive by the graph.
 */

#include "nccl_internal.h"
#include "core/core.h"
#include "arrays/arrays.h"

#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL gh_ARRAY_API
#include <numpy/arrayobject.h>

#include <limits.h>
#include <string.h>

enum { LAYOUT_C = 1, LAYOUT_F = 2 };

/* A resolved buffer argument. */
typedef struct {
    gh_devicearray *a; /* strong */
    size_t count;      /* elements */
    size_t itemsize;
    int layout; /* LAYOUT_C | LAYOUT_F bits */
} nbuf;

/* One NCCL call, made without the GIL. */
typedef struct {
    gh_nccl_id id;
    const void *send;
    void *recv;
    size_t count;
    int dtype, op, root; /* root: the peer for Send/Recv */
} ncall;

/* ---- arguments ---- */

static int
layout_of(const gh_devicearray *a, size_t itemsize)
{
    int layout = LAYOUT_C | LAYOUT_F;
    Py_ssize_t expect = (Py_ssize_t)itemsize;
    if (a->ndim == 0 || (a->ndim == 1 && (a->strides[0] == expect || a->shape[0] <= 1))) {
        return layout;
    }
    for (int i = a->ndim - 1; i >= 0; i--) { /* C order: the last axis moves fastest */
        if (a->shape[i] == 0) {
            return LAYOUT_C | LAYOUT_F;
        }
        if (a->shape[i] != 1 && a->strides[i] != expect) {
            layout &= ~LAYOUT_C;
        }
        expect *= a->shape[i];
    }
    expect = (Py_ssize_t)itemsize;
    for (int i = 0; i < a->ndim; i++) {
        if (a->shape[i] != 1 && a->strides[i] != expect) {
            layout &= ~LAYOUT_F;
        }
        expect *= a->shape[i];
    }
    return layout;
}

/* A DeviceArray over a buffer argument `obj` that is another library's device array,
   with the call's stream ordered after its exporter's (csrc/interop.c reads it); a new
   reference, or NULL with TypeError naming `what` of `call`.  The one place foreign
   buffers are resolved. */
static gh_devicearray *
foreign_buffer(gh_state *st, PyObject *obj, PyObject *stream, const char *call, const char *what)
{
    return (gh_devicearray *)gh_foreign_device_array(st, obj, stream, call, what);
}

/* Resolve buffer argument `obj` (named `what` in messages of `call`) into *out. */
static int
get_buffer(gh_state *st, gh_nccl_comm *self, PyObject *obj, PyObject *stream, const char *call,
           const char *what, int writable, nbuf *out)
{
    gh_devicearray *a;
    out->a = NULL;
    if (PyObject_TypeCheck(obj, st->DeviceArrayType)) {
        Py_INCREF(obj);
        out->a = (gh_devicearray *)obj;
    }
    else if ((out->a = foreign_buffer(st, obj, stream, call, what)) == NULL) {
        return -1;
    }
    a = out->a;
    if ((a->generation != a->context->generation || a->context->handle == NULL) &&
        gh_context_check_alive(a->context, a->generation, GH_CU_LaunchKernel) < 0) {
        goto fail;
    }
    if (a->context->device->id != self->device) {
        PyErr_Format(PyExc_ValueError,
                     "%s(): %s is memory of device %d; this Communicator's rank %d is on "
                     "device %d",
                     call, what, a->context->device->id, self->rank, self->device);
        goto fail;
    }
    out->itemsize = (size_t)PyDataType_ELSIZE((PyArray_Descr *)a->dtype);
    out->count = 1;
    for (int i = 0; i < a->ndim; i++) {
        out->count *= (size_t)a->shape[i];
    }
    out->layout = layout_of(a, out->itemsize);
    if (out->layout == 0) {
        PyErr_Format(PyExc_ValueError,
                     "%s(): %s is not contiguous; NCCL reads and writes one block of memory "
                     "(pass a contiguous copy)",
                     call, what);
        goto fail;
    }
    if (writable && a->readonly) {
        PyErr_Format(PyExc_ValueError, "%s(): %s is read-only memory", call, what);
        goto fail;
    }
    return 0;
fail:
    Py_CLEAR(out->a);
    return -1;
}

static void
nbuf_clear(nbuf *b)
{
    Py_CLEAR(b->a);
}

/* The dtype's name for messages (new reference). */
static PyObject *
dtype_str(gh_devicearray *a)
{
    return PyObject_Str((PyObject *)a->dtype);
}

/* send and recv hold the same dtype, and `recv` has `want` elements. */
static int
check_pair(const char *call, nbuf *send, nbuf *recv, size_t want, const char *rule)
{
    PyArray_Descr *sd = (PyArray_Descr *)send->a->dtype, *rd = (PyArray_Descr *)recv->a->dtype;
    if (!PyArray_EquivTypes(sd, rd)) {
        PyObject *s = dtype_str(send->a), *r = dtype_str(recv->a);
        if (s != NULL && r != NULL) {
            PyErr_Format(PyExc_ValueError, "%s(): send holds %S and recv holds %S; they must match",
                         call, s, r);
        }
        Py_XDECREF(s);
        Py_XDECREF(r);
        return -1;
    }
    if (recv->count != want) {
        PyErr_Format(PyExc_ValueError, "%s(): recv has %zu elements; it needs %zu (%s)", call,
                     recv->count, want, rule);
        return -1;
    }
    if (send->a->ndim > 1 && recv->a->ndim > 1 && (send->layout & recv->layout) == 0) {
        PyErr_Format(PyExc_ValueError,
                     "%s(): send and recv are in different memory orders (one C, one Fortran); "
                     "NCCL pairs their elements in memory order",
                     call);
        return -1;
    }
    return 0;
}

static int
check_rank(gh_nccl_comm *self, const char *call, const char *what, int r)
{
    if (r >= 0 && r < self->size) {
        return 0;
    }
    PyErr_Format(PyExc_ValueError, "%s(): %s %d is not a rank of this communicator (0 to %d)", call,
                 what, r, self->size - 1);
    return -1;
}

/* The stream= argument, which must be on the Communicator's device (CudaDriverError, as every
   stream of another device is). */
static int
get_stream(gh_state *st, gh_nccl_comm *self, const char *call, PyObject *obj, CUstream *out)
{
    gh_stream_ref ref;
    if (gh_stream_resolve(st, obj, &ref) < 0) {
        return -1;
    }
    if (!ref.is_default && ref.context != NULL && ref.context->device->id != self->device &&
        gh_stream_check_device(ref.context, self->context, "%s(): this Communicator's rank %d is",
                               call, self->rank) < 0) {
        return -1;
    }
    *out = ref.handle;
    return 0;
}

/* A new array for a result: gpuhost.nccl's nccl_empty helper (shape, like, device, stream). */
static int
new_result(gh_state *st, gh_nccl_comm *self, PyObject *shape, nbuf *like, PyObject *stream,
           const char *call, nbuf *out)
{
    PyObject *args = Py_BuildValue("(NOiO)", shape, (PyObject *)like->a, self->device,
                                   stream ? stream : Py_None);
    PyObject *arr = args ? gh_helper_call(st, GH_HELPER_NCCL_EMPTY, args) : NULL;
    int rc;
    Py_XDECREF(args);
    if (arr == NULL) {
        return -1;
    }
    rc = get_buffer(st, self, arr, stream, call, "recv", 1, out);
    Py_DECREF(arr);
    return rc;
}

/* like's shape as a tuple, its first axis multiplied by `mul` and divided by `div`
   (a flat shape where the first axis does not divide). */
static PyObject *
scaled_shape(nbuf *like, Py_ssize_t mul, Py_ssize_t div, int prepend)
{
    gh_devicearray *a = like->a;
    PyObject *t;
    if (prepend) {
        t = PyTuple_New(a->ndim + 1);
        if (t != NULL) {
            PyTuple_SET_ITEM(t, 0, PyLong_FromSsize_t(mul));
            for (int i = 0; i < a->ndim; i++) {
                PyTuple_SET_ITEM(t, i + 1, PyLong_FromSsize_t(a->shape[i]));
            }
        }
        return t;
    }
    if (a->ndim == 0 || a->shape[0] % div != 0) {
        return Py_BuildValue("(n)", (Py_ssize_t)(like->count / (size_t)div));
    }
    t = PyTuple_New(a->ndim);
    if (t != NULL) {
        for (int i = 0; i < a->ndim; i++) {
            PyTuple_SET_ITEM(t, i, PyLong_FromSsize_t(i == 0 ? a->shape[0] / div : a->shape[i]));
        }
    }
    return t;
}

static PyObject *
or_none(PyObject *obj)
{
    return obj ? obj : Py_None;
}

/* ---- calling NCCL ---- */

static gh_ncclResult_t
call_one(gh_ncclComm_t comm, const ncall *c, CUstream s)
{
    switch (c->id) {
        case GH_NCCL_AllReduce:
            return gh_nccl.AllReduce(c->send, c->recv, c->count, c->dtype, c->op, comm, s);
        case GH_NCCL_Reduce:
            return gh_nccl.Reduce(c->send, c->recv, c->count, c->dtype, c->op, c->root, comm, s);
        case GH_NCCL_Broadcast:
            return gh_nccl.Broadcast(c->send, c->recv, c->count, c->dtype, c->root, comm, s);
        case GH_NCCL_AllGather:
            return gh_nccl.AllGather(c->send, c->recv, c->count, c->dtype, comm, s);
        case GH_NCCL_ReduceScatter:
            return gh_nccl.ReduceScatter(c->send, c->recv, c->count, c->dtype, c->op, comm, s);
        case GH_NCCL_Send:
            return gh_nccl.Send(c->send, c->count, c->dtype, c->root, comm, s);
        case GH_NCCL_Recv:
            return gh_nccl.Recv(c->recv, c->count, c->dtype, c->root, comm, s);
        default:
            return GH_ncclInternalError;
    }
}

/* Make the n calls (n > 1: as one group) on `stream` with the rank's context current. */
static int
run_calls(gh_nccl_comm *self, const ncall *calls, int n, CUstream stream)
{
    gh_ncclResult_t res = GH_ncclSuccess, end = GH_ncclSuccess;
    gh_nccl_id failed = calls[0].id;
    int pushed;
    if (gh_context_enter(self->context, &pushed) < 0) {
        return -1;
    }
    Py_BEGIN_ALLOW_THREADS
    if (n > 1) {
        res = gh_nccl.GroupStart();
        failed = GH_NCCL_GroupStart;
    }
    for (int i = 0; i < n && res == GH_ncclSuccess; i++) {
        res = call_one(self->comm, &calls[i], stream);
        failed = calls[i].id;
    }
    if (n > 1) { /* ends the group even after a failed call, so it does not stay open */
        end = gh_nccl.GroupEnd();
        if (res == GH_ncclSuccess && end != GH_ncclSuccess) {
            res = end;
            failed = GH_NCCL_GroupEnd;
        }
    }
    Py_END_ALLOW_THREADS
    if (gh_context_leave(self->context, pushed) < 0) {
        return -1;
    }
    if (res == GH_ncclInProgress && self->nonblocking) { /* NCCL goes on on a thread */
        int rc = gh_nccl_comm_settle(self, -1, &res);
        if (rc < 0) {
            return -1;
        }
        failed = rc == 1 ? GH_NCCL_CommGetAsyncError : failed;
    }
    return res == GH_ncclSuccess ? 0 : gh_raise_nccl(res, failed, self->comm);
}

/* Where `stream_o` is a gpuhost Stream capturing into a graph, the graph keeps the buffers
   alive (its replays read and write them). */
static int
keep_for_capture(gh_state *st, PyObject *stream_o, nbuf *s, nbuf *r)
{
    PyObject *keep;
    if (stream_o == NULL || !Py_IS_TYPE(stream_o, st->StreamType) ||
        (keep = ((gh_stream *)stream_o)->capture) == NULL) {
        return 0;
    }
    if (s->a != NULL && PyList_Append(keep, (PyObject *)s->a) < 0) {
        return -1;
    }
    return r->a != NULL && r->a != s->a ? PyList_Append(keep, (PyObject *)r->a) : 0;
}

/* ---- the collectives ---- */

/* The recv argument of a collective whose recv holds as many elements as send: None (a new
   array shaped as send, or none when `make` is 0), send itself (in place), or a buffer
   checked against send. */
static int
get_recv_like_send(gh_state *st, gh_nccl_comm *self, PyObject *recv_o, PyObject *send_o,
                   PyObject *stream_o, const char *call, int make, nbuf *s, nbuf *r)
{
    if (recv_o == Py_None) {
        PyObject *shape;
        if (!make) {
            return 0;
        }
        shape = PyObject_GetAttrString((PyObject *)s->a, "shape");
        return shape ? new_result(st, self, shape, s, stream_o, call, r) : -1;
    }
    if (recv_o == send_o) { /* in place */
        if (s->a->readonly) {
            PyErr_Format(PyExc_ValueError, "%s(): recv is read-only memory", call);
            return -1;
        }
        *r = *s;
        Py_INCREF(r->a);
        return 0;
    }
    if (get_buffer(st, self, recv_o, stream_o, call, "recv", 1, r) < 0) {
        return -1;
    }
    return check_pair(call, s, r, s->count, "as many as send");
}

/* Make call c from send's address to recv's (none: send's) on `stream` (the argument
   `stream_o`), clear both buffers, and return recv (None when there is none), or NULL with
   the error. */
static PyObject *
finish(gh_nccl_comm *self, ncall *c, nbuf *s, nbuf *r, PyObject *stream_o, CUstream stream)
{
    PyObject *out = NULL;
    c->send = (const void *)s->a->ptr;
    c->recv = (void *)(r->a ? r->a : s->a)->ptr; /* Reduce: not written outside the root */
    if (keep_for_capture(self->st, stream_o, s, r) == 0 && run_calls(self, c, 1, stream) == 0) {
        out = Py_NewRef(r->a ? (PyObject *)r->a : Py_None);
    }
    nbuf_clear(s);
    nbuf_clear(r);
    return out;
}

/* Clear both buffers; NULL (an error is set). */
static PyObject *
fail2(nbuf *s, nbuf *r)
{
    nbuf_clear(s);
    nbuf_clear(r);
    return NULL;
}

/* ---- the fast path of all_reduce ---- */

void
gh_nccl_fast_clear(gh_nccl_fast *f)
{
    for (int i = 0; i < f->n; i++) {
        Py_CLEAR(f->items[i]);
    }
    Py_CLEAR(f->kwnames);
    f->n = 0;
}

/* What a kept argument refers to (borrowed; only compared with the arguments, which hold
   it alive when it is one of them). */
static PyObject *
kept(const gh_nccl_fast *f, int i)
{
    PyObject *obj;
    if (!f->weak[i]) {
        return f->items[i];
    }
#if PY_VERSION_HEX >= 0x030D0000
    if (PyWeakref_GetRef(f->items[i], &obj) <= 0) {
        PyErr_Clear();
        return NULL;
    }
    Py_DECREF(obj);
#else
    obj = PyWeakref_GET_OBJECT(f->items[i]);
#endif
    return obj;
}

/* Whether two calls' keyword names are the same: one tuple (a call site's constant), or
   tuples of the very same (interned) strings. */
static int
same_names(PyObject *a, PyObject *b)
{
    if (a == b) {
        return 1;
    }
    if (a == NULL || b == NULL || PyTuple_GET_SIZE(a) != PyTuple_GET_SIZE(b)) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(a); i++) {
        if (PyTuple_GET_ITEM(a, i) != PyTuple_GET_ITEM(b, i)) {
            return 0;
        }
    }
    return 1;
}

static int
array_usable(const gh_devicearray *a)
{
    return a->generation == a->context->generation && a->context->handle != NULL;
}

/* The last all_reduce again, where `args` are the very objects it had and still usable:
   1 with *out its result, 0 when they are not (nothing raised), -1 with NCCL's error. */
static int
fast_call(gh_nccl_comm *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
          PyObject **out)
{
    const gh_nccl_fast *f = &self->fast;
    Py_ssize_t n = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    gh_devicearray *s, *r;
    ncall c;
    if (f->n == 0 || n != f->n || nargs != f->nargs || !same_names(kwnames, f->kwnames) ||
        self->comm == NULL || self->nonblocking) {
        return 0;
    }
    for (int i = 0; i < f->n; i++) {
        if (kept(f, i) != args[i]) {
            return 0;
        }
    }
    s = (gh_devicearray *)args[f->i_send];
    r = (gh_devicearray *)args[f->i_recv];
    if (!array_usable(s) || !array_usable(r)) {
        return 0;
    }
    if (f->i_stream >= 0 && args[f->i_stream] != Py_None) {
        const gh_stream *st = (const gh_stream *)args[f->i_stream];
        if (st->capture != NULL || st->generation != st->context->generation ||
            st->context->handle == NULL) {
            return 0;
        }
    }
    c = (ncall){.id = GH_NCCL_AllReduce,
                .send = f->sendbuf,
                .recv = f->recvbuf,
                .count = f->count,
                .dtype = f->dtype,
                .op = f->op_code};
    if (run_calls(self, &c, 1, f->handle) < 0) {
        return -1;
    }
    self->fast_calls++;
    *out = Py_NewRef((PyObject *)r);
    return 1;
}

/* Keep a successful all_reduce's arguments and call for the next one, where they are gpuhost
   arrays (recv given: a new result is allocated each time), a gpuhost Stream or None, and
   no capture; anything else leaves the last one kept. */
static void
fast_keep(gh_nccl_comm *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
          const char *const *names, PyObject *const *a, const ncall *c, CUstream stream)
{
    gh_state *st = self->st;
    gh_nccl_fast *f = &self->fast;
    Py_ssize_t n = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    if (n > GH_NCCL_FAST_ARGS || a[1] == NULL || self->nonblocking ||
        !PyObject_TypeCheck(a[0], st->DeviceArrayType) ||
        !PyObject_TypeCheck(a[1], st->DeviceArrayType) ||
        (a[3] != NULL && a[3] != Py_None &&
         (!Py_IS_TYPE(a[3], st->StreamType) || ((gh_stream *)a[3])->capture != NULL))) {
        return;
    }
    gh_nccl_fast_clear(f);
    f->i_send = f->i_recv = f->i_stream = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *obj = args[i];
        const char *name =
            i < nargs ? names[i] : PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, i - nargs));
        int weak = PyObject_TypeCheck(obj, st->DeviceArrayType) || Py_IS_TYPE(obj, st->StreamType);
        if (name == NULL ||
            (f->items[i] = weak ? PyWeakref_NewRef(obj, NULL) : Py_NewRef(obj)) == NULL) {
            PyErr_Clear(); /* nothing kept: the next call takes the long way */
            f->n = (int)i;
            gh_nccl_fast_clear(f);
            return;
        }
        f->weak[i] = (unsigned char)weak;
        f->n = (int)i + 1;
        if (strcmp(name, "send") == 0) {
            f->i_send = (int)i;
        }
        else if (strcmp(name, "recv") == 0) {
            f->i_recv = (int)i;
        }
        else if (strcmp(name, "stream") == 0) {
            f->i_stream = (int)i;
        }
    }
    f->kwnames = Py_XNewRef(kwnames);
    f->nargs = nargs;
    f->sendbuf = c->send;
    f->recvbuf = c->recv;
    f->count = c->count;
    f->dtype = c->dtype;
    f->op_code = c->op;
    f->handle = stream;
}

PyObject *
gh_nccl_all_reduce(gh_nccl_comm *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"send", "recv", "op", "stream"};
    gh_state *st = self->st;
    PyObject *a[4], *stream_o, *out = NULL;
    nbuf s = {0}, r = {0};
    ncall c = {.id = GH_NCCL_AllReduce};
    CUstream stream;
    size_t mult;
    int hit = fast_call(self, args, nargs, kwnames, &out);
    if (hit != 0) {
        return hit > 0 ? out : NULL;
    }
    if (gh_nccl_parse_args("all_reduce", args, nargs, kwnames, names, 4, 1, a) < 0) {
        return NULL;
    }
    stream_o = or_none(a[3]);
    if (gh_nccl_comm_live(self, "all_reduce") < 0 ||
        (c.op = gh_nccl_parse_op("all_reduce", a[2])) < 0 ||
        get_stream(st, self, "all_reduce", stream_o, &stream) < 0 ||
        get_buffer(st, self, a[0], stream_o, "all_reduce", "send", 0, &s) < 0 ||
        get_recv_like_send(st, self, or_none(a[1]), a[0], stream_o, "all_reduce", 1, &s, &r) < 0 ||
        (c.dtype = gh_nccl_reduce_dtype("all_reduce", (PyArray_Descr *)s.a->dtype, c.op, &mult)) <
            0) {
        return fail2(&s, &r);
    }
    c.count = s.count * mult;
    if ((out = finish(self, &c, &s, &r, stream_o, stream)) != NULL) {
        fast_keep(self, args, nargs, kwnames, names, a, &c, stream);
    }
    return out;
}

PyObject *
gh_nccl_reduce(gh_nccl_comm *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"send", "recv", "root", "op", "stream"};
    gh_state *st = self->st;
    PyObject *a[5], *stream_o;
    nbuf s = {0}, r = {0};
    ncall c = {.id = GH_NCCL_Reduce};
    CUstream stream;
    size_t mult;
    if (gh_nccl_parse_args("reduce", args, nargs, kwnames, names, 5, 1, a) < 0 ||
        gh_nccl_int_arg("reduce", "root", a[2], 0, &c.root) < 0) {
        return NULL;
    }
    stream_o = or_none(a[4]);
    if (gh_nccl_comm_live(self, "reduce") < 0 || check_rank(self, "reduce", "root", c.root) < 0 ||
        (c.op = gh_nccl_parse_op("reduce", a[3])) < 0 ||
        get_stream(st, self, "reduce", stream_o, &stream) < 0 ||
        get_buffer(st, self, a[0], stream_o, "reduce", "send", 0, &s) < 0 ||
        get_recv_like_send(st, self, or_none(a[1]), a[0], stream_o, "reduce", self->rank == c.root,
                           &s, &r) < 0 ||
        (c.dtype = gh_nccl_reduce_dtype("reduce", (PyArray_Descr *)s.a->dtype, c.op, &mult)) < 0) {
        return fail2(&s, &r);
    }
    c.count = s.count * mult;
    return finish(self, &c, &s, &r, stream_o, stream);
}

PyObject *
gh_nccl_broadcast(gh_nccl_comm *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"send", "recv", "root", "stream"};
    gh_state *st = self->st;
    PyObject *a[4], *recv_o, *stream_o;
    nbuf s = {0}, r = {0};
    ncall c = {.id = GH_NCCL_Broadcast, .dtype = GH_ncclUint8};
    CUstream stream;
    if (gh_nccl_parse_args("broadcast", args, nargs, kwnames, names, 4, 1, a) < 0 ||
        gh_nccl_int_arg("broadcast", "root", a[2], 0, &c.root) < 0) {
        return NULL;
    }
    recv_o = or_none(a[1]);
    stream_o = or_none(a[3]);
    if (gh_nccl_comm_live(self, "broadcast") < 0 ||
        check_rank(self, "broadcast", "root", c.root) < 0 ||
        get_stream(st, self, "broadcast", stream_o, &stream) < 0 ||
        get_buffer(st, self, a[0], stream_o, "broadcast", "send", recv_o == Py_None, &s) < 0 ||
        get_recv_like_send(st, self, recv_o == Py_None ? a[0] : recv_o, a[0], stream_o, "broadcast",
                           1, &s, &r) < 0) { /* None: in place */
        return fail2(&s, &r);
    }
    c.count = s.count * s.itemsize;
    return finish(self, &c, &s, &r, stream_o, stream);
}

/* all_gather (gather = 1) and reduce_scatter: recv holds size x send, or send size x recv. */
static PyObject *
gather_or_scatter(gh_nccl_comm *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                  int gather)
{
    static const char *const names_g[] = {"send", "recv", "stream"};
    static const char *const names_s[] = {"send", "recv", "op", "stream"};
    const char *call = gather ? "all_gather" : "reduce_scatter";
    gh_state *st = self->st;
    PyObject *a[4] = {NULL}, *stream_o;
    nbuf s = {0}, r = {0};
    ncall c = {.id = gather ? GH_NCCL_AllGather : GH_NCCL_ReduceScatter, .dtype = GH_ncclUint8};
    CUstream stream;
    size_t mult = 1, n = (size_t)self->size;
    if (gh_nccl_parse_args(call, args, nargs, kwnames, gather ? names_g : names_s, gather ? 3 : 4,
                           1, a) < 0) {
        return NULL;
    }
    stream_o = or_none(a[gather ? 2 : 3]);
    if (gh_nccl_comm_live(self, call) < 0 ||
        (!gather && (c.op = gh_nccl_parse_op(call, a[2])) < 0) ||
        get_stream(st, self, call, stream_o, &stream) < 0 ||
        get_buffer(st, self, a[0], stream_o, call, "send", 0, &s) < 0) {
        return fail2(&s, &r);
    }
    if (!gather && s.count % n != 0) {
        PyErr_Format(PyExc_ValueError,
                     "reduce_scatter(): send has %zu elements, not a multiple of the %d ranks",
                     s.count, self->size);
        return fail2(&s, &r);
    }
    if (a[1] == NULL || a[1] == Py_None) {
        PyObject *shape = scaled_shape(&s, self->size, self->size, gather);
        if (shape == NULL || new_result(st, self, shape, &s, stream_o, call, &r) < 0) {
            return fail2(&s, &r);
        }
    }
    else if (get_buffer(st, self, a[1], stream_o, call, "recv", 1, &r) < 0 ||
             check_pair(call, &s, &r, gather ? s.count * n : s.count / n,
                        gather ? "send's times the number of ranks"
                               : "send's divided by the number of ranks") < 0) {
        return fail2(&s, &r);
    }
    if (!gather &&
        (c.dtype = gh_nccl_reduce_dtype(call, (PyArray_Descr *)s.a->dtype, c.op, &mult)) < 0) {
        return fail2(&s, &r);
    }
    c.count = gather ? s.count * s.itemsize : r.count * mult;
    return finish(self, &c, &s, &r, stream_o, stream);
}

PyObject *
gh_nccl_all_gather(gh_nccl_comm *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return gather_or_scatter(self, args, nargs, kwnames, 1);
}

PyObject *
gh_nccl_reduce_scatter(gh_nccl_comm *self, PyObject *const *args, Py_ssize_t nargs,
                       PyObject *kwnames)
{
    return gather_or_scatter(self, args, nargs, kwnames, 0);
}

/* send (to_peer = 1) or recv: the whole buffer, as bytes. */
static PyObject *
point_to_point(gh_nccl_comm *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
               int to_peer)
{
    static const char *const names[] = {"buf", "peer", "stream"};
    const char *call = to_peer ? "send" : "recv";
    gh_state *st = self->st;
    PyObject *a[3], *stream_o;
    nbuf b = {0}, none = {0};
    ncall c = {.id = to_peer ? GH_NCCL_Send : GH_NCCL_Recv, .dtype = GH_ncclUint8};
    CUstream stream;
    if (gh_nccl_parse_args(call, args, nargs, kwnames, names, 3, 2, a) < 0 ||
        gh_nccl_int_arg(call, "peer", a[1], 0, &c.root) < 0) {
        return NULL;
    }
    stream_o = or_none(a[2]);
    if (gh_nccl_comm_live(self, call) < 0 || check_rank(self, call, "peer", c.root) < 0 ||
        get_stream(st, self, call, stream_o, &stream) < 0 ||
        get_buffer(st, self, a[0], stream_o, call, "buf", !to_peer, &b) < 0) {
        return NULL;
    }
    c.count = b.count * b.itemsize;
    if (to_peer) { /* returns None */
        return finish(self, &c, &b, &none, stream_o, stream);
    }
    none = b; /* recv returns buf */
    Py_INCREF(none.a);
    return finish(self, &c, &b, &none, stream_o, stream);
}

PyObject *
gh_nccl_send(gh_nccl_comm *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return point_to_point(self, args, nargs, kwnames, 1);
}

PyObject *
gh_nccl_recv(gh_nccl_comm *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return point_to_point(self, args, nargs, kwnames, 0);
}

/* Block i of send goes to rank i, whose block `rank` of recv receives it. */
PyObject *
gh_nccl_all_to_all(gh_nccl_comm *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"send", "recv", "stream"};
    gh_state *st = self->st;
    PyObject *a[3], *stream_o, *out = NULL;
    nbuf s = {0}, r = {0};
    ncall *calls = NULL;
    CUstream stream;
    size_t n = (size_t)self->size, block;
    if (gh_nccl_parse_args("all_to_all", args, nargs, kwnames, names, 3, 1, a) < 0) {
        return NULL;
    }
    stream_o = or_none(a[2]);
    if (gh_nccl_comm_live(self, "all_to_all") < 0 ||
        get_stream(st, self, "all_to_all", stream_o, &stream) < 0 ||
        get_buffer(st, self, a[0], stream_o, "all_to_all", "send", 0, &s) < 0) {
        return fail2(&s, &r);
    }
    if (s.count % n != 0) {
        PyErr_Format(PyExc_ValueError,
                     "all_to_all(): send has %zu elements, not a multiple of the %d ranks", s.count,
                     self->size);
        return fail2(&s, &r);
    }
    if (a[1] == a[0] && a[0] != NULL) {
        PyErr_SetString(PyExc_ValueError, "all_to_all(): recv cannot be send (NCCL's grouped "
                                          "sends and receives are not in place)");
        return fail2(&s, &r);
    }
    if (get_recv_like_send(st, self, or_none(a[1]), a[0], stream_o, "all_to_all", 1, &s, &r) < 0) {
        return fail2(&s, &r);
    }
    if ((calls = PyMem_Calloc(2 * n, sizeof(ncall))) == NULL) {
        PyErr_NoMemory();
        return fail2(&s, &r);
    }
    block = s.count / n * s.itemsize;
    for (size_t i = 0; i < n; i++) {
        calls[2 * i] = (ncall){.id = GH_NCCL_Send,
                               .send = (const char *)s.a->ptr + i * block,
                               .count = block,
                               .dtype = GH_ncclUint8,
                               .root = (int)i};
        calls[2 * i + 1] = (ncall){.id = GH_NCCL_Recv,
                                   .recv = (char *)r.a->ptr + i * block,
                                   .count = block,
                                   .dtype = GH_ncclUint8,
                                   .root = (int)i};
    }
    if (keep_for_capture(st, stream_o, &s, &r) == 0 &&
        run_calls(self, calls, (int)(2 * n), stream) == 0) {
        out = Py_NewRef((PyObject *)r.a);
    }
    PyMem_Free(calls);
    fail2(&s, &r);
    return out;
}

/* _raw(kind, send, recv, count, dtype, op, root, stream): one NCCL call on raw addresses and
   NCCL's own codes, for CuPy's API (gpuhost.compat.cupy.nccl), which takes pointers as ints;
   NCCL checks the pointers.  kind: 0 AllReduce, 1 Reduce, 2 Broadcast, 3 AllGather,
   4 ReduceScatter, 5 Send, 6 Recv. */
PyObject *
gh_nccl_raw(gh_nccl_comm *self, PyObject *args)
{
    static const gh_nccl_id kinds[] = {GH_NCCL_AllReduce, GH_NCCL_Reduce,        GH_NCCL_Broadcast,
                                       GH_NCCL_AllGather, GH_NCCL_ReduceScatter, GH_NCCL_Send,
                                       GH_NCCL_Recv};
    unsigned long long send, recv, stream;
    int kind;
    ncall c;
    if (!PyArg_ParseTuple(args, "iKKniiiK:_raw", &kind, &send, &recv, &c.count, &c.dtype, &c.op,
                          &c.root, &stream) ||
        gh_nccl_comm_live(self, "_raw") < 0 ||
        gh_stream_handle_check((uintptr_t)stream, "stream") < 0) {
        return NULL;
    }
    if (kind < 0 || kind > 6) {
        PyErr_Format(PyExc_ValueError, "_raw(): kind %d is not 0 to 6", kind);
        return NULL;
    }
    c.id = kinds[kind];
    c.send = (const void *)(uintptr_t)send;
    c.recv = (void *)(uintptr_t)recv;
    if (run_calls(self, &c, 1, (CUstream)(uintptr_t)stream) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}
