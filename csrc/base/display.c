/* Rich displays for Jupyter and IPython: the HTML tables behind every _repr_html_ and the
 * text behind every _repr_pretty_, for the C types and (through the module functions at the
 * end) the Python ones, so that all of gpuhost's objects show alike in a notebook.
 * Nothing here touches the driver; callers pass what they already know.
 */
#include "base_internal.h"

#include <stdio.h>

/* str(obj) with & < > " ' replaced by HTML entities. New reference or NULL. */
static PyObject *
html_escape(PyObject *obj)
{
    static const char *const from[] = {"&", "<", ">", "\"", "'"};
    static const char *const to[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&#x27;"};
    PyObject *text = PyObject_Str(obj);

    for (size_t i = 0; text != NULL && i < sizeof(from) / sizeof(from[0]); i++) {
        PyObject *f = PyUnicode_FromString(from[i]), *t = PyUnicode_FromString(to[i]), *next;
        next = (f != NULL && t != NULL) ? PyUnicode_Replace(text, f, t, -1) : NULL;
        Py_XDECREF(f);
        Py_XDECREF(t);
        Py_SETREF(text, next);
    }
    return text;
}

/* Append "<tag style=...>escaped str(cell)</tag>" to `parts`; 0 or -1. */
static int
append_cell(PyObject *parts, const char *tag, PyObject *cell)
{
    PyObject *text = html_escape(cell), *piece;
    int res;

    if (text == NULL) {
        return -1;
    }
    piece = PyUnicode_FromFormat("<%s style=\"text-align:left\">%U</%s>", tag, text, tag);
    Py_DECREF(text);
    if (piece == NULL) {
        return -1;
    }
    res = PyList_Append(parts, piece);
    Py_DECREF(piece);
    return res;
}

static int
append_str(PyObject *parts, const char *s)
{
    PyObject *piece = PyUnicode_FromString(s);
    int res = piece == NULL ? -1 : PyList_Append(parts, piece);
    Py_XDECREF(piece);
    return res;
}

/* One <tr> of the cells of sequence `row`; the first is a <th> when `label_first`. */
static int
append_row(PyObject *parts, PyObject *row, int label_first, const char *tag)
{
    PyObject *cells = PySequence_Fast(row, "every row of an HTML table must be a sequence");
    int res = -1;

    if (cells == NULL || append_str(parts, "<tr>") < 0) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(cells); i++) {
        const char *cell_tag = (label_first && i == 0) ? "th" : tag;
        if (append_cell(parts, cell_tag, PySequence_Fast_GET_ITEM(cells, i)) < 0) {
            goto done;
        }
    }
    res = append_str(parts, "</tr>");
done:
    Py_XDECREF(cells);
    return res;
}

PyObject *
gh_html_table(PyObject *caption, PyObject *header, PyObject *rows)
{
    PyObject *parts = PyList_New(0), *seq = NULL, *sep = NULL, *res = NULL;

    if (parts == NULL || append_str(parts, "<table class=\"gpuhost\">") < 0) {
        goto done;
    }
    if (caption != NULL && caption != Py_None) {
        if (append_cell(parts, "caption", caption) < 0) {
            goto done;
        }
    }
    if (header != NULL && header != Py_None) {
        if (append_str(parts, "<thead>") < 0 || append_row(parts, header, 0, "th") < 0 ||
            append_str(parts, "</thead>") < 0) {
            goto done;
        }
    }
    seq = PySequence_Fast(rows, "the rows of an HTML table must be a sequence");
    if (seq == NULL || append_str(parts, "<tbody>") < 0) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        if (append_row(parts, PySequence_Fast_GET_ITEM(seq, i), header == NULL || header == Py_None,
                       "td") < 0) {
            goto done;
        }
    }
    if (append_str(parts, "</tbody></table>") < 0 || (sep = PyUnicode_FromString("")) == NULL) {
        goto done;
    }
    res = PyUnicode_Join(sep, parts);
done:
    Py_XDECREF(sep);
    Py_XDECREF(seq);
    Py_XDECREF(parts);
    return res;
}

