/* fakenccl: a test double of libnccl.so.2 over the fake driver (tests/fakecuda), for the
 * suite without a GPU.  A test tool, never loaded by gpuhost unless GPUHOST_NCCL names it.
 *
 * The ranks of a communicator live in this process: ncclCommInitAll, or ncclCommInitRank
 * from several threads (each waits, as NCCL's does, until every rank joined; 10 s at most).
 * A collective runs when the last rank posts it (the ranks' streams are synchronized first,
 * then the data moves through the fake driver's copies), so results are the real ones; a
 * send runs once its matching receive is posted.  Errors follow NCCL's: a bad argument is
 * ncclInvalidArgument with a last-error text, a group end without a start ncclInvalidUsage.
 *
 * Control API (through ctypes): fakenccl_fail(name, code) makes the next call of nccl<name>
 * return `code`; fakenccl_set_async_error(code) sets every live communicator's async error;
 * fakenccl_live() counts live communicators; fakenccl_pending() counts unmatched operations.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nccl_api.h"

#define API       __attribute__((visibility("default")))
#define MAX_RANKS 16
#define MAX_OPS   256

typedef gh_ncclResult_t R;

typedef struct fk_op {
    int kind; /* GH_NCCL_AllReduce ... GH_NCCL_Recv */
    int posted;
    size_t count;
    int dtype, op, root;
    const void *send[MAX_RANKS];
    void *recv[MAX_RANKS];
    CUstream stream[MAX_RANKS];
    CUcontext ctx[MAX_RANKS];
    int peer_of[MAX_RANKS]; /* send/recv: the rank that posted it, the peer */
} fk_op;

typedef struct clique {
    char id[GH_NCCL_UNIQUE_ID_BYTES];
    int nranks, joined;
    struct gh_ncclComm *ranks[MAX_RANKS];
    int seq[MAX_RANKS];  /* collectives posted by each rank */
    fk_op coll[MAX_OPS]; /* collective k at coll[k % MAX_OPS] */
    fk_op p2p[MAX_OPS];  /* unmatched sends and receives */
    int n_p2p;
    int refs;
    struct clique *next;
} clique;

struct gh_ncclComm {
    int rank, nranks, dev;
    clique *cl;
    R async;
    char last[512];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t joined_cv = PTHREAD_COND_INITIALIZER;
static clique *cliques;
static int live, group_depth;
static char last_global[512];
static char fail_name[64];
static R fail_code;

/* ---- the fake driver, reached through its cuGetProcAddress ---- */

static struct {
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*CtxGetCurrent)(CUcontext *);
    CUresult (*CtxGetDevice)(CUdevice *);
    CUresult (*CtxPushCurrent)(CUcontext);
    CUresult (*CtxPopCurrent)(CUcontext *);
    CUresult (*PointerGetAttribute)(void *, CUpointer_attribute, CUdeviceptr);
    CUresult (*DeviceGetCount)(int *);
} cu;

static int
driver(void)
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
        (gpa = (gpa_t)dlsym(lib, "cuGetProcAddress_v2")) == NULL) {
        return -1;
    }
#define GET(field, name)                                                                           \
    if (gpa(name, (void **)&cu.field, 13000, 0, NULL) != CUDA_SUCCESS) {                           \
        return -1;                                                                                 \
    }
    GET(MemcpyDtoH, "cuMemcpyDtoH")
    GET(MemcpyHtoD, "cuMemcpyHtoD")
    GET(StreamSynchronize, "cuStreamSynchronize")
    GET(CtxGetCurrent, "cuCtxGetCurrent")
    GET(CtxGetDevice, "cuCtxGetDevice")
    GET(CtxPushCurrent, "cuCtxPushCurrent")
    GET(CtxPopCurrent, "cuCtxPopCurrent")
    GET(PointerGetAttribute, "cuPointerGetAttribute")
    GET(DeviceGetCount, "cuDeviceGetCount")
