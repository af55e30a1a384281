/* gpuhost.jit's launches in C: the key of a launch's argument types (what selects a
 * compiled overload) and the packing of numba's parameter layout by a plan, shared by
 * jit_args.c (keys, plans) and jit_launch.c (the JitDispatcher and JitLaunch types).
 */
#ifndef GPUHOST_JIT_H
#define GPUHOST_JIT_H

#include "kernel.h"

#define JIT_KEY_MAX   512 /* bytes of one launch's key */
#define JIT_DEPTH_MAX 8   /* nesting of tuples */

typedef struct {
    unsigned char bytes[JIT_KEY_MAX];
    Py_ssize_t n;
    PyObject *keep; /* list of objects named by address, or NULL while none */
} jit_keybuf;

/* Key a launch's arguments as numba types them: 1 keyed, 0 not keyed here (the launch goes
   to numba's rules), -1 error.  With `keep`, objects the key names by address are appended
   to kb->keep (a new list; the caller releases it). */
int gh_jit_key_args(gh_state *st, jit_keybuf *kb, PyObject *const *args, Py_ssize_t nargs,
                    int keep);

/* numba's layout of a DeviceArray: 'C', 'F' or 'A' (extents of 1 do not decide). */
char gh_jit_array_layout(const gh_devicearray *a);

typedef struct {
    char *buf;   /* the values */
    void **ptrs; /* one per parameter */
    const gh_param *params;
    int n, nparams;           /* parameters written so far, of nparams */
    PyTypeObject *array_type; /* DeviceArray */
} jit_packer;

/* Pack one argument into pk by the plan at *pos (advanced): 1 packed, 0 not packable here
   (the slow path decides, and reports errors); never raises. */
int gh_jit_pack_planned(gh_kernel *k, jit_packer *pk, const unsigned char *plan, Py_ssize_t planlen,
                        Py_ssize_t *pos, PyObject *arg);

/* Append to list `sizes` the sizes of the parameters one argument's plan at *pos makes.
   0, or -1 with ValueError for a malformed plan. */
int gh_jit_plan_sizes(const unsigned char *plan, Py_ssize_t planlen, Py_ssize_t *pos,
                      PyObject *sizes);

int gh_jit_init_type(PyObject *module, gh_state *st);
/* _jit_layout(array) and _jit_usable(kernel), module functions for gpuhost/_numba.py */
extern PyMethodDef gh_jit_methods[];

#endif /* GPUHOST_JIT_H */
