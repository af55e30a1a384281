/* fakenccl's local mode: every rank of the communicator lives in this process (ncclCommInitAll,
 * threads each calling ncclCommInitRank, one rank, or splits of those).
 *
 * A collective runs when the last rank posts it: the ranks' streams are synchronized first,
 * then the bytes move through the fake driver's memory, so results are the real ones; a send
 * runs once its matching receive is posted.  On a capturing stream the rank's part becomes a
 * host function instead (a graph node): when a replay runs the last rank's node, the
 * collective runs there, on the queue, in stream order.
 *
 * The limit of a test double over one work queue: an earlier rank's stream does not wait for
 * the later ranks' parts (on a GPU its kernel would), so a rank that synchronizes its stream
 * before the last rank posted (or before the last rank's graph node ran) finds the collective
 * not yet run.  Synchronize every rank's stream before reading any rank's result.
 */
#include "fn_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One parent rank's k-th ncclCommSplit, waiting for the others'. */
typedef struct splitreq {
    int seq, arrived, taken, done;
    int color[MAX_RANKS], key[MAX_RANKS];
    struct gh_ncclComm *child[MAX_RANKS];
    struct splitreq *next;
} splitreq;

/* A rank's part of a captured collective: the host function's data (kept for replays). */
typedef struct deferred {
    struct gh_ncclComm *comm;
    int kind, dtype, op, root;
    size_t count;
    const void *send;
    void *recv;
    struct deferred *next;
} deferred;

typedef struct clique {
    char id[GH_NCCL_UNIQUE_ID_BYTES];
    int nranks, joined;
    struct gh_ncclComm *ranks[MAX_RANKS];
    int seq[MAX_RANKS];  /* collectives posted by each rank */
    fk_op coll[MAX_OPS]; /* collective k at coll[k % MAX_OPS] */
    fk_op p2p[MAX_OPS];  /* unmatched sends and receives */
    int n_p2p;
    int xseq[MAX_RANKS];  /* captured collectives run by each rank */
    fk_op xcoll[MAX_OPS]; /* their parts, as coll */
    deferred *captured;   /* every captured part, freed with the clique */
    splitreq *splits;
    int refs;
    struct clique *next;
} clique;

static clique *cliques;

static clique *
clique_new(const char *id, int nranks)
{
    clique *cl = calloc(1, sizeof(*cl));
    if (cl != NULL) {
        if (id != NULL) {
            memcpy(cl->id, id, sizeof(cl->id));
        }
        cl->nranks = nranks;
        cl->next = cliques;
        cliques = cl;
    }
    return cl;
}

static void
clique_attach(clique *cl, struct gh_ncclComm *comm)
{
    comm->cl = cl;
    comm->mode = MODE_LOCAL;
    cl->ranks[comm->rank] = comm;
    cl->refs++;
}

void
fn_local_leave(struct gh_ncclComm *comm)
{
    clique *cl = comm->cl, **p;
    if (cl == NULL) {
        return;
    }
    comm->cl = NULL;
    if (cl->ranks[comm->rank] == comm) {
        cl->ranks[comm->rank] = NULL;
    }
    if (--cl->refs > 0) {
        return;
    }
    for (p = &cliques; *p != cl; p = &(*p)->next) {
    }
    *p = cl->next;
    while (cl->captured != NULL) {
        deferred *d = cl->captured;
        cl->captured = d->next;
        free(d);
    }
    while (cl->splits != NULL) {
        splitreq *s = cl->splits;
        cl->splits = s->next;
        free(s);
    }
    free(cl);
}

/* Wait on fn_cond (fn_lock held) until `*flag` is at least `want`, the comm aborts or the
   deadline (NULL: none) passes; 0, or -1 on abort or time. */
static int
wait_for(const int *flag, int want, struct gh_ncclComm *comm, const struct timespec *until)
{
    while (*flag < want) {
        if (comm->aborting) {
            return -1;
        }
        if (until == NULL) {
            struct timespec t;
            clock_gettime(CLOCK_REALTIME, &t);
            t.tv_nsec += 50 * 1000 * 1000;
            if (t.tv_nsec >= 1000000000) {
                t.tv_sec++;
                t.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&fn_cond, &fn_lock, &t); /* wakes to look at aborting */
        }
        else if (pthread_cond_timedwait(&fn_cond, &fn_lock, until) == ETIMEDOUT && *flag < want) {
            return -1;
        }
    }
    return 0;
}

