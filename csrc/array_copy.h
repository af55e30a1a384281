/* array_copy.c: a DeviceArray's copies (every layout, planned once), memsets and
 * to_device() for numpy arrays.
 */
#ifndef GPUHOST_ARRAY_COPY_H
#define GPUHOST_ARRAY_COPY_H

#include "devicearray.h"

/* DeviceArray.copy_to_host(ary=None, stream=0) and copy_to_device(ary, stream=0). */
PyObject *gh_devicearray_copy_to_host(gh_devicearray *self, PyObject *args, PyObject *kwargs);
PyObject *gh_devicearray_copy_to_device(gh_devicearray *self, PyObject *args, PyObject *kwargs);
/* to_device, memset, copy_2d, plan_layout: module functions. */
extern PyMethodDef gh_array_copy_methods[];

#endif /* GPUHOST_ARRAY_COPY_H */
