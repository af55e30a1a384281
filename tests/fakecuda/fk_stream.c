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

/* A host callback: a stream callback, or a host function (cuLaunchHostFunc, host nodes). */
typedef struct {
    CUstream handle; /* as the caller named the stream */
    CUstreamCallback callback;
    CUhostFn host_fn; /* instead of the callback */
    void *user_data;
} fk_callback;

typedef struct {
    fk_op op;
    fk_callback cb;
} fk_callback_op;

static int
is_default_stream(CUstream handle)
{
    return handle == NULL || handle == CU_STREAM_LEGACY || handle == CU_STREAM_PER_THREAD;
}

CUresult
fk_on_stream(const void *handle, fk_target *target)
{
    fk_stream *found;
    CUresult res;

    target->found = NULL;
    if (is_default_stream((CUstream)handle)) {
        res = fk_current_context(&target->ctx);
        if (res == CUDA_SUCCESS) {
            target->lane =
                handle == CU_STREAM_PER_THREAD ? &target->ctx->per_thread : &target->ctx->legacy;
        }
        return res;
    }
    found = (fk_stream *)fk_resource_find(handle, FK_STREAMS);
    if (found == NULL) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    target->ctx = found->res.ctx;
    target->lane = &found->lane;
    target->found = found;
    return CUDA_SUCCESS;
}

CUresult
fk_stream_lane(CUstream handle, fk_context **ctx, fk_lane **lane)
{
    fk_target target = {NULL, NULL, NULL};
    CUresult res = fk_on_stream(handle, &target);

    *ctx = target.ctx;
    *lane = target.lane;
    return res;
}

typedef struct {
    int *least, *greatest;
} fk_range_args;

static CUresult
priority_range(fk_target *target, void *args)
{
    fk_range_args *a = args;

    (void)target;
    if (a->least != NULL) {
        *a->least = FK_LEAST_PRIORITY;
    }
    if (a->greatest != NULL) {
        *a->greatest = FK_GREATEST_PRIORITY;
    }
    return CUDA_SUCCESS;
}

CUresult
fk_CtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    fk_range_args args = {leastPriority, greatestPriority};

    return fk_call(GH_CU_CtxGetStreamPriorityRange, 1, fk_on_current, NULL, priority_range, &args);
}

typedef struct {
    CUstream *phStream;
    unsigned int flags;
    int priority;
} fk_create_args;

static CUresult
stream_create(fk_target *target, void *args)
{
    fk_create_args *a = args;
    fk_stream *stream = calloc(1, sizeof(*stream));

    if (stream == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    stream->flags = a->flags;
    stream->lane.non_blocking = (a->flags & CU_STREAM_NON_BLOCKING) != 0;
    /* Clamped into the range, as the driver does; lower numbers are higher priorities. */
    stream->priority = a->priority > FK_LEAST_PRIORITY      ? FK_LEAST_PRIORITY
                       : a->priority < FK_GREATEST_PRIORITY ? FK_GREATEST_PRIORITY
                                                            : a->priority;
    fk_resource_add(&stream->res, FK_STREAMS, target->ctx, NULL); /* never freed: see above */
    *a->phStream = (CUstream)stream;
    return CUDA_SUCCESS;
}

CUresult
fk_StreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
    fk_create_args args = {phStream, flags, priority};

    return fk_call(GH_CU_StreamCreateWithPriority,
                   phStream != NULL && (flags & ~(unsigned int)CU_STREAM_NON_BLOCKING) == 0,
                   fk_on_current, NULL, stream_create, &args);
}

/* A created stream (a default one is not found either: it cannot be destroyed). */
static CUresult
on_created_stream(const void *handle, fk_target *target)
{
    return fk_found(target, fk_resource_find(handle, FK_STREAMS), CUDA_ERROR_INVALID_HANDLE);
}

static CUresult
stream_destroy(fk_target *target, void *args)
{
    fk_stream *stream = target->found;

    (void)args;
    if (stream->lane.capture != NULL) {
        fk_capture_abandon(stream->res.ctx, &stream->lane); /* its capture ends with it */
    }
    fk_resource_remove(&stream->res); /* its queued ops still run, naming the dead handle */
    return CUDA_SUCCESS;
}

CUresult
fk_StreamDestroy(CUstream hStream)
{
    return fk_call(GH_CU_StreamDestroy, 1, on_created_stream, hStream, stream_destroy, NULL);
}

/* cuStreamSynchronize (`wait`) and cuStreamQuery: whether what was queued on the stream
   resolved finished, after waiting for it if asked. */
static CUresult
stream_done(fk_target *target, void *wait)
{
    unsigned long long seq = target->lane->last_seq;
    CUresult res = fk_capture_check(target->ctx, target->lane);

    if (res != CUDA_SUCCESS || !*(const int *)wait) {
        return res == CUDA_SUCCESS && fk_ops_pending(seq) ? CUDA_ERROR_NOT_READY : res;
    }
    fk_ops_wait(seq); /* the lock is released while waiting */
    /* reset meanwhile: its work was dropped */
    return target->ctx->alive ? CUDA_SUCCESS : CUDA_ERROR_CONTEXT_IS_DESTROYED;
}

