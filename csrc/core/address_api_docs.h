/* The docstrings of the address-level functions of gpuhost._core (csrc/address_api.c):
 * memcpy, prefetch, advice, pointer and memory-pool queries, as PyDoc_STRVAR definitions that
 * address_api.c's method table names.  numpydoc sections (docs/ renders them through
 * napoleon); the >>> examples run against the fake driver (tests/fakecuda) as well as a GPU.
 * Included by address_api.c only.
 */
#ifndef GH_ADDRESS_API_DOCS_H
#define GH_ADDRESS_API_DOCS_H

#include <Python.h>

PyDoc_STRVAR(
    address_memcpy_doc,
    "memcpy(dst, src, size, stream=None)\n--\n\n"
    "Copy bytes between unified addresses: device, managed or host memory (cuMemcpyAsync).\n\n"
    "The direction comes from the addresses. Private: gpuhost.compat.cupy.runtime.memcpy and\n"
    "the memory module's copies call it; arrays have copy_to_device / copy_to_host.\n\n"
    "Parameters\n"
    "----------\n"
    "dst, src : int\n"
    "    The addresses.\n"
    "size : int\n"
    "    How many bytes.\n"
    "stream : Stream, optional\n"
    "    The stream to queue the copy on; None: the legacy default stream, then wait for it.\n\n"
    "Raises\n"
    "------\n"
    "CudaAPIError\n"
    "    The driver refused the copy (e.g. an address it does not know).\n\n"
    "Examples\n"
    "--------\n"
    ">>> src = gpuhost.to_device(np.arange(4, dtype=np.int32))\n"
    ">>> dst = gpuhost.device_array(4, np.int32)\n"
    ">>> gpuhost._core.memcpy(dst.device_ctypes_pointer.value,\n"
    "...                      src.device_ctypes_pointer.value, 16)\n"
    ">>> dst.copy_to_host()\n"
    "array([0, 1, 2, 3], dtype=int32)");

PyDoc_STRVAR(
    address_mem_prefetch_doc,
    "mem_prefetch(ptr, size, device, stream=None)\n--\n\n"
    "Queue migrating managed memory to a device or the host (cuMemPrefetchAsync).\n\n"
    "Private: gpuhost's ManagedMemory.prefetch() and the runtime module's memPrefetchAsync call\n"
    "it.\n\n"
    "Parameters\n"
    "----------\n"
    "ptr : int\n"
    "    The address of managed memory.\n"
    "size : int\n"
    "    How many bytes.\n"
    "device : int\n"
    "    The destination device; -1: the host.\n"
    "stream : Stream, optional\n"
    "    The stream to queue it on; None: the legacy default stream.\n\n"
    "Raises\n"
    "------\n"
    "CudaAPIError\n"
    "    The memory is not managed, or the device cannot take it.\n\n"
    "Examples\n"
    "--------\n"
    ">>> m = gpuhost.memory.malloc_managed(1024)\n"
    ">>> gpuhost._core.mem_prefetch(m.ptr, 1024, 0)");

PyDoc_STRVAR(
    address_mem_advise_doc,
    "mem_advise(ptr, size, advice, device)\n--\n\n"
    "Advise the driver how a device uses managed memory (cuMemAdvise).\n\n"
    "Private: gpuhost's ManagedMemory.advise() and the runtime module's memAdvise call it.\n\n"
    "Parameters\n"
    "----------\n"
    "ptr : int\n"
    "    The address of managed memory.\n"
    "size : int\n"
    "    How many bytes.\n"
    "advice : int\n"
    "    A CU_MEM_ADVISE_* value (1: set read-mostly ... 6: unset accessed-by).\n"
    "device : int\n"
    "    The device the advice is about; -1: the host.\n\n"
    "Raises\n"
    "------\n"
    "CudaAPIError\n"
    "    The memory is not managed, or the advice is invalid.\n\n"
    "Examples\n"
    "--------\n"
    ">>> m = gpuhost.memory.malloc_managed(1024)\n"
    ">>> gpuhost._core.mem_advise(m.ptr, 1024, 1, 0)");

PyDoc_STRVAR(address__mem_address_range_doc,
             "_mem_address_range(ptr, /)\n--\n\n"
             "(base, size) of the allocation that holds device address `ptr` "
             "(cuMemGetAddressRange).");

PyDoc_STRVAR(address__pointer_info_doc,
             "_pointer_info(ptr, /)\n--\n\n"
             "(device, device pointer, host pointer, managed, host memory) of address `ptr`.\n\n"
             "None when the driver does not know it (cuPointerGetAttribute).");

PyDoc_STRVAR(
    address_mempool_attribute_doc,
    "mempool_attribute(device, name, value=None, /)\n--\n\n"
    "Read or set an attribute of a device's default memory pool (cuMemPoolGetAttribute).\n\n"
    "The pool is the driver's stream-ordered one (cuMemAllocAsync's). Private: gpuhost.memory's\n"
    "MemoryAsyncPool uses it.\n\n"
    "Parameters\n"
    "----------\n"
    "device : int\n"
    "    The device.\n"
    "name : str\n"
    "    'release_threshold', 'reserved_current', 'reserved_high', 'used_current' or\n"
    "    'used_high'.\n"
    "value : int, optional\n"
    "    Given, set the attribute to it (only 'release_threshold' can be set).\n\n"
    "Returns\n"
    "-------\n"
    "int or None\n"
    "    The attribute's value, in bytes; None when setting.\n\n"
    "Raises\n"
    "------\n"
    "ValueError\n"
    "    An unknown name, or a value for a read-only attribute.\n\n"
    "Examples\n"
    "--------\n"
    ">>> gpuhost._core.mempool_attribute(0, \"release_threshold\", 2**20)\n"
    ">>> gpuhost._core.mempool_attribute(0, \"release_threshold\")\n"
    "1048576\n"
    ">>> gpuhost._core.mempool_attribute(0, \"release_threshold\", 0)");

PyDoc_STRVAR(address_device_by_pci_bus_id_doc,
             "device_by_pci_bus_id(pci_bus_id, /)\n--\n\n"
             "The ordinal of the device at a PCI bus id (cuDeviceGetByPCIBusId).\n\n"
             "Parameters\n"
             "----------\n"
             "pci_bus_id : str\n"
             "    \"[domain]:[bus]:[device].[function]\", hexadecimal, e.g. \"0000:3B:00.0\".\n\n"
             "Returns\n"
             "-------\n"
             "int\n\n"
             "Raises\n"
             "------\n"
             "CudaAPIError\n"
             "    A malformed id, or no device there.\n\n"
             "Examples\n"
             "--------\n"
             ">>> gpuhost._core.device_by_pci_bus_id(gpuhost.gpus[0].pci_bus_id)\n"
             "0");

#endif /* GH_ADDRESS_API_DOCS_H */
