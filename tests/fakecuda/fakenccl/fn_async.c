/* fakenccl's non-blocking creation and splits, user-buffer registration and ncclMemAlloc.
 *
 * A non-blocking ncclCommInitRankConfig (or a split of a non-blocking communicator) joins on a
 * thread of its own, as NCCL's does: the communicator's (for a split, the parent's)
 * asynchronous error is ncclInProgress until the join ends, then ncclSuccess or the join's
 * error.  The creation returns ncclInProgress at once; the split returns ncclSuccess with
 * *newcomm still NULL, as NCCL's ncclCommSplit does (it returns its own result, not its group's
 * ncclInProgress), and writes *newcomm when the join ends.  It waits for the other ranks for
 * ever, as NCCL does; ncclCommAbort ends it.
 *
 * Registrations are recorded per communicator (ncclCommDeregister, or its end, forgets them);
 * ncclMemAlloc is cuMemAlloc on the current device.  Neither exists in a build playing NCCL
 * 2.18 (FAKENCCL_VERSION below 21900): gpuhost must find them missing.
 */
#include "fn_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    struct gh_ncclComm *comm; /* the one joining, or the parent of the split */
    char id[GH_NCCL_UNIQUE_ID_BYTES];
    int split, color, key, seq, child_blocking;
    struct gh_ncclComm **newcomm;
} job;

static void *
joiner_main(void *arg)
{
    job *j = arg;
    struct gh_ncclComm *child = NULL;
    R res = j->split ? fn_split(j->comm, j->color, j->key, j->seq, &child, -1)
                     : fn_join(j->comm, j->id, -1);
    pthread_mutex_lock(&fn_lock);
    if (j->split) {
        if (child != NULL) {
            child->blocking = j->child_blocking;
        }
        *j->newcomm = child;
    }
    j->comm->async = res;
    pthread_mutex_unlock(&fn_lock);
    free(j);
    return NULL;
}

static R
start(job *j)
{
    struct gh_ncclComm *comm = j->comm;
    if (comm->has_joiner) { /* the last one's thread (done: async left ncclInProgress) */
        if (comm->async == GH_ncclInProgress) {
            free(j);
            return fn_fail(comm, GH_ncclInvalidUsage, "fakenccl: an operation is in progress");
        }
        pthread_join(comm->joiner, NULL);
        comm->has_joiner = 0;
    }
    comm->async = GH_ncclInProgress;
    if (pthread_create(&comm->joiner, NULL, joiner_main, j) != 0) {
        comm->async = GH_ncclSuccess;
        free(j);
        return fn_fail(comm, GH_ncclSystemError, "fakenccl: no thread to join on");
    }
    comm->has_joiner = 1;
    return GH_ncclInProgress;
}

R
fn_async_join(struct gh_ncclComm *comm, const char *id)
{
    job *j = calloc(1, sizeof(*j));
    if (j == NULL) {
        return fn_fail(comm, GH_ncclSystemError, "out of memory");
    }
    j->comm = comm;
    memcpy(j->id, id, sizeof(j->id));
    return start(j);
}

R
fn_async_split(struct gh_ncclComm *parent, int color, int key, int seq,
               struct gh_ncclComm **newcomm, int child_blocking)
{
    job *j = calloc(1, sizeof(*j));
    if (j == NULL) {
        return fn_fail(parent, GH_ncclSystemError, "out of memory");
    }
    *j = (job){.comm = parent,
               .split = 1,
               .color = color,
               .key = key,
               .seq = seq,
               .child_blocking = child_blocking,
               .newcomm = newcomm};
    R res = start(j);
    return res == GH_ncclInProgress ? GH_ncclSuccess : res;
}

/* ---- registration and NCCL's allocator ---- */

typedef struct fn_reg {
    struct gh_ncclComm *comm; /* NULL: an ncclMemAlloc allocation */
    void *buff;
    size_t size;
    struct fn_reg *next;
} fn_reg;

static fn_reg *regs; /* registrations and allocations, under fn_lock */

void
fn_reg_drop(struct gh_ncclComm *comm)
{
    for (fn_reg **p = &regs; *p != NULL;) {
        if ((*p)->comm == comm) {
            fn_reg *r = *p;
            *p = r->next;
            free(r);
        }
        else {
            p = &(*p)->next;
        }
    }
}

