/* fakenccl: a test double of libnccl.so.2 over the fake driver (tests/fakecuda), for the
 * suite without a GPU.  A test tool, never loaded by gpuhost unless GPUHOST_NCCL names it.
 *
 * ncclGetUniqueId starts a root in its process (fn_hub.c) whose address the id carries.  A
 * communicator whose ranks all live in one process (ncclCommInitAll, threads, one rank) runs
 * in memory (fn_local.c); one spread over processes (one rank each, started by a launcher)
 * runs through the root (fn_net.c), which can tell the survivors that a rank died.  Results
 * are the real ones, computed on the bytes of the fake driver's memory (fn_data.c).
 * Non-blocking creation and splits (ncclConfig_t.blocking = 0) join on a thread of their own,
 * ncclCommGetAsyncError saying ncclInProgress meanwhile, and ncclCommAbort ends them
 * (fn_async.c); so are registration and ncclMemAlloc, which a build with FAKENCCL_VERSION below
 * 21900 leaves out, as NCCL 2.18 lacks them.  Errors follow NCCL's: a bad argument is
 * ncclInvalidArgument with a last-error text, a group end without a start ncclInvalidUsage.
 *
 * Control API (through ctypes): fakenccl_fail(name, code) makes the next call of nccl<name>
 * return `code`; fakenccl_set_async_error(code) sets every live communicator's async error;
 * fakenccl_live() counts live communicators; fakenccl_pending() counts unmatched operations;
 * fakenccl_registrations() and fakenccl_mem_allocs() count live registrations and ncclMemAlloc
 * allocations.
 */
#include "fn_internal.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

pthread_mutex_t fn_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t fn_cond = PTHREAD_COND_INITIALIZER;
int fn_live;
fn_driver cu;

static struct gh_ncclComm *comms; /* every live communicator */
static char last_global[512];
static char fail_name[64];
static R fail_code;

/* ---- the fake driver, reached through its cuGetProcAddress ---- */

int
fn_driver_load(void)
{
    typedef CUresult (*gpa_t)(const char *, void **, int, cuuint64_t, void *);
    static int loaded;
    const char *path = getenv("GPUHOST_CUDA_DRIVER");
    void *lib;
    gpa_t gpa;
    if (loaded) {
        return 0;
    }
    if (path == NULL || (lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD)) == NULL ||
        (gpa = (gpa_t)dlsym(lib, "cuGetProcAddress_v2")) == NULL ||
        (cu.host_view = (void *(*)(unsigned long long, size_t))dlsym(lib, "fakecuda_host_view")) ==
            NULL) {
        return -1;
    }
#define GET(field, name)                                                                           \
    if (gpa(name, (void **)&cu.field, 13000, 0, NULL) != CUDA_SUCCESS) {                           \
        return -1;                                                                                 \
    }
    GET(MemcpyDtoH, "cuMemcpyDtoH")
    GET(MemcpyHtoD, "cuMemcpyHtoD")
    GET(StreamSynchronize, "cuStreamSynchronize")
    GET(StreamIsCapturing, "cuStreamIsCapturing")
    GET(LaunchHostFunc, "cuLaunchHostFunc")
    GET(CtxGetCurrent, "cuCtxGetCurrent")
    GET(CtxGetDevice, "cuCtxGetDevice")
    GET(CtxPushCurrent, "cuCtxPushCurrent")
    GET(CtxPopCurrent, "cuCtxPopCurrent")
    GET(PointerGetAttribute, "cuPointerGetAttribute")
    GET(DeviceGetCount, "cuDeviceGetCount")
    GET(MemAlloc, "cuMemAlloc")
    GET(MemFree, "cuMemFree")
#undef GET
    loaded = 1;
    return 0;
}

/* ---- errors ---- */

R
fn_fail(struct gh_ncclComm *comm, R code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(comm ? comm->last : last_global, sizeof(last_global), fmt, ap);
    va_end(ap);
    if (comm != NULL) { /* NCCL's last error is the process's */
        snprintf(last_global, sizeof(last_global), "%s", comm->last);
    }
    return code;
}

