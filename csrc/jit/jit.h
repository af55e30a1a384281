/* csrc/jit/'s public header: what module.c calls to add gpuhost.jit's launcher types and
 * functions to the module.  The keys and plans of a launch are private: jit_internal.h.
 */
#ifndef GPUHOST_JIT_H
#define GPUHOST_JIT_H

#include "base/base.h"

/* Add the JitDispatcher and JitLaunch types to the module; 0 or -1. */
int gh_jit_init_type(PyObject *module, gh_state *st);

/* _jit_layout(array) and _jit_usable(kernel), module functions for gpuhost/_numba.py */
extern PyMethodDef gh_jit_methods[];

#endif /* GPUHOST_JIT_H */
