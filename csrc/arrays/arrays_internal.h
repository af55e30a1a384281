/* csrc/arrays/'s private header: what only arrays/'s files share.  Each file of arrays/
 * includes it (it includes arrays.h); no file of another folder does.
 */
#ifndef GPUHOST_ARRAYS_INTERNAL_H
#define GPUHOST_ARRAYS_INTERNAL_H

#include "arrays.h"

/* ---- interop.c and interop_cai.c ---- */
/* What interop.c and interop_cai.c share, and nothing outside them uses: the names they look
 * up (interned once in the module state), the message of a failed read, a tuple of ints.
 */
enum {
    N_CAI,
    N_VERSION,
    N_SHAPE,
    N_TYPESTR,
    N_DATA,
    N_STRIDES,
    N_STREAM,
    N_MASK,
    N_DESCR,
    N_PTR,
    N_DEVICE_ID,
    N_DTYPE,
    N_DLPACK,
    N_MAX_VERSION,
    N_NDIM,
    N_C_CONTIGUOUS,
    N_SIZE,
    N__COUNT
};
extern const char *const gh_interop_name_text[N__COUNT];
/* the module state's room for them (base/state.h: interop_names) */
_Static_assert(N__COUNT <= 24, "the module state's interop_names is too short");

/* The interned name `n` (borrowed; interned at the module's init, kept in its state: never
   NULL). */
PyObject *gh_interop_name(gh_state *st, int n);
/* Raise `exc` with "<who>(): <what> <index>: <text>" (as much as the use names); -1. */
int gh_foreign_raise(const gh_foreign_use *u, PyObject *exc, const char *fmt, ...);
/* A tuple (or list) of `ndim` ints (ndim < 0: any length) into out, which `obj`'s `what`
   is; 0, or -1 with TypeError / ValueError. */
int gh_foreign_int_tuple(const gh_foreign_use *u, PyObject *obj, PyObject *tuple, int ndim,
                         Py_ssize_t *out, const char *what);

/* ---- array_copy.c ---- */
/* DeviceArray.copy_to_host(ary=None, stream=0) and copy_to_device(ary, stream=0). */
PyObject *gh_devicearray_copy_to_host(gh_devicearray *self, PyObject *args, PyObject *kwargs);

PyObject *gh_devicearray_copy_to_device(gh_devicearray *self, PyObject *args, PyObject *kwargs);

/* Set every element of `a` to the `itemsize` bytes at `item` with a driver memset, on
   `stream` (NULL: the array's), where the bytes repeat a 1-, 2- or 4-byte unit and the
   layout is at most two strided rows: 1 done, 0 not done that way, -1 error. */
int gh_array_fill(gh_devicearray *a, const char *item, PyObject *stream);

/* ---- devicearray.c ---- */
/* A new DeviceArray viewing `ptr` in `ctx` (made in `generation`), kept alive by `owner`;
   `dtype` is a PyArray_Descr *.  New reference or NULL. */
PyObject *gh_devicearray_new(gh_state *st, gh_context *ctx, uint64_t generation, CUdeviceptr ptr,
                             PyObject *owner, void *dtype, int ndim, const Py_ssize_t *shape,
                             const Py_ssize_t *strides, PyObject *stream);

/* A view of `self`'s memory at `ptr` with another layout (same dtype, owner, stream and
   read-only flag).  New reference or NULL. */
PyObject *gh_devicearray_view(gh_devicearray *self, CUdeviceptr ptr, int ndim,
                              const Py_ssize_t *shape, const Py_ssize_t *strides);

/* -1 with ValueError naming `what` if `a` is read-only memory (a CUDA array interface
   export whose data[1] is True): nothing may write into it.  0 otherwise. */
int gh_devicearray_check_writable(gh_devicearray *a, const char *what);

/* ---- array_index.c ---- */
/* DeviceArray's mapping and iteration slots (devicearray.c's type names them): self[key],
   self[key] = value and iter(self), numpy's basic indexing in C. */
PyObject *gh_devicearray_getitem(PyObject *self, PyObject *key);
int gh_devicearray_setitem(PyObject *self, PyObject *key, PyObject *value);
PyObject *gh_devicearray_iter(PyObject *self);

/* ---- dlpack.c ---- */
/* The NumPy dtype of a DLPack dtype (new reference), or NULL with BufferError. */
void *gh_dlpack_descr_of(gh_dl_dtype t);

/* Take over an unconsumed DLPack capsule ('dltensor' or 'dltensor_versioned', which is
   renamed as used): *t is its tensor, *owner a new object whose end calls the producer's
   deleter.  0, or -1 with TypeError (not such a capsule, or consumed already) or BufferError
   (an unknown major version). */
int gh_dlpack_take(gh_state *st, PyObject *capsule, gh_dl_tensor **t, PyObject **owner);

/* Whether the tensor an owner of gh_dlpack_take holds was exported read-only. */
int gh_dlpack_owner_readonly(PyObject *owner);

/* An owner (as gh_dlpack_take's) of a versioned tensor the caller took from a producer;
   new reference, or NULL (the deleter has then been called). */
PyObject *gh_dlpack_own(gh_state *st, gh_dl_managed_versioned *m);

/* DeviceArray.__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None). */
PyObject *gh_dlpack_export(gh_devicearray *a, PyObject *args, PyObject *kwargs);

/* ---- interop.c ---- */
/* Fill f from a DLPack tensor `t` that `obj` exported (shape and strides copied); 0, 1 for
   host memory where the use is host_ok, or -1 with TypeError for memory not the device's,
   BufferError for a dtype of sub-byte items or several lanes. */
int gh_foreign_fill_dl(gh_foreign_use *u, PyObject *obj, const gh_dl_tensor *t, gh_foreign *f);

/* obj.__dlpack__(stream=<consumer>, max_version=(1, 0)) (a producer older than DLPack 1.0
   without max_version): new reference or NULL. */
PyObject *gh_foreign_dlpack_capsule(gh_state *st, PyObject *obj, CUstream consumer);

/* The DLPack exchange API of obj's type, or NULL (none, or an error: PyErr_Occurred()). */
const gh_dl_exchange_api *gh_foreign_exchange_api(gh_state *st, PyObject *obj);

/* ---- interop_arrays.c ---- */
/* A DeviceArray over what `f` (read from `obj`) describes, bound to `stream` (NULL: none),
   kept alive by f->keep or `obj`; `void_ok`: a dtype NumPy lacks becomes raw bytes (|V2),
   else it is a BufferError.  New reference or NULL. */
PyObject *gh_foreign_as_array(gh_state *st, PyObject *obj, gh_foreign *f, PyObject *stream,
                              int void_ok);

/* ---- interop_cai.c ---- */
/* Read a CUDA array interface dict `dict` that `obj` exported; 0 or -1. */
int gh_foreign_read_cai(gh_foreign_use *u, PyObject *obj, PyObject *dict, gh_foreign *f);

#endif /* GPUHOST_ARRAYS_INTERNAL_H */
