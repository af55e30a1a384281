"""cupy.cuda.device's names over gpuhost's devices and primary contexts.

CuPy's "current device" is the device of this thread's current context: gpuhost and the
CUDA runtime (CuPy, PyTorch) share each device's primary context, so ``Device(1).use()``
here is what ``cudaSetDevice(1)`` is there.
"""
import threading

from ... import _core
from . import _libs, runtime
from ._runtime_enums import DEVICE_ATTRIBUTES

__all__ = ["Device", "from_pointer", "get_compute_capability", "get_cublas_handle",
           "get_cusolver_handle", "get_cusparse_handle", "get_device_id"]


def get_device_id():
    """The current device's id, as ``cupy.cuda.get_device_id``.

    The current device is that of this thread's current context.

    Returns
    -------
    int
        The id; 0 when no context is current, as cudaGetDevice says.

    Examples
    --------
    >>> from gpuhost.compat import cupy as cuda
    >>> with cuda.Device(1):
    ...     cuda.get_device_id()
    1
    """
    dev = _core.current_device()
    return 0 if dev is None else dev.id


class _DeviceStack(threading.local):
    def __init__(self):
        self.ids = []  # the device current before each open ``with Device(...)`` block


_stack = _DeviceStack()
_attributes = {}  # device id -> Device.attributes


class Device:
    """A CUDA device, as ``cupy.cuda.Device``.

    ``with Device(1):`` makes device 1 current for the block and restores the previous
    device after it; ``use()`` makes it current until changed. Devices compare, hash and
    convert to int by their id. Making one does not touch the device: one that does not
    exist raises CUDARuntimeError when used.

    Parameters
    ----------
    device : int or gpuhost.compat.cupy.device.Device, optional
        An id, a Device (this one's or gpuhost's), or None for the current device.

    Examples
    --------
    >>> from gpuhost.compat import cupy as cuda
    >>> with cuda.Device(1) as dev:
    ...     print(dev, cuda.Device().id)
    <CUDA Device 1> 1
    >>> int(cuda.Device(gpuhost.gpus[0])), cuda.Device(0) == cuda.Device(0)
    (0, True)
    """

    __slots__ = {
        "id": """The device's id, an int, its ordinal as in ``gpuhost.gpus[id]``.

        Fixed when the Device is made (None there: the device current then); ``int(dev)``
        is the same number.

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> cuda.Device(1).id, cuda.Device(gpuhost.gpus[1]).id
        (1, 1)
        >>> with cuda.Device(1):
        ...     dev = cuda.Device()
        >>> dev.id, int(dev), cuda.Device().id
        (1, 1, 0)
        """,
        "__weakref__": None,
    }

    def __init__(self, device=None):
        if device is None:
            self.id = get_device_id()
        elif isinstance(device, (Device, _core.Device)):
            self.id = device.id
        else:
            self.id = int(device)

    @classmethod
    def from_pci_bus_id(cls, pci_bus_id):
        """The device at a PCI bus id.

        Parameters
        ----------
        pci_bus_id : str
            "[domain]:[bus]:[device].[function]", hexadecimal, as `pci_bus_id` gives.

        Returns
        -------
        gpuhost.compat.cupy.device.Device

        Raises
        ------
        CUDARuntimeError
            A malformed or unknown id.

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> cuda.Device.from_pci_bus_id(cuda.Device(1).pci_bus_id)
        <CUDA Device 1>
        """
        return cls(runtime.deviceGetByPCIBusId(pci_bus_id))

    def __int__(self):
        return self.id

    def __repr__(self):
        return "<CUDA Device %d>" % self.id

    def __hash__(self):
        return hash(self.id)

    def __eq__(self, other):
        return isinstance(other, Device) and self.id == other.id

    def __ne__(self, other):
        return not self == other

    def __lt__(self, other):
        return self.id < other.id if isinstance(other, Device) else NotImplemented

    def __le__(self, other):
        return self.id <= other.id if isinstance(other, Device) else NotImplemented

    def __gt__(self, other):
        return self.id > other.id if isinstance(other, Device) else NotImplemented

    def __ge__(self, other):
        return self.id >= other.id if isinstance(other, Device) else NotImplemented

    def __enter__(self):
        prev = _core.current_device()
        if prev is None or prev.id != self.id:
            self.use()
        _stack.ids.append(None if prev is None else prev.id)
        return self

    def __exit__(self, *exc_info):
        prev = _stack.ids.pop()
        cur = _core.current_device()
        if prev is None:
            if cur is not None:
                _core.current_context().pop()  # no context was current before the block
        elif cur is None or cur.id != prev:
            _core.select_device(prev)
        return False

    def use(self):
        """Make this device current in this thread until changed.

        Its primary context replaces the current one, as ``cudaSetDevice`` does.

        Returns
        -------
        gpuhost.compat.cupy.device.Device
            This device.

        Raises
        ------
        CUDARuntimeError
            The device does not exist.

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> cuda.Device(1).use()
        <CUDA Device 1>
        >>> cuda.get_device_id()
        1
        >>> _ = cuda.Device(0).use()
        """
        runtime.setDevice(self.id)
        return self

    def synchronize(self):
        """Wait until all work queued on this device has finished.

        Raises
        ------
        CUDARuntimeError
            The device does not exist.

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> cuda.Device(0).synchronize()
        """
        with self:
            _core.synchronize()

    @property
    def _device(self):
        return _core.get_device(runtime._device_id(self.id))

    @property
    def compute_capability(self):
        """The compute capability as CuPy writes it, major and minor digits (``"90"``).

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> cuda.Device(0).compute_capability == "%d%d" % gpuhost.gpus[0].compute_capability
        True
        """
        return "%d%d" % self._device.compute_capability

    @property
    def pci_bus_id(self):
        """The PCI bus id, as ``"0000:3B:00.0"`` (cudaDeviceGetPCIBusId).

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> len(cuda.Device(0).pci_bus_id.split(":"))
        3
        """
        return runtime.deviceGetPCIBusId(self.id)

    @property
    def attributes(self):
        """Every device attribute the driver reports, as a dict.

        Keyed by the runtime's names without their ``cudaDevAttr`` prefix; read once per
        device, then a copy of that is returned. CUDARuntimeError for a device that does
        not exist.

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> cuda.Device(0).attributes["MaxThreadsPerBlock"]
        1024
        """
        got = _attributes.get(self.id)
        if got is None:
            dev = self._device_or_raise()
            got = {}
            for name, value in DEVICE_ATTRIBUTES.items():
                try:
                    got[name] = dev.get_attribute(value)
                except Exception as e:  # an attribute this driver does not know
                    if getattr(e, "code", None) != runtime.errorInvalidValue:
                        raise
            _attributes[self.id] = got
        return dict(got)

    def _device_or_raise(self):
        return _core.get_device(runtime._device_id(self.id))

    @property
    def mem_info(self):
        """(free, total) bytes of the device's memory (cudaMemGetInfo).

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> free, total = cuda.Device(0).mem_info
        >>> 0 < free <= total
        True
        """
        with self:
            info = _core.current_context().get_memory_info()
        return (info.free, info.total)

    @property
    def cublas_handle(self):
        """This thread's cuBLAS handle for the device, an int.

        Made on first use from the libcublas found at run time (GPUHOST_CUBLAS_LIBRARY,
        CUDA_HOME, the nvidia-cublas wheel, the system's loader), with the device's
        primary context current. Raises CudaSupportError naming the places tried when
        libcublas is absent, CUBLASError if cublasCreate fails.

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> handle = cuda.Device(0).cublas_handle  # doctest: +SKIP
        """
        return _libs.cublas_handle(self.id)

    @property
    def cusolver_handle(self):
        """This thread's cuSOLVER dense handle for the device, an int, as `cublas_handle`.

        Raises CudaSupportError without libcusolver, CUSOLVERError if cusolverDnCreate
        fails.

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> handle = cuda.Device(0).cusolver_handle  # doctest: +SKIP
        """
        return _libs.cusolver_handle(self.id)

    @property
    def cusparse_handle(self):
        """This thread's cuSPARSE handle for the device, an int, as `cublas_handle`.

        Raises CudaSupportError without libcusparse, CUSPARSEError if cusparseCreate
        fails.

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> handle = cuda.Device(0).cusparse_handle  # doctest: +SKIP
        """
        return _libs.cusparse_handle(self.id)


