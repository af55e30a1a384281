/* fakenccl's parts, shared by its files (a test tool: see fakenccl.c for what it is).
 *
 *   fakenccl.c   the entry points, errors, groups, the control API
 *   fn_local.c   communicators whose ranks all live in this process (cliques in memory)
 *   fn_data.c    element types and reductions; a collective computed on host copies
 *   fn_hub.c     the root: ncclGetUniqueId's listening thread, which forms cliques and, for
 *                ranks in several processes, relays their collectives (one per process)
 *   fn_net.c     a rank of a communicator spread over processes: its connection to the root
 *   fn_async.c   non-blocking creation and splits (a thread per joining rank), registration,
 *                ncclMemAlloc
 */
#ifndef FAKENCCL_FN_INTERNAL_H
#define FAKENCCL_FN_INTERNAL_H

#define _GNU_SOURCE
#include <cuda.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "nccl/nccl_api.h"

#ifndef FAKENCCL_VERSION /* the NCCL it plays; below 21900, one without registration */
#define FAKENCCL_VERSION 22809
#endif

#define FN_HIDDEN   __attribute__((visibility("hidden")))
#define FN_API      __attribute__((visibility("default")))
#define MAX_RANKS   16
#define MAX_OPS     256
#define HOSTID_SIZE 64

typedef gh_ncclResult_t R;

/* libnccl's entry points (their definitions are spread over the files). */
#define FN_ENTRY(ret, name, params) FN_API ret nccl##name params;
GH_NCCL_API_LIST(FN_ENTRY)
#undef FN_ENTRY

/* ---- the fake driver (fakenccl.c) ---- */

typedef struct {
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*StreamIsCapturing)(CUstream, CUstreamCaptureStatus *);
    CUresult (*LaunchHostFunc)(CUstream, CUhostFn, void *);
    CUresult (*CtxGetCurrent)(CUcontext *);
    CUresult (*CtxGetDevice)(CUdevice *);
    CUresult (*CtxPushCurrent)(CUcontext);
    CUresult (*CtxPopCurrent)(CUcontext *);
    CUresult (*PointerGetAttribute)(void *, CUpointer_attribute, CUdeviceptr);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    void *(*host_view)(unsigned long long, size_t); /* fakecuda_host_view */
} fn_driver;

FN_HIDDEN extern fn_driver cu;
/* Reach the fake driver (the one GPUHOST_CUDA_DRIVER names, already loaded); 0 or -1. */
FN_HIDDEN int fn_driver_load(void);

/* ---- communicators ---- */

enum { MODE_LOCAL, MODE_NET };

struct clique;
struct fn_net;

struct gh_ncclComm {
    int rank, nranks, dev;
    int mode;              /* MODE_LOCAL (cl) or MODE_NET (net) */
    struct clique *cl;     /* local mode: the clique in this process */
    struct fn_net *net;    /* net mode: the connection to the root */
    R async;               /* ncclInProgress while a non-blocking creation or split runs */
    int blocking;          /* as its config said (1 by default) */
    volatile int aborting; /* ncclCommAbort was called: joins and waits give up */
    pthread_t joiner;      /* the thread of a non-blocking creation or split */
    int has_joiner;
    int splits;                    /* how many splits this rank made (they pair up in order) */
    struct gh_ncclComm *split_tmp; /* a split's joining rank, while it joins (for an abort) */
    int registrations;
    char id[GH_NCCL_UNIQUE_ID_BYTES]; /* its clique's id (net mode: names the root) */
    struct gh_ncclComm *prev, *next;  /* every live communicator */
    char last[512];
};

/* The lock of every fakenccl structure but a connection's own (fn_net.c). */
FN_HIDDEN extern pthread_mutex_t fn_lock;
FN_HIDDEN extern pthread_cond_t fn_cond; /* joins, splits and local collectives wait on it */
FN_HIDDEN extern int fn_live;

/* The fault armed for entry point nccl<name> (fakenccl_fail), once; 0 if none. */
FN_HIDDEN R fn_injected(const char *name);
#define ENTER(name)                                                                                \
    do {                                                                                           \
        R inj_ = fn_injected(name);                                                                \
        if (inj_ != 0) {                                                                           \
            return inj_;                                                                           \
        }                                                                                          \
    } while (0)