#undef GET
    loaded = 1;
    return 0;
}

/* ---- errors ---- */

static R
fail(struct gh_ncclComm *comm, R code, const char *msg)
{
    snprintf(comm ? comm->last : last_global, sizeof(last_global), "%s", msg);
    return code;
}

/* The armed fault for `name`, once. */
static R
injected(const char *name)
{
    R code = 0;
    pthread_mutex_lock(&lock);
    if (fail_code != 0 && strcmp(fail_name, name) == 0) {
        code = fail_code;
        fail_code = 0;
    }
    pthread_mutex_unlock(&lock);
    if (code != 0) {
        snprintf(last_global, sizeof(last_global), "fakenccl: injected failure of nccl%s", name);
    }
    return code;
}

#define ENTER(name)                                                                                \
    do {                                                                                           \
        R inj_ = injected(name);                                                                   \
        if (inj_ != 0) {                                                                           \
            return inj_;                                                                           \
        }                                                                                          \
    } while (0)

/* ---- element types ---- */

static size_t
type_size(int dtype)
{
    static const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
    return dtype >= 0 && dtype <= GH_ncclBfloat16 ? sizes[dtype] : 0;
}

static double
half_to_double(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
}

static uint16_t
double_to_half(double d)
{
    float f = (float)d;
    uint32_t x;
    uint16_t sign;
    int e;
    memcpy(&x, &f, 4);
    sign = (uint16_t)((x >> 16) & 0x8000);
    if (isnan(f)) {
        return sign | 0x7e00;
    }
    e = (int)((x >> 23) & 255) - 127 + 15;
    if (e >= 31) {
        return sign | 0x7c00;
    }
    if (e <= 0) { /* subnormal: round to nearest */
        return sign | (uint16_t)lrint(ldexp(fabs((double)f), 24));
    }
    {
        uint32_t mant = x & 0x7fffff, half = mant >> 13, rest = mant & 0x1fff;
        uint16_t out = (uint16_t)(sign | (e << 10) | half);
        if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) {
            out++;
        }
        return out;
    }
}

/* A floating-point element as a double (integers: load_int). */
static double
load(const char *p, int dtype)
{
    switch (dtype) {
        case GH_ncclFloat16:
            return half_to_double(*(const uint16_t *)p);
        case GH_ncclFloat32:
            return *(const float *)p;
        case GH_ncclFloat64:
            return *(const double *)p;
        case GH_ncclBfloat16: {
            uint32_t x = (uint32_t)(*(const uint16_t *)p) << 16;
            float f;
            memcpy(&f, &x, 4);
            return f;
        }
        default:
            return 0;
    }
}

static void
store(char *p, int dtype, double v)
{
    switch (dtype) {
        case GH_ncclFloat16:
            *(uint16_t *)p = double_to_half(v);
            break;
        case GH_ncclFloat32:
            *(float *)p = (float)v;
            break;
        case GH_ncclFloat64:
            *(double *)p = v;
            break;
        case GH_ncclBfloat16: {
            float f = (float)v;
            uint32_t x;
            memcpy(&x, &f, 4);
            x += 0x7fff + ((x >> 16) & 1); /* round to nearest even */
            *(uint16_t *)p = (uint16_t)(x >> 16);
            break;
        }
        default:
            break;
    }
}

/* An integer element as 64 bits (sign-extended for the signed types). */
static uint64_t
load_int(const char *p, int dtype)
{
    switch (dtype) {
        case GH_ncclInt8:
            return (uint64_t)(int64_t) * (const int8_t *)p;
        case GH_ncclUint8:
            return *(const uint8_t *)p;
        case GH_ncclInt32:
            return (uint64_t)(int64_t) * (const int32_t *)p;
        case GH_ncclUint32:
            return *(const uint32_t *)p;
        default: {
            uint64_t v;
            memcpy(&v, p, 8);
            return v;
        }
    }
}

