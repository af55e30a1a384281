/* fakecuda copies and memsets: cuMemcpy{HtoD,DtoH,DtoD}, cuMemcpy2D, cuMemcpy3D,
 * cuMemcpyPeer, cuMemsetD{8,16,32}, cuMemsetD2D{8,16,32}, each with its Async form.
 *
 * A call becomes a job: its sides translated and pinned through the memory registry
 * (fk_memory.c), so a bad range fails the call up front, then rows of bytes moved or set
 * outside the lock.  A synchronous call runs the job on the caller's thread once the legacy
 * default stream may go on; an asynchronous one queues it on its stream, unless a host side
 * is pageable: the driver then copies before returning, and so does the fake.  One exception,
 * as the driver documents it: a synchronous copy from pageable host memory to the device
 * returns once the bytes are staged, and the device write follows on the legacy
 * default stream (so work on a non-blocking stream, or on another context's stream, may run
 * before it lands).
 */
#include "fk_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Rows of bytes to move or set: slices x rows x width. */
typedef struct {
    fk_span dst, src; /* src is empty for a memset */
    size_t width;     /* bytes of each row */
    size_t rows, slices;
    size_t dst_pitch, dst_slice, src_pitch, src_slice; /* bytes between rows, slices */
    unsigned int elem;                                 /* memset element size; 0: a copy */
    unsigned int value;                                /* memset value */
} fk_job;

typedef struct {
    fk_op op;
    fk_job job;
    unsigned char *staged; /* the source bytes, staged: owned by the op, or NULL */
} fk_job_op;

/* An address range a job touches, before translation. */
typedef struct {
    uintptr_t addr;          /* the first byte */
    size_t len;              /* to past the last byte */
    fk_side side;            /* how the address is taken */
    const fk_context *owner; /* NULL, or whose device memory it must be */
} fk_access;

static fk_access
access_of(uintptr_t addr, size_t len, fk_side side)
{
    fk_access access = {addr, len, side, NULL};
    return access;
}

/* ---- running jobs ---- */

/* Set the `n` bytes at `d` (a multiple of `elem`) to elem-sized `value`, native order. */
static void
fill(unsigned char *d, size_t n, unsigned int value, unsigned int elem)
{
    uint16_t v16 = (uint16_t)value;
    uint32_t v32 = value;

    if (elem == 1) {
        memset(d, (int)(value & 0xFF), n);
        return;
    }
    if (n == 0) {
        return;
    }
    memcpy(d, elem == 2 ? (const void *)&v16 : (const void *)&v32, elem);
    for (size_t done = elem; done < n; done *= 2) { /* double the filled prefix */
        memcpy(d + done, d, done < n - done ? done : n - done);
    }
}

/* Move or set the job's bytes.  Unlocked: its spans are pinned.  Overlapping copies are
   undefined in CUDA; memmove keeps each row well defined here. */
static void
job_run(const fk_job *job)
{
    for (size_t s = 0; s < job->slices; s++) {
        for (size_t r = 0; r < job->rows; r++) {
            unsigned char *d = job->dst.host + s * job->dst_slice + r * job->dst_pitch;

            if (job->elem != 0) {
                fill(d, job->width, job->value, job->elem);
            }
            else {
                memmove(d, job->src.host + s * job->src_slice + r * job->src_pitch, job->width);
            }
        }
    }
}

/* Drop the job's pins.  Lock held. */
static void
job_release(fk_job *job)
{
    fk_span_release(&job->dst);
    fk_span_release(&job->src);
}

/* Translate the destination (written) and, unless NULL (a memset), the source.  Lock held;
   on failure nothing stays pinned. */
static CUresult
job_resolve(fk_job *job, const fk_access *dst, const fk_access *src)
{
    CUresult res = fk_span_resolve(&job->dst, dst->addr, dst->len, dst->side, 1, dst->owner);

    if (res == CUDA_SUCCESS && src != NULL) {
        res = fk_span_resolve(&job->src, src->addr, src->len, src->side, 0, src->owner);
        if (res != CUDA_SUCCESS) {
            fk_span_release(&job->dst);
        }
    }
    return res;
}

