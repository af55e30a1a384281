/* What bounds a pageable host-to-device copy on this machine: the measurements behind the
 * staging ring's design (csrc/memory/staging.c), each in C so that nothing of Python is counted.
 *
 *   cc -O2 -pthread -o /tmp/probe tools/host_copy_probe.c -I$CUDA/include \
 *      -L$CUDA/lib64/stubs -lcuda && /tmp/probe [register|dma|bandwidth]...
 *
 * register   pinning the user's memory instead of copying it: cuMemHostRegister + copy +
 *            cuMemHostUnregister of a whole (huge-page backed, as NumPy's large arrays are)
 *            buffer, and chunk by chunk on K threads with the DMAs behind them.
 * dma        the DMA engine reading a 32 MiB registered ring (the staging ring's shape)
 *            that is cold, or was just written by T threads with ordinary stores, streaming
 *            stores, or ordinary stores followed by clwb / cldemote of every line.
 * bandwidth  T threads reading host memory, or copying it into the ring (ordinary and
 *            streaming stores), alone and beside a pinned DMA that runs meanwhile.
 * Each figure is the median of 5 (register, dma) or the best of 3 (bandwidth).
 */
#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* Streaming stores, clwb and cldemote are x86's; elsewhere (aarch64) those three ways of
   writing the ring are left out and the rest is measured as on x86. */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86_STORES 1
#else
#define HAVE_X86_STORES 0
#endif

