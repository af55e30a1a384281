/* Loading libcuda at run time: the one place that calls dlopen/dlsym for the driver.
 *
 * Search order: GPUHOST_CUDA_DRIVER, then NUMBA_CUDA_DRIVER (each a file path; the first
 * one set is the only one tried, so a typo is reported rather than silently bypassed),
 * then libcuda.so.1.  Every entry of GH_CUDA_API_LIST is resolved through
 * cuGetProcAddress at its ABI version, then cuInit(0) runs; the outcome is kept for the
 * life of the process.  Loading runs with the GIL released, under a lock.  The loader
 * raises nothing: it returns how loading went, and errors.c (above it) raises.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h> /* first; only to release the GIL while loading: this file raises nothing */

#include "cuda_api.h"
#include "cuda_errors.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

gh_cuda_api gh_cu;

enum { LOAD_NOT_TRIED = 0, LOAD_OK, LOAD_FAILED };

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int load_state = LOAD_NOT_TRIED;
static char load_error[2048]; /* why the load failed, for gh_driver_load_error() */
static char loaded_path[1024];
static int driver_version;

static const char *const cu_names[GH_CU__COUNT] = {
#define GH_CU_NAME(name, version) "cu" #name,
    GH_CUDA_API_LIST(GH_CU_NAME)
#undef GH_CU_NAME
};

static const int cu_versions[GH_CU__COUNT] = {
#define GH_CU_VERSION(name, version) version,
    GH_CUDA_API_LIST(GH_CU_VERSION)
#undef GH_CU_VERSION
};

const char *
gh_cu_name(gh_cu_id id)
{
    return (id >= 0 && id < GH_CU__COUNT) ? cu_names[id] : "cu<unknown>";
}

const char *
gh_cu_result_name(CUresult res)
{
    switch ((int)res) {
#define GH_ERROR_CASE(name, code)                                                                  \
    case code:                                                                                     \
        return #name;
        GH_CUDA_ERROR_LIST(GH_ERROR_CASE)
#undef GH_ERROR_CASE
        default:
            return NULL;
    }
}

const char *
gh_driver_path(void)
{
    return atomic_load(&load_state) == LOAD_OK ? loaded_path : NULL;
}

int
gh_driver_version(void)
{
    return driver_version;
}

typedef CUresult (*getproc_v1_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*getproc_v2_fn)(const char *, void **, int, cuuint64_t,
                                  CUdriverProcAddressQueryResult *);

/* Describe a CUresult the driver returned while loading, in load_error. */
static void
describe_failure(const char *path, const char *call, CUresult res)
{
    const char *name = gh_cu_result_name(res);
    const char *text = NULL;
    if (gh_cu.GetErrorString == NULL || gh_cu.GetErrorString(res, &text) != CUDA_SUCCESS) {
        text = NULL;
    }
    snprintf(load_error, sizeof(load_error),
             "the CUDA driver %s is unusable: %s failed with %s (%d)%s%s", path, call,
             name ? name : "an unknown error", (int)res, text ? ": " : "", text ? text : "");
}

/* Resolve every entry of the list into gh_cu; 0, or -1 with load_error filled. */
static int
resolve_all(void *lib, const char *path)
{
    getproc_v2_fn getproc2 = (getproc_v2_fn)dlsym(lib, "cuGetProcAddress_v2");
    getproc_v1_fn getproc1 = (getproc_v1_fn)dlsym(lib, "cuGetProcAddress");
    void **slots = (void **)&gh_cu;

    if (getproc2 == NULL && getproc1 == NULL) {
        snprintf(load_error, sizeof(load_error),
                 "%s is not a CUDA driver library: it has no cuGetProcAddress", path);
        return -1;
    }
    for (int i = 0; i < GH_CU__COUNT; i++) {
        CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SUCCESS;
        CUresult res;
        slots[i] = NULL;
        if (getproc2 != NULL) {
            res = getproc2(cu_names[i], &slots[i], cu_versions[i],
                           CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found);
        }
        else {
            res =
                getproc1(cu_names[i], &slots[i], cu_versions[i], CU_GET_PROC_ADDRESS_LEGACY_STREAM);
        }
        if (res != CUDA_SUCCESS && res != CUDA_ERROR_NOT_FOUND) {
            describe_failure(path, "cuGetProcAddress", res);
            return -1;
        }
        if (res != CUDA_SUCCESS || found != CU_GET_PROC_ADDRESS_SUCCESS || slots[i] == NULL) {
            slots[i] = NULL;
            if (cu_versions[i] > GH_MIN_DRIVER_VERSION) {
                continue; /* optional: newer than the oldest driver gpuhost supports */
            }
            snprintf(load_error, sizeof(load_error),
                     "the CUDA driver %s is too old or incomplete: it has no %s at ABI "
                     "version %d (gpuhost needs a driver for CUDA %d.%d or newer)",
                     path, cu_names[i], cu_versions[i], GH_MIN_DRIVER_VERSION / 1000,
                     GH_MIN_DRIVER_VERSION % 1000 / 10);
            return -1;
        }
    }
    return 0;
}

