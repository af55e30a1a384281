/* csrc/base/'s private header: what only base/'s files share.  Each file of base/ above
 * base.h's parts includes it; the files of those parts (cuda_api.c, errors.c, live.c)
 * include their own part alone, and no file of another folder includes it.
 */
#ifndef GPUHOST_BASE_INTERNAL_H
#define GPUHOST_BASE_INTERNAL_H

#include "base.h"

/* ---- display.c ---- */
/* An HTML table: `caption` (or NULL/None), `header` (a sequence of column names, or
   NULL/None: the first cell of each row is its label), `rows` (a sequence of sequences);
   every cell is str()'d and HTML-escaped. New reference or NULL. */
PyObject *gh_html_table(PyObject *caption, PyObject *header, PyObject *rows);

/* IPython's _repr_pretty_: printer.text(repr(obj) + one "\n  label: value" per (label,
   value) tuple of `rows`), repr(obj) alone when `cycle`. New reference or NULL. */
PyObject *gh_pretty(PyObject *printer, int cycle, PyObject *obj, PyObject *rows);

/* ---- services.c ---- */
/* Add `value` to type `tp`'s attributes (an immutable type's too: gpuhost's own files and
   modules extending its types, once, at module init or import); 0 or -1. */
int gh_type_attach(PyTypeObject *tp, const char *name, PyObject *value);

#endif /* GPUHOST_BASE_INTERNAL_H */
