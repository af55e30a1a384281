/* fakenccl's root: what NCCL's bootstrap root is to a real clique.  ncclGetUniqueId starts it
 * (one thread per process, listening on 127.0.0.1) and writes its address into the id; every
 * rank of a clique of several ranks connects and says who it is.  When all have come, the
 * root checks them (nranks, ranks taken twice, two ranks on one GPU of one host) and answers
 * each: "local" when they all live in one process (they then meet in memory, fn_local.c), else
 * "net": the connections stay, and the root relays the clique's collectives (each rank's part
 * comes in, the results go out), sends and receives.  A rank whose connection closes without
 * a goodbye breaks its clique: the others are told (ncclRemoteError), as a real NCCL's proxy
 * would find a dead peer's socket closed.  Splits of a net clique meet here too.
 *
 * The thread reads one whole message at a time from a connection poll() says is readable;
 * ranks write whole messages.  It is detached: it dies with its process.
 */
#include "fn_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct hcl hcl;

typedef struct {
    int fd;
    hcl *cl; /* NULL until it said hello */
    int rank, pid, dev, bye, dead;
    char hostid[HOSTID_SIZE];
} hconn;

typedef struct hslot {
    uint64_t seq;
    int posted, kind, dtype, op, root;
    size_t count;
    unsigned char *in[MAX_RANKS];
    size_t in_n[MAX_RANKS];
    struct hslot *next;
} hslot;

typedef struct hp2p {
    int src, dst, is_recv;
    size_t n;
    unsigned char *data;
    struct hp2p *next;
} hp2p;

struct hcl {
    char id[GH_NCCL_UNIQUE_ID_BYTES];
    int nranks, joined, ready, broken, byes;
    hconn *ranks[MAX_RANKS];
    hslot *slots;
    hp2p *p2p;
    /* a split being formed: its members by parent rank */
    int split, arrived, color[MAX_RANKS], key[MAX_RANKS];
    hcl *next;
};

static pthread_mutex_t hub_mu = PTHREAD_MUTEX_INITIALIZER;
static int hub_fd = -1, hub_port;
static pid_t hub_pid;
static unsigned long hub_counter;

/* The thread's own state. */
static hconn **conns;
static int n_conns, cap_conns;
static hcl *cls;

/* ---- the wire ---- */

static int
write_all(int fd, const void *p, size_t n)
{
    const unsigned char *b = p;
    while (n > 0) {
        ssize_t k = send(fd, b, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) {
            continue;
        }
        if (k <= 0) {
            return -1;
        }
        b += k;
        n -= (size_t)k;
    }
    return 0;
}

static int
read_all(int fd, void *p, size_t n)
{
    unsigned char *b = p;
    while (n > 0) {
        ssize_t k = recv(fd, b, n, 0);
        if (k < 0 && errno == EINTR) {
            continue;
        }
        if (k <= 0) {
            return -1;
        }
        b += k;
        n -= (size_t)k;
    }
    return 0;
}

int
fn_send_msg(int fd, fn_msg *m, const void *payload)
{
    m->magic = FN_MAGIC;
    if (write_all(fd, m, sizeof(*m)) != 0) {
        return -1;
    }
    return m->nbytes > 0 ? write_all(fd, payload, (size_t)m->nbytes) : 0;
}

int
fn_recv_msg(int fd, fn_msg *m, unsigned char **payload)
{
    *payload = NULL;
    if (read_all(fd, m, sizeof(*m)) != 0 || m->magic != FN_MAGIC || m->nbytes > (1ull << 34)) {
        return -1;
    }
    if (m->nbytes > 0) {
        if ((*payload = malloc((size_t)m->nbytes)) == NULL ||
            read_all(fd, *payload, (size_t)m->nbytes) != 0) {
            free(*payload);
            *payload = NULL;
            return -1;
        }
    }
    return 0;
}

/* ---- the root's answers ---- */