static void
store_int(char *p, int dtype, uint64_t v)
{
    size_t size = type_size(dtype);
    memcpy(p, &v, size); /* little-endian: the low bytes, wrapping as NCCL's do */
}

static int
is_int(int dtype)
{
    return dtype <= GH_ncclUint64;
}

/* acc = acc (op) x, element by element: integers exactly in 64 bits (wrapping like NCCL's),
   floating point through double. */
static void
combine(char *acc, const char *x, size_t count, int dtype, int op)
{
    size_t size = type_size(dtype);
    int is_signed = dtype == GH_ncclInt8 || dtype == GH_ncclInt32 || dtype == GH_ncclInt64;
    for (size_t i = 0; i < count; i++) {
        char *a = acc + i * size;
        const char *b = x + i * size;
        if (is_int(dtype)) {
            uint64_t ua = load_int(a, dtype), ub = load_int(b, dtype);
            int a_less = is_signed ? (int64_t)ua < (int64_t)ub : ua < ub;
            uint64_t r = op == GH_ncclProd  ? ua * ub
                         : op == GH_ncclMax ? (a_less ? ub : ua)
                         : op == GH_ncclMin ? (a_less ? ua : ub)
                                            : ua + ub;
            store_int(a, dtype, r);
            continue;
        }
        double va = load(a, dtype), vb = load(b, dtype);
        store(a, dtype,
              op == GH_ncclProd  ? va * vb
              : op == GH_ncclMax ? (va > vb ? va : vb)
              : op == GH_ncclMin ? (va < vb ? va : vb)
                                 : va + vb);
    }
}

static void
divide(char *acc, size_t count, int dtype, int n)
{
    size_t size = type_size(dtype);
    for (size_t i = 0; i < count; i++) {
        char *a = acc + i * size;
        if (dtype == GH_ncclInt8 || dtype == GH_ncclInt32 || dtype == GH_ncclInt64) {
            store_int(a, dtype, (uint64_t)((int64_t)load_int(a, dtype) / n));
        }
        else if (is_int(dtype)) {
            store_int(a, dtype, load_int(a, dtype) / (uint64_t)n);
        }
        else {
            store(a, dtype, load(a, dtype) / n);
        }
    }
}

/* ---- moving data through the fake driver ---- */

static int
with_ctx(CUcontext ctx, int push)
{
    CUcontext popped;
    if (ctx == NULL) {
        return 0;
    }
    return push ? (int)cu.CtxPushCurrent(ctx) : (int)cu.CtxPopCurrent(&popped);
}

enum { TO_HOST, TO_DEVICE };

/* Copy `n` bytes between host memory and device memory of `ctx` (made current meanwhile),
   in `direction`.  0, or the driver's error. */
static int
move_dev(CUcontext ctx, void *dst, const void *src, size_t n, int direction)
{
    int rc;
    if (n == 0) {
        return 0;
    }
    with_ctx(ctx, 1);
    rc = direction == TO_DEVICE ? (int)cu.MemcpyHtoD((CUdeviceptr)dst, src, n)
                                : (int)cu.MemcpyDtoH(dst, (CUdeviceptr)src, n);
    with_ctx(ctx, 0);
    return rc;
}

static void
sync_rank(const fk_op *o, int r)
{
    with_ctx(o->ctx[r], 1);
    cu.StreamSynchronize(o->stream[r]);
    with_ctx(o->ctx[r], 0);
}

