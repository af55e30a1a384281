/* fakecuda kernel launches and the fakecuda_kernels mode.
 *
 * Nothing runs: cuLaunchKernel and cuLaunchKernelEx of a function loaded from PTX
 * (fk_module.c) check the launch as the driver does (grid, block, shared memory, the stream
 * and its context), then copy the argument bytes (kernelParams[i] at parameter i's offset,
 * or the buffer of `extra`) into a record of the last launch that tests read through
 * fakecuda_last_launch and fakecuda_last_launch_info.  A launch on a capturing stream, and
 * any launch while no such function exists, is not supported, as before.
 */
#define _POSIX_C_SOURCE 200809L /* strdup */

#include "fk_internal.h"

#include <stdlib.h>
#include <string.h>

/* All under the driver lock. */
static int fk_kernels_on;
static struct {
    long count;            /* launches recorded since fakecuda_kernels was last called */
    unsigned char *params; /* the last one's argument bytes */
    size_t size;
    unsigned int dims[7]; /* grid xyz, block xyz, dynamic shared bytes */
    unsigned int ex[4];   /* cooperative, cluster xyz (cuLaunchKernelEx) */
    CUstream stream;
    char *name; /* the kernel's entry name */
} fk_last;

int
fk_kernels_enabled(void)
{
    return fk_kernels_on;
}

/* Forget the recorded launches.  Lock held. */
static void
forget_launches(void)
{
    free(fk_last.params);
    free(fk_last.name);
    memset(&fk_last, 0, sizeof(fk_last));
}

/* The argument bytes of a launch of `f` into a new buffer of f->param_bytes: one pointer
   per parameter in `params`, or the buffer `extra` names.  CUDA_SUCCESS with *out set
   (NULL for a kernel without parameters), CUDA_ERROR_INVALID_VALUE or
   CUDA_ERROR_OUT_OF_MEMORY.  Lock held (f stays valid). */
