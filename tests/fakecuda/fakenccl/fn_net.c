/* fakenccl's net mode: a rank of a communicator whose ranks live in several processes (one
 * rank per process: a process's ranks wait one after the other on the fake driver's single
 * work queue).  The rank keeps its connection to the root (fn_hub.c), which relays the
 * clique's work.
 *
 * An operation becomes a host function on its stream, so it runs in stream order, after the
 * work queued before it, and can be captured into a graph and replayed: when it runs it sends
 * the rank's part (read from the fake driver's memory through fakecuda_host_view), then waits
 * for its result and writes it.  A receiver thread files what the root sends; a broken clique
 * (a rank died) or an abort ends every wait, the clique's error then showing in
 * ncclCommGetAsyncError.
 */
#include "fn_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { BUFFER_WENT = 1, CONN_BROKE = 2 }; /* why an operation could not run */

#define CONN_CLOSED_TEXT                                                                           \
    "remote process exited or there was a network error: fakenccl: the connection to the root "    \
    "closed (its process exited?)"

typedef struct fn_item { /* a result (seq) or a peer's data (peer), as received */
    uint64_t seq;
    int peer;
    size_t n;
    unsigned char *data;
    struct fn_item *next;
} fn_item;

struct fn_net {
    int fd;
    int nranks, rank;
    pthread_t rx;
    int rx_started;
    pthread_mutex_t mu, wmu; /* mu: the state below; wmu: one writer at a time */
    pthread_cond_t cv;
    fn_item *results, *inbox;
    int broken, closing, bye_acked;
    R code;
    char text[256];
    uint64_t exec_seq; /* collectives run so far: their order is the ranks' common order */
    int refs;          /* the communicator's, and one per host function in flight */
    struct batch *captured;
};

typedef struct batch {
    struct fn_net *net;
    int n, captured;
    struct batch *next; /* net->captured */
    fn_netop ops[];
} batch;

static void
net_unref(struct fn_net *net)
{
    int last;
    pthread_mutex_lock(&net->mu);
    last = --net->refs == 0;
    pthread_mutex_unlock(&net->mu);
    if (!last) {
        return;
    }
    for (fn_item **list = &net->results; list != NULL;
         list = list == &net->results ? &net->inbox : NULL) {
        while (*list != NULL) {
            fn_item *it = *list;
            *list = it->next;
            free(it->data);
            free(it);
        }
    }
    while (net->captured != NULL) {
        batch *b = net->captured;
        net->captured = b->next;
        free(b);
    }
    close(net->fd); /* here, not at close: a host function may still be using it */
    pthread_mutex_destroy(&net->mu);
    pthread_mutex_destroy(&net->wmu);
    pthread_cond_destroy(&net->cv);
    free(net);
}

/* Mark the connection broken (the first reason stays); mu held. */
static void
net_break(struct fn_net *net, R code, const char *text)
{
    if (!net->broken) {
        net->broken = 1;
        net->code = code;
        snprintf(net->text, sizeof(net->text), "%s", text);
    }
    pthread_cond_broadcast(&net->cv);
}

static void *
rx_main(void *arg)
{
    struct fn_net *net = arg;
    for (;;) {
        fn_msg m;
        unsigned char *payload;
        fn_item *it;
        if (fn_recv_msg(net->fd, &m, &payload) != 0) {
            pthread_mutex_lock(&net->mu);
            if (!net->closing && !net->bye_acked) {
                net_break(net, GH_ncclRemoteError, CONN_CLOSED_TEXT);
            }
            net->bye_acked = 1; /* nothing more will come */
            pthread_cond_broadcast(&net->cv);
            pthread_mutex_unlock(&net->mu);
            return NULL;
        }
        pthread_mutex_lock(&net->mu);
        if (m.type == MSG_RESULT || m.type == MSG_P2P) {
            if ((it = calloc(1, sizeof(*it))) == NULL) {
                free(payload);
                net_break(net, GH_ncclSystemError, "out of memory");
            }
            else {
                fn_item **tail = m.type == MSG_RESULT ? &net->results : &net->inbox;
                *it =
                    (fn_item){.seq = m.seq, .peer = m.root, .n = (size_t)m.nbytes, .data = payload};
                while (*tail != NULL) {
                    tail = &(*tail)->next;
                }
                *tail = it;
            }
        }
        else if (m.type == MSG_BROKEN) {
            net_break(net, m.code, payload ? (const char *)payload : "fakenccl: broken");
            free(payload);
        }
        else if (m.type == MSG_BYE_ACK) {
            net->bye_acked = 1;
            free(payload);
        }
        else {
            free(payload);
        }
        pthread_cond_broadcast(&net->cv);
        pthread_mutex_unlock(&net->mu);
    }
}

