/* Copies between pageable host memory and the device through a pinned staging ring.
 *
 * The driver copies pageable memory through its own small staging buffer with one thread.
 * Here large copies go through a ring of pinned slots: several host threads copy parts of
 * chunks between the pageable buffer and the slots while the DMA engine moves the chunks
 * already staged, so the host side runs at memory bandwidth instead of one core's.  The
 * threads stream through the whole copy without a handshake per chunk (see "a staged copy
 * as one stream of parts").  The ring is allocated once (8 slots of 4 MiB by default,
 * registered portable) and never grows; one staged copy runs at a time.  Everything here
 * runs without the GIL.
 */
#include "memory_internal.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#define GH_HAVE_STREAM_STORES 1
#endif

#define GH_STAGE_MAX_SLOTS   16
#define GH_STAGE_MAX_THREADS 16

/* The ring's shape: GPUHOST_STAGE_SLOTS chunks (default 8) of GPUHOST_STAGE_CHUNK_MB MiB
   (default 4), read once.  tools/staging_sweep.py varies them: on the H100 machine (16
   cores) 8 x 4 MiB with 12 threads did best, 4 x 8 MiB with a handshake per chunk gave
   0.4-0.7 of the pinned bandwidth host to device. */
static int stage_slots = 8;
static size_t stage_chunk = (size_t)4 << 20;

/* Where copies write with the CPU's streaming (non-temporal) stores, if it has them: see
   streams().  GPUHOST_STAGE_NT=0 turns them off, =2 uses them in every copy (for
   tools/staging_sweep.py). */
static int stream_stores = 1; /* 0 never, 1 where streams() says, 2 always */

/* The ring's shape and the stores, from the environment, once (before the ring is made). */
static void
read_settings(void)
{
    const char *env = getenv("GPUHOST_STAGE_SLOTS");
    long v = env && *env ? strtol(env, NULL, 10) : 0;
    if (v >= 2 && v <= GH_STAGE_MAX_SLOTS) {
        stage_slots = (int)v;
    }
    env = getenv("GPUHOST_STAGE_CHUNK_MB");
    v = env && *env ? strtol(env, NULL, 10) : 0;
    if (v >= 1 && v <= 256) {
        stage_chunk = (size_t)v << 20;
    }
    env = getenv("GPUHOST_STAGE_NT");
    stream_stores = env && *env ? (int)strtol(env, NULL, 10) : 1;
}

static void
copy_bytes(char *dst, const char *src, size_t n, int streaming)
{
#ifdef GH_HAVE_STREAM_STORES
    if (streaming && n >= 4096) {
        size_t head = (16 - ((uintptr_t)dst & 15)) & 15;
        memcpy(dst, src, head);
        dst += head, src += head, n -= head;
        for (; n >= 64; n -= 64, dst += 64, src += 64) {
            __m128i a = _mm_loadu_si128((const __m128i *)src);
            __m128i b = _mm_loadu_si128((const __m128i *)(src + 16));
            __m128i c = _mm_loadu_si128((const __m128i *)(src + 32));
            __m128i d = _mm_loadu_si128((const __m128i *)(src + 48));
            _mm_stream_si128((__m128i *)dst, a);
            _mm_stream_si128((__m128i *)(dst + 16), b);
            _mm_stream_si128((__m128i *)(dst + 32), c);
            _mm_stream_si128((__m128i *)(dst + 48), d);
        }
        _mm_sfence();
    }
#else
    (void)streaming; /* no streaming stores on this architecture */
#endif
    memcpy(dst, src, n);
}

/* ---- a small pool of copying threads ---- */

/* What the workers are given: a staged copy (below), and how many of them hold it. */
typedef struct {
    struct stream_job *stream;
    int users; /* workers holding the job (under pool.lock) */
} copy_job;

static void run_stream_parts(struct stream_job *j);

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    copy_job *job;
    unsigned long seq;
    int nthreads; /* workers started (the caller copies too) */
} pool = {
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0};

static void *
worker_main(void *arg)
{
    unsigned long seen = 0;
    (void)arg;
    pthread_mutex_lock(&pool.lock);
    for (;;) {
        copy_job *job;
        while (pool.seq == seen || pool.job == NULL) {
            seen = pool.seq;
            pthread_cond_wait(&pool.wake, &pool.lock);
        }
        seen = pool.seq;
        job = pool.job;
        job->users++;
        pthread_mutex_unlock(&pool.lock);
        run_stream_parts(job->stream);
        pthread_mutex_lock(&pool.lock);
        job->users--;
        pthread_cond_broadcast(&pool.done);
    }
    return NULL;
}