R
fn_injected(const char *name)
{
    R code = 0;
    pthread_mutex_lock(&fn_lock);
    if (fail_code != 0 && strcmp(fail_name, name) == 0) {
        code = fail_code;
        fail_code = 0;
    }
    pthread_mutex_unlock(&fn_lock);
    if (code != 0) {
        snprintf(last_global, sizeof(last_global), "fakenccl: injected failure of nccl%s", name);
    }
    return code;
}

/* ---- communicators ---- */

double
fn_join_timeout(void)
{
    const char *s = getenv("FAKENCCL_JOIN_TIMEOUT");
    double t = s ? atof(s) : 0;
    return t > 0 ? t : 30.0;
}

struct gh_ncclComm *
fn_comm_new(int rank, int nranks, int dev)
{
    struct gh_ncclComm *c = calloc(1, sizeof(*c));
    if (c != NULL) {
        c->rank = rank;
        c->nranks = nranks;
        c->dev = dev;
        c->blocking = 1;
        c->next = comms; /* fn_lock held by the callers that share it, or the comm is theirs */
        if (comms != NULL) {
            comms->prev = c;
        }
        comms = c;
        fn_live++;
    }
    return c;
}

int
fn_current_device(void)
{
    CUdevice dev = 0;
    return cu.CtxGetDevice(&dev) == CUDA_SUCCESS ? (int)dev : -1;
}

void
fn_host_id(char out[HOSTID_SIZE])
{
    const char *id = getenv("NCCL_HOSTID");
    if (id != NULL && *id) {
        snprintf(out, HOSTID_SIZE, "%s", id);
    }
    else if (gethostname(out, HOSTID_SIZE) != 0) {
        snprintf(out, HOSTID_SIZE, "localhost");
    }
    out[HOSTID_SIZE - 1] = 0;
}

R
fn_comm_end(struct gh_ncclComm *comm, int abort)
{
    if (comm == NULL) {
        return fn_fail(NULL, GH_ncclInvalidArgument, "comm argument is NULL");
    }
    pthread_mutex_lock(&fn_lock);
    comm->aborting = abort || comm->has_joiner; /* a creation or split under way ends */
    if (comm->split_tmp != NULL) {
        comm->split_tmp->aborting = 1;
    }
    pthread_cond_broadcast(&fn_cond);
    pthread_mutex_unlock(&fn_lock);
    if (comm->has_joiner) {
        pthread_join(comm->joiner, NULL);
        comm->has_joiner = 0;
    }
    fn_net_close(comm, abort);
    pthread_mutex_lock(&fn_lock);
    fn_local_leave(comm);
    fn_reg_drop(comm);
    if (comm->prev != NULL) {
        comm->prev->next = comm->next;
    }
    else {
        comms = comm->next;
    }
    if (comm->next != NULL) {
        comm->next->prev = comm->prev;
    }
    fn_live--;
    pthread_mutex_unlock(&fn_lock);
    free(comm);
    return GH_ncclSuccess;
}

R
fn_join(struct gh_ncclComm *comm, const char *id, double timeout)
{
    fn_root_addr addr;
    fn_hello h = {
        .nranks = comm->nranks, .rank = comm->rank, .pid = (int)getpid(), .dev = comm->dev};
    int mode, rank, nranks;
    R res;
    memcpy(comm->id, id, GH_NCCL_UNIQUE_ID_BYTES);
    if (comm->nranks == 1) { /* no one to wait for */
        return fn_local_join(comm, id, timeout);
    }
    if (fn_id_parse(id, &addr) != 0) {
        return fn_fail(comm, GH_ncclInvalidArgument, "fakenccl: not a unique id of fakenccl");
    }
    memcpy(h.id, id, sizeof(h.id));
    fn_host_id(h.hostid);
    res = fn_net_join(comm, &addr, MSG_HELLO, &h, sizeof(h), timeout, &mode, &rank, &nranks, NULL);
    if (res != GH_ncclSuccess) {
        return res;
    }
    if (mode == MODE_LOCAL) { /* every rank is in this process: they meet in memory */
        return fn_local_join(comm, id, timeout);
    }
    comm->mode = MODE_NET;
    return GH_ncclSuccess;
}

