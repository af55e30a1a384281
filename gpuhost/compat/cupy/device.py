"""cupy.cuda.device's names over gpuhost's devices and primary contexts.

CuPy's "current device" is the device of this thread's current context: gpuhost and the
CUDA runtime (CuPy, PyTorch) share each device's primary context, so ``Device(1).use()``
here is what ``cudaSetDevice(1)`` is there.
"""
import threading

from ... import _core
from . import _libs

__all__ = ["Device", "get_device_id", "get_cublas_handle", "get_cusolver_handle"]


def get_device_id():
    """The current device's id (0 when no context is current, as cudaGetDevice says)."""
    dev = _core.current_device()
    return 0 if dev is None else dev.id


class Device:
    """A CUDA device, as ``cupy.cuda.Device``: ``with Device(1):`` makes device 1 current
    for the block and restores the previous device after it; ``use()`` makes it current
    until changed. `device`: an int, a Device (this one's or gpuhost's), or None for the
    current device."""

    __slots__ = ("id", "_stacks", "__weakref__")

    def __init__(self, device=None):
        if device is None:
            self.id = get_device_id()
        elif isinstance(device, (Device, _core.Device)):
            self.id = device.id
        else:
            self.id = int(device)
        self._stacks = threading.local()

    def __int__(self):
        return self.id

    def __repr__(self):
        return "<CUDA Device %d>" % self.id

    def __hash__(self):
        return hash(self.id)

    def _cmp(self, other):
        return other.id if isinstance(other, Device) else NotImplemented

    def __eq__(self, other):
        o = self._cmp(other)
        return o if o is NotImplemented else self.id == o

    def __ne__(self, other):
        o = self._cmp(other)
        return o if o is NotImplemented else self.id != o

    def __lt__(self, other):
        o = self._cmp(other)
        return o if o is NotImplemented else self.id < o

    def __le__(self, other):
        o = self._cmp(other)
        return o if o is NotImplemented else self.id <= o

    def __gt__(self, other):
        o = self._cmp(other)
        return o if o is NotImplemented else self.id > o

    def __ge__(self, other):
        o = self._cmp(other)
        return o if o is NotImplemented else self.id >= o

    def __enter__(self):
        stack = getattr(self._stacks, "stack", None)
        if stack is None:
            stack = self._stacks.stack = []
        prev = _core.current_device()
        if prev is None or prev.id != self.id:
            self.use()
        stack.append(prev)  # nested with-blocks of one Device object each restore theirs
        return self

    def __exit__(self, *exc_info):
        prev = self._stacks.stack.pop()
        cur = _core.current_device()
        if prev is None:
            if cur is not None:
                _core.current_context().pop()  # no context was current before the block
        elif cur is None or cur.id != prev.id:
            _core.select_device(prev.id)
        return False

    def use(self):
        """Make this device current in this thread (its primary context replaces the
        current one). InvalidDeviceError if it does not exist."""
        _core.select_device(self.id)

    def synchronize(self):
        """Wait until all work queued on this device has finished."""
        with self:
            _core.synchronize()

    @property
    def _device(self):
        return _core.get_device(self.id)

    @property
    def compute_capability(self):
        """The compute capability as CuPy writes it: major and minor digits, e.g. "90"."""
        return "%d%d" % self._device.compute_capability

    @property
    def pci_bus_id(self):
        """The PCI bus id, e.g. "0000:3B:00.0"."""
        return self._device.pci_bus_id

    @property
    def mem_info(self):
        """(free, total) bytes of the device's memory."""
        with self:
            info = _core.current_context().get_memory_info()
        return (info.free, info.total)

    @property
    def cublas_handle(self):
        """The device's cuBLAS handle (an int): one per device, made on first use from the
        libcublas found at run time, destroyed at exit. CudaSupportError naming the places
        tried when libcublas is absent; CUBLASError if cublasCreate fails."""
        return _libs.cublas_handle(self.id)

    @property
    def cusolver_handle(self):
        """The device's cuSOLVER dense handle (an int), as cublas_handle for libcusolver."""
        return _libs.cusolver_handle(self.id)


def get_cublas_handle():
    """The current device's cuBLAS handle."""
    return _libs.cublas_handle(get_device_id())


def get_cusolver_handle():
    """The current device's cuSOLVER handle."""
    return _libs.cusolver_handle(get_device_id())