/* How many threads copy (the caller included): GPUHOST_COPY_THREADS, else three quarters
   of the online CPUs (on the H100 machine's 16 cores: 4 copy at 30 GB/s, 8 at 42, 12 at
   50, 16 no faster), at most GH_STAGE_MAX_THREADS. */
static int
wanted_threads(void)
{
    const char *env = getenv("GPUHOST_COPY_THREADS");
    long n = env && *env ? strtol(env, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN) * 3 / 4;
    return n < 1 ? 1 : n > GH_STAGE_MAX_THREADS ? GH_STAGE_MAX_THREADS : (int)n;
}

/* Start the workers once; under the staging lock. */
static void
start_workers(void)
{
    int want = wanted_threads() - 1;
    while (pool.nthreads < want) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, worker_main, NULL) != 0) {
            pthread_attr_destroy(&attr);
            break; /* fewer threads: slower, still correct */
        }
        pthread_attr_destroy(&attr);
        pool.nthreads++;
    }
}

/* ---- the ring ---- */

static pthread_mutex_t stage_lock = PTHREAD_MUTEX_INITIALIZER;
static char *ring;                      /* stage_slots chunks, page-aligned, never freed */
static char *slots[GH_STAGE_MAX_SLOTS]; /* into ring */

/* The ring allocated and pinned; 0, or the CUresult that failed.  The memory is ours
   (aligned_alloc) and registered portable: a context reset or close undoes the
   registration but never frees the memory, so the ring is checked with the driver before
   each use and registered again when it has to be. */
static CUresult
ensure_ring(gh_cu_id *failed)
{
    size_t size;
    unsigned int type = 0;
    CUresult res;
    if (ring == NULL) {
        read_settings();
    }
    size = (size_t)stage_slots * stage_chunk;
    if (ring == NULL) {
        ring = aligned_alloc(4096, size);
        if (ring == NULL) {
            *failed = GH_CU_MemHostRegister;
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        for (int s = 0; s < stage_slots; s++) {
            slots[s] = ring + (size_t)s * stage_chunk;
        }
    }
    if (gh_cu.PointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)ring) !=
        CUDA_SUCCESS) {
        *failed = GH_CU_MemHostRegister;
        res = gh_cu.MemHostRegister(ring, size, CU_MEMHOSTREGISTER_PORTABLE);
        if (res != CUDA_SUCCESS) {
            return res;
        }
    }
    start_workers();
    return CUDA_SUCCESS;
}

/* The smallest pageable copy staged, both ways: GPUHOST_STAGING_THRESHOLD, else 2 MiB.
   On the H100 machine, staged 2 MiB copies ran at 1.4 x the driver's own pageable copy host
   to device and 1.2-1.3 x device to host, 1 MiB copies only within its noise. */
size_t
gh_staging_threshold(void)
{
    static size_t from_env = 0;
    static int read = 0;
    if (!read) {
        const char *env = getenv("GPUHOST_STAGING_THRESHOLD");
        long long v = env && *env ? strtoll(env, NULL, 10) : 0;
        from_env = v > 0 ? (size_t)v : 0;
        read = 1;
    }
    if (from_env != 0) {
        return from_env;
    }
    return (size_t)2 << 20;
}

int
gh_host_is_pageable(const void *host)
{
    unsigned int type = 0;
    CUresult res =
        gh_cu.PointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)host);
    return res != CUDA_SUCCESS; /* pinned and registered memory are known to the driver */
}

/* The DMA of chunk `i` between slot i % SLOTS and the device, then its event. */
static CUresult
chunk_dma(int to_host, CUdeviceptr dptr, size_t off, size_t len, int i, CUstream stream,
          CUevent *events, gh_cu_id *failed)
{
    char *slot = slots[i % stage_slots];
    CUresult res;
    *failed = to_host ? GH_CU_MemcpyDtoHAsync : GH_CU_MemcpyHtoDAsync;
    res = to_host ? gh_cu.MemcpyDtoHAsync(slot, dptr + off, len, stream)
                  : gh_cu.MemcpyHtoDAsync(dptr + off, slot, len, stream);
    if (res == CUDA_SUCCESS) {
        *failed = GH_CU_EventRecord;
        res = gh_cu.EventRecord(events[i % stage_slots], stream);
    }
    return res;
}

