/* fakecuda: a test double of libcuda for the entry points gpuhost uses (csrc/base/cuda_api.h).
 *
 * This file holds what the real driver exports (cuGetProcAddress, v1 and v2), the table it
 * resolves from, the check every entry point starts with (call counts, injected faults,
 * initialization) and the skeleton most are written in (fk_call), cuInit with its
 * configuration, and the fault/counter control API.
 *
 * Configuration, read once from the environment by the first cuInit or cuDriverGetVersion:
 *   FAKECUDA_DEVICES         number of devices, 0 to 64 (default 2; 0: cuInit fails with
 *                            CUDA_ERROR_NO_DEVICE)
 *   FAKECUDA_INIT_ERROR      a CUresult every cuInit returns (default 0: none)
 *   FAKECUDA_DRIVER_VERSION  what cuDriverGetVersion reports (default 13000)
 *   FAKECUDA_PEER_ACCESS     which devices may access which others' memory
 *                            (cuDeviceCanAccessPeer): "all" (default: every pair of two
 *                            devices), "none", or pairs "A>B" (A may access B), comma-separated
 * A value that is not a number in range makes cuInit fail with CUDA_ERROR_INVALID_VALUE,
 * with a message on stderr.
 */
#define _GNU_SOURCE /* dladdr */
#include "fk_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t fk_mutex = PTHREAD_MUTEX_INITIALIZER;

/* Every entry point, with the type the extension calls it through: an fk_ function whose
   type differs from its PFN_ type is a compile error (-Werror=incompatible-pointer-types). */
static const gh_cuda_api fk_api = {
#define FK_API_FIELD(name, version) .name = fk_##name,
    GH_CUDA_API_LIST(FK_API_FIELD)
#undef FK_API_FIELD
};

static const char *const fk_entry_names[GH_CU__COUNT] = {
#define FK_ENTRY_NAME(name, version) "cu" #name,
    GH_CUDA_API_LIST(FK_ENTRY_NAME)
#undef FK_ENTRY_NAME
};

static const int fk_entry_versions[GH_CU__COUNT] = {
#define FK_ENTRY_VERSION(name, version) version,
    GH_CUDA_API_LIST(FK_ENTRY_VERSION)
#undef FK_ENTRY_VERSION
};

typedef struct {
    long skip;      /* calls still to let through before failing */
    long remaining; /* failing calls left; -1 forever; 0 disarmed */
    CUresult code;
} fk_fault;

/* All under fk_mutex. */
static long fk_calls[GH_CU__COUNT];
static fk_fault fk_faults[GH_CU__COUNT];
static int fk_initialized;
static void *fk_fault_site; /* where the last injected fault was returned to, or NULL */

/* As the real driver: in a child made by fork() after cuInit, every call but the few that
   work before cuInit fails with CUDA_ERROR_NOT_INITIALIZED.  Set by the fork handler alone. */
static volatile int fk_forked_after_init;
static pthread_once_t fk_fork_once = PTHREAD_ONCE_INIT;

static void
fork_child(void)
{
    if (fk_initialized) {
        fk_forked_after_init = 1;
    }
}

static void
register_fork_child(void)
{
    pthread_atfork(NULL, NULL, fork_child);
}

static struct {
    int loaded;
    int bad; /* some variable was malformed: cuInit fails */
    int devices;
    int init_error;
    int driver_version;
    unsigned char peer[FK_MAX_DEVICES][FK_MAX_DEVICES]; /* [dev][peer]: may dev access peer */
} fk_config;

void
fk_lock(void)
{
    pthread_mutex_lock(&fk_mutex);
}

void
fk_unlock(void)
{
    pthread_mutex_unlock(&fk_mutex);
}

void
fk_wait(pthread_cond_t *cond)
{
    pthread_cond_wait(cond, &fk_mutex);
}

/* The return address of the innermost frame outside this library: the caller's call
   site of the entry point running now.  Walks this library's own frames by their frame
   pointers (it is built with -fno-omit-frame-pointer) and stops at the first return
   address outside it, so no foreign frame is ever read.  NULL if not found. */
__attribute__((noinline)) static void *
caller_site(void)
{
    Dl_info self, info;
    void **fp = __builtin_frame_address(0);

    if (dladdr((void *)caller_site, &self) == 0) {
        return NULL;
    }
    for (int depth = 0; fp != NULL && depth < 16; depth++) {
        void *ret = fp[1];
        if (dladdr(ret, &info) == 0 || info.dli_fbase != self.dli_fbase) {
            return ret;
        }
        fp = (void **)fp[0];
    }
    return NULL;
}