/* Run the job on this thread once op `seq` and every earlier one finished, if context `a`
   and `b` (or NULL) still live; the job is released.  Lock held, let go while waiting (the
   wait helper's) and while running. */
static CUresult
job_run_after(fk_job *job, unsigned long long seq, const fk_context *a, const fk_context *b)
{
    CUresult res = CUDA_SUCCESS;

    fk_ops_wait(seq);
    if (!a->alive || (b != NULL && !b->alive)) {
        res = CUDA_ERROR_CONTEXT_IS_DESTROYED; /* reset meanwhile */
    }
    else {
        fk_unlock();
        job_run(job);
        fk_lock();
    }
    job_release(job);
    return res;
}

static void
run_job_op(fk_op *op)
{
    fk_job *job = &((fk_job_op *)op)->job;

    job_run(job);
    fk_lock();
    job_release(job);
    fk_unlock();
    free(((fk_job_op *)op)->staged);
}

/* Dropped with its stream's context (or its graph went): it never runs. */
static void
cancel_job_op(fk_op *op)
{
    job_release(&((fk_job_op *)op)->job);
    free(((fk_job_op *)op)->staged);
}

/* A graph launch's copy of a captured job: pinned again. */
static CUresult
replay_job_op(fk_op *op)
{
    fk_job *job = &((fk_job_op *)op)->job;

    fk_span_retain(&job->dst);
    fk_span_retain(&job->src);
    return CUDA_SUCCESS;
}

/* The newest op that work on stream `lane` of `ctx` comes after: the stream's own, and the
   legacy default stream's, which every blocking stream synchronizes with both ways.
   Lock held. */
static unsigned long long
stream_wait_seq(const fk_context *ctx, const fk_lane *lane)
{
    if (lane == &ctx->legacy) {
        return ctx->blocking.last_seq;
    }
    if (!lane->non_blocking && ctx->legacy.last_seq > lane->last_seq) {
        return ctx->legacy.last_seq;
    }
    return lane->last_seq;
}

/* A synchronous copy from pageable host memory to the device: once the legacy
   default stream may go on, the bytes are staged and the write is queued on it.  Lock held
   (let go while waiting); the job is released (its source at once). */