static struct timespec *
deadline(double timeout, struct timespec *ts)
{
    if (timeout < 0) {
        return NULL;
    }
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += (time_t)timeout;
    ts->tv_nsec += (long)((timeout - (double)(time_t)timeout) * 1e9);
    if (ts->tv_nsec >= 1000000000) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000;
    }
    return ts;
}

R
fn_local_join(struct gh_ncclComm *comm, const char *id, double timeout)
{
    struct timespec ts, *until = deadline(timeout, &ts);
    clique *cl;
    R res = GH_ncclSuccess;
    pthread_mutex_lock(&fn_lock);
    for (cl = cliques; cl && memcmp(cl->id, id, sizeof(cl->id)) != 0; cl = cl->next) {
    }
    if (cl == NULL && (cl = clique_new(id, comm->nranks)) == NULL) {
        pthread_mutex_unlock(&fn_lock);
        return fn_fail(comm, GH_ncclSystemError, "out of memory");
    }
    if (cl->nranks != comm->nranks || cl->ranks[comm->rank] != NULL) {
        res = fn_fail(comm, GH_ncclInvalidUsage, "fakenccl: rank joined twice, or nranks differ");
    }
    for (int r = 0; r < cl->nranks && res == GH_ncclSuccess; r++) {
        if (cl->ranks[r] != NULL && cl->ranks[r]->dev == comm->dev) {
            res = fn_fail(comm, GH_ncclInvalidUsage,
                          "Duplicate GPU detected : rank %d and rank "
                          "%d both on CUDA device %d",
                          r, comm->rank, comm->dev);
        }
    }
    if (res != GH_ncclSuccess) {
        if (cl->refs == 0) { /* made for this join only */
            clique_attach(cl, comm);
            fn_local_leave(comm);
        }
        pthread_mutex_unlock(&fn_lock);
        return res;
    }
    clique_attach(cl, comm);
    cl->joined++;
    pthread_cond_broadcast(&fn_cond);
    if (wait_for(&cl->joined, cl->nranks, comm, until) < 0) {
        cl->joined--;
        fn_local_leave(comm);
        res = comm->aborting ? fn_fail(comm, GH_ncclInvalidUsage, "fakenccl: aborted while joining")
                             : fn_fail(comm, GH_ncclSystemError,
                                       "fakenccl: the other ranks did not join within %g s (a "
                                       "real NCCL would wait for ever)",
                                       timeout);
    }
    pthread_mutex_unlock(&fn_lock);
    return res;
}

R
fn_local_init_all(struct gh_ncclComm **comms, int ndev, const int *devlist)
{
    clique *cl = clique_new(NULL, ndev);
    if (cl == NULL) {
        return fn_fail(NULL, GH_ncclSystemError, "out of memory");
    }
    cl->joined = ndev;
    for (int i = 0; i < ndev; i++) {
        comms[i] = fn_comm_new(i, ndev, devlist ? devlist[i] : i);
        clique_attach(cl, comms[i]);
    }
    return GH_ncclSuccess;
}

/* The children of a split every rank arrived at: one clique per color. */
static void
split_make(clique *parent, splitreq *s)
{
    for (int r = 0; r < parent->nranks; r++) {
        int members[MAX_RANKS], n = 0;
        clique *cl;
        if (s->color[r] < 0 || s->child[r] != NULL) {
            continue;
        }
        for (int q = 0; q < parent->nranks; q++) { /* the color's ranks ordered by key, rank */
            if (s->color[q] == s->color[r]) {
                int at = n++;
                while (at > 0 && s->key[members[at - 1]] > s->key[q]) {
                    members[at] = members[at - 1];
                    at--;
                }
                members[at] = q;
            }
        }
        if ((cl = clique_new(NULL, n)) == NULL) {
            continue;
        }
        cl->joined = n;
        for (int i = 0; i < n; i++) {
            int q = members[i];
            s->child[q] = fn_comm_new(i, n, parent->ranks[q] ? parent->ranks[q]->dev : 0);
            if (s->child[q] != NULL) {
                clique_attach(cl, s->child[q]);
            }
        }
    }
    s->done = 1;
}

