/* The floor: the driver API called directly from C.  Built as a shared library that the
 * Python benchmarks load with ctypes, so the raw C loops run in the same process as
 * gpuhost and the peers, interleaved with them repetition by repetition (a separate
 * process would be measured at another moment, on a machine whose speed drifts).
 * Each bench_* function times one loop of `n` calls and returns microseconds per call.
 *   cc -O2 -shared -fPIC driver_bench.c -I$CUDA/include -L$CUDA/lib64/stubs -lcuda
 * With -DBENCH_NVRTC_ONLY only bench_nvrtc_compile is built, and libcuda is not needed
 * (NVRTC runs without a GPU):
 *   cc -O2 -shared -fPIC -DBENCH_NVRTC_ONLY driver_bench.c -I$CUDA/include -ldl
 */
#include <cuda.h>
#include <dlfcn.h>
#include <nvrtc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double
now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* n NVRTC compilations of `source` with `options`, each as a program does one: create,
   compile, fetch the log, the PTX and (for an sm_XY target) the cubin, destroy.  libnvrtc
   is dlopen'ed from `libpath` (pass gpuhost's, so both time the same library).  Returns
   microseconds per compilation, or a negative number if loading or compiling failed. */
double
bench_nvrtc_compile(const char *libpath, const char *source, int nopts, const char *const *options,
                    int n)
{
    void *lib = dlopen(libpath, RTLD_NOW | RTLD_LOCAL);
    __typeof__(nvrtcCreateProgram) *create;
    __typeof__(nvrtcCompileProgram) *compile;
    __typeof__(nvrtcGetProgramLogSize) *log_size;
    __typeof__(nvrtcGetProgramLog) *get_log;
    __typeof__(nvrtcGetPTXSize) *ptx_size;
    __typeof__(nvrtcGetPTX) *get_ptx;
    __typeof__(nvrtcGetCUBINSize) *cubin_size;
    __typeof__(nvrtcGetCUBIN) *get_cubin;
    __typeof__(nvrtcDestroyProgram) *destroy;
    double t0, t = -1.0;
    int failed = 0;

    if (lib == NULL) {
        return -1.0;
    }
    create = (__typeof__(create))dlsym(lib, "nvrtcCreateProgram");
    compile = (__typeof__(compile))dlsym(lib, "nvrtcCompileProgram");
    log_size = (__typeof__(log_size))dlsym(lib, "nvrtcGetProgramLogSize");
    get_log = (__typeof__(get_log))dlsym(lib, "nvrtcGetProgramLog");
    ptx_size = (__typeof__(ptx_size))dlsym(lib, "nvrtcGetPTXSize");
    get_ptx = (__typeof__(get_ptx))dlsym(lib, "nvrtcGetPTX");
    cubin_size = (__typeof__(cubin_size))dlsym(lib, "nvrtcGetCUBINSize");
    get_cubin = (__typeof__(get_cubin))dlsym(lib, "nvrtcGetCUBIN");
    destroy = (__typeof__(destroy))dlsym(lib, "nvrtcDestroyProgram");
    if (!create || !compile || !log_size || !get_log || !ptx_size || !get_ptx || !cubin_size ||
        !get_cubin || !destroy) {
        dlclose(lib);
        return -1.0;
    }
    t0 = now_us();
    for (int i = 0; i < n && !failed; i++) {
        nvrtcProgram prog;
        size_t size = 0;
        char *buf;
        if (create(&prog, source, "kernel.cu", 0, NULL, NULL) != NVRTC_SUCCESS) {
            failed = 1;
            break;
        }
        failed = compile(prog, nopts, options) != NVRTC_SUCCESS;
        if (log_size(prog, &size) == NVRTC_SUCCESS && (buf = malloc(size + 1)) != NULL) {
            get_log(prog, buf);
            free(buf);
        }
        if (!failed && ptx_size(prog, &size) == NVRTC_SUCCESS && size > 0 &&
            (buf = malloc(size)) != NULL) {
            get_ptx(prog, buf);
            free(buf);
        }
        if (!failed && cubin_size(prog, &size) == NVRTC_SUCCESS && size > 0 &&
            (buf = malloc(size)) != NULL) {
            get_cubin(prog, buf);
            free(buf);
        }
        destroy(&prog);
    }
    if (!failed) {
        t = (now_us() - t0) / n;
    }
    dlclose(lib);
    return t;
}

#ifndef BENCH_NVRTC_ONLY
static CUstream stream;
static CUevent event;

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

/* n synchronous cuMemsetD32 of `bytes` bytes (as a fill on the default stream makes
   them); microseconds per memset. */
