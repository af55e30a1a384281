"""The device list and device discovery in numba.cuda's names: gpus, list_devices,
detect, is_available, get_context, require_context, close."""
import functools
import sys
import threading

from . import _core
from .errors import CudaSupportError

__all__ = ["gpus", "list_devices", "detect", "get_context", "require_context", "close",
           "summary", "DeviceSummary", "is_supported_version", "cuda_error",
           "is_float16_supported", "is_bfloat16_supported", "is_fp8_supported"]

_SUPPORTED_MAJOR_VERSIONS = (12, 13)  # the CUDA versions gpuhost is built and tested for


class _DeviceList:
    """The devices, indexable, iterable and sized, as numba's ``cuda.gpus``.

    ``gpus[i]`` is a `Device`, usable as a context manager that makes its primary context
    current; ``gpus.current`` is the device whose context is current in this thread, or
    None; ``gpus.lst`` is the list. Touching it loads the driver; with none, it raises
    `CudaSupportError`.

    Examples
    --------
    >>> len(gpuhost.gpus) >= 1
    True
    >>> with gpuhost.gpus[0]:
    ...     gpuhost.gpus.current.id
    0
    """

    def __len__(self):
        return _core.device_count()

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if not isinstance(index, int):
            raise TypeError("device index must be an int, not %s" % type(index).__name__)
        if index < 0:
            index += len(self)
            if index < 0:
                return _core.get_device(index - len(self))  # raises, naming the devices
        return _core.get_device(index)

    def __iter__(self):
        return iter([_core.get_device(i) for i in range(len(self))])

    @property
    def current(self):
        return _core.current_device()

    @property
    def lst(self):
        """The devices as a list (numba's name)."""
        return list(self)

    def __repr__(self):
        try:
            return "<gpus: %s>" % ", ".join(repr(d) for d in self)
        except CudaSupportError:
            return "<gpus: no CUDA driver>"

    def _repr_html_(self):
        """An HTML table of the devices, one row each, for Jupyter."""
        found = DeviceSummary()
        return _core.html_table(found._caption(), _TABLE_HEADER,
                                _device_table_rows(found.devices))

    def _repr_pretty_(self, p, cycle):
        """IPython's pretty printer: one line per device."""
        if cycle:
            p.text("<gpus>")
            return
        try:
            devices = list(self)
        except CudaSupportError as e:
            p.text("<gpus: no CUDA driver: %s>" % e)
            return
        p.text("<gpus: %d device%s>" % (len(devices), "" if len(devices) == 1 else "s"))
        for dev in devices:
            p.text("\n  %d: %s, compute capability %d.%d, %s" % (
                dev.id, dev.name, dev.compute_capability[0], dev.compute_capability[1],
                _core.format_bytes(dev.total_memory)))


gpus = _DeviceList()


def is_supported_version():
    """Whether NVRTC's CUDA version is one gpuhost is tested with (numba's).

    NVRTC's version is what numba calls the runtime's. gpuhost is tested with CUDA 12 and
    13; others may still work.

    Returns
    -------
    bool

    Raises
    ------
    NvrtcSupportError
        libnvrtc was not found.

    Examples
    --------
    >>> gpuhost.is_supported_version()
    True
    """
    from ._library_versions import get_version

    return get_version()[0] in _SUPPORTED_MAJOR_VERSIONS


def is_float16_supported():
    """Whether 16-bit floats are supported (numba's): always True.

    Every device gpuhost supports has them.

    Examples
    --------
    >>> gpuhost.is_float16_supported()
    True
    """
    return True


def is_bfloat16_supported():
    """Whether the current device has bfloat16: compute capability 8.0 or newer (numba's).

    Makes device 0's primary context current if no context is.

    Returns
    -------
    bool

    Examples
    --------
    >>> with gpuhost.gpus[0] as dev:
    ...     gpuhost.is_bfloat16_supported() == (dev.compute_capability >= (8, 0))
    True
    """
    return _core.current_context().device.compute_capability >= (8, 0)


def is_fp8_supported():
    """Whether the current device has FP8: compute capability 8.9 or newer (numba's).

    Makes device 0's primary context current if no context is.

    Returns
    -------
    bool

    Examples
    --------
    >>> with gpuhost.gpus[0] as dev:
    ...     gpuhost.is_fp8_supported() == (dev.compute_capability >= (8, 9))
    True
    """
    return _core.current_context().device.compute_capability >= (8, 9)


