"""gpuhost: the host side of CUDA for Python, in C, with numba.cuda's names.

    import gpuhost as cuda
    cuda.detect()
    with cuda.gpus[0]:
        print(cuda.current_context().get_memory_info())

The driver (libcuda) and NVRTC are loaded at run time: importing gpuhost always works;
without a driver ``is_available()`` is False and calls that need one raise
CudaSupportError.
"""
import os as _os
import sys as _sys

from . import _shadow_check  # first: refuses a mix with the index's other "gpuhost"

try:
    from . import _core
except ImportError as _error:
    _shadow_check.unbuilt(_error)  # a source checkout never built: says how to build it
    raise
# Next, before anything else can reach it: _methods takes _core._attach out of the core.
from . import _methods  # noqa: F401
from . import errors
from . import _library_versions as runtime
from ._core import (
    Context,
    Device,
    Event,
    Kernel,
    LaunchConfig,
    MemoryInfo,
    Module,
    Stream,
    current_context,
    default_stream,
    driver_version,
    event,
    event_elapsed_time,
    external_stream,
    is_available,
    legacy_default_stream,
    per_thread_default_stream,
    profile_start,
    profile_stop,
    select_device,
    stream,
    synchronize,
)
from ._arrays import (
    as_cuda_array,
    defer_cleanup,
    device_array,
    device_array_like,
    from_cuda_array_interface,
    from_dlpack,
    is_cuda_array,
    to_device,
)
from ._core import Allocation, DeviceArray
from ._ipc import IpcArrayHandle, IpcEventHandle, open_ipc_array
from ._streamtools import profiling
# numba's Context methods (memalloc, create_stream ...), attached to Context:
from .compat.numba import _context as _numba_context  # noqa: F401
from .graphs import Graph, GraphExec, GraphNode, graph_capture
from .errors import (
    CudaAPIError,
    CudaDriverError,
    CudaOutOfMemoryError,
    CudaSupportError,
    DeviceResetWarning,
    GraphUpdateError,
    InvalidDeviceError,
    StreamCaptureError,
    NvrtcError,
    NvrtcSupportError,
    NvrtcWarning,
    NcclError,
    NcclSupportError,
)

from ._version import __version__
from .compat.numba import _streams as _numba_streams

_numba_streams.watch_for_numba()  # numba-cuda's own functions take gpuhost Streams (imports nothing)

import gc as _gc

# A pool out of device memory collects garbage once before giving up (csrc/memory/pool_obtain.c).
_core._set_helpers(gc_collect=_gc.collect)


def _memory_manager_from_environment(nbytes, stream):
    """The allocator of device arrays while GPUHOST_CUDA_MEMORY_MANAGER (else numba's
    NUMBA_CUDA_MEMORY_MANAGER) names a plugin: at the first allocation it imports
    gpuhost.memory_manager, which installs the plugin (and its own allocator in place of
    this one), and allocates through it."""
    from .compat.numba import memory_manager

    memory_manager._ensure_memory_manager()
    return _core.array_memory(nbytes, stream)


def _gpu_data(array):
    """DeviceArray.gpu_data (numba's MemoryPointer) before numba's face is imported: importing
    it registers its own class in place of this."""
    from .compat.numba import _emm_pointers

    return _emm_pointers.ArrayMemory(array)


_core._set_helpers(array_gpu_data=_gpu_data)

if (_os.environ.get("GPUHOST_CUDA_MEMORY_MANAGER") or
        _os.environ.get("NUMBA_CUDA_MEMORY_MANAGER", "default")) not in ("", "default"):
    _core.set_array_allocator(_memory_manager_from_environment)

# numba.cuda's `cuda.runtime`: the module is _library_versions, importable by this name too
# (`import gpuhost.runtime`), as os.path is.
_sys.modules[__name__ + ".runtime"] = runtime


# NVRTC's front end (gpuhost.compiler and its disk cache) is imported on first use, not
# with gpuhost: it would double the import time of a script that never compiles.  So are
# pycuda's and CuPy's ways to make kernels (gpuhost.kernels; its Kernel, LaunchConfig and
# Module are the core's, imported above).
_LAZY = {"CompiledCode": "compiler", "compile": "compiler", "compile_ptx": "compiler",
         "compile_ptx_for_current_device": "compiler"}
_LAZY.update(dict.fromkeys(("Linker", "RawKernel", "SourceModule", "launch"), "kernels"))
# numba.cuda's In, Out and InOut, gpuhost's own (a launch with them needs no numba-cuda);
# gpuhost.jit's disk records: what they hold, and emptying them.
_LAZY.update(dict.fromkeys(("In", "InOut", "Out"), "_arghints"))
_LAZY.update({"jit_cache_info": "_jitcache", "clear_jit_cache": "_jitcache"})
# Pinned, mapped and managed host arrays; the device list and what is said of the devices
# (gpuhost.devices): a device array, a stream or a context needs none of them.
_LAZY.update(dict.fromkeys(
    ("managed_array", "mapped", "mapped_array", "mapped_array_like", "pinned", "pinned_array",
     "pinned_array_like"), "_host_arrays"))
_LAZY.update(dict.fromkeys(
    ("close", "detect", "gpus", "list_devices", "require_context", "DeviceSummary", "summary",
     "cuda_error", "is_supported_version", "is_bfloat16_supported", "is_float16_supported",
     "is_fp8_supported"), "devices"))
