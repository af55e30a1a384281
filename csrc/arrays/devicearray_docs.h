/* The docstrings of gpuhost.DeviceArray (csrc/devicearray.c): the type, its methods and
 * properties, and the _core functions ipc_get_handle() and make_array(), as PyDoc_STRVAR
 * definitions that devicearray.c's method and property tables name.  numpydoc sections (docs/
 * renders them through napoleon); the >>> examples run against the fake driver
 * (tests/fakecuda) as well as a GPU.  Included by devicearray.c only.
 */
#ifndef GH_DEVICEARRAY_DOCS_H
#define GH_DEVICEARRAY_DOCS_H

#include <Python.h>

PyDoc_STRVAR(devicearray_doc,
             "An array in device memory, numba.cuda's DeviceNDArray.\n\n"
             "Make one with to_device(), device_array() and friends; it is not made\n"
             "directly. Indexing and slicing give views (d[1:3]), assigning to a slice\n"
             "copies from the host (d[:] = host), and np.asarray(d) copies to the host.\n\n"
             "Examples\n"
             "--------\n"
             ">>> d = gpuhost.to_device(np.arange(6, dtype=np.float32).reshape(2, 3))\n"
             ">>> d.shape, d.dtype, d.nbytes\n"
             "((2, 3), dtype('float32'), 24)\n"
             ">>> d[1].copy_to_host()\n"
             "array([3., 4., 5.], dtype=float32)\n"
             ">>> d[:, 0] = 0\n"
             ">>> d.copy_to_host()\n"
             "array([[0., 1., 2.],\n"
             "       [0., 4., 5.]], dtype=float32)");

PyDoc_STRVAR(
    devicearray_copy_to_host_doc,
    "copy_to_host($self, /, ary=None, stream=0)\n--\n\n"
    "Copy the array to the host.\n\n"
    "Parameters\n"
    "----------\n"
    "ary : numpy.ndarray, optional\n"
    "    The array to copy into: same shape and dtype. Only its elements are written, never\n"
    "    the gaps between them. A new array is made when None.\n"
    "stream : Stream or 0, optional\n"
    "    The stream to copy on; the copy is then asynchronous, so synchronize the stream\n"
    "    before reading the result. 0: the array's bound stream, else synchronous.\n\n"
    "Returns\n"
    "-------\n"
    "numpy.ndarray\n"
    "    `ary`, or the new array.\n\n"
    "Raises\n"
    "------\n"
    "ValueError\n"
    "    If `ary`'s shape or dtype differs from the array's.\n\n"
    "Examples\n"
    "--------\n"
    ">>> d = gpuhost.to_device(np.arange(4, dtype=np.float32))\n"
    ">>> d.copy_to_host()\n"
    "array([0., 1., 2., 3.], dtype=float32)\n"
    ">>> out = np.empty(4, np.float32)\n"
    ">>> s = gpuhost.stream()\n"
    ">>> _ = d.copy_to_host(out, stream=s)\n"
    ">>> s.synchronize()\n"
    ">>> out\n"
    "array([0., 1., 2., 3.], dtype=float32)");

PyDoc_STRVAR(devicearray_copy_to_device_doc,
             "copy_to_device($self, /, ary, stream=0)\n--\n\n"
             "Copy an array of the same shape and dtype into this one.\n\n"
             "Parameters\n"
             "----------\n"
             "ary : array_like or DeviceArray\n"
             "    The source: a host array, or a device array (a device-to-device copy).\n"
             "stream : Stream or 0, optional\n"
             "    The stream to copy on (asynchronous); 0: the array's bound stream, else\n"
             "    synchronous.\n\n"
             "Raises\n"
             "------\n"
             "ValueError\n"
             "    If the shapes or dtypes differ.\n\n"
             "Examples\n"
             "--------\n"
             ">>> d = gpuhost.device_array(3, np.int64)\n"
             ">>> d.copy_to_device(np.array([7, 8, 9]))\n"
             ">>> d.copy_to_host()\n"
             "array([7, 8, 9])");

PyDoc_STRVAR(devicearray_is_c_contiguous_doc,
             "is_c_contiguous($self, /)\n--\n\n"
             "Whether the array is C-contiguous (row-major, no gaps).\n\n"
             "Examples\n"
             "--------\n"
             ">>> d = gpuhost.device_array((2, 3), np.float32)\n"
             ">>> d.is_c_contiguous(), d.T.is_c_contiguous()\n"
             "(True, False)");

