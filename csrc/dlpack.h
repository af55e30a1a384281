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

int gh_dlpack_init(PyObject *module, gh_state *st);
/* DeviceArray.__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None). */
PyObject *gh_dlpack_export(gh_devicearray *a, PyObject *args, PyObject *kwargs);

#endif /* GPUHOST_DLPACK_H */
