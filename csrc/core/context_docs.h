/* The docstrings of gpuhost.Context and gpuhost.MemoryInfo (csrc/context.c): the types, the
 * Context's methods and properties, as PyDoc_STRVAR definitions that context.c's method and
 * property tables name.  numpydoc sections (docs/ renders them through napoleon); the >>>
 * examples run against the fake driver (tests/fakecuda) as well as a GPU.  Included by
 * context.c only.
 */
#ifndef GH_CONTEXT_DOCS_H
#define GH_CONTEXT_DOCS_H

#include <Python.h>

PyDoc_STRVAR(context_get_memory_info_doc,
             "get_memory_info($self, /)\n--\n\n"
             "The device's free and total memory in bytes (cuMemGetInfo).\n\n"
             "Returns\n"
             "-------\n"
             "MemoryInfo\n"
             "    A named tuple (free, total). Free memory is the device's, over all processes.\n\n"
             "Examples\n"
             "--------\n"
             ">>> free, total = gpuhost.current_context().get_memory_info()\n"
             ">>> 0 <= free <= total\n"
             "True");

PyDoc_STRVAR(context_synchronize_doc,
             "synchronize($self, /)\n--\n\n"
             "Wait until all work queued in this context, on every stream, has finished.\n\n"
             "The GIL is released while waiting.\n\n"
             "Raises\n"
             "------\n"
             "CudaAPIError\n"
             "    For an error an earlier asynchronous operation left (such as a kernel's illegal\n"
             "    address).\n\n"
             "Examples\n"
             "--------\n"
             ">>> gpuhost.current_context().synchronize()");

PyDoc_STRVAR(context_push_doc,
             "push($self, /)\n--\n\n"
             "Make this context current: push it on the calling thread's context stack.\n\n"
             "Pair it with pop(), or use the context's device as a context manager\n"
             "(`with gpuhost.gpus[1]:`).\n\n"
             "Examples\n"
             "--------\n"
             ">>> ctx = gpuhost.gpus[0].get_primary_context()\n"
             ">>> ctx.push()\n"
             ">>> gpuhost.current_context() is ctx\n"
             "True\n"
             ">>> ctx.pop()");

PyDoc_STRVAR(context_pop_doc,
             "pop($self, /)\n--\n\n"
             "Pop this context off the calling thread's context stack (undo push()).\n\n"
             "Raises\n"
             "------\n"
             "CudaDriverError\n"
             "    If this context is not on top of the stack.\n\n"
             "Examples\n"
             "--------\n"
             ">>> ctx = gpuhost.gpus[1].get_primary_context()\n"
             ">>> ctx.push()\n"
             ">>> gpuhost.current_context() is ctx\n"
             "True\n"
             ">>> ctx.pop()\n"
             ">>> gpuhost.current_context() is ctx\n"
             "False");

PyDoc_STRVAR(context_reset_doc,
             "reset($self, /)\n--\n\n"
             "Free what gpuhost made in this context; the context itself stays (numba's).\n\n"
             "The memory manager's reset() runs first (an EMM plugin frees its memory), then\n"
             "gpuhost frees its device memory (arrays, pools' blocks, allocations, IPC mappings),\n"
             "unloads its modules and runs the frees defer_cleanup() holds. Arrays, modules,\n"
             "kernels and graphs made before raise an error that says so when used; streams and\n"
             "events go on working. Host memory (pinned, mapped, managed), which NumPy arrays\n"
             "may view, stays valid until its objects go. The CUDA context, shared with PyTorch,\n"
             "CuPy and JAX, is left alive: their state is untouched.\n\n"
             "Raises\n"
             "------\n"
             "StreamCaptureError\n"
             "    A gpuhost stream is capturing a graph in this context (end_capture() first).\n\n"
             "Examples\n"
             "--------\n"
             ">>> ctx = gpuhost.current_context()\n"
             ">>> d = gpuhost.to_device(np.arange(3))\n"
             ">>> ctx.reset()\n"
             ">>> gpuhost.to_device(np.arange(3)).copy_to_host()  # new objects work\n"
             "array([0, 1, 2])");

PyDoc_STRVAR(
    context_can_access_peer_doc,
    "can_access_peer($self, peer_device, /)\n--\n\n"
    "Whether this context's device can access `peer_device`'s memory directly (numba's name).\n\n"
    "The same as Device.can_access_peer() of the context's device.\n\n"
    "Parameters\n"
    "----------\n"
    "peer_device : int, Device or Context\n"
    "    The other device, or its id.\n\n"
    "Returns\n"
    "-------\n"
    "bool\n"
    "    True for the context's own device.\n\n"
    "Examples\n"
    "--------\n"
    ">>> ctx = gpuhost.gpus[0].get_primary_context()\n"
    ">>> ctx.can_access_peer(0)\n"
    "True\n"
    ">>> ctx.can_access_peer(gpuhost.gpus[1]) == gpuhost.gpus[0].can_access_peer(1)\n"
    "True");

