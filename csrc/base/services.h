/* services.c: calling the Python functions gpuhost's Python side registers once (state.h's
 * GH_HELPER_LIST), and extending a type from another file (C) or module (Python).
 */
#ifndef GPUHOST_SERVICES_H
#define GPUHOST_SERVICES_H

#include "state.h"

/* Call the Python function registered as helper `h` with `args` (a tuple; NULL: no
   arguments).  New reference, or NULL (RuntimeError if gpuhost's Python side never
   registered it). */
PyObject *gh_helper_call(gh_state *st, gh_helper h, PyObject *args);
/* gh_helper_call with keyword arguments `kwargs` (a dict, or NULL; only with a tuple of
   args). */
PyObject *gh_helper_call_kw(gh_state *st, gh_helper h, PyObject *args, PyObject *kwargs);
/* Add `value` to type `tp`'s attributes (an immutable type's too: gpuhost's own files and
   modules extending its types, once, at module init or import); 0 or -1. */
int gh_type_attach(PyTypeObject *tp, const char *name, PyObject *value);
/* Add each method of `defs` (NULL-terminated) to `tp` as gh_type_attach does; 0 or -1. */
int gh_type_attach_methods(PyTypeObject *tp, PyMethodDef *defs);
/* _set_helpers(**functions), _attach(type, name, value): module functions. */
extern PyMethodDef gh_services_methods[];
/* Visit, clear (module teardown) the registered helpers. */
int gh_services_traverse(gh_state *st, visitproc visit, void *arg);
void gh_services_clear(gh_state *st);

#endif /* GPUHOST_SERVICES_H */
