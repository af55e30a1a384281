/* The libnccl entry points gpuhost calls, and gpuhost's own declarations of the NCCL types
 * they use: building never needs nccl.h (the no-toolkit build has none).
 *
 * Written from NCCL's documented ABI (nccl.h of NCCL 2.18 and later): every enum is an int,
 * ncclUniqueId is 128 bytes, a communicator is an opaque pointer, ncclConfig_t starts with
 * size/magic/version and grows at its end.  csrc/nccl_abi_check.c compares each declaration
 * with the real header wherever the build finds one (the toolkit ships it).
 *
 * GH_NT(t) names NCCL type t: gpuhost's own (gh_t) here, NCCL's own (t) in the check.
 */
#ifndef GPUHOST_NCCL_API_H
#define GPUHOST_NCCL_API_H

#include <stddef.h>

#include <cuda.h>

#ifndef GH_NT
#define GH_NT(t) gh_##t
#endif

typedef struct gh_ncclComm *gh_ncclComm_t;

#define GH_NCCL_UNIQUE_ID_BYTES 128
typedef struct {
    char internal[GH_NCCL_UNIQUE_ID_BYTES];
} gh_ncclUniqueId;

typedef int gh_ncclResult_t;
typedef int gh_ncclDataType_t;
typedef int gh_ncclRedOp_t;

/* ncclResult_t */
#define GH_NCCL_RESULTS(X)                                                                         \
    X(ncclSuccess, 0)                                                                              \
    X(ncclUnhandledCudaError, 1)                                                                   \
    X(ncclSystemError, 2)                                                                          \
    X(ncclInternalError, 3)                                                                        \
    X(ncclInvalidArgument, 4)                                                                      \
    X(ncclInvalidUsage, 5)                                                                         \
    X(ncclRemoteError, 6)                                                                          \
    X(ncclInProgress, 7)

/* ncclDataType_t */
#define GH_NCCL_DTYPES(X)                                                                          \
    X(ncclInt8, 0)                                                                                 \
    X(ncclUint8, 1)                                                                                \
    X(ncclInt32, 2)                                                                                \
    X(ncclUint32, 3)                                                                               \
    X(ncclInt64, 4)                                                                                \
    X(ncclUint64, 5)                                                                               \
    X(ncclFloat16, 6)                                                                              \
    X(ncclFloat32, 7)                                                                              \
    X(ncclFloat64, 8)                                                                              \
    X(ncclBfloat16, 9)                                                                             \
    X(ncclFloat8e4m3, 10)                                                                          \
    X(ncclFloat8e5m2, 11)

/* ncclRedOp_t (the built-in ones) */
#define GH_NCCL_OPS(X)                                                                             \
    X(ncclSum, 0)                                                                                  \
    X(ncclProd, 1)                                                                                 \
    X(ncclMax, 2)                                                                                  \
    X(ncclMin, 3)                                                                                  \
    X(ncclAvg, 4)

#define GH_NCCL_CONST(name, value) GH_##name = value,
enum { GH_NCCL_RESULTS(GH_NCCL_CONST) GH_NCCL_DTYPES(GH_NCCL_CONST) GH_NCCL_OPS(GH_NCCL_CONST) };
#undef GH_NCCL_CONST

/* ncclConfig_t as of NCCL 2.18 (splitShare is its newest field here): NCCL reads a config
   by its size and version, so an older layout stays valid in newer libraries. */
#define GH_NCCL_CONFIG_MAGIC     0xcafebeefu
#define GH_NCCL_CONFIG_VERSION   21800 /* NCCL_VERSION(2, 18, 0) */
#define GH_NCCL_CONFIG_UNDEF_INT (-2147483647 - 1)
typedef struct {
    size_t size;
    unsigned int magic;
    unsigned int version;
    int blocking;
    int cgaClusterSize;
    int minCTAs;
    int maxCTAs;
    const char *netName;
    int splitShare;
} gh_ncclConfig_t;

/* X(return type, Name, parameters): the function nccl<Name>.  GH_NCCL_API_LIST is the one list
   (the function table, its enum and its names come from it): first the entry points every
   supported NCCL has (2.18 and later), which must all load, then the optional ones, which a
   newer NCCL added and which are looked up on first use (gh_nccl_optional). */