static CUresult
job_stage(fk_job *job, fk_context *ctx)
{
    fk_job_op *op = calloc(1, sizeof(*op));
    size_t size = job->width * job->rows * job->slices;
    unsigned char *staged = malloc(size ? size : 1);

    if (op == NULL || staged == NULL) {
        free(op);
        free(staged);
        job_release(job);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    fk_ops_wait(ctx->blocking.last_seq);
    if (!ctx->alive) {
        free(op);
        free(staged);
        job_release(job);
        return CUDA_ERROR_CONTEXT_IS_DESTROYED; /* reset meanwhile */
    }
    for (size_t k = 0; k < job->slices; k++) { /* the source's rows, packed */
        for (size_t r = 0; r < job->rows; r++) {
            memcpy(staged + (k * job->rows + r) * job->width,
                   job->src.host + k * job->src_slice + r * job->src_pitch, job->width);
        }
    }
    fk_span_release(&job->src);
    job->src.host = staged;
    job->src_pitch = job->width;
    job->src_slice = job->width * job->rows;
    op->op.run = run_job_op;
    op->op.cancel = cancel_job_op;
    op->op.size = sizeof(*op);
    op->op.node_type = CU_GRAPH_NODE_TYPE_MEMCPY;
    op->job = *job;
    op->staged = staged;
    return fk_op_enqueue(&op->op, ctx, &ctx->legacy);
}

/* Start a resolved job (released by it): on stream `lane` of `ctx`, or, if lane is NULL,
   synchronously after the legacy default streams of `ctx` and `other` (or NULL), as the
   driver's synchronous calls.  A job with a pageable host side runs at once on a stream too,
   after the stream's earlier work.  Lock held. */
static CUresult
job_start(fk_job *job, fk_context *ctx, fk_lane *lane, const fk_context *other)
{
    unsigned long long seq;
    fk_job_op *op;
    CUresult res;

    res = (lane == NULL || lane == &ctx->legacy) ? fk_capture_check(ctx, NULL) : CUDA_SUCCESS;
    if (res == CUDA_SUCCESS && lane == NULL && other != NULL) {
        res = fk_capture_check((fk_context *)other, NULL);
    }
    if (res == CUDA_SUCCESS && lane != NULL && lane->capture != NULL &&
        (job->dst.pageable || job->src.pageable)) {
        lane->capture_invalid = 1; /* pageable memory: the driver copies at once */
        res = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (res != CUDA_SUCCESS) {
        job_release(job);
        return res;
    }
    if (lane == NULL && other == NULL && job->src.pageable && !job->dst.pageable &&
        job->elem == 0) {
        return job_stage(job, ctx);
    }
    if (lane == NULL || job->dst.pageable || job->src.pageable) {
        seq = lane != NULL ? stream_wait_seq(ctx, lane) : ctx->blocking.last_seq;
        if (lane == NULL && other != NULL && other->blocking.last_seq > seq) {
            seq = other->blocking.last_seq;
        }
        return job_run_after(job, seq, ctx, other);
    }
    op = calloc(1, sizeof(*op));
    if (op == NULL) {
        job_release(job);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    op->op.run = run_job_op;
    op->op.cancel = cancel_job_op;
    op->op.size = sizeof(*op);
    op->op.replay = replay_job_op;
    op->op.node_type = job->elem != 0 ? CU_GRAPH_NODE_TYPE_MEMSET : CU_GRAPH_NODE_TYPE_MEMCPY;
    op->job = *job; /* its pins now: released by the op, or by its cancel if it is dropped */
    return fk_op_enqueue(&op->op, ctx, lane);
}

/* Resolve a planned job's sides (a destination of 0 bytes: nothing to do, nothing checked)
   and start it on `lane` of `ctx` (job_start).  `src` is NULL for a memset.  Lock held. */
static CUresult
job_go(fk_job *job, const fk_access *dst, const fk_access *src, fk_context *ctx, fk_lane *lane,
       const fk_context *other)
{
    CUresult res;

    if (dst->len == 0) {
        return CUDA_SUCCESS;
    }
    res = job_resolve(job, dst, src);
    return res == CUDA_SUCCESS ? job_start(job, ctx, lane, other) : res;
}

/* A copy or memset entry point's call, run by copy_call (or peer_call) under the lock. */
typedef struct {
    int async; /* on `stream`, else synchronous in the current context */
    CUstream stream;
    fk_job job; /* planned, unless p2 or p3 is set */
    fk_access dst, src;
    const CUDA_MEMCPY2D *p2; /* a 2D copy's parameters, planned under the lock */
    const CUDA_MEMCPY3D *p3; /* a 3D copy's */
    CUcontext src_ctx;       /* a peer copy's source context */
} fk_copy_args;

static CUresult plan_3d(const CUDA_MEMCPY3D *p, fk_job *job, fk_access *dst, fk_access *src);
static void copy_2d_as_3d(CUDA_MEMCPY3D *out, const CUDA_MEMCPY2D *p);

/* A copy or memset: planned if not yet, then started on its stream or synchronously. */
static CUresult
copy_call(fk_target *target, void *args)
{
    fk_copy_args *c = args;
    CUDA_MEMCPY3D p3;
    CUresult res = CUDA_SUCCESS;

    if (c->p2 != NULL) {
        copy_2d_as_3d(&p3, c->p2); /* a 2D copy is the 3D copy of one slice */
        c->p3 = &p3;
    }
    if (c->p3 != NULL) {
        res = plan_3d(c->p3, &c->job, &c->dst, &c->src);
    }
    if (res == CUDA_SUCCESS) {
        res = c->async ? fk_on_stream(c->stream, target) : fk_on_current(NULL, target);
    }
    if (res == CUDA_SUCCESS) {
        res = job_go(&c->job, &c->dst, c->job.elem != 0 ? NULL : &c->src, target->ctx, target->lane,
                     NULL);
    }
    return res;
}

/* ---- linear copies ---- */

/* A copy of dst.len bytes from `src` to `dst`, synchronous or on `stream`. */
static CUresult
linear_copy(gh_cu_id id, int async, CUstream stream, fk_access dst, fk_access src)
{
    fk_copy_args c;

    memset(&c, 0, sizeof(c));
    c.async = async;
    c.stream = stream;
    c.job.width = dst.len;
    c.job.rows = c.job.slices = 1;
    c.dst = dst;
    c.src = src;
    return fk_call(id, 1, NULL, NULL, copy_call, &c);
}

CUresult
fk_MemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    return linear_copy(GH_CU_MemcpyHtoD, 0, NULL, access_of(dstDevice, ByteCount, FK_SIDE_DEVICE),
                       access_of((uintptr_t)srcHost, ByteCount, FK_SIDE_HOST));
}

CUresult
fk_MemcpyDtoH(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    return linear_copy(GH_CU_MemcpyDtoH, 0, NULL,
                       access_of((uintptr_t)dstHost, ByteCount, FK_SIDE_HOST),
                       access_of(srcDevice, ByteCount, FK_SIDE_DEVICE));
}

CUresult
fk_MemcpyDtoD(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    return linear_copy(GH_CU_MemcpyDtoD, 0, NULL, access_of(dstDevice, ByteCount, FK_SIDE_DEVICE),
                       access_of(srcDevice, ByteCount, FK_SIDE_DEVICE));
}

CUresult
fk_MemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream)
{
    return linear_copy(GH_CU_MemcpyHtoDAsync, 1, hStream,
                       access_of(dstDevice, ByteCount, FK_SIDE_DEVICE),
                       access_of((uintptr_t)srcHost, ByteCount, FK_SIDE_HOST));
}

CUresult
fk_MemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
    return linear_copy(GH_CU_MemcpyDtoHAsync, 1, hStream,
                       access_of((uintptr_t)dstHost, ByteCount, FK_SIDE_HOST),
                       access_of(srcDevice, ByteCount, FK_SIDE_DEVICE));
}

