"""numba's External Memory Management (EMM) plugin interface, for gpuhost.

An EMM plugin (RAPIDS' RMM, or one's own) is a class deriving from BaseCUDAMemoryManager
(or HostOnlyCUDAMemoryManager, which does the host side) whose ``memalloc(size)`` returns a
MemoryPointer with a finalizer.  Installed with ``set_memory_manager(cls)``, or by naming
its module in GPUHOST_CUDA_MEMORY_MANAGER (else numba's NUMBA_CUDA_MEMORY_MANAGER): the
module's ``_gpuhost_memory_manager`` (else ``_numba_memory_manager``) is the class.  From
then on device arrays (device_array, to_device, ...) take their memory from the plugin: one
instance per context, made (and ``initialize()``-d) at the context's first allocation, with
the context current whenever it is called.

Plugins written for numba work unchanged: they may derive from numba.cuda's classes and
return numba's MemoryPointer (its ``device_pointer_value`` is read), or from the ones here,
which have numba's names and behaviour.  ``defer_cleanup()`` enters the plugin's
``defer_cleanup()`` too; ``gpuhost.close()`` calls each instance's ``reset()``.

Differences from numba: ``set_memory_manager(None)`` goes back to gpuhost's own pools, and
setting a manager applies to the next allocation of every context (gpuhost's contexts are
the devices' primary contexts, made once).  MappedMemory takes the host address as the
device address (unified addressing, as on every 64-bit Linux system CUDA 12 supports).
"""
import contextlib
import ctypes
import importlib
import os
import threading
import weakref
from abc import ABCMeta, abstractmethod

import numpy as np

from . import _arrays, _core
from .devices import device_of_uuid

__all__ = [
    "AutoFreePointer", "BaseCUDAMemoryManager", "GetIpcHandleMixin",
    "HostOnlyCUDAMemoryManager", "IpcHandle", "MappedMemory", "MemoryInfo", "MemoryPointer",
    "OwnedPointer", "PinnedMemory", "get_memory_manager", "set_memory_manager",
    "DefaultMemoryManager", "PendingDeallocs",
]

_SUPPORTED_EMM_INTERFACE_VERSION = 1

# The class Context.get_memory_info() returns: numba's named tuple (free, total), built
# positionally or by keyword by a plugin's get_memory_info().
MemoryInfo = _core.MemoryInfo


def _address(pointer):
    """The int value of a pointer: an int, a ctypes pointer or integer (c_void_p,
    c_uint64), or an object with __int__ (cuda-python's CUdeviceptr); None for null."""
    if pointer is None:
        return None
    if isinstance(pointer, int):
        return pointer or None
    if isinstance(pointer, ctypes._SimpleCData):
        return pointer.value or None
    return int(pointer) or None


# ---- memory pointers (numba.cuda.cudadrv.driver's classes) ----

class DevicePointer(ctypes.c_uint64):
    """A device address as a MemoryPointer holds it (its device_pointer and handle): a
    ctypes.c_uint64, so a c_size_t as numba's device_ctypes_pointer is, that int() and
    operator.index() read as they read numba's (cuda-python's CUdeviceptr)."""

    def __int__(self):
        return self.value

    __index__ = __int__

    def __repr__(self):
        return "DevicePointer(0x%x)" % self.value


def _device_pointer(pointer):
    """`pointer` as a MemoryPointer keeps it: a ctypes integer or void pointer becomes a
    DevicePointer (numba makes a c_void_p a CUdeviceptr); an int, or an object with
    __int__ (cuda-python's CUdeviceptr), stays as it is."""
    if isinstance(pointer, ctypes._SimpleCData) and not isinstance(pointer, DevicePointer):
        value = pointer.value
        if value is None or isinstance(value, int):
            return DevicePointer(value or 0)
    return pointer


