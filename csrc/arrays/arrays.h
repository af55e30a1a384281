/* csrc/arrays/'s public header: DeviceArray, its copies and indexing, DLPack's ABI, and
 * other libraries' device arrays read in C (interop), as launch/, jit/, nccl/ and module.c
 * use them.  What only arrays/'s files share is in arrays_internal.h.
 */
#ifndef GPUHOST_ARRAYS_H
#define GPUHOST_ARRAYS_H

#include "base/base.h"
#include "core/core.h"

#include <stdint.h>

/* ---- devicearray.c ---- */
/* devicearray.c: the DeviceArray type (a view of device memory). */
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

/* Whether `a` is C-contiguous (fortran 0) or Fortran-contiguous (fortran 1). */
int gh_devicearray_is_contiguous(const gh_devicearray *a, int fortran);
/* The number of elements of `a`. */
Py_ssize_t gh_devicearray_size(const gh_devicearray *a);

/* ---- array_copy.c ---- */
/* array_copy.c: a DeviceArray's copies (every layout, planned once), memsets and
 * to_device() for numpy arrays.
 */
/* to_device, memset, copy_2d, plan_layout: module functions. */
extern PyMethodDef gh_array_copy_methods[];

/* ---- array_index.c ---- */
/* array_index.c: DeviceArray indexing, assignment and iteration in C. */
/* Make the iterator type (module init); 0 or -1. */
int gh_array_index_init(PyObject *module, gh_state *st);

/* ---- dlpack.c ---- */
/* The DLPack ABI (https://dmlc.github.io/dlpack/latest/c_api.html), versions 0.8 and 1.x:
 * the structs a producer hands over in a PyCapsule.  Written from the specification. */
enum { GH_DL_CPU = 1, GH_DL_CUDA = 2, GH_DL_CUDA_HOST = 3, GH_DL_CUDA_MANAGED = 13 };
enum {
    GH_DL_INT = 0,
    GH_DL_UINT = 1,
    GH_DL_FLOAT = 2,
    GH_DL_BFLOAT = 4,
    GH_DL_COMPLEX = 5,
    GH_DL_BOOL = 6
};

#define GH_DL_FLAG_READ_ONLY (1ULL << 0)

typedef struct {
    int32_t device_type;
    int32_t device_id;
} gh_dl_device;

typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} gh_dl_dtype;

typedef struct {
    void *data;
    gh_dl_device device;
    int32_t ndim;
    gh_dl_dtype dtype;
    int64_t *shape;
    int64_t *strides; /* in elements; NULL means C-contiguous */
    uint64_t byte_offset;
} gh_dl_tensor;

typedef struct gh_dl_managed {
    gh_dl_tensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct gh_dl_managed *self);
} gh_dl_managed;

typedef struct {
    uint32_t major;
    uint32_t minor;
} gh_dl_version;

typedef struct gh_dl_managed_versioned {
    gh_dl_version version;
    void *manager_ctx;
    void (*deleter)(struct gh_dl_managed_versioned *self);
    uint64_t flags;
    gh_dl_tensor dl_tensor;
} gh_dl_managed_versioned;

/* DLPack's C exchange API (DLPack 1.3, dmlc/dlpack#174): a producer type's
   __dlpack_c_exchange_api__ is a PyCapsule named "dlpack_exchange_api" of this table.  Each
   function returns 0, or -1 with a Python exception set. */
typedef struct gh_dl_exchange_header {
    gh_dl_version version;
    struct gh_dl_exchange_header *prev_api;
} gh_dl_exchange_header;

typedef struct {
    gh_dl_exchange_header header;
    void *managed_tensor_allocator;
    int (*managed_tensor_from_py_object_no_sync)(void *py_object, gh_dl_managed_versioned **out);
    void *managed_tensor_to_py_object_no_sync;
    /* fills a DLTensor the caller owns, valid while the object lives; may be NULL */
    int (*dltensor_from_py_object_no_sync)(void *py_object, gh_dl_tensor *out);
    /* the producer's current stream on a device (NULL: its default stream) */
    int (*current_work_stream)(int32_t device_type, int32_t device_id, void **out_stream);
} gh_dl_exchange_api;

