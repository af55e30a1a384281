/* Loading libnvrtc at run time (through libload.c).
 *
 * The paths to try come from gpuhost._libpaths.nvrtc_candidates() (GPUHOST_NVRTC, the
 * CUDA toolkit, the pip wheel, the loader's default); the first that loads and has every
 * entry of GH_NVRTC_API_LIST wins.  The outcome is kept for the life of the process.
 */
#include "launch_internal.h"
#include "nvrtc_api.h"

gh_nvrtc_api gh_nvrtc;

static const char *const nvrtc_names[GH_NVRTC__COUNT] = {
#define GH_NVRTC_NAME(ret, name, params) "nvrtc" #name,
    GH_NVRTC_API_LIST(GH_NVRTC_NAME)
#undef GH_NVRTC_NAME
};

static gh_lib nvrtc_lib = {
    .what = "libnvrtc",
    .candidates = "nvrtc_candidates",
    .major = GH_NVRTC_MAJOR,
    .names = nvrtc_names,
    .n_names = GH_NVRTC__COUNT,
    .slots = (void **)&gh_nvrtc,
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

int
gh_nvrtc_ensure(void)
{
    int ok = gh_lib_ensure(&nvrtc_lib);
    if (ok != 0) {
        return ok > 0 ? 0 : -1;
    }
    return gh_raise(GH_EXC_NVRTC_SUPPORT,
                    "%s\nSet GPUHOST_NVRTC to the path of libnvrtc.so.%d, or install the "
                    "CUDA toolkit or the nvidia-cuda-nvrtc wheel",
                    nvrtc_lib.error, GH_NVRTC_MAJOR);
}

const char *
gh_nvrtc_path(void)
{
    return gh_lib_path(&nvrtc_lib);
}

int
gh_check_nvrtc(nvrtcResult res, gh_nvrtc_id id)
{
    const char *text;
    if (res == NVRTC_SUCCESS) {
        return 0;
    }
    text = gh_nvrtc.GetErrorString ? gh_nvrtc.GetErrorString(res) : NULL;
    return gh_raise_nvrtc(res, text ? text : "unknown NVRTC error", nvrtc_names[id], "");
}

static PyObject *
mod_nvrtc_version(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    int major = 0, minor = 0;
    if (gh_nvrtc_ensure() < 0 ||
        gh_check_nvrtc(gh_nvrtc.Version(&major, &minor), GH_NVRTC_Version)) {
        return NULL;
    }
    return Py_BuildValue("(ii)", major, minor);
}

static PyObject *
mod_nvrtc_library(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    if (gh_nvrtc_ensure() < 0) {
        return NULL;
    }
    return PyUnicode_FromString(gh_nvrtc_path());
}

PyMethodDef gh_nvrtc_methods[] = {
    {"nvrtc_version", mod_nvrtc_version, METH_NOARGS,
     "nvrtc_version()\n--\n\n"
     "NVRTC's version as (major, minor). Raises NvrtcSupportError if libnvrtc is not found."},
    {"nvrtc_library", mod_nvrtc_library, METH_NOARGS,
     "nvrtc_library()\n--\n\nThe path of the libnvrtc that was loaded."},
    {NULL, NULL, 0, NULL},
};