/* Run collective `o` of clique `cl` (every rank posted it).  Lock held. */
static int
run_collective(clique *cl, fk_op *o)
{
    int n = cl->nranks, rc = 0;
    size_t size = type_size(o->dtype), bytes = o->count * size;
    size_t in_bytes = o->kind == GH_NCCL_ReduceScatter ? bytes * n : bytes;
    char *acc = calloc(1, in_bytes * (size_t)n + 1), *tmp = calloc(1, in_bytes + 1);
    if (acc == NULL || tmp == NULL) {
        free(acc);
        free(tmp);
        return -1;
    }
    for (int r = 0; r < n; r++) {
        sync_rank(o, r);
    }
    switch (o->kind) {
        case GH_NCCL_AllReduce:
        case GH_NCCL_Reduce:
        case GH_NCCL_ReduceScatter:
            for (int r = 0; r < n && rc == 0; r++) {
                rc = move_dev(o->ctx[r], r == 0 ? acc : tmp, o->send[r], in_bytes, TO_HOST);
                if (r > 0) {
                    combine(acc, tmp, in_bytes / size, o->dtype, o->op);
                }
            }
            if (o->op == GH_ncclAvg) {
                divide(acc, in_bytes / size, o->dtype, n);
            }
            for (int r = 0; r < n && rc == 0; r++) {
                if (o->kind == GH_NCCL_AllReduce || (o->kind == GH_NCCL_Reduce && r == o->root)) {
                    rc = move_dev(o->ctx[r], o->recv[r], acc, bytes, TO_DEVICE);
                }
                else if (o->kind == GH_NCCL_ReduceScatter) {
                    rc = move_dev(o->ctx[r], o->recv[r], acc + (size_t)r * bytes, bytes, TO_DEVICE);
                }
            }
            break;
        case GH_NCCL_Broadcast:
            rc = move_dev(o->ctx[o->root], acc, o->send[o->root], bytes, TO_HOST);
            for (int r = 0; r < n && rc == 0; r++) {
                rc = move_dev(o->ctx[r], o->recv[r], acc, bytes, TO_DEVICE);
            }
            break;
        case GH_NCCL_AllGather:
            for (int r = 0; r < n && rc == 0; r++) {
                rc = move_dev(o->ctx[r], acc + (size_t)r * bytes, o->send[r], bytes, TO_HOST);
            }
            for (int r = 0; r < n && rc == 0; r++) {
                rc = move_dev(o->ctx[r], o->recv[r], acc, bytes * (size_t)n, TO_DEVICE);
            }
            break;
        default:
            break;
    }
    free(acc);
    free(tmp);
    return rc;
}

/* Match the newest send or receive `o` (in cl->p2p) with its counterpart and run the pair. */
static R
match_p2p(clique *cl, struct gh_ncclComm *comm)
{
    for (int i = 0; i < cl->n_p2p; i++) {
        for (int j = 0; j < cl->n_p2p; j++) {
            fk_op *s = &cl->p2p[i], *v = &cl->p2p[j];
            int src = s->peer_of[0], dst = v->peer_of[0];
            if (s->kind != GH_NCCL_Send || v->kind != GH_NCCL_Recv || s->root != dst ||
                v->root != src) {
                continue;
            }
            if (s->count * type_size(s->dtype) != v->count * type_size(v->dtype)) {
                return fail(comm, GH_ncclInvalidUsage, "fakenccl: send and recv sizes differ");
            }
            {
                size_t bytes = s->count * type_size(s->dtype);
                char *buf = malloc(bytes + 1);
                fk_op pair = *s;
                pair.stream[1] = v->stream[0];
                pair.ctx[1] = v->ctx[0];
                sync_rank(&pair, 0);
                sync_rank(&pair, 1);
                if (buf == NULL || move_dev(s->ctx[0], buf, s->send[0], bytes, TO_HOST) != 0 ||
                    move_dev(v->ctx[0], v->recv[0], buf, bytes, TO_DEVICE) != 0) {
                    free(buf);
                    return fail(comm, GH_ncclUnhandledCudaError, "fakenccl: a copy failed");
                }
                free(buf);
            }
            /* drop both (j after i or before: remove the higher index first) */
            {
                int hi = i > j ? i : j, lo = i > j ? j : i;
                cl->p2p[hi] = cl->p2p[--cl->n_p2p];
                cl->p2p[lo] = cl->p2p[--cl->n_p2p];
            }
            i = -1; /* rescan */
            break;
        }
    }
    return GH_ncclSuccess;
}

