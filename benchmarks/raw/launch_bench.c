/* The floor for kernel launches: cuLaunchKernel called directly from C, in the same
 * process as gpuhost and the peers (built into the benchmarks' shared library with
 * driver_bench.c).  The kernels are "empty1" (one pointer) and "empty8" (four pointers,
 * two ints, a float and a double), loaded from the image the benchmark hands over.
 */
#include <cuda.h>
#include <stddef.h>
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
