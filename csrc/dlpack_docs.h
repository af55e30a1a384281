/* The docstrings of csrc/dlpack.c: dlpack_import() and the internal DLPack owner type, as
 * PyDoc_STRVAR definitions that dlpack.c's method table and type slots name.  numpydoc
 * sections (docs/ renders them through napoleon); the >>> examples run against the fake
 * driver (tests/fakecuda) as well as a GPU.  Included by dlpack.c only.
 */
#ifndef GH_DLPACK_DOCS_H
#define GH_DLPACK_DOCS_H

#include <Python.h>

PyDoc_STRVAR(dl_owner_doc, "Keeps a tensor imported through DLPack alive (gpuhost internal).");

PyDoc_STRVAR(
    dlpack_module_dlpack_import_doc,
    "dlpack_import(capsule, /)\n--\n\n"
    "A DeviceArray over the CUDA tensor in an unconsumed DLPack capsule (no copy).\n\n"
    "The capsule is consumed: the array owns the tensor and calls its deleter when it goes.\n"
    "Private: use gpuhost.from_dlpack(), which also takes objects with __dlpack__.\n\n"
    "Parameters\n"
    "----------\n"
    "capsule : PyCapsule\n"
    "    A \"dltensor\" or \"dltensor_versioned\" capsule of CUDA (or managed) memory.\n\n"
    "Returns\n"
    "-------\n"
    "DeviceArray\n\n"
    "Raises\n"
    "------\n"
    "BufferError\n"
    "    The capsule was consumed already, or its tensor is not CUDA memory.\n"
    "TypeError\n"
    "    Not a DLPack capsule.\n\n"
    "Examples\n"
    "--------\n"
    ">>> src = gpuhost.to_device(np.arange(3.0))\n"
    ">>> d = gpuhost._core.dlpack_import(src.__dlpack__(stream=None))\n"
    ">>> d.copy_to_host()\n"
    "array([0., 1., 2.])");

#endif /* GH_DLPACK_DOCS_H */
