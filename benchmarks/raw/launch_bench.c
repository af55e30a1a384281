/* The floor for kernel launches: cuLaunchKernel called directly from C, in the same
 * process as gpuhost and the peers (built into the benchmarks' shared library with
 * driver_bench.c).  The kernels are "empty1" (one pointer) and "empty8" (four pointers,
 * two ints, a float and a double), loaded from the image the benchmark hands over.
 */
#include <cuda.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static CUmodule launch_module;
static CUfunction empty1, empty8;
static CUstream launch_stream;
static CUdeviceptr launch_buf;

static double
launch_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Load `image` (PTX or cubin) into the current context, after bench_init(); 0 or the
   failing CUresult. */
int
bench_launch_init(const void *image)
{
    CUresult res;
    if ((res = cuModuleLoadData(&launch_module, image)) != CUDA_SUCCESS ||
        (res = cuModuleGetFunction(&empty1, launch_module, "empty1")) != CUDA_SUCCESS ||
        (res = cuModuleGetFunction(&empty8, launch_module, "empty8")) != CUDA_SUCCESS ||
        (res = cuStreamCreate(&launch_stream, CU_STREAM_DEFAULT)) != CUDA_SUCCESS ||
        (res = cuMemAlloc(&launch_buf, 256)) != CUDA_SUCCESS) {
        return (int)res;
    }
    return 0;
}

/* n launches of empty1 (nargs 1) or empty8 (nargs 8) on a stream; with `sync`, each is
   followed by cuStreamSynchronize, else the stream is synchronized after the timed loop.
   Microseconds per launch. */
double
bench_launch(int nargs, int sync, int n)
{
    CUdeviceptr p = launch_buf;
    int i1 = 1, i2 = 2;
    float f = 3.0f;
    double d = 4.0;
    void *args8[8] = {&p, &p, &p, &p, &i1, &i2, &f, &d};
    void *args1[1] = {&p};
    CUfunction fn = nargs == 8 ? empty8 : empty1;
    void **args = nargs == 8 ? args8 : args1;
    double t0 = launch_now_us(), t;
    for (int i = 0; i < n; i++) {
        cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, launch_stream, args, NULL);
        if (sync) {
            cuStreamSynchronize(launch_stream);
        }
    }
    t = (launch_now_us() - t0) / n;
    cuStreamSynchronize(launch_stream);
    return t;
}

/* The floor for gpuhost.jit's launches (benchmarks/jit_launch.py): a numba-compiled
 * kernel's cubin loaded here and launched with the parameter bytes the benchmark packed as
 * numba lays them out, on a stream of its own. */
#define JIT_CASES 16

static struct {
    CUfunction fn;
    void *blob;    /* the parameters' bytes */
    void **params; /* kernelParams: pointers into blob; NULL for a kernel of none */
} jit_cases[JIT_CASES];
static int jit_ncases;
static CUstream jit_stream;

/* Load cubin `image`, get its kernel `entry` and keep its `nparams` parameters, the i-th at
   byte offsets[i] of `blob` (`size` bytes); then launch it once, checked.  A case number
   for bench_jit_launch, or minus the failing CUresult. */
int
bench_jit_load(const void *image, const char *entry, const void *blob, size_t size,
               const size_t *offsets, int nparams)
{
    CUmodule mod;
    CUresult res;
    int c = jit_ncases;
    if (c == JIT_CASES || nparams < 0) {
        return -(int)CUDA_ERROR_INVALID_VALUE;
    }
    if ((jit_stream == NULL &&
         (res = cuStreamCreate(&jit_stream, CU_STREAM_DEFAULT)) != CUDA_SUCCESS) ||
        (res = cuModuleLoadData(&mod, image)) != CUDA_SUCCESS ||
        (res = cuModuleGetFunction(&jit_cases[c].fn, mod, entry)) != CUDA_SUCCESS) {
        return -(int)res;
    }
    if (nparams > 0) {
        jit_cases[c].blob = malloc(size);
        jit_cases[c].params = malloc(nparams * sizeof(void *));
        if (jit_cases[c].blob == NULL || jit_cases[c].params == NULL) {
            return -(int)CUDA_ERROR_OUT_OF_MEMORY;
        }
        memcpy(jit_cases[c].blob, blob, size);
        for (int i = 0; i < nparams; i++) {
            if (offsets[i] >= size) {
                return -(int)CUDA_ERROR_INVALID_VALUE;
            }
            jit_cases[c].params[i] = (char *)jit_cases[c].blob + offsets[i];
        }
    }
    if ((res = cuLaunchKernel(jit_cases[c].fn, 1, 1, 1, 1, 1, 1, 0, jit_stream,
                              jit_cases[c].params, NULL)) != CUDA_SUCCESS ||
        (res = cuStreamSynchronize(jit_stream)) != CUDA_SUCCESS) {
        return -(int)res;
    }
    jit_ncases = c + 1;
    return c;
}

/* n launches of case `c` on a grid of `grid` blocks of `block` threads; the stream is
   synchronized after the timed loop.  Microseconds per launch (-1: no such case). */
double
bench_jit_launch(int c, unsigned grid, unsigned block, int n)
{
    double t0, t;
    if (c < 0 || c >= jit_ncases) {
        return -1.0;
    }
    t0 = launch_now_us();
    for (int i = 0; i < n; i++) {
        cuLaunchKernel(jit_cases[c].fn, grid, 1, 1, block, 1, 1, 0, jit_stream,
                       jit_cases[c].params, NULL);
    }
    t = (launch_now_us() - t0) / n;
    cuStreamSynchronize(jit_stream);
    return t;
}