class MemoryPointer:
    """Device memory that a plugin allocated (numba's MemoryPointer).

    What a plugin's ``memalloc`` returns. The memory lives as long as this object:
    `finalizer` runs when it dies (or at `free`) and gives the memory back. The
    reference count (``refct``) is kept for numba's sake. ``device_pointer`` holds the
    address as given; ``device_pointer_value`` reads it as an int.

    Parameters
    ----------
    context : gpuhost.Context
        The context the memory belongs to (the plugin's ``self.context``).
    pointer : int or ctypes.c_void_p or ctypes.c_uint64
        The device address; an object with ``__int__`` (cuda-python's CUdeviceptr)
        works too.
    size : int
        The size in bytes.
    owner : object, optional
        What owns the memory, if not this pointer (a view's base).
    finalizer : callable, optional
        Called with no arguments when the memory is to be freed.

    Examples
    --------
    >>> from gpuhost import memory, memory_manager as mm
    >>> ctx = gpuhost.current_context()
    >>> mem = memory.Memory(1024)
    >>> p = mm.MemoryPointer(ctx, mem.ptr, 1024, finalizer=lambda: print("freed"))
    >>> p.device_pointer_value == mem.ptr, p.size
    (True, 1024)
    >>> p.memset(0)
    >>> p.view(256).size
    768
    >>> p.free()
    freed
    """

    __cuda_memory__ = True

    def __init__(self, context, pointer, size, owner=None, finalizer=None):
        self.context = context
        self.device_pointer = _device_pointer(pointer)
        self.size = size
        self._cuda_memsize_ = size
        self.is_managed = finalizer is not None
        self.refct = 1
        self.handle = self.device_pointer
        self._owner = owner
        if finalizer is not None:
            self._finalizer = weakref.finalize(self, finalizer)

    @property
    def owner(self):
        """The object that owns the memory, `owner` if one was given, else this pointer.

        Examples
        --------
        >>> from gpuhost import memory, memory_manager as mm
        >>> ctx = gpuhost.current_context()
        >>> mem = memory.Memory(1024)
        >>> p = mm.MemoryPointer(ctx, mem.ptr, 1024)
        >>> p.owner is p, mm.MemoryPointer(ctx, mem.ptr, 1024, owner=mem).owner is mem
        (True, True)
        """
        return self if self._owner is None else self._owner

    def own(self):
        """A new counted reference to the memory.

        Returns
        -------
        OwnedPointer
            It adds one to ``refct`` while it lives; the memory is freed when the count
            drops to 0.

        Examples
        --------
        >>> from gpuhost import memory, memory_manager as mm
        >>> mem = memory.Memory(1024)
        >>> p = mm.MemoryPointer(gpuhost.current_context(), mem.ptr, 1024)
        >>> ref = p.own()
        >>> type(ref).__name__, ref.size, p.refct
        ('OwnedPointer', 1024, 2)
        >>> del ref
        >>> p.refct
        1
        """
        return OwnedPointer(weakref.proxy(self))

    def free(self):
        """Run the finalizer now: the memory goes back to the plugin.

        Raises
        ------
        RuntimeError
            The finalizer already ran.

        Examples
        --------
        >>> from gpuhost import memory, memory_manager as mm
        >>> mem = memory.Memory(1024)
        >>> p = mm.MemoryPointer(gpuhost.current_context(), mem.ptr, 1024,
        ...                      finalizer=lambda: print("freed"))
        >>> p.free()
        freed
        >>> p.free()
        Traceback (most recent call last):
            ...
        RuntimeError: Freeing dead memory
        """
        if self.is_managed:
            if not self._finalizer.alive:
                raise RuntimeError("Freeing dead memory")
            self._finalizer()

    def _bytes(self, count):
        return _core.make_array(self.owner, self.device_pointer_value or 0, (count,), (1,),
                                np.uint8)

    def memset(self, byte, count=None, stream=0):
        """Set bytes of the memory to `byte`.

        Parameters
        ----------
        byte : int
            The value; its low 8 bits are used.
        count : int, optional
            How many bytes from the start; None: all of them.
        stream : gpuhost.Stream or 0, optional
            The stream to set them on (asynchronous); 0: the default stream.

        Examples
        --------
        >>> d = gpuhost.device_array(4, np.uint8)
        >>> d.gpu_data.memset(7)
        >>> d.gpu_data.memset(1, count=2)
        >>> d.copy_to_host()
        array([1, 1, 7, 7], dtype=uint8)
        """
        count = self.size if count is None else count
        if count:
            _core.memset(self._bytes(count), self.device_pointer_value, 1, byte & 0xFF, count,
                         1, count, stream or 0)

    def view(self, start, stop=None):
        """A MemoryPointer to bytes [`start`, `stop`) of this one, keeping it alive.

        Parameters
        ----------
        start : int
            The first byte, from the start of this memory.
        stop : int, optional
            One past the last byte; by default the end.

        Returns
        -------
        MemoryPointer or OwnedPointer

        Raises
        ------
        RuntimeError
            A negative size, or a nonempty view of a null pointer.

        Examples
        --------
        >>> from gpuhost import memory, memory_manager as mm
        >>> mem = memory.Memory(1024)
        >>> p = mm.MemoryPointer(gpuhost.current_context(), mem.ptr, 1024)
        >>> v = p.view(256, 512)
        >>> v.size, v.device_pointer_value - p.device_pointer_value, v.owner is p
        (256, 256, True)
        """
        size = self.size - start if stop is None else stop - start
        if not self.device_pointer_value:
            if size != 0:
                raise RuntimeError("non-empty slice into empty slice")
            view = self
        else:
            if size < 0:
                raise RuntimeError("size cannot be negative")
            view = MemoryPointer(self.context, DevicePointer(self.device_pointer_value + start),
                                 size, owner=self.owner)
        if isinstance(self.owner, (MemoryPointer, OwnedPointer)):
            return OwnedPointer(weakref.proxy(self.owner), view)
        return view

    @property
    def device_ctypes_pointer(self):
        """The device address as a ctypes value, as numba passes it to kernels.

        The DevicePointer (a ctypes.c_uint64) held, or one made from the int the plugin
        gave.

        Examples
        --------
        >>> from gpuhost import memory, memory_manager as mm
        >>> mem = memory.Memory(1024)
        >>> p = mm.MemoryPointer(gpuhost.current_context(), mem.ptr, 1024)
        >>> p.device_ctypes_pointer.value == mem.ptr
        True
        """
        if isinstance(self.device_pointer, ctypes._SimpleCData):
            return self.device_pointer
        return DevicePointer(self.device_pointer_value or 0)

    @property
    def device_pointer_value(self):
        """The device address as an int (None for a null pointer).

        Examples
        --------
        >>> from gpuhost import memory, memory_manager as mm
        >>> ctx = gpuhost.current_context()
        >>> mem = memory.Memory(1024)
        >>> mm.MemoryPointer(ctx, mem.ptr, 1024).device_pointer_value == mem.ptr
        True
        >>> mm.MemoryPointer(ctx, 0, 0).device_pointer_value is None
        True
        """
        return _address(self.device_pointer)


class ArrayMemory(MemoryPointer):
    """A device array's gpu_data, as numba gives it: a MemoryPointer over the bytes the
    array spans (from its lowest to its highest address), owned by what keeps the array's
    memory alive (`owner`); the owner's attributes (an Allocation's pool, kind, ptr ...)
    read through it."""

    def __init__(self, array):
        low = array.ptr
        for n, stride in zip(array.shape, array.strides):
            if n and stride < 0:
                low += (n - 1) * stride
        size = array.alloc_size
        super().__init__(array.context, DevicePointer(low if size else 0), size,
                         owner=array.owner)

    def __getattr__(self, name):
        owner = self.__dict__.get("_owner")
        if owner is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(owner, name)

    def _span(self):
        return (self.context, int(self.device_pointer.value or 0), self.size,
                id(self.__dict__.get("_owner")))

    def __eq__(self, other):
        """Two arrays' gpu_data are equal when they span the same bytes of the same memory
        (an array and its views of another dtype, as numba's share one MemoryPointer)."""
        if not isinstance(other, ArrayMemory):
            return NotImplemented
        return self._span() == other._span()

    def __hash__(self):
        return hash(self._span())


_core._set_helpers(array_gpu_data=ArrayMemory)  # DeviceArray.gpu_data makes these