/* ---- operations ---- */

/* Take the item of `list` with `seq` (results) or from `peer` (the inbox), waiting for it;
   NULL once the connection broke or closed.  mu held. */
static fn_item *
take(struct fn_net *net, fn_item **list, int by_seq, uint64_t seq, int peer)
{
    for (;;) {
        for (fn_item **p = list; *p != NULL; p = &(*p)->next) {
            if (by_seq ? (*p)->seq == seq : (*p)->peer == peer) {
                fn_item *it = *p;
                *p = it->next;
                return it;
            }
        }
        if (net->broken || net->closing) {
            return NULL;
        }
        pthread_cond_wait(&net->cv, &net->mu);
    }
}

/* Phase one of an op: its message to the root; 0, BUFFER_WENT or CONN_BROKE. */
static int
send_part(struct fn_net *net, fn_netop *op)
{
    size_t bytes = op->count * fn_type_size(op->dtype);
    fn_msg m = {
        .kind = op->kind, .dtype = op->dtype, .op = op->op, .root = op->root, .count = op->count};
    const void *data = NULL;
    if (op->kind == GH_NCCL_Send || op->kind == GH_NCCL_Recv) {
        m.type = op->kind == GH_NCCL_Send ? MSG_SEND : MSG_RECV;
        m.count = bytes;
        m.nbytes = op->kind == GH_NCCL_Send ? bytes : 0;
    }
    else {
        m.type = MSG_COLL;
        m.seq = op->seq = net->exec_seq++;
        m.nbytes = fn_in_bytes(op->kind, op->count, op->dtype, net->nranks, net->rank, op->root);
    }
    if (m.nbytes > 0 && (data = cu.host_view((uintptr_t)op->send, (size_t)m.nbytes)) == NULL) {
        return BUFFER_WENT;
    }
    return fn_send_msg(net->fd, &m, data) == 0 ? 0 : CONN_BROKE;
}

/* Phase two: its answer written where it goes; 0, CONN_BROKE (broken or closed: the reason
   is already the net's) or BUFFER_WENT.  mu held. */
static int
take_answer(struct fn_net *net, fn_netop *op)
{
    size_t want = op->kind == GH_NCCL_Recv ? op->count * fn_type_size(op->dtype)
                                           : fn_out_bytes(op->kind, op->count, op->dtype,
                                                          net->nranks, net->rank, op->root);
    fn_item *it;
    unsigned char *dst;
    int rc = 0;
    if (op->kind == GH_NCCL_Send) {
        return 0;
    }
    it = op->kind == GH_NCCL_Recv ? take(net, &net->inbox, 0, 0, op->root)
                                  : take(net, &net->results, 1, op->seq, 0);
    if (it == NULL) {
        return CONN_BROKE;
    }
    if (it->n != want || (want > 0 && (dst = cu.host_view((uintptr_t)op->recv, want)) == NULL)) {
        rc = BUFFER_WENT;
    }
    else if (want > 0) {
        memcpy(dst, it->data, want);
    }
    free(it->data);
    free(it);
    return rc;
}

/* The host function: every part out, then every answer in.  A send that fails means the
   root's end closed: that is the same remote error the receiver thread reports when it sees
   the close, whichever of the two comes first. */
