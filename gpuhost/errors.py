"""gpuhost's exceptions, named and shaped as numba.cuda's.

The C extension only instantiates these classes; they are defined here so that they can
be subclassed, pickled and documented like any Python exception.
"""

__all__ = [
    "CudaSupportError",
    "CudaDriverError",
    "CudaAPIError",
    "CudaOutOfMemoryError",
    "InvalidDeviceError",
    "StreamCaptureError",
    "GraphUpdateError",
    "NvrtcError",
    "NvrtcSupportError",
    "NvrtcWarning",
    "NcclError",
    "NcclSupportError",
]


class CudaSupportError(ImportError):
    """CUDA cannot be used here: no driver, the toolkit's stub driver, no device, or a
    driver too old. The message names what was tried and the driver's own error."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)


class CudaDriverError(Exception):
    """A CUDA driver operation was used wrongly or cannot be done (e.g. popping a
    context that is not on top of this thread's stack)."""

    def __init__(self, *args):
        super().__init__(*args)


class CudaAPIError(CudaDriverError):
    """A driver API call returned an error.

    Attributes: ``code`` (the CUresult as an int), ``name`` (e.g.
    ``"CUDA_ERROR_OUT_OF_MEMORY"``), ``msg`` (the driver's description) and ``call``
    (the entry point, e.g. ``"cuMemAlloc"``).
    """

    def __init__(self, code, name, msg="", call=""):
        super().__init__(code, name, msg, call)
        self.code = code
        self.name = name
        self.msg = msg
        self.call = call

    def __str__(self):
        where = "%s failed: " % self.call if self.call else ""
        return "%s[%s] %s: %s" % (where, self.code, self.name, self.msg)


class CudaOutOfMemoryError(CudaAPIError, MemoryError):
    """The device is out of memory (CUDA_ERROR_OUT_OF_MEMORY); also a MemoryError."""


class StreamCaptureError(CudaAPIError):
    """Stream capture went wrong: work that cannot be captured into a CUDA graph was asked
    of a capturing stream (``synchronize()``, a copy from pageable memory, a synchronous
    call while a capture is under way), or capture was used wrongly (begun twice, ended
    without a begin, on the legacy default stream).  The driver's refusals
    (``CUDA_ERROR_STREAM_CAPTURE_*``) carry ``code``, ``name`` and ``call``; gpuhost's own
    checks, made before the driver would invalidate the capture, have ``code`` None."""

    def __init__(self, code, name=None, msg="", call=""):
        if isinstance(code, str) and name is None:  # gpuhost's own message
            code, msg = None, code
        super().__init__(code, name, msg, call)

    def __str__(self):
        return self.msg if self.code is None else super().__str__()


class GraphUpdateError(CudaDriverError):
    """GraphExec.update() was refused (cuGraphExecUpdate): the message gives the driver's
    reason, e.g. that the graph's topology differs."""


class InvalidDeviceError(CudaDriverError, IndexError):
    """A device number that does not exist; the message says which devices do."""


class NvrtcError(Exception):
    """NVRTC failed. ``code`` and ``name`` are the nvrtcResult; ``log`` is the
    compiler's log (empty when the failure was not a compilation)."""

    def __init__(self, msg, code=None, name=None, log=""):
        super().__init__(msg)
        self.code = code
        self.name = name
        self.log = log


class NvrtcSupportError(NvrtcError, ImportError):
    """libnvrtc could not be found or loaded; the message lists the paths tried."""


class NvrtcWarning(UserWarning):
    """NVRTC compiled the source but logged warnings; the message holds the log, which
    also stays on the result as ``CompiledCode.log``."""

    def __init__(self, *args):
        super().__init__(*args)


# ncclResult_t's names, as NCCL's own messages and CuPy's NcclError spell them.
_NCCL_RESULT_NAMES = {
    0: "NCCL_ERROR_SUCCESS",
    1: "NCCL_ERROR_UNHANDLED_CUDA_ERROR",
    2: "NCCL_ERROR_SYSTEM_ERROR",
    3: "NCCL_ERROR_INTERNAL_ERROR",
    4: "NCCL_ERROR_INVALID_ARGUMENT",
    5: "NCCL_ERROR_INVALID_USAGE",
    6: "NCCL_ERROR_REMOTE_ERROR",
    7: "NCCL_ERROR_IN_PROGRESS",
}


class NcclError(RuntimeError):
    """NCCL returned an error. ``status`` is the ncclResult_t code (``name`` its name),
    ``call`` the NCCL function (empty when not known) and ``detail`` NCCL's own last-error
    text (ncclGetLastError), which is in the message.  ``NcclError(status)`` alone makes the
    message from NCCL's description of the code, as CuPy's NcclError does."""

    def __init__(self, status, call="", detail=""):
        self.status = int(status)
        self.name = _NCCL_RESULT_NAMES.get(self.status, "NCCL_ERROR_%d" % self.status)
        self.call = call
        self.detail = detail
        from . import _core

        text = _core._nccl_error_string(self.status) or "NCCL error %d" % self.status
        msg = "%s: %s" % (self.name, text)
        if call:
            msg = "%s failed: %s" % (call, msg)
        if detail:
            msg += " (NCCL: %s)" % detail
        super().__init__(msg)

    def __reduce__(self):
        return (type(self), (self.status, self.call, self.detail))


class NcclSupportError(RuntimeError):
    """libnccl could not be found or loaded; the message lists the paths tried (set
    GPUHOST_NCCL, or install the nvidia-nccl-cu13 wheel)."""

    def __init__(self, *args):
        super().__init__(*args)


def _nccl_error(status, call, detail):
    """The NcclError the C extension raises (csrc/nccl_api.c)."""
    return NcclError(status, call, detail)