def get_cublas_handle():
    """This thread's cuBLAS handle for the current device, an int.

    ``Device().cublas_handle``: made on first use, one per thread and device.

    Returns
    -------
    int

    Raises
    ------
    CudaSupportError
        libcublas was not found; the message names the places tried.
    CUBLASError
        Making the handle failed.

    Examples
    --------
    >>> from gpuhost.compat import cupy as cuda
    >>> handle = cuda.get_cublas_handle()  # doctest: +SKIP
    """
    return _libs.cublas_handle(get_device_id())


def get_cusolver_handle():
    """This thread's cuSOLVER handle for the current device, an int.

    ``Device().cusolver_handle``: made on first use, one per thread and device.

    Returns
    -------
    int

    Raises
    ------
    CudaSupportError
        libcusolver was not found; the message names the places tried.
    CUSOLVERError
        Making the handle failed.

    Examples
    --------
    >>> from gpuhost.compat import cupy as cuda
    >>> handle = cuda.get_cusolver_handle()  # doctest: +SKIP
    """
    return _libs.cusolver_handle(get_device_id())


def get_cusparse_handle():
    """This thread's cuSPARSE handle for the current device, an int.

    ``Device().cusparse_handle``: made on first use, one per thread and device.

    Returns
    -------
    int

    Raises
    ------
    CudaSupportError
        libcusparse was not found; the message names the places tried.
    CUSPARSEError
        Making the handle failed.

    Examples
    --------
    >>> from gpuhost.compat import cupy as cuda
    >>> handle = cuda.get_cusparse_handle()  # doctest: +SKIP
    """
    return _libs.cusparse_handle(get_device_id())


def get_compute_capability():
    """The current device's compute capability as CuPy writes it, "90" for 9.0.

    Returns
    -------
    str

    Examples
    --------
    >>> from gpuhost.compat.cupy import device
    >>> device.get_compute_capability() == device.Device().compute_capability
    True
    """
    return Device().compute_capability


def from_pointer(ptr):
    """The Device whose memory an address points into (cudaPointerGetAttributes).

    Parameters
    ----------
    ptr : int
        A device, managed or registered host address.

    Returns
    -------
    gpuhost.compat.cupy.device.Device

    Examples
    --------
    >>> from gpuhost.compat.cupy import device
    >>> with gpuhost.gpus[1]:
    ...     d = gpuhost.device_array(4)
    >>> device.from_pointer(d.device_ctypes_pointer.value)
    <CUDA Device 1>
    """
    return Device(runtime.pointerGetAttributes(ptr).device)