/* ---- posting operations ---- */

static R
check_ptr(struct gh_ncclComm *comm, const void *p, size_t count, const char *what)
{
    int ordinal = -1;
    if (count == 0) {
        return GH_ncclSuccess;
    }
    if (p == NULL) {
        char msg[128];
        snprintf(msg, sizeof(msg), "%s argument is NULL", what);
        return fail(comm, GH_ncclInvalidArgument, msg);
    }
    if (cu.PointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (CUdeviceptr)p) !=
            CUDA_SUCCESS ||
        ordinal != comm->dev) {
        char msg[160];
        snprintf(msg, sizeof(msg), "%s %p is not memory of the communicator's device %d", what, p,
                 comm->dev);
        return fail(comm, GH_ncclInvalidArgument, msg);
    }
    return GH_ncclSuccess;
}

static R
post(struct gh_ncclComm *comm, int kind, const void *send, void *recv, size_t count, int dtype,
     int op, int root, CUstream stream)
{
    clique *cl;
    fk_op *o;
    R res;
    size_t nranks = (size_t)(comm ? comm->nranks : 1);
    size_t in_count = kind == GH_NCCL_ReduceScatter ? count * nranks : count;
    size_t out_count = kind == GH_NCCL_AllGather ? count * nranks : count;
    if (comm == NULL) {
        return fail(NULL, GH_ncclInvalidArgument, "comm argument is NULL");
    }
    if (driver() != 0) {
        return fail(comm, GH_ncclSystemError, "fakenccl: the fake driver is not loaded");
    }
    if (type_size(dtype) == 0) {
        return fail(comm, GH_ncclInvalidArgument, "invalid type");
    }
    if (op < 0 || op > GH_ncclAvg) {
        return fail(comm, GH_ncclInvalidArgument, "invalid reduction operation");
    }
    if (root < 0 || root >= comm->nranks) {
        return fail(comm, GH_ncclInvalidArgument, "root or peer out of range");
    }
    if (kind != GH_NCCL_Recv && (kind != GH_NCCL_Broadcast || comm->rank == root) &&
        (res = check_ptr(comm, send, in_count, "sendbuff")) != GH_ncclSuccess) {
        return res;
    }
    if (kind != GH_NCCL_Send && (kind != GH_NCCL_Reduce || comm->rank == root) &&
        (res = check_ptr(comm, recv, out_count, "recvbuff")) != GH_ncclSuccess) {
        return res;
    }
    pthread_mutex_lock(&lock);
    cl = comm->cl;
    if (kind == GH_NCCL_Send || kind == GH_NCCL_Recv) {
        if (cl->n_p2p == MAX_OPS) {
            pthread_mutex_unlock(&lock);
            return fail(comm, GH_ncclInternalError, "fakenccl: too many unmatched sends");
        }
        o = &cl->p2p[cl->n_p2p++];
        memset(o, 0, sizeof(*o));
        *o = (fk_op){.kind = kind, .count = count, .dtype = dtype, .root = root};
        o->send[0] = send;
        o->recv[0] = recv;
        o->stream[0] = stream;
        cu.CtxGetCurrent(&o->ctx[0]);
        o->peer_of[0] = comm->rank;
        res = match_p2p(cl, comm);
        pthread_mutex_unlock(&lock);
        return res;
    }
    o = &cl->coll[cl->seq[comm->rank] % MAX_OPS];
    if (o->posted == 0) {
        memset(o, 0, sizeof(*o));
        *o = (fk_op){.kind = kind, .count = count, .dtype = dtype, .op = op, .root = root};
    }
    else if (o->kind != kind || o->count != count || o->dtype != dtype || o->root != root) {
        pthread_mutex_unlock(&lock);
        return fail(comm, GH_ncclInvalidUsage,
                    "fakenccl: ranks called different collectives (or counts) in turn");
    }
    cl->seq[comm->rank]++;
    o->send[comm->rank] = send;
    o->recv[comm->rank] = recv;
    o->stream[comm->rank] = stream;
    cu.CtxGetCurrent(&o->ctx[comm->rank]);
    res = GH_ncclSuccess;
    if (++o->posted == cl->nranks) {
        if (run_collective(cl, o) != 0) {
            res = fail(comm, GH_ncclUnhandledCudaError, "fakenccl: a copy failed");
        }
        o->posted = 0;
    }
    pthread_mutex_unlock(&lock);
    return res;
}

