/* gpuhost's records of its objects that own driver resources, for the pytest plugin's leak
 * check: how many allocations, streams, events and modules are alive (counted as they are
 * made and freed), and, while recording, which ones were made since recording began and by
 * which Python line, in a table by address that each one's dealloc takes it out of.  So
 * the check asks gpuhost, never the garbage collector's view of the heap.
 */
#include "live.h"

#include <stdint.h>
#if PY_VERSION_HEX < 0x030B0000
#include <frameobject.h> /* PyFrame_GetBack */
#endif

static const char *const kind_names[] = {
#define GH_LIVE_NAME(e, name) #name,
    GH_LIVE_LIST(GH_LIVE_NAME)
#undef GH_LIVE_NAME
};

/* A slot whose record was removed: probing goes on past it. */
static char removed_mark;
#define REMOVED ((PyObject *)&removed_mark)

/* ---- the table ---- */

static size_t
slot_of(const gh_live_records *live, const PyObject *obj)
{
    uint64_t h = (uint64_t)(uintptr_t)obj >> 4;
    h *= 0x9E3779B97F4A7C15ull;
    return (size_t)(h ^ (h >> 29)) & (live->cap - 1);
}

/* Put `rec` in the first slot not taken; the table has room. */
static void
place(gh_live_records *live, const gh_live_record *rec)
{
    size_t i = slot_of(live, rec->obj);
    while (live->table[i].obj != NULL && live->table[i].obj != REMOVED) {
        i = (i + 1) & (live->cap - 1);
    }
    if (live->table[i].obj == NULL) {
        live->used++;
    }
    live->table[i] = *rec;
    live->n++;
}

/* Room for one more record, with the slots at most 3/4 taken; 0, or -1 (no memory, no
   exception set). */
static int
make_room(gh_live_records *live)
{
    gh_live_record *old = live->table, *grown;
    size_t old_cap = live->cap, cap = old_cap ? old_cap : 64;

    if (old != NULL && (live->used + 1) * 4 <= old_cap * 3) {
        return 0;
    }
    while ((live->n + 1) * 2 > cap) { /* removed slots go: the records take at most half */
        cap *= 2;
    }
    grown = PyMem_Calloc(cap, sizeof(*grown));
    if (grown == NULL) {
        return -1;
    }
    live->table = grown;
    live->cap = cap;
    live->used = live->n = 0;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].obj != NULL && old[i].obj != REMOVED) {
            place(live, &old[i]);
        }
    }
    PyMem_Free(old);
    return 0;
}

/* Drop every record. */
static void
clear_records(gh_live_records *live)
{
    gh_live_record *table = live->table;
    size_t cap = live->cap;

    live->table = NULL;
    live->cap = live->used = live->n = 0;
    live->lost = 0;
    for (size_t i = 0; i < cap; i++) {
        if (table[i].obj != NULL && table[i].obj != REMOVED) {
            Py_XDECREF(table[i].code); /* a code object: frees nothing of gpuhost's */
        }
    }
    PyMem_Free(table);
}

/* ---- where an object is made ---- */

/* Whether `code` is of a file under the prefix `skip` (gpuhost's own Python). */
static int
is_skipped(PyObject *skip, PyCodeObject *code)
{
    PyObject *file = code->co_filename;
    return skip != NULL && PyUnicode_Check(file) &&
           PyUnicode_Tailmatch(file, skip, 0, PY_SSIZE_T_MAX, -1) == 1;
}

/* The code object (new reference) and line of the innermost Python frame of this thread
   outside `skip`, else of the innermost frame; NULL with no frame.  Leaves no exception. */
static PyObject *
origin(PyObject *skip, int *line)
{
    PyFrameObject *frame = PyThreadState_GetFrame(PyThreadState_Get());
    PyCodeObject *found = NULL;

    while (frame != NULL) {
        PyCodeObject *code = PyFrame_GetCode(frame);
        int skipped = is_skipped(skip, code);
        PyFrameObject *back;
        if (found == NULL || !skipped) {
            Py_XSETREF(found, code);
            *line = PyFrame_GetLineNumber(frame);
        }
        else {
            Py_DECREF(code);
        }
        if (!skipped) {
            Py_DECREF(frame);
            break;
        }
        back = PyFrame_GetBack(frame);
        Py_DECREF(frame);
        frame = back;
    }
    return (PyObject *)found;
}

void
gh_live_note(gh_state *st, gh_live_kind kind, PyObject *obj)
{
    gh_live_records *live = &st->live;
    gh_live_record rec = {obj, NULL, 0, (int)kind};
    PyObject *type, *value, *tb;

    PyErr_Fetch(&type, &value, &tb); /* none is set where objects are made; kept if one is */
    rec.code = origin(live->skip, &rec.line);
    if (make_room(live) < 0) { /* (after origin(): room made is used at once) */
        live->lost++;
        Py_XDECREF(rec.code);
    }
    else {
        place(live, &rec);
    }
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
}

