/* Loading a shared library by candidate paths (base/base.h declares it). */
#define PY_SSIZE_T_CLEAN
#include <Python.h> /* first: it sets the feature macros strdup needs */

#include "base_internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { LIB_NOT_TRIED = 0, LIB_OK, LIB_FAILED };

/* Append to lib->error, truncating quietly. */
static void
note(gh_lib *lib, const char *path, const char *why, const char *name)
{
    size_t used = strlen(lib->error);
    if (used < sizeof(lib->error) - 1) {
        snprintf(lib->error + used, sizeof(lib->error) - used, "\n  %s: %s%s", path, why,
                 name ? name : "");
    }
}

/* Try one library; 0 if it loaded with every symbol. Without the GIL. */
static int
try_library(gh_lib *lib, const char *path)
{
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        const char *why = dlerror();
        note(lib, path, why ? why : "cannot be loaded", NULL);
        return -1;
    }
    int required = lib->n_required > 0 ? lib->n_required : lib->n_names;
    for (int i = 0; i < required; i++) {
        lib->slots[i] = dlsym(handle, lib->names[i]);
        if (lib->slots[i] == NULL) {
            note(lib, path, "has no ", lib->names[i]);
            dlclose(handle);
            return -1;
        }
    }
    snprintf(lib->path, sizeof(lib->path), "%s", path);
    lib->handle = handle;
    return 0;
}

static void
free_paths(char **paths)
{
    for (char **p = paths; *p != NULL; p++) {
        free(*p);
    }
    free(paths);
}

/* A NULL-terminated malloc'd copy of the candidate paths; NULL with an exception. */
static char **
candidate_paths(gh_lib *lib)
{
    PyObject *mod = NULL, *seq = NULL, *list = NULL;
    char **paths = NULL;
    Py_ssize_t n;

    mod = PyImport_ImportModule("gpuhost._libpaths");
    list = mod ? PyObject_CallMethod(mod, lib->candidates, "i", lib->major) : NULL;
    seq = list ? PySequence_Fast(list, "the candidate paths must be a list") : NULL;
    if (seq == NULL) {
        goto done;
    }
    n = PySequence_Fast_GET_SIZE(seq);
    if ((paths = calloc((size_t)n + 1, sizeof(char *))) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *s = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, i));
        if (s == NULL || (paths[i] = strdup(s)) == NULL) {
            if (s != NULL) {
                PyErr_NoMemory();
            }
            free_paths(paths);
            paths = NULL;
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
gh_lib_ensure(gh_lib *lib)
{
    char **paths;
    if (atomic_load_explicit(&lib->state, memory_order_acquire) == LIB_OK) {
        return 1;
    }
    if (atomic_load(&lib->state) == LIB_NOT_TRIED) {
        if ((paths = candidate_paths(lib)) == NULL) {
            return -1;
        }
        Py_BEGIN_ALLOW_THREADS
        pthread_mutex_lock(&lib->lock);
        if (atomic_load(&lib->state) == LIB_NOT_TRIED) {
            int ok = 0;
            snprintf(lib->error, sizeof(lib->error), "%s was not found. Tried:", lib->what);
            for (char **p = paths; *p != NULL && !ok; p++) {
                ok = try_library(lib, *p) == 0;
            }
            atomic_store_explicit(&lib->state, ok ? LIB_OK : LIB_FAILED, memory_order_release);
        }
        pthread_mutex_unlock(&lib->lock);
        Py_END_ALLOW_THREADS
        free_paths(paths);
    }
    return atomic_load_explicit(&lib->state, memory_order_acquire) == LIB_OK;
}

void *
gh_lib_optional(gh_lib *lib, int index)
{
    void *sym;
    if (atomic_load_explicit(&lib->state, memory_order_acquire) != LIB_OK || index < 0 ||
        index >= lib->n_names) {
        return NULL;
    }
    pthread_mutex_lock(&lib->lock);
    if ((sym = lib->slots[index]) == NULL) {
        sym = lib->slots[index] = dlsym(lib->handle, lib->names[index]);
    }
    pthread_mutex_unlock(&lib->lock);
    return sym;
}

const char *
gh_lib_path(gh_lib *lib)
{
    return atomic_load(&lib->state) == LIB_OK ? lib->path : NULL;
}