static void
reply(hconn *c, int type, int code, const char *text)
{
    fn_msg m = {.type = (uint32_t)type, .code = code, .nbytes = text ? strlen(text) + 1 : 0};
    if (!c->dead) {
        fn_send_msg(c->fd, &m, text);
    }
}

static void
conn_close(hconn *c)
{
    if (c->fd >= 0) {
        close(c->fd);
        c->fd = -1;
    }
    c->dead = 1; /* its clique may still name it: freed once no clique does (cl NULL) */
}

static void
cl_free(hcl *cl)
{
    hcl **p;
    for (p = &cls; *p != NULL && *p != cl; p = &(*p)->next) {
    }
    if (*p == cl) {
        *p = cl->next;
    }
    for (int r = 0; r < MAX_RANKS; r++) {
        if (cl->ranks[r] != NULL) {
            cl->ranks[r]->cl = NULL;
        }
    }
    while (cl->slots != NULL) {
        hslot *s = cl->slots;
        cl->slots = s->next;
        for (int r = 0; r < MAX_RANKS; r++) {
            free(s->in[r]);
        }
        free(s);
    }
    while (cl->p2p != NULL) {
        hp2p *q = cl->p2p;
        cl->p2p = q->next;
        free(q->data);
        free(q);
    }
    free(cl);
}

/* Fail every rank of `cl` with `code` and forget it (a clique that could not be formed). */
static void
cl_refuse(hcl *cl, int code, const char *text)
{
    for (int r = 0; r < MAX_RANKS; r++) {
        if (cl->ranks[r] != NULL) {
            reply(cl->ranks[r], MSG_ERROR, code, text);
            conn_close(cl->ranks[r]);
        }
    }
    cl_free(cl);
}

/* Tell every live rank of a net clique that it broke. */
static void
cl_break(hcl *cl, int code, const char *text)
{
    if (cl->broken) {
        return;
    }
    cl->broken = 1;
    for (int r = 0; r < cl->nranks; r++) {
        if (cl->ranks[r] != NULL && !cl->ranks[r]->dead) {
            reply(cl->ranks[r], MSG_BROKEN, code, text);
        }
    }
}

/* Every live rank said goodbye (or none is left): acknowledge and forget the clique. */
static void
cl_maybe_end(hcl *cl)
{
    for (int r = 0; r < cl->nranks; r++) {
        hconn *c = cl->ranks[r];
        if (c != NULL && !c->dead && !c->bye) {
            return;
        }
    }
    for (int r = 0; r < cl->nranks; r++) {
        if (cl->ranks[r] != NULL && !cl->ranks[r]->dead) {
            reply(cl->ranks[r], MSG_BYE_ACK, 0, NULL);
            conn_close(cl->ranks[r]);
        }
    }
    cl_free(cl);
}

/* The clique of `id`, made for `nranks` if it is new; NULL when out of memory. */
static hcl *
cl_find(const char *id, int nranks, int split)
{
    hcl *cl;
    for (cl = cls; cl && (cl->ready || memcmp(cl->id, id, sizeof(cl->id)) != 0); cl = cl->next) {
    }
    if (cl == NULL && (cl = calloc(1, sizeof(*cl))) != NULL) {
        memcpy(cl->id, id, sizeof(cl->id));
        cl->nranks = nranks;
        cl->split = split;
        cl->next = cls;
        cls = cl;
    }
    return cl;
}

/* A formed clique: its members checked, then each told its mode. */
static void
cl_ready(hcl *cl)
{
    int local = 1;
    for (int a = 0; a < cl->nranks; a++) {
        for (int b = a + 1; b < cl->nranks; b++) {
            hconn *x = cl->ranks[a], *y = cl->ranks[b];
            if (x->dev == y->dev && strcmp(x->hostid, y->hostid) == 0) {
                char text[200];
                snprintf(text, sizeof(text),
                         "Duplicate GPU detected : rank %d and rank %d both "
                         "on CUDA device %d of host %s",
                         a, b, x->dev, x->hostid);
                cl_refuse(cl, GH_ncclInvalidUsage, text);
                return;
            }
        }
        local &= cl->ranks[a]->pid == cl->ranks[0]->pid;
    }
    for (int r = 0; r < cl->nranks; r++) {
        fn_msg m = {.type = MSG_READY,
                    .kind = local ? MODE_LOCAL : MODE_NET,
                    .root = r,
                    .count = (uint64_t)cl->nranks,
                    .nbytes = sizeof(cl->id)};
        fn_send_msg(cl->ranks[r]->fd, &m, cl->id);
    }
    if (local) { /* they meet in their process */
        for (int r = 0; r < cl->nranks; r++) {
            conn_close(cl->ranks[r]);
        }
        cl_free(cl);
        return;
    }
    cl->ready = 1;
}