CUresult
fk_enter(gh_cu_id id, fk_when when)
{
    CUresult res = CUDA_SUCCESS;
    fk_fault *fault = &fk_faults[id];
    int injected = 0;

    fk_lock();
    fk_calls[id]++;
    if (fault->remaining != 0) {
        if (fault->skip > 0) {
            fault->skip--;
        }
        else {
            res = fault->code;
            injected = 1;
            if (fault->remaining > 0) {
                fault->remaining--;
            }
        }
    }
    if (res == CUDA_SUCCESS && fk_forked_after_init &&
        (when == FK_AFTER_INIT || id == GH_CU_Init)) {
        res = CUDA_ERROR_NOT_INITIALIZED;
    }
    if (res == CUDA_SUCCESS && when == FK_AFTER_INIT && !fk_initialized) {
        res = CUDA_ERROR_NOT_INITIALIZED;
    }
    if (res == CUDA_SUCCESS && when == FK_AFTER_INIT && fk_on_worker()) {
        res = CUDA_ERROR_NOT_PERMITTED; /* CUDA forbids API calls in host callbacks */
    }
    fk_unlock();
    if (injected) {
        void *site = caller_site();
        fk_lock();
        fk_fault_site = site;
        fk_unlock();
    }
    return res;
}

CUresult
fk_call(gh_cu_id id, int args_ok, fk_resolve_fn resolve, const void *handle, fk_body_fn body,
        void *args)
{
    CUresult res = fk_enter(id, FK_AFTER_INIT);
    fk_target target = {NULL, NULL, NULL};

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (!args_ok) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    if (resolve != NULL) {
        res = resolve(handle, &target);
    }
    if (res == CUDA_SUCCESS && body != NULL) {
        res = body(&target, args);
    }
    fk_unlock();
    return res;
}

CUresult
fk_found(fk_target *target, void *found, CUresult missing)
{
    target->found = found;
    return found != NULL ? CUDA_SUCCESS : missing;
}

