"""``gpuhost.runtime``: versions of the CUDA libraries gpuhost loads."""
from . import _core

__all__ = ["get_version", "driver_version"]


def get_version():
    """NVRTC's version as a (major, minor) tuple, as numba.cuda.runtime.get_version()
    reports it. Raises NvrtcSupportError when libnvrtc is not found."""
    return _core.nvrtc_version()


def driver_version():
    """The CUDA version the driver supports, as (major, minor)."""
    return _core.driver_version()