CUresult
fk_MemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
    return linear_copy(GH_CU_MemcpyDtoDAsync, 1, hStream,
                       access_of(dstDevice, ByteCount, FK_SIDE_DEVICE),
                       access_of(srcDevice, ByteCount, FK_SIDE_DEVICE));
}

/* cuMemcpyAsync: either side any unified address (device, managed, pinned or host). */
CUresult
fk_MemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    return linear_copy(GH_CU_MemcpyAsync, 1, hStream, access_of(dst, ByteCount, FK_SIDE_UNIFIED),
                       access_of(src, ByteCount, FK_SIDE_UNIFIED));
}

/* ---- peer copies ---- */

/* A peer copy, from the destination context resolved: the source context must be usable
   too; an asynchronous one goes to its stream's context. */
static CUresult
peer_call(fk_target *target, void *args)
{
    fk_copy_args *c = args;
    CUresult res = fk_context_usable(c->src_ctx);

    if (res == CUDA_SUCCESS && c->async) {
        res = fk_on_stream(c->stream, target);
    }
    if (res == CUDA_SUCCESS) {
        res = job_go(&c->job, &c->dst, &c->src, target->ctx, target->lane,
                     c->async ? NULL : c->src_ctx);
    }
    return res;
}

/* A copy between device memory of two contexts, each range inside its own context's. */
static CUresult
peer_copy(gh_cu_id id, int async, CUstream stream, fk_access dst, CUcontext dst_ctx, fk_access src,
          CUcontext src_ctx)
{
    fk_copy_args c;

    memset(&c, 0, sizeof(c));
    c.async = async;
    c.stream = stream;
    c.job.width = dst.len;
    c.job.rows = c.job.slices = 1;
    c.dst = dst;
    c.dst.owner = dst_ctx;
    c.src = src;
    c.src.owner = src_ctx;
    c.src_ctx = src_ctx;
    return fk_call(id, 1, fk_on_context, dst_ctx, peer_call, &c);
}

CUresult
fk_MemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
              CUcontext srcContext, size_t ByteCount)
{
    return peer_copy(GH_CU_MemcpyPeer, 0, NULL, access_of(dstDevice, ByteCount, FK_SIDE_DEVICE),
                     dstContext, access_of(srcDevice, ByteCount, FK_SIDE_DEVICE), srcContext);
}

