/* The Python functions the C core calls, registered once by gpuhost's Python side
 * (_core._set_helpers(name=function)) and kept in the module state, so that no C path
 * imports a Python module or looks up a name to call one.
 */
#include "base_internal.h"

static const char *const helper_names[GH_HELPER__COUNT] = {
#define GH_HELPER_NAME(e, name) name,
    GH_HELPER_LIST(GH_HELPER_NAME)
#undef GH_HELPER_NAME
};

PyObject *
gh_helper_call(gh_state *st, gh_helper h, PyObject *args)
{
    return gh_helper_call_kw(st, h, args, NULL);
}

PyObject *
gh_helper_call_kw(gh_state *st, gh_helper h, PyObject *args, PyObject *kwargs)
{
    PyObject *fn = st->helpers[h];
    if (fn == NULL) {
        return PyErr_Format(PyExc_RuntimeError,
                            "gpuhost._core: the Python helper %s was never registered (import "
                            "gpuhost, not gpuhost._core alone)",
                            helper_names[h]);
    }
    if (args == NULL) {
        return PyObject_CallNoArgs(fn);
    }
    return PyObject_Call(fn, args, kwargs);
}

/* _core._helper_registered(name): whether helper `name` was registered (for the tests). */
static PyObject *
mod_helper_registered(PyObject *module, PyObject *name)
{
    gh_state *st = gh_state_of_module(module);
    for (int h = 0; h < GH_HELPER__COUNT; h++) {
        if (PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, helper_names[h]) == 0) {
            return PyBool_FromLong(st->helpers[h] != NULL);
        }
    }
    return PyErr_Format(PyExc_ValueError, "no helper is called %R", name);
}

static PyObject *
mod_set_helpers(PyObject *module, PyObject *args, PyObject *kwargs)
{
    gh_state *st = gh_state_of_module(module);
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    if (PyTuple_GET_SIZE(args) != 0) {
        PyErr_SetString(PyExc_TypeError, "_set_helpers() takes keyword arguments only");
        return NULL;
    }
    while (kwargs != NULL && PyDict_Next(kwargs, &pos, &key, &value)) {
        int h;
        for (h = 0; h < GH_HELPER__COUNT; h++) {
            if (PyUnicode_CompareWithASCIIString(key, helper_names[h]) == 0) {
                break;
            }
        }
        if (h == GH_HELPER__COUNT) {
            PyErr_Format(PyExc_TypeError, "_set_helpers(): no helper is called %R", key);
            return NULL;
        }
        if (!PyCallable_Check(value)) {
            PyErr_Format(PyExc_TypeError, "_set_helpers(): %R is not callable", value);
            return NULL;
        }
        Py_XSETREF(st->helpers[h], Py_NewRef(value));
    }
    Py_RETURN_NONE;
}

int
gh_services_traverse(gh_state *st, visitproc visit, void *arg)
{
    for (int h = 0; h < GH_HELPER__COUNT; h++) {
        Py_VISIT(st->helpers[h]);
    }
    return 0;
}

void
gh_services_clear(gh_state *st)
{
    for (int h = 0; h < GH_HELPER__COUNT; h++) {
        Py_CLEAR(st->helpers[h]);
    }
}

int
gh_type_attach(PyTypeObject *tp, const char *name, PyObject *value)
{
    int rc = PyDict_SetItemString(tp->tp_dict, name, value);
    PyType_Modified(tp);
    return rc;
}

int
gh_type_attach_methods(PyTypeObject *tp, PyMethodDef *defs)
{
    for (PyMethodDef *d = defs; d->ml_name != NULL; d++) {
        PyObject *descr = PyDescr_NewMethod(tp, d);
        int rc = descr != NULL ? gh_type_attach(tp, d->ml_name, descr) : -1;
        Py_XDECREF(descr);
        if (rc < 0) {
            return -1;
        }
    }
    return 0;
}

/* _attach(type, name, value): gpuhost's Python side giving one of gpuhost's own types a
   method or property written in Python, once, at import (the types are immutable to
   everyone else).  gpuhost/_methods.py takes it out of the module's namespace on its first
   import and keeps it, so the public module does not offer it. */
static PyObject *
mod_attach(PyObject *module, PyObject *args)
{
    PyTypeObject *tp;
    const char *name;
    PyObject *value;
    if (!PyArg_ParseTuple(args, "O!sO:_attach", &PyType_Type, &tp, &name, &value)) {
        return NULL;
    }
    if (!(tp->tp_flags & Py_TPFLAGS_HEAPTYPE) || PyType_GetModule(tp) != module) {
        PyErr_Clear();
        return PyErr_Format(PyExc_TypeError, "_attach() takes a type of gpuhost._core, not %s",
                            tp->tp_name);
    }
    if (gh_type_attach(tp, name, value) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

PyMethodDef gh_services_methods[] = {
    {"_helper_registered", mod_helper_registered, METH_O,
     "_helper_registered(name, /)\n--\n\nWhether the C core's helper `name` is registered."},
    {"_attach", mod_attach, METH_VARARGS,
     "_attach(type, name, value)\n--\n\n"
     "Give one of gpuhost's types a method or property written in Python (gpuhost's own "
     "modules do, once, at import)."},
    {"_set_helpers", (PyCFunction)(void (*)(void))mod_set_helpers, METH_VARARGS | METH_KEYWORDS,
     "_set_helpers(**functions)\n--\n\n"
     "Register the Python functions the C core calls (gpuhost's own modules do, once)."},
    {NULL, NULL, 0, NULL},
};
