/* fakecuda modules, kernels and the JIT linker: the fake cannot run device code, so every
 * entry point does its usual checks (call counting, injected faults, initialization) and
 * then returns CUDA_ERROR_NOT_SUPPORTED, as DESIGN.md says.  Kernel tests skip here.
 */
#include "fk_internal.h"

/* The common body: the entry's checks, then "not supported". */
static CUresult
unsupported(gh_cu_id id)
{
    CUresult res = fk_enter(id, FK_AFTER_INIT);
    return res != CUDA_SUCCESS ? res : CUDA_ERROR_NOT_SUPPORTED;
}

CUresult
fk_ModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                    CUjit_option *options, void **optionValues)
{
    (void)image, (void)numOptions, (void)options, (void)optionValues;
    if (module != NULL) {
        *module = NULL;
    }
    return unsupported(GH_CU_ModuleLoadDataEx);
}

CUresult
fk_ModuleUnload(CUmodule hmod)
{
    (void)hmod;
    return unsupported(GH_CU_ModuleUnload);
}

CUresult
fk_ModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    (void)hfunc, (void)hmod, (void)name;
    return unsupported(GH_CU_ModuleGetFunction);
}

CUresult
fk_ModuleGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name)
{
    (void)dptr, (void)bytes, (void)hmod, (void)name;
    return unsupported(GH_CU_ModuleGetGlobal);
}

CUresult
fk_FuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    (void)pi, (void)attrib, (void)hfunc;
    return unsupported(GH_CU_FuncGetAttribute);
}

CUresult
fk_FuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
    (void)hfunc, (void)attrib, (void)value;
    return unsupported(GH_CU_FuncSetAttribute);
}

CUresult
fk_FuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset, size_t *paramSize)
{
    (void)func, (void)paramIndex, (void)paramOffset, (void)paramSize;
    return unsupported(GH_CU_FuncGetParamInfo);
}

CUresult
fk_LaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
{
    (void)f, (void)gridDimX, (void)gridDimY, (void)gridDimZ, (void)blockDimX, (void)blockDimY;
    (void)blockDimZ, (void)sharedMemBytes, (void)hStream, (void)kernelParams, (void)extra;
    return unsupported(GH_CU_LaunchKernel);
}

CUresult
fk_LaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
    (void)config, (void)f, (void)kernelParams, (void)extra;
    return unsupported(GH_CU_LaunchKernelEx);
}

CUresult
fk_OccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func, int blockSize,
                                             size_t dynamicSMemSize)
{
    (void)numBlocks, (void)func, (void)blockSize, (void)dynamicSMemSize;
    return unsupported(GH_CU_OccupancyMaxActiveBlocksPerMultiprocessor);
}

CUresult
fk_OccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, CUfunction func,
                                  CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                  size_t dynamicSMemSize, int blockSizeLimit)
{
    (void)minGridSize, (void)blockSize, (void)func, (void)blockSizeToDynamicSMemSize;
    (void)dynamicSMemSize, (void)blockSizeLimit;
    return unsupported(GH_CU_OccupancyMaxPotentialBlockSize);
}

CUresult
fk_OccupancyMaxActiveClusters(int *numClusters, CUfunction func, const CUlaunchConfig *config)
{
    (void)numClusters, (void)func, (void)config;
    return unsupported(GH_CU_OccupancyMaxActiveClusters);
}

CUresult
fk_LinkCreate(unsigned int numOptions, CUjit_option *options, void **optionValues,
              CUlinkState *stateOut)
{
    (void)numOptions, (void)options, (void)optionValues;
    if (stateOut != NULL) {
        *stateOut = NULL;
    }
    return unsupported(GH_CU_LinkCreate);
}

CUresult
fk_LinkAddData(CUlinkState state, CUjitInputType type, void *data, size_t size, const char *name,
               unsigned int numOptions, CUjit_option *options, void **optionValues)
{
    (void)state, (void)type, (void)data, (void)size, (void)name, (void)numOptions, (void)options;
    (void)optionValues;
    return unsupported(GH_CU_LinkAddData);
}

CUresult
fk_LinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut)
{
    (void)state, (void)cubinOut, (void)sizeOut;
    return unsupported(GH_CU_LinkComplete);
}

CUresult
fk_LinkDestroy(CUlinkState state)
{
    (void)state;
    return unsupported(GH_CU_LinkDestroy);
}