R
fn_local_split(struct gh_ncclComm *parent, int color, int key, int seq, struct gh_ncclComm **child,
               double timeout)
{
    struct timespec ts, *until = deadline(timeout, &ts);
    clique *cl = parent->cl;
    splitreq *s;
    R res = GH_ncclSuccess;
    pthread_mutex_lock(&fn_lock);
    for (s = cl->splits; s && s->seq != seq; s = s->next) {
    }
    if (s == NULL) {
        if ((s = calloc(1, sizeof(*s))) == NULL) {
            pthread_mutex_unlock(&fn_lock);
            return fn_fail(parent, GH_ncclSystemError, "out of memory");
        }
        s->seq = seq;
        s->next = cl->splits;
        cl->splits = s;
    }
    s->color[parent->rank] = color;
    s->key[parent->rank] = key;
    if (++s->arrived == cl->nranks) {
        split_make(cl, s);
        pthread_cond_broadcast(&fn_cond);
    }
    if (wait_for(&s->done, 1, parent, until) < 0) {
        res = fn_fail(parent, parent->aborting ? GH_ncclInvalidUsage : GH_ncclSystemError,
                      "fakenccl: the other ranks did not split within %g s", timeout);
    }
    else {
        *child = s->child[parent->rank];
        if (color >= 0 && *child == NULL) {
            res = fn_fail(parent, GH_ncclSystemError, "out of memory");
        }
    }
    if (++s->taken == cl->nranks || res != GH_ncclSuccess) { /* the last one frees it */
        splitreq **p;
        for (p = &cl->splits; *p != s; p = &(*p)->next) {
        }
        if (s->taken == cl->nranks) {
            *p = s->next;
            free(s);
        }
    }
    pthread_mutex_unlock(&fn_lock);
    return res;
}

/* ---- moving bytes ---- */

static void
sync_stream(CUcontext ctx, CUstream stream)
{
    CUcontext popped;
    if (ctx != NULL) {
        cu.CtxPushCurrent(ctx);
    }
    cu.StreamSynchronize(stream);
    if (ctx != NULL) {
        cu.CtxPopCurrent(&popped);
    }
}

/* Run collective `o` (every rank posted it) through the host views of its buffers; fn_lock
   held.  0, or -1 (a buffer went, or out of memory). */
static int
run_collective(int n, fk_op *o)
{
    const unsigned char *in[MAX_RANKS];
    unsigned char *out[MAX_RANKS];
    for (int r = 0; r < n; r++) {
        size_t ib = fn_in_bytes(o->kind, o->count, o->dtype, n, r, o->root);
        size_t ob = fn_out_bytes(o->kind, o->count, o->dtype, n, r, o->root);
        in[r] = ib ? cu.host_view((uintptr_t)o->send[r], ib) : NULL;
        out[r] = ob ? cu.host_view((uintptr_t)o->recv[r], ob) : NULL;
        if ((ib && in[r] == NULL) || (ob && out[r] == NULL)) {
            return -1;
        }
    }
    if (o->kind != GH_NCCL_Broadcast) { /* in place: inputs first copied where they overlap */
        unsigned char *copies[MAX_RANKS] = {0};
        int rc = 0;
        for (int r = 0; r < n && rc == 0; r++) {
            size_t ib = fn_in_bytes(o->kind, o->count, o->dtype, n, r, o->root);
            if ((copies[r] = malloc(ib + 1)) == NULL) {
                rc = -1;
            }
            else {
                memcpy(copies[r], in[r], ib);
                in[r] = copies[r];
            }
        }
        rc = rc == 0 ? fn_compute(o->kind, o->count, o->dtype, o->op, o->root, n, in, out) : rc;
        for (int r = 0; r < n; r++) {
            free(copies[r]);
        }
        return rc;
    }
    return fn_compute(o->kind, o->count, o->dtype, o->op, o->root, n, in, out);
}