#define MiB  ((size_t)1 << 20)
#define RING (32 * MiB)
#define PART (256 << 10)
#define REPS 5
#define CHECK(call)                                                                                \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            const char *name_ = "?";                                                               \
            cuGetErrorName(r_, &name_);                                                            \
            fprintf(stderr, "%s failed: %s\n", #call, name_);                                      \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static CUcontext ctx;
static CUstream stream;

static double
now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int
by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double
median(double *v)
{
    qsort(v, REPS, sizeof *v, by_value);
    return v[REPS / 2];
}

/* A host buffer as NumPy makes a large one: aligned, huge pages asked for, touched. */
static char *
numpy_like(size_t n, int fill)
{
    char *p = aligned_alloc(2 * MiB, n);
    if (p == NULL) {
        fprintf(stderr, "out of host memory\n");
        exit(1);
    }
    madvise(p, n, MADV_HUGEPAGE);
    memset(p, fill, n);
    return p;
}

/* ---- register ---- */

static struct {
    char *host;
    size_t n, chunk;
    int nchunks;
    atomic_int next_reg, next_unreg, ready[1024], issued[1024];
    CUevent done[1024];
} rj;

static void *
register_worker(void *arg)
{
    int c;
    (void)arg;
    cuCtxSetCurrent(ctx);
    while ((c = atomic_fetch_add(&rj.next_reg, 1)) < rj.nchunks) {
        size_t off = (size_t)c * rj.chunk, len = rj.n - off < rj.chunk ? rj.n - off : rj.chunk;
        CHECK(cuMemHostRegister(rj.host + off, len, CU_MEMHOSTREGISTER_READ_ONLY));
        atomic_store(&rj.ready[c], 1);
    }
    while ((c = atomic_fetch_add(&rj.next_unreg, 1)) < rj.nchunks) {
        while (!atomic_load(&rj.issued[c])) {
        }
        CHECK(cuEventSynchronize(rj.done[c]));
        CHECK(cuMemHostUnregister(rj.host + (size_t)c * rj.chunk));
    }
    return NULL;
}

/* ms for one copy of the whole buffer, registered chunk by chunk on k threads */
static double
chunked_register_copy(CUdeviceptr d, int k)
{
    pthread_t threads[16];
    double t0;
    atomic_store(&rj.next_reg, 0);
    atomic_store(&rj.next_unreg, 0);
    for (int c = 0; c < rj.nchunks; c++) {
        atomic_store(&rj.ready[c], 0);
        atomic_store(&rj.issued[c], 0);
    }
    t0 = now_ms();
    for (int i = 0; i < k; i++) {
        pthread_create(&threads[i], NULL, register_worker, NULL);
    }
    for (int c = 0; c < rj.nchunks; c++) {
        size_t off = (size_t)c * rj.chunk, len = rj.n - off < rj.chunk ? rj.n - off : rj.chunk;
        while (!atomic_load(&rj.ready[c])) {
        }
        CHECK(cuMemcpyHtoDAsync(d + off, rj.host + off, len, stream));
        CHECK(cuEventRecord(rj.done[c], stream));
        atomic_store(&rj.issued[c], 1);
    }
    for (int i = 0; i < k; i++) {
        pthread_join(threads[i], NULL);
    }
    CHECK(cuStreamSynchronize(stream));
    return now_ms() - t0;
}

static void
probe_register(void)
{
    static const size_t sizes[] = {64 * MiB, 256 * MiB, 1024 * MiB};
    for (int i = 0; i < 1024; i++) {
        CHECK(cuEventCreate(&rj.done[i], CU_EVENT_DISABLE_TIMING));
    }
    printf("register: pin the source for the copy instead of staging it\n");
    for (int s = 0; s < 3; s++) {
        size_t n = sizes[s];
        CUdeviceptr d;
        void *pinned;
        double pin[REPS], reg[REPS], copy[REPS], unreg[REPS], t0;
        CHECK(cuMemAlloc(&d, n));
        CHECK(cuMemHostAlloc(&pinned, n, 0));
        memset(pinned, 1, n);
        rj.host = numpy_like(n, 3), rj.n = n;
        for (int r = 0; r < REPS; r++) {
            t0 = now_ms();
            CHECK(cuMemcpyHtoD(d, pinned, n));
            pin[r] = now_ms() - t0;
            t0 = now_ms();
            CHECK(cuMemHostRegister(rj.host, n, CU_MEMHOSTREGISTER_READ_ONLY));
            reg[r] = now_ms() - t0;
            t0 = now_ms();
            CHECK(cuMemcpyHtoD(d, rj.host, n));
            copy[r] = now_ms() - t0;
            t0 = now_ms();
            CHECK(cuMemHostUnregister(rj.host));
            unreg[r] = now_ms() - t0;
        }
        printf("  %4zu MiB: pinned copy %.1f GB/s; register %.2f ms + copy %.2f + unregister %.2f"
               " = %.2f of pinned\n",
               n / MiB, n / median(pin) / 1e6, median(reg), median(copy), median(unreg),
               median(pin) / (median(reg) + median(copy) + median(unreg)));
        for (size_t chunk = 4 * MiB; chunk <= 16 * MiB; chunk *= 2) {
            rj.chunk = chunk, rj.nchunks = (int)((n + chunk - 1) / chunk);
            printf("    chunks of %2zu MiB, registered by 1/2/4/8 threads:", chunk / MiB);
            for (int k = 1; k <= 8; k *= 2) {
                double t[REPS];
                for (int r = 0; r < REPS; r++) {
                    t[r] = chunked_register_copy(d, k);
                }
                printf(" %.2f", median(pin) / median(t));
            }
            printf(" of pinned\n");
        }
        free(rj.host);
        cuMemFreeHost(pinned);
        cuMemFree(d);
    }
}

/* ---- dma and bandwidth: threads over the ring ---- */

enum store { ORDINARY, STREAMING, CLWB, CLDEMOTE, READ_ONLY };
static const char *store_names[] = {"ordinary stores", "streaming stores", "stores + clwb",
                                    "stores + cldemote", "reading only"};

static struct {
    char *ring, *src;
    size_t src_size;
    enum store how;
    int nthreads;
    atomic_long next_part;
    atomic_int go;
} tj;
static volatile long sink;

/* Whether this machine's build measures `how` (see HAVE_X86_STORES). */
static int
store_available(enum store how)
{
    return HAVE_X86_STORES || how == ORDINARY || how == READ_ONLY;
}

#if HAVE_X86_STORES
__attribute__((target("avx2"))) static void
stream_copy(char *dst, const char *src, size_t n)
{
    for (size_t i = 0; i + 64 <= n; i += 64) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(src + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(src + i + 32));
        _mm256_stream_si256((__m256i *)(dst + i), a);
        _mm256_stream_si256((__m256i *)(dst + i + 32), b);
    }
    _mm_sfence();
}

