/* csrc/base/live.h: live.c's part of base.h: gpuhost's records of its objects that own
 * driver resources (allocations, streams, events, modules): how many of each are alive, and,
 * while the pytest plugin's leak check records, which ones were made since and by which line
 * of Python.  Each type's file calls gh_live_add when it makes one and gh_live_remove when it
 * frees one; both are inline here, their slow paths (while recording) in live.c.
 */
#ifndef GPUHOST_BASE_LIVE_H
#define GPUHOST_BASE_LIVE_H

#include "state.h"

/* Note `obj` (a new object of `kind`) while recording; out of line, for gh_live_add. */
void gh_live_note(gh_state *st, gh_live_kind kind, PyObject *obj);
/* Drop the record of `obj`, if there is one; for gh_live_remove. */
void gh_live_forget(gh_state *st, PyObject *obj);
/* Free the records (module_free). */
void gh_live_free(gh_state *st);

/* A new object of `kind` was made.  Never raises: a record that cannot be made is
   counted as lost. */
static inline void
gh_live_add(gh_state *st, gh_live_kind kind, PyObject *obj)
{
    st->live.counts[kind]++;
    if (st->live.recording) {
        gh_live_note(st, kind, obj);
    }
}

/* An object of `kind` is being freed (its dealloc).  Never raises. */
static inline void
gh_live_remove(gh_state *st, gh_live_kind kind, PyObject *obj)
{
    st->live.counts[kind]--;
    if (st->live.n > 0) {
        gh_live_forget(st, obj);
    }
}

/* Put `obj` (of `kind`) at the head of its kind's list, through its own `link`. */
static inline void
gh_live_link_add(gh_state *st, gh_live_kind kind, gh_live_link *link, PyObject *obj)
{
    gh_live_link **head = &st->live.lists[kind];
    link->obj = obj;
    link->prev = NULL;
    link->next = *head;
    if (*head != NULL) {
        (*head)->prev = link;
    }
    *head = link;
}

/* Take `link` out of its kind's list (first thing in a dealloc); idempotent. */
static inline void
gh_live_link_remove(gh_state *st, gh_live_kind kind, gh_live_link *link)
{
    if (link->obj == NULL) {
        return;
    }
    if (link->prev != NULL) {
        link->prev->next = link->next;
    }
    else {
        st->live.lists[kind] = link->next;
    }
    if (link->next != NULL) {
        link->next->prev = link->prev;
    }
    link->prev = link->next = NULL;
    link->obj = NULL;
}

/* Call `each(obj, arg)` for every linked live object of `kind`, over a snapshot that holds
   them (freeing one may run code, or let the GIL go, and free others).  Never raises: without
   memory for the snapshot nothing is called, and each object's own dealloc frees it. */
void gh_live_each(gh_state *st, gh_live_kind kind, void (*each)(PyObject *obj, void *arg),
                  void *arg);

extern PyMethodDef gh_live_methods[];

#endif /* GPUHOST_BASE_LIVE_H */
