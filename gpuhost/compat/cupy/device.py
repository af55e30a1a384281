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
    """The current device's id (0 when no context is current, as cudaGetDevice says)."""
    dev = _core.current_device()
    return 0 if dev is None else dev.id


class _DeviceStack(threading.local):
    def __init__(self):
        self.ids = []  # the device current before each open ``with Device(...)`` block


_stack = _DeviceStack()
_attributes = {}  # device id -> Device.attributes


class Device:
    """A CUDA device, as ``cupy.cuda.Device``: ``with Device(1):`` makes device 1 current
    for the block and restores the previous device after it; ``use()`` makes it current
    until changed. `device`: an int, a Device (this one's or gpuhost's), or None for the
    current device. A device that does not exist raises CUDARuntimeError when used."""

    __slots__ = ("id", "__weakref__")

    def __init__(self, device=None):
        if device is None:
            self.id = get_device_id()
        elif isinstance(device, (Device, _core.Device)):
            self.id = device.id
        else:
            self.id = int(device)

    @classmethod
    def from_pci_bus_id(cls, pci_bus_id):
        """The device at PCI bus id `pci_bus_id` ("[domain]:[bus]:[device].[function]",
        hexadecimal); CUDARuntimeError for a malformed or unknown id."""
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
        """Make this device current in this thread (its primary context replaces the
        current one); returns it. CUDARuntimeError if it does not exist."""
        runtime.setDevice(self.id)
        return self

    def synchronize(self):
        """Wait until all work queued on this device has finished."""
        with self:
            _core.synchronize()

    @property
    def _device(self):
        return _core.get_device(runtime._device_id(self.id))

    @property
    def compute_capability(self):
        """The compute capability as CuPy writes it: major and minor digits, e.g. "90"."""
        return "%d%d" % self._device.compute_capability

    @property
    def pci_bus_id(self):
        """The PCI bus id, e.g. "0000:3B:00.0"."""
        return runtime.deviceGetPCIBusId(self.id)

    @property
    def attributes(self):
        """Every device attribute the driver reports, by the runtime's names without their
        ``cudaDevAttr`` prefix (``attributes["MaxThreadsPerBlock"]``); CUDARuntimeError for
        a device that does not exist."""
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
        """(free, total) bytes of the device's memory."""
        with self:
            info = _core.current_context().get_memory_info()
        return (info.free, info.total)

    @property
    def cublas_handle(self):
        """This thread's cuBLAS handle for the device (an int): made on first use from the
        libcublas found at run time. CudaSupportError naming the places tried when libcublas
        is absent; CUBLASError if cublasCreate fails."""
        return _libs.cublas_handle(self.id)

    @property
    def cusolver_handle(self):
        """This thread's cuSOLVER dense handle for the device (an int), as cublas_handle."""
        return _libs.cusolver_handle(self.id)

    @property
    def cusparse_handle(self):
        """This thread's cuSPARSE handle for the device (an int), as cublas_handle."""
        return _libs.cusparse_handle(self.id)


def get_cublas_handle():
    """This thread's cuBLAS handle for the current device."""
    return _libs.cublas_handle(get_device_id())


def get_cusolver_handle():
    """This thread's cuSOLVER handle for the current device."""
    return _libs.cusolver_handle(get_device_id())


def get_cusparse_handle():
    """This thread's cuSPARSE handle for the current device."""
    return _libs.cusparse_handle(get_device_id())


def get_compute_capability():
    """The current device's compute capability, "90" for 9.0."""
    return Device().compute_capability


def from_pointer(ptr):
    """The Device whose memory `ptr` (an int address) points into."""
    return Device(runtime.pointerGetAttributes(ptr).device)