PyDoc_STRVAR(devicearray_is_f_contiguous_doc,
             "is_f_contiguous($self, /)\n--\n\n"
             "Whether the array is Fortran-contiguous (column-major, no gaps).\n\n"
             "Examples\n"
             "--------\n"
             ">>> d = gpuhost.device_array((2, 3), np.float32)\n"
             ">>> d.is_f_contiguous(), d.T.is_f_contiguous()\n"
             "(False, True)");

PyDoc_STRVAR(devicearray_bind_doc,
             "bind($self, /, stream=None)\n--\n\n"
             "A view of the same memory whose copies default to `stream`.\n\n"
             "Parameters\n"
             "----------\n"
             "stream : Stream, optional\n"
             "    The stream that copy_to_host(), copy_to_device() and the like use when given no\n"
             "    stream; None: none (synchronous copies).\n\n"
             "Returns\n"
             "-------\n"
             "DeviceArray\n"
             "    A view; this array keeps its own stream.\n\n"
             "Examples\n"
             "--------\n"
             ">>> s = gpuhost.stream()\n"
             ">>> d = gpuhost.device_array(8, np.float32)\n"
             ">>> d.bind(s).stream is s, d.stream\n"
             "(True, 0)");

PyDoc_STRVAR(
    devicearray___dlpack___doc,
    "__dlpack__($self, /, *, stream=None, max_version=None, dl_device=None, copy=None)\n--\n\n"
    "A DLPack capsule of the array, for another library's `from_dlpack`.\n\n"
    "The capsule is versioned when `max_version` >= (1, 0). The consumer's `stream` is\n"
    "made to wait for the array's stream. No data is copied.\n\n"
    "Examples\n"
    "--------\n"
    ">>> d = gpuhost.to_device(np.arange(3.0))\n"
    ">>> type(d.__dlpack__()).__name__\n"
    "'PyCapsule'\n"
    ">>> gpuhost.from_dlpack(d).copy_to_host()      # what from_dlpack() calls\n"
    "array([0., 1., 2.])");

PyDoc_STRVAR(devicearray___dlpack_device___doc,
             "__dlpack_device__($self, /)\n--\n\n"
             "(2, device id): DLPack's code for CUDA device memory, and the device's number.\n\n"
             "Examples\n"
             "--------\n"
             ">>> gpuhost.device_array(4).__dlpack_device__()\n"
             "(2, 0)");

PyDoc_STRVAR(
    devicearray___array___doc,
    "__array__($self, /, dtype=None, copy=None)\n--\n\n"
    "A copy on the host, for `np.array(d)` and `np.asarray(d)`, as numba's.\n\n"
    "`dtype` converts the copy. copy=False raises ValueError, since a device array cannot\n"
    "be seen from the host without a copy.\n\n"
    "Examples\n"
    "--------\n"
    ">>> np.asarray(gpuhost.to_device(np.arange(3)))\n"
    "array([0, 1, 2])");

PyDoc_STRVAR(devicearray__repr_html__doc,
             "_repr_html_($self, /)\n--\n\n"
             "An HTML table of the array's shape, dtype, layout, size and device, for Jupyter.\n\n"
             "The elements stay on the device (no copy).\n\n"
             "Returns\n"
             "-------\n"
             "str\n\n"
             "Examples\n"
             "--------\n"
             ">>> gpuhost.device_array((2, 3), np.float32)._repr_html_()\n"
             "'<table class=\"gpuhost\"><caption style=\"text-align:left\">gpuhost.DeviceArray "
             "...</table>'");

PyDoc_STRVAR(
    devicearray__repr_pretty__doc,
    "_repr_pretty_($self, p, cycle, /)\n--\n\n"
    "IPython's pretty printer: the repr, then the array's layout and device one per line.\n\n"
    "The elements stay on the device (no copy).\n\n"
    "Examples\n"
    "--------\n"
    ">>> from IPython.lib.pretty import pretty  # doctest: +SKIP\n"
    ">>> print(pretty(gpuhost.device_array((2, 3), np.float32)))  # doctest: +SKIP\n"
    "<gpuhost.DeviceArray shape=(2, 3) dtype=float32 on device 0 at 0x...>\n"
    "  shape: (2, 3)\n"
    "  dtype: float32\n"
    "  ...");

