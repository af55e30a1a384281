"""The device list and device discovery in numba.cuda's names: gpus, list_devices,
detect, is_available, require_context, close."""
import functools
import sys
import threading

from . import _core
from .errors import CudaSupportError

__all__ = ["gpus", "list_devices", "detect", "require_context", "close"]


class _DeviceList:
    """``gpuhost.gpus``: the devices, indexable, iterable and sized; ``gpus.current`` is
    the device whose context is current in this thread, or None. Touching it loads the
    driver; with none, it raises CudaSupportError."""

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


gpus = _DeviceList()


def list_devices():
    """All devices, as a list of Device."""
    return list(gpus)


def require_context(fn):
    """Decorator: make sure a context is current (current_context()) before `fn` runs."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        _core.current_context()
        return fn(*args, **kwargs)

    return wrapper


def close():
    """Pop the primary contexts off this thread's context stack; in the main thread also
    give up every primary context gpuhost holds, so the driver can destroy them (numba's
    ``cuda.close()``). Objects made before then raise when used."""
    manager = sys.modules.get("gpuhost.memory_manager")
    if manager is not None:
        manager._close_managers()  # an EMM plugin's reset(), as numba's close() does
    _core.close(threading.current_thread() is threading.main_thread())


def detect(file=None):
    """Print the CUDA devices found, as numba.cuda.detect() does, and return True if at
    least one is supported. With no usable driver, print why and return False."""
    out = file if file is not None else sys.stdout
    try:
        devices = list_devices()
    except CudaSupportError as e:
        print("CUDA driver not usable: %s" % e, file=out)
        return False
    print("Found %d CUDA device%s" % (len(devices), "" if len(devices) == 1 else "s"), file=out)
    supported = 0
    for dev in devices:
        ok = dev.compute_capability >= (5, 0)
        supported += ok
        print("id %d    %-40r [%s]" % (dev.id, dev.name, "SUPPORTED" if ok else "NOT SUPPORTED"),
              file=out)
        rows = [
            ("Compute Capability", "%d.%d" % dev.compute_capability),
            ("PCI Device ID", dev.PCI_DEVICE_ID),
            ("PCI Bus ID", dev.PCI_BUS_ID),
            ("UUID", dev.uuid),
            ("Memory", "%.1f GiB" % (dev.total_memory / 2**30)),
            ("Multiprocessors", dev.MULTIPROCESSOR_COUNT),
            ("Watchdog", "Enabled" if dev.KERNEL_EXEC_TIMEOUT else "Disabled"),
            ("FP32/FP64 Performance Ratio", dev.SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO),
        ]
        for label, value in rows:
            print("%40s: %s" % (label, value), file=out)
    print("Summary:\n\t%d/%d devices are supported" % (supported, len(devices)), file=out)
    return supported > 0