/* Take a matching send and receive out of cl's waiting ones into *s and *v; 1 if found, 0 if
   none, -1 (with comm's error) if their sizes differ.  fn_lock held. */
static int
take_pair(clique *cl, struct gh_ncclComm *comm, fk_op *s, fk_op *v)
{
    for (int i = 0; i < cl->n_p2p; i++) {
        for (int j = 0; j < cl->n_p2p; j++) {
            const fk_op *a = &cl->p2p[i], *b = &cl->p2p[j];
            if (a->kind != GH_NCCL_Send || b->kind != GH_NCCL_Recv || a->root != b->peer_of[0] ||
                b->root != a->peer_of[0]) {
                continue;
            }
            if (a->count * fn_type_size(a->dtype) != b->count * fn_type_size(b->dtype)) {
                fn_fail(comm, GH_ncclInvalidUsage, "fakenccl: send and recv sizes differ");
                return -1;
            }
            *s = *a;
            *v = *b;
            { /* drop both (remove the higher index first) */
                int hi = i > j ? i : j, lo = i > j ? j : i;
                cl->p2p[hi] = cl->p2p[--cl->n_p2p];
                cl->p2p[lo] = cl->p2p[--cl->n_p2p];
            }
            return 1;
        }
    }
    return 0;
}

/* Run the matching sends and receives of `cl`, each pair after both streams' earlier work;
   fn_lock held, let go while a pair runs. */
static R
match_p2p(clique *cl, struct gh_ncclComm *comm)
{
    fk_op s, v;
    int found;
    while ((found = take_pair(cl, comm, &s, &v)) > 0) {
        size_t bytes = s.count * fn_type_size(s.dtype);
        unsigned char *src, *dst;
        pthread_mutex_unlock(&fn_lock);
        sync_stream(s.ctx[0], s.stream[0]);
        sync_stream(v.ctx[0], v.stream[0]);
        src = bytes ? cu.host_view((uintptr_t)s.send[0], bytes) : NULL;
        dst = bytes ? cu.host_view((uintptr_t)v.recv[0], bytes) : NULL;
        if (bytes && src != NULL && dst != NULL) {
            memmove(dst, src, bytes);
        }
        pthread_mutex_lock(&fn_lock);
        if (bytes && (src == NULL || dst == NULL)) {
            return fn_fail(comm, GH_ncclUnhandledCudaError, "fakenccl: a buffer went");
        }
    }
    return found < 0 ? GH_ncclInvalidUsage : GH_ncclSuccess;
}

/* Record rank `r`'s part in slot `o`, checking it matches the others'; fn_lock held. */
static R
take_part(struct gh_ncclComm *comm, fk_op *o, int kind, size_t count, int dtype, int op, int root,
          const void *send, void *recv)
{
    if (o->posted == 0) {
        memset(o, 0, sizeof(*o));
        *o = (fk_op){.kind = kind, .count = count, .dtype = dtype, .op = op, .root = root};
    }
    else if (o->kind != kind || o->count != count || o->dtype != dtype || o->root != root) {
        return fn_fail(comm, GH_ncclInvalidUsage,
                       "fakenccl: ranks called different collectives (or counts) in turn");
    }
    o->send[comm->rank] = send;
    o->recv[comm->rank] = recv;
    o->posted++;
    return GH_ncclSuccess;
}

/* The host function of a captured part: the last rank's runs the collective. */
static void CUDA_CB
run_deferred(void *arg)
{
    deferred *d = arg;
    struct gh_ncclComm *comm = d->comm;
    clique *cl;
    fk_op *o;
    pthread_mutex_lock(&fn_lock);
    cl = comm->cl;
    if (cl == NULL || comm->aborting) {
        pthread_mutex_unlock(&fn_lock);
        return;
    }
    o = &cl->xcoll[cl->xseq[comm->rank]++ % MAX_OPS];
    if (take_part(comm, o, d->kind, d->count, d->dtype, d->op, d->root, d->send, d->recv) ==
            GH_ncclSuccess &&
        o->posted == cl->nranks) {
        if (run_collective(cl->nranks, o) != 0) {
            comm->async = GH_ncclUnhandledCudaError;
        }
        o->posted = 0;
    }
    pthread_mutex_unlock(&fn_lock);
}

