/* Copies between pageable host memory and the device through a pinned staging ring.
 *
 * The driver copies pageable memory through its own small staging buffer with one thread.
 * Here large copies go through GH_STAGE_SLOTS pinned chunks: several host threads copy
 * one chunk between the pageable buffer and its slot while the DMA engine moves the
 * previous chunk, so the host side runs at memory bandwidth instead of one core's.
 * The ring is allocated once (GH_STAGE_SLOTS * chunk bytes, registered portable) and
 * never grows; one staged copy runs at a time.  Everything here runs without the GIL.
 */
#include "module.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GH_STAGE_SLOTS       4
#define GH_STAGE_CHUNK       ((size_t)8 << 20)
#define GH_STAGE_MAX_THREADS 16
#define GH_STAGE_MIN_PART    ((size_t)256 << 10)

/* ---- a small pool of copying threads ---- */

typedef struct {
    char *dst;
    const char *src;
    size_t n, part;
    int parts;
    atomic_int next;      /* next part to take */
    atomic_int remaining; /* parts not yet copied */
    int users;            /* workers holding the job (under pool.lock) */
} copy_job;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    copy_job *job;
    unsigned long seq;
    int nthreads; /* workers started (the caller copies too) */
} pool = {
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0};

static void
run_parts(copy_job *job)
{
    int p;
    while ((p = atomic_fetch_add(&job->next, 1)) < job->parts) {
        size_t off = (size_t)p * job->part;
        size_t len = off + job->part > job->n ? job->n - off : job->part;
        memcpy(job->dst + off, job->src + off, len);
        atomic_fetch_sub(&job->remaining, 1);
    }
}

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
        run_parts(job);
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

/* memcpy(dst, src, n) by the caller and the workers together. */
static void
parallel_copy(char *dst, const char *src, size_t n)
{
    int threads = pool.nthreads + 1;
    copy_job job;
    size_t part = (n + (size_t)threads - 1) / (size_t)threads;

    if (part < GH_STAGE_MIN_PART) {
        part = GH_STAGE_MIN_PART;
    }
    job.dst = dst, job.src = src, job.n = n, job.part = part;
    job.parts = (int)((n + part - 1) / part);
    atomic_init(&job.next, 0);
    atomic_init(&job.remaining, job.parts);
    job.users = 0;
    if (job.parts > 1 && pool.nthreads > 0) {
        pthread_mutex_lock(&pool.lock);
        pool.job = &job;
        pool.seq++;
        pthread_cond_broadcast(&pool.wake);
        pthread_mutex_unlock(&pool.lock);
    }
    run_parts(&job);
    if (job.parts > 1 && pool.nthreads > 0) {
        pthread_mutex_lock(&pool.lock);
        pool.job = NULL; /* no new worker takes it; wait for those that did */
        while (atomic_load(&job.remaining) > 0 || job.users > 0) {
            pthread_cond_wait(&pool.done, &pool.lock);
        }
        pthread_mutex_unlock(&pool.lock);
    }
}

/* ---- the ring ---- */

static pthread_mutex_t stage_lock = PTHREAD_MUTEX_INITIALIZER;
static char *ring;                  /* GH_STAGE_SLOTS chunks, page-aligned, never freed */
static char *slots[GH_STAGE_SLOTS]; /* into ring */

/* The ring allocated and pinned; 0, or the CUresult that failed.  The memory is ours
   (aligned_alloc) and registered portable: a context reset or close undoes the
   registration but never frees the memory, so the ring is checked with the driver before
   each use and registered again when it has to be. */