PyDoc_STRVAR(devicearray_shape_doc, "The shape, a tuple of ints.\n\n"
                                    "Examples\n"
                                    "--------\n"
                                    ">>> gpuhost.device_array((2, 3)).shape\n"
                                    "(2, 3)\n"
                                    ">>> gpuhost.device_array(5).shape\n"
                                    "(5,)");

PyDoc_STRVAR(devicearray_strides_doc, "The strides in bytes, a tuple of ints.\n\n"
                                      "Examples\n"
                                      "--------\n"
                                      ">>> d = gpuhost.device_array((2, 3), np.float32)\n"
                                      ">>> d.strides, d.T.strides, d[:, ::2].strides\n"
                                      "((12, 4), (4, 12), (12, 8))");

PyDoc_STRVAR(devicearray_ndim_doc,
             "The number of dimensions.\n\n"
             "Examples\n"
             "--------\n"
             ">>> gpuhost.device_array((2, 3)).ndim, gpuhost.device_array((2, 3))[0].ndim\n"
             "(2, 1)");

PyDoc_STRVAR(devicearray_size_doc, "The number of elements.\n\n"
                                   "Examples\n"
                                   "--------\n"
                                   ">>> gpuhost.device_array((2, 3)).size\n"
                                   "6");

PyDoc_STRVAR(devicearray_itemsize_doc, "Bytes per element.\n\n"
                                       "Examples\n"
                                       "--------\n"
                                       ">>> gpuhost.device_array(4, np.float16).itemsize\n"
                                       "2");

PyDoc_STRVAR(devicearray_nbytes_doc, "Bytes of the elements (size * itemsize).\n\n"
                                     "Examples\n"
                                     "--------\n"
                                     ">>> d = gpuhost.device_array((2, 3), np.float32)\n"
                                     ">>> d.nbytes, d[:, ::2].nbytes\n"
                                     "(24, 16)");

PyDoc_STRVAR(devicearray_dtype_doc, "The element type, a numpy.dtype.\n\n"
                                    "Examples\n"
                                    "--------\n"
                                    ">>> gpuhost.to_device(np.arange(3, dtype=np.int16)).dtype\n"
                                    "dtype('int16')");

PyDoc_STRVAR(devicearray_ptr_doc, "The device address of the first element, an int.\n\n"
                                  "For a kernel's pointer argument or a driver call.\n\n"
                                  "Examples\n"
                                  "--------\n"
                                  ">>> d = gpuhost.device_array(4, np.float32)\n"
                                  ">>> d[1:].ptr - d.ptr\n"
                                  "4");

PyDoc_STRVAR(devicearray_device_ctypes_pointer_doc,
             "The device address of the first element as a ctypes.c_void_p (numba's name).\n\n"
             "Examples\n"
             "--------\n"
             ">>> d = gpuhost.device_array(4)\n"
             ">>> p = d.device_ctypes_pointer\n"
             ">>> type(p).__name__, p.value == d.ptr\n"
             "('c_void_p', True)");

PyDoc_STRVAR(devicearray_alloc_size_doc,
             "The bytes the elements span in memory, first to last (numba's name).\n\n"
             "Examples\n"
             "--------\n"
             ">>> d = gpuhost.device_array((4, 4), np.float32)\n"
             ">>> d.alloc_size, d[:, 0].alloc_size           # 4 elements 16 bytes apart\n"
             "(64, 52)");

PyDoc_STRVAR(devicearray_device_doc, "The Device the memory is on.\n\n"
                                     "Examples\n"
                                     "--------\n"
                                     ">>> gpuhost.device_array(4).device.id\n"
                                     "0\n"
                                     ">>> with gpuhost.gpus[1]:\n"
                                     "...     d = gpuhost.device_array(4)\n"
                                     ">>> d.device.id\n"
                                     "1");

PyDoc_STRVAR(devicearray_context_doc, "The Context the memory belongs to.\n\n"
                                      "Examples\n"
                                      "--------\n"
                                      ">>> d = gpuhost.device_array(4)\n"
                                      ">>> d.context is gpuhost.current_context()\n"
                                      "True");