void
gh_live_forget(gh_state *st, PyObject *obj)
{
    gh_live_records *live = &st->live;
    size_t i = slot_of(live, obj);

    while (live->table[i].obj != NULL) {
        if (live->table[i].obj == obj) {
            PyObject *code = live->table[i].code;
            live->table[i].obj = REMOVED;
            live->table[i].code = NULL;
            live->n--;
            Py_XDECREF(code);
            return;
        }
        i = (i + 1) & (live->cap - 1);
    }
}

void
gh_live_each(gh_state *st, gh_live_kind kind, void (*each)(PyObject *obj, void *arg), void *arg)
{
    PyObject *list = PyList_New(0);
    for (gh_live_link *l = st->live.lists[kind]; list != NULL && l != NULL; l = l->next) {
        if (PyList_Append(list, l->obj) < 0) {
            Py_CLEAR(list);
        }
    }
    if (list == NULL) {
        PyErr_Clear();
        return;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        each(PyList_GET_ITEM(list, i), arg);
    }
    Py_DECREF(list);
}

void
gh_live_free(gh_state *st)
{
    st->live.recording = 0;
    Py_CLEAR(st->live.skip);
    clear_records(&st->live);
}

/* ---- module functions ---- */

static PyObject *
live_counts(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    gh_state *st = gh_state_of_module(module);
    PyObject *counts = PyDict_New(), *n;

    for (int k = 0; counts != NULL && k < GH_LIVE__COUNT; k++) {
        n = PyLong_FromSsize_t(st->live.counts[k]);
        if (n == NULL || PyDict_SetItemString(counts, kind_names[k], n) < 0) {
            Py_CLEAR(counts);
        }
        Py_XDECREF(n);
    }
    return counts;
}

static PyObject *
live_record(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"skip", NULL};
    gh_state *st = gh_state_of_module(module);
    PyObject *skip = Py_None;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:_live_record", kwlist, &skip)) {
        return NULL;
    }
    if (skip != Py_None && !PyUnicode_Check(skip)) {
        PyErr_Format(PyExc_TypeError, "_live_record() skip must be a str or None, not %s",
                     Py_TYPE(skip)->tp_name);
        return NULL;
    }
    clear_records(&st->live);
    Py_XSETREF(st->live.skip, skip == Py_None ? NULL : Py_NewRef(skip));
    st->live.recording = 1;
    Py_RETURN_NONE;
}

/* (kind, object, file, line, function) of one record; new reference or NULL. */
static PyObject *
record_tuple(const gh_live_record *rec)
{
    PyCodeObject *code = (PyCodeObject *)rec->code;
    if (code == NULL) {
        return Py_BuildValue("(sOOOO)", kind_names[rec->kind], rec->obj, Py_None, Py_None, Py_None);
    }
#if PY_VERSION_HEX >= 0x030B0000
    return Py_BuildValue("(sOOiO)", kind_names[rec->kind], rec->obj, code->co_filename, rec->line,
                         code->co_qualname);
#else
    return Py_BuildValue("(sOOiO)", kind_names[rec->kind], rec->obj, code->co_filename, rec->line,
                         code->co_name);
#endif
}

/* The records, copied (strong references) before any Python object is made: making one
   may run the collector, which frees and makes gpuhost objects, changing the table. */