def cuda_error():
    """Why the CUDA driver is not usable, or None if it is (numba's).

    Never raises: use it to decide whether to run GPU code at all.

    Returns
    -------
    str or None
        None if the driver loaded and initialized, else the `CudaSupportError`'s message.

    Examples
    --------
    >>> gpuhost.cuda_error() is None
    True
    """
    try:
        _core.device_count()
    except CudaSupportError as e:
        return str(e)
    return None


def list_devices():
    """All devices, as a list of `Device`.

    Returns
    -------
    list of Device

    Raises
    ------
    CudaSupportError
        No usable CUDA driver.

    Examples
    --------
    >>> gpuhost.list_devices()                      # doctest: +ELLIPSIS
    [<CUDA device 0 '...'>, ...]
    """
    return list(gpus)


def get_context(devnum=None):
    """The Context current in this thread, making one current if none is.

    numba's ``cuda.devices.get_context``; the same as `current_context`.

    Parameters
    ----------
    devnum : int, optional
        The device whose primary context is made current when none is (default 0).

    Returns
    -------
    Context

    Raises
    ------
    CudaDriverError
        Another device's context is current.
    InvalidDeviceError
        There is no device `devnum`.

    Examples
    --------
    >>> ctx = gpuhost.devices.get_context()
    >>> ctx is gpuhost.current_context()
    True
    """
    return _core.current_context(devnum)


def require_context(fn):
    """Decorator: make sure a context is current before `fn` runs (numba's).

    Each call first calls `current_context`, which makes device 0's primary context
    current if none is.

    Parameters
    ----------
    fn : callable
        The function to wrap.

    Returns
    -------
    callable
        `fn`, wrapped (``functools.wraps``).

    Examples
    --------
    >>> @gpuhost.require_context
    ... def free_bytes():
    ...     return gpuhost.current_context().get_memory_info().free
    >>> free_bytes() > 0
    True
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        _core.current_context()
        return fn(*args, **kwargs)

    return wrapper


def device_of_uuid(uuid, what):
    """The Device whose UUID is `uuid` (an IPC handle's device, found in this process);
    InvalidDeviceError naming `what` ("array", "event") if none is."""
    for i in range(_core.device_count()):
        dev = _core.get_device(i)
        if dev.uuid == uuid:
            return dev
    from .errors import InvalidDeviceError

    raise InvalidDeviceError("the %s's device %s is not visible in this process" % (what, uuid))


def close():
    """Release this thread's contexts (numba's ``cuda.close()``).

    Pops the primary contexts off this thread's context stack; in the main thread also
    gives up every primary context gpuhost holds, so the driver can destroy them, and
    resets an installed memory manager. Arrays, streams and other objects made before
    then raise when used; the next call that needs a context makes a new one.

    Examples
    --------
    >>> d = gpuhost.to_device(np.ones(3))
    >>> del d
    >>> gpuhost.close()
    """
    manager = sys.modules.get("gpuhost.memory_manager")
    if manager is not None:
        manager._close_managers()  # an EMM plugin's reset(), as numba's close() does
    _core.close(threading.current_thread() is threading.main_thread())


_MIN_CC = (5, 0)  # the oldest architecture gpuhost supports, as numba's detect() says
_TABLE_HEADER = ("id", "name", "compute capability", "memory", "multiprocessors",
                 "PCI bus id", "UUID", "supported")


def _device_table_rows(devices):
    return [(dev.id, dev.name, "%d.%d" % dev.compute_capability,
             _core.format_bytes(dev.total_memory), dev.MULTIPROCESSOR_COUNT, dev.pci_bus_id,
             dev.uuid, "yes" if dev.compute_capability >= _MIN_CC else "no") for dev in devices]



def _support(cc):
    """numba's detect() verdict for compute capability `cc`."""
    if cc < (3, 5):
        return "[NOT SUPPORTED: CC < 3.5]"
    if cc < _MIN_CC:
        return "[NOT SUPPORTED: CC < %d.%d]" % _MIN_CC
    return "[SUPPORTED]"


