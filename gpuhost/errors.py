"""gpuhost's exceptions, named and shaped as numba.cuda's.

The C extension only instantiates these classes; they are defined here so that they can
be subclassed, pickled and documented like any Python exception, and handed to it once, at
the end of this module, so that raising one imports nothing.
"""

import sys

from . import _core

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
    "DeviceResetWarning",
    "NcclError",
    "NcclSupportError",
]


class CudaSupportError(ImportError):
    """CUDA cannot be used here: no driver, the toolkit's stub driver, no device, or a
    driver too old.

    Raised the first time something needs the driver (``len(gpuhost.gpus)``,
    `gpuhost.to_device`, ...), never by ``import gpuhost``. The message names what was
    tried and the driver's own error. It is an ImportError, as numba's is, so that
    ``except ImportError`` around optional GPU code catches it; `gpuhost.cuda_error`
    returns the same message without raising.

    Examples
    --------
    >>> issubclass(gpuhost.CudaSupportError, ImportError)
    True
    >>> try:
    ...     n = len(gpuhost.gpus)
    ... except gpuhost.CudaSupportError as e:
    ...     print("no GPU:", e)
    ...     n = 0
    >>> n >= 1
    True
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)


class CudaDriverError(Exception):
    """A CUDA driver operation was used wrongly or cannot be done.

    gpuhost raises it itself when a check made before calling the driver fails, e.g.
    popping a context that is not on top of this thread's stack, timing an event made
    with ``timing=False`` or recording an event on another context's stream. It is the
    base class of every driver error: `CudaAPIError` (a driver call failed),
    `InvalidDeviceError`, `GraphUpdateError` and `StreamCaptureError`, so one
    ``except CudaDriverError`` catches them all.

    Examples
    --------
    >>> e = gpuhost.event(timing=False)
    >>> e.record()
    >>> try:
    ...     e.elapsed_time(e)
    ... except gpuhost.CudaDriverError as err:
    ...     print("timing=False" in str(err))
    True
    """

    def __init__(self, *args):
        super().__init__(*args)


class CudaAPIError(CudaDriverError):
    """A driver API call returned an error.

    Every failed ``cu*`` call raises it (or a subclass: `CudaOutOfMemoryError`,
    `StreamCaptureError`); the message is ``"<call> failed: [<code>] <name>: <msg>"``.
    It pickles, so errors from worker processes come back whole.

    Parameters
    ----------
    code : int
        The CUresult.
    name : str
        The CUresult's name, e.g. ``"CUDA_ERROR_OUT_OF_MEMORY"``.
    msg : str, optional
        The driver's description, with what gpuhost adds (sizes, devices).
    call : str, optional
        The driver entry point, e.g. ``"cuMemAlloc"``.

    Attributes
    ----------
    code : int
        The CUresult as an int.
    name : str
        Its name.
    msg : str
        The description.
    call : str
        The entry point that failed ("" when not known).

    Examples
    --------
    >>> try:
    ...     gpuhost.device_array(10**15, np.uint8)
    ... except gpuhost.CudaAPIError as e:
    ...     print(e.call, e.code, e.name)
    cuMemAlloc 2 CUDA_ERROR_OUT_OF_MEMORY
    >>> str(gpuhost.CudaAPIError(1, "CUDA_ERROR_INVALID_VALUE", "invalid argument", "cuMemcpy"))
    'cuMemcpy failed: [1] CUDA_ERROR_INVALID_VALUE: invalid argument'
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
    """The device is out of memory (CUDA_ERROR_OUT_OF_MEMORY); also a MemoryError.

    Raised by allocations (`gpuhost.device_array`, `gpuhost.to_device`, the pools) after
    gpuhost has given the pools' cached blocks back and retried; the message says how much
    was asked, how much is free and what the pool holds. Attributes as `CudaAPIError`.

    Examples
    --------
    >>> try:
    ...     gpuhost.device_array(10**15, np.uint8)
    ... except MemoryError as e:
    ...     print(type(e).__name__, e.name)
    CudaOutOfMemoryError CUDA_ERROR_OUT_OF_MEMORY
    """


