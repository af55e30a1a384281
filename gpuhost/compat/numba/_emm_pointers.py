"""numba's memory pointers (numba.cuda.cudadrv.driver's MemoryPointer, AutoFreePointer,
MappedMemory, PinnedMemory, OwnedPointer ...) over gpuhost's memory: what an EMM plugin's
``memalloc`` returns and what gpuhost.memory_manager re-exports.
"""
import ctypes
import weakref

import numpy as np

from ... import _core


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
