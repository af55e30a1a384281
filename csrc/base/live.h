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

extern PyMethodDef gh_live_methods[];

#endif /* GPUHOST_BASE_LIVE_H */