R
fn_split(struct gh_ncclComm *parent, int color, int key, int seq, struct gh_ncclComm **child,
         double timeout)
{
    fn_root_addr addr;
    fn_split_hello h = {.parent_nranks = parent->nranks,
                        .parent_rank = parent->rank,
                        .color = color,
                        .key = key,
                        .seq = seq,
                        .pid = (int)getpid(),
                        .dev = parent->dev};
    char child_id[GH_NCCL_UNIQUE_ID_BYTES];
    struct gh_ncclComm *tmp;
    int mode = MODE_LOCAL, rank = -1, nranks = 0;
    R res;
    *child = NULL;
    if (parent->mode == MODE_LOCAL) {
        return fn_local_split(parent, color, key, seq, child, timeout);
    }
    if (fn_id_parse(parent->id, &addr) != 0) {
        return fn_fail(parent, GH_ncclInternalError, "fakenccl: the parent has no root");
    }
    memcpy(h.parent, parent->id, sizeof(h.parent));
    fn_host_id(h.hostid);
    pthread_mutex_lock(&fn_lock);
    tmp = parent->split_tmp = fn_comm_new(0, 1, parent->dev);
    pthread_mutex_unlock(&fn_lock);
    if (tmp == NULL) {
        return fn_fail(parent, GH_ncclSystemError, "out of memory");
    }
    tmp->aborting = parent->aborting;
    res =
        fn_net_join(tmp, &addr, MSG_SPLIT, &h, sizeof(h), timeout, &mode, &rank, &nranks, child_id);
    pthread_mutex_lock(&fn_lock);
    parent->split_tmp = NULL;
    pthread_mutex_unlock(&fn_lock);
    if (res == GH_ncclSuccess && rank >= 0) {
        tmp->rank = rank;
        tmp->nranks = nranks;
        memcpy(tmp->id, child_id, sizeof(tmp->id));
        tmp->mode = mode;
        res = mode == MODE_LOCAL ? fn_local_join(tmp, child_id, timeout) : GH_ncclSuccess;
    }
    if (res != GH_ncclSuccess || rank < 0) {
        if (res != GH_ncclSuccess) {
            fn_fail(parent, res, "%s", tmp->last);
        }
        fn_comm_end(tmp, 1);
        return res;
    }
    *child = tmp;
    return GH_ncclSuccess;
}

/* ---- posting operations ---- */

static R
check_ptr(struct gh_ncclComm *comm, const void *p, size_t bytes, const char *what)
{
    int ordinal = -1;
    if (bytes == 0) {
        return GH_ncclSuccess;
    }
    if (p == NULL) {
        return fn_fail(comm, GH_ncclInvalidArgument, "%s argument is NULL", what);
    }
    if (cu.PointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (CUdeviceptr)p) !=
            CUDA_SUCCESS ||
        ordinal != comm->dev) {
        return fn_fail(comm, GH_ncclInvalidArgument,
                       "%s %p is not memory of the communicator's device %d", what, p, comm->dev);
    }
    return GH_ncclSuccess;
}

/* Net ops of the open group, posted at its end, one host function per (comm, stream). */
static struct {
    struct gh_ncclComm *comm;
    CUstream stream;
    fn_netop op;
} grouped[4 * MAX_OPS];
static int n_grouped, group_depth;

int
fn_group_depth(void)
{
    return group_depth;
}

R
fn_group_add(struct gh_ncclComm *comm, const fn_netop *op, CUstream stream)
{
    if (n_grouped == (int)(sizeof(grouped) / sizeof(grouped[0]))) {
        return fn_fail(comm, GH_ncclInternalError, "fakenccl: too many operations in a group");
    }
    grouped[n_grouped].comm = comm;
    grouped[n_grouped].stream = stream;
    grouped[n_grouped].op = *op;
    n_grouped++;
    return GH_ncclSuccess;
}

