/* display.c: rich displays for Jupyter and IPython. */
#ifndef GPUHOST_DISPLAY_H
#define GPUHOST_DISPLAY_H

#include "state.h"

/* An HTML table: `caption` (or NULL/None), `header` (a sequence of column names, or
   NULL/None: the first cell of each row is its label), `rows` (a sequence of sequences);
   every cell is str()'d and HTML-escaped. New reference or NULL. */
PyObject *gh_html_table(PyObject *caption, PyObject *header, PyObject *rows);
/* IPython's _repr_pretty_: printer.text(repr(obj) + one "\n  label: value" per (label,
   value) tuple of `rows`), repr(obj) alone when `cycle`. New reference or NULL. */
PyObject *gh_pretty(PyObject *printer, int cycle, PyObject *obj, PyObject *rows);
/* A type's _repr_html_: its display `rows` (non-NULL) as an HTML table under `caption`
   (NULL passes its error on); steals both. */
PyObject *gh_repr_html(PyObject *rows, PyObject *caption);
/* A type's _repr_pretty_(printer, cycle) for `obj` from its display `rows` (NULL passes
   its error on); steals `rows`. */
PyObject *gh_repr_pretty(PyObject *obj, PyObject *args, PyObject *rows);
/* `n` bytes for people: "512 bytes", "1.5 MiB". New reference or NULL. */
PyObject *gh_format_bytes(unsigned long long n);
extern PyMethodDef gh_display_methods[];

#endif /* GPUHOST_DISPLAY_H */