static void
on_hello(hconn *c, const fn_hello *h)
{
    hcl *cl;
    if (h->nranks < 1 || h->nranks > MAX_RANKS || h->rank < 0 || h->rank >= h->nranks ||
        (cl = cl_find(h->id, h->nranks, 0)) == NULL) {
        reply(c, MSG_ERROR, GH_ncclInvalidArgument, "invalid rank or nranks");
        conn_close(c);
        return;
    }
    if (cl->nranks != h->nranks || cl->ranks[h->rank] != NULL) {
        reply(c, MSG_ERROR, GH_ncclInvalidUsage, "fakenccl: rank joined twice, or nranks differ");
        conn_close(c);
        return;
    }
    c->cl = cl;
    c->rank = h->rank;
    c->pid = h->pid;
    c->dev = h->dev;
    memcpy(c->hostid, h->hostid, sizeof(c->hostid));
    cl->ranks[h->rank] = c;
    if (++cl->joined == cl->nranks) {
        cl_ready(cl);
    }
}

/* Every parent rank of split `s` arrived: one clique per color, ranks ordered by key. */
static void
split_ready(hcl *s)
{
    for (int r = 0; r < s->nranks; r++) {
        hcl *child;
        int n = 0;
        if (s->ranks[r] == NULL) {
            continue;
        }
        if (s->color[r] < 0) { /* no new communicator for it */
            fn_msg m = {.type = MSG_READY, .kind = MODE_LOCAL, .root = -1};
            fn_send_msg(s->ranks[r]->fd, &m, NULL);
            conn_close(s->ranks[r]);
            s->ranks[r]->cl = NULL;
            s->ranks[r] = NULL;
            continue;
        }
        if ((child = calloc(1, sizeof(*child))) == NULL) {
            continue;
        }
        snprintf(child->id, sizeof(child->id), "%.90s/c%d", s->id, s->color[r]);
        for (int q = 0; q < s->nranks; q++) { /* the color's members by key, then parent rank */
            if (s->ranks[q] != NULL && s->color[q] == s->color[r]) {
                int at = n++;
                while (at > 0 && s->key[child->color[at - 1]] > s->key[q]) {
                    child->ranks[at] = child->ranks[at - 1];
                    child->color[at] = child->color[at - 1]; /* the parent rank, for the order */
                    at--;
                }
                child->ranks[at] = s->ranks[q];
                child->color[at] = q;
            }
        }
        for (int i = 0; i < n; i++) {
            s->ranks[child->color[i]] = NULL;
            child->ranks[i]->cl = child;
            child->ranks[i]->rank = i;
            child->color[i] = 0;
        }
        child->nranks = child->joined = n;
        child->next = cls;
        cls = child;
        cl_ready(child);
    }
    cl_free(s);
}

static void
on_split(hconn *c, const fn_split_hello *h)
{
    char id[GH_NCCL_UNIQUE_ID_BYTES] = {0};
    hcl *s;
    snprintf(id, sizeof(id), "%.100s/s%d", h->parent, h->seq);
    if (h->parent_nranks < 1 || h->parent_nranks > MAX_RANKS || h->parent_rank < 0 ||
        h->parent_rank >= h->parent_nranks || (s = cl_find(id, h->parent_nranks, 1)) == NULL ||
        s->ranks[h->parent_rank] != NULL) {
        reply(c, MSG_ERROR, GH_ncclInvalidArgument, "fakenccl: a bad split");
        conn_close(c);
        return;
    }
    c->cl = s;
    c->rank = h->parent_rank;
    c->pid = h->pid;
    c->dev = h->dev;
    memcpy(c->hostid, h->hostid, sizeof(c->hostid));
    s->ranks[h->parent_rank] = c;
    s->color[h->parent_rank] = h->color;
    s->key[h->parent_rank] = h->key;
    if (++s->arrived == s->nranks) {
        split_ready(s);
    }
}

