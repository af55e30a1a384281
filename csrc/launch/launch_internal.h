/* csrc/launch/'s private header: what only launch/'s files share.  Each file of launch/
 * includes it (it includes launch.h); no file of another folder does.
 */
#ifndef GPUHOST_LAUNCH_INTERNAL_H
#define GPUHOST_LAUNCH_INTERNAL_H

#include "launch.h"

/* ---- kernel.c ---- */
/* (x, y, z) of launch dimensions; new reference or NULL. */
PyObject *gh_dims_tuple(const unsigned int *d);

/* CudaSupportError: kernel k's parameters cannot be known.  Returns -1. */
int gh_kernel_raise_unknown_params(gh_kernel *k);

/* A new Kernel for function `f` of module `m`, asked for as `name`, with symbol `symbol`;
   `types` is the PTX's ((kind, size, align), ...) for it, or NULL/None when unknown.
   New reference or NULL. */
PyObject *gh_kernel_new(gh_state *st, gh_module *m, CUfunction f, PyObject *name, PyObject *symbol,
                        PyObject *types);

/* ---- kernel_args.c ---- */
/* Fill and check `d` from the launch options (grid, block: an int or 1 to 3 ints; shared:
   None or bytes; cluster: NULL/None or dims) against the device's and the kernel's limits;
   the stream is borrowed.  0, or -1 with ValueError/TypeError. */
int gh_kernel_make_dims(gh_kernel *k, launch_dims *d, PyObject *grid, PyObject *block,
                        PyObject *stream, PyObject *shared, int cooperative, PyObject *cluster);

/* ---- kernel_types.c ---- */
/* Read the C types of k's parameters from its symbol where it is a C++ kernel's mangled
   name (gpuhost/_demangle.py, through the kernel_param_types helper); what cannot be read
   stays not known.  0, or -1 with the error set. */
int gh_kernel_read_types(gh_state *st, gh_kernel *k);
/* Kernel._set_param_types(types) (prepare()'s) and the getter of Kernel.param_types. */
PyObject *gh_kernel_set_param_types(gh_kernel *k, PyObject *types);
PyObject *gh_kernel_get_param_types(gh_kernel *k, void *closure);
/* Parameter i for messages: its C type ("unsigned int") where known, else "a 4-byte
   <what>" (what: NULL for its kind's name).  New reference or NULL. */
PyObject *gh_param_describe(gh_kernel *k, Py_ssize_t i, const char *what);
/* TypeError: parameter i (a typed pointer) does not take `arg`, an array of NumPy kind
   `kind` and `itemsize` (`descr` its dtype, or NULL).  Returns -1. */
int gh_param_raise_elem(gh_kernel *k, Py_ssize_t i, PyObject *arg, char kind, Py_ssize_t itemsize,
                        PyObject *descr);

/* Whether pointer parameter p takes an array of NumPy kind `kind` and `itemsize` (kind 0,
   an element the exporter does not say: taken). */
static inline int
gh_param_takes_elem(const gh_param *p, char kind, Py_ssize_t itemsize)
{
    switch (p->elem) {
        case GH_ELEM_ANY:
            return 1;
        case GH_ELEM_BYTE:
            return kind == 0 || (itemsize == 1 && (kind == 'i' || kind == 'u' || kind == 'b'));
        case GH_ELEM_BFLOAT16:
            return kind == 0 || (itemsize == 2 && (kind == 'V' || kind == 'B'));
        case GH_ELEM_POINTER:
            return kind == 0 || (itemsize == 8 && (kind == 'i' || kind == 'u'));
        default:
            return kind == 0 || (kind == p->elem && itemsize == p->elem_size);
    }
}

#endif /* GPUHOST_LAUNCH_INTERNAL_H */
