"""``gpuhost.runtime``: versions of the CUDA libraries gpuhost loads.

numba.cuda's name (``cuda.runtime.get_version()``); gpuhost loads no CUDA runtime, and the
version `get_version` gives is NVRTC's."""
# The module is gpuhost.runtime to users (gpuhost/__init__.py binds it under that name);
# its file is named after what it holds.
from . import _core

__all__ = ["get_version", "driver_version"]


def get_version():
    """NVRTC's CUDA version, as numba.cuda.runtime.get_version() reports it.

    Returns
    -------
    tuple of int
        (major, minor).

    Raises
    ------
    NvrtcSupportError
        libnvrtc was not found.

    Examples
    --------
    >>> from gpuhost import runtime
    >>> runtime.get_version() >= (12, 0)
    True
    """
    return _core.nvrtc_version()


def driver_version():
    """The CUDA version the driver supports, as `gpuhost.driver_version`.

    Returns
    -------
    tuple of int
        (major, minor).

    Raises
    ------
    CudaSupportError
        No usable CUDA driver.

    Examples
    --------
    >>> from gpuhost import runtime
    >>> runtime.driver_version() >= runtime.get_version()    # doctest: +SKIP
    True
    """
    return _core.driver_version()
