/* The DLPack ABI (https://dmlc.github.io/dlpack/latest/c_api.html), versions 0.8 and 1.x:
 * the structs a producer hands over in a PyCapsule.  Written from the specification. */
#ifndef GPUHOST_DLPACK_H
#define GPUHOST_DLPACK_H

#include <stdint.h>

#include "devicearray.h"

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

#endif /* GPUHOST_DLPACK_H */