PyDoc_STRVAR(
    context_enable_peer_access_doc,
    "enable_peer_access($self, peer, /)\n--\n\n"
    "Let this context use the memory of `peer`'s device directly (cuCtxEnablePeerAccess).\n\n"
    "Kernels and copies in this context then read and write the peer's memory.\n"
    "One direction only: call it on both contexts for both. Enabling twice is not an\n"
    "error.\n\n"
    "Parameters\n"
    "----------\n"
    "peer : Device, Context or int\n"
    "    The other device, or its id.\n\n"
    "Raises\n"
    "------\n"
    "ValueError\n"
    "    For this context's own device.\n"
    "CudaAPIError\n"
    "    CUDA_ERROR_PEER_ACCESS_UNSUPPORTED where Device.can_access_peer() is False.\n\n"
    "Examples\n"
    "--------\n"
    ">>> if gpuhost.gpus[0].can_access_peer(gpuhost.gpus[1]):  # doctest: +SKIP\n"
    "...     gpuhost.gpus[0].get_primary_context().enable_peer_access(1)");

PyDoc_STRVAR(
    context_disable_peer_access_doc,
    "disable_peer_access($self, peer, /)\n--\n\n"
    "Stop this context using `peer`'s device's memory directly (cuCtxDisablePeerAccess).\n\n"
    "Undoes enable_peer_access(peer), in this direction only. Disabling access that is not\n"
    "enabled is not an error.\n\n"
    "Parameters\n"
    "----------\n"
    "peer : gpuhost.Device, gpuhost.Context or int\n"
    "    The other device, or its id.\n\n"
    "Raises\n"
    "------\n"
    "ValueError\n"
    "    For this context's own device.\n\n"
    "Examples\n"
    "--------\n"
    ">>> ctx = gpuhost.gpus[0].get_primary_context()\n"
    ">>> if gpuhost.gpus[0].can_access_peer(gpuhost.gpus[1]):  # doctest: +SKIP\n"
    "...     ctx.enable_peer_access(1)\n"
    "...     ctx.disable_peer_access(1)");

PyDoc_STRVAR(context_device_doc,
             "The Device this context belongs to.\n\n"
             "Examples\n"
             "--------\n"
             ">>> gpuhost.gpus[1].get_primary_context().device is gpuhost.gpus[1]\n"
             "True");

PyDoc_STRVAR(context_handle_doc,
             "The CUcontext as an int, or None while gpuhost holds no retain on it.\n\n"
             "Examples\n"
             "--------\n"
             ">>> ctx = gpuhost.current_context()\n"
             ">>> ctx.handle != 0\n"
             "True");

PyDoc_STRVAR(context_doc,
             "A device's primary context, as gpuhost holds it, numba.cuda's Context.\n\n"
             "Get one from current_context() or Device.get_primary_context(); it is not\n"
             "made directly. Everything that owns device resources (arrays, streams,\n"
             "events, modules) belongs to the context it was made in.\n\n"
             "Examples\n"
             "--------\n"
             ">>> ctx = gpuhost.current_context()\n"
             ">>> ctx.device is gpuhost.get_current_device()\n"
             "True\n"
             ">>> ctx.get_memory_info().total == ctx.device.total_memory\n"
             "True");

PyDoc_STRVAR(memory_info_doc,
             "MemoryInfo(free, total): a device's free and total memory in bytes.\n\n"
             "As Context.get_memory_info() returns it (numba's named tuple).\n\n"
             "Examples\n"
             "--------\n"
             ">>> info = gpuhost.current_context().get_memory_info()\n"
             ">>> info\n"
             "MemoryInfo(free=..., total=...)\n"
             ">>> info.free <= info.total\n"
             "True\n"
             ">>> free, total = info");

PyDoc_STRVAR(memory_info_free_doc, "The device's free memory in bytes, over all processes.\n\n"
                                   "Examples\n"
                                   "--------\n"
                                   ">>> info = gpuhost.current_context().get_memory_info()\n"
                                   ">>> 0 <= info.free <= info.total\n"
                                   "True");

PyDoc_STRVAR(memory_info_total_doc, "The device's memory in bytes (Device.total_memory).\n\n"
                                    "Examples\n"
                                    "--------\n"
                                    ">>> info = gpuhost.current_context().get_memory_info()\n"
                                    ">>> info.total == gpuhost.get_current_device().total_memory\n"
                                    "True");

#endif /* GH_CONTEXT_DOCS_H */