double
bench_memset(size_t bytes, int n)
{
    CUdeviceptr p;
    double t0, t;
    if (cuMemAlloc(&p, bytes) != CUDA_SUCCESS) {
        return -1.0;
    }
    cuMemsetD32(p, 0, bytes / 4);
    t0 = now_us();
    for (int i = 0; i < n; i++) {
        cuMemsetD32(p, 0, bytes / 4);
    }
    t = (now_us() - t0) / n;
    cuCtxSynchronize();
    cuMemFree(p);
    return t;
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
/* The device's default stream-ordered pool, its release threshold raised so that freed
   memory stays in it (as gpuhost's 'driver' mode and CuPy's async allocator set it).
   0, or the failing CUresult. */
static CUresult
keep_pool_memory(void)
{
    CUdevice dev;
    CUmemoryPool pool;
    cuuint64_t threshold = ~(cuuint64_t)0;
    CUresult res;
    if ((res = cuCtxGetDevice(&dev)) != CUDA_SUCCESS ||
        (res = cuDeviceGetDefaultMemPool(&pool, dev)) != CUDA_SUCCESS) {
        return res;
    }
    return cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
}

/* n pairs of cuMemAllocAsync + cuMemFreeAsync of `bytes` on the stream; synchronized
   outside the timed window.  A negative number if an allocation failed. */
double
bench_alloc_async(size_t bytes, int n)
{
    CUdeviceptr d;
    double t0, t;
    int failed = 0;
    if (keep_pool_memory() != CUDA_SUCCESS) {
        return -1.0;
    }
    t0 = now_us();
    for (int i = 0; i < n && !failed; i++) {
        failed = cuMemAllocAsync(&d, bytes, stream) != CUDA_SUCCESS;
        if (!failed) {
            cuMemFreeAsync(d, stream);
        }
    }
    t = (now_us() - t0) / n;
    cuStreamSynchronize(stream);
    return failed ? -1.0 : t;
}

/* An allocation trace, `reps` times: op i allocates sizes[i] into slots[i] if that slot is
   empty, else frees the slot (cuMemAllocAsync / cuMemFreeAsync on the stream).  The trace
   must leave every slot empty.  Microseconds per allocation + free, or negative. */
double
bench_alloc_trace(const int *slots, const size_t *sizes, int nops, int nslots, int reps)
{
    CUdeviceptr *live = calloc((size_t)nslots, sizeof(*live));
    double t0, t;
    long allocs = 0;
    int failed = 0;
    if (live == NULL || keep_pool_memory() != CUDA_SUCCESS) {
        free(live);
        return -1.0;
    }
    t0 = now_us();
    for (int r = 0; r < reps && !failed; r++) {
        for (int i = 0; i < nops; i++) {
            if (live[slots[i]] == 0) {
                if (cuMemAllocAsync(&live[slots[i]], sizes[i], stream) != CUDA_SUCCESS) {
                    failed = 1;
                    break;
                }
                allocs++;
            }
            else {
                cuMemFreeAsync(live[slots[i]], stream);
                live[slots[i]] = 0;
            }
        }
    }
    t = (now_us() - t0) / (allocs ? allocs : 1);
    for (int i = 0; i < nslots; i++) {
        if (live[i] != 0) {
            cuMemFreeAsync(live[i], stream);
        }
    }
    cuStreamSynchronize(stream);
    free(live);
    return failed ? -1.0 : t;
}

/* n synchronous peer copies (cuMemcpyPeer) of `bytes` from device `src`'s memory to device
   `dst`'s, then both contexts synchronized; microseconds per copy, or a negative number if
   a call failed.  The devices' primary contexts are the ones gpuhost and the CUDA runtime
   use, so peer access enabled beforehand by any of them applies here too.  Allocation and
   a warm-up copy are outside the window; the calling thread's current context is kept. */
double
bench_peer_copy(size_t bytes, int src, int dst, int n)
{
    CUdevice sdev, ddev;
    CUcontext sctx = NULL, dctx = NULL, prev = NULL;
    CUdeviceptr s = 0, d = 0;
    double t0, t = -1.0;
    int failed = 0;

    if (cuDeviceGet(&sdev, src) != CUDA_SUCCESS || cuDeviceGet(&ddev, dst) != CUDA_SUCCESS ||
        cuCtxGetCurrent(&prev) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&sctx, sdev) != CUDA_SUCCESS) {
        return -1.0;
    }
    if (cuDevicePrimaryCtxRetain(&dctx, ddev) != CUDA_SUCCESS) {
        cuDevicePrimaryCtxRelease(sdev);
        return -1.0;
    }
    if (cuCtxSetCurrent(sctx) != CUDA_SUCCESS || cuMemAlloc(&s, bytes) != CUDA_SUCCESS ||
        cuMemsetD8(s, 0x5a, bytes) != CUDA_SUCCESS || cuCtxSetCurrent(dctx) != CUDA_SUCCESS ||
        cuMemAlloc(&d, bytes) != CUDA_SUCCESS ||
        cuMemcpyPeer(d, dctx, s, sctx, bytes) != CUDA_SUCCESS || /* warm */
        cuCtxSynchronize() != CUDA_SUCCESS) {
        goto done;
    }
    t0 = now_us();
    for (int i = 0; i < n && !failed; i++) {
        failed = cuMemcpyPeer(d, dctx, s, sctx, bytes) != CUDA_SUCCESS;
    }
    failed |= cuCtxSynchronize() != CUDA_SUCCESS; /* dst's context is current */
    failed |= cuCtxSetCurrent(sctx) != CUDA_SUCCESS || cuCtxSynchronize() != CUDA_SUCCESS;
    if (!failed) {
        t = (now_us() - t0) / n;
    }
done:
    if (s != 0 && cuCtxSetCurrent(sctx) == CUDA_SUCCESS) {
        cuMemFree(s);
    }
    if (d != 0 && cuCtxSetCurrent(dctx) == CUDA_SUCCESS) {
        cuMemFree(d);
    }
    cuCtxSetCurrent(prev);
    cuDevicePrimaryCtxRelease(sdev);
    cuDevicePrimaryCtxRelease(ddev);
    return t;
}
#endif /* BENCH_NVRTC_ONLY */
