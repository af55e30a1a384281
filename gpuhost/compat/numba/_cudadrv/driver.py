"""numba.cuda.cudadrv.driver's names (``cuda.driver``, ``cuda.cudadrv.driver``) over
gpuhost's objects: the classes are gpuhost's (``Context`` is `gpuhost.Context`, ``Stream``
`gpuhost.Stream`, the memory pointers and External Memory Management classes those of
`gpuhost.memory_manager`), the errors are gpuhost's (numba's names), and numba's
functions on device memory (``host_to_device``, ``device_pointer``,
``memory_size_from_info`` ...) take gpuhost's arrays, memory pointers and streams.
``driver`` is numba's driver object, answering ``get_device``, ``get_device_count``,
``is_available`` ... from gpuhost's devices.

numba's raw bindings (``driver.cuMemAlloc`` and the like, ``binding``) are not here:
gpuhost calls the driver in C.
"""
import contextlib
import ctypes
import functools

import numpy as np

from .... import _core, _host_arrays
from ....errors import CudaAPIError, CudaDriverError, CudaSupportError
from ....kernels import Linker, Module

__all__ = [
    "Context", "Device", "Stream", "Event", "Module", "Function", "Linker", "MemoryInfo",
    "CudaAPIError", "CudaDriverError", "CudaSupportError",
    "MemoryPointer", "AutoFreePointer", "MappedMemory", "PinnedMemory", "OwnedPointer",
    "MappedOwnedPointer", "IpcHandle", "BaseCUDAMemoryManager", "HostOnlyCUDAMemoryManager",
    "GetIpcHandleMixin", "NumbaCUDAMemoryManager", "set_memory_manager",
    "Driver", "driver", "device_pointer", "device_ctypes_pointer", "is_device_memory",
    "require_device_memory", "device_extents", "device_memory_size", "host_pointer",
    "host_memory_extents", "host_memory_size", "memory_size_from_info", "host_to_device",
    "device_to_host", "device_to_device", "device_memset", "event_elapsed_time",
    "profile_start", "profile_stop", "profiling", "get_version",
]

Context = _core.Context
Device = _core.Device
Stream = _core.Stream
Event = _core.Event
Function = _core.Kernel
MemoryInfo = _core.MemoryInfo
event_elapsed_time = _core.event_elapsed_time
profile_start = _core.profile_start
profile_stop = _core.profile_stop

# numba's memory pointers and memory-manager classes: gpuhost.memory_manager's, imported
# when first asked for (numba's name -> gpuhost's).
_MEMORY_MANAGER_NAMES = {
    "MemoryPointer": "MemoryPointer", "AutoFreePointer": "AutoFreePointer",
    "MappedMemory": "MappedMemory", "PinnedMemory": "PinnedMemory",
    "OwnedPointer": "OwnedPointer", "MappedOwnedPointer": "MappedOwnedPointer",
    "IpcHandle": "IpcHandle", "BaseCUDAMemoryManager": "BaseCUDAMemoryManager",
    "HostOnlyCUDAMemoryManager": "HostOnlyCUDAMemoryManager",
    "GetIpcHandleMixin": "GetIpcHandleMixin", "NumbaCUDAMemoryManager": "DefaultMemoryManager",
    "set_memory_manager": "set_memory_manager",
}


def __getattr__(name):
    target = _MEMORY_MANAGER_NAMES.get(name)
    if target is None:
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    from .. import memory_manager

    value = getattr(memory_manager, target)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_MEMORY_MANAGER_NAMES))