static R
group_flush(void)
{
    static fn_netop batch[4 * MAX_OPS];
    R res = GH_ncclSuccess;
    for (int i = 0; i < n_grouped; i++) {
        int n = 0;
        if (grouped[i].comm == NULL) {
            continue;
        }
        for (int j = i; j < n_grouped; j++) {
            if (grouped[j].comm == grouped[i].comm && grouped[j].stream == grouped[i].stream) {
                batch[n++] = grouped[j].op;
                if (j > i) {
                    grouped[j].comm = NULL;
                }
            }
        }
        if (res == GH_ncclSuccess) {
            res = fn_net_post(grouped[i].comm, batch, n, grouped[i].stream);
        }
    }
    n_grouped = 0;
    return res;
}

static R
post(struct gh_ncclComm *comm, int kind, const void *send, void *recv, size_t count, int dtype,
     int op, int root, CUstream stream)
{
    size_t n = (size_t)(comm ? comm->nranks : 1), bytes = count * fn_type_size(dtype);
    size_t in = kind == GH_NCCL_ReduceScatter ? bytes * n : bytes;
    size_t out = kind == GH_NCCL_AllGather ? bytes * n : bytes;
    R res;
    if (comm == NULL) {
        return fn_fail(NULL, GH_ncclInvalidArgument, "comm argument is NULL");
    }
    if (fn_driver_load() != 0) {
        return fn_fail(comm, GH_ncclSystemError, "fakenccl: the fake driver is not loaded");
    }
    if (fn_type_size(dtype) == 0) {
        return fn_fail(comm, GH_ncclInvalidArgument, "invalid type");
    }
    if (op < 0 || op > GH_ncclAvg) {
        return fn_fail(comm, GH_ncclInvalidArgument, "invalid reduction operation");
    }
    if (root < 0 || root >= comm->nranks) {
        return fn_fail(comm, GH_ncclInvalidArgument, "root or peer out of range");
    }
    if (comm->cl == NULL && comm->net == NULL) {
        return fn_fail(comm, GH_ncclInvalidUsage, "fakenccl: the communicator is not ready");
    }
    if (kind != GH_NCCL_Recv && (kind != GH_NCCL_Broadcast || comm->rank == root) &&
        (res = check_ptr(comm, send, in, "sendbuff")) != GH_ncclSuccess) {
        return res;
    }
    if (kind != GH_NCCL_Send && (kind != GH_NCCL_Reduce || comm->rank == root) &&
        (res = check_ptr(comm, recv, out, "recvbuff")) != GH_ncclSuccess) {
        return res;
    }
    if (comm->mode == MODE_LOCAL) {
        res = fn_local_post(comm, kind, send, recv, count, dtype, op, root, stream);
    }
    else {
        fn_netop o = {.kind = kind,
                      .count = count,
                      .dtype = dtype,
                      .op = op,
                      .root = root,
                      .send = send,
                      .recv = recv};
        res = group_depth > 0 ? fn_group_add(comm, &o, stream) : fn_net_post(comm, &o, 1, stream);
    }
    /* a non-blocking communicator's call goes on in the background in NCCL: ncclInProgress
       (here it is already done: its state stays ncclSuccess) */
    return res == GH_ncclSuccess && !comm->blocking && group_depth == 0 ? GH_ncclInProgress : res;
}

/* ---- entry points ---- */

R
ncclGetVersion(int *version)
{
    ENTER("GetVersion");
    if (version == NULL) {
        return fn_fail(NULL, GH_ncclInvalidArgument, "version argument is NULL");
    }
    *version = FAKENCCL_VERSION;
    return GH_ncclSuccess;
}

