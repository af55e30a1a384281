/* csrc/base/'s public header, the ground floor every file of csrc/ includes.  It gathers its
 * parts, each standing on the one before: the driver's table (cuda_api.h, which the fake
 * driver includes too), the module state (state.h), errors, the one raising path (errors.h),
 * and the records of live objects (live.h); then declares the loader of libraries by path,
 * the registered Python services and the display helpers.  What only base/'s own files share
 * is in base_internal.h.
 */
#ifndef GPUHOST_BASE_H
#define GPUHOST_BASE_H

#include "state.h"
#include "errors.h"
#include "live.h"

/* ---- display.c ---- */
/* display.c: rich displays for Jupyter and IPython. */
/* A type's _repr_html_: its display `rows` (non-NULL) as an HTML table under `caption`
   (NULL passes its error on); steals both. */
PyObject *gh_repr_html(PyObject *rows, PyObject *caption);
/* A type's _repr_pretty_(printer, cycle) for `obj` from its display `rows` (NULL passes
   its error on); steals `rows`. */
PyObject *gh_repr_pretty(PyObject *obj, PyObject *args, PyObject *rows);
/* `n` bytes for people: "512 bytes", "1.5 MiB". New reference or NULL. */
PyObject *gh_format_bytes(unsigned long long n);
extern PyMethodDef gh_display_methods[];

/* ---- libload.c ---- */
/* Loading a shared library at run time by a list of candidate paths: the one place that
 * calls dlopen/dlsym for the libraries gpuhost finds on its own (NVRTC, NCCL).
 *
 * The paths come from a function of gpuhost._libpaths, called with `major`; the first path
 * that loads and has every required symbol in `names` wins, and its addresses fill `slots`;
 * the optional ones (those a newer version added) are looked up when first used.  The
 * outcome (success, or the list of what was tried and why each failed) is kept for the life
 * of the process.
 */
typedef struct {
    const char *what;         /* "libnvrtc", for messages */
    const char *candidates;   /* the gpuhost._libpaths function that lists the paths */
    int major;                /* its argument */
    const char *const *names; /* symbol names, n_names of them */
    int n_names;
    int n_required;       /* the first n_required must load (0: all); the rest are optional */
    void **slots;         /* filled with the symbols' addresses */
    void *handle;         /* dlopen's, once loaded */
    pthread_mutex_t lock; /* PTHREAD_MUTEX_INITIALIZER */
    atomic_int state;     /* 0 not tried, 1 loaded, 2 failed */
    char error[4096];     /* "<what> was not found. Tried:\n  path: why..." */
    char path[1024];      /* the path that loaded */
} gh_lib;

/* Load `lib` the first time (without the GIL while dlopen runs); 1 if it is loaded, 0 if it
   could not be (lib->error says why; nothing raised), -1 with an exception (the candidate
   list could not be had). */
int gh_lib_ensure(gh_lib *lib);

/* The address of optional symbol `index` (n_required or past) of a loaded `lib`, looked up
   the first time it is asked for; NULL where the library has none (an older version). */
void *gh_lib_optional(gh_lib *lib, int index);

/* The path that loaded, or NULL. */
const char *gh_lib_path(gh_lib *lib);

/* ---- services.c ---- */
/* services.c: calling the Python functions gpuhost's Python side registers once (the module
 * state's GH_HELPER_LIST), and extending a type from another file (C) or module (Python).
 */
/* Call the Python function registered as helper `h` with `args` (a tuple; NULL: no
   arguments).  New reference, or NULL (RuntimeError if gpuhost's Python side never
   registered it). */
PyObject *gh_helper_call(gh_state *st, gh_helper h, PyObject *args);
/* gh_helper_call with keyword arguments `kwargs` (a dict, or NULL; only with a tuple of
   args). */
PyObject *gh_helper_call_kw(gh_state *st, gh_helper h, PyObject *args, PyObject *kwargs);
/* Add each method of `defs` (NULL-terminated) to `tp` as gh_type_attach does; 0 or -1. */
int gh_type_attach_methods(PyTypeObject *tp, PyMethodDef *defs);
/* _set_helpers(**functions), _attach(type, name, value): module functions. */
extern PyMethodDef gh_services_methods[];
/* Visit, clear (module teardown) the registered helpers. */
int gh_services_traverse(gh_state *st, visitproc visit, void *arg);
void gh_services_clear(gh_state *st);

#endif /* GPUHOST_BASE_H */
