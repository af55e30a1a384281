/* csrc/base/errors.h: errors.c's part of base.h, the one raising path.  CUDA, NVRTC and
 * gpuhost's own errors become the classes of gpuhost/errors.py; a driver that does not load
 * becomes CudaSupportError.  gh_check, which every driver call goes through, is inline here:
 * its slow path is gh_raise_cuda.
 */
#ifndef GPUHOST_BASE_ERRORS_H
#define GPUHOST_BASE_ERRORS_H

#include "state.h"

/* Set CudaAPIError, or the subclass `res` calls for (CudaOutOfMemoryError,
   StreamCaptureError), for `res` returned by entry point `id`; returns -1.  `res` must not
   be CUDA_SUCCESS. */
int gh_raise_cuda(CUresult res, gh_cu_id id);
/* gh_raise_cuda with `detail` (e.g. a JIT log; may be NULL) appended to the message. */
int gh_raise_cuda_detail(CUresult res, gh_cu_id id, const char *detail);
/* 0 if res is CUDA_SUCCESS, else raise as gh_raise_cuda and return -1. */
static inline int
gh_check(CUresult res, gh_cu_id id)
{
    return res == CUDA_SUCCESS ? 0 : gh_raise_cuda(res, id);
}
/* Raise gpuhost.errors' class `kind` (message); returns -1.  For the classes that take one
   string. */
int gh_raise(gh_exception kind, const char *fmt, ...);
/* Warn (RuntimeWarning, never raise) that cleanup call `id` failed with `res`. */
void gh_warn_cleanup(CUresult res, gh_cu_id id);
/* errors.c: raise NvrtcError(code, name, call, log); returns -1. */
int gh_raise_nvrtc(int code, const char *name, const char *call, const char *log);
/* Load the driver the first time (cuda_api.c's gh_driver_load); 0, or -1 with
   CudaSupportError (no usable driver) or CudaDriverError (a child forked after it loaded)
   set. */
int gh_driver_ensure(void);
/* _set_exceptions, is_available, driver_version, driver_library: module functions. */
extern PyMethodDef gh_errors_methods[];
/* New reference to gpuhost.errors' class `kind`, as registered in the module state `st` (NULL:
   in this interpreter's gpuhost._core); NULL with RuntimeError if it never was. */
PyObject *gh_exception_class(gh_state *st, gh_exception kind);
/* Visit, clear (module teardown) the registered classes. */
int gh_errors_traverse(gh_state *st, visitproc visit, void *arg);
void gh_errors_clear(gh_state *st);

#endif /* GPUHOST_BASE_ERRORS_H */
