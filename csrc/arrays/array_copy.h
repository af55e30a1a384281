/* array_copy.c: a DeviceArray's copies (every layout, planned once), memsets and
 * to_device() for numpy arrays.
 */
#ifndef GPUHOST_ARRAY_COPY_H
#define GPUHOST_ARRAY_COPY_H

#include "devicearray.h"

/* DeviceArray.copy_to_host(ary=None, stream=0) and copy_to_device(ary, stream=0). */
PyObject *gh_devicearray_copy_to_host(gh_devicearray *self, PyObject *args, PyObject *kwargs);
PyObject *gh_devicearray_copy_to_device(gh_devicearray *self, PyObject *args, PyObject *kwargs);
/* Set every element of `a` to the `itemsize` bytes at `item` with a driver memset, on
   `stream` (NULL: the array's), where the bytes repeat a 1-, 2- or 4-byte unit and the
   layout is at most two strided rows: 1 done, 0 not done that way, -1 error. */
int gh_array_fill(gh_devicearray *a, const char *item, PyObject *stream);
/* to_device, memset, copy_2d, plan_layout: module functions. */
extern PyMethodDef gh_array_copy_methods[];

#endif /* GPUHOST_ARRAY_COPY_H */
