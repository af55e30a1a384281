"""gpuhost: the host side of CUDA for Python, in C, with numba.cuda's names.

    import gpuhost as cuda
    cuda.detect()
    with cuda.gpus[0]:
        print(cuda.current_context().get_memory_info())

The driver (libcuda) and NVRTC are loaded at run time: importing gpuhost always works;
without a driver ``is_available()`` is False and calls that need one raise
CudaSupportError.
"""
from . import _core, errors, runtime
from ._core import (
    Context,
    Device,
    MemoryInfo,
    current_context,
    driver_version,
    is_available,
    select_device,
    synchronize,
)
from .devices import close, detect, gpus, list_devices, require_context
from .errors import (
    CudaAPIError,
    CudaDriverError,
    CudaOutOfMemoryError,
    CudaSupportError,
    InvalidDeviceError,
    NvrtcError,
    NvrtcSupportError,
)

__version__ = "0.1.0"


def get_current_device():
    """The Device of the current context (making device 0's current if none is)."""
    return current_context().device


__all__ = [
    "Context",
    "CudaAPIError",
    "CudaDriverError",
    "CudaOutOfMemoryError",
    "CudaSupportError",
    "Device",
    "InvalidDeviceError",
    "MemoryInfo",
    "NvrtcError",
    "NvrtcSupportError",
    "close",
    "current_context",
    "detect",
    "driver_version",
    "errors",
    "get_current_device",
    "gpus",
    "is_available",
    "list_devices",
    "require_context",
    "runtime",
    "select_device",
    "synchronize",
]
