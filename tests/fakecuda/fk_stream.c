/* fakecuda streams: cuStreamCreateWithPriority and the calls on a stream (destroy,
 * synchronize, query, wait for an event, priority, flags, context, host callbacks), and the
 * context's priority range.  A stream is a lane of the global work queue (fk_queue.c).
 *
 * A created stream is a registered resource (live counter "streams") that is never freed,
 * so a destroyed handle stays recognisably dead; the default streams are lanes of the
 * current context.  Destroying a stream with work queued lets the work run.
 */
#include "fk_internal.h"

#include <stdlib.h>

/* An H100's range: cuCtxGetStreamPriorityRange gives least 0, greatest -5. */
#define FK_LEAST_PRIORITY    0
#define FK_GREATEST_PRIORITY (-5)

typedef struct {
    fk_resource res; /* first: the handle is its address */
    fk_lane lane;
    unsigned int flags;
    int priority;
} fk_stream;

typedef struct {
    fk_op op;
    CUstream handle; /* as the caller named the stream */
    CUstreamCallback callback;
    CUhostFn host_fn; /* cuLaunchHostFunc's instead of the callback */
    void *user_data;
} fk_callback_op;

static int
is_default_stream(CUstream handle)
{
    return handle == NULL || handle == CU_STREAM_LEGACY || handle == CU_STREAM_PER_THREAD;
}

/* fk_stream_lane, and the stream itself in *stream (NULL for a default one).  Lock held. */
static CUresult
resolve(CUstream handle, fk_context **ctx, fk_lane **lane, fk_stream **stream)
{
    fk_stream *found;
    CUresult res;

    *stream = NULL;
    if (is_default_stream(handle)) {
        res = fk_current_context(ctx);
        if (res == CUDA_SUCCESS) {
            *lane = handle == CU_STREAM_PER_THREAD ? &(*ctx)->per_thread : &(*ctx)->legacy;
        }
        return res;
    }
    found = (fk_stream *)fk_resource_find(handle, FK_STREAMS);
    if (found == NULL) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    *ctx = found->res.ctx;
    *lane = &found->lane;
    *stream = found;
    return CUDA_SUCCESS;
}

CUresult
fk_stream_lane(CUstream handle, fk_context **ctx, fk_lane **lane)
{
    fk_stream *stream;

    return resolve(handle, ctx, lane, &stream);
}

CUresult
fk_CtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    CUresult res = fk_enter(GH_CU_CtxGetStreamPriorityRange, FK_AFTER_INIT);
    fk_context *ctx = NULL;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    fk_lock();
    res = fk_current_context(&ctx);
    fk_unlock();
    if (res == CUDA_SUCCESS && leastPriority != NULL) {
        *leastPriority = FK_LEAST_PRIORITY;
    }
    if (res == CUDA_SUCCESS && greatestPriority != NULL) {
        *greatestPriority = FK_GREATEST_PRIORITY;
    }
    return res;
}