const char *
ncclGetErrorString(R code)
{
    switch (code) {
        case GH_ncclSuccess:
            return "no error";
        case GH_ncclUnhandledCudaError:
            return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
        case GH_ncclSystemError:
            return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
        case GH_ncclInternalError:
            return "internal error - please report this issue to the NCCL developers";
        case GH_ncclInvalidArgument:
            return "invalid argument (run with NCCL_DEBUG=WARN for details)";
        case GH_ncclInvalidUsage:
            return "invalid usage (run with NCCL_DEBUG=WARN for details)";
        case GH_ncclRemoteError:
            return "remote process exited or there was a network error";
        case GH_ncclInProgress:
            return "NCCL operation in progress";
        default:
            return "unknown result code";
    }
}

const char *
ncclGetLastError(struct gh_ncclComm *comm)
{
    return comm ? comm->last : last_global;
}

R
ncclGetUniqueId(gh_ncclUniqueId *id)
{
    ENTER("GetUniqueId");
    if (id == NULL) {
        return fn_fail(NULL, GH_ncclInvalidArgument, "uniqueId argument is NULL");
    }
    if (fn_hub_new_id(id->internal) != 0) {
        return fn_fail(NULL, GH_ncclSystemError, "fakenccl: the root could not listen");
    }
    return GH_ncclSuccess;
}

/* A new rank of clique `id`, on the current device; not joined yet. */
static R
new_rank(struct gh_ncclComm **comm, int nranks, const gh_ncclUniqueId *id, int rank)
{
    int dev;
    fn_root_addr addr;
    if (comm == NULL) {
        return fn_fail(NULL, GH_ncclInvalidArgument, "comm argument is NULL");
    }
    *comm = NULL;
    if (nranks < 1 || nranks > MAX_RANKS || rank < 0 || rank >= nranks) {
        return fn_fail(NULL, GH_ncclInvalidArgument, "invalid rank or nranks");
    }
    if (fn_id_parse(id->internal, &addr) != 0) {
        return fn_fail(NULL, GH_ncclInvalidArgument, "fakenccl: not a unique id of fakenccl");
    }
    if (fn_driver_load() != 0 || (dev = fn_current_device()) < 0) {
        return fn_fail(NULL, GH_ncclUnhandledCudaError, "fakenccl: no current CUDA device");
    }
    pthread_mutex_lock(&fn_lock);
    *comm = fn_comm_new(rank, nranks, dev);
    pthread_mutex_unlock(&fn_lock);
    return *comm ? GH_ncclSuccess : fn_fail(NULL, GH_ncclSystemError, "out of memory");
}

R
ncclCommInitRank(struct gh_ncclComm **comm, int nranks, gh_ncclUniqueId id, int rank)
{
    R res;
    ENTER("CommInitRank");
    if ((res = new_rank(comm, nranks, &id, rank)) == GH_ncclSuccess &&
        (res = fn_join(*comm, id.internal, fn_join_timeout())) != GH_ncclSuccess) {
        snprintf(last_global, sizeof(last_global), "%s", (*comm)->last);
        fn_comm_end(*comm, 1);
        *comm = NULL;
    }
    return res;
}

R
ncclCommInitRankConfig(struct gh_ncclComm **comm, int nranks, gh_ncclUniqueId id, int rank,
                       gh_ncclConfig_t *config)
{
    R res;
    ENTER("CommInitRankConfig");
    if (config != NULL && (config->magic != GH_NCCL_CONFIG_MAGIC || config->version < 21400 ||
                           config->size < offsetof(gh_ncclConfig_t, cgaClusterSize))) {
        return fn_fail(NULL, GH_ncclInvalidArgument, "invalid config");
    }
    if (config == NULL || config->blocking != 0) {
        res = new_rank(comm, nranks, &id, rank);
        if (res == GH_ncclSuccess &&
            (res = fn_join(*comm, id.internal, fn_join_timeout())) != GH_ncclSuccess) {
            snprintf(last_global, sizeof(last_global), "%s", (*comm)->last);
            fn_comm_end(*comm, 1);
            *comm = NULL;
        }
        return res;
    }
    if ((res = new_rank(comm, nranks, &id, rank)) != GH_ncclSuccess) {
        return res;
    }
    (*comm)->blocking = 0;
    return fn_async_join(*comm, id.internal);
}

