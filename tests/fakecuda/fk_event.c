/* fakecuda events: create, destroy, record (an op on the work queue that stamps the time
 * when the worker reaches it), query, synchronize, elapsed time, and IPC handles.
 *
 * A handle (live counter "events") points at an event state: its own, or, for one opened
 * from an IPC handle, the exporting event's.  Neither is ever freed, so a destroyed handle
 * stays recognisably dead and a record still queued never touches freed memory.
 */
#define _POSIX_C_SOURCE 200809L

#include "fk_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FK_EVENT_FLAGS (CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS)

/* Under the lock. */
typedef struct fk_event_state {
    struct fk_event_state *next_exported; /* in fk_exported, once an IPC handle was made */
    int exported;
    unsigned int flags;
    unsigned long long record_seq; /* the op of the newest record; 0: never recorded */
    int complete;                  /* that record ran, at `when` */
    struct timespec when;
    long handles; /* live handles on it: the creating one and those opened through IPC */
} fk_event_state;

typedef struct {
    fk_resource res; /* first: the handle is its address */
    fk_event_state *state;
    fk_event_state own;
} fk_event;

typedef struct {
    fk_op op;
    fk_event_state *state; /* NULL: the event of a graph's record went */
    CUevent handle;
} fk_record_op;

/* What cuIpcGetEventHandle writes at the start of the 64 bytes. */
typedef struct {
    char magic[8];
    uint64_t pid;
    uint64_t instance; /* which copy of the fake made it: the address of fk_exported */
    uint64_t state;
} fk_ipc_event;

_Static_assert(sizeof(fk_ipc_event) <= CU_IPC_HANDLE_SIZE, "IPC event handle too small");

static const char fk_ipc_magic[8] = {'f', 'k', 'e', 'v', 'e', 'n', 't', '1'};

static fk_event_state *fk_exported; /* every state an IPC handle was made for; under lock */

/* The live event `handle`, or NULL.  Lock held. */
static fk_event *
find_event(CUevent handle)
{
    return (fk_event *)fk_resource_find(handle, FK_EVENTS);
}

/* A handle went: unregistered by cuEventDestroy or with its context.  Lock held. */
static void
event_gone(fk_resource *res)
{
    ((fk_event *)res)->state->handles--;
}

