/* gpuhost's declarations of NVRTC (nvrtc_api.h) checked against NVRTC's own header, where the
 * build finds one (a toolkit's include/, the nvidia-cuda-nvrtc wheel's): each entry point's
 * type, NVRTC_SUCCESS, the sizes of the two types.  A mismatch fails the build.  Without the
 * header this file compiles to nothing.
 */
#if defined(__has_include)
#if __has_include(<nvrtc.h>)
#define GH_NVRTC_HAVE_HEADER 1
#endif
#endif

#ifdef GH_NVRTC_HAVE_HEADER
#include <nvrtc.h>

#define GH_NVRTC_ABI_CHECK 1 /* nvrtc_api.h: gpuhost's gh_ types, not NVRTC's names again */
#define GH_RT(t)           t /* NVRTC's own types in GH_NVRTC_API_LIST */
#include "nvrtc_api.h"

#define SAME_FN(ret, name, params)                                                                 \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&nvrtc##name), ret(*) params),          \
                   "nvrtc" #name ": gpuhost's declaration differs from nvrtc.h");
GH_NVRTC_API_LIST(SAME_FN)

_Static_assert(sizeof(nvrtcResult) == sizeof(gh_nvrtcResult), "nvrtcResult's size");
_Static_assert(NVRTC_SUCCESS == GH_NVRTC_SUCCESS, "NVRTC_SUCCESS differs from nvrtc.h");
_Static_assert(sizeof(nvrtcProgram) == sizeof(gh_nvrtcProgram), "nvrtcProgram's size");
#else
typedef int gh_nvrtc_abi_unchecked; /* no nvrtc.h where this was built (ISO C: no empty file) */
#endif