static CUresult
ensure_ring(gh_cu_id *failed)
{
    size_t size = (size_t)GH_STAGE_SLOTS * GH_STAGE_CHUNK;
    unsigned int type = 0;
    CUresult res;
    if (ring == NULL) {
        ring = aligned_alloc(4096, size);
        if (ring == NULL) {
            *failed = GH_CU_MemHostRegister;
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        for (int s = 0; s < GH_STAGE_SLOTS; s++) {
            slots[s] = ring + (size_t)s * GH_STAGE_CHUNK;
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

size_t
gh_staging_threshold(void)
{
    static size_t threshold = 0;
    if (threshold == 0) {
        const char *env = getenv("GPUHOST_STAGING_THRESHOLD");
        long long v = env && *env ? strtoll(env, NULL, 10) : 0;
        threshold = v > 0 ? (size_t)v : (size_t)4 << 20;
    }
    return threshold;
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
    char *slot = slots[i % GH_STAGE_SLOTS];
    CUresult res;
    *failed = to_host ? GH_CU_MemcpyDtoHAsync : GH_CU_MemcpyHtoDAsync;
    res = to_host ? gh_cu.MemcpyDtoHAsync(slot, dptr + off, len, stream)
                  : gh_cu.MemcpyHtoDAsync(dptr + off, slot, len, stream);
    if (res == CUDA_SUCCESS) {
        *failed = GH_CU_EventRecord;
        res = gh_cu.EventRecord(events[i % GH_STAGE_SLOTS], stream);
    }
    return res;
}

static size_t
chunk_len(size_t nbytes, int i)
{
    size_t off = (size_t)i * GH_STAGE_CHUNK;
    return nbytes - off < GH_STAGE_CHUNK ? nbytes - off : GH_STAGE_CHUNK;
}

static CUresult
staged_to_device(char *host, CUdeviceptr dptr, size_t nbytes, CUstream stream, CUevent *events,
                 gh_cu_id *failed)
{
    int nchunks = (int)((nbytes + GH_STAGE_CHUNK - 1) / GH_STAGE_CHUNK);
    CUresult res = CUDA_SUCCESS;
    for (int i = 0; i < nchunks && res == CUDA_SUCCESS; i++) {
        size_t off = (size_t)i * GH_STAGE_CHUNK, len = chunk_len(nbytes, i);
        if (i >= GH_STAGE_SLOTS) { /* the slot's previous DMA must be done */
            *failed = GH_CU_EventSynchronize;
            res = gh_cu.EventSynchronize(events[i % GH_STAGE_SLOTS]);
            if (res != CUDA_SUCCESS) {
                break;
            }
        }
        parallel_copy(slots[i % GH_STAGE_SLOTS], host + off, len);
        res = chunk_dma(0, dptr, off, len, i, stream, events, failed);
    }
    return res;
}

static CUresult
staged_to_host(char *host, CUdeviceptr dptr, size_t nbytes, CUstream stream, CUevent *events,
               gh_cu_id *failed)
{
    int nchunks = (int)((nbytes + GH_STAGE_CHUNK - 1) / GH_STAGE_CHUNK);
    CUresult res = CUDA_SUCCESS;
    for (int i = 0; i < nchunks && i < GH_STAGE_SLOTS && res == CUDA_SUCCESS; i++) {
        res = chunk_dma(1, dptr, (size_t)i * GH_STAGE_CHUNK, chunk_len(nbytes, i), i, stream,
                        events, failed);
    }
    for (int i = 0; i < nchunks && res == CUDA_SUCCESS; i++) {
        size_t off = (size_t)i * GH_STAGE_CHUNK;
        *failed = GH_CU_EventSynchronize;
        res = gh_cu.EventSynchronize(events[i % GH_STAGE_SLOTS]);
        if (res != CUDA_SUCCESS) {
            break;
        }
        parallel_copy(host + off, slots[i % GH_STAGE_SLOTS], chunk_len(nbytes, i));
        if (i + GH_STAGE_SLOTS < nchunks) {
            int j = i + GH_STAGE_SLOTS;
            res = chunk_dma(1, dptr, (size_t)j * GH_STAGE_CHUNK, chunk_len(nbytes, j), j, stream,
                            events, failed);
        }
    }
    return res;
}

CUresult
gh_staged_copy(int to_host, void *host, CUdeviceptr dptr, size_t nbytes, CUstream stream,
               gh_cu_id *failed)
{
    CUevent events[GH_STAGE_SLOTS] = {NULL};
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
    for (int s = 0; s < GH_STAGE_SLOTS && res == CUDA_SUCCESS; s++) {
        *failed = GH_CU_EventCreate;
        res = gh_cu.EventCreate(&events[s], CU_EVENT_DISABLE_TIMING);
    }
    if (res == CUDA_SUCCESS) {
        res = to_host ? staged_to_host(host, dptr, nbytes, stream, events, failed)
                      : staged_to_device(host, dptr, nbytes, stream, events, failed);
    }
    /* The slots must be idle before the next copy uses them, error or not. */
    for (int s = 0; s < GH_STAGE_SLOTS; s++) {
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