PyDoc_STRVAR(
    devicearray_stream_doc,
    "The stream copies default to (see bind()), or 0 when none is bound (numba's value).\n\n"
    "Examples\n"
    "--------\n"
    ">>> d = gpuhost.device_array(4)\n"
    ">>> d.stream\n"
    "0\n"
    ">>> s = gpuhost.stream()\n"
    ">>> d.bind(s).stream is s\n"
    "True");

PyDoc_STRVAR(devicearray_owner_doc,
             "The object keeping the memory alive.\n\n"
             "An Allocation, or a foreign owner (an array imported through DLPack or the CUDA\n"
             "array interface); views share their base array's owner.\n\n"
             "Examples\n"
             "--------\n"
             ">>> d = gpuhost.device_array(4)\n"
             ">>> type(d.owner).__name__, d[1:].owner is d.owner\n"
             "('Allocation', True)");

PyDoc_STRVAR(
    devicearray_gpu_data_doc,
    "numba's gpu_data, a MemoryPointer over the bytes the array spans.\n\n"
    "It has device_pointer, size, view(), memset() and owner, and keeps the memory alive;\n"
    "the owner's other attributes (an Allocation's pool, kind, ...) read through it.\n\n"
    "Examples\n"
    "--------\n"
    ">>> d = gpuhost.device_array(4, np.float32)\n"
    ">>> m = d.gpu_data\n"
    ">>> m.size, m.device_pointer_value == d.ptr\n"
    "(16, True)\n"
    ">>> m.memset(0)\n"
    ">>> d.copy_to_host()\n"
    "array([0., 0., 0., 0.], dtype=float32)");

PyDoc_STRVAR(devicearray_flags_doc,
             "A dict of the layout, its C_CONTIGUOUS, F_CONTIGUOUS and WRITEABLE flags.\n\n"
             "Examples\n"
             "--------\n"
             ">>> d = gpuhost.device_array((2, 3))\n"
             ">>> d.flags\n"
             "{'C_CONTIGUOUS': True, 'F_CONTIGUOUS': False, 'WRITEABLE': True}\n"
             ">>> d.T.flags[\"F_CONTIGUOUS\"]\n"
             "True");

PyDoc_STRVAR(devicearray_T_doc, "The transposed view (transpose() with the axes reversed).\n\n"
                                "No data is copied.\n\n"
                                "Examples\n"
                                "--------\n"
                                ">>> d = gpuhost.to_device(np.arange(6).reshape(2, 3))\n"
                                ">>> d.T.shape\n"
                                "(3, 2)\n"
                                ">>> d.T.copy_to_host()\n"
                                "array([[0, 3],\n"
                                "       [1, 4],\n"
                                "       [2, 5]])");

PyDoc_STRVAR(
    devicearray___cuda_array_interface___doc,
    "The CUDA array interface, version 3, for CuPy, PyTorch, numba and the like.\n\n"
    "Its stream is the bound stream's handle (1 for the default stream), or None when no\n"
    "stream is bound, as numba reports it.\n\n"
    "Examples\n"
    "--------\n"
    ">>> d = gpuhost.device_array((2, 3), np.float32)\n"
    ">>> cai = d.__cuda_array_interface__\n"
    ">>> cai[\"shape\"], cai[\"typestr\"], cai[\"strides\"], cai[\"version\"], cai[\"stream\"]\n"
    "((2, 3), '<f4', None, 3, None)\n"
    ">>> cai[\"data\"] == (d.ptr, False)\n"
    "True");

PyDoc_STRVAR(devicearray_module_ipc_get_handle_doc,
             "ipc_get_handle(array, /)\n--\n\n"
             "(handle bytes, offset, allocation size) to share `array`'s allocation with another\n"
             "process.\n\n"
             "gpuhost internal; see DeviceArray.get_ipc_handle.");

PyDoc_STRVAR(devicearray_module_make_array_doc,
             "make_array(owner, ptr, shape, strides, dtype, stream=None, context=None)\n--\n\n"
             "A DeviceArray over device memory at `ptr` kept alive by `owner` (gpuhost internal).");

PyDoc_STRVAR(devicearray_module_empty_array_doc,
             "empty_array(nbytes, shape, strides, dtype, stream)\n--\n\n"
             "A new DeviceArray of `nbytes` from the current allocator of device arrays, in the "
             "current context, bound to `stream` (None or 0: none): device_array()'s, its layout "
             "checked by the caller (gpuhost internal).");

#endif /* GH_DEVICEARRAY_DOCS_H */