/* ---- entry points ---- */

#define ENTRY(ret, name, params) API ret nccl##name params;
GH_NCCL_API_LIST(ENTRY)
#undef ENTRY

R
ncclGetVersion(int *version)
{
    ENTER("GetVersion");
    if (version == NULL) {
        return fail(NULL, GH_ncclInvalidArgument, "version argument is NULL");
    }
    *version = 22809;
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
    static unsigned long counter;
    ENTER("GetUniqueId");
    if (id == NULL) {
        return fail(NULL, GH_ncclInvalidArgument, "uniqueId argument is NULL");
    }
    memset(id, 0, sizeof(*id));
    pthread_mutex_lock(&lock);
    snprintf(id->internal, sizeof(id->internal), "fakenccl:%d:%lu:%ld", (int)getpid(), ++counter,
             (long)time(NULL));
    pthread_mutex_unlock(&lock);
    return GH_ncclSuccess;
}

static struct gh_ncclComm *
new_comm(clique *cl, int rank, int dev)
{
    struct gh_ncclComm *c = calloc(1, sizeof(*c));
    if (c != NULL) {
        c->rank = rank;
        c->nranks = cl->nranks;
        c->dev = dev;
        c->cl = cl;
        cl->ranks[rank] = c;
        cl->refs++;
        live++;
    }
    return c;
}

static int
current_device(void)
{
    CUdevice dev = 0;
    return cu.CtxGetDevice(&dev) == CUDA_SUCCESS ? (int)dev : -1;
}

R
ncclCommInitRank(struct gh_ncclComm **comm, int nranks, gh_ncclUniqueId id, int rank)
{
    struct timespec until;
    clique *cl;
    int dev;
    ENTER("CommInitRank");
    if (comm == NULL) {
        return fail(NULL, GH_ncclInvalidArgument, "comm argument is NULL");
    }
    *comm = NULL;
    if (nranks < 1 || nranks > MAX_RANKS || rank < 0 || rank >= nranks) {
        return fail(NULL, GH_ncclInvalidArgument, "invalid rank or nranks");
    }
    if (strncmp(id.internal, "fakenccl:", 9) != 0) {
        return fail(NULL, GH_ncclInvalidArgument, "fakenccl: not a unique id of fakenccl");
    }
    if (driver() != 0 || (dev = current_device()) < 0) {
        return fail(NULL, GH_ncclUnhandledCudaError, "fakenccl: no current CUDA device");
    }
    pthread_mutex_lock(&lock);
    for (cl = cliques; cl && memcmp(cl->id, id.internal, sizeof(cl->id)) != 0; cl = cl->next) {
    }
    if (cl == NULL) {
        if ((cl = calloc(1, sizeof(*cl))) == NULL) {
            pthread_mutex_unlock(&lock);
            return fail(NULL, GH_ncclSystemError, "out of memory");
        }
        memcpy(cl->id, id.internal, sizeof(cl->id));
        cl->nranks = nranks;
        cl->next = cliques;
        cliques = cl;
    }
    if (cl->nranks != nranks || cl->ranks[rank] != NULL) {
        pthread_mutex_unlock(&lock);
        return fail(NULL, GH_ncclInvalidUsage, "fakenccl: rank joined twice, or nranks differ");
    }
    for (int r = 0; r < nranks; r++) {
        if (cl->ranks[r] != NULL && cl->ranks[r]->dev == dev) {
            pthread_mutex_unlock(&lock);
            return fail(NULL, GH_ncclInvalidUsage, "Duplicate GPU detected");
        }
    }
    *comm = new_comm(cl, rank, dev);
    cl->joined++;
    pthread_cond_broadcast(&joined_cv);
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    while (cl->joined < cl->nranks) {
        if (pthread_cond_timedwait(&joined_cv, &lock, &until) == ETIMEDOUT) {
            pthread_mutex_unlock(&lock);
            return fail(*comm, GH_ncclSystemError, "fakenccl: the other ranks did not join");
        }
    }
    pthread_mutex_unlock(&lock);
    return GH_ncclSuccess;
}

