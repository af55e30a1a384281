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

#endif /* GPUHOST_LAUNCH_INTERNAL_H */
