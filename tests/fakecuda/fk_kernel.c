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

/* What a launch of a handle that names no loaded function gets: "not supported" while
   kernels are off (nothing could have been loaded), else an invalid handle.  Lock held. */
static CUresult
unknown_function(void)
{
    return fk_kernels_on ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_NOT_SUPPORTED;
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

/* The common body of both launches, after the entry's checks: `ex` holds cooperative and
   the cluster dimensions (0: none).  Lock NOT held. */
static CUresult
launch(CUfunction handle, const unsigned int grid[3], const unsigned int block[3],
       unsigned int shared, CUstream stream, void **params, void **extra, const unsigned int ex[4])
{
    fk_function *f;
    fk_context *ctx = NULL;
    fk_lane *lane = NULL;
    unsigned char *bytes = NULL;
    char *name = NULL;
    CUresult res = CUDA_SUCCESS;

    fk_lock();
    f = fk_function_find(handle);
    if (f == NULL) {
        res = unknown_function();
    }
    if (res == CUDA_SUCCESS) {
        res = fk_stream_lane(stream, &ctx, &lane);
    }
    if (res == CUDA_SUCCESS && lane->capture != NULL) {
        res = CUDA_ERROR_NOT_SUPPORTED; /* kernels cannot be graph nodes here */
    }
    if (res == CUDA_SUCCESS && ctx != f->ctx) {
        res = CUDA_ERROR_INVALID_CONTEXT; /* a stream of another device */
    }
    if (res == CUDA_SUCCESS && !dims_valid(f, grid, block, shared)) {
        res = CUDA_ERROR_INVALID_VALUE;
    }
    for (int i = 1; res == CUDA_SUCCESS && ex[1] != 0 && i < 4; i++) {
        if (ex[i] == 0 || grid[i - 1] % ex[i] != 0) {
            res = CUDA_ERROR_INVALID_VALUE; /* the grid must be whole clusters */
        }
    }
    if (res == CUDA_SUCCESS) {
        res = gather_params(f, params, extra, &bytes);
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
        memcpy(fk_last.dims, grid, 3 * sizeof(unsigned int));
        memcpy(fk_last.dims + 3, block, 3 * sizeof(unsigned int));
        fk_last.dims[6] = shared;
        memcpy(fk_last.ex, ex, sizeof(fk_last.ex));
        fk_last.stream = stream;
        fk_last.name = name;
        bytes = NULL, name = NULL;
    }
    fk_unlock();
    free(bytes);
    free(name);
    return res;
}

CUresult
fk_LaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
{
    CUresult res = fk_enter(GH_CU_LaunchKernel, FK_AFTER_INIT);
    const unsigned int grid[3] = {gridDimX, gridDimY, gridDimZ};
    const unsigned int block[3] = {blockDimX, blockDimY, blockDimZ};
    const unsigned int ex[4] = {0, 0, 0, 0};

    if (res != CUDA_SUCCESS) {
        return res;
    }
    return launch(f, grid, block, sharedMemBytes, hStream, kernelParams, extra, ex);
}

CUresult
fk_LaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
    CUresult res = fk_enter(GH_CU_LaunchKernelEx, FK_AFTER_INIT);
    unsigned int grid[3], block[3], ex[4] = {0, 0, 0, 0};
    CUresult known;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    fk_lock();
    known = fk_function_find(f) != NULL ? CUDA_SUCCESS : unknown_function();
    fk_unlock();
    if (known != CUDA_SUCCESS) {
        return known; /* before reading a config meant for something else */
    }
    if (config == NULL || (config->numAttrs > 0 && config->attrs == NULL)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (unsigned int i = 0; i < config->numAttrs; i++) {
        const CUlaunchAttribute *a = &config->attrs[i];
        if (a->id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) {
            ex[0] = a->value.cooperative != 0;
        }
        else if (a->id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
            ex[1] = a->value.clusterDim.x;
            ex[2] = a->value.clusterDim.y;
            ex[3] = a->value.clusterDim.z;
        }
    }
    grid[0] = config->gridDimX, grid[1] = config->gridDimY, grid[2] = config->gridDimZ;
    block[0] = config->blockDimX, block[1] = config->blockDimY, block[2] = config->blockDimZ;
    return launch(f, grid, block, config->sharedMemBytes, config->hStream, kernelParams, extra, ex);
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
