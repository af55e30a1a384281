"""CuPy's MemoryPointer (``cupy.cuda.MemoryPointer``): an address into device memory, with
its copies and sets, over gpuhost's C copies; part of gpuhost.memory.
"""
import ctypes

import numpy as np

from ... import _core


_U8 = np.dtype(np.uint8)


def _address(mem):
    """An int address from an int, a ctypes pointer (c_void_p) or a MemoryPointer."""
    if isinstance(mem, int):
        return mem
    if isinstance(mem, MemoryPointer):
        return mem.ptr
    if isinstance(mem, (ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t)):
        return mem.value or 0
    from ._pinned import PinnedMemoryPointer  # a copy's host side, in pinned memory

    if isinstance(mem, PinnedMemoryPointer):
        return mem.ptr
    raise TypeError("expected an address (int or ctypes.c_void_p), not %s" % type(mem).__name__)


def _context_of(mem):
    ctx = getattr(mem, "context", None)
    return ctx if ctx is not None else _core.current_context()


class MemoryPointer:
    """A pointer into device memory, keeping that memory alive (CuPy's MemoryPointer).

    What `alloc`, `malloc_managed`, `malloc_async` and the pools' ``malloc`` return:
    ``mem`` is the memory object, ``ptr`` an address inside it, ``int(p)`` that address.
    Adding or subtracting an int gives a pointer further along the same memory. The copy
    and memset methods act on the bytes from ``ptr`` on; the synchronous ones run on the
    legacy default stream and return when done, the ``_async`` ones are queued on their
    stream.

    Parameters
    ----------
    mem : BaseMemory
        The memory (`Memory`, `PooledMemory`, `UnownedMemory`, ...).
    offset : int
        Bytes from the start of `mem` to ``ptr``.

    Raises
    ------
    ValueError
        A nonzero `offset` into null (size 0) memory.

    Examples
    --------
    >>> from gpuhost import memory
    >>> h = np.arange(8, dtype=np.int32)
    >>> p = memory.alloc(h.nbytes)
    >>> p.copy_from_host(h.ctypes.data, h.nbytes)
    >>> q = p + 16                      # the 5th element on
    >>> out = np.zeros(4, np.int32)
    >>> q.copy_to_host(out.ctypes.data, out.nbytes)
    >>> out
    array([4, 5, 6, 7], dtype=int32)
    >>> q.ptr - p.ptr, q.device_id
    (16, 0)
    """

    __slots__ = {
        "mem": """The memory object the pointer points into, kept alive by it.

        Pointers made from one another by adding an offset share it.

        Examples
        --------
        >>> from gpuhost import memory
        >>> p = memory.alloc(1000)
        >>> q = p + 100
        >>> q.mem is p.mem, q.mem.size
        (True, 1000)
        """,
        "ptr": """The device address the pointer holds, an int.

        ``mem.ptr`` plus the pointer's offset; ``int(p)`` is the same number.

        Examples
        --------
        >>> from gpuhost import memory
        >>> p = memory.alloc(1000)
        >>> q = p + 100
        >>> q.ptr - p.ptr, p.ptr == p.mem.ptr, int(q) == q.ptr
        (100, True, True)
        """,
        "__weakref__": None,
    }

    def __init__(self, mem, offset):
        if mem.ptr == 0 and offset != 0:
            raise ValueError("a null pointer cannot be offset")
        self.mem, self.ptr = mem, mem.ptr + offset

    @classmethod
    def _wrap(cls, mem):
        self = object.__new__(cls)
        self.mem, self.ptr = mem, mem.ptr
        return self

    @property
    def device_id(self):
        """The ordinal of the device the memory is on, ``mem.device_id``.

        Examples
        --------
        >>> from gpuhost import memory
        >>> with gpuhost.gpus[1]:
        ...     p = memory.alloc(64)
        >>> p.device_id, memory.alloc(64).device_id
        (1, 0)
        """
        return self.mem.device_id

    @property
    def device(self):
        """The Device the memory is on.

        Returns
        -------
        gpuhost.Device

        Examples
        --------
        >>> from gpuhost import memory
        >>> with gpuhost.gpus[1]:
        ...     p = memory.alloc(64)
        >>> p.device is gpuhost.gpus[1]
        True
        """
        return _core.get_device(self.mem.device_id)

    def __int__(self):
        return self.ptr

    def __repr__(self):
        return "<MemoryPointer 0x%x device=%d mem=%r>" % (self.ptr, self.device_id, self.mem)

    def __add__(self, offset):
        if not isinstance(offset, int):
            return NotImplemented
        if self.ptr == 0 and offset != 0:
            raise ValueError("a null pointer cannot be offset")
        return type(self)(self.mem, self.ptr - self.mem.ptr + offset)

    __radd__ = __add__

    def __sub__(self, offset):
        if not isinstance(offset, int):
            return NotImplemented
        return self + -offset

    def __iadd__(self, offset):
        if self.ptr == 0 and offset != 0:
            raise ValueError("a null pointer cannot be offset")
        self.ptr += offset
        return self

    def __isub__(self, offset):
        return self.__iadd__(-offset)

    @staticmethod
    def _stream_of(stream):
        """What an async method's stream=None means: the legacy default stream (0)."""
        return 0 if stream is None else stream

    def _bytes(self, size):
        """A uint8 DeviceArray over `size` bytes from ptr, for the copy primitives."""
        return _core.make_array(self.mem, self.ptr, (size,), (1,), _U8, None,
                                _context_of(self.mem))

    # copies: the synchronous ones run on the legacy default stream, as CuPy's do

    def copy_from_device(self, src, size):
        """Copy `size` bytes from device memory `src` here, returning when done.

        Parameters
        ----------
        src : MemoryPointer
            Where to copy from; it may be on another device (a peer copy).
        size : int
            Bytes to copy.

        Examples
        --------
        >>> from gpuhost import memory
        >>> a, b = memory.alloc(64), memory.alloc(64)
        >>> a.memset(7, 64)
        >>> b.copy_from_device(a, 64)
        >>> out = np.zeros(64, np.uint8)
        >>> b.copy_to_host(out.ctypes.data, 64)
        >>> int(out.sum())
        448
        """
        self.copy_from_device_async(src, size, None)

    def copy_from_device_async(self, src, size, stream=None):
        """Queue a copy of `size` bytes from device memory `src` here, on `stream`.

        Parameters
        ----------
        src : MemoryPointer
            Where to copy from; it may be on another device (a peer copy).
        size : int
            Bytes to copy.
        stream : gpuhost.Stream, optional
            The stream to queue it on; None (the default) is the legacy default stream.

        Examples
        --------
        >>> from gpuhost import memory
        >>> s = gpuhost.stream()
        >>> a, b = memory.alloc(64), memory.alloc(64)
        >>> b.copy_from_device_async(a, 64, s)
        >>> s.synchronize()
        """
        if size > 0:
            self._bytes(size).copy_to_device(src._bytes(size), stream=self._stream_of(stream))

    def copy_from_host(self, mem, size):
        """Copy `size` bytes from host memory here, returning when done.

        Parameters
        ----------
        mem : int or ctypes.c_void_p
            The host address to copy from (``array.ctypes.data`` for a numpy array).
        size : int
            Bytes to copy.

        Examples
        --------
        >>> from gpuhost import memory
        >>> h = np.arange(4, dtype=np.float64)
        >>> p = memory.alloc(h.nbytes)
        >>> p.copy_from_host(h.ctypes.data, h.nbytes)
        """
        self.copy_from_host_async(mem, size, None)

    def copy_from_host_async(self, mem, size, stream=None):
        """Queue a copy of `size` bytes from host memory here, on `stream`.

        The host memory must stay valid until the copy has run; it overlaps other work
        only from pinned memory.

        Parameters
        ----------
        mem : int or ctypes.c_void_p
            The host address to copy from.
        size : int
            Bytes to copy.
        stream : gpuhost.Stream, optional
            The stream to queue it on; None (the default) is the legacy default stream.

        Examples
        --------
        >>> from gpuhost import memory
        >>> s = gpuhost.stream()
        >>> h = gpuhost.pinned_array(256, np.uint8)
        >>> h[:] = 1
        >>> p = memory.alloc(256)
        >>> p.copy_from_host_async(h.ctypes.data, 256, s)
        >>> s.synchronize()                 # before h is reused
        """
        if size > 0:
            _core.copy_2d(self._bytes(size), False, _address(mem), size, self.ptr, size, size, 1,
                          self._stream_of(stream))

    def copy_from(self, mem, size):
        """Copy `size` bytes here from device or host memory `mem`, returning when done.

        `copy_from_device` for a MemoryPointer, else `copy_from_host`.

        Parameters
        ----------
        mem : MemoryPointer or int or ctypes.c_void_p
            Device memory, or a host address.
        size : int
            Bytes to copy.

        Examples
        --------
        >>> from gpuhost import memory
        >>> h = np.ones(16, np.uint8)
        >>> a, b = memory.alloc(16), memory.alloc(16)
        >>> a.copy_from(h.ctypes.data, 16)  # from the host
        >>> b.copy_from(a, 16)              # from the device
        """
        self.copy_from_async(mem, size, None)

    def copy_from_async(self, mem, size, stream=None):
        """Queue a copy of `size` bytes here from device or host memory `mem`, on `stream`.

        `copy_from_device_async` for a MemoryPointer, else `copy_from_host_async`: host
        memory must stay valid until the copy has run.

        Parameters
        ----------
        mem : MemoryPointer or int or ctypes.c_void_p
            Device memory, or a host address.
        size : int
            Bytes to copy.
        stream : gpuhost.Stream, optional
            The stream to queue it on; None (the default) is the legacy default stream.

        Examples
        --------
        >>> from gpuhost import memory
        >>> s = gpuhost.stream()
        >>> h = gpuhost.pinned_array(4, np.int32)
        >>> h[:] = [1, 2, 3, 4]
        >>> a, b = memory.alloc(16), memory.alloc(16)
        >>> a.copy_from_async(h.ctypes.data, 16, s)  # from the host
        >>> b.copy_from_async(a, 16, s)              # from the device
        >>> s.synchronize()
        >>> out = np.zeros(4, np.int32)
        >>> b.copy_to_host(out.ctypes.data, out.nbytes)
        >>> out
        array([1, 2, 3, 4], dtype=int32)
        """
        if isinstance(mem, MemoryPointer):
            self.copy_from_device_async(mem, size, stream)
        else:
            self.copy_from_host_async(mem, size, stream)

    def copy_to_host(self, mem, size):
        """Copy `size` bytes from here to host memory, returning when done.

        Parameters
        ----------
        mem : int or ctypes.c_void_p
            The host address to copy to (``array.ctypes.data`` for a numpy array).
        size : int
            Bytes to copy.

        Examples
        --------
        >>> from gpuhost import memory
        >>> p = memory.alloc(8)
        >>> p.memset(0xFF, 8)
        >>> out = np.zeros(8, np.uint8)
        >>> p.copy_to_host(out.ctypes.data, 8)
        >>> out
        array([255, 255, 255, 255, 255, 255, 255, 255], dtype=uint8)
        """
        self.copy_to_host_async(mem, size, None)

    def copy_to_host_async(self, mem, size, stream=None):
        """Queue a copy of `size` bytes from here to host memory, on `stream`.

        Read the host memory only after the stream has reached the copy (synchronize it,
        or wait on an event recorded after it).

        Parameters
        ----------
        mem : int or ctypes.c_void_p
            The host address to copy to.
        size : int
            Bytes to copy.
        stream : gpuhost.Stream, optional
            The stream to queue it on; None (the default) is the legacy default stream.

        Examples
        --------
        >>> from gpuhost import memory
        >>> s = gpuhost.stream()
        >>> p = memory.alloc(4)
        >>> p.memset_async(1, 4, s)
        >>> out = gpuhost.pinned_array(4, np.uint8)
        >>> p.copy_to_host_async(out.ctypes.data, 4, s)
        >>> s.synchronize()
        >>> out
        array([1, 1, 1, 1], dtype=uint8)
        """
        if size > 0:
            _core.copy_2d(self._bytes(size), True, _address(mem), size, self.ptr, size, size, 1,
                          self._stream_of(stream))

    def memset(self, value, size):
        """Set `size` bytes from here to the byte `value`, returning when done.

        Parameters
        ----------
        value : int
            The byte value; only its low 8 bits are used.
        size : int
            Bytes to set.

        Examples
        --------
        >>> from gpuhost import memory
        >>> p = memory.alloc(1024)
        >>> p.memset(0, 1024)
        """
        self.memset_async(value, size, None)

    def memset_async(self, value, size, stream=None):
        """Queue setting `size` bytes from here to the byte `value`, on `stream`.

        Parameters
        ----------
        value : int
            The byte value; only its low 8 bits are used.
        size : int
            Bytes to set.
        stream : gpuhost.Stream, optional
            The stream to queue it on; None (the default) is the legacy default stream.

        Examples
        --------
        >>> from gpuhost import memory
        >>> s = gpuhost.stream()
        >>> p = memory.alloc(1024)
        >>> p.memset_async(0, 1024, s)
        >>> s.synchronize()
        """
        if size > 0:
            _core.memset(self._bytes(size), self.ptr, 1, value & 0xFF, size, 1, size,
                         self._stream_of(stream))