static void CUDA_CB
run_batch(void *arg)
{
    batch *b = arg;
    struct fn_net *net = b->net;
    int i, why = 0;
    pthread_mutex_lock(&net->mu);
    why = net->broken || net->closing ? CONN_BROKE : 0;
    pthread_mutex_unlock(&net->mu);
    pthread_mutex_lock(&net->wmu);
    for (i = 0; i < b->n && why == 0; i++) {
        why = send_part(net, &b->ops[i]);
    }
    pthread_mutex_unlock(&net->wmu);
    pthread_mutex_lock(&net->mu);
    for (i = 0; i < b->n && why == 0; i++) {
        why = take_answer(net, &b->ops[i]);
    }
    if (why == CONN_BROKE && !net->closing) {
        net_break(net, GH_ncclRemoteError, CONN_CLOSED_TEXT);
    }
    else if (why == BUFFER_WENT && !net->closing) {
        net_break(net, GH_ncclUnhandledCudaError,
                  "fakenccl: an operation could not run (its buffer was freed or is too small)");
    }
    pthread_mutex_unlock(&net->mu);
    if (!b->captured) {
        free(b);
        net_unref(net);
    }
}

R
fn_net_post(struct gh_ncclComm *comm, const fn_netop *ops, int n, CUstream stream)
{
    struct fn_net *net = comm->net;
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    batch *b = malloc(sizeof(*b) + (size_t)n * sizeof(fn_netop));
    if (b == NULL) {
        return fn_fail(comm, GH_ncclSystemError, "out of memory");
    }
    b->net = net;
    b->n = n;
    memcpy(b->ops, ops, (size_t)n * sizeof(fn_netop));
    b->captured = cu.StreamIsCapturing(stream, &status) == CUDA_SUCCESS &&
                  status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
    pthread_mutex_lock(&net->mu);
    if (b->captured) { /* the graph replays it: kept until the communicator ends */
        b->next = net->captured;
        net->captured = b;
    }
    else {
        net->refs++;
    }
    pthread_mutex_unlock(&net->mu);
    if (cu.LaunchHostFunc(stream, run_batch, b) != CUDA_SUCCESS) {
        pthread_mutex_lock(&net->mu);
        if (b->captured) {
            net->captured = b->next;
        }
        pthread_mutex_unlock(&net->mu);
        if (!b->captured) {
            net_unref(net);
        }
        free(b);
        return fn_fail(comm, GH_ncclUnhandledCudaError, "fakenccl: cuLaunchHostFunc failed");
    }
    return GH_ncclSuccess;
}

R
fn_net_async(struct gh_ncclComm *comm)
{
    struct fn_net *net = comm->net;
    R code = GH_ncclSuccess;
    if (net == NULL) {
        return GH_ncclSuccess;
    }
    pthread_mutex_lock(&net->mu);
    if (net->broken) {
        code = net->code;
        snprintf(comm->last, sizeof(comm->last), "%s", net->text);
    }
    pthread_mutex_unlock(&net->mu);
    return code;
}

/* ---- joining and leaving ---- */

static struct fn_net *
net_new(int fd)
{
    struct fn_net *net = calloc(1, sizeof(*net));
    if (net == NULL) {
        return NULL;
    }
    net->fd = fd;
    net->refs = 1;
    pthread_mutex_init(&net->mu, NULL);
    pthread_mutex_init(&net->wmu, NULL);
    pthread_cond_init(&net->cv, NULL);
    return net;
}

static int
connect_root(const fn_root_addr *addr)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)addr->port)};
    int fd, one = 1;
    if (inet_pton(AF_INET, addr->host, &a.sin_addr) != 1 ||
        (fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
        return -1;
    }
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(fd);
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

/* Wait for fd to be readable, looking at comm->aborting every 50 ms; 0 readable, -1 abort or
   deadline (monotonic seconds, < 0: none). */
static int
wait_readable(struct gh_ncclComm *comm, int fd, double deadline)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        struct timespec t;
        if (comm->aborting) {
            return -1;
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (deadline >= 0 && (double)t.tv_sec + t.tv_nsec / 1e9 > deadline) {
            return -1;
        }
        if (poll(&p, 1, 50) > 0) {
            return 0;
        }
    }
}