CUresult
fk_not_supported(fk_target *target, void *args)
{
    (void)target, (void)args;
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* Index of entry point `name` ("cuInit"), or -1. */
static int
entry_index(const char *name)
{
    if (name == NULL) {
        return -1;
    }
    for (int i = 0; i < GH_CU__COUNT; i++) {
        if (strcmp(fk_entry_names[i], name) == 0) {
            return i;
        }
    }
    return -1;
}

static void *
entry_function(gh_cu_id id)
{
    switch (id) {
#define FK_ENTRY_CASE(name, version)                                                               \
    case GH_CU_##name:                                                                             \
        return (void *)fk_api.name;
        GH_CUDA_API_LIST(FK_ENTRY_CASE)
#undef FK_ENTRY_CASE
        default:
            return NULL;
    }
}

/* ---- configuration ---- */

/* Environment variable `var` as an int in [lo, hi], or `fallback` if unset or empty;
   a malformed value is reported on stderr and marks the configuration bad. */
static int
config_int(const char *var, int lo, int hi, int fallback)
{
    const char *text = getenv(var);
    char *end = NULL;
    long value;

    if (text == NULL || text[0] == '\0') {
        return fallback;
    }
    errno = 0;
    value = strtol(text, &end, 10);
    if (errno != 0 || *end != '\0' || value < lo || value > hi) {
        fprintf(stderr, "fakecuda: %s must be an integer from %d to %d, not '%s'\n", var, lo, hi,
                text);
        fk_config.bad = 1;
        return fallback;
    }
    return (int)value;
}

/* FAKECUDA_PEER_ACCESS into fk_config.peer, for fk_config.devices devices; a malformed
   value is reported on stderr and marks the configuration bad. */
static void
config_peer(void)
{
    const char *text = getenv("FAKECUDA_PEER_ACCESS");
    const char *p;
    int n = fk_config.devices;

    if (text == NULL || text[0] == '\0' || strcmp(text, "all") == 0) {
        for (int a = 0; a < n; a++) {
            for (int b = 0; b < n; b++) {
                fk_config.peer[a][b] = a != b;
            }
        }
        return;
    }
    if (strcmp(text, "none") == 0) {
        return;
    }
    for (p = text; *p != '\0';) {
        char *end = NULL;
        long a = strtol(p, &end, 10), b;
        if (end == p || *end != '>' || a < 0 || a >= n) {
            goto bad;
        }
        p = end + 1;
        b = strtol(p, &end, 10);
        if (end == p || (*end != ',' && *end != '\0') || (*end == ',' && end[1] == '\0') || b < 0 ||
            b >= n || a == b) {
            goto bad;
        }
        fk_config.peer[a][b] = 1;
        p = *end == ',' ? end + 1 : end;
    }
    return;
bad:
    fprintf(stderr,
            "fakecuda: FAKECUDA_PEER_ACCESS must be 'all', 'none' or pairs 'A>B' of two "
            "devices below %d, comma-separated, not '%s'\n",
            n, text);
    fk_config.bad = 1;
}

int
fk_peer_supported(CUdevice dev, CUdevice peer)
{
    return fk_config.peer[dev][peer];
}

/* Read the configuration if not read yet.  Lock held. */
static void
config_load(void)
{
    if (fk_config.loaded) {
        return;
    }
    fk_config.loaded = 1;
    fk_config.devices = config_int("FAKECUDA_DEVICES", 0, FK_MAX_DEVICES, 2);
    fk_config.init_error = config_int("FAKECUDA_INIT_ERROR", 0, 1000000, 0);
    fk_config.driver_version = config_int("FAKECUDA_DRIVER_VERSION", 1000, 1000000, 13000);
    config_peer();
}

/* ---- the exported driver surface ---- */

CUresult
fk_Init(unsigned int Flags)
{
    CUresult res = fk_enter(GH_CU_Init, FK_ANYTIME);

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (Flags != 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    config_load();
    if (fk_config.bad) {
        res = CUDA_ERROR_INVALID_VALUE;
    }
    else if (fk_config.init_error != 0) {
        res = (CUresult)fk_config.init_error;
    }
    else if (fk_config.devices == 0) {
        res = CUDA_ERROR_NO_DEVICE;
    }
    else if (!fk_initialized) {
        fk_devices_init(fk_config.devices);
        fk_initialized = 1;
        pthread_once(&fk_fork_once, register_fork_child);
    }
    fk_unlock();
    return res;
}

CUresult
fk_DriverGetVersion(int *driverVersion)
{
    CUresult res = fk_enter(GH_CU_DriverGetVersion, FK_ANYTIME);

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (driverVersion == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    config_load();
    *driverVersion = fk_config.driver_version;
    fk_unlock();
    return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                          cuuint64_t flags,
                                          CUdriverProcAddressQueryResult *symbolStatus);

/* Like the real one: the entry point `symbol` as of CUDA version `cudaVersion`. */
CUresult
cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                    CUdriverProcAddressQueryResult *symbolStatus)
{
    const cuuint64_t known_flags =
        CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    int index;

    if (symbol == NULL || pfn == NULL || (flags & ~known_flags) != 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *pfn = NULL;
    index = entry_index(symbol);
    if (index < 0) {
        if (symbolStatus != NULL) {
            *symbolStatus = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        }
        return CUDA_ERROR_NOT_FOUND;
    }
    if (cudaVersion < fk_entry_versions[index]) {
        if (symbolStatus != NULL) {
            *symbolStatus = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
        }
        return CUDA_ERROR_NOT_FOUND;
    }
    *pfn = entry_function((gh_cu_id)index);
    if (symbolStatus != NULL) {
        *symbolStatus = CU_GET_PROC_ADDRESS_SUCCESS;
    }
    return CUDA_SUCCESS;
}

/* The CUDA 11.3-11.8 signature, without the status.  cuda.h maps the name to _v2. */
#undef cuGetProcAddress
FAKECUDA_API CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                       cuuint64_t flags);

CUresult
cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}

/* ---- control API ---- */

int
fakecuda_fail(const char *name, long nth, int code, long times)
{
    int index = entry_index(name);

    if (index < 0 || nth < 1 || code == CUDA_SUCCESS || times == 0 || times < -1) {
        return -1;
    }
    fk_lock();
    fk_faults[index].skip = nth - 1;
    fk_faults[index].remaining = times;
    fk_faults[index].code = (CUresult)code;
    fk_unlock();
    return 0;
}

void
fakecuda_clear_faults(void)
{
    fk_lock();
    memset(fk_faults, 0, sizeof(fk_faults));
    fk_unlock();
}

void *
fakecuda_take_fault_site(void)
{
    void *site;
    fk_lock();
    site = fk_fault_site;
    fk_fault_site = NULL;
    fk_unlock();
    return site;
}

long
fakecuda_calls(const char *name)
{
    int index = entry_index(name);
    long calls;

    if (index < 0) {
        return -1;
    }
    fk_lock();
    calls = fk_calls[index];
    fk_unlock();
    return calls;
}

void
fakecuda_reset(void)
{
    fk_lock();
    memset(fk_faults, 0, sizeof(fk_faults));
    memset(fk_calls, 0, sizeof(fk_calls));
    fk_unlock();
    fakecuda_gate_open();
    fakecuda_kernels(0);
}
