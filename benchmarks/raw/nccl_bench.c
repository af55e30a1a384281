/* The raw C floor for benchmarks/nccl.py: ncclAllReduce called in a C loop on a stream of its
 * own, through libnccl loaded with dlopen (the path gpuhost loaded) and gpuhost's declarations
 * of NCCL (csrc/nccl/nccl_api.h, checked against nccl.h at build).  Loaded into each rank's
 * process with ctypes, after gpuhost made the rank's device current.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <string.h>
#include <time.h>

#include "nccl/nccl_api.h"

static gh_nccl_api nc;
static gh_ncclComm_t comm;
static CUstream stream;

static const char *const names[GH_NCCL__COUNT] = {
#define NAME(ret, name, params) "nccl" #name,
    GH_NCCL_API_LIST(NAME)
#undef NAME
};

static double
now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* 0, or a negative step number that failed. */
int
nccl_bench_init(const char *libpath, int nranks, int rank, const char *uid)
{
    void *lib = dlopen(libpath, RTLD_NOW | RTLD_LOCAL);
    void **slots = (void **)&nc;
    gh_ncclUniqueId id;
    if (lib == NULL) {
        return -1;
    }
    for (int i = 0; i < GH_NCCL__FIRST_OPTIONAL; i++) { /* the optional ones are not used */
        if ((slots[i] = dlsym(lib, names[i])) == NULL) {
            return -2;
        }
    }
    if (cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
        return -3;
    }
    memcpy(id.internal, uid, GH_NCCL_UNIQUE_ID_BYTES);
    return nc.CommInitRank(&comm, nranks, id, rank) == GH_ncclSuccess ? 0 : -4;
}

/* µs per all-reduce of `count` float32 over `iters` calls, waited for; negative on failure. */
double
nccl_bench_allreduce(unsigned long long send, unsigned long long recv, size_t count, int iters)
{
    double t0 = now_us();
    for (int i = 0; i < iters; i++) {
        if (nc.AllReduce((const void *)send, (void *)recv, count, GH_ncclFloat32, GH_ncclSum, comm,
                         stream) != GH_ncclSuccess) {
            return -1;
        }
    }
    if (cuStreamSynchronize(stream) != CUDA_SUCCESS) {
        return -2;
    }
    return (now_us() - t0) / iters;
}

void
nccl_bench_finish(void)
{
    if (comm != NULL) {
        nc.CommDestroy(comm);
        comm = NULL;
    }
    if (stream != NULL) {
        cuStreamDestroy(stream);
        stream = NULL;
    }
}