/* ---- a staged copy as one stream of parts ----
 *
 * The copy is cut into chunks (one slot each, in turn) and each chunk into parts.  The
 * workers take parts in order for the whole copy, without a handshake per chunk: a part
 * waits (spinning) until its chunk is open, that is, host to device, until the slot's
 * previous DMA has finished; device to host, until the chunk's DMA has landed in the slot.
 * The calling thread drives the DMA engine: it issues a chunk's DMA as soon as its parts
 * are copied (host to device) or its slot is free again (device to host), watches the
 * chunks' events, opens chunks, and copies parts itself in between.
 */

#define GH_STAGE_PART ((size_t)256 << 10)

typedef struct stream_job {
    char *host;
    CUdeviceptr dptr;
    size_t nbytes;
    size_t chunk; /* bytes per chunk: the slots' size, less for a copy of a few slots */
    int to_host, nchunks, parts_per_chunk;
    int streaming; /* slots (or the user's memory) written with streaming stores */
    long total_parts;
    atomic_long next;                         /* the next part to take, over the whole copy */
    atomic_int open_upto;                     /* chunks below this one may be copied */
    atomic_int abort;                         /* an error: everyone stops */
    atomic_int remaining[GH_STAGE_MAX_SLOTS]; /* parts left of the chunk in each slot */
} stream_job;

static inline void
cpu_relax(void)
{
#ifdef GH_HAVE_STREAM_STORES
    _mm_pause();
#else
    sched_yield();
#endif
}

/* The bytes of chunk i of j. */
static size_t chunk_len(const struct stream_job *j, int i);

static size_t
chunk_len(const stream_job *j, int i)
{
    size_t off = (size_t)i * j->chunk;
    return j->nbytes - off < j->chunk ? j->nbytes - off : j->chunk;
}

/* Whether a copy of nchunks writes with streaming stores.  Device to host, always: the
   user's memory is written once and not read back here, so the stores skip the
   read-for-ownership and leave the caches alone.  Host to device, when the copy is at most
   twice the ring: the DMA engine then reads each slot right after the workers wrote it,
   and reads it faster from memory than dirty in their caches (on the H100 machine, staged
   copies of 8 MiB from a source in cache ran at 0.27-0.42 of the pinned bandwidth with
   ordinary stores and 0.75-0.85 with streaming ones, of 64 MiB at 0.61-0.73 and
   0.74-0.81; from a source in memory, 8 MiB at 0.23-0.26 and 0.41-0.48, 64 MiB at
   0.49-0.52 and 0.65-0.72).  Longer copies keep ordinary stores: each slot waits for its
   DMA while the next ones are written and leaves the caches meanwhile, and the DMA reads
   it from the last-level cache (1 GiB staged at 0.92-0.93 of pinned with ordinary stores,
   0.7-0.87 with streaming ones). */
static int
streams(int to_host, int nchunks)
{
    return stream_stores == 2 || (stream_stores == 1 && (to_host || nchunks <= 2 * stage_slots));
}

/* Copy part g (its chunk open) and count it done. */
static void
stream_part(stream_job *j, long g)
{
    int c = (int)(g / j->parts_per_chunk);
    size_t off = (size_t)(g % j->parts_per_chunk) * GH_STAGE_PART, len = chunk_len(j, c);
    if (off < len) {
        char *host = j->host + (size_t)c * j->chunk + off;
        char *slot = slots[c % stage_slots] + off;
        len = len - off < GH_STAGE_PART ? len - off : GH_STAGE_PART;
        copy_bytes(j->to_host ? host : slot, j->to_host ? slot : host, len, j->streaming);
    }
    atomic_fetch_sub_explicit(&j->remaining[c % stage_slots], 1, memory_order_release);
}

/* A worker: parts in order until none is left (or the copy failed). */
static void
run_stream_parts(stream_job *j)
{
    long g;
    while (!atomic_load(&j->abort) && (g = atomic_fetch_add(&j->next, 1)) < j->total_parts) {
        int c = (int)(g / j->parts_per_chunk);
        while (c >= atomic_load_explicit(&j->open_upto, memory_order_acquire)) {
            if (atomic_load(&j->abort)) {
                return;
            }
            cpu_relax();
        }
        stream_part(j, g);
    }
}

/* The calling thread copies a part if the next one's chunk is open: 1 if it did. */
static int
help(stream_job *j)
{
    long g = atomic_load(&j->next);
    if (g < j->total_parts &&
        g / j->parts_per_chunk < atomic_load_explicit(&j->open_upto, memory_order_acquire) &&
        atomic_compare_exchange_strong(&j->next, &g, g + 1)) {
        stream_part(j, g);
        return 1;
    }
    return 0;
}