static gh_live_record *
snapshot(gh_live_records *live, Py_ssize_t *n)
{
    gh_live_record *copy = PyMem_Calloc(live->n ? live->n : 1, sizeof(*copy));
    *n = 0;
    if (copy == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    for (size_t i = 0; i < live->cap; i++) {
        if (live->table[i].obj != NULL && live->table[i].obj != REMOVED) {
            copy[*n] = live->table[i];
            Py_INCREF(copy[*n].obj);
            Py_XINCREF(copy[*n].code);
            (*n)++;
        }
    }
    return copy;
}

static PyObject *
live_recorded(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    gh_live_records *live = &gh_state_of_module(module)->live;
    Py_ssize_t n, lost = live->lost;
    gh_live_record *copy = snapshot(live, &n);
    PyObject *records = copy != NULL ? PyList_New(n) : NULL, *item;

    for (Py_ssize_t i = 0; i < n; i++) {
        if (records != NULL) {
            if ((item = record_tuple(&copy[i])) == NULL) {
                Py_CLEAR(records);
            }
            else {
                PyList_SET_ITEM(records, i, item);
            }
        }
        Py_DECREF(copy[i].obj);
        Py_XDECREF(copy[i].code);
    }
    PyMem_Free(copy);
    return records == NULL ? NULL : Py_BuildValue("(Nn)", records, lost);
}

static PyObject *
live_record_stop(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    gh_state *st = gh_state_of_module(module);
    st->live.recording = 0;
    Py_CLEAR(st->live.skip);
    clear_records(&st->live);
    Py_RETURN_NONE;
}

static PyObject *
live_kept(PyObject *module, PyObject *obj)
{
    gh_state *st = gh_state_of_module(module);
    if (st->live.n > 0) {
        gh_live_forget(st, obj);
    }
    Py_RETURN_NONE;
}

PyMethodDef gh_live_methods[] = {
    {"_live_counts", live_counts, METH_NOARGS,
     "_live_counts()\n--\n\n"
     "How many gpuhost allocations, streams, events and modules are alive (gpuhost "
     "internal).\n\n"
     "Counted as they are made and freed; the pytest plugin's live_counts().\n\n"
     "Returns\n"
     "-------\n"
     "dict\n"
     "    {'Allocation': n, 'Stream': n, 'Event': n, 'Module': n}.\n\n"
     "Examples\n"
     "--------\n"
     ">>> before = gpuhost._core._live_counts()['Event']\n"
     ">>> e = gpuhost.event()\n"
     ">>> gpuhost._core._live_counts()['Event'] - before\n"
     "1"},
    {"_live_record", (PyCFunction)(void (*)(void))live_record, METH_VARARGS | METH_KEYWORDS,
     "_live_record(skip=None)\n--\n\n"
     "Start recording the allocations, streams, events and modules made from now on, and\n"
     "where (gpuhost internal: the pytest plugin's leak check).\n\n"
     "Each one made is noted with the file, line and function of the innermost Python frame\n"
     "whose file is not under `skip`; its record goes when it is freed. Records made\n"
     "earlier are dropped.\n\n"
     "Parameters\n"
     "----------\n"
     "skip : str, optional\n"
     "    A path prefix, gpuhost's package folder: the frames of its files are looked past.\n\n"
     "Raises\n"
     "------\n"
     "TypeError\n"
     "    `skip` is neither a str nor None.\n\n"
     "Examples\n"
     "--------\n"
     ">>> gpuhost._core._live_record()\n"
     ">>> s = gpuhost.stream()\n"
     ">>> [(kind, obj is s) for kind, obj, *where in gpuhost._core._live_recorded()[0]]\n"
     "[('Stream', True)]\n"
     ">>> gpuhost._core._live_record_stop()"},
    {"_live_recorded", live_recorded, METH_NOARGS,
     "_live_recorded()\n--\n\n"
     "The objects made since _live_record() that are still alive (gpuhost internal).\n\n"
     "Returns\n"
     "-------\n"
     "tuple\n"
     "    (records, lost): records is a list of (kind, object, file, line, function), with\n"
     "    file, line and function None where no Python frame made it; lost, how many were\n"
     "    made but could not be noted (out of memory).\n\n"
     "Examples\n"
     "--------\n"
     ">>> gpuhost._core._live_record()\n"
     ">>> e = gpuhost.event()\n"
     ">>> records, lost = gpuhost._core._live_recorded()\n"
     ">>> [(kind, function) for kind, _, _, _, function in records], lost\n"
     "([('Event', '<module>')], 0)\n"
     ">>> gpuhost._core._live_record_stop()"},
    {"_live_record_stop", live_record_stop, METH_NOARGS,
     "_live_record_stop()\n--\n\n"
     "Stop recording and drop the records (gpuhost internal).\n\n"
     "Examples\n"
     "--------\n"
     ">>> gpuhost._core._live_record()\n"
     ">>> e = gpuhost.event()\n"
     ">>> gpuhost._core._live_record_stop()\n"
     ">>> gpuhost._core._live_recorded()\n"
     "([], 0)"},
    {"_live_kept", live_kept, METH_O,
     "_live_kept(obj, /)\n--\n\n"
     "Drop the record of `obj`: a cache of gpuhost's keeps it by design (gpuhost internal).\n\n"
     "The kernel caches (a RawKernel's, a jit dispatcher's, the copy kernel's) call it for the\n"
     "modules they load, which the leak check then does not report. Nothing happens for an\n"
     "object with no record.\n\n"
     "Examples\n"
     "--------\n"
     ">>> gpuhost._core._live_record()\n"
     ">>> s = gpuhost.stream()\n"
     ">>> gpuhost._core._live_kept(s)\n"
     ">>> gpuhost._core._live_recorded()\n"
     "([], 0)\n"
     ">>> gpuhost._core._live_record_stop()"},
    {NULL, NULL, 0, NULL},
};