static CUresult
gather_params(const fk_function *f, void **params, void **extra, unsigned char **out)
{
    const void *buffer = NULL;
    size_t buffer_size = 0;
    int has_size = 0;
    unsigned char *bytes;

    *out = NULL;
    if (params != NULL && extra != NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (size_t i = 0; extra != NULL && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
            buffer = extra[i + 1];
        }
        else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1] != NULL) {
            buffer_size = *(const size_t *)extra[i + 1];
            has_size = 1;
        }
        else {
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    if (extra != NULL && (buffer == NULL || !has_size || buffer_size < f->param_bytes)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (f->nparams == 0) {
        return CUDA_SUCCESS;
    }
    if (params == NULL && extra == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (size_t i = 0; params != NULL && i < f->nparams; i++) {
        if (params[i] == NULL) {
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    bytes = calloc(1, f->param_bytes);
    if (bytes == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (extra != NULL) {
        memcpy(bytes, buffer, f->param_bytes);
    }
    for (size_t i = 0; params != NULL && i < f->nparams; i++) {
        memcpy(bytes + f->params[i].offset, params[i], f->params[i].size);
    }
    *out = bytes;
    return CUDA_SUCCESS;
}

/* Whether grid, block and shared memory fit `f` on its device. */
static int
dims_valid(const fk_function *f, const unsigned int grid[3], const unsigned int block[3],
           unsigned int shared)
{
    const fk_device *dev = fk_device_get(f->ctx->device);
    static const CUdevice_attribute max_grid[3] = {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
                                                   CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
                                                   CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z};
    static const CUdevice_attribute max_block[3] = {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
                                                    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
                                                    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z};
    unsigned long long threads = 1;

    for (int i = 0; i < 3; i++) {
        if (grid[i] == 0 || block[i] == 0 || grid[i] > (unsigned int)dev->attrs[max_grid[i]] ||
            block[i] > (unsigned int)dev->attrs[max_block[i]]) {
            return 0;
        }
        threads *= block[i];
    }
    return threads <= (unsigned long long)f->attrs[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK] &&
           shared <= (unsigned int)f->attrs[CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES];
}

typedef struct {
    unsigned int grid[3], block[3], shared;
    CUstream stream;
    void **params, **extra;
    unsigned int ex[4];           /* cooperative, cluster dimensions (0: none) */
    const CUlaunchConfig *config; /* cuLaunchKernelEx's, read into the rest */
} fk_launch_args;

/* The common body of both launches, on the function resolved. */
static CUresult
launch(fk_target *target, void *args)
{
    fk_launch_args *a = args;
    fk_function *f = target->found;
    unsigned char *bytes = NULL;
    char *name = NULL;
    CUresult res = fk_on_stream(a->stream, target);

    if (res == CUDA_SUCCESS && target->lane->capture != NULL) {
        res = CUDA_ERROR_NOT_SUPPORTED; /* kernels cannot be graph nodes here */
    }
    if (res == CUDA_SUCCESS && target->ctx != f->ctx) {
        res = CUDA_ERROR_INVALID_CONTEXT; /* a stream of another device */
    }
    if (res == CUDA_SUCCESS && !dims_valid(f, a->grid, a->block, a->shared)) {
        res = CUDA_ERROR_INVALID_VALUE;
    }
    for (int i = 1; res == CUDA_SUCCESS && a->ex[1] != 0 && i < 4; i++) {
        if (a->ex[i] == 0 || a->grid[i - 1] % a->ex[i] != 0) {
            res = CUDA_ERROR_INVALID_VALUE; /* the grid must be whole clusters */
        }
    }
    if (res == CUDA_SUCCESS) {
        res = gather_params(f, a->params, a->extra, &bytes);
    }
    if (res == CUDA_SUCCESS && (name = strdup(f->name)) == NULL) {
        res = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (res == CUDA_SUCCESS) {
        long count = fk_last.count + 1;
        forget_launches();
        fk_last.count = count;
        fk_last.params = bytes;
        fk_last.size = f->param_bytes;
        memcpy(fk_last.dims, a->grid, sizeof(a->grid));
        memcpy(fk_last.dims + 3, a->block, sizeof(a->block));
        fk_last.dims[6] = a->shared;
        memcpy(fk_last.ex, a->ex, sizeof(fk_last.ex));
        fk_last.stream = a->stream;
        fk_last.name = name;
        bytes = NULL, name = NULL;
    }
    free(bytes);
    free(name);
    return res;
}

CUresult
fk_LaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
{
    fk_launch_args args = {{gridDimX, gridDimY, gridDimZ},
                           {blockDimX, blockDimY, blockDimZ},
                           sharedMemBytes,
                           hStream,
                           kernelParams,
                           extra,
                           {0, 0, 0, 0},
                           NULL};

    return fk_call(GH_CU_LaunchKernel, 1, fk_on_function, f, launch, &args);
}

/* cuLaunchKernelEx's config, read once the function is known (it may be meant for
   something else otherwise), then the launch. */
static CUresult
launch_ex(fk_target *target, void *args)
{
    fk_launch_args *a = args;
    const CUlaunchConfig *config = a->config;

    if (config == NULL || (config->numAttrs > 0 && config->attrs == NULL)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (unsigned int i = 0; i < config->numAttrs; i++) {
        const CUlaunchAttribute *attr = &config->attrs[i];
        if (attr->id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) {
            a->ex[0] = attr->value.cooperative != 0;
        }
        else if (attr->id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
            a->ex[1] = attr->value.clusterDim.x;
            a->ex[2] = attr->value.clusterDim.y;
            a->ex[3] = attr->value.clusterDim.z;
        }
    }
    a->grid[0] = config->gridDimX, a->grid[1] = config->gridDimY, a->grid[2] = config->gridDimZ;
    a->block[0] = config->blockDimX, a->block[1] = config->blockDimY;
    a->block[2] = config->blockDimZ;
    a->shared = config->sharedMemBytes;
    a->stream = config->hStream;
    return launch(target, a);
}

CUresult
fk_LaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
    fk_launch_args args = {{0, 0, 0}, {0, 0, 0},    0,     NULL, kernelParams,
                           extra,     {0, 0, 0, 0}, config};

    return fk_call(GH_CU_LaunchKernelEx, 1, fk_on_function, f, launch_ex, &args);
}

/* ---- control API ---- */

void
fakecuda_kernels(int enable)
{
    fk_lock();
    fk_kernels_on = enable != 0;
    forget_launches();
    fk_unlock();
}

long
fakecuda_launches(void)
{
    long count;
    fk_lock();
    count = fk_last.count;
    fk_unlock();
    return count;
}

long
fakecuda_last_launch(void *buf, long cap, unsigned int dims[7])
{
    long size = -1;

    fk_lock();
    if (fk_last.count > 0) {
        size = (long)fk_last.size;
        if (buf != NULL && cap > 0 && size > 0) {
            memcpy(buf, fk_last.params, (size_t)(cap < size ? cap : size));
        }
        if (dims != NULL) {
            memcpy(dims, fk_last.dims, sizeof(fk_last.dims));
        }
    }
    fk_unlock();
    return size;
}

long
fakecuda_last_launch_info(char *name, long cap, void **stream, unsigned int ex[4])
{
    long length = -1;

    fk_lock();
    if (fk_last.count > 0) {
        length = (long)strlen(fk_last.name);
        if (name != NULL && cap > 0) {
            size_t n = (size_t)(cap - 1 < length ? cap - 1 : length);
            memcpy(name, fk_last.name, n);
            name[n] = '\0';
        }
        if (stream != NULL) {
            *stream = (void *)fk_last.stream;
        }
        if (ex != NULL) {
            memcpy(ex, fk_last.ex, sizeof(fk_last.ex));
        }
    }
    fk_unlock();
    return length;
}