/* Check the driver's version and initialize it; 0 or -1 with load_error filled. */
static int
init_driver(const char *path)
{
    CUresult res = gh_cu.DriverGetVersion(&driver_version);
    int count = 0;

    if (res != CUDA_SUCCESS) {
        describe_failure(path, "cuDriverGetVersion", res);
        return -1;
    }
    if (driver_version < GH_MIN_DRIVER_VERSION) {
        snprintf(load_error, sizeof(load_error),
                 "the CUDA driver %s supports CUDA %d.%d; gpuhost needs %d.%d or newer", path,
                 driver_version / 1000, driver_version % 1000 / 10, GH_MIN_DRIVER_VERSION / 1000,
                 GH_MIN_DRIVER_VERSION % 1000 / 10);
        return -1;
    }
    res = gh_cu.Init(0);
    if (res != CUDA_SUCCESS) {
        describe_failure(path, "cuInit", res);
        return -1;
    }
    res = gh_cu.DeviceGetCount(&count);
    if (res != CUDA_SUCCESS) {
        describe_failure(path, "cuDeviceGetCount", res);
        return -1;
    }
    if (count == 0) {
        snprintf(load_error, sizeof(load_error),
                 "the CUDA driver %s loaded, but it reports no CUDA device", path);
        return -1;
    }
    return 0;
}

/* The one library to try, and how it was chosen. */
static const char *
choose_library(const char **how)
{
    const char *vars[] = {"GPUHOST_CUDA_DRIVER", "NUMBA_CUDA_DRIVER"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *value = getenv(vars[i]);
        if (value != NULL && value[0] != '\0') {
            *how = vars[i];
            return value;
        }
    }
    *how = "the system loader's default";
    return "libcuda.so.1";
}

/* Set in a child made by fork() after the driver was loaded (only the fork handler writes
   it): the driver cannot be used there. */
static volatile int forked_after_load;

/* What every driver entry point becomes in a forked child.  The child's copy of the
   driver's state belongs to the parent: calling into it can crash or, worse, appear to work
   (an idle stream "synchronizes"), and freeing what the child inherited at exit can crash
   it.  So the child never enters the driver: each call fails, and the error carries
   gh_fork_message.  Every entry returns CUresult and this one ignores its arguments,
   which the platform ABIs gpuhost builds for allow through a cast pointer. */
static CUresult
forked_child_call(void)
{
    return CUDA_ERROR_NOT_INITIALIZED;
}

static void
on_fork_child(void)
{
    if (atomic_load(&load_state) == LOAD_OK) {
        /* Only stores: a fork handler may run with other threads' locks held. */
        PFN_cuGetErrorString_v6000 error_string = gh_cu.GetErrorString;
        PFN_cuGetErrorName_v6000 error_name = gh_cu.GetErrorName;
#define GH_CU_STUB(name, version)                                                                  \
    gh_cu.name = (PFN_cu##name##_v##version)(void (*)(void))forked_child_call;
        GH_CUDA_API_LIST(GH_CU_STUB)
#undef GH_CU_STUB
        /* Pure table lookups in the library: error messages still name the code. */
        gh_cu.GetErrorString = error_string;
        gh_cu.GetErrorName = error_name;
        forked_after_load = 1;
    }
}

int
gh_driver_forked(void)
{
    return forked_after_load;
}

const char gh_fork_message[] =
    "CUDA was initialized in this process's parent before it forked, and a child made by "
    "fork() cannot use CUDA (the driver does not support it). Start worker processes with "
    "multiprocessing's 'spawn' or 'forkserver' method, or fork before the first CUDA call";

/* Called once, under load_lock, without the GIL. */
static int
load_driver(void)
{
    const char *how = NULL;
    const char *path = choose_library(&how);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);

    if (lib == NULL) {
        const char *why = dlerror();
        snprintf(load_error, sizeof(load_error),
                 "no CUDA driver library was found. Tried: %s (from %s): %s. Set "
                 "GPUHOST_CUDA_DRIVER to the path of libcuda.so.1 if it is installed elsewhere",
                 path, how, why ? why : "not found");
        return -1;
    }
    snprintf(loaded_path, sizeof(loaded_path), "%s", path);
    if (resolve_all(lib, path) < 0 || init_driver(path) < 0) {
        /* Keep the library mapped: its functions may already be in gh_cu. */
        return -1;
    }
    pthread_atfork(NULL, NULL, on_fork_child);
    return 0;
}

gh_driver_status
gh_driver_load(void)
{
    if (atomic_load_explicit(&load_state, memory_order_acquire) == LOAD_OK) {
        return forked_after_load ? GH_DRIVER_FORKED : GH_DRIVER_OK;
    }
    if (atomic_load(&load_state) == LOAD_NOT_TRIED) {
        Py_BEGIN_ALLOW_THREADS
        pthread_mutex_lock(&load_lock);
        if (atomic_load(&load_state) == LOAD_NOT_TRIED) {
            int ok = load_driver() == 0;
            atomic_store_explicit(&load_state, ok ? LOAD_OK : LOAD_FAILED, memory_order_release);
        }
        pthread_mutex_unlock(&load_lock);
        Py_END_ALLOW_THREADS
    }
    if (atomic_load_explicit(&load_state, memory_order_acquire) == LOAD_OK) {
        return GH_DRIVER_OK;
    }
    return GH_DRIVER_UNUSABLE;
}

const char *
gh_driver_load_error(void)
{
    return load_error;
}

int
gh_driver_usable(void)
{
    return gh_driver_load() == GH_DRIVER_OK;
}
