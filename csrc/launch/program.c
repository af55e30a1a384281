/* NVRTC compilation: one nvrtcProgram created, compiled and destroyed per call.
 *
 * gpuhost/compiler.py builds the option list and keeps the caches; this file only runs
 * NVRTC (with the GIL released) and hands back the outputs, the log and the lowered names.
 */
#include "launch_internal.h"

#include "nvrtc_api.h"

#include <string.h>

enum { OUT_PTX, OUT_CUBIN, OUT_LTOIR, OUT_COUNT };

static const char *const out_names[OUT_COUNT] = {"ptx", "cubin", "ltoir"};

/* One compilation.  The inputs are UTF-8 buffers of str objects the caller keeps alive;
   everything else is filled by run_job() without the GIL and freed by job_clear(). */
typedef struct {
    const char *source, *name;
    const char **options, **exprs;
    int n_options, n_exprs;
    int want[OUT_COUNT];
    nvrtcProgram prog;
    nvrtcResult res;    /* the first failing call's result, or NVRTC_SUCCESS */
    gh_nvrtc_id failed; /* ... and that call */
    int no_memory;
    char *log;
    size_t log_size;
    char *out[OUT_COUNT];
    size_t out_size[OUT_COUNT];
} compile_job;

/* 0 if `res` is a success, else record it as the job's failure; -1. */
static int
step(compile_job *job, nvrtcResult res, gh_nvrtc_id id)
{
    if (res == NVRTC_SUCCESS) {
        return 0;
    }
    job->res = res;
    job->failed = id;
    return -1;
}

/* A PyMem_RawMalloc'd buffer of `size` bytes (at least one); NULL notes no_memory. */
static char *
job_alloc(compile_job *job, size_t size)
{
    char *buf = PyMem_RawMalloc(size ? size : 1);
    if (buf == NULL) {
        job->no_memory = 1;
    }
    return buf;
}

/* Fetch output `which` of the compiled program; 0 or -1.  Without the GIL. */
static int
fetch_output(compile_job *job, int which)
{
    static const gh_nvrtc_id size_ids[OUT_COUNT] = {GH_NVRTC_GetPTXSize, GH_NVRTC_GetCUBINSize,
                                                    GH_NVRTC_GetLTOIRSize};
    static const gh_nvrtc_id data_ids[OUT_COUNT] = {GH_NVRTC_GetPTX, GH_NVRTC_GetCUBIN,
                                                    GH_NVRTC_GetLTOIR};
    nvrtcResult (*size_fn)(nvrtcProgram, size_t *);
    nvrtcResult (*data_fn)(nvrtcProgram, char *);
    size_t size = 0;

    switch (which) {
        case OUT_PTX:
            size_fn = gh_nvrtc.GetPTXSize, data_fn = gh_nvrtc.GetPTX;
            break;
        case OUT_CUBIN:
            size_fn = gh_nvrtc.GetCUBINSize, data_fn = gh_nvrtc.GetCUBIN;
            break;
        default:
            size_fn = gh_nvrtc.GetLTOIRSize, data_fn = gh_nvrtc.GetLTOIR;
            break;
    }
    if (step(job, size_fn(job->prog, &size), size_ids[which]) < 0) {
        return -1;
    }
    if (size == 0) { /* not produced for this target (e.g. no cubin for compute_XY) */
        return 0;
    }
    if ((job->out[which] = job_alloc(job, size)) == NULL) {
        return -1;
    }
    job->out_size[which] = size;
    return step(job, data_fn(job->prog, job->out[which]), data_ids[which]);
}

/* Create, compile, and fetch the log and the wanted outputs.  Without the GIL: touches
   no Python object.  On failure job->res/failed (or no_memory) say what went wrong; the
   log is fetched even when the compilation failed. */