R
ncclCommInitRankConfig(struct gh_ncclComm **comm, int nranks, gh_ncclUniqueId id, int rank,
                       gh_ncclConfig_t *config)
{
    ENTER("CommInitRankConfig");
    if (config != NULL && (config->magic != GH_NCCL_CONFIG_MAGIC || config->version < 21400 ||
                           config->size < offsetof(gh_ncclConfig_t, cgaClusterSize))) {
        return fail(NULL, GH_ncclInvalidArgument, "invalid config");
    }
    return ncclCommInitRank(comm, nranks, id, rank);
}

R
ncclCommInitAll(struct gh_ncclComm **comms, int ndev, const int *devlist)
{
    clique *cl;
    int count = 0;
    ENTER("CommInitAll");
    if (comms == NULL || ndev < 1 || ndev > MAX_RANKS) {
        return fail(NULL, GH_ncclInvalidArgument, "invalid comms or ndev");
    }
    if (driver() != 0 || cu.DeviceGetCount(&count) != CUDA_SUCCESS) {
        return fail(NULL, GH_ncclUnhandledCudaError, "fakenccl: no CUDA driver");
    }
    for (int i = 0; i < ndev; i++) {
        int d = devlist ? devlist[i] : i;
        if (d < 0 || d >= count) {
            return fail(NULL, GH_ncclInvalidArgument, "invalid device");
        }
        for (int j = 0; j < i; j++) {
            if ((devlist ? devlist[j] : j) == d) {
                return fail(NULL, GH_ncclInvalidUsage, "Duplicate GPU detected");
            }
        }
    }
    pthread_mutex_lock(&lock);
    if ((cl = calloc(1, sizeof(*cl))) == NULL) {
        pthread_mutex_unlock(&lock);
        return fail(NULL, GH_ncclSystemError, "out of memory");
    }
    cl->nranks = ndev;
    cl->joined = ndev;
    cl->next = cliques;
    cliques = cl;
    for (int i = 0; i < ndev; i++) {
        comms[i] = new_comm(cl, i, devlist ? devlist[i] : i);
    }
    pthread_mutex_unlock(&lock);
    return GH_ncclSuccess;
}

R
ncclCommSplit(struct gh_ncclComm *comm, int color, int key, struct gh_ncclComm **newcomm,
              gh_ncclConfig_t *config)
{
    clique *cl;
    (void)key;
    (void)config;
    ENTER("CommSplit");
    if (comm == NULL || newcomm == NULL) {
        return fail(comm, GH_ncclInvalidArgument, "comm or newcomm argument is NULL");
    }
    *newcomm = NULL;
    if (comm->nranks != 1) {
        return fail(comm, GH_ncclInvalidUsage, "fakenccl: splits one-rank communicators only");
    }
    if (color == -1) {
        return GH_ncclSuccess;
    }
    pthread_mutex_lock(&lock);
    if ((cl = calloc(1, sizeof(*cl))) != NULL) {
        cl->nranks = cl->joined = 1;
        cl->next = cliques;
        cliques = cl;
        *newcomm = new_comm(cl, 0, comm->dev);
    }
    pthread_mutex_unlock(&lock);
    return *newcomm ? GH_ncclSuccess : fail(comm, GH_ncclSystemError, "out of memory");
}