R
ncclCommInitAll(struct gh_ncclComm **comms_out, int ndev, const int *devlist)
{
    int count = 0;
    R res;
    ENTER("CommInitAll");
    if (comms_out == NULL || ndev < 1 || ndev > MAX_RANKS) {
        return fn_fail(NULL, GH_ncclInvalidArgument, "invalid comms or ndev");
    }
    if (fn_driver_load() != 0 || cu.DeviceGetCount(&count) != CUDA_SUCCESS) {
        return fn_fail(NULL, GH_ncclUnhandledCudaError, "fakenccl: no CUDA driver");
    }
    for (int i = 0; i < ndev; i++) {
        int d = devlist ? devlist[i] : i;
        if (d < 0 || d >= count) {
            return fn_fail(NULL, GH_ncclInvalidArgument, "invalid device");
        }
        for (int j = 0; j < i; j++) {
            if ((devlist ? devlist[j] : j) == d) {
                return fn_fail(NULL, GH_ncclInvalidUsage, "Duplicate GPU detected");
            }
        }
    }
    pthread_mutex_lock(&fn_lock);
    res = fn_local_init_all(comms_out, ndev, devlist);
    pthread_mutex_unlock(&fn_lock);
    return res;
}

R
ncclCommSplit(struct gh_ncclComm *comm, int color, int key, struct gh_ncclComm **newcomm,
              gh_ncclConfig_t *config)
{
    int blocking;
    R res;
    ENTER("CommSplit");
    if (comm == NULL || newcomm == NULL) {
        return fn_fail(comm, GH_ncclInvalidArgument, "comm or newcomm argument is NULL");
    }
    *newcomm = NULL;
    if (comm->cl == NULL && comm->net == NULL) {
        return fn_fail(comm, GH_ncclInvalidUsage, "fakenccl: the communicator is not ready");
    }
    blocking = config != NULL && config->blocking != GH_NCCL_CONFIG_UNDEF_INT ? config->blocking
                                                                              : comm->blocking;
    if (!comm->blocking) { /* the parent's mode decides, as in NCCL's group of the split */
        return fn_async_split(comm, color, key, comm->splits++, newcomm, blocking);
    }
    res = fn_split(comm, color, key, comm->splits++, newcomm, fn_join_timeout());
    if (res == GH_ncclSuccess && *newcomm != NULL) {
        (*newcomm)->blocking = blocking;
    }
    return res;
}

R
ncclCommFinalize(struct gh_ncclComm *comm)
{
    ENTER("CommFinalize");
    return comm ? GH_ncclSuccess : fn_fail(NULL, GH_ncclInvalidArgument, "comm argument is NULL");
}

R
ncclCommDestroy(struct gh_ncclComm *comm)
{
    ENTER("CommDestroy");
    return fn_comm_end(comm, 0);
}

R
ncclCommAbort(struct gh_ncclComm *comm)
{
    ENTER("CommAbort");
    return fn_comm_end(comm, 1);
}

R
ncclCommGetAsyncError(struct gh_ncclComm *comm, R *async)
{
    R res;
    ENTER("CommGetAsyncError");
    if (comm == NULL || async == NULL) {
        return fn_fail(comm, GH_ncclInvalidArgument, "comm or asyncError argument is NULL");
    }
    pthread_mutex_lock(&fn_lock);
    res = comm->async;
    pthread_mutex_unlock(&fn_lock);
    *async = res != GH_ncclSuccess ? res : fn_net_async(comm);
    return GH_ncclSuccess;
}

