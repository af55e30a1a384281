/* Whether a Communicator can be used now (not destroyed, aborted or still being created),
 * and the wait for a non-blocking one to settle: what its collectives, its registrations
 * and its own methods (nccl_comm.c) ask before they call NCCL.
 */
#include "nccl_internal.h"

#include <time.h>

int
gh_nccl_comm_live(gh_nccl_comm *self, const char *call)
{
    gh_ncclResult_t res, state = GH_ncclSuccess;
    int rc = 0;
    if (self->comm == NULL) {
        PyErr_Format(PyExc_ValueError, "%s(): the Communicator was %s", call,
                     self->ended == 2 ? "aborted" : "destroyed");
        return -1;
    }
    if (!self->initializing && !self->nonblocking) {
        return 0;
    }
    if ((res = gh_nccl.CommGetAsyncError(self->comm, &state)) != GH_ncclSuccess) {
        return gh_raise_nccl(res, GH_NCCL_CommGetAsyncError, self->comm);
    }
    if (state == GH_ncclInProgress && self->initializing) {
        PyErr_Format(PyExc_ValueError,
                     "%s(): the Communicator is still being created (blocking=False): call "
                     "wait_ready() first",
                     call);
        return -1;
    }
    if (state == GH_ncclInProgress) { /* an earlier call of a non-blocking one, still running */
        rc = gh_nccl_comm_settle(self, -1, &state);
    }
    if (rc < 0) {
        return -1;
    }
    if (state != GH_ncclSuccess) {
        return gh_raise_nccl(state, GH_NCCL_CommGetAsyncError, self->comm);
    }
    self->initializing = 0;
    return 0;
}

double
gh_nccl_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int
gh_nccl_comm_settle(gh_nccl_comm *self, double timeout, gh_ncclResult_t *state)
{
    double deadline = timeout < 0 ? -1 : gh_nccl_now() + timeout;
    gh_ncclResult_t res = GH_ncclSuccess, st = GH_ncclInProgress;
    long spins = 0;
    for (;;) {
        int late = 0;
        Py_BEGIN_ALLOW_THREADS
        for (int i = 0; i < 200; i++, spins++) { /* then the GIL back, for signals */
            struct timespec nap = {0, spins < 1000 ? 2000 : 500000}; /* 2 µs, later 0.5 ms */
            res = gh_nccl.CommGetAsyncError(self->comm, &st);
            if (res != GH_ncclSuccess || st != GH_ncclInProgress ||
                (late = deadline >= 0 && gh_nccl_now() > deadline)) {
                break;
            }
            nanosleep(&nap, NULL);
        }
        Py_END_ALLOW_THREADS
        if (res != GH_ncclSuccess) {
            *state = res;
            return 1;
        }
        if (st != GH_ncclInProgress || late) {
            *state = st;
            return 0;
        }
        if (PyErr_CheckSignals() < 0) {
            return -1;
        }
    }
}