#define GH_DL_EXCHANGE_CAPSULE "dlpack_exchange_api"

int gh_dlpack_init(PyObject *module, gh_state *st);

/* ---- interop.c ---- */
/* interop.c: other libraries' device arrays and streams, read in C on every use. */
/* How much of a foreign array a use needs: its address alone (a pointer parameter of an
   NVRTC kernel), or its whole layout (gpuhost.jit's typing, copies, views). */
enum { GH_FOREIGN_POINTER = 0, GH_FOREIGN_LAYOUT = 1 };

/* Where a foreign array was read from. */
enum {
    GH_FROM_EXCHANGE = 'x', /* DLPack's C exchange API (__dlpack_c_exchange_api__) */
    GH_FROM_CUPY = 'p',     /* a CuPy ndarray's public attributes (data.ptr, shape, ...) */
    GH_FROM_CAI = 'c',      /* the CUDA array interface's dict */
    GH_FROM_DLPACK = 'd',   /* a capsule from __dlpack__() */
};

/* What a foreign device array says of itself, read once per use.  Shape and strides are
   filled only for GH_FOREIGN_LAYOUT uses. */
typedef struct {
    PyObject *obj; /* what was read (borrowed: the caller holds it during the use) */
    CUdeviceptr ptr;
    int ndim;
    int device;          /* CUDA ordinal, or -1 where the exporter does not say (CAI) */
    Py_ssize_t itemsize; /* 0 where the use needs only the address */
    PyObject *descr;     /* its NumPy dtype (strong), or NULL where NumPy has no such dtype
                            (bfloat16, float8: see `dl`) */
    gh_dl_dtype dl;      /* the DLPack dtype, for exporters that give one */
    char source;         /* GH_FROM_* */
    char readonly;       /* the exporter declared the memory read-only */
    char strides_given;  /* CAI: the dict had strides (numba's typing looks at that) */
    char has_dlpack;     /* the type has __dlpack__ (numba types it through DLPack) */
    char numba_typed;    /* the type has numba's _numba_type_ (numba types it itself) */
    char has_producer;   /* `producer` is the exporter's stream, to order the use after */
    CUstream producer;   /* CU_STREAM_LEGACY for the exporter's default stream */
    PyObject *keep;      /* what keeps the memory described alive (a DLPack capsule's
                            owner), strong; NULL where the object itself does */
    Py_ssize_t shape[GH_MAXDIMS];
    Py_ssize_t strides[GH_MAXDIMS]; /* in bytes */
} gh_foreign;

/* One use of foreign arrays (a launch, a copy, a collective): the stream the use is ordered
   on and what was learnt during it, so that several arguments cost one question each. */
typedef struct {
    gh_state *st;
    gh_context *context; /* where the use happens (borrowed), or NULL: the current one */
    CUstream consumer;   /* the use's stream (NULL: the default stream) */
    int need;            /* GH_FOREIGN_POINTER or GH_FOREIGN_LAYOUT */
    int host_ok;         /* a tensor in host memory is no error: gh_foreign_read says 2 */
    int any_strides;     /* strides that are not multiples of the item size are no error
                            (views and copies; a launch's kernel would misalign loads) */
    PyObject *who;       /* for messages: the kernel's or function's name (borrowed), or NULL */
    const char *what;    /* "parameter", "argument" ... */
    Py_ssize_t index;    /* which one, or -1 */
    int n_ordered;       /* producer streams already ordered before `consumer` */
    CUstream ordered[8];
    int n_streams; /* exporters' current streams asked during this use */
    struct {
        const void *api; /* the exchange API or CuPy's type entry asked */
        int device;
        CUstream stream;
    } streams[4];
} gh_foreign_use;