static int
count(int registrations)
{
    int n = 0;
    pthread_mutex_lock(&fn_lock);
    for (fn_reg *r = regs; r != NULL; r = r->next) {
        n += registrations ? r->comm != NULL : r->comm == NULL;
    }
    pthread_mutex_unlock(&fn_lock);
    return n;
}

FN_API int fakenccl_registrations(void);
FN_API int fakenccl_mem_allocs(void);

int
fakenccl_registrations(void)
{
    return count(1);
}

int
fakenccl_mem_allocs(void)
{
    return count(0);
}

#if FAKENCCL_VERSION >= 21900
static R
remember(struct gh_ncclComm *comm, void *buff, size_t size, fn_reg **out)
{
    fn_reg *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        return fn_fail(comm, GH_ncclSystemError, "out of memory");
    }
    *r = (fn_reg){comm, buff, size, NULL};
    pthread_mutex_lock(&fn_lock);
    r->next = regs;
    regs = r;
    pthread_mutex_unlock(&fn_lock);
    if (out != NULL) {
        *out = r;
    }
    return GH_ncclSuccess;
}

/* Forget the record of `comm` that `match` names (the handle, or the allocation's address);
   1 if found. */
static int
forget(struct gh_ncclComm *comm, const void *match, int by_handle)
{
    int found = 0;
    pthread_mutex_lock(&fn_lock);
    for (fn_reg **p = &regs; *p != NULL; p = &(*p)->next) {
        fn_reg *r = *p;
        if (r->comm == comm && (by_handle ? (const void *)r == match : r->buff == match)) {
            *p = r->next;
            free(r);
            found = 1;
            break;
        }
    }
    pthread_mutex_unlock(&fn_lock);
    return found;
}

R
ncclCommRegister(const gh_ncclComm_t comm, void *buff, size_t size, void **handle)
{
    int ordinal = -1;
    fn_reg *r;
    R res;
    ENTER("CommRegister");
    if (comm == NULL || handle == NULL) {
        return fn_fail(comm, GH_ncclInvalidArgument, "comm or handle argument is NULL");
    }
    if (comm->cl == NULL && comm->net == NULL) {
        return fn_fail(comm, GH_ncclInvalidUsage, "fakenccl: the communicator is not ready");
    }
    if (buff == NULL || size == 0 || cu.host_view((uintptr_t)buff, size) == NULL ||
        cu.PointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (CUdeviceptr)buff) !=
            CUDA_SUCCESS ||
        ordinal != comm->dev) {
        return fn_fail(comm, GH_ncclInvalidArgument,
                       "ncclCommRegister: %p (%zu bytes) is not memory of device %d", buff, size,
                       comm->dev);
    }
    if ((res = remember(comm, buff, size, &r)) == GH_ncclSuccess) {
        *handle = r;
    }
    return res;
}

R
ncclCommDeregister(const gh_ncclComm_t comm, void *handle)
{
    ENTER("CommDeregister");
    if (comm == NULL || handle == NULL || !forget(comm, handle, 1)) {
        return fn_fail(comm, GH_ncclInvalidArgument,
                       "ncclCommDeregister: not a registration of this communicator");
    }
    return GH_ncclSuccess;
}

R
ncclMemAlloc(void **ptr, size_t size)
{
    CUdeviceptr d = 0;
    R res;
    ENTER("MemAlloc");
    if (ptr == NULL || size == 0) {
        return fn_fail(NULL, GH_ncclInvalidArgument, "ncclMemAlloc: ptr is NULL or size is 0");
    }
    if (fn_driver_load() != 0 || cu.MemAlloc(&d, size) != CUDA_SUCCESS) {
        return fn_fail(NULL, GH_ncclUnhandledCudaError, "ncclMemAlloc: cuMemAlloc failed");
    }
    if ((res = remember(NULL, (void *)d, size, NULL)) != GH_ncclSuccess) {
        cu.MemFree(d);
        return res;
    }
    *ptr = (void *)d;
    return GH_ncclSuccess;
}

R
ncclMemFree(void *ptr)
{
    ENTER("MemFree");
    if (ptr == NULL || !forget(NULL, ptr, 0)) {
        return fn_fail(NULL, GH_ncclInvalidArgument, "ncclMemFree: not an ncclMemAlloc address");
    }
    return cu.MemFree((CUdeviceptr)ptr) == CUDA_SUCCESS
               ? GH_ncclSuccess
               : fn_fail(NULL, GH_ncclUnhandledCudaError, "ncclMemFree: cuMemFree failed");
}
#endif