static R
end(struct gh_ncclComm *comm)
{
    clique **p;
    if (comm == NULL) {
        return fail(NULL, GH_ncclInvalidArgument, "comm argument is NULL");
    }
    pthread_mutex_lock(&lock);
    comm->cl->ranks[comm->rank] = NULL;
    if (--comm->cl->refs == 0) {
        for (p = &cliques; *p != comm->cl; p = &(*p)->next) {
        }
        *p = comm->cl->next;
        free(comm->cl);
    }
    live--;
    pthread_mutex_unlock(&lock);
    free(comm);
    return GH_ncclSuccess;
}

R
ncclCommFinalize(struct gh_ncclComm *comm)
{
    ENTER("CommFinalize");
    return comm ? GH_ncclSuccess : fail(NULL, GH_ncclInvalidArgument, "comm argument is NULL");
}

R
ncclCommDestroy(struct gh_ncclComm *comm)
{
    ENTER("CommDestroy");
    return end(comm);
}

R
ncclCommAbort(struct gh_ncclComm *comm)
{
    ENTER("CommAbort");
    return end(comm);
}

R
ncclCommGetAsyncError(struct gh_ncclComm *comm, R *async)
{
    ENTER("CommGetAsyncError");
    if (comm == NULL || async == NULL) {
        return fail(comm, GH_ncclInvalidArgument, "comm or asyncError argument is NULL");
    }
    *async = comm->async;
    return GH_ncclSuccess;
}

#define QUERY(name, field)                                                                         \
    R ncclComm##name(const gh_ncclComm_t comm, int *out)                                           \
    {                                                                                              \
        ENTER("Comm" #name);                                                                       \
        if (comm == NULL || out == NULL) {                                                         \
            return fail(comm, GH_ncclInvalidArgument, "comm or output argument is NULL");          \
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
    pthread_mutex_lock(&lock);
    group_depth++;
    pthread_mutex_unlock(&lock);
    return GH_ncclSuccess;
}

R
ncclGroupEnd(void)
{
    R res = GH_ncclSuccess;
    ENTER("GroupEnd");
    pthread_mutex_lock(&lock);
    if (group_depth == 0) {
        res = fail(NULL, GH_ncclInvalidUsage, "ncclGroupEnd: not in a group call");
    }
    else {
        group_depth--;
    }
    pthread_mutex_unlock(&lock);
    return res;
}

/* ---- control API ---- */

API int fakenccl_fail(const char *name, int code);
API void fakenccl_set_async_error(int code);
API int fakenccl_live(void);
API int fakenccl_pending(void);

int
fakenccl_fail(const char *name, int code)
{
    pthread_mutex_lock(&lock);
    snprintf(fail_name, sizeof(fail_name), "%s", name);
    fail_code = code;
    pthread_mutex_unlock(&lock);
    return 0;
}

void
fakenccl_set_async_error(int code)
{
    pthread_mutex_lock(&lock);
    for (clique *cl = cliques; cl; cl = cl->next) {
        for (int r = 0; r < cl->nranks; r++) {
            if (cl->ranks[r] != NULL) {
                cl->ranks[r]->async = code;
                snprintf(cl->ranks[r]->last, sizeof(cl->ranks[r]->last),
                         "fakenccl: injected asynchronous error");
            }
        }
    }
    pthread_mutex_unlock(&lock);
}

int
fakenccl_live(void)
{
    return live;
}

int
fakenccl_pending(void)
{
    int n = 0;
    pthread_mutex_lock(&lock);
    for (clique *cl = cliques; cl; cl = cl->next) {
        n += cl->n_p2p;
        for (int k = 0; k < MAX_OPS; k++) {
            n += cl->coll[k].posted > 0;
        }
    }
    pthread_mutex_unlock(&lock);
    return n;
}