/* Every line of dst written back (clwb) or pushed to the shared cache (cldemote). */
__attribute__((target("clwb,cldemote"))) static void
flush_lines(char *dst, size_t n, enum store how)
{
    for (size_t i = 0; i < n; i += 64) {
        if (how == CLWB) {
            _mm_clwb(dst + i);
        }
        else {
            _cldemote(dst + i);
        }
    }
}
#endif

static void
copy_part(char *dst, const char *src, size_t n, enum store how)
{
    long sum = 0;
    switch (how) {
        case READ_ONLY:
            for (size_t i = 0; i < n; i += 64) {
                sum += src[i];
            }
            sink += sum;
            return;
#if HAVE_X86_STORES
        case STREAMING:
            stream_copy(dst, src, n);
            return;
        case CLWB:
        case CLDEMOTE:
            memcpy(dst, src, n);
            flush_lines(dst, n, how);
            return;
#endif
        default:
            memcpy(dst, src, n);
    }
}

/* Parts of the source, in turn, into the ring (which wraps). */
static void *
part_worker(void *arg)
{
    long g, nparts = (long)(tj.src_size / PART);
    (void)arg;
    while (!atomic_load(&tj.go)) {
    }
    while ((g = atomic_fetch_add(&tj.next_part, 1)) < nparts) {
        copy_part(tj.ring + (size_t)g * PART % RING, tj.src + (size_t)g * PART, PART, tj.how);
    }
    return NULL;
}

/* ms for nthreads to take every part of the source */
static double
run_parts(int nthreads, enum store how)
{
    pthread_t threads[16];
    double t0;
    tj.how = how, tj.nthreads = nthreads;
    atomic_store(&tj.next_part, 0);
    atomic_store(&tj.go, 0);
    for (int i = 0; i < nthreads; i++) {
        pthread_create(&threads[i], NULL, part_worker, NULL);
    }
    t0 = now_ms();
    atomic_store(&tj.go, 1);
    for (int i = 0; i < nthreads; i++) {
        pthread_join(threads[i], NULL);
    }
    return now_ms() - t0;
}

static void
probe_dma(void)
{
    CUdeviceptr d;
    CUevent e0, e1;
    char *evict = numpy_like(512 * MiB, 0);
    CHECK(cuMemAlloc(&d, RING));
    CHECK(cuEventCreate(&e0, 0));
    CHECK(cuEventCreate(&e1, 0));
    tj.src = numpy_like(RING, 2), tj.src_size = RING;
    printf("dma: 32 MiB from the registered ring, in 4 MiB DMAs, after the ring was written\n");
    for (int how = -1; how <= CLDEMOTE; how++) {
        if (how >= 0 && !store_available((enum store)how)) {
            printf("  %s: not on this architecture\n", store_names[how]);
            continue;
        }
        for (int nthreads = 1; nthreads <= 12; nthreads = nthreads == 1 ? 4 : nthreads + 8) {
            double t[REPS];
            for (int r = 0; r < REPS; r++) {
                float ms;
                memset(evict, r, 512 * MiB); /* the ring out of every cache */
                if (how >= 0) {
                    run_parts(nthreads, (enum store)how);
                }
                CHECK(cuEventRecord(e0, stream));
                for (size_t off = 0; off < RING; off += 4 * MiB) {
                    CHECK(cuMemcpyHtoDAsync(d + off, tj.ring + off, 4 * MiB, stream));
                }
                CHECK(cuEventRecord(e1, stream));
                CHECK(cuEventSynchronize(e1));
                CHECK(cuEventElapsedTime(&ms, e0, e1));
                t[r] = ms;
            }
            if (how < 0) {
                printf("  cold ring: %.1f GB/s\n", RING / median(t) / 1e6);
                break;
            }
            printf("  written by %2d threads, %-17s: %.1f GB/s\n", nthreads, store_names[how],
                   RING / median(t) / 1e6);
        }
    }
    free(tj.src);
    free(evict);
    cuMemFree(d);
}

