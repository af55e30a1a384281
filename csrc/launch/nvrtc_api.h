/* The libnvrtc entry points gpuhost calls: one list, one place.  Its own declarations of the
 * NVRTC types they use: building never needs nvrtc.h (nor the 58 MB wheel that ships it).
 *
 * Written from NVRTC's documented ABI (nvrtc.h of CUDA 12.0 and later): nvrtcResult is an
 * enum (an int) of which gpuhost names only NVRTC_SUCCESS, since the library's own
 * nvrtcGetErrorString names the rest; a program is an opaque pointer.  NVRTC has no
 * versioned symbols: X(return type, Name, parameters) is the function nvrtc<Name>.  All of
 * them exist since NVRTC 12.0 (GetLTOIR is the newest).  csrc/nvrtc_abi_check.c compares
 * each declaration with the real header wherever the build finds one (a toolkit ships it).
 *
 * GH_RT(t) names NVRTC type t: gpuhost's own (gh_t) here, NVRTC's own (t) in the check.
 */
#ifndef GPUHOST_NVRTC_API_H
#define GPUHOST_NVRTC_API_H

#include <stddef.h>

#include <cuda.h>

#ifndef GH_RT
#define GH_RT(t) gh_##t
#endif

typedef int gh_nvrtcResult;
typedef struct gh_nvrtcProgram *gh_nvrtcProgram;
#define GH_NVRTC_SUCCESS 0

#ifndef GH_NVRTC_ABI_CHECK
/* NVRTC's names for them, as the rest of csrc/ spells them. */
typedef gh_nvrtcResult nvrtcResult;
typedef gh_nvrtcProgram nvrtcProgram;
enum { NVRTC_SUCCESS = GH_NVRTC_SUCCESS };
#endif

#define GH_NVRTC_API_LIST(X)                                                                       \
    X(GH_RT(nvrtcResult), Version, (int *, int *))                                                 \
    X(const char *, GetErrorString, (GH_RT(nvrtcResult)))                                          \
    X(GH_RT(nvrtcResult), GetNumSupportedArchs, (int *))                                           \
    X(GH_RT(nvrtcResult), GetSupportedArchs, (int *))                                              \
    X(GH_RT(nvrtcResult), CreateProgram,                                                           \
      (GH_RT(nvrtcProgram) *, const char *, const char *, int, const char *const *,                \
       const char *const *))                                                                       \
    X(GH_RT(nvrtcResult), DestroyProgram, (GH_RT(nvrtcProgram) *))                                 \
    X(GH_RT(nvrtcResult), AddNameExpression, (GH_RT(nvrtcProgram), const char *const))             \
    X(GH_RT(nvrtcResult), CompileProgram, (GH_RT(nvrtcProgram), int, const char *const *))         \
    X(GH_RT(nvrtcResult), GetProgramLogSize, (GH_RT(nvrtcProgram), size_t *))                      \
    X(GH_RT(nvrtcResult), GetProgramLog, (GH_RT(nvrtcProgram), char *))                            \
    X(GH_RT(nvrtcResult), GetPTXSize, (GH_RT(nvrtcProgram), size_t *))                             \
    X(GH_RT(nvrtcResult), GetPTX, (GH_RT(nvrtcProgram), char *))                                   \
    X(GH_RT(nvrtcResult), GetCUBINSize, (GH_RT(nvrtcProgram), size_t *))                           \
    X(GH_RT(nvrtcResult), GetCUBIN, (GH_RT(nvrtcProgram), char *))                                 \
    X(GH_RT(nvrtcResult), GetLTOIRSize, (GH_RT(nvrtcProgram), size_t *))                           \
    X(GH_RT(nvrtcResult), GetLTOIR, (GH_RT(nvrtcProgram), char *))                                 \
    X(GH_RT(nvrtcResult), GetLoweredName, (GH_RT(nvrtcProgram), const char *const, const char **))

typedef struct {
#define GH_NVRTC_FIELD(ret, name, params) ret(*name) params;
    GH_NVRTC_API_LIST(GH_NVRTC_FIELD)
#undef GH_NVRTC_FIELD
} gh_nvrtc_api;

typedef enum {
#define GH_NVRTC_ENUM(ret, name, params) GH_NVRTC_##name,
    GH_NVRTC_API_LIST(GH_NVRTC_ENUM)
#undef GH_NVRTC_ENUM
        GH_NVRTC__COUNT
} gh_nvrtc_id;

/* The major version of the headers gpuhost was built with: the libnvrtc it looks for. */
#define GH_NVRTC_MAJOR (CUDA_VERSION / 1000)

/* ---- nvrtc_api.c: the NVRTC loader ---- */

extern gh_nvrtc_api gh_nvrtc;
/* Load libnvrtc the first time; 0, or -1 with NvrtcSupportError listing the paths tried. */
int gh_nvrtc_ensure(void);
/* The libnvrtc path that was loaded, or NULL. */
const char *gh_nvrtc_path(void);
/* 0 if res is NVRTC_SUCCESS, else raise NvrtcError naming entry point `id`; -1. */
int gh_check_nvrtc(nvrtcResult res, gh_nvrtc_id id);

#endif /* GPUHOST_NVRTC_API_H */