static void
run_job(compile_job *job)
{
    nvrtcResult compiled;
    size_t size = 0;

    if (step(job, gh_nvrtc.CreateProgram(&job->prog, job->source, job->name, 0, NULL, NULL),
             GH_NVRTC_CreateProgram) < 0) {
        job->prog = NULL;
        return;
    }
    for (int i = 0; i < job->n_exprs; i++) {
        if (step(job, gh_nvrtc.AddNameExpression(job->prog, job->exprs[i]),
                 GH_NVRTC_AddNameExpression) < 0) {
            return;
        }
    }
    compiled = gh_nvrtc.CompileProgram(job->prog, job->n_options, job->options);
    if (step(job, gh_nvrtc.GetProgramLogSize(job->prog, &size), GH_NVRTC_GetProgramLogSize) < 0 ||
        (job->log = job_alloc(job, size + 1)) == NULL ||
        step(job, gh_nvrtc.GetProgramLog(job->prog, job->log), GH_NVRTC_GetProgramLog) < 0) {
        return;
    }
    job->log[size] = '\0'; /* size counts NVRTC's own terminator; this one guards size 0 */
    job->log_size = strlen(job->log);
    if (step(job, compiled, GH_NVRTC_CompileProgram) < 0) {
        return;
    }
    for (int i = 0; i < OUT_COUNT; i++) {
        if (job->want[i] && fetch_output(job, i) < 0) {
            return;
        }
    }
}

static void
job_clear(compile_job *job)
{
    if (job->prog != NULL) {
        gh_nvrtc.DestroyProgram(&job->prog); /* fails only for an invalid program */
        job->prog = NULL;
    }
    PyMem_RawFree(job->log);
    job->log = NULL;
    for (int i = 0; i < OUT_COUNT; i++) {
        PyMem_RawFree(job->out[i]);
        job->out[i] = NULL;
    }
    PyMem_Free(job->options);
    PyMem_Free(job->exprs);
    job->options = job->exprs = NULL;
}

/* The log as str; undecodable bytes replaced (a log quotes the user's source). */
static PyObject *
job_log(compile_job *job)
{
    return PyUnicode_DecodeUTF8(job->log ? job->log : "", (Py_ssize_t)job->log_size, "replace");
}

/* Raise for a failed job; -1. */
static int
job_raise(compile_job *job)
{
    PyObject *log;
    const char *text;
    int ret;

    if (job->no_memory) {
        PyErr_NoMemory();
        return -1;
    }
    if (job->failed != GH_NVRTC_CompileProgram) {
        return gh_check_nvrtc(job->res, job->failed);
    }
    if ((log = job_log(job)) == NULL || (text = PyUnicode_AsUTF8(log)) == NULL) {
        Py_XDECREF(log);
        return -1;
    }
    ret = gh_raise_nvrtc(job->res, gh_nvrtc.GetErrorString(job->res), "nvrtcCompileProgram", text);
    Py_DECREF(log);
    return ret;
}

/* {name: bytes or None} for the wanted outputs; PTX loses NVRTC's terminating NUL. */
static PyObject *
job_outputs(compile_job *job)
{
    PyObject *outputs = PyDict_New();
    for (int i = 0; outputs != NULL && i < OUT_COUNT; i++) {
        size_t size = job->out_size[i];
        PyObject *value;
        if (!job->want[i]) {
            continue;
        }
        if (i == OUT_PTX && size > 0 && job->out[i][size - 1] == '\0') {
            size--;
        }
        value =
            size ? PyBytes_FromStringAndSize(job->out[i], (Py_ssize_t)size) : Py_NewRef(Py_None);
        if (value == NULL || PyDict_SetItemString(outputs, out_names[i], value) < 0) {
            Py_CLEAR(outputs);
        }
        Py_XDECREF(value);
    }
    return outputs;
}

/* {expression: lowered (mangled) name}; with the GIL, while the program lives. */
static PyObject *
job_lowered(compile_job *job)
{
    PyObject *lowered = PyDict_New();
    for (int i = 0; lowered != NULL && i < job->n_exprs; i++) {
        const char *name = NULL; /* owned by the program */
        PyObject *value;
        if (gh_check_nvrtc(gh_nvrtc.GetLoweredName(job->prog, job->exprs[i], &name),
                           GH_NVRTC_GetLoweredName) < 0) {
            Py_CLEAR(lowered);
            break;
        }
        value = PyUnicode_FromString(name);
        if (value == NULL || PyDict_SetItemString(lowered, job->exprs[i], value) < 0) {
            Py_CLEAR(lowered);
        }
        Py_XDECREF(value);
    }
    return lowered;
}

