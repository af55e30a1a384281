/* The libnvrtc entry points gpuhost calls: one list, one place.
 *
 * NVRTC has no versioned symbols, so each X(Name) is the function nvrtc<Name> with the
 * prototype nvrtc.h gives it.  All of them exist since NVRTC 12.0 (GetLTOIR is the newest).
 */
#ifndef GPUHOST_NVRTC_API_H
#define GPUHOST_NVRTC_API_H

#include <nvrtc.h>

#define GH_NVRTC_API_LIST(X)                                                                       \
    X(Version)                                                                                     \
    X(GetErrorString)                                                                              \
    X(GetNumSupportedArchs)                                                                        \
    X(GetSupportedArchs)                                                                           \
    X(CreateProgram)                                                                               \
    X(DestroyProgram)                                                                              \
    X(AddNameExpression)                                                                           \
    X(CompileProgram)                                                                              \
    X(GetProgramLogSize)                                                                           \
    X(GetProgramLog)                                                                               \
    X(GetPTXSize)                                                                                  \
    X(GetPTX)                                                                                      \
    X(GetCUBINSize)                                                                                \
    X(GetCUBIN)                                                                                    \
    X(GetLTOIRSize)                                                                                \
    X(GetLTOIR)                                                                                    \
    X(GetLoweredName)

typedef struct {
#define GH_NVRTC_FIELD(name) __typeof__(nvrtc##name) *name;
    GH_NVRTC_API_LIST(GH_NVRTC_FIELD)
#undef GH_NVRTC_FIELD
} gh_nvrtc_api;

typedef enum {
#define GH_NVRTC_ENUM(name) GH_NVRTC_##name,
    GH_NVRTC_API_LIST(GH_NVRTC_ENUM)
#undef GH_NVRTC_ENUM
        GH_NVRTC__COUNT
} gh_nvrtc_id;

/* The major version of the headers gpuhost was built with: the libnvrtc it looks for. */
#define GH_NVRTC_MAJOR (CUDA_VERSION / 1000)

#endif /* GPUHOST_NVRTC_API_H */