class AutoFreePointer(MemoryPointer):
    """A MemoryPointer freed when its reference count drops to zero (numba's).

    Its count starts at 0: the first ``own()`` takes it to 1, and the memory is freed
    when the last `OwnedPointer` dies. Takes `MemoryPointer`'s arguments.

    Examples
    --------
    >>> from gpuhost import memory, memory_manager as mm
    >>> mem = memory.Memory(64)
    >>> p = mm.AutoFreePointer(gpuhost.current_context(), mem.ptr, 64,
    ...                        finalizer=lambda: print("freed"))
    >>> ref = p.own()
    >>> del ref
    freed
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.refct -= 1  # the count starts at 0: the first own() takes it to 1


class MappedMemory(AutoFreePointer):
    """Pinned host memory mapped into the device (numba's MappedMemory).

    What ``memhostalloc(size, mapped=True)`` and ``mempin(..., mapped=True)`` return
    (through an `OwnedPointer`). `pointer` is the host address, also the device address
    by unified addressing; ``host_pointer`` and ``device_pointer_value`` hold it.

    Parameters
    ----------
    context : gpuhost.Context
        The context the memory belongs to.
    pointer : int or ctypes.c_void_p
        The host address.
    size : int
        The size in bytes.
    owner : object, optional
        The object whose memory was pinned (`mempin`'s), kept as ``owned``.
    finalizer : callable, optional
        Called with no arguments when the memory is to be freed.

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> m = ctx.memory_manager.memhostalloc(4096, mapped=True)
    >>> m.size, m.device_pointer_value == m.host_pointer.value
    (4096, True)
    """

    __cuda_memory__ = True

    def __init__(self, context, pointer, size, owner=None, finalizer=None):
        self.owned = owner
        self.host_pointer = pointer
        super().__init__(context, DevicePointer(_address(pointer) or 0), size,
                         finalizer=finalizer)
        self.handle = self.host_pointer
        self._buflen_ = self.size
        self._bufptr_ = _address(self.host_pointer)

    def own(self):
        """A new counted reference to the memory; it is freed when the last one dies.

        Returns
        -------
        OwnedPointer
            A MappedOwnedPointer, whose attributes are the MappedMemory's.

        Examples
        --------
        >>> from gpuhost import memory_manager as mm
        >>> h = np.zeros(4096, np.uint8)
        >>> m = mm.MappedMemory(gpuhost.current_context(), h.ctypes.data, h.nbytes,
        ...                     owner=h, finalizer=lambda: print("released"))
        >>> ref = m.own()
        >>> ref.size, ref.owned is h
        (4096, True)
        >>> del ref
        released
        """
        return MappedOwnedPointer(weakref.proxy(self))


class PinnedMemory:
    """Page-locked host memory, not mapped into the device (numba's PinnedMemory).

    What ``memhostalloc(size)`` and ``mempin(...)`` return; `finalizer` runs when it
    dies.

    Parameters
    ----------
    context : gpuhost.Context
        The context the memory belongs to.
    pointer : int or ctypes.c_void_p
        The host address, kept as ``host_pointer``.
    size : int
        The size in bytes.
    owner : object, optional
        The object whose memory was pinned (`mempin`'s), kept as ``owned``.
    finalizer : callable, optional
        Called with no arguments when the memory is to be freed (unpinned).

    Examples
    --------
    >>> h = np.zeros(1 << 16, np.uint8)
    >>> ctx = gpuhost.current_context()
    >>> pin = ctx.memory_manager.mempin(h, h.ctypes.data, h.nbytes)
    >>> type(pin).__name__, pin.size, pin.owned is h
    ('PinnedMemory', 65536, True)
    """

    def __init__(self, context, pointer, size, owner=None, finalizer=None):
        self.context = context
        self.owned = owner
        self.size = size
        self.host_pointer = pointer
        self.is_managed = finalizer is not None
        self.handle = self.host_pointer
        self._buflen_ = self.size
        self._bufptr_ = _address(self.host_pointer)
        if finalizer is not None:
            weakref.finalize(self, finalizer)

    def own(self):
        """The memory itself, since pinned memory is not reference counted.

        It lives as long as this object.

        Returns
        -------
        PinnedMemory
            This object.

        Examples
        --------
        >>> mgr = gpuhost.current_context().memory_manager
        >>> pin = mgr.memhostalloc(4096)
        >>> pin.own() is pin
        True
        """
        return self


class OwnedPointer:
    """A counted reference to a MemoryPointer (numba's OwnedPointer).

    Made by ``MemoryPointer.own()``: it adds one to the memory's reference count, takes
    one off when it dies, and frees the memory when the count reaches 0. Its attributes
    are those of `view` (``size``, ``device_pointer_value``, ...).

    Parameters
    ----------
    memptr : MemoryPointer
        The memory (a weak proxy of it, as numba passes).
    view : MemoryPointer, optional
        What the reference shows: a view into `memptr`; by default `memptr` itself.

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> p = ctx.memory_manager.memalloc(1024)   # gpuhost's manager hands these out
    >>> type(p).__name__, p.size
    ('OwnedPointer', 1024)
    """

    def __init__(self, memptr, view=None):
        self._mem = memptr
        self._view = self._mem if view is None else view
        mem = self._mem

        def deref():
            try:
                mem.refct -= 1
                if mem.refct == 0:
                    mem.free()
            except ReferenceError:
                pass

        self._mem.refct += 1
        weakref.finalize(self, deref)

    def __getattr__(self, name):
        return getattr(self._view, name)


class MappedOwnedPointer(OwnedPointer):
    """A counted reference to mapped host memory (numba's MappedOwnedPointer): what
    ``Context.memhostalloc(size, mapped=True)`` returns, its attributes the `MappedMemory`'s
    (``device_pointer_value``, ``host_pointer``, ``size``).

    Examples
    --------
    >>> p = gpuhost.current_context().memhostalloc(256, mapped=True)
    >>> type(p).__name__, p.size, p.device_pointer_value != 0
    ('MappedOwnedPointer', 256, True)
    """


# ---- IPC ----

class IpcMemHandle(bytes):
    """The 64 bytes of a CUipcMemHandle; `reserved` names them as cuda-python's binding
    (which numba hands out) does."""

    @property
    def reserved(self):
        return bytes(self)


class _StagedOpening:
    """What an IpcHandle opened by staging holds: nothing to close (the copy is owned by
    the MemoryPointer returned)."""

    def close(self):
        pass


class IpcHandle:
    """A CUDA IPC handle of device memory, to open in another process (numba's).

    What a plugin's ``get_ipc_handle`` returns (`GetIpcHandleMixin`'s, for one). Pickle
    it to another process and `open` it there; the exporting process keeps the memory
    alive meanwhile. A handle cannot be opened in the process that made it.

    Parameters
    ----------
    base : MemoryPointer or None
        The exported memory in the exporting process; None once unpickled.
    handle : bytes
        The 64 bytes of the driver's CUipcMemHandle, kept as an `IpcMemHandle`.
    size : int
        The memory's size in bytes.
    source_info : bytes, optional
        The exporting device's UUID: `open` opens directly on that device and copies
        (`open_staged`) on another one.
    offset : int, optional
        Bytes from the start of the allocation the handle opens to the memory.

    Examples
    --------
    >>> import pickle
    >>> ctx = gpuhost.current_context()
    >>> mgr = ctx.memory_manager
    >>> h = mgr.get_ipc_handle(mgr.memalloc(4096))
    >>> h.size, len(h.handle)
    (4096, 64)
    >>> data = pickle.dumps(h)                 # send it to another process
    >>> mem = pickle.loads(data).open()        # doctest: +SKIP
    """

    def __init__(self, base, handle, size, source_info=None, offset=0):
        self.base = base
        self.handle = IpcMemHandle(bytes(handle))
        self.size = size
        self.source_info = source_info
        self.offset = offset
        self._opened = None

    def _check_openable(self):
        if self.base is not None:
            raise ValueError("opening IpcHandle from original process")
        if self._opened is not None:
            raise ValueError("IpcHandle is already opened")

    def open(self, context=None):
        """Open the memory in `context`: directly on the exporting device, else as a copy.

        Parameters
        ----------
        context : gpuhost.Context, optional
            Where to open it; by default the current context. On the exporting device
            (by UUID) it is `open_direct`, on another one `open_staged`.

        Returns
        -------
        MemoryPointer

        Raises
        ------
        ValueError
            In the exporting process, or the handle is open already.

        Examples
        --------
        >>> import pickle
        >>> mgr = gpuhost.current_context().memory_manager
        >>> data = pickle.dumps(mgr.get_ipc_handle(mgr.memalloc(4096)))
        >>> h = pickle.loads(data)               # in the process that receives it
        >>> mem = h.open()
        >>> mem.size
        4096
        >>> h.close()
        """
        self._check_openable()
        ctx = context if context is not None else _core.current_context()
        if self.source_info is not None and ctx.device.uuid != self.source_info:
            return self.open_staged(ctx)
        return self.open_direct(ctx)

    def open_direct(self, context):
        """The memory opened in `context` itself (cuIpcOpenMemHandle), without a copy.

        Writes from either process are seen by both. `context` must be on the exporting
        device, or reach it through peer access.

        Parameters
        ----------
        context : gpuhost.Context
            Where to open it.

        Returns
        -------
        MemoryPointer
            Over the exporting process's memory, until `close`.

        Raises
        ------
        ValueError
            In the exporting process, or the handle is open already.

        Examples
        --------
        >>> import pickle
        >>> ctx = gpuhost.current_context()
        >>> d = gpuhost.to_device(np.arange(4, dtype=np.uint8))
        >>> data = pickle.dumps(ctx.memory_manager.get_ipc_handle(d.gpu_data))
        >>> h = pickle.loads(data)               # in the process that receives it
        >>> mem = h.open_direct(ctx)
        >>> mem.memset(9)
        >>> d.copy_to_host()                     # the exporter's array sees the write
        array([9, 9, 9, 9], dtype=uint8)
        >>> h.close()
        """
        self._check_openable()
        with context.device:
            alloc = _core.ipc_open(bytes(self.handle), self.offset + self.size)
        self._opened = alloc
        return MemoryPointer(alloc.context, DevicePointer(alloc.ptr + self.offset), self.size,
                             owner=alloc)

    def open_staged(self, context):
        """A copy of the memory, in new memory of `context`.

        The handle is opened on the exporting device (found by its UUID), copied, and
        closed again; writes to the copy are not seen by the exporter. `open` uses it
        when `context` is on another device than the exporting one.

        Parameters
        ----------
        context : gpuhost.Context
            Where the copy goes; any device.

        Returns
        -------
        MemoryPointer
            The copy, from `context`'s memory manager.

        Raises
        ------
        ValueError
            In the exporting process, or the handle is open already.
        InvalidDeviceError
            The exporting device is not visible in this process.

        Examples
        --------
        >>> import pickle
        >>> mgr = gpuhost.current_context().memory_manager
        >>> data = pickle.dumps(mgr.get_ipc_handle(mgr.memalloc(4096)))
        >>> h = pickle.loads(data)               # in the process that receives it
        >>> copy = h.open_staged(gpuhost.gpus[1].get_primary_context())
        >>> copy.size, copy.context.device.id
        (4096, 1)
        >>> h.close()
        """
        self._check_openable()
        source = device_of_uuid(self.source_info, "IPC memory")
        with source:
            alloc = _core.ipc_open(bytes(self.handle), self.offset + self.size)
        try:
            src = _core.make_array(alloc, alloc.ptr + self.offset, (self.size,), (1,), np.uint8)
            with context.device:
                mem = context.memalloc(self.size)
                dst = _core.make_array(mem, mem.device_pointer_value or 0, (self.size,), (1,),
                                       np.uint8)
                if self.size:
                    dst.copy_to_device(src)
                    _core.current_context().synchronize()
        finally:
            alloc.close()
        self._opened = _StagedOpening()
        return mem

    def open_array(self, context, shape, dtype, strides=None):
        """Open the memory (as `open` does) as a DeviceArray.

        Parameters
        ----------
        context : gpuhost.Context or None
            Where to open it; None is the current context.
        shape : int or tuple of int
            The array's shape.
        dtype : numpy dtype
            Its element type.
        strides : tuple of int, optional
            Strides in bytes; by default C order.

        Returns
        -------
        DeviceArray

        Examples
        --------
        >>> import pickle
        >>> d = gpuhost.to_device(np.arange(6, dtype=np.int32))
        >>> mgr = gpuhost.current_context().memory_manager
        >>> data = pickle.dumps(mgr.get_ipc_handle(d.gpu_data))
        >>> h = pickle.loads(data)               # in the process that receives it
        >>> h.open_array(None, (2, 3), np.int32).copy_to_host()
        array([[0, 1, 2],
               [3, 4, 5]], dtype=int32)
        >>> h.close()
        """
        mem = self.open(context)
        dtype = np.dtype(dtype)
        shape, dtype, strides, _ = _arrays._layout(shape, dtype, strides, "C")
        return _core.make_array(mem, mem.device_pointer_value, shape, strides, dtype)

    def close(self):
        """Close the memory `open` opened (cuIpcCloseMemHandle).

        What was opened must not be used afterwards.

        Raises
        ------
        ValueError
            The handle is not open.

        Examples
        --------
        >>> import pickle
        >>> mgr = gpuhost.current_context().memory_manager
        >>> h = pickle.loads(pickle.dumps(mgr.get_ipc_handle(mgr.memalloc(64))))
        >>> mem = h.open()
        >>> h.close()
        >>> h.close()
        Traceback (most recent call last):
            ...
        ValueError: IpcHandle not opened
        """
        if self._opened is None:
            raise ValueError("IpcHandle not opened")
        self._opened.close()
        self._opened = None

    def __reduce__(self):
        return (IpcHandle, (None, bytes(self.handle), self.size, self.source_info, self.offset))


# ---- the plugin interface ----

class BaseCUDAMemoryManager(metaclass=ABCMeta):
    """Abstract base class of External Memory Management (EMM) plugins (numba's).

    A plugin implements every abstract method below; `HostOnlyCUDAMemoryManager` already
    does the host side. `set_memory_manager` installs the class; gpuhost then makes one
    instance per context (``self.context``), calls its `initialize` and takes device
    arrays' memory from its `memalloc`, with that context current.

    Parameters
    ----------
    context : gpuhost.Context
        Keyword only: the context the instance serves (None for the instance
        `set_memory_manager` makes to read `interface_version`).

    Raises
    ------
    RuntimeError
        No `context` keyword.

    Examples
    --------
    >>> from gpuhost import memory_manager as mm
    >>> mgr = gpuhost.current_context().memory_manager   # gpuhost's own is one
    >>> isinstance(mgr, mm.BaseCUDAMemoryManager), mgr.context is gpuhost.current_context()
    (True, True)
    """

    def __init__(self, *args, **kwargs):
        if "context" not in kwargs:
            raise RuntimeError("Memory manager requires a context")
        self.context = kwargs.pop("context")

    @abstractmethod
    def memalloc(self, size):
        """Allocate `size` bytes of device memory in the current context.

        Device arrays take their memory from here while the plugin is installed.

        Parameters
        ----------
        size : int
            Bytes to allocate.

        Returns
        -------
        MemoryPointer
            Its finalizer gives the memory back (numba's MemoryPointer works too; an
            `OwnedPointer` of one as well).

        Examples
        --------
        >>> mgr = gpuhost.current_context().memory_manager
        >>> p = mgr.memalloc(1024)
        >>> p.size, p.device_pointer_value != 0
        (1024, True)
        """

    @abstractmethod
    def memhostalloc(self, size, mapped, portable, wc):
        """Allocate page-locked (pinned) host memory.

        `HostOnlyCUDAMemoryManager` implements it with the driver.

        Parameters
        ----------
        size : int
            Bytes to allocate.
        mapped : bool
            Map the memory into the device's address space.
        portable : bool
            Pinned for every context, not only this one.
        wc : bool
            Write-combined.

        Returns
        -------
        MappedMemory or PinnedMemory
            A `MappedMemory` (or an `OwnedPointer` of one) when `mapped`, else a
            `PinnedMemory`.

        Examples
        --------
        >>> mgr = gpuhost.current_context().memory_manager
        >>> mgr.memhostalloc(4096, mapped=False, portable=False, wc=False).size
        4096
        """

    @abstractmethod
    def mempin(self, owner, pointer, size, mapped):
        """Page-lock `size` bytes of existing host memory at address `pointer`.

        `HostOnlyCUDAMemoryManager` implements it with the driver.

        Parameters
        ----------
        owner : object
            What owns the memory (a numpy array, say), kept alive with the result.
        pointer : int or ctypes.c_void_p
            The host address of the first byte.
        size : int
            Bytes to page-lock.
        mapped : bool
            Also map them into the device's address space.

        Returns
        -------
        MappedMemory or PinnedMemory
            A `MappedMemory` (or an `OwnedPointer` of one) when `mapped`, else a
            `PinnedMemory`.

        Examples
        --------
        >>> h = np.zeros(4096, np.uint8)
        >>> mgr = gpuhost.current_context().memory_manager
        >>> pin = mgr.mempin(h, h.ctypes.data, h.nbytes, mapped=False)
        >>> pin.size, pin.owned is h
        (4096, True)
        """

    @abstractmethod
    def initialize(self):
        """Prepare for allocations in the current context.

        gpuhost calls it once the instance is made, with its context current, before the
        first `memalloc`; it may be called more than once, so a second call must not
        undo the first one's work.

        Examples
        --------
        >>> mgr = gpuhost.current_context().memory_manager
        >>> mgr.initialize()
        >>> mgr.initialize()                     # again: nothing changes
        """

    @abstractmethod
    def get_ipc_handle(self, memory):
        """An IpcHandle to share `memory` with another process.

        `GetIpcHandleMixin` implements it with the driver.

        Parameters
        ----------
        memory : MemoryPointer
            Memory this plugin allocated.

        Returns
        -------
        IpcHandle

        Examples
        --------
        >>> mgr = gpuhost.current_context().memory_manager
        >>> h = mgr.get_ipc_handle(mgr.memalloc(1024))
        >>> type(h).__name__, h.size
        ('IpcHandle', 1024)
        """

    @abstractmethod
    def get_memory_info(self):
        """The free and total device memory, in bytes.

        ``Context.get_memory_info()`` asks it while the plugin manages the context.

        Returns
        -------
        MemoryInfo
            A named tuple (free, total).

        Raises
        ------
        RuntimeError or NotImplementedError
            A plugin that cannot tell.

        Examples
        --------
        >>> free, total = gpuhost.current_context().memory_manager.get_memory_info()
        >>> 0 <= free <= total
        True
        """

    @abstractmethod
    def reset(self):
        """Free everything this manager allocated in its context.

        ``Context.reset()`` and ``gpuhost.close()`` call it; memory still in use must not
        be used afterwards.

        Examples
        --------
        >>> from gpuhost import memory_manager as mm
        >>> mgr = mm.DefaultMemoryManager(context=gpuhost.current_context())
        >>> m = mgr.memalloc(1024)
        >>> mgr.reset()                          # m's memory goes back
        """

    @abstractmethod
    def defer_cleanup(self):
        """A context manager during which expensive cleanup is avoided.

        ``gpuhost.defer_cleanup()`` enters it too: memory freed inside the block is given
        back when the block ends.

        Returns
        -------
        context manager

        Examples
        --------
        >>> mgr = gpuhost.current_context().memory_manager
        >>> with mgr.defer_cleanup():
        ...     d = gpuhost.device_array(1024)
        ...     del d                            # released after the block
        """

    @property
    @abstractmethod
    def interface_version(self):
        """The EMM interface version the plugin implements, 1.

        `set_memory_manager` refuses a plugin with another version.

        Examples
        --------
        >>> gpuhost.current_context().memory_manager.interface_version
        1
        """


class HostOnlyCUDAMemoryManager(BaseCUDAMemoryManager):
    """Base class of plugins that manage device memory only (numba's).

    gpuhost does the host side: `memhostalloc`, `mempin` and `memallocmanaged`, and the
    `reset` and `defer_cleanup` that go with them, which a plugin overriding them must
    call through ``super()``. A plugin adds `memalloc`, `initialize`,
    `get_memory_info`, ``get_ipc_handle`` (`GetIpcHandleMixin` has one) and
    `interface_version`.

    Examples
    --------
    >>> from gpuhost import memory, memory_manager as mm
    >>> class CountingManager(mm.GetIpcHandleMixin, mm.HostOnlyCUDAMemoryManager):
    ...     def initialize(self):
    ...         self.count = 0
    ...     def memalloc(self, size):
    ...         mem = memory.Memory(size)          # or RMM, or any allocator
    ...         self.count += 1
    ...         return mm.MemoryPointer(self.context, mem.ptr, size,
    ...                                 finalizer=lambda: mem)  # frees `mem` with it
    ...     def get_memory_info(self):
    ...         return self.context.get_memory_info()
    ...     @property
    ...     def interface_version(self):
    ...         return 1
    >>> mm.set_memory_manager(CountingManager)
    >>> d = gpuhost.device_array(1000)
    >>> mm.get_memory_manager().count
    1
    >>> mm.set_memory_manager(None)        # back to gpuhost's pools
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # key -> the MappedMemory / managed AutoFreePointer of a live allocation: kept
        # here (as numba does) while the OwnedPointers handed out refer to it weakly
        self.allocations = {}

    def _finalizer(self, alloc):
        """(key, the finalizer that releases gpuhost Allocation `alloc`)."""
        key = id(alloc)
        allocations = self.allocations

        def finalizer():
            allocations.pop(key, None)
            try:
                alloc.close()
            except BufferError:
                pass  # numpy arrays still view it: it goes when they do
        return key, finalizer

    def _owned(self, alloc, cls, pointer, size, owner=None):
        """A `cls` (MappedMemory or AutoFreePointer) over `alloc`, kept in allocations;
        its OwnedPointer."""
        key, finalizer = self._finalizer(alloc)
        mem = cls(self.context, pointer, size, owner=owner, finalizer=finalizer)
        self.allocations[key] = mem
        return mem.own()

    def memhostalloc(self, size, mapped=False, portable=False, wc=False):
        """Page-locked host memory (cuMemHostAlloc), freed when the last reference dies.

        Parameters
        ----------
        size : int
            Bytes to allocate.
        mapped : bool, optional
            Map it into the device's address space.
        portable : bool, optional
            Pinned for every context.
        wc : bool, optional
            Write-combined: fast for the host to write and the device to read, slow
            for the host to read.

        Returns
        -------
        OwnedPointer or PinnedMemory
            An OwnedPointer of a `MappedMemory` if `mapped`, else a `PinnedMemory`.

        Examples
        --------
        >>> mgr = gpuhost.current_context().memory_manager
        >>> type(mgr.memhostalloc(4096)).__name__
        'PinnedMemory'
        >>> mgr.memhostalloc(4096, mapped=True).size
        4096
        """
        alloc = _core.mem_alloc(size, "mapped" if mapped else "pinned", portable=portable,
                                wc=wc)
        pointer = ctypes.c_void_p(alloc.host_ptr)
        if mapped:
            return self._owned(alloc, MappedMemory, pointer, size)
        return PinnedMemory(self.context, pointer, size, finalizer=self._finalizer(alloc)[1])

    def mempin(self, owner, pointer, size, mapped=False):
        """Page-lock existing host memory (cuMemHostRegister) until the last reference
        dies.

        Parameters
        ----------
        owner : object
            What owns the memory (a numpy array, say); kept as the result's ``owned``.
        pointer : int or ctypes.c_void_p
            The host address of the first byte.
        size : int
            Bytes to page-lock.
        mapped : bool, optional
            Also map them into the device's address space.

        Returns
        -------
        OwnedPointer or PinnedMemory
            An OwnedPointer of a `MappedMemory` if `mapped`, else a `PinnedMemory`.

        Examples
        --------
        >>> h = np.zeros(1 << 16, np.uint8)
        >>> mgr = gpuhost.current_context().memory_manager
        >>> mgr.mempin(h, h.ctypes.data, h.nbytes, mapped=True).size
        65536
        """
        address = _address(pointer)
        buffer = (ctypes.c_byte * size).from_address(address)
        alloc = _core.mem_register(buffer, mapped=mapped)
        if mapped:
            return self._owned(alloc, MappedMemory, ctypes.c_void_p(address), size, owner)
        return PinnedMemory(self.context, ctypes.c_void_p(address), size, owner=owner,
                            finalizer=self._finalizer(alloc)[1])

    def memallocmanaged(self, size, attach_global=True):
        """Managed (unified) memory (cuMemAllocManaged), freed when the last reference
        dies.

        Parameters
        ----------
        size : int
            Bytes to allocate.
        attach_global : bool, optional
            Reachable from every stream (the default), else attached to the host until a
            stream claims it.

        Returns
        -------
        OwnedPointer

        Examples
        --------
        >>> mgr = gpuhost.current_context().memory_manager
        >>> mgr.memallocmanaged(4096).size
        4096
        """
        alloc = _core.mem_alloc(size, "managed", attach_global=attach_global)
        return self._owned(alloc, AutoFreePointer, DevicePointer(alloc.ptr), size)

    def reset(self):
        """Free the mapped and managed memory allocated through this manager.

        Pinned memory that is not mapped goes when its PinnedMemory dies. A plugin
        that overrides it calls it through ``super().reset()``.

        Examples
        --------
        >>> from gpuhost import memory_manager as mm
        >>> mgr = mm.DefaultMemoryManager(context=gpuhost.current_context())
        >>> m = mgr.memhostalloc(4096, mapped=True)
        >>> len(mgr.allocations)
        1
        >>> mgr.reset()                          # m's memory is gone
        >>> len(mgr.allocations)
        0
        """
        for mem in list(self.allocations.values()):
            mem.free()
        self.allocations.clear()

    def defer_cleanup(self):
        """A context manager holding the release of memory until the block ends.

        Memory freed inside the block (pinned memory unpinned, device memory given back
        to the driver) is released when the outermost such block ends; blocks nest. A
        plugin that overrides it enters it through ``super().defer_cleanup()``.

        Returns
        -------
        context manager

        Examples
        --------
        >>> mgr = gpuhost.current_context().memory_manager
        >>> with mgr.defer_cleanup():
        ...     mgr.deallocations.is_disabled
        True
        >>> mgr.deallocations.is_disabled
        False
        """
        return _hold_releases()


@contextlib.contextmanager
def _hold_releases():
    """gpuhost's defer_cleanup() hold, for the managers' defer_cleanup() and disable()."""
    _core._defer_cleanup_enter()
    try:
        yield
    finally:
        _core._defer_cleanup_exit()


class GetIpcHandleMixin:
    """A plugin's ``get_ipc_handle`` done by the driver (numba's mixin).

    Put it before the base class (``class M(GetIpcHandleMixin,
    HostOnlyCUDAMemoryManager)``) for a plugin whose memory the driver can export: the
    allocation's base address comes from cuMemGetAddressRange, the handle from
    cuIpcGetMemHandle.

    Examples
    --------
    >>> mgr = gpuhost.current_context().memory_manager   # gpuhost's own uses it
    >>> h = mgr.get_ipc_handle(mgr.memalloc(1024))
    >>> type(h).__name__, h.size
    ('IpcHandle', 1024)
    """

    def get_ipc_handle(self, memory):
        """An IpcHandle for `memory`, with the memory's offset in its allocation.

        Parameters
        ----------
        memory : MemoryPointer
            Memory of this plugin's context.

        Returns
        -------
        IpcHandle

        Raises
        ------
        CudaAPIError
            The driver cannot export the memory (managed memory, say).

        Examples
        --------
        >>> mgr = gpuhost.current_context().memory_manager
        >>> p = mgr.memalloc(1024)
        >>> h = mgr.get_ipc_handle(p)
        >>> h.size, h.offset >= 0, len(h.handle)
        (1024, True, 64)
        """
        ptr = _address(memory.device_pointer if hasattr(memory, "device_pointer")
                       else memory.ptr)
        probe = _core.make_array(memory, ptr, (memory.size,), (1,), np.uint8)
        handle, offset, size = _core.ipc_get_handle(probe)
        source_info = self.context.device.uuid if self.context is not None else None
        return IpcHandle(memory, handle, memory.size, source_info, offset=offset)


# ---- gpuhost's own manager, as numba's default one is seen ----

class PendingDeallocs:
    """numba's pending-deallocation queue of a context, over gpuhost's freeing scheme.

    gpuhost gives freed device memory back to the context's default pool, which holds it
    for reuse instead of returning it to the driver; those held blocks are what numba
    calls pending deallocations.  ``len()`` counts them, ``clear()`` returns them to the
    driver (cuMemFree), except inside ``defer_cleanup()`` / ``disable()``, where nothing
    is released until the outermost block ends.  The pool flushes itself when an
    allocation finds the device out of memory, as numba's queue does.

    Parameters
    ----------
    context : gpuhost.Context
        The context whose default pool it reads.

    Examples
    --------
    >>> dealloc = gpuhost.current_context().memory_manager.deallocations
    >>> d = gpuhost.device_array(1 << 20)
    >>> del d                                  # held by the pool, not freed
    >>> len(dealloc) >= 1
    True
    >>> dealloc.clear()                        # back to the driver
    >>> len(dealloc)
    0
    """

    def __init__(self, context):
        self._context = context

    def _pool(self):
        return _core.default_pool(self._context)

    def __len__(self):
        return self._pool().n_free_blocks

    @property
    def _size(self):
        """Bytes held (numba's name)."""
        return self._pool().free_bytes

    @property
    def memory_capacity(self):
        """The device's total memory, in bytes.

        Examples
        --------
        >>> ctx = gpuhost.current_context()
        >>> ctx.deallocations.memory_capacity == ctx.device.total_memory
        True
        """
        return self._context.device.total_memory

    @property
    def is_disabled(self):
        """Whether a ``defer_cleanup()`` or ``disable()`` block is active.

        Examples
        --------
        >>> dealloc = gpuhost.current_context().deallocations
        >>> with gpuhost.defer_cleanup():
        ...     dealloc.is_disabled
        True
        >>> dealloc.is_disabled
        False
        """
        return _core._defer_cleanup_depth() > 0

    def clear(self):
        """Return the held blocks to the driver (cuMemFree), unless disabled.

        Examples
        --------
        >>> dealloc = gpuhost.current_context().deallocations
        >>> d = gpuhost.device_array(1 << 20)
        >>> del d                                # held by the pool
        >>> dealloc.clear()
        >>> len(dealloc)
        0
        """
        if not self.is_disabled:
            with self._context.device:
                self._pool().free_all_blocks()

    def disable(self):
        """A context manager holding every release until the block ends (blocks nest).

        Inside it `clear` returns nothing to the driver; it is what
        ``defer_cleanup()`` enters.

        Returns
        -------
        context manager

        Examples
        --------
        >>> dealloc = gpuhost.current_context().deallocations
        >>> with dealloc.disable():
        ...     d = gpuhost.device_array(1 << 20)
        ...     del d
        ...     dealloc.clear()                  # held: nothing is freed yet
        ...     len(dealloc) >= 1
        True
        >>> dealloc.clear()
        >>> len(dealloc)
        0
        """
        return _hold_releases()

    def __repr__(self):
        return "<PendingDeallocs of %r: %d blocks, %d bytes>" % (self._context, len(self),
                                                               self._size)


class DefaultMemoryManager(GetIpcHandleMixin, HostOnlyCUDAMemoryManager):
    """The memory manager a context has while no EMM plugin is set (numba's
    NumbaCUDAMemoryManager).

    ``Context.memory_manager`` is one of these unless a plugin is set: device memory
    comes from gpuhost's default pool, host memory as `HostOnlyCUDAMemoryManager` does,
    and ``deallocations`` is a `PendingDeallocs` over the pool. Assigning one to
    ``Context.memory_manager`` gives the context back to gpuhost's pool.

    Parameters
    ----------
    context : gpuhost.Context
        Keyword only: the context it serves.

    Examples
    --------
    >>> mgr = gpuhost.current_context().memory_manager
    >>> type(mgr).__name__, mgr.interface_version
    ('DefaultMemoryManager', 1)
    >>> p = mgr.memalloc(1024)
    >>> p.size, p.device_pointer_value != 0
    (1024, True)
    >>> mgr.get_memory_info().total == gpuhost.gpus[0].total_memory
    True
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.deallocations = PendingDeallocs(self.context) if self.context is not None else None

    def initialize(self):
        """Nothing to prepare (the pool is made on first use).

        Examples
        --------
        >>> gpuhost.current_context().memory_manager.initialize()
        """

    def memalloc(self, size):
        """`size` bytes of device memory from the context's default pool.

        Parameters
        ----------
        size : int
            Bytes to allocate.

        Returns
        -------
        OwnedPointer
            Of an `AutoFreePointer`; the memory goes back to the pool when the last
            reference dies.

        Examples
        --------
        >>> mgr = gpuhost.current_context().memory_manager
        >>> p = mgr.memalloc(1024)
        >>> type(p).__name__, p.size
        ('OwnedPointer', 1024)
        """
        with self.context.device:
            alloc = _core.device_alloc(size)
        return self._owned(alloc, AutoFreePointer, DevicePointer(alloc.ptr), size)

    def get_memory_info(self):
        """The free and total device memory in bytes, as ``Context.get_memory_info()``.

        Returns
        -------
        MemoryInfo
            A named tuple (free, total).

        Examples
        --------
        >>> mgr = gpuhost.current_context().memory_manager
        >>> mgr.get_memory_info().total == gpuhost.current_context().device.total_memory
        True
        """
        return self.context.get_memory_info()

    def reset(self):
        """Free what this manager allocated, and return the pool's held blocks.

        Examples
        --------
        >>> from gpuhost import memory_manager as mm
        >>> mgr = mm.DefaultMemoryManager(context=gpuhost.current_context())
        >>> d = gpuhost.device_array(1 << 20)
        >>> del d                                # held by the pool
        >>> mgr.reset()
        >>> len(mgr.deallocations)
        0
        """
        super().reset()
        if self.deallocations is not None:
            self.deallocations.clear()

    @property
    def interface_version(self):
        """The EMM interface version implemented, 1.

        Examples
        --------
        >>> gpuhost.current_context().memory_manager.interface_version
        1
        """
        return _SUPPORTED_EMM_INTERFACE_VERSION


# ---- installing a plugin ----

_plugin = None  # the plugin class, or None (gpuhost's pools)
_managers = {}  # Context -> the plugin's instance for it


def set_memory_manager(mm_plugin):
    """Install an External Memory Management plugin for device arrays (numba's).

    From then on `device_array`, `to_device` and the other array functions take their
    memory from the plugin: one instance per context, made (and ``initialize()``-d) at
    that context's first allocation. Arrays made before keep their memory. Setting
    GPUHOST_CUDA_MEMORY_MANAGER (or NUMBA_CUDA_MEMORY_MANAGER) to a module name does the
    same with the module's ``_gpuhost_memory_manager`` (or ``_numba_memory_manager``).

    Parameters
    ----------
    mm_plugin : type or None
        A subclass of `BaseCUDAMemoryManager` (numba's plugins, RMM's
        ``RMMNumbaManager``, work unchanged); None goes back to gpuhost's own pools.

    Raises
    ------
    RuntimeError
        The plugin's ``interface_version`` is not 1.

    Examples
    --------
    >>> from gpuhost import memory, memory_manager as mm
    >>> class CountingManager(mm.GetIpcHandleMixin, mm.HostOnlyCUDAMemoryManager):
    ...     def initialize(self):
    ...         self.count = 0
    ...     def memalloc(self, size):
    ...         mem = memory.Memory(size)          # or RMM, or any allocator
    ...         self.count += 1
    ...         return mm.MemoryPointer(self.context, mem.ptr, size,
    ...                                 finalizer=lambda: mem)  # frees `mem` with it
    ...     def get_memory_info(self):
    ...         return self.context.get_memory_info()
    ...     @property
    ...     def interface_version(self):
    ...         return 1
    >>> gpuhost.set_memory_manager(CountingManager)
    >>> d = gpuhost.to_device(np.arange(10.0))
    >>> e = gpuhost.device_array_like(d)
    >>> mm.get_memory_manager().count
    2
    >>> gpuhost.set_memory_manager(None)
    """
    global _plugin
    if mm_plugin is not None:
        version = mm_plugin(context=None).interface_version
        if version != _SUPPORTED_EMM_INTERFACE_VERSION:
            raise RuntimeError("EMM Plugin interface has version %d - version %d required"
                               % (version, _SUPPORTED_EMM_INTERFACE_VERSION))
    _managers.clear()  # arrays made so far keep their memory; new ones use the new plugin
    _plugin = mm_plugin
    _install_allocator()


def get_memory_manager(context=None):
    """The installed plugin's instance for a context, made on first use.

    Parameters
    ----------
    context : gpuhost.Context, optional
        By default the current context.

    Returns
    -------
    BaseCUDAMemoryManager or None
        None when no plugin is set (``Context.memory_manager`` is then gpuhost's
        `DefaultMemoryManager`).

    Examples
    --------
    >>> from gpuhost import memory_manager as mm
    >>> mm.get_memory_manager() is None        # no plugin set
    True
    """
    if _plugin is None:
        return None
    ctx = context if context is not None else _core.current_context()
    mgr = _managers.get(ctx)
    if mgr is None:
        with ctx.device:
            mgr = _plugin(context=ctx)
            mgr.initialize()
        _managers[ctx] = mgr
    return mgr


_defaults = {}  # Context -> its DefaultMemoryManager


def context_plugin(context):
    """The EMM plugin instance that manages `context` (set_memory_manager's, or one assigned
    to ``Context.memory_manager``), or None where gpuhost's own manager does."""
    mgr = _managers.get(context)
    if mgr is None and _plugin is not None:
        mgr = get_memory_manager(context)
    return mgr


def context_memory_manager(context):
    """Context.memory_manager: the manager `context` allocates through (an EMM plugin's
    instance, or gpuhost's DefaultMemoryManager)."""
    mgr = _managers.get(context)
    if mgr is None and _plugin is not None:
        mgr = get_memory_manager(context)
    if mgr is None:
        mgr = _defaults.get(context)
        if mgr is None:
            mgr = _defaults[context] = DefaultMemoryManager(context=context)
    return mgr


def set_context_memory_manager(context, manager):
    """Context.memory_manager = manager: `context`'s device arrays allocate through
    `manager` (initialize()-d now) from here on; a DefaultMemoryManager gives the context
    back to gpuhost's pool (or to the plugin set_memory_manager() installed)."""
    if isinstance(manager, DefaultMemoryManager):
        _managers.pop(context, None)
        _defaults[context] = manager
    else:
        for name in ("memalloc", "initialize", "get_memory_info", "reset"):
            if not callable(getattr(manager, name, None)):
                raise TypeError("a memory manager needs a %s() method; %s has none"
                                % (name, type(manager).__name__))
        with context.device:
            manager.initialize()
        _managers[context] = manager
    _install_allocator()


def _install_allocator():
    """Route device arrays through _allocate while any plugin is in use, else back to the
    C fast path (unless set_allocator() installed another allocator)."""
    in_use = _plugin is not None or bool(_managers)
    if in_use:
        _core.set_array_allocator(_allocate)
        _arrays.set_manager_defer(_defer)
    elif _core.array_allocator() is _allocate:
        _core.set_array_allocator(None)
        _arrays.set_manager_defer(None)


def _context_reset(context):
    """Context.reset(): the manager's reset(), as numba's does (its memory goes)."""
    mgr = _managers.get(context)
    if mgr is None and _plugin is not None:
        mgr = get_memory_manager(context)
    if mgr is None:
        mgr = _defaults.get(context)
    if mgr is not None:
        mgr.reset()


_asking = threading.local()  # contexts whose plugin is answering get_memory_info()


def _plugin_memory_info(context):
    """Context.get_memory_info() while a plugin manages `context`: the plugin's answer
    (numba asks its memory manager); None otherwise, and while that plugin is itself
    asking the context (then the driver answers)."""
    mgr = _managers.get(context)
    if mgr is None and _plugin is not None:
        mgr = get_memory_manager(context)
    asking = getattr(_asking, "contexts", None)
    if asking is None:
        asking = _asking.contexts = set()
    if mgr is None or context in asking:
        return None
    asking.add(context)
    try:
        return mgr.get_memory_info()
    finally:
        asking.discard(context)


def _allocate(nbytes, stream):
    """device_array()'s allocator while a plugin is in use: (owner, address)."""
    ctx = _core.current_context()
    mem = _managers.get(ctx)
    if mem is None and _plugin is None:  # another context has a plugin; this one does not
        alloc = _core.device_alloc(nbytes, stream)
        return alloc, alloc.ptr
    mem = mem if mem is not None else get_memory_manager(ctx)
    ptr = mem.memalloc(nbytes)
    value = getattr(ptr, "device_pointer_value", None)
    if value is None:
        value = _address(getattr(ptr, "device_pointer", None) or getattr(ptr, "ptr", None))
    return ptr, value or 0


def _defer():
    mgr = _managers.get(_core.current_context())
    return mgr.defer_cleanup() if mgr is not None else None


def _close_managers():
    """reset() every instance and forget them (gpuhost.close(), a new plugin)."""
    managers = list(_managers.values())
    _managers.clear()
    for mgr in managers:
        mgr.reset()


def _ensure_memory_manager():
    """Install the plugin GPUHOST_CUDA_MEMORY_MANAGER (else NUMBA_CUDA_MEMORY_MANAGER)
    names; RuntimeError if it cannot be used."""
    name = os.environ.get("GPUHOST_CUDA_MEMORY_MANAGER") or \
        os.environ.get("NUMBA_CUDA_MEMORY_MANAGER", "default")
    if name in ("", "default"):
        set_memory_manager(None)
        return
    try:
        module = importlib.import_module(name)
        plugin = getattr(module, "_gpuhost_memory_manager", None)
        if plugin is None:
            plugin = module._numba_memory_manager
        set_memory_manager(plugin)
    except Exception as e:
        raise RuntimeError("Failed to use memory manager from %s: %s" % (name, e)) from e


# Context.reset() and get_memory_info() ask an EMM plugin through these (csrc/core/context.c),
# registered when this module is imported (no plugin can be in use before).
_core._set_helpers(plugin_context_reset=_context_reset, plugin_memory_info=_plugin_memory_info)