# numba.cuda's names for External Memory Management plugins, and the submodules that are
# reachable as attributes (gpuhost.memory, CuPy's allocator API; gpuhost.tools, pycuda's;
# gpuhost.nvtx) without being imported with gpuhost.
_LAZY.update(dict.fromkeys(
    ("BaseCUDAMemoryManager", "GetIpcHandleMixin", "HostOnlyCUDAMemoryManager", "IpcHandle",
     "MappedMemory", "MemoryPointer", "PinnedMemory", "set_memory_manager"), "memory_manager"))
_LAZY_MODULES = ("memory", "memory_manager", "tools", "cudadrv", "descriptor", "devices",
                 "kernels", "nvtx")
# numba.cuda's attributes that are modules of numba's driver package: cuda.devicearray is
# cuda.cudadrv.devicearray, cuda.driver is cuda.cudadrv.driver (gpuhost.cudadrv's, there).
_MODULE_ALIASES = {"devicearray": "cudadrv.devicearray", "driver": "cudadrv.driver"}


def __getattr__(name):
    from importlib import import_module

    if name == "jit":
        from .dispatcher import jit

        globals()["jit"] = jit
        return jit
    if name in _LAZY_MODULES:
        return import_module("." + name, __name__)  # the import sets the attribute
    if name in _MODULE_ALIASES:
        value = import_module("." + _MODULE_ALIASES[name], __name__)
        globals()[name] = value
        return value
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(import_module("." + module, __name__), name)
        globals()[name] = value
        return value
    # numba's names last: telling them apart imports compat/numba/_names.py (no name above
    # is one)
    if name == "_numba_type_" or _is_numba_name(name):
        return _numba_name(name)
    raise AttributeError("module 'gpuhost' has no attribute %r" % name)


def _is_numba_name(name):
    from importlib import import_module

    return not name.startswith("_") and \
        import_module(".compat.numba._names", __name__).is_kernel_name(name)


def _numba_name(name):
    """numba.cuda's names for kernels, resolved on first use (numba-cuda imported then):
    what a kernel writes through its `cuda` module, and gpuhost itself typed as numba.cuda
    (numba's typeof asks for `_numba_type_` first)."""
    from importlib import import_module

    _numba = import_module("._numba", __name__)
    names = import_module(".compat.numba._names", __name__)

    if _numba.installed_version() is None:
        if name == "_numba_type_":
            raise AttributeError(name)
        _numba.load()  # the ImportError saying what to install
    value = names.module_type() if name == "_numba_type_" else names.kernel_name(name)
    if name != "_numba_type_":
        globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_LAZY_MODULES) | set(_MODULE_ALIASES))


def get_current_device():
    """The Device of this thread's current context, as numba's.

    When no context is current, device 0's primary context is made current first.

    Returns
    -------
    Device

    Examples
    --------
    >>> gpuhost.get_current_device().id
    0
    >>> with gpuhost.gpus[1]:
    ...     gpuhost.get_current_device().id
    1
    """
    return current_context().device


__all__ = [
    "Kernel",
    "LaunchConfig",
    "Linker",
    "Module",
    "RawKernel",
    "SourceModule",
    "launch",
    "In",
    "InOut",
    "Out",
    "jit_cache_info",
    "clear_jit_cache",
    "Allocation",
    "DeviceArray",
    "as_cuda_array",
    "defer_cleanup",
    "device_array",
    "device_array_like",
    "from_cuda_array_interface",
    "from_dlpack",
    "is_cuda_array",
    "managed_array",
    "mapped",
    "mapped_array",
    "mapped_array_like",
    "open_ipc_array",
    "IpcArrayHandle",
    "pinned",
    "pinned_array",
    "pinned_array_like",
    "to_device",
    "Context",
    "CudaAPIError",
    "StreamCaptureError",
    "GraphUpdateError",
    "Graph",
    "GraphExec",
    "GraphNode",
    "graph_capture",
    "CudaDriverError",
    "CudaOutOfMemoryError",
    "CudaSupportError",
    "Device",
    "DeviceResetWarning",
    "Event",
    "InvalidDeviceError",
    "IpcEventHandle",
    "MemoryInfo",
    "NvrtcError",
    "NvrtcSupportError",
    "NvrtcWarning",
    "NcclError",
    "NcclSupportError",
    "CompiledCode",
    "compile",
    "compile_ptx",
    "compile_ptx_for_current_device",
    "BaseCUDAMemoryManager",
    "GetIpcHandleMixin",
    "HostOnlyCUDAMemoryManager",
    "IpcHandle",
    "MappedMemory",
    "MemoryPointer",
    "PinnedMemory",
    "set_memory_manager",
    "Stream",
    "close",
    "current_context",
    "default_stream",
    "detect",
    "cuda_error",
    "is_supported_version",
    "is_float16_supported",
    "is_bfloat16_supported",
    "is_fp8_supported",
    "driver_version",
    "errors",
    "event",
    "event_elapsed_time",
    "external_stream",
    "get_current_device",
    "gpus",
    "is_available",
    "legacy_default_stream",
    "list_devices",
    "nvtx",
    "per_thread_default_stream",
    "profile_start",
    "profile_stop",
    "profiling",
    "require_context",
    "runtime",
    "select_device",
    "stream",
    "synchronize",
    "DeviceSummary",
    "summary",
]