class Driver:
    """numba's driver object (``cuda.driver.driver``), over gpuhost's devices.

    Examples
    --------
    >>> from gpuhost import driver
    >>> driver.driver.is_available
    True
    >>> driver.driver.get_device_count() == len(gpuhost.gpus)
    True
    >>> driver.driver.get_device(1) is gpuhost.gpus[1]
    True
    """

    @property
    def is_available(self):
        """Whether a usable CUDA driver was found (`gpuhost.is_available`).

        Examples
        --------
        >>> gpuhost.driver.driver.is_available
        True
        """
        return _core.is_available()

    def get_device(self, devnum=0):
        """The `gpuhost.Device` of number `devnum`.

        Raises
        ------
        gpuhost.InvalidDeviceError
            No such device.

        Examples
        --------
        >>> gpuhost.driver.driver.get_device().id
        0
        """
        from ....devices import gpus

        return gpus[devnum]

    def get_device_count(self):
        """The number of devices.

        Examples
        --------
        >>> gpuhost.driver.driver.get_device_count() >= 1
        True
        """
        return _core.device_count()

    def list_devices(self):
        """Every device, a list of `gpuhost.Device`.

        Examples
        --------
        >>> [d.id for d in gpuhost.driver.driver.list_devices()][:2]
        [0, 1]
        """
        from ....devices import list_devices

        return list_devices()

    def get_version(self):
        """The driver's CUDA version, (major, minor).

        Examples
        --------
        >>> major, minor = gpuhost.driver.driver.get_version()
        >>> major >= 11
        True
        """
        return get_version()

    def reset(self):
        """Reset every device's primary context (numba's ``driver.reset()``:
        `gpuhost.Device.reset` for each, which leaves a context that other libraries of the
        process still hold to them, with a DeviceResetWarning).

        Examples
        --------
        >>> gpuhost.driver.driver.reset()
        >>> gpuhost.to_device(np.arange(2)).copy_to_host()
        array([0, 1])
        """
        from ....devices import gpus

        for dev in gpus:
            dev.reset()

    def get_active_context(self):
        """The context current in this thread, as numba's ``_ActiveContext``: a context
        manager (and a truth value) whose ``context_handle`` and ``devnum`` are the current
        context's handle and device number, or None and None when none is current. It
        makes no context current.

        Examples
        --------
        >>> with gpuhost.driver.driver.get_active_context() as ac:
        ...     ac.devnum == gpuhost.current_context().device.id
        True
        """
        return _ActiveContext()

    def pop_active_context(self):
        """Pop the context current in this thread off its stack; return its handle, or None
        when no context is current.

        Raises
        ------
        gpuhost.CudaDriverError
            The current context is not one this thread pushed (`gpuhost.Context.pop`).

        Examples
        --------
        >>> ctx = gpuhost.gpus[1].get_primary_context()
        >>> ctx.push()
        >>> gpuhost.driver.driver.pop_active_context() == ctx.handle
        True
        """
        if _core.current_device() is None:
            return None
        ctx = _core.current_context()
        ctx.pop()
        return ctx.handle

    def __getattr__(self, name):
        if name.startswith("cu"):
            raise AttributeError("gpuhost calls the driver in C: numba's raw binding %s is not "
                                 "offered (use gpuhost's objects and functions)" % name)
        raise AttributeError("'Driver' object has no attribute %r" % name)


driver = Driver()


class _ActiveContext:
    """What Driver.get_active_context() returns (numba's _ActiveContext)."""

    def __init__(self):
        dev = _core.current_device()
        self.devnum = None if dev is None else dev.id
        self.context_handle = None if dev is None else _core.current_context().handle

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return False

    def __bool__(self):
        return self.context_handle is not None


def get_version():
    """The driver's CUDA version as (major, minor), numba's ``get_version``.

    Examples
    --------
    >>> from gpuhost import driver
    >>> driver.get_version() == gpuhost.driver_version()
    True
    """
    return tuple(_core.driver_version())


@contextlib.contextmanager
def profiling():
    """Profile collection on for the ``with`` block (`gpuhost.profile_start` /
    `gpuhost.profile_stop`).

    Examples
    --------
    >>> with gpuhost.driver.profiling():
    ...     d = gpuhost.to_device(np.arange(3))
    """
    profile_start()
    try:
        yield
    finally:
        profile_stop()


def is_device_memory(obj):
    """Whether `obj` is device memory as numba recognizes it: a gpuhost device array, a
    mapped or managed array, or an object that says ``__cuda_memory__`` (gpuhost's and
    numba's memory pointers, numba's arrays).

    Examples
    --------
    >>> from gpuhost import driver
    >>> driver.is_device_memory(gpuhost.device_array(2)), driver.is_device_memory(np.zeros(2))
    (True, False)
    >>> driver.is_device_memory(gpuhost.mapped_array(2))
    True
    """
    if isinstance(obj, (_core.DeviceArray, _host_arrays.MappedArray)):
        return True
    try:
        return bool(obj.__cuda_memory__)
    except AttributeError:
        return False


def require_device_memory(obj):
    """Raise numba's error unless `obj` is device memory (`is_device_memory`).

    Raises
    ------
    Exception
        ``"Not a CUDA memory object."``, numba's exception and message.

    Examples
    --------
    >>> from gpuhost import driver
    >>> driver.require_device_memory(np.zeros(2))
    Traceback (most recent call last):
        ...
    Exception: Not a CUDA memory object.
    """
    if not is_device_memory(obj):
        raise Exception("Not a CUDA memory object.")


