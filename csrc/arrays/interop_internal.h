/* What interop.c and interop_cai.c share, and nothing outside them uses: the names they look
 * up (interned once in the module state), the message of a failed read, a tuple of ints.
 */
#ifndef GPUHOST_INTEROP_INTERNAL_H
#define GPUHOST_INTEROP_INTERNAL_H

#include "interop.h"

enum {
    N_CAI,
    N_VERSION,
    N_SHAPE,
    N_TYPESTR,
    N_DATA,
    N_STRIDES,
    N_STREAM,
    N_MASK,
    N_DESCR,
    N_PTR,
    N_DEVICE_ID,
    N_DTYPE,
    N_DLPACK,
    N_MAX_VERSION,
    N_NDIM,
    N_C_CONTIGUOUS,
    N_SIZE,
    N__COUNT
};
extern const char *const gh_interop_name_text[N__COUNT];
/* the module state's room for them (state.h: interop_names) */
_Static_assert(N__COUNT <= 24, "state.h's interop_names is too short");

/* The interned name `n` (borrowed; made on first use, kept in the module state). */
PyObject *gh_interop_name(gh_state *st, int n);
/* Raise `exc` with "<who>(): <what> <index>: <text>" (as much as the use names); -1. */
int gh_foreign_raise(const gh_foreign_use *u, PyObject *exc, const char *fmt, ...);
/* A tuple (or list) of `ndim` ints (ndim < 0: any length) into out, which `obj`'s `what`
   is; 0, or -1 with TypeError / ValueError. */
int gh_foreign_int_tuple(const gh_foreign_use *u, PyObject *obj, PyObject *tuple, int ndim,
                         Py_ssize_t *out, const char *what);

#endif /* GPUHOST_INTEROP_INTERNAL_H */
