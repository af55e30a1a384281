/* NCCL in gpuhost._core: the loaded library (nccl_api.c) and the Communicator type
 * (nccl_comm.c), declared for module.c and each other.
 */
#ifndef GPUHOST_NCCL_COMM_H
#define GPUHOST_NCCL_COMM_H

#include "state.h"
#include "nccl_api.h"

/* libnccl's function table, filled once by gh_nccl_ensure(). */
extern gh_nccl_api gh_nccl;

/* Load libnccl the first time; 0, or -1 with NcclSupportError naming what was tried. */
int gh_nccl_ensure(void);
/* "ncclAllReduce" for GH_NCCL_AllReduce. */
const char *gh_nccl_name(gh_nccl_id id);
/* Raise gpuhost.errors.NcclError for `res` returned by `id`, with ncclGetLastError's text
   (NCCL keeps one per process: `comm` may be NULL); returns -1. */
int gh_raise_nccl(gh_ncclResult_t res, gh_nccl_id id, gh_ncclComm_t comm);

/* One rank of a communicator (gpuhost._core.NcclCommunicator). */
typedef struct {
    PyObject_HEAD
    gh_ncclComm_t comm;  /* NULL once destroyed or aborted */
    gh_context *context; /* strong: the primary context of the rank's device */
    int rank, size, device;
    int ended; /* 0 live, 1 destroyed, 2 aborted */
} gh_nccl_comm;

/* The module state from the Communicator type or a Python subclass of it. */
gh_state *gh_nccl_comm_state(PyTypeObject *tp);
/* 0 if the communicator can be used, else ValueError naming `call` (destroyed, aborted). */
int gh_nccl_comm_live(gh_nccl_comm *self, const char *call);

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
PyObject *gh_nccl_raw(gh_nccl_comm *self, PyObject *args);

/* Add the Communicator type and the NCCL module functions to `module`. */
int gh_nccl_init(PyObject *module, gh_state *st);
int gh_nccl_comm_init_type(PyObject *module, gh_state *st);

#endif /* GPUHOST_NCCL_COMM_H */
