/* nvtx.c: NVTX ranges and marks (module functions). */
#ifndef GPUHOST_NVTX_H
#define GPUHOST_NVTX_H

#include "base/state.h"

extern PyMethodDef gh_nvtx_methods[];

#endif /* GPUHOST_NVTX_H */
