/* libnccl loaded at run time (through libload.c), NCCL's errors as NcclError, and the
 * module functions that need no communicator (version, unique id, groups).
 *
 * Importing gpuhost never loads libnccl: the first call that needs it does.  The paths come
 * from gpuhost._libpaths.nccl_candidates() (GPUHOST_NCCL, the nvidia-nccl-cu13/cu12 wheels
 * on sys.path, CUDA_HOME, the loader's default).
 */

#include "nccl_internal.h"

#include <string.h>

gh_nccl_api gh_nccl;

static const char *const nccl_names[GH_NCCL__COUNT] = {
#define GH_NCCL_NAME(ret, name, params) "nccl" #name,
    GH_NCCL_API_LIST(GH_NCCL_NAME)
#undef GH_NCCL_NAME
};

static gh_lib nccl_lib = {
    .what = "libnccl",
    .candidates = "nccl_candidates",
    .major = GH_NCCL_MAJOR,
    .names = nccl_names,
    .n_names = GH_NCCL__COUNT,
    .n_required = GH_NCCL__FIRST_OPTIONAL,
    .slots = (void **)&gh_nccl,
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

int
gh_nccl_ensure(void)
{
    int ok = gh_lib_ensure(&nccl_lib);
    if (ok != 0) {
        return ok > 0 ? 0 : -1;
    }
    return gh_raise(GH_EXC_NCCL_SUPPORT,
                    "%s\nSet GPUHOST_NCCL to the path of libnccl.so.%d, or install NCCL (pip "
                    "install nvidia-nccl-cu13)",
                    nccl_lib.error, GH_NCCL_MAJOR);
}

int
gh_nccl_optional(gh_nccl_id id)
{
    int version = 0;
    if (gh_nccl_ensure() < 0) {
        return -1;
    }
    if (gh_lib_optional(&nccl_lib, (int)id) != NULL) {
        return 0;
    }
    gh_nccl.GetVersion(&version);
    return gh_raise(GH_EXC_NCCL_SUPPORT,
                    "the loaded libnccl (%d.%d.%d, %s) has no %s: NCCL %s added it; install a "
                    "newer NCCL (pip install nvidia-nccl-cu13) or set GPUHOST_NCCL to one",
                    version / 10000, version / 100 % 100, version % 100, gh_lib_path(&nccl_lib),
                    nccl_names[id], GH_NCCL_OPTIONAL_SINCE);
}

const char *
gh_nccl_name(gh_nccl_id id)
{
    return nccl_names[id];
}

int
gh_raise_nccl(gh_ncclResult_t res, gh_nccl_id id, gh_ncclComm_t comm)
{
    const char *last = NULL;
    PyObject *exc;
    if (gh_nccl.GetLastError != NULL) { /* the process's last error; comm is unused */
        last = gh_nccl.GetLastError(comm);
    }
    PyObject *args = Py_BuildValue("(iss)", (int)res, nccl_names[id], last ? last : "");
    if (args == NULL) {
        return -1;
    }
    PyObject *cls = gh_exception_class(NULL, GH_EXC_NCCL);
    exc = cls != NULL ? PyObject_Call(cls, args, NULL) : NULL;
    Py_XDECREF(cls);
    Py_DECREF(args);
    if (exc != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return -1;
}

/* ---- module functions ---- */

static PyObject *
mod_nccl_version(PyObject *module, PyObject *unused)
{
    int version = 0;
    gh_ncclResult_t res;
    (void)module;
    (void)unused;
    if (gh_nccl_ensure() < 0) {
        return NULL;
    }
    if ((res = gh_nccl.GetVersion(&version)) != GH_ncclSuccess) {
        return gh_raise_nccl(res, GH_NCCL_GetVersion, NULL), NULL;
    }
    return PyLong_FromLong(version);
}

static PyObject *
mod_nccl_library(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    if (gh_nccl_ensure() < 0) {
        return NULL;
    }
    return PyUnicode_FromString(gh_lib_path(&nccl_lib));
}

static PyObject *
mod_nccl_available(PyObject *module, PyObject *unused)
{
    int ok;
    (void)module;
    (void)unused;
    if ((ok = gh_lib_ensure(&nccl_lib)) < 0) {
        return NULL;
    }
    return PyBool_FromLong(ok);
}

static PyObject *
mod_nccl_unique_id(PyObject *module, PyObject *unused)
{
    gh_ncclUniqueId id;
    gh_ncclResult_t res;
    (void)module;
    (void)unused;
    if (gh_nccl_ensure() < 0) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    res = gh_nccl.GetUniqueId(&id);
    Py_END_ALLOW_THREADS
    if (res != GH_ncclSuccess) {
        return gh_raise_nccl(res, GH_NCCL_GetUniqueId, NULL), NULL;
    }
    return PyBytes_FromStringAndSize(id.internal, GH_NCCL_UNIQUE_ID_BYTES);
}

/* ncclGroupStart (start) or ncclGroupEnd; the end launches the group's work, so it runs
   without the GIL. */
static PyObject *
group_call(int start)
{
    gh_ncclResult_t res;
    if (gh_nccl_ensure() < 0) {
        return NULL;
    }
    if (start) {
        res = gh_nccl.GroupStart();
    }
    else {
        Py_BEGIN_ALLOW_THREADS
        res = gh_nccl.GroupEnd();
        Py_END_ALLOW_THREADS
    }
    /* ncclInProgress: a non-blocking communicator's part goes on on NCCL's thread; that
       communicator's next call waits for it (gh_nccl_comm_live) */
    if (res != GH_ncclSuccess && res != GH_ncclInProgress) {
        return gh_raise_nccl(res, start ? GH_NCCL_GroupStart : GH_NCCL_GroupEnd, NULL), NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
mod_nccl_group_start(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return group_call(1);
}

static PyObject *
mod_nccl_group_end(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return group_call(0);
}

/* NCCL's text for a result code, or None when libnccl cannot be loaded. */
static PyObject *
mod_nccl_error_string(PyObject *module, PyObject *arg)
{
    long code = PyLong_AsLong(arg);
    const char *text;
    (void)module;
    if (code == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (gh_lib_ensure(&nccl_lib) <= 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    text = gh_nccl.GetErrorString((gh_ncclResult_t)code);
    if (text == NULL) {
        Py_RETURN_NONE;
    }
    return PyUnicode_FromString(text);
}

static PyObject *
mod_nccl_has_optional(PyObject *module, PyObject *arg)
{
    const char *name = PyUnicode_AsUTF8(arg);
    (void)module;
    if (name == NULL || gh_nccl_ensure() < 0) {
        return NULL;
    }
    for (int i = GH_NCCL__FIRST_OPTIONAL; i < GH_NCCL__COUNT; i++) {
        if (strcmp(nccl_names[i], name) == 0) {
            return PyBool_FromLong(gh_lib_optional(&nccl_lib, i) != NULL);
        }
    }
    PyErr_Format(PyExc_ValueError, "%s is not one of gpuhost's optional NCCL entry points", name);
    return NULL;
}

static PyMethodDef nccl_module_methods[] = {
    {"nccl_version", mod_nccl_version, METH_NOARGS,
     "nccl_version()\n--\n\nThe loaded libnccl's version code (22809 for 2.28.9); loads it."},
    {"nccl_library", mod_nccl_library, METH_NOARGS,
     "nccl_library()\n--\n\nThe path of the libnccl that was loaded; loads it."},
    {"nccl_available", mod_nccl_available, METH_NOARGS,
     "nccl_available()\n--\n\nWhether libnccl can be loaded (tries once)."},
    {"nccl_unique_id", mod_nccl_unique_id, METH_NOARGS,
     "nccl_unique_id()\n--\n\nncclGetUniqueId: 128 bytes naming a new clique."},
    {"nccl_group_start", mod_nccl_group_start, METH_NOARGS,
     "nccl_group_start()\n--\n\nncclGroupStart."},
    {"nccl_group_end", mod_nccl_group_end, METH_NOARGS,
     "nccl_group_end()\n--\n\nncclGroupEnd: launches the group's work."},
    {"nccl_has_optional", mod_nccl_has_optional, METH_O,
     "nccl_has_optional(name, /)\n--\n\nWhether the loaded libnccl has entry point `name` "
     "(\"ncclCommRegister\"); loads it."},
    {"_nccl_error_string", mod_nccl_error_string, METH_O,
     "_nccl_error_string(code, /)\n--\n\nncclGetErrorString(code), or None without libnccl."},
    {NULL, NULL, 0, NULL},
};

extern const int gh_nccl_abi_checked;

int
gh_nccl_init(PyObject *module, gh_state *st)
{
    (void)st;
    if (PyModule_AddIntConstant(module, "_nccl_abi_checked", gh_nccl_abi_checked) < 0) {
        return -1;
    }
    return PyModule_AddFunctions(module, nccl_module_methods);
}
