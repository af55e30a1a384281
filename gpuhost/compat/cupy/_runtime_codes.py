"""The CUDA runtime's status codes and enums as CuPy names them (``runtime.errorNotReady``,
``runtime.memcpyHostToDevice``, ``runtime.cudaDevAttr...``), its CUDARuntimeError, and the
translation of gpuhost's driver errors into it: what gpuhost.compat.cupy.runtime's modules
share, and re-exports.
"""
import functools as _functools

from ... import _core
from ...errors import CudaAPIError as _CudaAPIError, InvalidDeviceError as _InvalidDeviceError
from ._runtime_enums import DEVICE_ATTRIBUTES as _DEVICE_ATTRIBUTES, ERROR_NAMES as _ERROR_NAMES

is_hip = False

# status codes (cudaError_t), as CuPy names them
errorInvalidValue = 1
errorMemoryAllocation = 2
errorInvalidDevice = 101
errorInvalidResourceHandle = 400
errorNotReady = 600
errorPeerAccessAlreadyEnabled = 704
errorPeerAccessNotEnabled = 705

# enums CuPy exposes
memcpyHostToHost, memcpyHostToDevice, memcpyDeviceToHost, memcpyDeviceToDevice, \
    memcpyDefault = 0, 1, 2, 3, 4
memoryTypeUnregistered, memoryTypeHost, memoryTypeDevice, memoryTypeManaged = 0, 1, 2, 3
streamDefault, streamNonBlocking = 0, 1
streamLegacy, streamPerThread = 1, 2
eventDefault, eventBlockingSync, eventDisableTiming, eventInterprocess = 0, 1, 2, 4
hostAllocDefault, hostAllocPortable, hostAllocMapped, hostAllocWriteCombined = 0, 1, 2, 4
cudaMemAttachGlobal, cudaMemAttachHost = 1, 2
cudaCpuDeviceId, cudaInvalidDeviceId = -1, -2
cudaMemAdviseSetReadMostly, cudaMemAdviseUnsetReadMostly = 1, 2
cudaMemAdviseSetPreferredLocation, cudaMemAdviseUnsetPreferredLocation = 3, 4
cudaMemAdviseSetAccessedBy, cudaMemAdviseUnsetAccessedBy = 5, 6
globals().update({"cudaDevAttr" + name: value for name, value in _DEVICE_ATTRIBUTES.items()})

# what cudaGetErrorString says, where gpuhost raises without a driver message
_DESCRIPTIONS = {1: "invalid argument", 2: "out of memory", 100: "no CUDA-capable device is "
                 "detected", 101: "invalid device ordinal", 400: "invalid resource handle",
                 600: "device not ready"}


class CUDARuntimeError(RuntimeError):
    """A runtime-API call failed (CuPy's ``cupy.cuda.runtime.CUDARuntimeError``).

    Every function of this module raises it in place of gpuhost's own errors: a failed
    driver call becomes a CUDARuntimeError whose ``status`` is the driver's CUresult (the
    runtime's cudaError_t numbers are the same), with the driver's `gpuhost.CudaAPIError` as
    its ``__cause__``; a bad device id is cudaErrorInvalidDevice (101). The message is
    ``"<cudaErrorName>: <description>"``, as CuPy's. It pickles.

    Parameters
    ----------
    status : int
        The cudaError_t number, kept as ``status``.
    description : str, optional
        The text after the name; None: what cudaGetErrorString says for the common codes,
        else "unknown error".

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> try:
    ...     runtime.setDevice(7)
    ... except runtime.CUDARuntimeError as e:
    ...     print(e.status, e)
    101 cudaErrorInvalidDevice: invalid device ordinal
    >>> str(runtime.CUDARuntimeError(2))
    'cudaErrorMemoryAllocation: out of memory'
    """

    __module__ = "gpuhost.compat.cupy.runtime"  # where CuPy code finds it (runtime.py)

    def __init__(self, status, description=None):
        self.status = status
        name = _ERROR_NAMES.get(status, "cudaErrorUnknown")
        if description is None:
            description = _DESCRIPTIONS.get(status, "unknown error")
        self._description = description
        super().__init__("%s: %s" % (name, description))

    def __reduce__(self):
        return (type(self), (self.status, self._description))


def _translated(fn):
    """Run `fn`, turning gpuhost's driver errors into CUDARuntimeError."""

    @_functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except _CudaAPIError as e:
            raise CUDARuntimeError(e.code, e.msg or None) from e
        except _InvalidDeviceError as e:
            raise CUDARuntimeError(errorInvalidDevice) from e
    return call


def _device_id(device):
    device = int(device)
    if not 0 <= device < _device_count():
        raise CUDARuntimeError(errorInvalidDevice)
    return device


def _device_count():
    try:
        return _core.device_count()
    except Exception:
        return 0


# What runtime.py re-exports: every status code and enum, and the error.
__all__ = [_name for _name in globals() if not _name.startswith("_") and _name != "_core"]