/* ---- collectives and point-to-point ---- */

static void
run_slot(hcl *cl, hslot *s)
{
    unsigned char *out[MAX_RANKS] = {0};
    const unsigned char *in[MAX_RANKS];
    int ok = 1;
    for (int r = 0; r < cl->nranks; r++) {
        size_t n = fn_out_bytes(s->kind, s->count, s->dtype, cl->nranks, r, s->root);
        in[r] = s->in[r];
        if ((out[r] = malloc(n + 1)) == NULL) {
            ok = 0;
        }
    }
    if (ok && fn_compute(s->kind, s->count, s->dtype, s->op, s->root, cl->nranks, in, out) == 0) {
        for (int r = 0; r < cl->nranks; r++) {
            fn_msg m = {.type = MSG_RESULT,
                        .seq = s->seq,
                        .nbytes =
                            fn_out_bytes(s->kind, s->count, s->dtype, cl->nranks, r, s->root)};
            if (!cl->ranks[r]->dead) {
                fn_send_msg(cl->ranks[r]->fd, &m, out[r]);
            }
        }
    }
    else {
        cl_break(cl, GH_ncclSystemError, "fakenccl: the root ran out of memory");
    }
    for (int r = 0; r < cl->nranks; r++) {
        free(out[r]);
    }
}

static void
on_coll(hconn *c, const fn_msg *m, unsigned char *payload)
{
    hcl *cl = c->cl;
    hslot *s, **p;
    size_t want = fn_in_bytes(m->kind, (size_t)m->count, m->dtype, cl->nranks, c->rank, m->root);
    for (p = &cl->slots; *p != NULL && (*p)->seq != m->seq; p = &(*p)->next) {
    }
    if ((s = *p) == NULL) {
        if ((s = calloc(1, sizeof(*s))) == NULL) {
            free(payload);
            cl_break(cl, GH_ncclSystemError, "fakenccl: the root ran out of memory");
            return;
        }
        *s = (hslot){.seq = m->seq,
                     .kind = m->kind,
                     .dtype = m->dtype,
                     .op = m->op,
                     .root = m->root,
                     .count = (size_t)m->count};
        *p = s;
    }
    if (s->kind != m->kind || s->count != m->count || s->dtype != m->dtype || s->root != m->root ||
        m->nbytes != want || s->in[c->rank] != NULL) {
        free(payload);
        cl_break(cl, GH_ncclInvalidUsage,
                 "fakenccl: ranks called different collectives (or counts) in turn");
        return;
    }
    s->in[c->rank] = payload;
    if (++s->posted == cl->nranks) {
        run_slot(cl, s);
        *p = s->next;
        for (int r = 0; r < MAX_RANKS; r++) {
            free(s->in[r]);
        }
        free(s);
    }
}

/* Deliver every receive whose send came (in order, per pair of ranks). */
static void
match_p2p(hcl *cl)
{
    for (hp2p **pr = &cl->p2p; *pr != NULL;) {
        hp2p *recv = *pr, **ps;
        if (!recv->is_recv) {
            pr = &recv->next;
            continue;
        }
        for (ps = &cl->p2p;
             *ps != NULL && ((*ps)->is_recv || (*ps)->src != recv->src || (*ps)->dst != recv->dst);
             ps = &(*ps)->next) {
        }
        if (*ps == NULL) {
            pr = &recv->next;
            continue;
        }
        {
            hp2p *send = *ps;
            fn_msg m = {.type = MSG_P2P, .root = send->src, .nbytes = send->n};
            if (send->n != recv->n) {
                cl_break(cl, GH_ncclInvalidUsage, "fakenccl: send and recv sizes differ");
                return;
            }
            if (!cl->ranks[recv->dst]->dead) {
                fn_send_msg(cl->ranks[recv->dst]->fd, &m, send->data);
            }
            *ps = send->next; /* unlink both; the list changed: start again */
            for (pr = &cl->p2p; *pr != recv; pr = &(*pr)->next) {
            }
            *pr = recv->next;
            free(send->data);
            free(send);
            free(recv);
            pr = &cl->p2p;
        }
    }
}