CUresult
fk_MemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                   CUcontext srcContext, size_t ByteCount, CUstream hStream)
{
    return peer_copy(GH_CU_MemcpyPeerAsync, 1, hStream,
                     access_of(dstDevice, ByteCount, FK_SIDE_DEVICE), dstContext,
                     access_of(srcDevice, ByteCount, FK_SIDE_DEVICE), srcContext);
}

/* ---- 2D and 3D copies ---- */

/* One side of a 2D/3D copy as its parameters give it. */
typedef struct {
    CUmemorytype type;
    uintptr_t addr; /* the host pointer for CU_MEMORYTYPE_HOST, else the device pointer */
    size_t x, y, z, pitch, height;
} fk_plane;

static CUresult
memory_type_check(CUmemorytype type)
{
    switch (type) {
        case CU_MEMORYTYPE_HOST:
        case CU_MEMORYTYPE_DEVICE:
        case CU_MEMORYTYPE_UNIFIED:
            return CUDA_SUCCESS;
        case CU_MEMORYTYPE_ARRAY:
            return CUDA_ERROR_NOT_SUPPORTED; /* the fake has no CUDA arrays */
        default:
            return CUDA_ERROR_INVALID_VALUE;
    }
}

/* Check one side of a copy of slices x rows x width bytes and find the bytes it spans, from
   its first row to the end of its last, into *access (len 0 for an empty copy), its slice
   pitch into *slice.  CUDA_SUCCESS or CUDA_ERROR_INVALID_VALUE. */
