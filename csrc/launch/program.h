/* program.c: NVRTC compilation (nvrtc_compile, nvrtc_supported_archs). */
#ifndef GPUHOST_PROGRAM_H
#define GPUHOST_PROGRAM_H

#include "base/state.h"

extern PyMethodDef gh_program_methods[];

#endif /* GPUHOST_PROGRAM_H */
