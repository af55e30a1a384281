/* csrc/nccl/'s private header: what nccl/'s files share.  Each file of nccl/ includes it
 * (it includes nccl.h and nccl_api.h); no file of another folder does.
 */
#ifndef GPUHOST_NCCL_INTERNAL_H
#define GPUHOST_NCCL_INTERNAL_H

#include "nccl.h"
#include "nccl_api.h"

/* ---- nccl_api.c, nccl_comm.c, nccl_args.c, nccl_collectives.c, nccl_register.c ---- */
/* NCCL in gpuhost._core: the loaded library (nccl_api.c) and the Communicator type
 * (nccl_comm.c), declared for module.c and each other.
 */

/* The last all_reduce of a Communicator on gpuhost arrays, kept so that the next call with
   the very same arguments goes straight to ncclAllReduce (nccl_collectives.c): the argument
   vector as passed (weak references to the arrays and the stream, strong ones to the rest)
   and the NCCL call it made. */
#define GH_NCCL_FAST_ARGS 4
typedef struct {
    int n;                              /* arguments kept (0: nothing kept) */
    PyObject *items[GH_NCCL_FAST_ARGS]; /* as passed, positional then keyword */
    unsigned char weak[GH_NCCL_FAST_ARGS];
    PyObject *kwnames; /* strong, or NULL */
    Py_ssize_t nargs;
    int i_send, i_recv, i_stream; /* their places in items (-1: not given) */
    const void *sendbuf;          /* the call */
    void *recvbuf;
    size_t count;
    int dtype, op_code;
    CUstream handle;
} gh_nccl_fast;

typedef struct gh_nccl_reg gh_nccl_reg;

/* One rank of a communicator (gpuhost._core.NcclCommunicator). */
typedef struct {
    PyObject_HEAD
    gh_state *st;        /* the module state of its C type (which outlives it) */
    gh_ncclComm_t comm;  /* NULL once destroyed or aborted */
    gh_context *context; /* strong: the primary context of the rank's device */
    int rank, size, device;
    int ended;           /* 0 live, 1 destroyed, 2 aborted */
    int nonblocking;     /* made with blocking=False: NCCL's calls may answer ncclInProgress */
    int initializing;    /* its non-blocking creation (or split) was not yet seen complete */
    gh_ncclComm_t child; /* where a non-blocking ncclCommSplit leaves its communicator */
    gh_nccl_reg *regs;   /* its live Registrations (borrowed: each unlinks itself) */
    gh_nccl_fast fast;
    Py_ssize_t fast_calls; /* all_reduces that took the fast path (_fast_calls, for tests) */
} gh_nccl_comm;

/* A buffer registered with a communicator (nccl_register.c). */
struct gh_nccl_reg {
    PyObject_HEAD
    gh_nccl_comm *comm; /* strong */
    PyObject *array;    /* strong: the DeviceArray registered */
    void *handle;       /* ncclCommRegister's; NULL once deregistered */
    CUdeviceptr ptr;
    size_t size;
    gh_nccl_reg *prev, *next; /* in comm->regs */
};

/* The collectives (nccl_collectives.c): FASTCALL methods of the Communicator, and _raw. */
#define GH_NCCL_FASTCALL(name)                                                                     \
    PyObject *gh_nccl_##name(gh_nccl_comm *self, PyObject *const *args, Py_ssize_t nargs,          \
                             PyObject *kwnames);
GH_NCCL_FASTCALL(all_reduce)
GH_NCCL_FASTCALL(reduce)
GH_NCCL_FASTCALL(broadcast)
GH_NCCL_FASTCALL(all_gather)
GH_NCCL_FASTCALL(reduce_scatter)
GH_NCCL_FASTCALL(send)
GH_NCCL_FASTCALL(recv)
GH_NCCL_FASTCALL(all_to_all)
#undef GH_NCCL_FASTCALL

/* ---- nccl_api.c ---- */
/* libnccl's function table, filled once by gh_nccl_ensure(). */
extern gh_nccl_api gh_nccl;

/* Load libnccl the first time; 0, or -1 with NcclSupportError naming what was tried. */
int gh_nccl_ensure(void);

/* "ncclAllReduce" for GH_NCCL_AllReduce. */
const char *gh_nccl_name(gh_nccl_id id);

/* Raise gpuhost.errors.NcclError for `res` returned by `id`, with ncclGetLastError's text
   (NCCL keeps one per process: `comm` may be NULL); returns -1. */
int gh_raise_nccl(gh_ncclResult_t res, gh_nccl_id id, gh_ncclComm_t comm);

/* The optional entry point `id` (NCCL 2.19's), loaded: 0, or -1 with NcclSupportError naming
   the version that added it. */
int gh_nccl_optional(gh_nccl_id id);

/* ---- nccl_args.c ---- */
/* The collectives' argument helpers (nccl_args.c).  FASTCALL arguments of `call` by position
   or name: out[i] is names[i]'s (NULL where not given); the first `required` must be given. */
int gh_nccl_parse_args(const char *call, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                       const char *const *names, int n, int required, PyObject **out);

/* An int argument (NULL: `dflt`); TypeError / ValueError naming it. */
int gh_nccl_int_arg(const char *call, const char *name, PyObject *obj, int dflt, int *out);

/* NCCL's code of an op argument ('sum', ..., or 0-4; NULL: sum), or -1 with ValueError. */
int gh_nccl_parse_op(const char *call, PyObject *obj);

/* The NCCL type reducing dtype `descr` (a PyArray_Descr *) with `op`; *mult: NCCL elements
   per array element (complex numbers reduce as pairs of reals).  -1 with TypeError. */
int gh_nccl_reduce_dtype(const char *call, void *descr, int op, size_t *mult);

/* ---- nccl_collectives.c ---- */
/* Forget the fast path's arguments (nccl_collectives.c). */
void gh_nccl_fast_clear(gh_nccl_fast *fast);

PyObject *gh_nccl_raw(gh_nccl_comm *self, PyObject *args);

/* ---- nccl_ready.c ---- */
/* 0 if the communicator can be used, else ValueError naming `call` (destroyed, aborted, still
   being created).  A non-blocking one whose last call is still in progress is waited for. */
int gh_nccl_comm_live(gh_nccl_comm *self, const char *call);

/* Wait (without the GIL, polling ncclCommGetAsyncError) until a non-blocking communicator's
   state leaves ncclInProgress; the state, or ncclInProgress after `timeout` seconds (< 0: no
   limit).  Signals are looked at meanwhile: -1 with their exception set.  *state set. */
int gh_nccl_comm_settle(gh_nccl_comm *self, double timeout, gh_ncclResult_t *state);

/* Seconds on the monotonic clock. */
double gh_nccl_now(void);

/* ---- nccl_register.c ---- */
/* Deregister every live Registration of `self` before its end (nccl_register.c); never
   raises. */
void gh_nccl_regs_end(gh_nccl_comm *self);

/* Communicator.register (nccl_register.c). */
PyObject *gh_nccl_register(gh_nccl_comm *self, PyObject *array);

#endif /* GPUHOST_NCCL_INTERNAL_H */