class StreamCaptureError(CudaAPIError):
    """Stream capture went wrong.

    Raised when work that cannot be captured into a CUDA graph is asked of a capturing
    stream (``synchronize()``, a copy from pageable memory, a synchronous call while a
    capture is under way), or when capture is used wrongly (begun twice, ended without a
    begin, on the legacy default stream).

    Parameters
    ----------
    code : int or str
        The CUresult; or, alone, gpuhost's own message (``code`` is then None).
    name, msg, call : str, optional
        As `CudaAPIError`'s.

    Attributes
    ----------
    code : int or None
        The driver's refusals (``CUDA_ERROR_STREAM_CAPTURE_*``) carry ``code``, ``name``
        and ``call``; gpuhost's own checks, made before the driver would invalidate the
        capture, have ``code`` None and the message in ``msg``.

    Examples
    --------
    >>> s = gpuhost.stream()
    >>> try:
    ...     s.end_capture()
    ... except gpuhost.StreamCaptureError as e:
    ...     print(e.code, "|", e)
    None | end_capture() without begin_capture(): the stream is not capturing
    """

    def __init__(self, code, name=None, msg="", call=""):
        if isinstance(code, str) and name is None:  # gpuhost's own message
            code, msg = None, code
        super().__init__(code, name, msg, call)

    def __str__(self):
        return self.msg if self.code is None else super().__str__()


class GraphUpdateError(CudaDriverError):
    """GraphExec.update() was refused (cuGraphExecUpdate).

    The message gives the driver's reason, e.g. that the graph's topology differs; the
    executable graph is unchanged and can still be launched, or instantiated anew from
    the new graph.

    Examples
    --------
    >>> issubclass(gpuhost.GraphUpdateError, gpuhost.CudaDriverError)
    True
    """


class InvalidDeviceError(CudaDriverError, IndexError):
    """A device number that does not exist; the message says which devices do.

    Raised by ``gpuhost.gpus[n]``, `gpuhost.select_device` and every ``device=``
    argument. Also an IndexError, so iterating devices by index ends cleanly.

    Examples
    --------
    >>> try:
    ...     gpuhost.gpus[99]
    ... except gpuhost.InvalidDeviceError as e:
    ...     print(e)
    no CUDA device 99: ... devices found (ids 0 to ...)
    """


class NvrtcError(Exception):
    """NVRTC failed: most often, the source did not compile.

    Raised by `gpuhost.compile` and what builds on it (RawKernel, SourceModule); the
    message holds the compiler's log.

    Parameters
    ----------
    msg : str
        The message.
    code : int, optional
        The nvrtcResult.
    name : str, optional
        Its name, e.g. ``"NVRTC_ERROR_COMPILATION"``.
    log : str, optional
        The compiler's log.

    Attributes
    ----------
    code : int or None
        The nvrtcResult.
    name : str or None
        Its name.
    log : str
        The compiler's log (empty when the failure was not a compilation).

    Examples
    --------
    >>> try:
    ...     gpuhost.compile("__global__ void k() { undeclared = 1; }")
    ... except gpuhost.NvrtcError as e:
    ...     print(e.name, "undeclared" in e.log)
    NVRTC_ERROR_COMPILATION True
    """

    def __init__(self, msg, code=None, name=None, log=""):
        super().__init__(msg)
        self.code = code
        self.name = name
        self.log = log


class NvrtcSupportError(NvrtcError, ImportError):
    """libnvrtc could not be found or loaded; the message lists the paths tried.

    Raised by the first compilation (never by ``import gpuhost``). Install the
    nvidia-cuda-nvrtc wheel or a CUDA toolkit, or point GPUHOST_NVRTC at the library.
    Both an `NvrtcError` and an ImportError.

    Examples
    --------
    >>> issubclass(gpuhost.NvrtcSupportError, (gpuhost.NvrtcError, ImportError))
    True
    """


class NvrtcWarning(UserWarning):
    """NVRTC compiled the source but logged warnings.

    Issued (a `warnings` warning, not raised) by `gpuhost.compile` when it compiles (not
    for a result from its cache); the message holds the log, which also stays on the
    result as ``CompiledCode.log``. Filter it as any UserWarning.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", gpuhost.NvrtcWarning)
    ...     code = gpuhost.compile("__global__ void k() { int unused; }")
    >>> "unused" in code.log
    True
    """

    def __init__(self, *args):
        super().__init__(*args)