/* Register a new handle on `state` (NULL: a new state with `flags`) in `ctx`.  Lock held. */
static CUresult
event_new(CUevent *phEvent, fk_context *ctx, fk_event_state *state, unsigned int flags)
{
    fk_event *event = calloc(1, sizeof(*event));

    if (event == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (state == NULL) {
        state = &event->own;
        state->flags = flags;
    }
    event->state = state;
    state->handles++;
    fk_resource_add(&event->res, FK_EVENTS, ctx, event_gone);
    *phEvent = (CUevent)event;
    return CUDA_SUCCESS;
}

/* The live event `handle` (target->found), else CUDA_ERROR_INVALID_HANDLE.  Lock held. */
static CUresult
on_event(const void *handle, fk_target *target)
{
    return fk_found(target, find_event((CUevent)handle), CUDA_ERROR_INVALID_HANDLE);
}

static fk_event_state *exported_state(const CUipcEventHandle *handle);

typedef struct {
    CUevent *phEvent;
    const CUipcEventHandle *ipc; /* NULL: a new event */
    unsigned int flags;
} fk_new_args;

/* A new handle in the current context: on a new event, or on the one an IPC handle names. */
static CUresult
event_open(fk_target *target, void *args)
{
    fk_new_args *a = args;
    fk_event_state *state = NULL;

    if (a->ipc != NULL && (state = exported_state(a->ipc)) == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return event_new(a->phEvent, target->ctx, state, a->flags);
}

CUresult
fk_EventCreate(CUevent *phEvent, unsigned int Flags)
{
    fk_new_args args = {phEvent, NULL, Flags};

    return fk_call(GH_CU_EventCreate,
                   phEvent != NULL && (Flags & ~(unsigned int)FK_EVENT_FLAGS) == 0 &&
                       (!(Flags & CU_EVENT_INTERPROCESS) || (Flags & CU_EVENT_DISABLE_TIMING)),
                   fk_on_current, NULL, event_open, &args);
}

static CUresult
event_destroy(fk_target *target, void *args)
{
    fk_event *event = target->found;

    (void)args;
    fk_resource_remove(&event->res); /* a record still queued runs on the state */
    event_gone(&event->res);
    return CUDA_SUCCESS;
}

CUresult
fk_EventDestroy(CUevent hEvent)
{
    return fk_call(GH_CU_EventDestroy, 1, on_event, hEvent, event_destroy, NULL);
}

/* On the worker: complete the record unless a newer record replaced it. */
static void
run_record(fk_op *op)
{
    fk_record_op *record = (fk_record_op *)op;
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    fk_lock();
    if (record->state != NULL && record->state->record_seq == op->seq) {
        record->state->complete = 1;
        record->state->when = now;
    }
    fk_unlock();
}

/* Dropped with its context: the event reads as never recorded. */
static void
cancel_record(fk_op *op)
{
    fk_record_op *record = (fk_record_op *)op;

    if (record->state != NULL && record->state->record_seq == op->seq) {
        record->state->record_seq = 0;
        record->state->complete = 0;
    }
}

/* Queued (not captured): the event's newest record is this one. */
static void
queued_record(fk_op *op)
{
    fk_record_op *record = (fk_record_op *)op;

    if (record->state != NULL) { /* the worker cannot run it before the lock is let go */
        record->state->record_seq = op->seq;
        record->state->complete = 0;
    }
}

/* A graph launch's record: of the event as it is now (none if it was destroyed). */
static CUresult
replay_record(fk_op *op)
{
    fk_record_op *record = (fk_record_op *)op;
    fk_event *event = find_event(record->handle);

    record->state = event != NULL ? event->state : NULL;
    return CUDA_SUCCESS;
}

CUresult
fk_event_record_on(CUevent hEvent, fk_context *ctx, fk_lane *lane)
{
    fk_event *event = find_event(hEvent);
    fk_record_op *record;

    if (event == NULL || ctx != event->res.ctx) {
        return CUDA_ERROR_INVALID_HANDLE; /* event and stream of different contexts */
    }
    if (lane->capture != NULL && !lane->node_builder) {
        return CUDA_SUCCESS; /* recorded in a capture: the capture's own (no node) */
    }
    record = calloc(1, sizeof(*record));
    if (record == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    record->op.run = run_record;
    record->op.cancel = cancel_record;
    record->op.queued = queued_record;
    record->op.replay = replay_record;
    record->op.size = sizeof(*record);
    record->op.node_type = CU_GRAPH_NODE_TYPE_EVENT_RECORD;
    record->state = lane->capture == NULL ? event->state : NULL; /* a node: see replay */
    record->handle = hEvent;
    return fk_op_enqueue(&record->op, ctx, lane);
}

/* Record the event resolved on `stream`. */
static CUresult
event_record(fk_target *target, void *stream)
{
    CUevent event = target->found;
    CUresult res = fk_on_stream(stream, target);

    return res == CUDA_SUCCESS ? fk_event_record_on(event, target->ctx, target->lane) : res;
}

CUresult
fk_EventRecord(CUevent hEvent, CUstream hStream)
{
    return fk_call(GH_CU_EventRecord, 1, on_event, hEvent, event_record, hStream);
}

static CUresult
event_query(fk_target *target, void *args)
{
    const fk_event_state *state = ((fk_event *)target->found)->state;

    (void)args;
    /* never recorded: CUDA_SUCCESS, as the driver */
    return state->record_seq != 0 && !state->complete ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

CUresult
fk_EventQuery(CUevent hEvent)
{
    return fk_call(GH_CU_EventQuery, 1, on_event, hEvent, event_query, NULL);
}

static CUresult
event_synchronize(fk_target *target, void *args)
{
    (void)args;
    /* the lock is released while waiting */
    fk_ops_wait(((fk_event *)target->found)->state->record_seq);
    return CUDA_SUCCESS;
}

CUresult
fk_EventSynchronize(CUevent hEvent)
{
    return fk_call(GH_CU_EventSynchronize, 1, on_event, hEvent, event_synchronize, NULL);
}

/* CUDA_SUCCESS if `state` has a completed timed record, else why not.  Lock held. */
static CUresult
timing_check(const fk_event_state *state)
{
    if ((state->flags & CU_EVENT_DISABLE_TIMING) || state->record_seq == 0) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    return state->complete ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

typedef struct {
    float *ms;
    CUevent end;
} fk_elapsed_args;

/* From the event resolved to the end event. */
static CUresult
elapsed_time(fk_target *target, void *args)
{
    fk_elapsed_args *a = args;
    const fk_event *start = target->found, *end = find_event(a->end);
    CUresult res, res_start, res_end;

    if (end == NULL) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    /* An unusable event (INVALID_HANDLE) outranks an unfinished one (NOT_READY). */
    res_start = timing_check(start->state);
    res_end = timing_check(end->state);
    res = res_start == CUDA_ERROR_INVALID_HANDLE ? res_start
          : res_end != CUDA_SUCCESS              ? res_end
                                                 : res_start;
    if (res == CUDA_SUCCESS) {
        const struct timespec *t0 = &start->state->when, *t1 = &end->state->when;

        *a->ms = (float)((double)(t1->tv_sec - t0->tv_sec) * 1e3 +
                         (double)(t1->tv_nsec - t0->tv_nsec) / 1e6);
    }
    return res;
}

CUresult
fk_EventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    fk_elapsed_args args = {pMilliseconds, hEnd};

    return fk_call(GH_CU_EventElapsedTime, pMilliseconds != NULL, on_event, hStart, elapsed_time,
                   &args);
}

/* ---- IPC ---- */

static CUresult
ipc_get_handle(fk_target *target, void *handle)
{
    fk_event_state *state = ((fk_event *)target->found)->state;
    CUipcEventHandle *pHandle = handle;
    fk_ipc_event ipc;

    if (!(state->flags & CU_EVENT_INTERPROCESS)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!state->exported) {
        state->exported = 1;
        state->next_exported = fk_exported;
        fk_exported = state;
    }
    memcpy(ipc.magic, fk_ipc_magic, sizeof(ipc.magic));
    ipc.pid = (uint64_t)getpid();
    ipc.instance = (uint64_t)(uintptr_t)&fk_exported;
    ipc.state = (uint64_t)(uintptr_t)state;
    memset(pHandle, 0, sizeof(*pHandle));
    memcpy(pHandle->reserved, &ipc, sizeof(ipc));
    return CUDA_SUCCESS;
}

CUresult
fk_IpcGetEventHandle(CUipcEventHandle *pHandle, CUevent event)
{
    return fk_call(GH_CU_IpcGetEventHandle, pHandle != NULL, on_event, event, ipc_get_handle,
                   pHandle);
}

/* The exported state a handle names with live handles on it, or NULL.  Lock held.
   The fake cannot share an event across processes: a handle made by another process (or
   by another copy of the fake loaded in this one) is refused with CUDA_ERROR_INVALID_VALUE;
   IPC between processes is tested on a real GPU. */
static fk_event_state *
exported_state(const CUipcEventHandle *handle)
{
    fk_ipc_event ipc;

    memcpy(&ipc, handle->reserved, sizeof(ipc));
    if (memcmp(ipc.magic, fk_ipc_magic, sizeof(ipc.magic)) != 0 || ipc.pid != (uint64_t)getpid() ||
        ipc.instance != (uint64_t)(uintptr_t)&fk_exported) {
        return NULL;
    }
    for (fk_event_state *state = fk_exported; state != NULL; state = state->next_exported) {
        if ((uint64_t)(uintptr_t)state == ipc.state) {
            return state->handles > 0 ? state : NULL; /* every handle on it destroyed */
        }
    }
    return NULL;
}

CUresult
fk_IpcOpenEventHandle(CUevent *phEvent, CUipcEventHandle handle)
{
    fk_new_args args = {phEvent, &handle, 0};

    return fk_call(GH_CU_IpcOpenEventHandle, phEvent != NULL, fk_on_current, NULL, event_open,
                   &args);
}
