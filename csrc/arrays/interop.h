/* interop.c: other libraries' device arrays and streams, read in C on every use. */
#ifndef GPUHOST_INTEROP_H
#define GPUHOST_INTEROP_H

#include "devicearray.h"
#include "dlpack.h"
#include "core/stream.h"

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
/* Fill f from a DLPack tensor `t` that `obj` exported (shape and strides copied); 0, 1 for
   host memory where the use is host_ok, or -1 with TypeError for memory not the device's,
   BufferError for a dtype of sub-byte items or several lanes. */
int gh_foreign_fill_dl(gh_foreign_use *u, PyObject *obj, const gh_dl_tensor *t, gh_foreign *f);
/* obj.__dlpack__(stream=<consumer>, max_version=(1, 0)) (a producer older than DLPack 1.0
   without max_version): new reference or NULL. */
PyObject *gh_foreign_dlpack_capsule(gh_state *st, PyObject *obj, CUstream consumer);
/* The DLPack exchange API of obj's type, or NULL (none, or an error: PyErr_Occurred()). */
const gh_dl_exchange_api *gh_foreign_exchange_api(gh_state *st, PyObject *obj);
/* Read a CUDA array interface dict `dict` that `obj` exported; 0 or -1. */
int gh_foreign_read_cai(gh_foreign_use *u, PyObject *obj, PyObject *dict, gh_foreign *f);

/* Order the use's stream after the exporter's, as the CUDA array interface and DLPack ask
   (once per producer stream and use; a reused event, no Event object).  0 or -1. */
int gh_foreign_order(gh_foreign_use *u, const gh_foreign *f);

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

/* A DeviceArray over what `f` (read from `obj`) describes, bound to `stream` (NULL: none),
   kept alive by f->keep or `obj`; `void_ok`: a dtype NumPy lacks becomes raw bytes (|V2),
   else it is a BufferError.  New reference or NULL. */
PyObject *gh_foreign_as_array(gh_state *st, PyObject *obj, gh_foreign *f, PyObject *stream,
                              int void_ok);

/* `obj` as a DeviceArray ordered on `stream` (a stream= argument, borrowed; NULL: the
   default stream): a DeviceArray as it is, else a view of a foreign device array with the
   stream ordered after its exporter's.  Messages say "<who>(): <what> ..." (either may be
   NULL).  New reference, or NULL with TypeError where `obj` is no device array. */
PyObject *gh_foreign_device_array(gh_state *st, PyObject *obj, PyObject *stream, const char *who,
                                  const char *what);

/* from_cuda_array_interface, as_cuda_array, from_dlpack, _foreign_view, _foreign_info. */
extern PyMethodDef gh_interop_methods[];
/* Forget what was learnt of exporters' types (module teardown); visit it. */
void gh_interop_clear(gh_state *st);
int gh_interop_traverse(gh_state *st, visitproc visit, void *arg);

#endif /* GPUHOST_INTEROP_H */