static void
on_p2p(hconn *c, const fn_msg *m, unsigned char *payload)
{
    hcl *cl = c->cl;
    hp2p *q = calloc(1, sizeof(*q)), **p;
    if (q == NULL || m->root < 0 || m->root >= cl->nranks) {
        free(q);
        free(payload);
        cl_break(cl, GH_ncclInvalidArgument, "fakenccl: a bad send or receive");
        return;
    }
    q->is_recv = m->type == MSG_RECV;
    q->src = q->is_recv ? m->root : c->rank;
    q->dst = q->is_recv ? c->rank : m->root;
    q->n = q->is_recv ? (size_t)m->count : (size_t)m->nbytes;
    q->data = payload;
    for (p = &cl->p2p; *p != NULL; p = &(*p)->next) { /* in order of arrival */
    }
    *p = q;
    match_p2p(cl);
}

/* ---- the thread ---- */

static void
dispatch(hconn *c, fn_msg *m, unsigned char *payload)
{
    hcl *cl = c->cl;
    if (cl == NULL && m->type == MSG_HELLO && m->nbytes == sizeof(fn_hello)) {
        on_hello(c, (const fn_hello *)payload);
    }
    else if (cl == NULL && m->type == MSG_SPLIT && m->nbytes == sizeof(fn_split_hello)) {
        on_split(c, (const fn_split_hello *)payload);
    }
    else if (cl != NULL && cl->ready && !cl->broken && m->type == MSG_COLL) {
        on_coll(c, m, payload);
        return; /* the slot owns the payload */
    }
    else if (cl != NULL && cl->ready && !cl->broken &&
             (m->type == MSG_SEND || m->type == MSG_RECV)) {
        on_p2p(c, m, payload);
        return;
    }
    else if (cl != NULL && cl->ready && m->type == MSG_BYE) {
        c->bye = 1;
        cl_maybe_end(cl);
    }
    else if (cl == NULL || !cl->broken) { /* nonsense: not one of fakenccl's ranks */
        conn_close(c);
    }
    free(payload);
}

/* A connection closed: a forming clique forgets the rank; a net clique without its goodbye
   breaks. */
static void
gone(hconn *c)
{
    hcl *cl = c->cl;
    int rank = c->rank, pid = c->pid, bye = c->bye;
    conn_close(c);
    if (cl == NULL) {
        return;
    }
    if (!cl->ready) {
        cl->ranks[rank] = NULL;
        c->cl = NULL;
        cl->joined--;
        cl->arrived -= cl->split;
        if (cl->joined <= 0 && (!cl->split || cl->arrived <= 0)) {
            cl_free(cl);
        }
        return;
    }
    if (!bye) {
        char text[200];
        snprintf(text, sizeof(text),
                 "remote process exited or there was a network error: "
                 "fakenccl: rank %d (pid %d) left without destroying its communicator",
                 rank, pid);
        cl_break(cl, GH_ncclRemoteError, text);
    }
    cl_maybe_end(cl);
}

static void
add_conn(int fd)
{
    hconn *c;
    if (n_conns == cap_conns) {
        int cap = cap_conns ? 2 * cap_conns : 16;
        hconn **grown = realloc(conns, (size_t)cap * sizeof(*conns));
        if (grown == NULL) {
            close(fd);
            return;
        }
        conns = grown;
        cap_conns = cap;
    }
    if ((c = calloc(1, sizeof(*c))) == NULL) {
        close(fd);
        return;
    }
    c->fd = fd;
    conns[n_conns++] = c;
}