CUresult
fk_StreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
    CUresult res = fk_enter(GH_CU_StreamCreateWithPriority, FK_AFTER_INIT);
    fk_context *ctx = NULL;
    fk_stream *stream = NULL;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (phStream == NULL || (flags & ~(unsigned int)CU_STREAM_NON_BLOCKING) != 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    res = fk_current_context(&ctx);
    if (res == CUDA_SUCCESS) {
        stream = calloc(1, sizeof(*stream));
        res = stream != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (res == CUDA_SUCCESS) {
        stream->flags = flags;
        stream->lane.non_blocking = (flags & CU_STREAM_NON_BLOCKING) != 0;
        /* Clamped into the range, as the driver does; lower numbers are higher priorities. */
        stream->priority = priority > FK_LEAST_PRIORITY      ? FK_LEAST_PRIORITY
                           : priority < FK_GREATEST_PRIORITY ? FK_GREATEST_PRIORITY
                                                             : priority;
        fk_resource_add(&stream->res, FK_STREAMS, ctx, NULL); /* never freed: see above */
        *phStream = (CUstream)stream;
    }
    fk_unlock();
    return res;
}

CUresult
fk_StreamDestroy(CUstream hStream)
{
    CUresult res = fk_enter(GH_CU_StreamDestroy, FK_AFTER_INIT);
    fk_resource *stream;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    fk_lock();
    /* A default stream is not found either: it cannot be destroyed. */
    stream = fk_resource_find(hStream, FK_STREAMS);
    if (stream == NULL) {
        res = CUDA_ERROR_INVALID_HANDLE;
    }
    else {
        fk_lane *lane = &((fk_stream *)stream)->lane;
        if (lane->capture != NULL) {
            fk_capture_abandon(stream->ctx, lane); /* its capture ends with it */
        }
        fk_resource_remove(stream); /* its queued ops still run, naming the dead handle */
    }
    fk_unlock();
    return res;
}

CUresult
fk_StreamSynchronize(CUstream hStream)
{
    CUresult res = fk_enter(GH_CU_StreamSynchronize, FK_AFTER_INIT);
    fk_context *ctx = NULL;
    fk_lane *lane = NULL;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    fk_lock();
    res = fk_stream_lane(hStream, &ctx, &lane);
    if (res == CUDA_SUCCESS) {
        res = fk_capture_check(ctx, lane);
    }
    if (res == CUDA_SUCCESS) {
        fk_ops_wait(lane->last_seq); /* the lock is released while waiting */
        if (!ctx->alive) {
            res = CUDA_ERROR_CONTEXT_IS_DESTROYED; /* reset meanwhile: its work was dropped */
        }
    }
    fk_unlock();
    return res;
}

CUresult
fk_StreamQuery(CUstream hStream)
{
    CUresult res = fk_enter(GH_CU_StreamQuery, FK_AFTER_INIT);
    fk_context *ctx = NULL;
    fk_lane *lane = NULL;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    fk_lock();
    res = fk_stream_lane(hStream, &ctx, &lane);
    if (res == CUDA_SUCCESS) {
        res = fk_capture_check(ctx, lane);
    }
    if (res == CUDA_SUCCESS && fk_ops_pending(lane->last_seq)) {
        res = CUDA_ERROR_NOT_READY;
    }
    fk_unlock();
    return res;
}

static void
run_nothing(fk_op *op)
{
    (void)op;
}

/* The queue is one FIFO, so the event's last record already precedes the wait: the op
   only marks the stream busy until everything before it ran. */
CUresult
fk_event_wait_on(CUevent hEvent, fk_context *ctx, fk_lane *lane)
{
    fk_op *op;

    if (fk_resource_find(hEvent, FK_EVENTS) == NULL) {
        return CUDA_ERROR_INVALID_HANDLE; /* an event of any context will do */
    }
    if (lane->capture != NULL && !lane->node_builder) {
        return CUDA_SUCCESS; /* in a capture: a dependency, no node (nor a join, here) */
    }
    op = calloc(1, sizeof(*op));
    if (op == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    op->run = run_nothing;
    op->size = sizeof(*op);
    op->node_type = CU_GRAPH_NODE_TYPE_WAIT_EVENT;
    return fk_op_enqueue(op, ctx, lane);
}

CUresult
fk_StreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    CUresult res = fk_enter(GH_CU_StreamWaitEvent, FK_AFTER_INIT);
    fk_context *ctx = NULL;
    fk_lane *lane = NULL;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if ((Flags & ~(unsigned int)CU_EVENT_WAIT_EXTERNAL) != 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    res = fk_stream_lane(hStream, &ctx, &lane);
    if (res == CUDA_SUCCESS) {
        res = fk_event_wait_on(hEvent, ctx, lane);
    }
    fk_unlock();
    return res;
}

CUresult
fk_StreamGetPriority(CUstream hStream, int *priority)
{
    CUresult res = fk_enter(GH_CU_StreamGetPriority, FK_AFTER_INIT);
    fk_context *ctx = NULL;
    fk_lane *lane = NULL;
    fk_stream *stream = NULL;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (priority == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    res = resolve(hStream, &ctx, &lane, &stream);
    if (res == CUDA_SUCCESS) {
        *priority = stream != NULL ? stream->priority : 0;
    }
    fk_unlock();
    return res;
}

/* No graphs in the double: a valid stream is never capturing. */
CUresult
fk_StreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    CUresult res = fk_enter(GH_CU_StreamIsCapturing, FK_AFTER_INIT);
    fk_context *ctx = NULL;
    fk_lane *lane = NULL;
    fk_stream *stream = NULL;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (captureStatus == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    res = resolve(hStream, &ctx, &lane, &stream);
    if (res == CUDA_SUCCESS) {
        *captureStatus = lane->capture == NULL   ? CU_STREAM_CAPTURE_STATUS_NONE
                         : lane->capture_invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                                 : CU_STREAM_CAPTURE_STATUS_ACTIVE;
        if (lane == &ctx->legacy && ctx->captures > 0) {
            res = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT; /* as the driver answers */
        }
    }
    fk_unlock();
    return res;
}

CUresult
fk_StreamGetFlags(CUstream hStream, unsigned int *flags)
{
    CUresult res = fk_enter(GH_CU_StreamGetFlags, FK_AFTER_INIT);
    fk_context *ctx = NULL;
    fk_lane *lane = NULL;
    fk_stream *stream = NULL;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (flags == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    res = resolve(hStream, &ctx, &lane, &stream);
    if (res == CUDA_SUCCESS) {
        *flags = stream != NULL ? stream->flags : 0;
    }
    fk_unlock();
    return res;
}

CUresult
fk_StreamGetCtx(CUstream hStream, CUcontext *pctx)
{
    CUresult res = fk_enter(GH_CU_StreamGetCtx, FK_AFTER_INIT);
    fk_context *ctx = NULL;
    fk_lane *lane = NULL;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (pctx == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    res = fk_stream_lane(hStream, &ctx, &lane);
    if (res == CUDA_SUCCESS) {
        *pctx = ctx;
    }
    fk_unlock();
    return res;
}

static void
run_callback(fk_op *op)
{
    fk_callback_op *cb = (fk_callback_op *)op;

    if (cb->host_fn != NULL) {
        cb->host_fn(cb->user_data);
    }
    else {
        cb->callback(cb->handle, CUDA_SUCCESS, cb->user_data);
    }
}

CUresult
fk_StreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData,
                     unsigned int flags)
{
    CUresult res = fk_enter(GH_CU_StreamAddCallback, FK_AFTER_INIT);
    fk_context *ctx = NULL;
    fk_lane *lane = NULL;
    fk_callback_op *op = NULL;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (callback == NULL || flags != 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    res = fk_stream_lane(hStream, &ctx, &lane);
    if (res == CUDA_SUCCESS && lane->capture != NULL) {
        lane->capture_invalid = 1; /* the driver cannot capture stream callbacks */
        res = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (res == CUDA_SUCCESS) {
        op = calloc(1, sizeof(*op));
        res = op != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (res == CUDA_SUCCESS) {
        op->op.run = run_callback;
        op->handle = hStream;
        op->callback = callback;
        op->user_data = userData;
        res = fk_op_enqueue(&op->op, ctx, lane);
    }
    fk_unlock();
    return res;
}

CUresult
fk_host_func_on(CUhostFn fn, void *userData, CUstream handle, fk_context *ctx, fk_lane *lane)
{
    fk_callback_op *op = calloc(1, sizeof(*op));

    if (op == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    op->op.run = run_callback;
    op->op.size = sizeof(*op);
    op->op.node_type = CU_GRAPH_NODE_TYPE_HOST;
    op->handle = handle;
    op->host_fn = fn;
    op->user_data = userData;
    return fk_op_enqueue(&op->op, ctx, lane);
}

CUresult
fk_LaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
    CUresult res = fk_enter(GH_CU_LaunchHostFunc, FK_AFTER_INIT);
    fk_context *ctx = NULL;
    fk_lane *lane = NULL;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (fn == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    res = fk_stream_lane(hStream, &ctx, &lane);
    if (res == CUDA_SUCCESS) {
        res = fk_host_func_on(fn, userData, hStream, ctx, lane);
    }
    fk_unlock();
    return res;
}