class DeviceSummary:
    """What `detect` finds, as an object; made by `summary`.

    ``str()`` is the text `detect` prints; in Jupyter it shows as a table of the devices.

    Attributes
    ----------
    devices : list of Device
        Empty without a usable driver.
    error : CudaSupportError or None
        Why the driver is not usable, or None.
    supported : int
        How many of the devices gpuhost supports (compute capability 5.0 or newer);
        ``bool(summary)`` is ``supported > 0``, `detect`'s result.

    Examples
    --------
    >>> s = gpuhost.summary()
    >>> s.error is None, len(s.devices) == len(gpuhost.gpus), bool(s)
    (True, True, True)
    """

    def __init__(self):
        try:
            self.devices = list_devices()
            self.error = None
        except CudaSupportError as e:
            self.devices = []
            self.error = e
        self.supported = sum(dev.compute_capability >= _MIN_CC for dev in self.devices)

    def __bool__(self):
        return self.supported > 0

    def _caption(self):
        if self.error is not None:
            return "CUDA driver not usable: %s" % self.error
        return "Found %d CUDA device%s, %d supported" % (
            len(self.devices), "" if len(self.devices) == 1 else "s", self.supported)

    def __str__(self):
        if self.error is not None:
            return self._caption()
        n = len(self.devices)
        lines = ["Found %d CUDA devices" % n]  # numba's wording, kept for scripts grepping it
        for dev in self.devices:
            cc = dev.compute_capability
            rows = [
                ("Compute Capability", "%d.%d" % cc),
                ("PCI Device ID", dev.PCI_DEVICE_ID),
                ("PCI Bus ID", dev.PCI_BUS_ID),
                ("UUID", dev.uuid),
                ("Watchdog", "Enabled" if dev.KERNEL_EXEC_TIMEOUT else "Disabled"),
                ("FP32/FP64 Performance Ratio", dev.SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO),
                ("FP16 Support", "Yes" if cc >= (5, 3) else "No"),
                ("BF16 Support", "Yes" if cc >= (8, 0) else "No"),
                ("FP8 Support", "Yes" if cc >= (8, 9) else "No"),
            ]
            lines.append("id %d    %20s %40s" % (dev.id, dev.name, _support(cc)))
            lines.extend("%40s: %s" % (label, value) for label, value in rows)
        lines.append("Summary:\n\t%d/%d devices are supported" % (self.supported, n))
        return "\n".join(lines)

    def __repr__(self):
        return "<gpuhost.DeviceSummary: %s>" % self._caption()

    def _repr_html_(self):
        """An HTML table of the devices, one row each, for Jupyter."""
        return _core.html_table(self._caption(), _TABLE_HEADER,
                                _device_table_rows(self.devices))

    def _repr_pretty_(self, p, cycle):
        """IPython's pretty printer: the text detect() prints."""
        p.text(repr(self) if cycle else str(self))


def summary():
    """The devices found, as a `DeviceSummary`: what `detect` prints, as an object.

    In Jupyter it shows as a table of the devices. Never raises for a missing driver.

    Returns
    -------
    DeviceSummary
        ``.error`` says why when no driver is usable.

    Examples
    --------
    >>> s = gpuhost.summary()
    >>> s                                        # doctest: +ELLIPSIS
    <gpuhost.DeviceSummary: Found ... CUDA device..., ... supported>
    >>> print(s)                                 # doctest: +SKIP
    Found 1 CUDA devices
    id 0    NVIDIA H200                              [SUPPORTED]
    ...
    """
    return DeviceSummary()


def detect(file=None):
    """Print the CUDA devices found, in numba.cuda.detect()'s words and layout.

    Scripts that grep numba's output keep working. With no usable driver it prints why.

    Parameters
    ----------
    file : file object, optional
        Where to print (default ``sys.stdout``).

    Returns
    -------
    bool
        True if at least one device is supported.

    Examples
    --------
    >>> gpuhost.detect()                          # doctest: +SKIP
    Found 1 CUDA devices
    id 0             NVIDIA H200                              [SUPPORTED]
                          Compute Capability: 9.0
    ...
    Summary:
        1/1 devices are supported
    True
    """
    found = DeviceSummary()
    print(str(found), file=file if file is not None else sys.stdout)
    return bool(found)
