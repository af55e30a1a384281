/* fakecuda work queue: the asynchronous half of the fake.  The ops of every stream (host
 * callbacks, event records, stream waits, copies and memsets) go on ONE global FIFO,
 * run in order by ONE worker thread started at the first op.  A FIFO is one legal schedule
 * of CUDA's stream semantics, and since ops finish in queue order, "has op N finished?" is
 * "has everything up to N left the queue?".  Tests hold the worker back with a gate.
 *
 * The worker is detached and never joined: at exit it dies wherever it waits.
 */
#define _POSIX_C_SOURCE 200809L

#include "fk_internal.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

/* All under the driver lock. */
static fk_op *fk_head, *fk_tail; /* queued, oldest first */
static long fk_queued;
static fk_op *fk_running; /* taken off the queue and being run; older than every queued op */
static unsigned long long fk_next_seq = 1;
static int fk_gate_closed;
static int fk_worker_started;
static pthread_cond_t fk_work_cond = PTHREAD_COND_INITIALIZER; /* the worker: op or gate */
static pthread_cond_t fk_done_cond = PTHREAD_COND_INITIALIZER; /* waiters: ops finished */

static pthread_once_t fk_atfork_once = PTHREAD_ONCE_INIT;
static _Thread_local int fk_is_worker;

int
fk_on_worker(void)
{
    return fk_is_worker;
}

/* The seq of the oldest op not finished, ULLONG_MAX if none.  Lock held. */
static unsigned long long
oldest_unfinished(void)
{
    if (fk_running != NULL) {
        return fk_running->seq;
    }
    return fk_head != NULL ? fk_head->seq : ULLONG_MAX;
}

int
fk_ops_pending(unsigned long long seq)
{
    return oldest_unfinished() <= seq;
}

void
fk_ops_wait(unsigned long long seq)
{
    while (fk_ops_pending(seq)) {
        fk_wait(&fk_done_cond);
    }
}

static void *
worker_main(void *arg)
{
    (void)arg;
    fk_is_worker = 1;
    fk_lock();
    for (;;) {
        fk_op *op;

        while (fk_gate_closed || fk_head == NULL) {
            fk_wait(&fk_work_cond);
        }
        op = fk_head;
        fk_head = op->next;
        if (fk_head == NULL) {
            fk_tail = NULL;
        }
        fk_queued--;
        fk_running = op;
        fk_unlock();
        op->run(op); /* unlocked: a callback may call into the fake (and be refused) */
        fk_lock();
        fk_running = NULL;
        free(op);
        pthread_cond_broadcast(&fk_done_cond);
    }
    return NULL;
}

/* fork(): the child gets a consistent lock and queue, and no worker: the next op starts one
   there (ops queued before the fork run in the child too). */
static void
atfork_prepare(void)
{
    fk_lock();
}

static void
atfork_parent(void)
{
    fk_unlock();
}

static void
atfork_child(void)
{
    pthread_cond_init(&fk_work_cond, NULL);
    pthread_cond_init(&fk_done_cond, NULL);
    fk_running = NULL; /* the parent's worker was running it: it never finishes here */
    fk_worker_started = 0;
    fk_is_worker = 0;
    fk_unlock();
}

static void
register_atfork(void)
{
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* Start the worker unless it runs.  0, or -1 if it cannot be started.  Lock held. */
static int
start_worker(void)
{
    pthread_attr_t attr;
    pthread_t thread;
    sigset_t blocked, old;
    int err;

    if (fk_worker_started) {
        return 0;
    }
    pthread_once(&fk_atfork_once, register_atfork);
    if (pthread_attr_init(&attr) != 0) {
        return -1;
    }
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* Asynchronous signals go to the application's threads, never to the worker (the
       thread inherits this mask); faults stay deliverable so crash handlers still report. */
    sigfillset(&blocked);
    sigdelset(&blocked, SIGSEGV);
    sigdelset(&blocked, SIGBUS);
    sigdelset(&blocked, SIGFPE);
    sigdelset(&blocked, SIGILL);
    sigdelset(&blocked, SIGABRT);
    pthread_sigmask(SIG_SETMASK, &blocked, &old);
    err = pthread_create(&thread, &attr, worker_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (err != 0) {
        return -1;
    }
    fk_worker_started = 1;
    return 0;
}

void
fk_op_drop(fk_op *op)
{
    if (op->cancel != NULL) {
        op->cancel(op);
    }
    free(op);
}

CUresult
fk_op_enqueue(fk_op *op, fk_context *ctx, fk_lane *lane)
{
    op->ctx = ctx;
    if (lane->capture != NULL) {
        if (op->size == 0 || lane->capture_invalid) {
            lane->capture_invalid = 1; /* what cannot be captured invalidates the capture */
            fk_op_drop(op);
            return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        }
        return fk_graph_capture_op(lane->capture, op);
    }
    if (start_worker() != 0) {
        fk_op_drop(op);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    op->next = NULL;
    op->ctx = ctx;
    op->seq = fk_next_seq++;
    if (fk_tail != NULL) {
        fk_tail->next = op;
    }
    else {
        fk_head = op;
    }
    fk_tail = op;
    fk_queued++;
    lane->last_seq = op->seq;
    ctx->ops.last_seq = op->seq;
    if (!lane->non_blocking) {
        ctx->blocking.last_seq = op->seq;
    }
    if (op->queued != NULL) {
        op->queued(op);
    }
    pthread_cond_signal(&fk_work_cond);
    return CUDA_SUCCESS;
}

void
fk_ops_drop_context(fk_context *ctx)
{
    fk_op **link = &fk_head, *op;

    fk_tail = NULL;
    while ((op = *link) != NULL) {
        if (op->ctx == ctx) {
            *link = op->next;
            fk_queued--;
            fk_op_drop(op);
        }
        else {
            fk_tail = op;
            link = &op->next;
        }
    }
    pthread_cond_broadcast(&fk_done_cond); /* waiters on dropped ops */
}

/* ---- control API ---- */

void
fakecuda_gate_close(void)
{
    fk_lock();
    fk_gate_closed = 1;
    fk_unlock();
}

void
fakecuda_gate_open(void)
{
    fk_lock();
    fk_gate_closed = 0;
    pthread_cond_broadcast(&fk_work_cond);
    fk_unlock();
}

long
fakecuda_pending(void)
{
    long pending;

    fk_lock();
    pending = fk_queued + (fk_running != NULL);
    fk_unlock();
    return pending;
}