/* Borrowed UTF-8 pointers to the str items of `seq` in a new PyMem array; *fast holds the
   items alive (new reference).  0, or -1 with TypeError/ValueError naming `what`. */
static int
str_array(PyObject *seq, const char *what, PyObject **fast, const char ***out, int *n)
{
    Py_ssize_t len;

    *fast = PyUnicode_Check(seq) || PyBytes_Check(seq) ? NULL : PySequence_Fast(seq, "");
    if (*fast == NULL) {
        if (PyErr_Occurred() == NULL || PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Format(PyExc_TypeError, "nvrtc_compile: %s must be a sequence of str, not %.100s",
                         what, Py_TYPE(seq)->tp_name);
        }
        return -1;
    }
    len = PySequence_Fast_GET_SIZE(*fast);
    if (len > INT_MAX / 2) {
        PyErr_Format(PyExc_ValueError, "nvrtc_compile: too many %s", what);
        return -1;
    }
    *n = (int)len;
    *out = PyMem_New(const char *, len ? len : 1);
    if (*out == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(*fast, i); /* borrowed */
        Py_ssize_t size;
        if (!PyUnicode_Check(item)) {
            PyErr_Format(PyExc_TypeError, "nvrtc_compile: %s must be str, not %.100s (item %zd)",
                         what, Py_TYPE(item)->tp_name, i);
            return -1;
        }
        if (((*out)[i] = PyUnicode_AsUTF8AndSize(item, &size)) == NULL) {
            return -1;
        }
        if ((size_t)size != strlen((*out)[i])) {
            PyErr_Format(PyExc_ValueError, "nvrtc_compile: %s item %zd contains a NUL character",
                         what, i);
            return -1;
        }
    }
    return 0;
}

/* Fill job->want from `outputs`, a sequence of "ptx" / "cubin" / "ltoir"; 0 or -1. */
static int
parse_outputs(compile_job *job, PyObject *outputs)
{
    PyObject *fast = NULL;
    const char **names = NULL;
    int n = 0, ret = -1;

    if (str_array(outputs, "outputs", &fast, &names, &n) < 0) {
        goto done;
    }
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < OUT_COUNT && strcmp(names[i], out_names[k]) != 0) {
            k++;
        }
        if (k == OUT_COUNT) {
            PyErr_Format(PyExc_ValueError,
                         "nvrtc_compile: unknown output %R; expected 'ptx', 'cubin' or 'ltoir'",
                         PySequence_Fast_GET_ITEM(fast, i));
            goto done;
        }
        job->want[k] = 1;
    }
    ret = 0;
done:
    PyMem_Free(names);
    Py_XDECREF(fast);
    return ret;
}

