/* Releasing driver resources: now, at the end of the outermost defer_cleanup() block, or,
 * when the last reference dies on a driver callback thread, soon after on the main thread;
 * never after their context was reset or closed.
 */
#include "core_internal.h"

_Thread_local int gh_on_driver_thread = 0;

/* Release `handle` with the destroy call `id`; the driver's result. */
static CUresult
release_now(gh_cu_id id, void *handle)
{
    switch (id) {
        case GH_CU_StreamDestroy:
            return gh_cu.StreamDestroy((CUstream)handle);
        case GH_CU_EventDestroy:
            return gh_cu.EventDestroy((CUevent)handle);
        case GH_CU_MemFree:
            return gh_cu.MemFree((CUdeviceptr)(uintptr_t)handle);
        case GH_CU_MemFreeHost:
            return gh_cu.MemFreeHost(handle);
        case GH_CU_MemHostUnregister:
            return gh_cu.MemHostUnregister(handle);
        case GH_CU_IpcCloseMemHandle:
            return gh_cu.IpcCloseMemHandle((CUdeviceptr)(uintptr_t)handle);
        case GH_CU_ModuleUnload:
            return gh_cu.ModuleUnload((CUmodule)handle);
        case GH_CU_GraphDestroy:
            return gh_cu.GraphDestroy((CUgraph)handle);
        case GH_CU_GraphExecDestroy:
            return gh_cu.GraphExecDestroy((CUgraphExec)handle);
        default:
            return CUDA_ERROR_NOT_SUPPORTED;
    }
}

/* Release now if the resource's context generation is still alive; never raises. */
static void
release_if_alive(const gh_pending_release *r)
{
    CUresult res;
    if (!gh_context_handle_live(r->ctx, r->generation)) {
        return; /* it died with its context; its address may belong to someone else now */
    }
    if (r->id == GH_CU_StreamDestroy || r->id == GH_CU_EventDestroy ||
        r->id == GH_CU_GraphDestroy) {
        res = release_now(r->id, r->handle); /* returns at once */
    }
    else {
        /* A free can wait for queued work, host callbacks included, which need the GIL. */
        Py_BEGIN_ALLOW_THREADS
        res = release_now(r->id, r->handle);
        Py_END_ALLOW_THREADS
    }
    if (res != CUDA_SUCCESS) {
        gh_warn_cleanup(res, r->id);
    }
}

/* A pending call (main thread, GIL held): the release a callback thread could not do. */
static int
run_deferred_release(void *arg)
{
    gh_pending_release *r = (gh_pending_release *)arg;
    release_if_alive(r);
    Py_DECREF(r->ctx);
    PyMem_RawFree(r);
    return 0;
}

/* Keep `r` (its context reference included) for defer_cleanup()'s end; 0 or -1. */
static int
hold_release(gh_state *st, const gh_pending_release *r)
{
    if (st->n_held == st->cap_held) {
        Py_ssize_t cap = st->cap_held ? 2 * st->cap_held : 64;
        gh_pending_release *grown = PyMem_RawRealloc(st->held, (size_t)cap * sizeof(*grown));
        if (grown == NULL) {
            return -1;
        }
        st->held = grown;
        st->cap_held = cap;
    }
    st->held[st->n_held] = *r;
    Py_INCREF(r->ctx);
    st->n_held++;
    return 0;
}

void
gh_release(gh_context *ctx, uint64_t generation, gh_cu_id id, void *handle)
{
    gh_state *st = gh_state_of_type(Py_TYPE(ctx));
    gh_pending_release r = {id, handle, ctx, generation};
    gh_pending_release *later;

    /* A registration is undone at once even inside defer_cleanup(), as numba does, so that
       `with pinned(a):` can be entered again for the same memory in the same block. */
    if (st != NULL && st->defer_depth > 0 && id != GH_CU_MemHostUnregister &&
        hold_release(st, &r) == 0) {
        return;
    }
    if (!gh_on_driver_thread) {
        release_if_alive(&r);
        return;
    }
    later = PyMem_RawMalloc(sizeof(*later));
    if (later == NULL) {
        return; /* out of host memory on a driver thread: leak the handle, never crash */
    }
    *later = r;
    Py_INCREF(ctx);
    if (Py_AddPendingCall(run_deferred_release, later) < 0) {
        Py_DECREF(ctx);
        PyMem_RawFree(later);
    }
}

/* Release everything held by defer_cleanup() blocks. */
static void
release_held(gh_state *st)
{
    while (st->n_held > 0) {
        gh_pending_release r = st->held[--st->n_held];
        release_if_alive(&r);
        Py_DECREF(r.ctx);
    }
}

void
gh_release_held_of(gh_state *st, gh_context *ctx)
{
    Py_ssize_t kept = 0;
    for (Py_ssize_t i = 0; i < st->n_held; i++) {
        gh_pending_release r = st->held[i];
        if (r.ctx != ctx) {
            st->held[kept++] = r;
            continue;
        }
        release_if_alive(&r);
        Py_DECREF(r.ctx); /* not the last reference: the caller holds ctx */
    }
    st->n_held = kept;
}

void
gh_cleanup_defer(gh_state *st)
{
    st->defer_depth++;
}

void
gh_cleanup_resume(gh_state *st)
{
    if (st->defer_depth > 0 && --st->defer_depth == 0) {
        release_held(st);
    }
}

static PyObject *
mod_defer_cleanup_enter(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    gh_state_of_module(module)->defer_depth++;
    Py_RETURN_NONE;
}

static PyObject *
mod_defer_cleanup_depth(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromLong(gh_state_of_module(module)->defer_depth);
}

static PyObject *
mod_defer_cleanup_exit(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    gh_cleanup_resume(gh_state_of_module(module));
    Py_RETURN_NONE;
}

void
gh_release_free(gh_state *st)
{
    st->defer_depth = 0;
    release_held(st);
    PyMem_RawFree(st->held);
    st->held = NULL;
}

PyMethodDef gh_release_methods[] = {
    {"_defer_cleanup_enter", mod_defer_cleanup_enter, METH_NOARGS,
     "_defer_cleanup_enter()\n--\n\nHold releases of memory, streams and events."},
    {"_defer_cleanup_depth", mod_defer_cleanup_depth, METH_NOARGS,
     "_defer_cleanup_depth()\n--\n\nHow many defer_cleanup() blocks are open."},
    {"_defer_cleanup_exit", mod_defer_cleanup_exit, METH_NOARGS,
     "_defer_cleanup_exit()\n--\n\nEnd one hold; at the outermost, release what was held."},
    {NULL, NULL, 0, NULL},
};