/* Open chunk c: its slot's part count set, then the workers let in. */
static void
open_chunk(stream_job *j, int c)
{
    atomic_store_explicit(&j->remaining[c % stage_slots], j->parts_per_chunk, memory_order_relaxed);
    atomic_store_explicit(&j->open_upto, c + 1, memory_order_release);
}

static int
chunk_copied(stream_job *j, int c)
{
    return atomic_load_explicit(&j->remaining[c % stage_slots], memory_order_acquire) == 0;
}

/* Wait for chunk c's DMA (its event); 0 or the failure. */
static CUresult
wait_dma(CUevent *events, int c, gh_cu_id *failed)
{
    CUresult res = gh_cu.EventSynchronize(events[c % stage_slots]);
    if (res != CUDA_SUCCESS) {
        *failed = GH_CU_EventSynchronize;
    }
    return res;
}

/* Host to device.  Chunk c may be staged once the slot's previous DMA (chunk c - SLOTS)
   finished: that one is waited for once a later DMA is queued behind it (the engine stays
   busy) or nothing else is left to do.  Driver calls: one DMA, one record and at most one
   wait per chunk, whatever the timing. */
static CUresult
drive_to_device(stream_job *j, CUstream stream, CUevent *events, gh_cu_id *failed)
{
    int issued = 0, open = 0;
    CUresult res = CUDA_SUCCESS;
    while (open < j->nchunks && open < stage_slots) {
        open_chunk(j, open++);
    }
    while (issued < j->nchunks && res == CUDA_SUCCESS) {
        if (issued < open && chunk_copied(j, issued)) { /* its parts are in the slot */
            res = chunk_dma(0, j->dptr, (size_t)issued * j->chunk, chunk_len(j, issued), issued,
                            stream, events, failed);
            issued++;
            continue;
        }
        if (help(j)) {
            continue;
        }
        if (open < j->nchunks && (open - stage_slots < issued - 1 || issued == open)) {
            res = wait_dma(events, open - stage_slots, failed);
            if (res == CUDA_SUCCESS) {
                open_chunk(j, open++);
            }
            continue;
        }
        cpu_relax();
    }
    return res;
}

/* Device to host.  Chunk c may be copied out once its DMA landed (waited for in order);
   its slot takes the DMA of chunk c + SLOTS once its parts are copied.  Driver calls: one
   DMA, one record and one wait per chunk. */
static CUresult
drive_to_host(stream_job *j, CUstream stream, CUevent *events, gh_cu_id *failed)
{
    int issued = 0, landed = 0, done = 0;
    CUresult res = CUDA_SUCCESS;
    for (; issued < j->nchunks && issued < stage_slots && res == CUDA_SUCCESS; issued++) {
        atomic_store_explicit(&j->remaining[issued % stage_slots], j->parts_per_chunk,
                              memory_order_relaxed);
        res = chunk_dma(1, j->dptr, (size_t)issued * j->chunk, chunk_len(j, issued), issued, stream,
                        events, failed);
    }
    while (done < j->nchunks && res == CUDA_SUCCESS) {
        if (done < landed && chunk_copied(j, done)) { /* its slot is free: the next DMA */
            done++;
            if (issued < j->nchunks) {
                atomic_store_explicit(&j->remaining[issued % stage_slots], j->parts_per_chunk,
                                      memory_order_relaxed);
                res = chunk_dma(1, j->dptr, (size_t)issued * j->chunk, chunk_len(j, issued), issued,
                                stream, events, failed);
                issued++;
            }
            continue;
        }
        if (help(j)) {
            continue;
        }
        if (landed < issued) { /* let the workers at the next chunk once its DMA landed */
            res = wait_dma(events, landed, failed);
            if (res == CUDA_SUCCESS) {
                atomic_store_explicit(&j->open_upto, ++landed, memory_order_release);
            }
            continue;
        }
        cpu_relax();
    }
    return res;
}

