/* Loading libnvrtc at run time: the one place that calls dlopen/dlsym for NVRTC.
 *
 * The paths to try come from gpuhost._libpaths.nvrtc_candidates() (GPUHOST_NVRTC, the
 * CUDA toolkit, the pip wheel, the loader's default); the first that loads and has every
 * entry of GH_NVRTC_API_LIST wins.  The outcome is kept for the life of the process.
 */
#include "module.h"
#include "nvrtc_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

gh_nvrtc_api gh_nvrtc;

enum { NVRTC_NOT_TRIED = 0, NVRTC_OK, NVRTC_FAILED };

static pthread_mutex_t nvrtc_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int nvrtc_state = NVRTC_NOT_TRIED;
static char nvrtc_error[4096];
static char nvrtc_path[1024];

static const char *const nvrtc_names[GH_NVRTC__COUNT] = {
#define GH_NVRTC_NAME(name) "nvrtc" #name,
    GH_NVRTC_API_LIST(GH_NVRTC_NAME)
#undef GH_NVRTC_NAME
};

/* Append to nvrtc_error, truncating quietly. */
static void
note(const char *fmt, const char *a, const char *b)
{
    size_t used = strlen(nvrtc_error);
    if (used < sizeof(nvrtc_error) - 1) {
        snprintf(nvrtc_error + used, sizeof(nvrtc_error) - used, fmt, a, b);
    }
}

/* Try one library; 0 if it loaded with every entry point. Without the GIL. */
static int
try_library(const char *path)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    void **slots = (void **)&gh_nvrtc;
    if (lib == NULL) {
        const char *why = dlerror();
        note("\n  %s: %s", path, why ? why : "cannot be loaded");
        return -1;
    }
    for (int i = 0; i < GH_NVRTC__COUNT; i++) {
        slots[i] = dlsym(lib, nvrtc_names[i]);
        if (slots[i] == NULL) {
            note("\n  %s: has no %s", path, nvrtc_names[i]);
            dlclose(lib);
            return -1;
        }
    }
    snprintf(nvrtc_path, sizeof(nvrtc_path), "%s", path);
    return 0;
}

/* A NULL-terminated malloc'd copy of the candidate paths; NULL with an exception. */
static char **
candidate_paths(void)
{
    PyObject *mod = NULL, *seq = NULL, *list = NULL;
    char **paths = NULL;
    Py_ssize_t n;

    mod = PyImport_ImportModule("gpuhost._libpaths");
    if (mod == NULL) {
        goto done;
    }
    list = PyObject_CallMethod(mod, "nvrtc_candidates", "i", GH_NVRTC_MAJOR);
    seq = list ? PySequence_Fast(list, "nvrtc_candidates() must return a list") : NULL;
    if (seq == NULL) {
        goto done;
    }
    n = PySequence_Fast_GET_SIZE(seq);
    paths = calloc((size_t)n + 1, sizeof(char *));
    if (paths == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *s = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, i));
        if (s == NULL || (paths[i] = strdup(s)) == NULL) {
            for (Py_ssize_t j = 0; j < i; j++) {
                free(paths[j]);
            }
            free(paths);
            paths = NULL;
            if (s != NULL) {
                PyErr_NoMemory();
            }
            goto done;
        }
    }
done:
    Py_XDECREF(seq);
    Py_XDECREF(list);
    Py_XDECREF(mod);
    return paths;
}

int
gh_nvrtc_ensure(void)
{
    char **paths;
    if (atomic_load_explicit(&nvrtc_state, memory_order_acquire) == NVRTC_OK) {
        return 0;
    }
    if (atomic_load(&nvrtc_state) == NVRTC_NOT_TRIED) {
        paths = candidate_paths();
        if (paths == NULL) {
            return -1;
        }
        Py_BEGIN_ALLOW_THREADS
        pthread_mutex_lock(&nvrtc_lock);
        if (atomic_load(&nvrtc_state) == NVRTC_NOT_TRIED) {
            int ok = 0;
            snprintf(nvrtc_error, sizeof(nvrtc_error), "libnvrtc was not found. Tried:");
            for (char **p = paths; *p != NULL && !ok; p++) {
                ok = try_library(*p) == 0;
            }
            atomic_store_explicit(&nvrtc_state, ok ? NVRTC_OK : NVRTC_FAILED, memory_order_release);
        }
        pthread_mutex_unlock(&nvrtc_lock);
        Py_END_ALLOW_THREADS
        for (char **p = paths; *p != NULL; p++) {
            free(*p);
        }
        free(paths);
    }
    if (atomic_load_explicit(&nvrtc_state, memory_order_acquire) == NVRTC_OK) {
        return 0;
    }
    return gh_raise("NvrtcSupportError",
                    "%s\nSet GPUHOST_NVRTC to the path of libnvrtc.so.%d, or install the "
                    "CUDA toolkit or the nvidia-cuda-nvrtc wheel",
                    nvrtc_error, GH_NVRTC_MAJOR);
}

const char *
gh_nvrtc_path(void)
{
    return atomic_load(&nvrtc_state) == NVRTC_OK ? nvrtc_path : NULL;
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