R
fn_net_join(struct gh_ncclComm *comm, const fn_root_addr *addr, int type, const void *hello,
            size_t hello_size, double timeout, int *mode, int *rank, int *nranks,
            char child_id[GH_NCCL_UNIQUE_ID_BYTES])
{
    struct timespec now;
    fn_msg m = {.type = (uint32_t)type, .nbytes = hello_size};
    unsigned char *payload = NULL;
    double deadline = -1;
    int fd = connect_root(addr);
    struct fn_net *net;
    if (fd < 0) {
        return fn_fail(comm, GH_ncclSystemError,
                       "fakenccl: the root at %s:%d does not answer "
                       "(the process that made the unique id exited?)",
                       addr->host, addr->port);
    }
    if ((net = net_new(fd)) == NULL) {
        close(fd);
        return fn_fail(comm, GH_ncclSystemError, "out of memory");
    }
    pthread_mutex_lock(&fn_lock);
    comm->net = net; /* so that an abort can wake the wait below */
    pthread_mutex_unlock(&fn_lock);
    if (timeout >= 0) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        deadline = (double)now.tv_sec + now.tv_nsec / 1e9 + timeout;
    }
    if (fn_send_msg(fd, &m, hello) != 0 || wait_readable(comm, fd, deadline) != 0 ||
        fn_recv_msg(fd, &m, &payload) != 0 || (m.type != MSG_READY && m.type != MSG_ERROR)) {
        R res = comm->aborting ? fn_fail(comm, GH_ncclInvalidUsage,
                                         "fakenccl: aborted while "
                                         "joining")
                : deadline >= 0
                    ? fn_fail(comm, GH_ncclSystemError,
                              "fakenccl: the other ranks did not join within %g s "
                              "(a real NCCL would wait for ever)",
                              timeout)
                    : fn_fail(comm, GH_ncclRemoteError, "fakenccl: the root closed the connection");
        free(payload);
        fn_net_close(comm, 1);
        return res;
    }
    if (m.type == MSG_ERROR) {
        R res = fn_fail(comm, m.code, "%s", payload ? (const char *)payload : "fakenccl: refused");
        free(payload);
        fn_net_close(comm, 1);
        return res;
    }
    *mode = m.kind;
    *rank = m.root;
    *nranks = (int)m.count;
    if (child_id != NULL) {
        memset(child_id, 0, GH_NCCL_UNIQUE_ID_BYTES);
        if (payload != NULL && m.nbytes == GH_NCCL_UNIQUE_ID_BYTES) {
            memcpy(child_id, payload, GH_NCCL_UNIQUE_ID_BYTES);
        }
    }
    free(payload);
    if (*mode != MODE_NET || *rank < 0) { /* local (or no child): the connection is done with */
        fn_net_close(comm, 1);
        return GH_ncclSuccess;
    }
    net->nranks = *nranks;
    net->rank = *rank;
    if (pthread_create(&net->rx, NULL, rx_main, net) != 0) {
        fn_net_close(comm, 1);
        return fn_fail(comm, GH_ncclSystemError, "fakenccl: no receiver thread");
    }
    net->rx_started = 1;
    return GH_ncclSuccess;
}

void
fn_net_interrupt(struct gh_ncclComm *comm)
{
    struct fn_net *net = comm->net;
    if (net == NULL) {
        return;
    }
    pthread_mutex_lock(&net->mu);
    net->closing = 1;
    pthread_cond_broadcast(&net->cv);
    pthread_mutex_unlock(&net->mu);
    shutdown(net->fd, SHUT_RDWR);
}

void
fn_net_close(struct gh_ncclComm *comm, int abort)
{
    struct fn_net *net = comm->net;
    if (net == NULL) {
        return;
    }
    if (!abort && net->rx_started) { /* goodbye: wait (a while) for the others' */
        fn_msg m = {.type = MSG_BYE};
        struct timespec until;
        int sent;
        pthread_mutex_lock(&net->wmu);
        sent = fn_send_msg(net->fd, &m, NULL) == 0;
        pthread_mutex_unlock(&net->wmu);
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += (time_t)fn_join_timeout();
        pthread_mutex_lock(&net->mu);
        while (sent && !net->bye_acked && !net->broken &&
               pthread_cond_timedwait(&net->cv, &net->mu, &until) != ETIMEDOUT) {
        }
        pthread_mutex_unlock(&net->mu);
    }
    fn_net_interrupt(comm);
    if (net->rx_started) {
        pthread_join(net->rx, NULL);
    }
    pthread_mutex_lock(&fn_lock);
    comm->net = NULL;
    pthread_mutex_unlock(&fn_lock);
    net_unref(net);
}