static void *
hub_main(void *arg)
{
    struct pollfd *fds = NULL;
    int listen_fd = (int)(intptr_t)arg;
    for (;;) {
        struct pollfd *grown = realloc(fds, (size_t)(n_conns + 1) * sizeof(*fds));
        int n = n_conns;
        if (grown == NULL) {
            sleep(1);
            continue;
        }
        fds = grown;
        fds[0] = (struct pollfd){.fd = listen_fd, .events = POLLIN};
        for (int i = 0; i < n; i++) {
            fds[i + 1] = (struct pollfd){.fd = conns[i]->fd, .events = POLLIN};
        }
        if (poll(fds, (nfds_t)n + 1, -1) < 0) {
            continue;
        }
        for (int i = 0; i < n; i++) {
            hconn *c = conns[i];
            fn_msg m;
            unsigned char *payload;
            if (c->dead || !(fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR))) {
                continue;
            }
            if (fn_recv_msg(c->fd, &m, &payload) != 0) {
                gone(c);
            }
            else {
                dispatch(c, &m, payload);
            }
        }
        if (fds[0].revents & POLLIN) {
            int fd = accept(listen_fd, NULL, NULL);
            if (fd >= 0) {
                add_conn(fd);
            }
        }
        for (int i = 0; i < n_conns;) { /* forget the closed ones no clique names */
            if (conns[i]->dead && conns[i]->cl == NULL) {
                free(conns[i]);
                conns[i] = conns[--n_conns];
            }
            else {
                i++;
            }
        }
    }
    return NULL;
}

/* Listen on 127.0.0.1 (a port of the system's choosing) and start the thread; hub_mu held. */
static int
hub_start(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    pthread_attr_t attr;
    pthread_t thread;
    sigset_t all, old;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), err;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 128) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    /* a child of fork() has no thread: it starts its own, with fresh state */
    conns = NULL;
    n_conns = cap_conns = 0;
    cls = NULL;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigfillset(&all); /* signals go to the application's threads */
    pthread_sigmask(SIG_BLOCK, &all, &old);
    err = pthread_create(&thread, &attr, hub_main, (void *)(intptr_t)fd);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (err != 0) {
        close(fd);
        return -1;
    }
    hub_fd = fd;
    hub_port = ntohs(a.sin_port);
    hub_pid = getpid();
    return 0;
}

int
fn_hub_new_id(char id[GH_NCCL_UNIQUE_ID_BYTES])
{
    int rc = 0;
    pthread_mutex_lock(&hub_mu);
    if (hub_pid != getpid()) {
        rc = hub_start();
    }
    if (rc == 0) {
        memset(id, 0, GH_NCCL_UNIQUE_ID_BYTES);
        snprintf(id, GH_NCCL_UNIQUE_ID_BYTES, "fakenccl:127.0.0.1:%d:%d:%lu:%ld", hub_port,
                 (int)hub_pid, ++hub_counter, (long)time(NULL));
    }
    pthread_mutex_unlock(&hub_mu);
    return rc;
}

int
fn_id_parse(const char *id, fn_root_addr *addr)
{
    char buf[GH_NCCL_UNIQUE_ID_BYTES + 1];
    char *host, *port, *rest;
    memcpy(buf, id, GH_NCCL_UNIQUE_ID_BYTES);
    buf[GH_NCCL_UNIQUE_ID_BYTES] = 0;
    if (strncmp(buf, "fakenccl:", 9) != 0 || (host = buf + 9, port = strchr(host, ':')) == NULL) {
        return -1;
    }
    *port++ = 0;
    addr->port = (int)strtol(port, &rest, 10);
    if (rest == port || *rest != ':' || addr->port <= 0 || addr->port > 65535) {
        return -1;
    }
    snprintf(addr->host, sizeof(addr->host), "%.63s", host);
    return 0;
}
