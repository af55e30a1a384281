"""cupy.cuda.driver's version queries, over the driver gpuhost loads."""
from ... import _core
from ...errors import CudaAPIError as CUDADriverError

__all__ = ["CUDADriverError", "driverGetVersion", "get_build_version"]


def get_build_version():
    """The CUDA version of the headers gpuhost was built with, as ``cupy.cuda.driver``'s.

    Returns
    -------
    int
        major * 1000 + minor * 10: 13000 for CUDA 13.0.

    Examples
    --------
    >>> from gpuhost.compat.cupy import driver
    >>> driver.get_build_version() >= 12000
    True
    """
    return _core.CUDA_HEADERS_VERSION


def driverGetVersion():  # noqa: N802 - CuPy's name
    """The CUDA version the driver supports (cuDriverGetVersion).

    Returns
    -------
    int
        major * 1000 + minor * 10: 13000 for CUDA 13.0.

    Raises
    ------
    CudaSupportError
        No usable CUDA driver.

    Examples
    --------
    >>> from gpuhost.compat.cupy import driver
    >>> driver.driverGetVersion() >= 12000
    True
    """
    major, minor = _core.driver_version()
    return major * 1000 + minor * 10


def _is_cuda_python():
    """False: gpuhost calls the driver itself, not through the cuda-python bindings (CuPy's
    own version checks ask this before choosing which version to compare)."""
    return False