static PyObject *
mod_nvrtc_compile(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *source, *name, *options, *exprs, *outputs;
    PyObject *opt_fast = NULL, *expr_fast = NULL, *result = NULL;
    PyObject *out = NULL, *log = NULL, *lowered = NULL;
    compile_job job;
    Py_ssize_t source_len;

    memset(&job, 0, sizeof(job));
    if (!PyArg_ParseTuple(args, "UUOOO:nvrtc_compile", &source, &name, &options, &exprs,
                          &outputs)) {
        return NULL;
    }
    if ((job.source = PyUnicode_AsUTF8AndSize(source, &source_len)) == NULL ||
        (job.name = PyUnicode_AsUTF8(name)) == NULL) {
        goto done;
    }
    if ((size_t)source_len != strlen(job.source)) {
        PyErr_SetString(PyExc_ValueError, "the source contains a NUL character");
        goto done;
    }
    if (str_array(options, "options", &opt_fast, &job.options, &job.n_options) < 0 ||
        str_array(exprs, "name_expressions", &expr_fast, &job.exprs, &job.n_exprs) < 0 ||
        parse_outputs(&job, outputs) < 0 || gh_nvrtc_ensure() < 0) {
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    run_job(&job);
    Py_END_ALLOW_THREADS
    if (job.no_memory || job.res != NVRTC_SUCCESS) {
        job_raise(&job);
        goto done;
    }
    if ((out = job_outputs(&job)) != NULL && (log = job_log(&job)) != NULL &&
        (lowered = job_lowered(&job)) != NULL) {
        result = PyTuple_Pack(3, out, log, lowered);
    }
done:
    job_clear(&job);
    Py_XDECREF(lowered);
    Py_XDECREF(log);
    Py_XDECREF(out);
    Py_XDECREF(expr_fast);
    Py_XDECREF(opt_fast);
    return result;
}

static PyObject *
mod_nvrtc_supported_archs(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    int n = 0;
    int *archs = NULL;
    PyObject *result = NULL;

    if (gh_nvrtc_ensure() < 0 ||
        gh_check_nvrtc(gh_nvrtc.GetNumSupportedArchs(&n), GH_NVRTC_GetNumSupportedArchs) < 0) {
        return NULL;
    }
    if ((archs = PyMem_New(int, n > 0 ? n : 1)) == NULL) {
        return PyErr_NoMemory();
    }
    if (gh_check_nvrtc(gh_nvrtc.GetSupportedArchs(archs), GH_NVRTC_GetSupportedArchs) == 0 &&
        (result = PyTuple_New(n)) != NULL) {
        for (int i = 0; i < n; i++) {
            PyObject *v = PyLong_FromLong(archs[i]);
            if (v == NULL) {
                Py_CLEAR(result);
                break;
            }
            PyTuple_SET_ITEM(result, i, v);
        }
    }
    PyMem_Free(archs);
    return result;
}

PyMethodDef gh_program_methods[] = {
    {"nvrtc_compile", mod_nvrtc_compile, METH_VARARGS,
     "nvrtc_compile(source, name, options, name_expressions, outputs, /)\n"
     "--\n"
     "\n"
     "Compile CUDA C++ source with NVRTC. Private: use gpuhost.compile().\n"
     "\n"
     "The options are passed as they are; each name expression is registered for its lowered\n"
     "name. The GIL is released while NVRTC works. PTX comes without its trailing NUL.\n"
     "\n"
     "Parameters\n"
     "----------\n"
     "source : str\n"
     "    The CUDA C++ source.\n"
     "name : str\n"
     "    The program's name, used in the log.\n"
     "options : sequence of str\n"
     "    NVRTC's options, e.g. '-arch=sm_90'.\n"
     "name_expressions : sequence of str\n"
     "    Expressions (e.g. 'k<float>') whose mangled names to return.\n"
     "outputs : sequence of str\n"
     "    What to fetch: any of 'ptx', 'cubin', 'ltoir'.\n"
     "\n"
     "Returns\n"
     "-------\n"
     "tuple\n"
     "    (outputs, log, lowered_names): {output: bytes, or None where the target gives none\n"
     "    (no cubin for compute_XY, no PTX with -dlto)}, the compiler's log as str (warnings\n"
     "    on success), and {expression: mangled name}.\n"
     "\n"
     "Raises\n"
     "------\n"
     "NvrtcError\n"
     "    Compilation failed; its .log holds the compiler's log.\n"
     "NvrtcSupportError\n"
     "    libnvrtc was not found.\n"
     "TypeError, ValueError\n"
     "    Bad arguments.\n"
     "\n"
     "Examples\n"
     "--------\n"
     ">>> out, log, names = gpuhost._core.nvrtc_compile(\n"
     "...     \"__global__ void k(float *x) { x[0] = 1; }\", \"k.cu\", [\"-arch=compute_90\"],\n"
     "...     [\"k\"], [\"ptx\"])\n"
     ">>> b\".entry\" in out[\"ptx\"], names[\"k\"]\n"
     "(True, '_Z1kPf')"},
    {"nvrtc_supported_archs", mod_nvrtc_supported_archs, METH_NOARGS,
     "nvrtc_supported_archs()\n"
     "--\n"
     "\n"
     "The architectures NVRTC can compile for (nvrtcGetSupportedArchs).\n"
     "\n"
     "Returns\n"
     "-------\n"
     "tuple of int\n"
     "    Compute capabilities as major * 10 + minor (75, 80, ..., 120), oldest first.\n"
     "\n"
     "Raises\n"
     "------\n"
     "NvrtcSupportError\n"
     "    libnvrtc was not found.\n"
     "\n"
     "Examples\n"
     "--------\n"
     ">>> 90 in gpuhost._core.nvrtc_supported_archs()\n"
     "True"},
    {NULL, NULL, 0, NULL},
};
