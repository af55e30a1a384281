/* The libcuda entry points gpuhost calls: one list, one place.
 *
 * Each X(Name, Version) names the driver function cu<Name> and the ABI version it is
 * resolved at through cuGetProcAddress.  The version also picks the prototype: the
 * table entry has type PFN_cu<Name>_v<Version> from cudaTypedefs.h, so a version that
 * does not exist, or a call with the wrong arguments, fails to compile.
 * The test double in tests/fakecuda includes this file too and must implement every entry.
 */
#ifndef GPUHOST_CUDA_API_H
#define GPUHOST_CUDA_API_H

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cudaProfilerTypedefs.h>

/* Oldest driver gpuhost runs on (cuGetProcAddress_v2 and the ABIs below).  An entry whose
   version is newer than this is optional: an older driver leaves it NULL, and the code
   that calls it checks first (cuFuncGetParamInfo, CUDA 12.4). */
#define GH_MIN_DRIVER_VERSION 12000

#define GH_CUDA_API_LIST(X)                                                                        \
    X(GetErrorString, 6000)                                                                        \
    X(GetErrorName, 6000)                                                                          \
    X(Init, 2000)                                                                                  \
    X(DriverGetVersion, 2020)                                                                      \
    X(DeviceGet, 2000)                                                                             \
    X(DeviceGetCount, 2000)                                                                        \
    X(DeviceGetName, 2000)                                                                         \
    X(DeviceGetUuid, 11040)                                                                        \
    X(DeviceTotalMem, 3020)                                                                        \
    X(DeviceGetAttribute, 2000)                                                                    \
    X(DeviceGetPCIBusId, 4010)                                                                     \
    X(DeviceGetByPCIBusId, 4010)                                                                   \
    X(DevicePrimaryCtxRetain, 7000)                                                                \
    X(DevicePrimaryCtxRelease, 11000)                                                              \
    X(DevicePrimaryCtxReset, 11000)                                                                \
    X(DevicePrimaryCtxGetState, 7000)                                                              \
    X(CtxGetCurrent, 4000)                                                                         \
    X(CtxSetCurrent, 4000)                                                                         \
    X(CtxPushCurrent, 4000)                                                                        \
    X(CtxPopCurrent, 4000)                                                                         \
    X(CtxGetDevice, 2000)                                                                          \
    X(CtxGetId, 12000)                                                                             \
    X(CtxSynchronize, 2000)                                                                        \
    X(DeviceCanAccessPeer, 4000)                                                                   \
    X(CtxEnablePeerAccess, 4000)                                                                   \
    X(CtxDisablePeerAccess, 4000)                                                                  \
    X(MemGetInfo, 3020)                                                                            \
    X(CtxGetStreamPriorityRange, 5050)                                                             \
    X(StreamCreateWithPriority, 5050)                                                              \
    X(StreamDestroy, 4000)                                                                         \
    X(StreamSynchronize, 2000)                                                                     \
    X(StreamQuery, 2000)                                                                           \
    X(StreamWaitEvent, 3020)                                                                       \
    X(StreamGetPriority, 5050)                                                                     \
    X(StreamGetFlags, 5050)                                                                        \
    X(StreamGetCtx, 9020)                                                                          \
    X(StreamIsCapturing, 10000)                                                                    \
    X(StreamAddCallback, 5000)                                                                     \
    X(LaunchHostFunc, 10000)                                                                       \
    X(StreamBeginCapture, 10010)                                                                   \
    X(StreamEndCapture, 10000)                                                                     \
    X(ThreadExchangeStreamCaptureMode, 10010)                                                      \
    X(GraphCreate, 10000)                                                                          \
    X(GraphDestroy, 10000)                                                                         \
    X(GraphClone, 10000)                                                                           \
    X(GraphInstantiateWithFlags, 11040)                                                            \
    X(GraphExecDestroy, 10000)                                                                     \
    X(GraphLaunch, 10000)                                                                          \
    X(GraphUpload, 11010)                                                                          \
    X(GraphExecUpdate, 12000)                                                                      \
    X(GraphGetNodes, 10000)                                                                        \
    X(GraphNodeGetType, 10000)                                                                     \
    X(GraphAddKernelNode, 12000)                                                                   \
    X(GraphAddMemcpyNode, 10000)                                                                   \
    X(GraphAddMemsetNode, 10000)                                                                   \
    X(GraphAddHostNode, 10000)                                                                     \
    X(GraphAddEventRecordNode, 11010)                                                              \
    X(GraphAddEventWaitNode, 11010)                                                                \
    X(GraphAddChildGraphNode, 10000)                                                               \
    X(GraphAddEmptyNode, 10000)                                                                    \
    X(GraphKernelNodeGetParams, 12000)                                                             \
    X(GraphExecKernelNodeSetParams, 12000)                                                         \
    X(GraphDebugDotPrint, 11030)                                                                   \
    X(GraphConditionalHandleCreate, 12030)                                                         \
    X(GraphAddNode, 12030)                                                                         \
    X(EventCreate, 2000)                                                                           \
    X(EventDestroy, 4000)                                                                          \
    X(EventRecord, 2000)                                                                           \
    X(EventQuery, 2000)                                                                            \
    X(EventSynchronize, 2000)                                                                      \
    X(EventElapsedTime, 2000)                                                                      \
    X(IpcGetEventHandle, 4010)                                                                     \
    X(IpcOpenEventHandle, 4010)                                                                    \
    X(ProfilerStart, 4000)                                                                         \
    X(ProfilerStop, 4000)                                                                          \
    X(MemAlloc, 3020)                                                                              \
    X(MemFree, 3020)                                                                               \
    X(MemAllocManaged, 6000)                                                                       \
    X(MemHostAlloc, 2020)                                                                          \
    X(MemFreeHost, 2000)                                                                           \
    X(DeviceGetDefaultMemPool, 11020)                                                              \
    X(MemPoolSetAttribute, 11020)                                                                  \
    X(MemPoolGetAttribute, 11020)                                                                  \
    X(MemPoolTrimTo, 11020)                                                                        \
    X(MemAllocAsync, 11020)                                                                        \
    X(MemFreeAsync, 11020)                                                                         \
    X(MemHostGetDevicePointer, 3020)                                                               \
    X(MemHostRegister, 6050)                                                                       \
    X(MemHostUnregister, 4000)                                                                     \
    X(MemGetAddressRange, 3020)                                                                    \
    X(PointerGetAttribute, 4000)                                                                   \
    X(MemcpyAsync, 4000)                                                                           \
    X(MemPrefetchAsync, 12020)                                                                     \
    X(MemAdvise, 12020)                                                                            \
    X(MemcpyHtoD, 3020)                                                                            \
    X(MemcpyDtoH, 3020)                                                                            \
    X(MemcpyDtoD, 3020)                                                                            \
    X(MemcpyHtoDAsync, 3020)                                                                       \
    X(MemcpyDtoHAsync, 3020)                                                                       \
    X(MemcpyDtoDAsync, 3020)                                                                       \
    X(Memcpy2D, 3020)                                                                              \
    X(Memcpy2DAsync, 3020)                                                                         \
    X(Memcpy3D, 3020)                                                                              \
    X(Memcpy3DAsync, 3020)                                                                         \
    X(MemcpyPeer, 4000)                                                                            \
    X(MemcpyPeerAsync, 4000)                                                                       \
    X(MemsetD8, 3020)                                                                              \
    X(MemsetD16, 3020)                                                                             \
    X(MemsetD32, 3020)                                                                             \
    X(MemsetD8Async, 3020)                                                                         \
    X(MemsetD16Async, 3020)                                                                        \
    X(MemsetD32Async, 3020)                                                                        \
    X(MemsetD2D8, 3020)                                                                            \
    X(MemsetD2D16, 3020)                                                                           \
    X(MemsetD2D32, 3020)                                                                           \
    X(MemsetD2D8Async, 3020)                                                                       \
    X(MemsetD2D16Async, 3020)                                                                      \
    X(MemsetD2D32Async, 3020)                                                                      \
    X(IpcGetMemHandle, 4010)                                                                       \
    X(IpcOpenMemHandle, 11000)                                                                     \
    X(IpcCloseMemHandle, 4010)                                                                     \
    X(ModuleLoadDataEx, 2010)                                                                      \
    X(ModuleUnload, 2000)                                                                          \
    X(ModuleGetFunction, 2000)                                                                     \
    X(ModuleGetGlobal, 3020)                                                                       \
    X(FuncGetAttribute, 2020)                                                                      \
    X(FuncSetAttribute, 9000)                                                                      \
    X(FuncGetParamInfo, 12040)                                                                     \
    X(LaunchKernel, 4000)                                                                          \
    X(LaunchKernelEx, 11060)                                                                       \
    X(OccupancyMaxActiveBlocksPerMultiprocessor, 6050)                                             \
    X(OccupancyMaxPotentialBlockSize, 6050)                                                        \
    X(OccupancyMaxActiveClusters, 11070)                                                           \
    X(LinkCreate, 6050)                                                                            \
    X(LinkAddData, 6050)                                                                           \
    X(LinkComplete, 5050)                                                                          \
    X(LinkDestroy, 5050)

