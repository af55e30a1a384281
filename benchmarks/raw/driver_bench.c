/* The floor: the driver API called directly from C, timed the way the Python benchmarks time
 * gpuhost and the peers (median of 7 repetitions of a loop of N calls, µs per call).
 * Prints one JSON object of {operation: microseconds}.  Built by benchmarks/_raw.py:
 *   cc -O2 driver_bench.c -I$CUDA/include -L$CUDA/lib64/stubs -lcuda
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define REPEAT 7

#define CHECK(call)                                                                                \
    do {                                                                                           \
        CUresult res_ = (call);                                                                    \
        if (res_ != CUDA_SUCCESS) {                                                                \
            fprintf(stderr, "%s failed: %d\n", #call, (int)res_);                                  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double
now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double
median(double *v)
{
    qsort(v, REPEAT, sizeof(double), cmp_double);
    return v[REPEAT / 2];
}

static CUstream stream;
static CUevent event;

static void
op_event_record(int n)
{
    for (int i = 0; i < n; i++) {
        CHECK(cuEventRecord(event, stream));
    }
}

static void
op_stream_sync(int n)
{
    for (int i = 0; i < n; i++) {
        CHECK(cuStreamSynchronize(stream));
    }
}

static void
op_stream_create(int n)
{
    for (int i = 0; i < n; i++) {
        CUstream s;
        CHECK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
        CHECK(cuStreamDestroy(s));
    }
}

static void
op_event_create(int n)
{
    for (int i = 0; i < n; i++) {
        CUevent e;
        CHECK(cuEventCreate(&e, CU_EVENT_DEFAULT));
        CHECK(cuEventDestroy(e));
    }
}

/* Median µs per call of `op` over loops of `n`; `sync` synchronizes outside the window. */
static double
measure(void (*op)(int), int n, int sync)
{
    double t[REPEAT];
    op(n); /* warm up */
    CHECK(cuCtxSynchronize());
    for (int r = 0; r < REPEAT; r++) {
        double t0 = now_us();
        op(n);
        t[r] = (now_us() - t0) / n;
        if (sync) {
            CHECK(cuCtxSynchronize());
        }
    }
    return median(t);
}

/* ---- copies ---- */

static CUdeviceptr dbuf;
static void *hbuf;
static size_t copy_bytes;

static void
op_htod(int n)
{
    for (int i = 0; i < n; i++) {
        CHECK(cuMemcpyHtoD(dbuf, hbuf, copy_bytes));
    }
}

static void
op_dtoh(int n)
{
    for (int i = 0; i < n; i++) {
        CHECK(cuMemcpyDtoH(hbuf, dbuf, copy_bytes));
    }
}

/* µs per copy of `bytes` each way, from pageable (malloc) or pinned host memory. */
static void
copies(size_t bytes, int pinned, int n, const char *label)
{
    copy_bytes = bytes;
    CHECK(cuMemAlloc(&dbuf, bytes));
    if (pinned) {
        CHECK(cuMemHostAlloc(&hbuf, bytes, 0));
    }
    else {
        hbuf = malloc(bytes);
    }
    for (size_t i = 0; i < bytes; i++) {
        ((unsigned char *)hbuf)[i] = (unsigned char)(i * 7); /* touch: no page faults timed */
    }
    printf(", \"htod_%s\": %.4f", label, measure(op_htod, n, 0));
    printf(", \"dtoh_%s\": %.4f", label, measure(op_dtoh, n, 0));
    if (pinned) {
        CHECK(cuMemFreeHost(hbuf));
    }
    else {
        free(hbuf);
    }
    CHECK(cuMemFree(dbuf));
}

int
main(void)
{
    CUdevice dev;
    CUcontext ctx;
    double t0;

    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    t0 = now_us();
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    printf("{\"first_context_ms\": %.3f", (now_us() - t0) / 1e3);
    CHECK(cuStreamCreate(&stream, CU_STREAM_DEFAULT));
    CHECK(cuEventCreate(&event, CU_EVENT_DEFAULT));
    printf(", \"event_record\": %.4f", measure(op_event_record, 200, 1));
    printf(", \"stream_sync_idle\": %.4f", measure(op_stream_sync, 2000, 0));
    printf(", \"stream_create\": %.4f", measure(op_stream_create, 500, 1));
    printf(", \"event_create\": %.4f", measure(op_event_create, 2000, 1));
    copies(8, 0, 2000, "8B_pageable");
    copies(1 << 20, 0, 50, "1MiB_pageable");
    copies(1 << 20, 1, 50, "1MiB_pinned");
    copies((size_t)256 << 20, 0, 1, "256MiB_pageable");
    copies((size_t)256 << 20, 1, 1, "256MiB_pinned");
    printf("}\n");
    return 0;
}
