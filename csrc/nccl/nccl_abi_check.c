/* gpuhost's declarations of NCCL (nccl_api.h) checked against NCCL's own header, where the
 * build finds one: each entry point's type, each constant's value, the config's layout.  A
 * mismatch fails the build.  gh_nccl_abi_checked says whether the check ran.
 */
#if defined(__has_include)
#if __has_include(<nccl.h>)
#define GH_NCCL_HAVE_HEADER 1
#endif
#endif

#ifdef GH_NCCL_HAVE_HEADER
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes" /* nccl.h declares f() for f(void) */
#include <nccl.h>
#pragma GCC diagnostic pop
#include <stddef.h>

#define GH_NT(t) t /* NCCL's own types in GH_NCCL_API_LIST */
#include "nccl_api.h"

#define SAME_FN(ret, name, params)                                                                 \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&nccl##name), ret(*) params),           \
                   "nccl" #name ": gpuhost's declaration differs from nccl.h");
GH_NCCL_REQUIRED_LIST(SAME_FN)
#if NCCL_VERSION_CODE >= 21900 /* the optional ones, where this header has them */
GH_NCCL_OPTIONAL_LIST(SAME_FN)
#endif

#define SAME_VALUE(name, value)                                                                    \
    _Static_assert((int)name == value && (int)GH_##name == (int)name,                              \
                   #name ": differs from nccl.h");
GH_NCCL_RESULTS(SAME_VALUE)
GH_NCCL_DTYPES(SAME_VALUE)
GH_NCCL_OPS(SAME_VALUE)

_Static_assert(sizeof(ncclResult_t) == sizeof(gh_ncclResult_t), "ncclResult_t's size");
_Static_assert(sizeof(ncclDataType_t) == sizeof(gh_ncclDataType_t), "ncclDataType_t's size");
_Static_assert(sizeof(ncclRedOp_t) == sizeof(gh_ncclRedOp_t), "ncclRedOp_t's size");
_Static_assert(sizeof(ncclUniqueId) == sizeof(gh_ncclUniqueId), "ncclUniqueId's size");
_Static_assert(NCCL_UNIQUE_ID_BYTES == GH_NCCL_UNIQUE_ID_BYTES, "NCCL_UNIQUE_ID_BYTES");
_Static_assert(sizeof(ncclComm_t) == sizeof(gh_ncclComm_t), "ncclComm_t's size");

#define SAME_FIELD(field)                                                                          \
    _Static_assert(offsetof(ncclConfig_t, field) == offsetof(gh_ncclConfig_t, field) &&            \
                       sizeof(((ncclConfig_t *)0)->field) ==                                       \
                           sizeof(((gh_ncclConfig_t *)0)->field),                                  \
                   "ncclConfig_t." #field " differs from nccl.h");
SAME_FIELD(size)
SAME_FIELD(magic)
SAME_FIELD(version)
SAME_FIELD(blocking)
SAME_FIELD(cgaClusterSize)
SAME_FIELD(minCTAs)
SAME_FIELD(maxCTAs)
SAME_FIELD(netName)
SAME_FIELD(splitShare)
_Static_assert(NCCL_CONFIG_UNDEF_INT == GH_NCCL_CONFIG_UNDEF_INT, "NCCL_CONFIG_UNDEF_INT");

const int gh_nccl_abi_checked = NCCL_VERSION_CODE; /* the header's version */
#else
const int gh_nccl_abi_checked = 0; /* no nccl.h where this was built */
#endif