/* The whole staged copy: the workers on its parts, this thread on the DMAs. */
static CUresult
staged_stream(int to_host, char *host, CUdeviceptr dptr, size_t nbytes, CUstream stream,
              CUevent *events, gh_cu_id *failed)
{
    stream_job j;
    copy_job wrapper = {NULL, 0};
    CUresult res;

    j.host = host, j.dptr = dptr, j.nbytes = nbytes, j.to_host = to_host;
    /* At least two slots' worth of chunks, so that copying and DMA overlap even for a copy
       of a few MiB; whole parts, and no more than a slot holds. */
    j.chunk =
        (nbytes / (2 * (size_t)stage_slots) + GH_STAGE_PART - 1) / GH_STAGE_PART * GH_STAGE_PART;
    j.chunk = j.chunk < GH_STAGE_PART ? GH_STAGE_PART
              : j.chunk > stage_chunk ? stage_chunk
                                      : j.chunk;
    j.nchunks = (int)((nbytes + j.chunk - 1) / j.chunk);
    j.parts_per_chunk = (int)((j.chunk + GH_STAGE_PART - 1) / GH_STAGE_PART);
    j.total_parts = (long)j.nchunks * j.parts_per_chunk;
    atomic_init(&j.next, 0);
    atomic_init(&j.open_upto, 0);
    atomic_init(&j.abort, 0);
    for (int s = 0; s < GH_STAGE_MAX_SLOTS; s++) {
        atomic_init(&j.remaining[s], 0);
    }
    j.streaming = streams(to_host, j.nchunks);
    wrapper.stream = &j;
    if (pool.nthreads > 0) {
        pthread_mutex_lock(&pool.lock);
        pool.job = &wrapper;
        pool.seq++;
        pthread_cond_broadcast(&pool.wake);
        pthread_mutex_unlock(&pool.lock);
    }
    res = to_host ? drive_to_host(&j, stream, events, failed)
                  : drive_to_device(&j, stream, events, failed);
    if (res != CUDA_SUCCESS) {
        atomic_store(&j.abort, 1);
    }
    if (pool.nthreads > 0) {
        pthread_mutex_lock(&pool.lock);
        pool.job = NULL; /* no new worker takes it; wait for those that did */
        while (wrapper.users > 0) {
            pthread_cond_wait(&pool.done, &pool.lock);
        }
        pthread_mutex_unlock(&pool.lock);
    }
    return res;
}

CUresult
gh_staged_copy(int to_host, void *host, CUdeviceptr dptr, size_t nbytes, CUstream stream,
               gh_cu_id *failed)
{
    CUevent events[GH_STAGE_MAX_SLOTS] = {NULL};
    CUresult res, destroyed = CUDA_SUCCESS;

    if (gh_driver_forked()) {
        /* a forked child: the lock may be held by a thread that does not exist here */
        *failed = to_host ? GH_CU_MemcpyDtoHAsync : GH_CU_MemcpyHtoDAsync;
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    pthread_mutex_lock(&stage_lock);
    if (ensure_ring(failed) != CUDA_SUCCESS) {
        /* no pinned ring: the driver's own pageable copy, slower but sure */
        pthread_mutex_unlock(&stage_lock);
        *failed = to_host ? GH_CU_MemcpyDtoHAsync : GH_CU_MemcpyHtoDAsync;
        res = to_host ? gh_cu.MemcpyDtoHAsync(host, dptr, nbytes, stream)
                      : gh_cu.MemcpyHtoDAsync(dptr, host, nbytes, stream);
        if (res == CUDA_SUCCESS) {
            *failed = GH_CU_StreamSynchronize;
            res = gh_cu.StreamSynchronize(stream);
        }
        return res;
    }
    res = CUDA_SUCCESS;
    for (int s = 0; s < stage_slots && res == CUDA_SUCCESS; s++) {
        *failed = GH_CU_EventCreate;
        res = gh_cu.EventCreate(&events[s], CU_EVENT_DISABLE_TIMING);
    }
    if (res == CUDA_SUCCESS) {
        res = staged_stream(to_host, host, dptr, nbytes, stream, events, failed);
    }
    /* The slots must be idle before the next copy uses them, error or not. */
    for (int s = 0; s < stage_slots; s++) {
        if (events[s] != NULL) {
            CUresult r = gh_cu.EventSynchronize(events[s]);
            if (res == CUDA_SUCCESS && r != CUDA_SUCCESS) {
                res = r, *failed = GH_CU_EventSynchronize;
            }
            r = gh_cu.EventDestroy(events[s]);
            if (r != CUDA_SUCCESS) {
                destroyed = r;
            }
        }
    }
    pthread_mutex_unlock(&stage_lock);
    if (destroyed != CUDA_SUCCESS) {
        /* Cleanup warns, never fails the copy.  The caller released the GIL; take it back
           only now that the staging lock is free (a thread holding the GIL may wait on it). */
        PyGILState_STATE gil = PyGILState_Ensure();
        gh_warn_cleanup(destroyed, GH_CU_EventDestroy);
        PyGILState_Release(gil);
    }
    return res;
}