def device_ctypes_pointer(obj):
    """The device address of `obj` as a ctypes value (numba's ``device_ctypes_pointer``);
    ``c_void_p(0)`` for None. A mapped or managed array's is the device's address of its
    memory.

    Raises
    ------
    Exception
        `obj` is not device memory (`require_device_memory`).

    Examples
    --------
    >>> from gpuhost import driver
    >>> d = gpuhost.device_array(4)
    >>> driver.device_ctypes_pointer(d).value == d.ptr
    True
    >>> driver.device_ctypes_pointer(None).value is None
    True
    """
    if obj is None:
        return ctypes.c_void_p(0)
    require_device_memory(obj)
    if isinstance(obj, _host_arrays.MappedArray):
        return ctypes.c_void_p(obj.__cuda_array_interface__["data"][0])
    return obj.device_ctypes_pointer


def device_pointer(obj):
    """The device address of `obj` as an int (None for a null pointer), numba's
    ``device_pointer``.

    Examples
    --------
    >>> from gpuhost import driver
    >>> d = gpuhost.device_array(4)
    >>> driver.device_pointer(d) == d.ptr, driver.device_pointer(d[1:]) == d.ptr + 8
    (True, True)
    """
    return device_ctypes_pointer(obj).value


def device_extents(devmem):
    """(start, end) of the whole allocation that holds `devmem`, half open (numba's
    ``device_extents``: the allocation's, not the view's).

    Examples
    --------
    >>> from gpuhost import driver
    >>> d = gpuhost.device_array(100, np.uint8)
    >>> start, end = driver.device_extents(d[10:20])
    >>> start <= d.ptr and end >= d.ptr + 100
    True
    """
    base, size = _core._mem_address_range(device_pointer(devmem) or 0)
    return base, base + size


def device_memory_size(devmem):
    """The size in bytes of the allocation that holds `devmem` (numba's
    ``device_memory_size``).

    Examples
    --------
    >>> from gpuhost import driver
    >>> driver.device_memory_size(gpuhost.device_array(256, np.uint8)) >= 256
    True
    """
    start, end = device_extents(devmem)
    return end - start


def _bytes_of(obj):
    """A numpy view of host object `obj`'s buffer, without a copy: an array as it is, any
    other buffer (bytes, a ctypes object, a record scalar) as its bytes; datetimes as int64
    (numba's workaround: the buffer protocol has no datetimes)."""
    if getattr(getattr(obj, "dtype", None), "char", "") in ("M", "m"):
        obj = obj.view(np.int64)
    if isinstance(obj, np.ndarray):
        return obj
    view = memoryview(obj)
    return np.frombuffer(view.cast("B"), np.uint8) if view.c_contiguous else np.asarray(view)


def host_pointer(obj, readonly=False):
    """The host address of `obj`'s buffer (an int is taken as an address), numba's
    ``host_pointer``.

    Parameters
    ----------
    obj : int or buffer
        A numpy array, bytes, a bytearray, a ctypes object, any object with the buffer
        protocol.
    readonly : bool, optional
        Whether a read-only buffer will do (default: it must be writable; a record or a
        datetime array always will).

    Raises
    ------
    ValueError
        A read-only buffer where a writable one is needed.

    Examples
    --------
    >>> import ctypes
    >>> from gpuhost import driver
    >>> a = np.zeros(4)
    >>> driver.host_pointer(a) == a.ctypes.data, driver.host_pointer(1234)
    (True, 1234)
    >>> x = ctypes.c_double(2.5)
    >>> driver.host_pointer(x) == ctypes.addressof(x)
    True
    """
    if isinstance(obj, int):
        return obj
    forced = isinstance(obj, np.void) or getattr(getattr(obj, "dtype", None), "char", "") in "Mm"
    arr = _bytes_of(obj)
    if not readonly and not forced and not arr.flags.writeable:
        raise ValueError("buffer source array is read-only")
    return arr.__array_interface__["data"][0]


