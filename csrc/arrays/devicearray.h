/* devicearray.c: the DeviceArray type (a view of device memory). */
#ifndef GPUHOST_DEVICEARRAY_H
#define GPUHOST_DEVICEARRAY_H

#include "core/context.h"

#define GH_MAXDIMS 64 /* NumPy 2's limit */

/* A view of device memory: address, layout, and what keeps the memory alive. */
typedef struct {
    PyObject_HEAD
    gh_context *context; /* strong */
    uint64_t generation;
    CUdeviceptr ptr;  /* address of the first element */
    PyObject *owner;  /* keeps the memory alive (an Allocation or a foreign object); or NULL */
    void *dtype;      /* PyArray_Descr *, strong */
    PyObject *stream; /* the bound stream, or NULL */
    PyObject *weakreflist;
    int ndim;
    int readonly; /* memory its exporter declared read-only (CUDA array interface data[1]) */
    /* gpuhost.jit's key of this array's numba type (jit_args.c), made on its first launch
       (the layout never changes): jit_key[0] 0 not made yet, 'A' made, 'x' not cacheable */
    unsigned char jit_key[6];
    Py_ssize_t shape[GH_MAXDIMS];
    Py_ssize_t strides[GH_MAXDIMS];
} gh_devicearray;

int gh_devicearray_init_type(PyObject *module, gh_state *st);
/* A new DeviceArray viewing `ptr` in `ctx` (made in `generation`), kept alive by `owner`;
   `dtype` is a PyArray_Descr *.  New reference or NULL. */
PyObject *gh_devicearray_new(gh_state *st, gh_context *ctx, uint64_t generation, CUdeviceptr ptr,
                             PyObject *owner, void *dtype, int ndim, const Py_ssize_t *shape,
                             const Py_ssize_t *strides, PyObject *stream);

/* The view self[key] for a key of slices and ints (every axis indexed by an int: a 0-d
   view of that element); NotImplemented for other keys and out-of-range ints; NULL with an
   error.  New reference. */
PyObject *gh_devicearray_key_view(gh_devicearray *self, PyObject *key);
/* Whether `a` is C-contiguous (fortran 0) or Fortran-contiguous (fortran 1). */
int gh_devicearray_is_contiguous(const gh_devicearray *a, int fortran);
/* The number of elements of `a`. */
Py_ssize_t gh_devicearray_size(const gh_devicearray *a);
/* -1 with ValueError naming `what` if `a` is read-only memory (a CUDA array interface
   export whose data[1] is True): nothing may write into it.  0 otherwise. */
int gh_devicearray_check_writable(gh_devicearray *a, const char *what);

#endif /* GPUHOST_DEVICEARRAY_H */
