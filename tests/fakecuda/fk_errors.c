/* fakecuda error names and messages: cuGetErrorName and cuGetErrorString over the CUresult
 * list of csrc/base/cuda_errors.h.  Both work before cuInit, as in the real driver.
 *
 * Messages are the real driver's for the common codes; the others are the name in words
 * ("CUDA_ERROR_TOO_MANY_PEERS" -> "too many peers").
 */
#include "fk_internal.h"

#include "base/cuda_errors.h"

#include <ctype.h>
#include <pthread.h>
#include <string.h>

static const struct {
    int code;
    const char *name;
} fk_errors[] = {
#define FK_ERROR_ENTRY(name, code) {code, #name},
    GH_CUDA_ERROR_LIST(FK_ERROR_ENTRY)
#undef FK_ERROR_ENTRY
};

#define FK_ERROR_COUNT (sizeof(fk_errors) / sizeof(fk_errors[0]))

static const struct {
    CUresult code;
    const char *message;
} fk_known_messages[] = {
    {CUDA_SUCCESS, "no error"},
    {CUDA_ERROR_INVALID_VALUE, "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "driver shutting down"},
    {CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library"},
    {CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "invalid device context"},
    {CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed"},
    {CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch"},
    {CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"},
    {CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"},
    {CUDA_ERROR_NOT_PERMITTED, "operation not permitted"},
    {CUDA_ERROR_NOT_SUPPORTED, "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "unknown error"},
};

/* The message of fk_errors[i], built once. */
static const char *fk_messages[FK_ERROR_COUNT];
static char fk_words[FK_ERROR_COUNT][64];
static pthread_once_t fk_messages_once = PTHREAD_ONCE_INIT;

/* "CUDA_ERROR_TOO_MANY_PEERS" -> "too many peers" in `out`. */
static void
name_to_words(const char *name, char *out, size_t size)
{
    const char *prefix = "CUDA_ERROR_";
    size_t n = 0;

    if (strncmp(name, prefix, strlen(prefix)) == 0) {
        name += strlen(prefix);
    }
    for (; *name != '\0' && n + 1 < size; name++, n++) {
        out[n] = *name == '_' ? ' ' : (char)tolower((unsigned char)*name);
    }
    out[n] = '\0';
}

static void
build_messages(void)
{
    for (size_t i = 0; i < FK_ERROR_COUNT; i++) {
        for (size_t k = 0; k < sizeof(fk_known_messages) / sizeof(fk_known_messages[0]); k++) {
            if ((int)fk_known_messages[k].code == fk_errors[i].code) {
                fk_messages[i] = fk_known_messages[k].message;
            }
        }
        if (fk_messages[i] == NULL) {
            name_to_words(fk_errors[i].name, fk_words[i], sizeof(fk_words[i]));
            fk_messages[i] = fk_words[i];
        }
    }
}

/* Index of `code` in fk_errors, or -1. */
static int
error_index(CUresult code)
{
    for (size_t i = 0; i < FK_ERROR_COUNT; i++) {
        if (fk_errors[i].code == (int)code) {
            return (int)i;
        }
    }
    return -1;
}

/* cuGetErrorName and cuGetErrorString: the name, or the `message`, of `error` in *pStr. */
static CUresult
error_text(gh_cu_id id, CUresult error, const char **pStr, int message)
{
    CUresult res = fk_enter(id, FK_ANYTIME);
    int i;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (pStr == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (message) {
        pthread_once(&fk_messages_once, build_messages);
    }
    i = error_index(error);
    *pStr = i < 0 ? NULL : message ? fk_messages[i] : fk_errors[i].name;
    return i < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult
fk_GetErrorName(CUresult error, const char **pStr)
{
    return error_text(GH_CU_GetErrorName, error, pStr, 0);
}

CUresult
fk_GetErrorString(CUresult error, const char **pStr)
{
    return error_text(GH_CU_GetErrorString, error, pStr, 1);
}