#define GH_NCCL_REQUIRED_LIST(X)                                                                   \
    X(GH_NT(ncclResult_t), GetVersion, (int *))                                                    \
    X(const char *, GetErrorString, (GH_NT(ncclResult_t)))                                         \
    X(const char *, GetLastError, (GH_NT(ncclComm_t)))                                             \
    X(GH_NT(ncclResult_t), GetUniqueId, (GH_NT(ncclUniqueId) *))                                   \
    X(GH_NT(ncclResult_t), CommInitRank, (GH_NT(ncclComm_t) *, int, GH_NT(ncclUniqueId), int))     \
    X(GH_NT(ncclResult_t), CommInitRankConfig,                                                     \
      (GH_NT(ncclComm_t) *, int, GH_NT(ncclUniqueId), int, GH_NT(ncclConfig_t) *))                 \
    X(GH_NT(ncclResult_t), CommInitAll, (GH_NT(ncclComm_t) *, int, const int *))                   \
    X(GH_NT(ncclResult_t), CommSplit,                                                              \
      (GH_NT(ncclComm_t), int, int, GH_NT(ncclComm_t) *, GH_NT(ncclConfig_t) *))                   \
    X(GH_NT(ncclResult_t), CommFinalize, (GH_NT(ncclComm_t)))                                      \
    X(GH_NT(ncclResult_t), CommDestroy, (GH_NT(ncclComm_t)))                                       \
    X(GH_NT(ncclResult_t), CommAbort, (GH_NT(ncclComm_t)))                                         \
    X(GH_NT(ncclResult_t), CommGetAsyncError, (GH_NT(ncclComm_t), GH_NT(ncclResult_t) *))          \
    X(GH_NT(ncclResult_t), CommCount, (const GH_NT(ncclComm_t), int *))                            \
    X(GH_NT(ncclResult_t), CommCuDevice, (const GH_NT(ncclComm_t), int *))                         \
    X(GH_NT(ncclResult_t), CommUserRank, (const GH_NT(ncclComm_t), int *))                         \
    X(GH_NT(ncclResult_t), AllReduce,                                                              \
      (const void *, void *, size_t, GH_NT(ncclDataType_t), GH_NT(ncclRedOp_t), GH_NT(ncclComm_t), \
       cudaStream_t))                                                                              \
    X(GH_NT(ncclResult_t), Reduce,                                                                 \
      (const void *, void *, size_t, GH_NT(ncclDataType_t), GH_NT(ncclRedOp_t), int,               \
       GH_NT(ncclComm_t), cudaStream_t))                                                           \
    X(GH_NT(ncclResult_t), Broadcast,                                                              \
      (const void *, void *, size_t, GH_NT(ncclDataType_t), int, GH_NT(ncclComm_t), cudaStream_t)) \
    X(GH_NT(ncclResult_t), AllGather,                                                              \
      (const void *, void *, size_t, GH_NT(ncclDataType_t), GH_NT(ncclComm_t), cudaStream_t))      \
    X(GH_NT(ncclResult_t), ReduceScatter,                                                          \
      (const void *, void *, size_t, GH_NT(ncclDataType_t), GH_NT(ncclRedOp_t), GH_NT(ncclComm_t), \
       cudaStream_t))                                                                              \
    X(GH_NT(ncclResult_t), Send,                                                                   \
      (const void *, size_t, GH_NT(ncclDataType_t), int, GH_NT(ncclComm_t), cudaStream_t))         \
    X(GH_NT(ncclResult_t), Recv,                                                                   \
      (void *, size_t, GH_NT(ncclDataType_t), int, GH_NT(ncclComm_t), cudaStream_t))               \
    X(GH_NT(ncclResult_t), GroupStart, (void))                                                     \
    X(GH_NT(ncclResult_t), GroupEnd, (void))

/* Since NCCL 2.19: user-buffer registration and NCCL's own allocator. */
#define GH_NCCL_OPTIONAL_LIST(X)                                                                   \
    X(GH_NT(ncclResult_t), CommRegister, (const GH_NT(ncclComm_t), void *, size_t, void **))       \
    X(GH_NT(ncclResult_t), CommDeregister, (const GH_NT(ncclComm_t), void *))                      \
    X(GH_NT(ncclResult_t), MemAlloc, (void **, size_t))                                            \
    X(GH_NT(ncclResult_t), MemFree, (void *))

#define GH_NCCL_API_LIST(X) GH_NCCL_REQUIRED_LIST(X) GH_NCCL_OPTIONAL_LIST(X)

/* cudaStream_t is the runtime's name for the driver's CUstream (the same struct pointer;
   C11 allows the typedef to be repeated where the runtime's header declared it too). */
typedef struct CUstream_st *cudaStream_t;

typedef struct {
#define GH_NCCL_FIELD(ret, name, params) ret(*name) params;
    GH_NCCL_API_LIST(GH_NCCL_FIELD)
#undef GH_NCCL_FIELD
} gh_nccl_api;

typedef enum {
#define GH_NCCL_ENUM(ret, name, params) GH_NCCL_##name,
    GH_NCCL_API_LIST(GH_NCCL_ENUM)
#undef GH_NCCL_ENUM
        GH_NCCL__COUNT
} gh_nccl_id;

/* The first optional entry point: those before it must all load. */
#define GH_NCCL__FIRST_OPTIONAL GH_NCCL_CommRegister
/* The NCCL version that added the optional entry points. */
#define GH_NCCL_OPTIONAL_SINCE "2.19"

/* The major version of the library gpuhost looks for (libnccl.so.2). */
#define GH_NCCL_MAJOR 2

#endif /* GPUHOST_NCCL_API_H */