#define QUERY(name, field)                                                                         \
    R ncclComm##name(const gh_ncclComm_t comm, int *out)                                           \
    {                                                                                              \
        ENTER("Comm" #name);                                                                       \
        if (comm == NULL || out == NULL) {                                                         \
            return fn_fail(comm, GH_ncclInvalidArgument, "comm or output argument is NULL");       \
        }                                                                                          \
        if (comm->async == GH_ncclInProgress) {                                                    \
            return GH_ncclInProgress;                                                              \
        }                                                                                          \
        *out = comm->field;                                                                        \
        return GH_ncclSuccess;                                                                     \
    }
QUERY(Count, nranks)
QUERY(CuDevice, dev)
QUERY(UserRank, rank)
#undef QUERY

R
ncclAllReduce(const void *s, void *r, size_t n, int t, int op, gh_ncclComm_t c, cudaStream_t st)
{
    ENTER("AllReduce");
    return post(c, GH_NCCL_AllReduce, s, r, n, t, op, 0, (CUstream)st);
}

R
ncclReduce(const void *s, void *r, size_t n, int t, int op, int root, gh_ncclComm_t c,
           cudaStream_t st)
{
    ENTER("Reduce");
    return post(c, GH_NCCL_Reduce, s, r, n, t, op, root, (CUstream)st);
}

R
ncclBroadcast(const void *s, void *r, size_t n, int t, int root, gh_ncclComm_t c, cudaStream_t st)
{
    ENTER("Broadcast");
    return post(c, GH_NCCL_Broadcast, s, r, n, t, 0, root, (CUstream)st);
}

R
ncclAllGather(const void *s, void *r, size_t n, int t, gh_ncclComm_t c, cudaStream_t st)
{
    ENTER("AllGather");
    return post(c, GH_NCCL_AllGather, s, r, n, t, 0, 0, (CUstream)st);
}

R
ncclReduceScatter(const void *s, void *r, size_t n, int t, int op, gh_ncclComm_t c, cudaStream_t st)
{
    ENTER("ReduceScatter");
    return post(c, GH_NCCL_ReduceScatter, s, r, n, t, op, 0, (CUstream)st);
}

R
ncclSend(const void *s, size_t n, int t, int peer, gh_ncclComm_t c, cudaStream_t st)
{
    ENTER("Send");
    return post(c, GH_NCCL_Send, s, NULL, n, t, 0, peer, (CUstream)st);
}

R
ncclRecv(void *r, size_t n, int t, int peer, gh_ncclComm_t c, cudaStream_t st)
{
    ENTER("Recv");
    return post(c, GH_NCCL_Recv, NULL, r, n, t, 0, peer, (CUstream)st);
}

R
ncclGroupStart(void)
{
    ENTER("GroupStart");
    pthread_mutex_lock(&fn_lock);
    group_depth++;
    pthread_mutex_unlock(&fn_lock);
    return GH_ncclSuccess;
}

R
ncclGroupEnd(void)
{
    R res = GH_ncclSuccess;
    int flush = 0;
    ENTER("GroupEnd");
    pthread_mutex_lock(&fn_lock);
    if (group_depth == 0) {
        res = fn_fail(NULL, GH_ncclInvalidUsage, "ncclGroupEnd: not in a group call");
    }
    else {
        flush = --group_depth == 0;
    }
    pthread_mutex_unlock(&fn_lock);
    return flush ? group_flush() : res;
}

/* ---- control API ---- */

FN_API int fakenccl_fail(const char *name, int code);
FN_API void fakenccl_set_async_error(int code);
FN_API int fakenccl_live(void);
FN_API int fakenccl_pending(void);

int
fakenccl_fail(const char *name, int code)
{
    pthread_mutex_lock(&fn_lock);
    snprintf(fail_name, sizeof(fail_name), "%s", name);
    fail_code = code;
    pthread_mutex_unlock(&fn_lock);
    return 0;
}

void
fakenccl_set_async_error(int code)
{
    pthread_mutex_lock(&fn_lock);
    for (struct gh_ncclComm *c = comms; c != NULL; c = c->next) {
        c->async = code;
        snprintf(c->last, sizeof(c->last), "fakenccl: injected asynchronous error");
    }
    pthread_mutex_unlock(&fn_lock);
}

int
fakenccl_live(void)
{
    return fn_live;
}

int
fakenccl_pending(void)
{
    int n;
    pthread_mutex_lock(&fn_lock);
    n = fn_local_pending() + n_grouped;
    pthread_mutex_unlock(&fn_lock);
    return n;
}