static R
post_captured(struct gh_ncclComm *comm, int kind, const void *send, void *recv, size_t count,
              int dtype, int op, int root, CUstream stream)
{
    deferred *d;
    if (kind == GH_NCCL_Send || kind == GH_NCCL_Recv) {
        return fn_fail(comm, GH_ncclInvalidUsage,
                       "fakenccl: sends and receives between ranks of "
                       "one process cannot be captured");
    }
    if ((d = calloc(1, sizeof(*d))) == NULL) {
        return fn_fail(comm, GH_ncclSystemError, "out of memory");
    }
    *d = (deferred){comm, kind, dtype, op, root, count, send, recv, NULL};
    if (cu.LaunchHostFunc(stream, run_deferred, d) != CUDA_SUCCESS) {
        free(d);
        return fn_fail(comm, GH_ncclUnhandledCudaError, "fakenccl: cuLaunchHostFunc failed");
    }
    pthread_mutex_lock(&fn_lock);
    d->next = comm->cl->captured;
    comm->cl->captured = d;
    pthread_mutex_unlock(&fn_lock);
    return GH_ncclSuccess;
}

R
fn_local_post(struct gh_ncclComm *comm, int kind, const void *send, void *recv, size_t count,
              int dtype, int op, int root, CUstream stream)
{
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    clique *cl;
    fk_op *o;
    R res;
    if (cu.StreamIsCapturing(stream, &status) == CUDA_SUCCESS &&
        status == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
        return post_captured(comm, kind, send, recv, count, dtype, op, root, stream);
    }
    pthread_mutex_lock(&fn_lock);
    cl = comm->cl;
    if (kind == GH_NCCL_Send || kind == GH_NCCL_Recv) {
        if (cl->n_p2p == MAX_OPS) {
            pthread_mutex_unlock(&fn_lock);
            return fn_fail(comm, GH_ncclInternalError, "fakenccl: too many unmatched sends");
        }
        o = &cl->p2p[cl->n_p2p++];
        *o = (fk_op){.kind = kind, .count = count, .dtype = dtype, .root = root};
        o->send[0] = send;
        o->recv[0] = recv;
        o->stream[0] = stream;
        cu.CtxGetCurrent(&o->ctx[0]);
        o->peer_of[0] = comm->rank;
        res = match_p2p(cl, comm);
        pthread_mutex_unlock(&fn_lock);
        return res;
    }
    o = &cl->coll[cl->seq[comm->rank] % MAX_OPS];
    if ((res = take_part(comm, o, kind, count, dtype, op, root, send, recv)) != GH_ncclSuccess) {
        pthread_mutex_unlock(&fn_lock);
        return res;
    }
    cl->seq[comm->rank]++;
    o->stream[comm->rank] = stream;
    cu.CtxGetCurrent(&o->ctx[comm->rank]);
    if (o->posted == cl->nranks) { /* the last part: run it, the lock let go meanwhile */
        fk_op all = *o;
        int n = cl->nranks;
        o->posted = 0;
        pthread_mutex_unlock(&fn_lock);
        for (int r = 0; r < n; r++) {
            sync_stream(all.ctx[r], all.stream[r]);
        }
        if (run_collective(n, &all) != 0) {
            res = fn_fail(comm, GH_ncclUnhandledCudaError, "fakenccl: a buffer went");
        }
        return res;
    }
    pthread_mutex_unlock(&fn_lock);
    return res;
}

int
fn_local_pending(void)
{
    int n = 0;
    for (clique *cl = cliques; cl; cl = cl->next) {
        n += cl->n_p2p;
        for (int k = 0; k < MAX_OPS; k++) {
            n += cl->coll[k].posted > 0;
        }
    }
    return n;
}
