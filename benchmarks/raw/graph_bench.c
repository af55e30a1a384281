/* The floor for CUDA graphs: stream capture, instantiation and cuGraphLaunch called
 * directly from C, in the same process as gpuhost and the peers (built into the
 * benchmarks' shared library with driver_bench.c).  The kernel is "empty1" (one pointer),
 * loaded from the image the benchmark hands over.
 */
#include <cuda.h>
#include <stddef.h>
#include <time.h>

static CUmodule graph_module;
static CUfunction graph_empty1;
static CUstream graph_stream;
static CUdeviceptr graph_buf;

static double
graph_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Load `image` into the current context, after bench_init(); 0 or the failing CUresult. */
int
bench_graph_init(const void *image)
{
    CUresult res;
    if ((res = cuModuleLoadData(&graph_module, image)) != CUDA_SUCCESS ||
        (res = cuModuleGetFunction(&graph_empty1, graph_module, "empty1")) != CUDA_SUCCESS ||
        (res = cuStreamCreate(&graph_stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS ||
        (res = cuMemAlloc(&graph_buf, 256)) != CUDA_SUCCESS) {
        return (int)res;
    }
    return 0;
}

/* Capture `kernels` launches of empty1 on the stream and instantiate them. */
static CUresult
capture(int kernels, CUgraph *g, CUgraphExec *e)
{
    CUdeviceptr p = graph_buf;
    void *args[1] = {&p};
    CUresult res = cuStreamBeginCapture(graph_stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
    for (int i = 0; res == CUDA_SUCCESS && i < kernels; i++) {
        res = cuLaunchKernel(graph_empty1, 1, 1, 1, 1, 1, 1, 0, graph_stream, args, NULL);
    }
    if (res == CUDA_SUCCESS) {
        res = cuStreamEndCapture(graph_stream, g);
    }
    if (res == CUDA_SUCCESS) {
        res = cuGraphInstantiateWithFlags(e, *g, 0);
    }
    return res;
}

/* Microseconds per capture + instantiate of `kernels` launches (destroying both after
   each, outside the timed window); negative on failure. */
double
bench_graph_capture(int kernels, int n)
{
    double total = 0;
    for (int i = 0; i < n; i++) {
        CUgraph g;
        CUgraphExec e;
        double t0 = graph_now_us();
        if (capture(kernels, &g, &e) != CUDA_SUCCESS) {
            return -1;
        }
        total += graph_now_us() - t0;
        cuGraphExecDestroy(e);
        cuGraphDestroy(g);
    }
    return total / n;
}

/* A graph of `kernels` launches captured once, then launched n times: microseconds per
   launch, asynchronous (the stream synchronized after the loop) or each followed by
   cuStreamSynchronize (`sync`).  Negative on failure. */
double
bench_graph_launch(int kernels, int sync, int n)
{
    CUgraph g;
    CUgraphExec e;
    double t0, t;
    if (capture(kernels, &g, &e) != CUDA_SUCCESS) {
        return -1;
    }
    cuGraphLaunch(e, graph_stream);
    cuStreamSynchronize(graph_stream);
    t0 = graph_now_us();
    for (int i = 0; i < n; i++) {
        cuGraphLaunch(e, graph_stream);
        if (sync) {
            cuStreamSynchronize(graph_stream);
        }
    }
    t = (graph_now_us() - t0) / n;
    cuStreamSynchronize(graph_stream);
    cuGraphExecDestroy(e);
    cuGraphDestroy(g);
    return t;
}
