/* The docstrings of gpuhost.Allocation and of the memory functions of gpuhost._core
 * (csrc/memory.c), as PyDoc_STRVAR definitions that memory.c's method, member and property
 * tables name.  numpydoc sections (docs/ renders them through napoleon); the >>> examples
 * run against the fake driver (tests/fakecuda) as well as a GPU.  Included by memory.c only.
 */
#ifndef GH_MEMORY_DOCS_H
#define GH_MEMORY_DOCS_H

#include <Python.h>

PyDoc_STRVAR(allocation_close_doc,
             "close($self, /)\n--\n\n"
             "Free (or unregister) the memory now, instead of when the last reference dies.\n\n"
             "Pooled memory goes back to its pool. Device arrays made over it must not be used\n"
             "afterwards. Closing twice is not an error.\n\n"
             "Raises\n"
             "------\n"
             "BufferError\n"
             "    For host memory that numpy arrays still view (it is not released).\n\n"
             "Examples\n"
             "--------\n"
             ">>> d = gpuhost.device_array(1 << 20, np.uint8)\n"
             ">>> alloc = d.owner\n"
             ">>> del d\n"
             ">>> alloc.close()  # back to the pool now");

PyDoc_STRVAR(allocation_free_doc,
             "free($self, /)\n--\n\n"
             "The same as close() (pycuda's name): free the memory now.\n\n"
             "Raises\n"
             "------\n"
             "BufferError\n"
             "    For host memory that numpy arrays still view (it is not released).\n\n"
             "Examples\n"
             "--------\n"
             ">>> alloc = gpuhost.device_array(256, np.uint8).owner\n"
             ">>> alloc.free()\n"
             ">>> alloc.size, alloc.ptr\n"
             "(0, 0)");

PyDoc_STRVAR(allocation_ptr_doc,
             "The device address as an int (0 for pinned memory that is not mapped).\n\n"
             "int(alloc) gives the same; 0 once the memory was freed.\n\n"
             "Examples\n"
             "--------\n"
             ">>> d = gpuhost.device_array(256, np.float32)\n"
             ">>> d.owner.ptr == d.ptr\n"
             "True\n"
             ">>> gpuhost.pinned_array(4, np.float32).base.ptr\n"
             "0");

PyDoc_STRVAR(allocation_host_ptr_doc,
             "The host address as an int, or None for device memory.\n\n"
             "Examples\n"
             "--------\n"
             ">>> print(gpuhost.device_array(4, np.float32).owner.host_ptr)\n"
             "None\n"
             ">>> h = gpuhost.pinned_array(4, np.float32)\n"
             ">>> h.base.host_ptr == h.ctypes.data\n"
             "True");

PyDoc_STRVAR(allocation_size_doc, "The size in bytes.\n\n"
                                  "len(alloc) gives the same; 0 once the memory was freed.\n\n"
                                  "Examples\n"
                                  "--------\n"
                                  ">>> gpuhost.device_array(256, np.float32).owner.size\n"
                                  "1024");

PyDoc_STRVAR(
    allocation_kind_doc,
    "The kind of memory, one of 'device', 'managed', 'pinned', 'mapped' or 'registered'.\n\n"
    "Examples\n"
    "--------\n"
    ">>> gpuhost.device_array(4, np.float32).owner.kind\n"
    "'device'\n"
    ">>> gpuhost.pinned_array(4, np.float32).base.kind\n"
    "'pinned'\n"
    ">>> gpuhost.mapped_array(4, np.float32).base.kind\n"
    "'mapped'");

PyDoc_STRVAR(allocation_device_doc, "The Device it belongs to.\n\n"
                                    "Examples\n"
                                    "--------\n"
                                    ">>> with gpuhost.gpus[1]:\n"
                                    "...     alloc = gpuhost.device_array(4, np.float32).owner\n"
                                    ">>> alloc.device is gpuhost.gpus[1]\n"
                                    "True");

PyDoc_STRVAR(allocation_context_doc, "The Context it belongs to.\n\n"
                                     "Examples\n"
                                     "--------\n"
                                     ">>> alloc = gpuhost.device_array(4, np.float32).owner\n"
                                     ">>> alloc.context is gpuhost.current_context()\n"
                                     "True");

PyDoc_STRVAR(allocation_device_id_doc, "The Device's id (CuPy's name).\n\n"
                                       "Examples\n"
                                       "--------\n"
                                       ">>> with gpuhost.gpus[1]:\n"
                                       "...     alloc = gpuhost.device_array(4, np.float32).owner\n"
                                       ">>> alloc.device_id\n"
                                       "1");

PyDoc_STRVAR(allocation_pool_doc,
             "The Pool the memory goes back to, or None for memory of its own.\n\n"
             "Examples\n"
             "--------\n"
             ">>> alloc = gpuhost.device_array(256, np.float32).owner\n"
             ">>> alloc.pool\n"
             "<gpuhost.Pool of device memory on device 0, ...>\n"
             ">>> print(gpuhost.pinned_array(4, np.float32).base.pool)\n"
             "None");

PyDoc_STRVAR(
    allocation_doc,
    "One allocation or registration of memory, which arrays keep alive.\n\n"
    "A device array's is its `owner`; a pinned numpy array's is its `base`. The host kinds\n"
    "(pinned, mapped, registered) export the buffer protocol. int(alloc) is the device\n"
    "address and len(alloc) the size in bytes.\n\n"
    "Examples\n"
    "--------\n"
    ">>> alloc = gpuhost.device_array(256, np.float32).owner\n"
    ">>> alloc.kind, alloc.size\n"
    "('device', 1024)\n"
    ">>> h = gpuhost.pinned_array(4, np.float32)\n"
    ">>> h.base.kind\n"
    "'pinned'");

PyDoc_STRVAR(memory_module_ipc_open_doc,
             "ipc_open(handle, size, /)\n--\n\n"
             "Open another process's allocation in the current context.\n\n"
             "It is closed when the returned Allocation dies or close() is called.");

PyDoc_STRVAR(
    memory_module_mem_alloc_doc,
    "mem_alloc(size, kind='device', *, portable=False, wc=False, attach_global=True)\n--\n\n"
    "Allocate memory in the current context (gpuhost internal; see device_array()).\n\n"
    "Parameters\n"
    "----------\n"
    "size : int\n"
    "    Bytes.\n"
    "kind : {'device', 'managed', 'pinned', 'mapped'}, optional\n"
    "    The memory's kind.\n\n"
    "Returns\n"
    "-------\n"
    "Allocation\n\n"
    "Raises\n"
    "------\n"
    "CudaOutOfMemoryError\n"
    "    A MemoryError stating the size.");

PyDoc_STRVAR(memory_module_mem_register_doc,
             "mem_register(obj, *, mapped=False, portable=False)\n--\n\n"
             "Page-lock the contiguous buffer of `obj` until the returned Allocation dies.\n\n"
             "cuMemHostRegister.");

#endif /* GH_MEMORY_DOCS_H */