static struct {
    CUdeviceptr d;
    void *pinned;
    atomic_int stop;
    double gbps;
} bg;

static void *
background_dma(void *arg)
{
    double t0 = now_ms();
    long copies = 0;
    (void)arg;
    cuCtxSetCurrent(ctx);
    while (!atomic_load(&bg.stop)) {
        CHECK(cuMemcpyHtoD(bg.d, bg.pinned, 64 * MiB));
        copies++;
    }
    bg.gbps = copies * 64.0 * MiB / (now_ms() - t0) / 1e6;
    return NULL;
}

static void
probe_bandwidth(void)
{
    static const enum store kinds[] = {READ_ONLY, ORDINARY, STREAMING};
    tj.src_size = 1024 * MiB;
    tj.src = numpy_like(tj.src_size, 7);
    CHECK(cuMemAlloc(&bg.d, 64 * MiB));
    CHECK(cuMemHostAlloc(&bg.pinned, 64 * MiB, 0));
    memset(bg.pinned, 1, 64 * MiB);
    printf("bandwidth: threads over 1 GiB of host memory, GB/s (with a pinned DMA beside: its "
           "GB/s)\n");
    for (int k = 0; k < 3; k++) {
        if (!store_available(kinds[k])) {
            printf("  %s: not on this architecture\n", store_names[kinds[k]]);
            continue;
        }
        for (int with_dma = 0; with_dma < 2; with_dma++) {
            printf("  %-17s%s", store_names[kinds[k]], with_dma ? " + DMA:" : ":      ");
            for (int nthreads = 1; nthreads <= 16; nthreads *= 2) {
                double best = 0;
                for (int r = 0; r < 3; r++) {
                    pthread_t dma;
                    double gbps;
                    atomic_store(&bg.stop, 0);
                    if (with_dma) {
                        pthread_create(&dma, NULL, background_dma, NULL);
                    }
                    gbps = tj.src_size / run_parts(nthreads, kinds[k]) / 1e6;
                    atomic_store(&bg.stop, 1);
                    if (with_dma) {
                        pthread_join(dma, NULL);
                    }
                    best = gbps > best ? gbps : best;
                }
                printf(" %2dT %5.1f", nthreads, best);
                if (with_dma) {
                    printf(" (%2.0f)", bg.gbps);
                }
            }
            printf("\n");
        }
    }
    free(tj.src);
    cuMemFreeHost(bg.pinned);
    cuMemFree(bg.d);
}

int
main(int argc, char **argv)
{
    CUdevice dev;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    tj.ring = aligned_alloc(4096, RING); /* as the staging ring's */
    if (tj.ring == NULL) {
        return 1;
    }
    memset(tj.ring, 0, RING);
    CHECK(cuMemHostRegister(tj.ring, RING, CU_MEMHOSTREGISTER_PORTABLE));
    for (int i = 1; i < argc || argc == 1; i++) {
        const char *what = argc == 1 ? "all" : argv[i];
        int all = strcmp(what, "all") == 0;
        if (all || strcmp(what, "register") == 0) {
            probe_register();
        }
        if (all || strcmp(what, "dma") == 0) {
            probe_dma();
        }
        if (all || strcmp(what, "bandwidth") == 0) {
            probe_bandwidth();
        }
        fflush(stdout);
        if (argc == 1) {
            break;
        }
    }
    return 0;
}