/* Set the last-error text (comm's, or the global one) and return `code`. */
FN_HIDDEN R fn_fail(struct gh_ncclComm *comm, R code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* How long a blocking join waits for the other ranks (FAKENCCL_JOIN_TIMEOUT, default 30 s;
   a real NCCL waits forever, a test double must not). */
FN_HIDDEN double fn_join_timeout(void);
/* A new communicator struct (not yet joined), counted live. */
FN_HIDDEN struct gh_ncclComm *fn_comm_new(int rank, int nranks, int dev);
/* Forget a communicator: its clique or connection let go, counted dead, freed. */
FN_HIDDEN R fn_comm_end(struct gh_ncclComm *comm, int abort);
/* The device current on this thread, or -1. */
FN_HIDDEN int fn_current_device(void);
/* This host's name for NCCL: NCCL_HOSTID, else the host name. */
FN_HIDDEN void fn_host_id(char out[HOSTID_SIZE]);

/* ---- joining: the unique id and the root ---- */

/* "fakenccl:<host>:<port>:<pid>:<counter>" in a unique id's 128 bytes. */
typedef struct {
    char host[64];
    int port;
} fn_root_addr;

/* Parse a unique id made by ncclGetUniqueId; 0 or -1 (not fakenccl's). */
FN_HIDDEN int fn_id_parse(const char *id, fn_root_addr *addr);
/* Start this process's root (once per process) and make a new id naming it; 0 or -1. */
FN_HIDDEN int fn_hub_new_id(char id[GH_NCCL_UNIQUE_ID_BYTES]);

/* Join clique `id` as comm->rank: through the root when there are several ranks (which says
   whether they all live in this process), then locally or over the connection.  Blocks until
   every rank joined, comm->aborting is set, or `timeout` seconds pass (< 0: no limit). */
FN_HIDDEN R fn_join(struct gh_ncclComm *comm, const char *id, double timeout);
/* Split `parent` as color/key into *child (NULL for color -1), blocking like fn_join. */
FN_HIDDEN R fn_split(struct gh_ncclComm *parent, int color, int key, int seq,
                     struct gh_ncclComm **child, double timeout);

/* ---- non-blocking creation and splits, registration (fn_async.c) ---- */

/* Join clique `id` on a thread of comm's own; ncclInProgress (comm->async says the rest). */
FN_HIDDEN R fn_async_join(struct gh_ncclComm *comm, const char *id);
/* Split `parent` on a thread; *newcomm is set when parent->async leaves ncclInProgress. */
FN_HIDDEN R fn_async_split(struct gh_ncclComm *parent, int color, int key, int seq,
                           struct gh_ncclComm **newcomm, int child_blocking);
/* Drop comm's registrations (its end); fn_lock held. */
FN_HIDDEN void fn_reg_drop(struct gh_ncclComm *comm);

/* ---- local mode (fn_local.c) ---- */

/* Every rank's part of one collective of a local clique. */
typedef struct fk_op {
    int kind; /* GH_NCCL_AllReduce ... GH_NCCL_Recv */
    int posted;
    size_t count;
    int dtype, op, root;
    const void *send[MAX_RANKS];
    void *recv[MAX_RANKS];
    CUstream stream[MAX_RANKS];
    CUcontext ctx[MAX_RANKS];
    int peer_of[MAX_RANKS]; /* send/recv: the rank that posted it */
} fk_op;

/* Join local clique `id` of nranks as comm->rank (all its ranks are in this process); waits
   for them as fn_join says.  fn_lock not held. */
FN_HIDDEN R fn_local_join(struct gh_ncclComm *comm, const char *id, double timeout);
/* A clique of the devices in `devlist` made at once (ncclCommInitAll); fn_lock held. */
FN_HIDDEN R fn_local_init_all(struct gh_ncclComm **comms, int ndev, const int *devlist);
FN_HIDDEN R fn_local_split(struct gh_ncclComm *parent, int color, int key, int seq,
                           struct gh_ncclComm **child, double timeout);
/* Post one operation of a local communicator (fn_lock not held). */
FN_HIDDEN R fn_local_post(struct gh_ncclComm *comm, int kind, const void *send, void *recv,
                          size_t count, int dtype, int op, int root, CUstream stream);
/* Leave the clique (fn_lock held). */
FN_HIDDEN void fn_local_leave(struct gh_ncclComm *comm);
/* Operations posted and not yet run, over every clique (fn_lock held). */
FN_HIDDEN int fn_local_pending(void);

/* ---- data (fn_data.c) ---- */

FN_HIDDEN size_t fn_type_size(int dtype);
/* In bytes: what rank `r` contributes to collective `kind` of `count` elements over n ranks
   (in_bytes), and what it receives (out_bytes); 0 where it has nothing to give or get. */
FN_HIDDEN size_t fn_in_bytes(int kind, size_t count, int dtype, int n, int r, int root);
FN_HIDDEN size_t fn_out_bytes(int kind, size_t count, int dtype, int n, int r, int root);
/* Compute a collective from every rank's input (in[r], fn_in_bytes of it) into every rank's
   output (out[r], fn_out_bytes of it).  0, or -1 when out of memory. */
FN_HIDDEN int fn_compute(int kind, size_t count, int dtype, int op, int root, int n,
                         const unsigned char *const *in, unsigned char *const *out);

/* ---- net mode (fn_net.c) ---- */

/* One operation of a net-mode rank, run by a host function on its stream. */
typedef struct fn_netop {
    int kind;
    size_t count;
    int dtype, op, root; /* root: the peer of Send/Recv */
    const void *send;
    void *recv;
    uint64_t seq; /* set when it runs */
} fn_netop;

/* Post ops[0..n) of net-mode `comm` on `stream` as one host function (a group's ops go
   together: every message goes out before any answer is waited for). */
FN_HIDDEN R fn_net_post(struct gh_ncclComm *comm, const fn_netop *ops, int n, CUstream stream);
/* Say goodbye (destroy: wait for the other ranks' goodbyes, a while at most) or just close
   (abort); the connection is gone after either. */
FN_HIDDEN void fn_net_close(struct gh_ncclComm *comm, int abort);
/* Wake an operation of comm waiting on its connection (abort). */
FN_HIDDEN void fn_net_interrupt(struct gh_ncclComm *comm);
/* The clique's error once it broke (a rank died), else ncclSuccess. */
FN_HIDDEN R fn_net_async(struct gh_ncclComm *comm);
/* Connect to the root at `addr` and send `hello` (a join or a split); then wait for the
   root's answer: 0 with *mode, *rank, *nranks (and `child_id` for a split) filled, or an NCCL
   error with the text in comm->last. */
FN_HIDDEN R fn_net_join(struct gh_ncclComm *comm, const fn_root_addr *addr, int type,
                        const void *hello, size_t hello_size, double timeout, int *mode, int *rank,
                        int *nranks, char child_id[GH_NCCL_UNIQUE_ID_BYTES]);
/* Pending net ops of the open group; fn_group_flush posts them (fakenccl.c). */
FN_HIDDEN int fn_group_depth(void);
FN_HIDDEN R fn_group_add(struct gh_ncclComm *comm, const fn_netop *op, CUstream stream);

/* ---- the wire (fn_hub.c and fn_net.c) ---- */

enum {
    MSG_HELLO = 1, /* rank -> root: join (fn_hello) */
    MSG_SPLIT,     /* rank -> root: split (fn_split_hello) */
    MSG_READY,     /* root -> rank: joined: kind = mode, root = rank, count = nranks (+ id) */
    MSG_ERROR,     /* root -> rank: code, text */
    MSG_COLL,      /* rank -> root: one collective's contribution */
    MSG_RESULT,    /* root -> rank: its part of a collective's result */
    MSG_SEND,      /* rank -> root: data for peer */
    MSG_RECV,      /* rank -> root: ask for data from peer */
    MSG_P2P,       /* root -> rank: data from peer */
    MSG_BROKEN,    /* root -> rank: a rank is gone: code, text */
    MSG_BYE,       /* rank -> root: destroying */
    MSG_BYE_ACK,   /* root -> rank: every rank said goodbye (or the clique broke) */
};

#define FN_MAGIC 0x6663636eu /* "nccf" */

typedef struct {
    uint32_t magic, type;
    int32_t kind, dtype, op, root, code, pad;
    uint64_t seq, count, nbytes;
} fn_msg;

typedef struct {
    char id[GH_NCCL_UNIQUE_ID_BYTES];
    int32_t nranks, rank, pid, dev;
    char hostid[HOSTID_SIZE];
} fn_hello;

typedef struct {
    char parent[GH_NCCL_UNIQUE_ID_BYTES];
    int32_t parent_nranks, parent_rank, color, key, seq, pid, dev, pad;
    char hostid[HOSTID_SIZE];
} fn_split_hello;

/* Write a message (header, then nbytes of payload); 0 or -1. */
FN_HIDDEN int fn_send_msg(int fd, fn_msg *m, const void *payload);
/* Read one message; the payload (m->nbytes of it) into a malloc'd *payload (NULL if none).
   0, or -1 on end of file or an error. */
FN_HIDDEN int fn_recv_msg(int fd, fn_msg *m, unsigned char **payload);

#endif /* FAKENCCL_FN_INTERNAL_H */