class DeviceResetWarning(RuntimeWarning):
    """Device.reset() is destroying a primary context that other libraries in this process
    hold.

    Issued (a `warnings` warning, not raised) by `Device.reset` (and numba's
    ``driver.reset()``) when, once gpuhost has freed what it made and let go of the device's
    primary context, the context is still held by someone else: PyTorch, CuPy, JAX or
    numba's own driver, which the message names where they are imported. The context is
    then left to them, alive; ``reset(force=True)`` destroys it all the same, ending their
    state on the device (their arrays, handles and streams are invalid afterwards).
    `Context.reset` frees only what gpuhost made and leaves them alone. With the warning
    made an error (``warnings.simplefilter("error",
    gpuhost.DeviceResetWarning)``) the device is not reset: only gpuhost's own state is
    freed and its hold released.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", gpuhost.DeviceResetWarning)
    ...     gpuhost.gpus[0].reset()  # doctest: +SKIP
    """

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
    """NCCL returned an error.

    Raised by `gpuhost.nccl.Communicator`'s calls, and by its ``check_async_error()`` and
    ``wait()`` for an error NCCL reported asynchronously. ``NcclError(status)`` alone
    makes the message from NCCL's description of the code, as CuPy's NcclError does. It
    pickles.

    Parameters
    ----------
    status : int
        The ncclResult_t.
    call : str, optional
        The NCCL function that failed.
    detail : str, optional
        NCCL's own last-error text (ncclGetLastError).

    Attributes
    ----------
    status : int
        The ncclResult_t code.
    name : str
        Its name, e.g. ``"NCCL_ERROR_INVALID_USAGE"``.
    call : str
        The NCCL function (empty when not known).
    detail : str
        NCCL's last-error text, which is also in the message.

    Examples
    --------
    >>> from gpuhost.errors import NcclError
    >>> e = NcclError(5, "ncclAllReduce")
    >>> e.status, e.name
    (5, 'NCCL_ERROR_INVALID_USAGE')
    >>> str(e).startswith("ncclAllReduce failed: NCCL_ERROR_INVALID_USAGE")
    True
    """

    def __init__(self, status, call="", detail=""):
        self.status = int(status)
        self.name = _NCCL_RESULT_NAMES.get(self.status, "NCCL_ERROR_%d" % self.status)
        self.call = call
        self.detail = detail
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
    """libnccl could not be found or loaded; the message lists the paths tried.

    Raised by the first use of `gpuhost.nccl` that needs the library (never by
    ``import gpuhost``). Set GPUHOST_NCCL to the library's path, or install the
    nvidia-nccl-cu13 (or -cu12) wheel; `gpuhost.nccl.is_available` asks without raising.

    Examples
    --------
    >>> from gpuhost import nccl
    >>> if not nccl.is_available():
    ...     print("no NCCL")
    """

    def __init__(self, *args):
        super().__init__(*args)


def _nccl_error(status, call, detail):
    """The NcclError the C extension raises (csrc/nccl/nccl_api.c)."""
    return NcclError(status, call, detail)


def _other_cuda_users():
    """The libraries of this process that may hold a device's primary context: those
    imported, PyTorch only once its CUDA is initialized, numba's driver once it is."""
    users = []
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            users.append("PyTorch")
    except Exception:  # a torch without CUDA, or one half imported
        pass
    if "cupy" in sys.modules:
        users.append("CuPy")
    if "jax" in sys.modules or "jaxlib" in sys.modules:
        users.append("JAX")
    driver = sys.modules.get("numba.cuda.cudadrv.driver")
    if driver is not None and getattr(getattr(driver, "driver", None), "is_initialized", False):
        users.append("numba's CUDA driver")
    return users


def _device_reset_warning(device_id, forced):
    """Device.reset() found the device's primary context held by another library once
    gpuhost let go of it (csrc/core/context.c calls this before it would destroy it): say
    whom, and what happens."""
    import warnings

    users = _other_cuda_users()
    who = ", ".join(users) if users else "another library or native code of this process"
    if forced:
        what = ("reset(force=True) destroys it: their arrays, handles and streams on the "
                "device become invalid.")
    else:
        what = ("gpuhost freed what it made there and let go of the context but left it "
                "alive: destroying it would end their state on the device and can crash the "
                "process at exit. reset(force=True) destroys it anyway; Context.reset() frees "
                "only what gpuhost made.")
    warnings.warn(DeviceResetWarning("Device.reset() of device %d: its primary context is "
                                     "also held by %s; %s" % (device_id, who, what)),
                  stacklevel=2)


# The classes the C core raises, handed over once: it keeps them in its module state.
_core._set_exceptions(**{name: globals()[name] for name in __all__
                         if not name.endswith("Warning")})
# Registered here, with the classes, not in the lazily imported devices.py: Device.reset() is
# a C method, and a process that never touches gpuhost.devices must be warned as well.
_core._set_helpers(device_reset_warning=_device_reset_warning)