/* A use's `consumer` when it has no stream to order (a graph's kernel node). */
#define GH_NO_STREAM ((CUstream)(uintptr_t)-1)

/* Whether instances of `tp` are known (learnt before) to be other libraries' device arrays
   read through the exchange API or CuPy's attributes: a launch goes to them at once. */
int gh_foreign_known(gh_state *st, PyTypeObject *tp);

/* Start a use on `consumer` (NULL: the default stream) in `ctx` (NULL: the current one). */
void gh_foreign_use_init(gh_foreign_use *u, gh_state *st, gh_context *ctx, CUstream consumer,
                         int need);

/* Read `obj` as a device array: 1 read (release it with gh_foreign_release; any other
   answer leaves nothing to release), 0 `obj`
   exports no device array (nothing raised), 2 it is a tensor in host memory and the use
   said host_ok (nothing raised), -1 error (a malformed export, host memory, a
   consumed capsule...: the exception names the parameter the use is at). */
int gh_foreign_read(gh_foreign_use *u, PyObject *obj, gh_foreign *out);
void gh_foreign_release(gh_foreign *f);

/* Order the use's stream after the exporter's, as the CUDA array interface and DLPack ask
   (once per producer stream and use; a reused event, no Event object).  0 or -1. */
int gh_foreign_order(gh_foreign_use *u, const gh_foreign *f);

/* The element of `f` (read from `obj` by a use that needed its address alone): NumPy's kind
   letter ('i', 'u', 'f', 'c', 'b', 'V', ...; 'B' for DLPack's bfloat16) and item size, read
   from the exporter where the read had not (a CuPy array's dtype).  *kind is 0 where the
   exporter says no NumPy dtype.  0, or -1 with the error set. */
int gh_foreign_elem(gh_foreign_use *u, PyObject *obj, gh_foreign *f, char *kind,
                    Py_ssize_t *itemsize);

/* interop_cai.c: numba's typing of what was read. */
/* TypeError: `f` (read from `obj`) holds a DLPack dtype numba has no type for (float8,
   float4...).  Returns -1. */
int gh_foreign_raise_type(const gh_foreign_use *u, PyObject *obj, const gh_foreign *f);

/* numba's layout letter for `f` ('C', 'F' or 'A') as numba-cuda 0.30 types such an
   argument: through DLPack (NumPy's contiguity rules) where the type has __dlpack__ or the
   exchange API, else through the CUDA array interface (numba's own rule there).  0 where
   numba's typing of it fails (gpuhost.jit then leaves the launch to numba's rules). */
char gh_foreign_numba_layout(const gh_foreign *f);
/* NumPy's contiguity of a layout: 'C' (first), 'F' or 'A'; extents of 1 do not decide, an
   empty array is 'C'.  gpuhost's DeviceArrays are typed by it too. */
char gh_layout_of(int ndim, const Py_ssize_t *shape, const Py_ssize_t *strides,
                  Py_ssize_t itemsize);

/* `obj` as a DeviceArray ordered on `stream` (a stream= argument, borrowed; NULL: the
   default stream): a DeviceArray as it is, else a view of a foreign device array with the
   stream ordered after its exporter's.  Messages say "<who>(): <what> ..." (either may be
   NULL).  New reference, or NULL with TypeError where `obj` is no device array. */
PyObject *gh_foreign_device_array(gh_state *st, PyObject *obj, PyObject *stream, const char *who,
                                  const char *what);

/* from_cuda_array_interface, as_cuda_array, from_dlpack, _foreign_view, _foreign_info. */
extern PyMethodDef gh_interop_methods[];
/* Intern the names interop.c reads at every use (module init); 0 or -1 (MemoryError). */
int gh_interop_init(PyObject *module, gh_state *st);
/* Forget what was learnt of exporters' types (module teardown); visit it. */
void gh_interop_clear(gh_state *st);
int gh_interop_traverse(gh_state *st, visitproc visit, void *arg);

#endif /* GPUHOST_ARRAYS_H */