CUresult
fk_StreamSynchronize(CUstream hStream)
{
    int wait = 1;

    return fk_call(GH_CU_StreamSynchronize, 1, fk_on_stream, hStream, stream_done, &wait);
}

CUresult
fk_StreamQuery(CUstream hStream)
{
    int wait = 0;

    return fk_call(GH_CU_StreamQuery, 1, fk_on_stream, hStream, stream_done, &wait);
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

static CUresult
wait_event(fk_target *target, void *event)
{
    return fk_event_wait_on((CUevent)event, target->ctx, target->lane);
}

CUresult
fk_StreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    return fk_call(GH_CU_StreamWaitEvent, (Flags & ~(unsigned int)CU_EVENT_WAIT_EXTERNAL) == 0,
                   fk_on_stream, hStream, wait_event, hEvent);
}

static CUresult
get_priority(fk_target *target, void *priority)
{
    const fk_stream *stream = target->found;

    *(int *)priority = stream != NULL ? stream->priority : 0;
    return CUDA_SUCCESS;
}

CUresult
fk_StreamGetPriority(CUstream hStream, int *priority)
{
    return fk_call(GH_CU_StreamGetPriority, priority != NULL, fk_on_stream, hStream, get_priority,
                   priority);
}

static CUresult
is_capturing(fk_target *target, void *status)
{
    const fk_lane *lane = target->lane;

    *(CUstreamCaptureStatus *)status = lane->capture == NULL ? CU_STREAM_CAPTURE_STATUS_NONE
                                       : lane->capture_invalid
                                           ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                           : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    if (lane == &target->ctx->legacy && target->ctx->captures > 0) {
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT; /* as the driver answers */
    }
    return CUDA_SUCCESS;
}

CUresult
fk_StreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    return fk_call(GH_CU_StreamIsCapturing, captureStatus != NULL, fk_on_stream, hStream,
                   is_capturing, captureStatus);
}

static CUresult
get_flags(fk_target *target, void *flags)
{
    const fk_stream *stream = target->found;

    *(unsigned int *)flags = stream != NULL ? stream->flags : 0;
    return CUDA_SUCCESS;
}

CUresult
fk_StreamGetFlags(CUstream hStream, unsigned int *flags)
{
    return fk_call(GH_CU_StreamGetFlags, flags != NULL, fk_on_stream, hStream, get_flags, flags);
}

static CUresult
get_ctx(fk_target *target, void *pctx)
{
    *(CUcontext *)pctx = target->ctx;
    return CUDA_SUCCESS;
}

CUresult
fk_StreamGetCtx(CUstream hStream, CUcontext *pctx)
{
    return fk_call(GH_CU_StreamGetCtx, pctx != NULL, fk_on_stream, hStream, get_ctx, pctx);
}

static void
run_callback(fk_op *op)
{
    const fk_callback *cb = &((fk_callback_op *)op)->cb;

    if (cb->host_fn != NULL) {
        cb->host_fn(cb->user_data);
    }
    else {
        cb->callback(cb->handle, CUDA_SUCCESS, cb->user_data);
    }
}

/* Queue `cb` on `lane` of `ctx`.  A host function can be captured (a graph node); a stream
   callback cannot.  Lock held. */
static CUresult
callback_on(const fk_callback *cb, fk_context *ctx, fk_lane *lane)
{
    fk_callback_op *op;

    if (cb->host_fn == NULL && lane->capture != NULL) {
        lane->capture_invalid = 1; /* the driver cannot capture stream callbacks */
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    op = calloc(1, sizeof(*op));
    if (op == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    op->op.run = run_callback;
    if (cb->host_fn != NULL) {
        op->op.size = sizeof(*op);
        op->op.node_type = CU_GRAPH_NODE_TYPE_HOST;
    }
    op->cb = *cb;
    return fk_op_enqueue(&op->op, ctx, lane);
}

static CUresult
queue_callback(fk_target *target, void *cb)
{
    return callback_on(cb, target->ctx, target->lane);
}

CUresult
fk_StreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData,
                     unsigned int flags)
{
    fk_callback cb = {hStream, callback, NULL, userData};

    return fk_call(GH_CU_StreamAddCallback, callback != NULL && flags == 0, fk_on_stream, hStream,
                   queue_callback, &cb);
}

CUresult
fk_host_func_on(CUhostFn fn, void *userData, CUstream handle, fk_context *ctx, fk_lane *lane)
{
    fk_callback cb = {handle, NULL, fn, userData};

    return callback_on(&cb, ctx, lane);
}

CUresult
fk_LaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
    fk_callback cb = {hStream, NULL, fn, userData};

    return fk_call(GH_CU_LaunchHostFunc, fn != NULL, fk_on_stream, hStream, queue_callback, &cb);
}