static CUresult
plane_access(const fk_plane *plane, size_t width, size_t rows, size_t slices, fk_access *access,
             size_t *slice)
{
    size_t first, last, end;

    *access = access_of(plane->addr, 0,
                        plane->type == CU_MEMORYTYPE_HOST     ? FK_SIDE_HOST
                        : plane->type == CU_MEMORYTYPE_DEVICE ? FK_SIDE_DEVICE
                                                              : FK_SIDE_UNIFIED);
    *slice = 0;
    if (plane->pitch < plane->x || plane->pitch - plane->x < width) {
        return CUDA_ERROR_INVALID_VALUE; /* the driver's rule: pitch >= x + width */
    }
    if (slices > 1 || plane->z > 0) { /* height matters: slices must not overlap (fake's rule) */
        if (plane->height < plane->y || plane->height - plane->y < rows ||
            __builtin_mul_overflow(plane->pitch, plane->height, slice)) {
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    if (width == 0 || rows == 0 || slices == 0) {
        return CUDA_SUCCESS;
    }
    /* first = z * slice + y * pitch + x;  last = first + (slices-1) * slice + (rows-1) * pitch */
    if (__builtin_mul_overflow(plane->z, *slice, &first) ||
        __builtin_mul_overflow(plane->y, plane->pitch, &end) ||
        __builtin_add_overflow(first, end, &first) ||
        __builtin_add_overflow(first, plane->x, &first) ||
        __builtin_mul_overflow(slices - 1, *slice, &last) ||
        __builtin_mul_overflow(rows - 1, plane->pitch, &end) ||
        __builtin_add_overflow(last, end, &last) || __builtin_add_overflow(last, width, &end) ||
        __builtin_add_overflow(plane->addr, first, &access->addr)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    access->len = end; /* from the first byte to past the end of the last row */
    return CUDA_SUCCESS;
}

/* Check a 3D copy's parameters into the job's shape and the two accesses.  CUDA_SUCCESS,
   CUDA_ERROR_NOT_SUPPORTED (an array side) or CUDA_ERROR_INVALID_VALUE. */
static CUresult
plan_3d(const CUDA_MEMCPY3D *p, fk_job *job, fk_access *dst, fk_access *src)
{
    fk_plane s = {p->srcMemoryType,
                  p->srcMemoryType == CU_MEMORYTYPE_HOST ? (uintptr_t)p->srcHost : p->srcDevice,
                  p->srcXInBytes,
                  p->srcY,
                  p->srcZ,
                  p->srcPitch,
                  p->srcHeight};
    fk_plane d = {p->dstMemoryType,
                  p->dstMemoryType == CU_MEMORYTYPE_HOST ? (uintptr_t)p->dstHost : p->dstDevice,
                  p->dstXInBytes,
                  p->dstY,
                  p->dstZ,
                  p->dstPitch,
                  p->dstHeight};
    CUresult res;

    if (p->srcLOD != 0 || p->dstLOD != 0 || p->reserved0 != NULL || p->reserved1 != NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    res = memory_type_check(s.type);
    if (res == CUDA_SUCCESS) {
        res = memory_type_check(d.type);
    }
    if (res != CUDA_SUCCESS) {
        return res;
    }
    job->width = p->WidthInBytes;
    job->rows = p->Height;
    job->slices = p->Depth;
    job->src_pitch = s.pitch;
    job->dst_pitch = d.pitch;
    res = plane_access(&s, job->width, job->rows, job->slices, src, &job->src_slice);
    if (res == CUDA_SUCCESS) {
        res = plane_access(&d, job->width, job->rows, job->slices, dst, &job->dst_slice);
    }
    return res;
}

CUresult
fk_copy_3d_on(const CUDA_MEMCPY3D *p, fk_context *ctx, fk_lane *lane)
{
    fk_access dst, src;
    fk_job job;
    CUresult res;

    memset(&job, 0, sizeof(job));
    res = plan_3d(p, &job, &dst, &src);
    return res == CUDA_SUCCESS ? job_go(&job, &dst, &src, ctx, lane, NULL) : res;
}

static void
copy_2d_as_3d(CUDA_MEMCPY3D *out, const CUDA_MEMCPY2D *p)
{
    memset(out, 0, sizeof(*out));
    out->srcXInBytes = p->srcXInBytes;
    out->srcY = p->srcY;
    out->srcMemoryType = p->srcMemoryType;
    out->srcHost = p->srcHost;
    out->srcDevice = p->srcDevice;
    out->srcArray = p->srcArray;
    out->srcPitch = p->srcPitch;
    out->dstXInBytes = p->dstXInBytes;
    out->dstY = p->dstY;
    out->dstMemoryType = p->dstMemoryType;
    out->dstHost = p->dstHost;
    out->dstDevice = p->dstDevice;
    out->dstArray = p->dstArray;
    out->dstPitch = p->dstPitch;
    out->WidthInBytes = p->WidthInBytes;
    out->Height = p->Height;
    out->Depth = 1;
}

/* A 2D (p2) or 3D (p3) copy, synchronous or on `stream`; the parameters are read under the
   lock. */
static CUresult
copy_nd(gh_cu_id id, int async, CUstream stream, const CUDA_MEMCPY2D *p2, const CUDA_MEMCPY3D *p3)
{
    fk_copy_args c;

    memset(&c, 0, sizeof(c));
    c.async = async;
    c.stream = stream;
    c.p2 = p2;
    c.p3 = p3;
    return fk_call(id, p2 != NULL || p3 != NULL, NULL, NULL, copy_call, &c);
}

CUresult
fk_Memcpy2D(const CUDA_MEMCPY2D *pCopy)
{
    return copy_nd(GH_CU_Memcpy2D, 0, NULL, pCopy, NULL);
}

CUresult
fk_Memcpy2DAsync(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
    return copy_nd(GH_CU_Memcpy2DAsync, 1, hStream, pCopy, NULL);
}

CUresult
fk_Memcpy3D(const CUDA_MEMCPY3D *pCopy)
{
    return copy_nd(GH_CU_Memcpy3D, 0, NULL, NULL, pCopy);
}

CUresult
fk_Memcpy3DAsync(const CUDA_MEMCPY3D *pCopy, CUstream hStream)
{
    return copy_nd(GH_CU_Memcpy3DAsync, 1, hStream, NULL, pCopy);
}

/* ---- memsets ---- */

/* The job of a 2D memset, checked: `height` rows of `width` elem-sized elements, `pitch`
   bytes apart, at `dst`.  CUDA_SUCCESS with *access the range, or CUDA_ERROR_INVALID_VALUE. */
static CUresult
plan_memset(fk_job *job, fk_access *access, CUdeviceptr dst, size_t pitch, unsigned int value,
            unsigned int elem, size_t width, size_t height)
{
    size_t bytes = 0, len = 0;

    /* Elements must be aligned, and rows must neither overlap nor misalign them. */
    if ((elem != 1 && elem != 2 && elem != 4) || dst % elem != 0 ||
        __builtin_mul_overflow(width, (size_t)elem, &bytes) ||
        (height > 1 && (pitch < bytes || pitch % elem != 0)) ||
        (height > 0 && (__builtin_mul_overflow(height - 1, pitch, &len) ||
                        __builtin_add_overflow(len, bytes, &len)))) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    memset(job, 0, sizeof(*job));
    job->width = bytes;
    job->rows = height;
    job->slices = 1;
    job->dst_pitch = pitch;
    job->elem = elem;
    job->value = value;
    *access = access_of(dst, bytes > 0 ? len : 0, FK_SIDE_DEVICE);
    return CUDA_SUCCESS;
}

CUresult
fk_memset_on(CUdeviceptr dst, size_t pitch, unsigned int value, unsigned int elem, size_t width,
             size_t height, fk_context *ctx, fk_lane *lane)
{
    fk_access access;
    fk_job job;
    CUresult res = plan_memset(&job, &access, dst, pitch, value, elem, width, height);

    return res == CUDA_SUCCESS ? job_go(&job, &access, NULL, ctx, lane, NULL) : res;
}

/* A memset, synchronous or on `stream`.  Its plan reads no memory: made first, its verdict
   is the call's argument check. */
static CUresult
memset_2d(gh_cu_id id, int async, CUstream stream, CUdeviceptr dst, size_t pitch,
          unsigned int value, unsigned int elem, size_t width, size_t height)
{
    fk_copy_args c;
    int planned;

    memset(&c, 0, sizeof(c));
    c.async = async;
    c.stream = stream;
    planned = plan_memset(&c.job, &c.dst, dst, pitch, value, elem, width, height) == CUDA_SUCCESS;
    return fk_call(id, planned, NULL, NULL, copy_call, &c);
}

CUresult
fk_MemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    return memset_2d(GH_CU_MemsetD8, 0, NULL, dstDevice, 0, uc, 1, N, 1);
}

CUresult
fk_MemsetD16(CUdeviceptr dstDevice, unsigned short us, size_t N)
{
    return memset_2d(GH_CU_MemsetD16, 0, NULL, dstDevice, 0, us, 2, N, 1);
}

CUresult
fk_MemsetD32(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    return memset_2d(GH_CU_MemsetD32, 0, NULL, dstDevice, 0, ui, 4, N, 1);
}

CUresult
fk_MemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{
    return memset_2d(GH_CU_MemsetD8Async, 1, hStream, dstDevice, 0, uc, 1, N, 1);
}

CUresult
fk_MemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream)
{
    return memset_2d(GH_CU_MemsetD16Async, 1, hStream, dstDevice, 0, us, 2, N, 1);
}

CUresult
fk_MemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)
{
    return memset_2d(GH_CU_MemsetD32Async, 1, hStream, dstDevice, 0, ui, 4, N, 1);
}

CUresult
fk_MemsetD2D8(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height)
{
    return memset_2d(GH_CU_MemsetD2D8, 0, NULL, dstDevice, dstPitch, uc, 1, Width, Height);
}

CUresult
fk_MemsetD2D16(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
               size_t Height)
{
    return memset_2d(GH_CU_MemsetD2D16, 0, NULL, dstDevice, dstPitch, us, 2, Width, Height);
}

CUresult
fk_MemsetD2D32(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height)
{
    return memset_2d(GH_CU_MemsetD2D32, 0, NULL, dstDevice, dstPitch, ui, 4, Width, Height);
}

CUresult
fk_MemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                   size_t Height, CUstream hStream)
{
    return memset_2d(GH_CU_MemsetD2D8Async, 1, hStream, dstDevice, dstPitch, uc, 1, Width, Height);
}

CUresult
fk_MemsetD2D16Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                    size_t Height, CUstream hStream)
{
    return memset_2d(GH_CU_MemsetD2D16Async, 1, hStream, dstDevice, dstPitch, us, 2, Width, Height);
}

CUresult
fk_MemsetD2D32Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                    size_t Height, CUstream hStream)
{
    return memset_2d(GH_CU_MemsetD2D32Async, 1, hStream, dstDevice, dstPitch, ui, 4, Width, Height);
}
