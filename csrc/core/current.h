/* current.c: the module functions of this thread's current device and context
 * (device_count, get_device, select_device, current_device, current_context, synchronize,
 * close).
 */
#ifndef GPUHOST_CURRENT_H
#define GPUHOST_CURRENT_H

#include "base/state.h"

extern PyMethodDef gh_current_methods[];

#endif /* GPUHOST_CURRENT_H */
