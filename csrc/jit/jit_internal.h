/* csrc/jit/'s private header: what jit_args.c and jit_launch.c share.  Each file of jit/
 * includes it (it includes jit.h); no file of another folder does.
 */
#ifndef GPUHOST_JIT_INTERNAL_H
#define GPUHOST_JIT_INTERNAL_H

#include "jit.h"
#include "arrays/arrays.h"
#include "launch/launch.h"

/* ---- jit_args.c and jit_launch.c ---- */
/* gpuhost.jit's launches in C: the key of a launch's argument types (what selects a
 * compiled overload) and the packing of numba's parameter layout by a plan, shared by
 * jit_args.c (keys, plans) and jit_launch.c (the JitDispatcher and JitLaunch types).
 */
#define JIT_KEY_SMALL   4096 /* bytes of a launch's key kept on the stack */
#define JIT_DEPTH_MAX   8    /* nesting of tuples */
#define JIT_VIEWS_SMALL 8    /* other libraries' arrays of a launch read on the stack */

typedef struct {
    unsigned char small[JIT_KEY_SMALL];
    unsigned char *bytes; /* small, or a PyMem block for a longer key */
    Py_ssize_t n, cap;
    PyObject *keep; /* list of objects named by address, or NULL while none */
    int local;      /* an address is part of the key: it means nothing in another process */
} jit_keybuf;

/* Other libraries' arrays among a launch's arguments (PyTorch's, CuPy's...), read once each
   (interop.c) while the launch is keyed, then packed from what was read, and the launch's
   stream ordered after their exporters' streams. */
typedef struct {
    gh_foreign small[JIT_VIEWS_SMALL];
    gh_foreign *v;    /* small, or a PyMem block */
    int n, cap, next; /* read, room for, the next one to pack */
    gh_foreign_use use;
    int use_ready;
    Py_ssize_t arg;   /* the argument being keyed, for messages */
    PyObject *stream; /* the launch's stream argument (borrowed; NULL: the default stream) */
    gh_state *st;
} jit_views;

typedef struct {
    char *buf;   /* the values */
    void **ptrs; /* one per parameter */
    const gh_param *params;
    int n, nparams;           /* parameters written so far, of nparams */
    PyTypeObject *array_type; /* DeviceArray */
    jit_views *views;         /* the launch's other libraries' arrays, or NULL */
} jit_packer;

/* ---- jit_args.c ---- */
void gh_jit_keybuf_init(jit_keybuf *kb);

/* Free a longer key's block and the list of what it names. */
void gh_jit_keybuf_free(jit_keybuf *kb);

void gh_jit_views_init(jit_views *vs, gh_state *st, PyObject *stream);

void gh_jit_views_free(jit_views *vs);

/* Order the launch's stream (in kernel k's context) after every view's exporter; 0 or -1. */
int gh_jit_views_order(jit_views *vs, gh_kernel *k);

/* Key a launch's arguments as numba types them: 1 keyed, 0 not keyed here (the launch goes
   to numba's rules), -1 error.  With `keep`, objects the key names by address are appended
   to kb->keep (a new list, freed with the key).  Other libraries' arrays are read into `vs`
   (NULL: not keyed here). */
int gh_jit_key_args(gh_state *st, jit_keybuf *kb, PyObject *const *args, Py_ssize_t nargs, int keep,
                    jit_views *vs);

/* numba's layout of a DeviceArray: 'C', 'F' or 'A' (extents of 1 do not decide). */
char gh_jit_array_layout(const gh_devicearray *a);

/* Pack one argument into pk by the plan at *pos (advanced): 1 packed, 0 not packable here
   (the slow path decides, and reports errors); never raises. */
int gh_jit_pack_planned(gh_kernel *k, jit_packer *pk, const unsigned char *plan, Py_ssize_t planlen,
                        Py_ssize_t *pos, PyObject *arg);

/* Append to list `sizes` the sizes of the parameters one argument's plan at *pos makes.
   0, or -1 with ValueError for a malformed plan. */
int gh_jit_plan_sizes(const unsigned char *plan, Py_ssize_t planlen, Py_ssize_t *pos,
                      PyObject *sizes);

#endif /* GPUHOST_JIT_INTERNAL_H */