/* The function table: gh_cu.MemGetInfo(&free, &total). */
typedef struct {
#define GH_CU_FIELD(name, version) PFN_cu##name##_v##version name;
    GH_CUDA_API_LIST(GH_CU_FIELD)
#undef GH_CU_FIELD
} gh_cuda_api;

/* Index of each entry point, used to name the failing call in errors. */
typedef enum {
#define GH_CU_ENUM(name, version) GH_CU_##name,
    GH_CUDA_API_LIST(GH_CU_ENUM)
#undef GH_CU_ENUM
        GH_CU__COUNT
} gh_cu_id;

/* ---- cuda_api.c: the driver loader ---- */

/* The driver's function table, filled once by gh_driver_load(). */
extern gh_cuda_api gh_cu;
/* How loading the driver went (gh_driver_load). */
typedef enum {
    GH_DRIVER_OK = 0,
    GH_DRIVER_UNUSABLE, /* no driver, too old, or no device: gh_driver_load_error() says */
    GH_DRIVER_FORKED,   /* a child forked after the driver loaded: see gh_fork_message */
} gh_driver_status;
/* Load libcuda and cuInit it the first time (the caller holds the GIL, released meanwhile);
   never raises: errors.c's gh_driver_ensure() raises what it returns. */
gh_driver_status gh_driver_load(void);
/* Why the driver is GH_DRIVER_UNUSABLE: the message of CudaSupportError. */
const char *gh_driver_load_error(void);
/* 1 if the driver loaded and has a device, else 0; never raises. */
int gh_driver_usable(void);
/* The name of entry point `id`, e.g. "cuMemAlloc". */
const char *gh_cu_name(gh_cu_id id);
/* The CUresult's enum name ("CUDA_ERROR_OUT_OF_MEMORY"), or NULL for an unknown code. */
const char *gh_cu_result_name(CUresult res);
/* The library path that was loaded, or NULL. */
const char *gh_driver_path(void);
/* The driver's CUDA version as an int (13000), after gh_driver_load() succeeded. */
int gh_driver_version(void);
/* 1 in a child made by fork() after the driver was loaded: CUDA is unusable there, and
   gh_driver_load() returns GH_DRIVER_FORKED. */
int gh_driver_forked(void);
extern const char gh_fork_message[];

#endif /* GPUHOST_CUDA_API_H */