def host_memory_extents(obj):
    """(start, end) of `obj`'s host buffer, half open (numba's ``host_memory_extents``).

    Examples
    --------
    >>> from gpuhost import driver
    >>> a = np.zeros((3, 4), np.float32)
    >>> start, end = driver.host_memory_extents(a)
    >>> start == a.ctypes.data, end - start
    (True, 48)
    >>> import ctypes
    >>> driver.host_memory_size(ctypes.c_double(1.5))
    8
    """
    arr = _bytes_of(obj)
    start = arr.__array_interface__["data"][0]
    if arr.size == 0:
        return start, start
    low = sum((n - 1) * s for n, s in zip(arr.shape, arr.strides) if s < 0)
    high = sum((n - 1) * s for n, s in zip(arr.shape, arr.strides) if s > 0)
    return start + low, start + high + arr.itemsize


def host_memory_size(obj):
    """The bytes `obj`'s host buffer spans (numba's ``host_memory_size``).

    Examples
    --------
    >>> gpuhost.driver.host_memory_size(np.zeros(10, np.int16))
    20
    """
    start, end = host_memory_extents(obj)
    return end - start


@functools.lru_cache(maxsize=None)
def memory_size_from_info(shape, strides, itemsize):
    """The bytes an array of this layout spans, from its lowest to its highest byte
    (numba's ``memory_size_from_info``).

    Examples
    --------
    >>> from gpuhost import driver
    >>> driver.memory_size_from_info((3, 4), (32, 8), 8), driver.memory_size_from_info((0,), (8,), 8)
    (96, 0)
    >>> driver.memory_size_from_info((4,), (-8,), 8)
    32
    """
    if len(shape) != len(strides):
        raise ValueError("# dim mismatch: shape %r, strides %r" % (shape, strides))
    if 0 in shape:
        return 0
    low = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    high = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
    return high - low + itemsize


def _stream(stream):
    """The stream a copy goes to: None for numba's 0 (synchronous, the default stream)."""
    return None if (stream is None or (isinstance(stream, int) and stream == 0)) else stream


def host_to_device(dst, src, size, stream=0):
    """Copy `size` bytes from host buffer `src` to device memory `dst`: synchronous for
    stream 0, queued on `stream` otherwise (keep `src` alive and unchanged until it ran).

    Examples
    --------
    >>> from gpuhost import driver
    >>> d = gpuhost.device_array(3, np.int32)
    >>> driver.host_to_device(d, np.array([4, 5, 6], np.int32), 12)
    >>> d.copy_to_host()
    array([4, 5, 6], dtype=int32)
    """
    _core.memcpy(device_pointer(dst) or 0, host_pointer(src, readonly=True), size,
                 _stream(stream))


def device_to_host(dst, src, size, stream=0):
    """Copy `size` bytes from device memory `src` to host buffer `dst` (writable):
    synchronous for stream 0, queued on `stream` otherwise.

    Examples
    --------
    >>> from gpuhost import driver
    >>> out = np.zeros(3, np.int32)
    >>> driver.device_to_host(out, gpuhost.to_device(np.array([7, 8, 9], np.int32)), 12)
    >>> out
    array([7, 8, 9], dtype=int32)
    """
    _core.memcpy(host_pointer(dst), device_pointer(src) or 0, size, _stream(stream))


def device_to_device(dst, src, size, stream=0):
    """Copy `size` bytes between device memories: synchronous for stream 0, queued on
    `stream` otherwise.

    Examples
    --------
    >>> from gpuhost import driver
    >>> src = gpuhost.to_device(np.arange(4, dtype=np.int16))
    >>> dst = gpuhost.device_array(4, np.int16)
    >>> driver.device_to_device(dst, src, 8)
    >>> dst.copy_to_host()
    array([0, 1, 2, 3], dtype=int16)
    """
    _core.memcpy(device_pointer(dst) or 0, device_pointer(src) or 0, size, _stream(stream))


def device_memset(dst, val, size, stream=0):
    """Set `size` bytes of device memory `dst` to byte `val` (its low 8 bits): synchronous
    for stream 0, queued on `stream` otherwise.

    Examples
    --------
    >>> from gpuhost import driver
    >>> d = gpuhost.device_array(4, np.uint8)
    >>> driver.device_memset(d, 0x1ff, 4)
    >>> d.copy_to_host()
    array([255, 255, 255, 255], dtype=uint8)
    """
    if size:
        ptr = device_pointer(dst) or 0
        target = _core.make_array(dst, ptr, (size,), (1,), np.uint8)
        _core.memset(target, ptr, 1, val & 0xFF, size, 1, size, _stream(stream) or 0)
        if _stream(stream) is None:
            _core.legacy_default_stream().synchronize()

