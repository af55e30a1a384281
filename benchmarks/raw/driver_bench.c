/* The floor: the driver API called directly from C.  Built as a shared library that the
 * Python benchmarks load with ctypes, so the raw C loops run in the same process as
 * gpuhost and the peers, interleaved with them repetition by repetition (a separate
 * process would be measured at another moment, on a machine whose speed drifts).
 * Each bench_* function times one loop of `n` calls and returns microseconds per call.
 *   cc -O2 -shared -fPIC driver_bench.c -I$CUDA/include -L$CUDA/lib64/stubs -lcuda
 */
#include <cuda.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static CUstream stream;
static CUevent event;

static double
now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Device 0's primary context made current in the calling thread, a stream and an event.
   0, or the failing CUresult. */
int
bench_init(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUresult res;
    if ((res = cuInit(0)) != CUDA_SUCCESS || (res = cuDeviceGet(&dev, 0)) != CUDA_SUCCESS ||
        (res = cuDevicePrimaryCtxRetain(&ctx, dev)) != CUDA_SUCCESS ||
        (res = cuCtxSetCurrent(ctx)) != CUDA_SUCCESS ||
        (res = cuStreamCreate(&stream, CU_STREAM_DEFAULT)) != CUDA_SUCCESS ||
        (res = cuEventCreate(&event, CU_EVENT_DEFAULT)) != CUDA_SUCCESS) {
        return (int)res;
    }
    return 0;
}

/* n records on an idle stream; synchronized outside the timed window. */
double
bench_event_record(int n)
{
    double t0 = now_us(), t;
    for (int i = 0; i < n; i++) {
        cuEventRecord(event, stream);
    }
    t = (now_us() - t0) / n;
    cuStreamSynchronize(stream);
    return t;
}

double
bench_stream_sync(int n)
{
    double t0 = now_us();
    for (int i = 0; i < n; i++) {
        cuStreamSynchronize(stream);
    }
    return (now_us() - t0) / n;
}

double
bench_stream_create(int n)
{
    double t0 = now_us();
    for (int i = 0; i < n; i++) {
        CUstream s;
        cuStreamCreate(&s, CU_STREAM_DEFAULT);
        cuStreamDestroy(s);
    }
    return (now_us() - t0) / n;
}

double
bench_event_create(int n)
{
    double t0 = now_us();
    for (int i = 0; i < n; i++) {
        CUevent e;
        cuEventCreate(&e, CU_EVENT_DEFAULT);
        cuEventDestroy(e);
    }
    return (now_us() - t0) / n;
}

/* n synchronous copies of `bytes` host->device (to_device != 0) or device->host, from
   pageable (malloc'd, touched first) or pinned memory; allocation is outside the window.
   Returns a negative number if an allocation failed. */
double
bench_copy(size_t bytes, int pinned, int to_device, int n)
{
    CUdeviceptr d;
    void *h = NULL;
    double t0, t;
    if (cuMemAlloc(&d, bytes) != CUDA_SUCCESS) {
        return -1.0;
    }
    if (pinned ? cuMemHostAlloc(&h, bytes, 0) != CUDA_SUCCESS : (h = malloc(bytes)) == NULL) {
        cuMemFree(d);
        return -1.0;
    }
    memset(h, 0x5a, bytes);
    cuMemcpyHtoD(d, h, bytes); /* warm */
    t0 = now_us();
    for (int i = 0; i < n; i++) {
        if (to_device) {
            cuMemcpyHtoD(d, h, bytes);
        }
        else {
            cuMemcpyDtoH(h, d, bytes);
        }
    }
    t = (now_us() - t0) / n;
    if (pinned) {
        cuMemFreeHost(h);
    }
    else {
        free(h);
    }
    cuMemFree(d);
    return t;
}