PyObject *
gh_pretty(PyObject *printer, int cycle, PyObject *obj, PyObject *rows)
{
    PyObject *text = PyObject_Repr(obj), *seq = NULL, *res = NULL;

    if (text == NULL) {
        return NULL;
    }
    if (!cycle) {
        seq = PySequence_Fast(rows, "the rows of a display must be a sequence");
        if (seq == NULL) {
            goto done;
        }
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
            PyObject *row = PySequence_Fast_GET_ITEM(seq, i), *label, *value, *next;
            if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != 2) {
                PyErr_SetString(PyExc_TypeError, "every row of a display must be a "
                                                 "(label, value) tuple");
                goto done;
            }
            label = PyTuple_GET_ITEM(row, 0);
            value = PyTuple_GET_ITEM(row, 1);
            next = PyUnicode_FromFormat("%U\n  %S: %S", text, label, value);
            Py_SETREF(text, next);
            if (text == NULL) {
                goto done;
            }
        }
    }
    res = PyObject_CallMethod(printer, "text", "O", text);
done:
    Py_XDECREF(seq);
    Py_XDECREF(text);
    return res;
}

PyObject *
gh_repr_html(PyObject *rows, PyObject *caption)
{
    PyObject *res = caption != NULL ? gh_html_table(caption, NULL, rows) : NULL;
    Py_DECREF(rows);
    Py_XDECREF(caption);
    return res;
}

PyObject *
gh_repr_pretty(PyObject *obj, PyObject *args, PyObject *rows)
{
    PyObject *printer, *res = NULL;
    int cycle;

    if (rows != NULL && PyArg_ParseTuple(args, "Op:_repr_pretty_", &printer, &cycle)) {
        res = gh_pretty(printer, cycle, obj, rows);
    }
    Py_XDECREF(rows);
    return res;
}

PyObject *
gh_format_bytes(unsigned long long n)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    char buf[64];
    double v = (double)n;
    int u = -1;

    if (n < 1024) {
        return PyUnicode_FromFormat("%llu bytes", n);
    }
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, sizeof(buf), "%.1f %s", v, units[u]);
    return PyUnicode_FromString(buf);
}

/* ---- module functions, for the Python classes' displays ---- */

static PyObject *
mod_html_table(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *caption, *header, *rows;
    if (!PyArg_ParseTuple(args, "OOO:html_table", &caption, &header, &rows)) {
        return NULL;
    }
    return gh_html_table(caption, header, rows);
}

static PyObject *
mod_pretty(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *printer, *obj, *rows;
    int cycle;
    if (!PyArg_ParseTuple(args, "OpOO:pretty", &printer, &cycle, &obj, &rows)) {
        return NULL;
    }
    return gh_pretty(printer, cycle, obj, rows);
}

static PyObject *
mod_format_bytes(PyObject *Py_UNUSED(module), PyObject *arg)
{
    unsigned long long n = PyLong_AsUnsignedLongLong(arg);
    if (n == (unsigned long long)-1 && PyErr_Occurred()) {
        return NULL;
    }
    return gh_format_bytes(n);
}

PyMethodDef gh_display_methods[] = {
    {"html_table", mod_html_table, METH_VARARGS,
     "html_table(caption, header, rows, /)\n--\n\n"
     "An HTML table: `caption` (or None), `header` (column names, or None: the first cell "
     "of each row is its label), `rows` (sequences of cells); every cell is str()'d and "
     "HTML-escaped (gpuhost internal, for _repr_html_)."},
    {"pretty", mod_pretty, METH_VARARGS,
     "pretty(printer, cycle, obj, rows, /)\n--\n\n"
     "IPython's _repr_pretty_: repr(obj), then one '  label: value' line per (label, "
     "value) of `rows` unless `cycle` (gpuhost internal)."},
    {"format_bytes", mod_format_bytes, METH_O,
     "format_bytes(n, /)\n--\n\n"
     "`n` bytes for people: '512 bytes', '1.5 MiB' (gpuhost internal)."},
    {NULL, NULL, 0, NULL},
};
