"""CuPy's memory API (``cupy.cuda`` / ``cupy.cuda.memory``) over gpuhost's pools.

    import gpuhost.memory as mem
    pool = mem.MemoryPool()
    mem.set_allocator(pool.malloc)       # device arrays now take their memory from `pool`
    p = mem.alloc(1 << 20)               # a MemoryPointer, from the current allocator
    p.copy_from_host(host.ctypes.data, host.nbytes)
    print(pool.used_bytes(), pool.free_bytes(), pool.n_free_blocks())

The default allocator is ``get_default_memory_pool().malloc``: the contexts' default pools,
the same C pools device_array() and to_device() use (so their statistics count device
arrays too). ``set_allocator(fn)`` makes device arrays allocate through ``fn(size)`` (any
callable returning an object with an int ``.ptr``, CuPy's own pools included);
``set_allocator(None)`` allocates without a pool, as CuPy's does.

Differences from CuPy: gpuhost has no "current stream", so ``malloc(size, stream=None)``,
``copy_*_async(..., stream=None)`` and ``memset_async`` take the stream (None: the legacy
default stream, on which the async calls complete before they return; gpuhost.compat.cupy's
subclasses use CuPy's current stream instead); the pool's size classes are gpuhost's (512
bytes, then 8 per doubling) rather than CuPy's splitting of larger blocks. As CuPy's, a pool
hands out PooledMemory (plain Memory for size 0), ``using_allocator()`` is per thread, and
OutOfMemoryError(size, total, limit) is CuPy's exception (also a CudaOutOfMemoryError).
"""
import contextlib
import ctypes
import threading
import warnings
import weakref

import numpy as np

from . import _core
from ._unbound import unbound as _unbound
from .errors import CudaOutOfMemoryError

__all__ = [
    "BaseMemory", "ManagedMemory", "Memory", "MemoryAsync", "MemoryPointer", "MemoryPool",
    "MemoryAsyncPool", "OutOfMemoryError", "PinnedMemory", "PinnedMemoryPointer", "PinnedMemoryPool",
    "PooledMemory", "PooledPinnedMemory", "PythonFunctionAllocator", "UnownedMemory", "alloc",
    "alloc_pinned_memory", "get_allocator", "get_default_memory_pool",
    "get_default_pinned_memory_pool", "malloc_async", "malloc_managed", "set_allocator",
    "set_pinned_memory_allocator", "using_allocator",
]

_allocation_unit_size = 512  # the pools' smallest size class, CuPy's allocation unit


class OutOfMemoryError(CudaOutOfMemoryError):
    """A pool or allocator ran out of memory (CuPy's exception).

    Raised by `MemoryPool.malloc`, `MemoryAsyncPool.malloc` and `PinnedMemoryPool.malloc`
    when a request would take the pool past its limit or the device (or host) has no
    memory left; the message is CuPy's. It is also a `CudaOutOfMemoryError` and a
    `MemoryError`, so ``except MemoryError`` catches it. When the driver refused the
    memory, the driver's own report, with the device's free and total memory, is its
    ``__cause__``.

    Parameters
    ----------
    size : int
        The bytes asked for.
    total : int
        The bytes the pool had allocated so far (-1: not known, left out of the message).
    limit : int, optional
        The pool's limit in bytes; 0 (the default) for none.

    Examples
    --------
    >>> from gpuhost import memory
    >>> pool = memory.MemoryPool()
    >>> pool.set_limit(size=4096)
    >>> try:
    ...     pool.malloc(8192)
    ... except memory.OutOfMemoryError as e:
    ...     print(e)
    Out of memory allocating 8,192 bytes (allocated so far: 0 bytes, limit set to: 4,096 bytes).
    >>> issubclass(memory.OutOfMemoryError, MemoryError)
    True
    """

    def __init__(self, size, total, limit=0):
        self._size, self._total, self._limit = size, total, limit
        if limit == 0:
            msg = "Out of memory allocating {:,} bytes".format(size)
            if total != -1:
                msg += " (allocated so far: {:,} bytes).".format(total)
        else:
            msg = ("Out of memory allocating {:,} bytes (allocated so far: {:,} bytes, limit "
                   "set to: {:,} bytes).".format(size, total, limit))
        super().__init__(2, "CUDA_ERROR_OUT_OF_MEMORY", msg, "")
        self.args = (msg,)

    def __str__(self):
        return self.msg

    def __reduce__(self):
        return (type(self), (self._size, self._total, self._limit))

_U8 = np.dtype(np.uint8)


def _address(mem):
    """An int address from an int, a ctypes pointer (c_void_p) or a MemoryPointer."""
    if isinstance(mem, int):
        return mem
    if isinstance(mem, (MemoryPointer, PinnedMemoryPointer)):
        return mem.ptr
    if isinstance(mem, (ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t)):
        return mem.value or 0
    raise TypeError("expected an address (int or ctypes.c_void_p), not %s" % type(mem).__name__)


def _stream(stream):
    return 0 if stream is None else stream


# ---- memory ----

class _MemoryType(type):
    """The type of BaseMemory and its subclasses: isinstance() also sees the Allocations a
    device pool hands out as PooledMemory (so as BaseMemory), as CuPy types them; the pools
    hand out the C Allocations themselves, which is what keeps malloc fast."""

    def __instancecheck__(cls, obj):
        if type(obj) is _core.Allocation and (cls is PooledMemory or cls is BaseMemory):
            return obj.pool is not None and obj.kind != "pinned" and obj.kind != "mapped"
        return type.__instancecheck__(cls, obj)


class BaseMemory(metaclass=_MemoryType):
    """Memory on a CUDA device: the base class of CuPy's memory types.

    ``ptr`` is the address of its first byte, ``size`` its size in bytes, ``device_id``
    and ``device`` the device it is on; ``int(mem)`` is ``mem.ptr``. Its subclasses differ
    in where the memory comes from: `Memory` (the driver), `ManagedMemory` (unified
    memory), `MemoryAsync` (the stream-ordered pool), `UnownedMemory` (someone else) and
    `PooledMemory` (a `MemoryPool`). ``isinstance(mem, BaseMemory)`` is also true of the
    Allocations a `MemoryPool` hands out.

    Examples
    --------
    >>> from gpuhost import memory
    >>> p = memory.MemoryPool().malloc(1000)
    >>> isinstance(p.mem, memory.BaseMemory), p.mem.size, p.mem.device_id
    (True, 1000, 0)
    >>> int(p.mem) == p.mem.ptr == p.ptr
    True
    """

    __slots__ = {
        "ptr": """The device address of the first byte, an int (0 for size 0).

        ``int(mem)`` is the same number.

        Examples
        --------
        >>> from gpuhost import memory
        >>> m = memory.Memory(1024)
        >>> m.ptr != 0, int(m) == m.ptr, memory.Memory(0).ptr
        (True, True, 0)
        """,
        "size": """The size in bytes, as asked for.

        A pool's block may be larger (its size class); this is the size requested.

        Examples
        --------
        >>> from gpuhost import memory
        >>> memory.Memory(1024).size
        1024
        >>> memory.MemoryPool().malloc(1000).mem.size
        1000
        """,
        "device_id": """The ordinal of the device the memory is on.

        The device that was current when the memory was allocated.

        Examples
        --------
        >>> from gpuhost import memory
        >>> with gpuhost.gpus[1]:
        ...     m = memory.Memory(256)
        >>> m.device_id, memory.Memory(256).device_id
        (1, 0)
        """,
        "_owner": "What frees the memory when it dies (an Allocation, or the owner "
                  "UnownedMemory keeps alive).",
        "context": """The Context the memory belongs to.

        The primary context of the memory's device.

        Examples
        --------
        >>> from gpuhost import memory
        >>> m = memory.Memory(256)
        >>> m.context is gpuhost.current_context()
        True
        >>> m.context.device.id == m.device_id
        True
        """,
    }

    @property
    def device(self):
        """The Device the memory is on, ``gpuhost.gpus[mem.device_id]``.

        Returns
        -------
        gpuhost.Device

        Examples
        --------
        >>> from gpuhost import memory
        >>> with gpuhost.gpus[1]:
        ...     m = memory.Memory(256)
        >>> m.device is gpuhost.gpus[1]
        True
        """
        return _core.get_device(self.device_id)

    def __int__(self):
        return self.ptr

    def __repr__(self):
        return "<%s 0x%x size=%d device=%d>" % (type(self).__name__, self.ptr, self.size,
                                                self.device_id)


class Memory(BaseMemory):
    """Device memory of its own on the current device, freed when the object dies.

    The memory comes from the driver (cuMemAlloc), not from a pool: it is what
    ``set_allocator(None)`` hands out. Wrap it in a `MemoryPointer` to copy to and from it.

    Parameters
    ----------
    size : int
        Bytes to allocate; 0 allocates nothing (``ptr`` is 0).

    Raises
    ------
    CudaOutOfMemoryError
        The device has no memory left.

    Examples
    --------
    >>> from gpuhost import memory
    >>> m = memory.Memory(1024)
    >>> m.size, m.device_id, m.ptr != 0
    (1024, 0, True)
    >>> p = memory.MemoryPointer(m, 0)
    >>> p.memset(0, 1024)
    """

    __slots__ = ()

    def __init__(self, size):
        ctx = _core.current_context()
        self._owner = _plain_pool(ctx).allocate(size) if size > 0 else None
        self.ptr = self._owner.ptr if size > 0 else 0
        self.size, self.device_id, self.context = size, ctx.device.id, ctx


class ManagedMemory(BaseMemory):
    """Managed (unified) memory, freed when the object dies.

    Allocated with cuMemAllocManaged on the current device: the driver migrates its pages
    between the host and the devices as they are touched; `prefetch` and `advise` steer
    that. `malloc_managed` returns it inside a `MemoryPointer`.

    Parameters
    ----------
    size : int
        Bytes to allocate; 0 allocates nothing (``ptr`` is 0).

    Raises
    ------
    CudaOutOfMemoryError
        No managed memory left.

    Examples
    --------
    >>> from gpuhost import memory
    >>> m = memory.ManagedMemory(4096)
    >>> m.size, m.device_id
    (4096, 0)
    >>> m.prefetch(None)               # to its own device, on the default stream
    """

    __slots__ = ()

    def __init__(self, size):
        ctx = _core.current_context()
        self._owner = _core.mem_alloc(size, "managed") if size > 0 else None
        self.ptr = self._owner.ptr if size > 0 else 0
        self.size, self.device_id, self.context = size, ctx.device.id, ctx

    def prefetch(self, stream, *, device_id=-2):
        """Queue migrating the memory to a device, or to the host, on `stream`.

        cuMemPrefetchAsync: the pages move before kernels (or the host) touch them,
        instead of faulting in one by one.

        Parameters
        ----------
        stream : gpuhost.Stream or None
            The stream the migration is ordered on; None is the legacy default stream.
        device_id : int, optional
            Where to: a device ordinal, -1 for the host; by default (-2) the memory's
            own device.

        Raises
        ------
        CudaAPIError
            `device_id` names no device.

        Examples
        --------
        >>> from gpuhost import memory
        >>> m = memory.ManagedMemory(4096)
        >>> m.prefetch(None, device_id=-1)  # to the host
        >>> m.prefetch(None)                # back to device 0
        """
        if device_id == -2:
            device_id = self.device_id
        _core.mem_prefetch(self.ptr, self.size, device_id, self._stream_arg(stream))

    def advise(self, advise, dev):
        """Tell the driver how a device (or the host) uses the memory (cuMemAdvise).

        Parameters
        ----------
        advise : int
            A CU_MEM_ADVISE_* number: 1 set read-mostly, 2 unset read-mostly, 3 set
            preferred location, 4 unset preferred location, 5 set accessed-by, 6 unset
            accessed-by.
        dev : gpuhost.Device or int
            The device the advice is about, or its ordinal; -1 for the host.

        Raises
        ------
        CudaAPIError
            `advise` is no such advice, or `dev` no such device.

        Examples
        --------
        >>> from gpuhost import memory
        >>> m = memory.ManagedMemory(4096)
        >>> m.advise(1, 0)                 # read-mostly: each device keeps a copy
        >>> m.advise(3, gpuhost.gpus[0])   # preferred location: device 0
        """
        _core.mem_advise(self.ptr, self.size, advise, dev if isinstance(dev, int) else dev.id)

    @staticmethod
    def _stream_arg(stream):
        return stream


class MemoryAsync(BaseMemory):
    """Memory from the driver's stream-ordered pool, freed on its stream when it dies.

    Allocated with cuMemAllocAsync on `stream` from the current device's default memory
    pool, and freed with cuMemFreeAsync on the same stream: work queued on that stream
    before the free still sees the memory. `malloc_async` and `MemoryAsyncPool` hand it
    out inside a `MemoryPointer`.

    Parameters
    ----------
    size : int
        Bytes to allocate; 0 allocates nothing (``ptr`` is 0).
    stream : gpuhost.Stream, optional
        The stream it is allocated and freed on; None (the default) is the legacy default
        stream.

    Raises
    ------
    CudaOutOfMemoryError
        The device has no memory left.

    Examples
    --------
    >>> from gpuhost import memory
    >>> s = gpuhost.stream()
    >>> m = memory.MemoryAsync(1024, s)
    >>> m.size, m.stream is s, m.stream_ref() is s
    (1024, True, True)
    """

    __slots__ = {
        "stream": """The stream the memory was allocated on and is freed on.

        None for the legacy default stream.

        Examples
        --------
        >>> from gpuhost import memory
        >>> s = gpuhost.stream()
        >>> memory.MemoryAsync(1024, s).stream is s
        True
        >>> print(memory.MemoryAsync(1024).stream)
        None
        """,
    }

    def __init__(self, size, stream=None):
        ctx = _core.current_context()
        self._owner = _async_pool(ctx).allocate(size, self._stream_arg(stream)) \
            if size > 0 else None
        self.ptr = self._owner.ptr if size > 0 else 0
        self.size, self.device_id, self.context, self.stream = size, ctx.device.id, ctx, stream

    @staticmethod
    def _stream_arg(stream):
        return stream

    def stream_ref(self):
        """The stream the memory was allocated on, as CuPy's ``stream_ref()`` gives it.

        CuPy keeps a weak reference to the stream, to be called; here the memory keeps
        its stream alive (the free is queued on it), so this returns the stream itself,
        the same as ``stream``.

        Returns
        -------
        gpuhost.Stream or None
            None for the legacy default stream.

        Examples
        --------
        >>> from gpuhost import memory
        >>> s = gpuhost.stream()
        >>> m = memory.MemoryAsync(1024, s)
        >>> m.stream_ref() is s is m.stream
        True
        """
        return self.stream


class UnownedMemory(BaseMemory):
    """Device memory someone else owns, kept alive by holding its owner.

    For handing memory allocated elsewhere (another library's buffer, a device array) to
    CuPy-style code as a `MemoryPointer`: nothing is freed when it dies, but `owner`
    lives at least as long.

    Parameters
    ----------
    ptr : int
        The device address of the first byte.
    size : int
        The size in bytes.
    owner : object
        What keeps the memory alive; held until this object dies.
    device_id : int, optional
        The device the memory is on; by default (-1) the current device.

    Raises
    ------
    RuntimeError
        `ptr` is 0 and no `device_id` was given.

    Examples
    --------
    >>> from gpuhost import memory
    >>> d = gpuhost.to_device(np.arange(4, dtype=np.float32))
    >>> m = memory.UnownedMemory(d.device_ctypes_pointer.value, d.nbytes, d)
    >>> out = np.empty(4, np.float32)
    >>> memory.MemoryPointer(m, 0).copy_to_host(out.ctypes.data, out.nbytes)
    >>> out
    array([0., 1., 2., 3.], dtype=float32)
    """

    __slots__ = ()

    def __init__(self, ptr, size, owner, device_id=-1):
        ctx = _core.current_context()
        if device_id < 0:
            if ptr == 0:
                raise RuntimeError("UnownedMemory requires an explicit device ID for a null "
                                   "pointer.")
            device_id = ctx.device.id
        self.ptr, self.size, self.device_id, self._owner = ptr, size, device_id, owner
        self.context = ctx if ctx.device.id == device_id else \
            _core.get_device(device_id).get_primary_context()


class PooledMemory(BaseMemory):
    """Memory a `MemoryPool` handed out, as CuPy types it; not made directly.

    What the pool hands out is its own `Allocation` (that keeps ``malloc`` fast);
    ``isinstance(mem, PooledMemory)`` is true of it. It has ``ptr``, ``size``,
    ``device_id``, ``pool`` and ``free()``, which gives the memory back to the pool now
    (``ptr`` becomes 0; a second ``free()`` does nothing). Otherwise the memory goes back
    when the last reference to it dies.

    Raises
    ------
    TypeError
        On ``PooledMemory(...)``: only a pool makes it.

    Examples
    --------
    >>> from gpuhost import memory
    >>> pool = memory.MemoryPool()
    >>> p = pool.malloc(1000)
    >>> isinstance(p.mem, memory.PooledMemory)
    True
    >>> p.mem.free()
    >>> pool.used_bytes(), pool.n_free_blocks()
    (0, 1)
    """

    __slots__ = ()

    def __new__(cls, *args, **kwargs):
        raise TypeError("PooledMemory is what MemoryPool.malloc() hands out, not made directly")


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


# ---- allocators ----

_plain_pools = {}  # Context -> Pool(mode="plain"): memory of its own, for Memory
_async_pools = {}  # Context -> Pool(mode="driver"), for MemoryAsync / malloc_async


def _pools_display(title, pools):
    """(caption, header, rows) of a table with one row per device's Pool in `pools`."""
    rows = []
    for pool in pools:
        dev = pool.context.device
        rows.append(("%d (%s)" % (dev.id, dev.name), _core.format_bytes(pool.used_bytes),
                     pool.n_used_blocks, _core.format_bytes(pool.free_bytes),
                     pool.n_free_blocks, _core.format_bytes(pool.limit) if pool.limit else "none"))
    return title, ("device", "in use", "blocks in use", "held", "blocks held", "limit"), rows


def _pools_pretty_rows(pools):
    """(label, value) rows, one per device's Pool in `pools`, for _repr_pretty_."""
    _title, header, rows = _pools_display(None, pools)
    return [("device " + row[0], ", ".join("%s: %s" % (h, v) for h, v in zip(header[1:], row[1:])))
            for row in rows]


def _pool_for(pools, ctx, mode):
    pool = pools.get(ctx)
    if pool is None:
        with ctx.device:
            pool = pools[ctx] = _core.Pool("device", mode)
    return pool


def _plain_pool(ctx):
    return _pool_for(_plain_pools, ctx, "plain")


def _async_pool(ctx):
    return _pool_for(_async_pools, ctx, "driver")


@_unbound  # a builtin in CuPy: it does not bind as a method
def _malloc(size):
    """Device memory without a pool (what set_allocator(None) selects)."""
    return MemoryPointer(Memory(size), 0)


@_unbound  # a builtin in CuPy: it does not bind as a method
def malloc_managed(size):
    """A MemoryPointer to `size` bytes of managed (unified) memory (CuPy's).

    The memory is a `ManagedMemory` of the current device, reachable from the host and
    from every device; the driver migrates it as it is touched. Pass it to
    ``MemoryPool(malloc_managed)`` to pool managed memory.

    Parameters
    ----------
    size : int
        Bytes to allocate.

    Returns
    -------
    MemoryPointer
        Its ``mem`` is the ManagedMemory, freed when the last pointer to it dies.

    Raises
    ------
    CudaOutOfMemoryError
        No managed memory left.

    Examples
    --------
    >>> from gpuhost import memory
    >>> p = memory.malloc_managed(1 << 20)
    >>> type(p.mem).__name__, p.mem.size
    ('ManagedMemory', 1048576)
    """
    return MemoryPointer(ManagedMemory(size), 0)


@_unbound  # a builtin in CuPy: it does not bind as a method
def malloc_async(size, stream=None):
    """A MemoryPointer to `size` bytes from the driver's stream-ordered pool (CuPy's).

    The memory (a `MemoryAsync`) is allocated on `stream` with cuMemAllocAsync and freed
    on it with cuMemFreeAsync when the last pointer to it dies.

    Parameters
    ----------
    size : int
        Bytes to allocate.
    stream : gpuhost.Stream, optional
        The stream it is allocated and freed on; None (the default) is the legacy default
        stream.

    Returns
    -------
    MemoryPointer

    Raises
    ------
    CudaOutOfMemoryError
        The device has no memory left.

    Examples
    --------
    >>> from gpuhost import memory
    >>> s = gpuhost.stream()
    >>> p = memory.malloc_async(4096, s)
    >>> p.memset_async(0, 4096, s)
    >>> type(p.mem).__name__
    'MemoryAsync'
    """
    return MemoryPointer(MemoryAsync(size, stream), 0)


class MemoryPool:
    """A caching pool of device memory, for every device (CuPy's MemoryPool).

    Freed blocks are kept and handed out again instead of going back to the driver. The
    pool holds one gpuhost `Pool` per device, made on that device's first use; its
    methods act on the current device's. Blocks come in gpuhost's size classes (512
    bytes, then 8 classes per doubling), and reuse is ordered by stream as in the default
    pool. ``set_allocator(pool.malloc)`` makes device arrays allocate from it.

    Parameters
    ----------
    allocator : callable, optional
        ``allocator(size)`` makes a new block: it returns an object with an int ``.ptr``,
        such as a MemoryPointer (`malloc_managed` pools managed memory). By default the
        driver's cuMemAlloc.

    Examples
    --------
    >>> from gpuhost import memory
    >>> pool = memory.MemoryPool()
    >>> p = pool.malloc(1000)              # rounded up to its size class
    >>> pool.used_bytes(), pool.free_bytes()
    (1024, 0)
    >>> del p                              # back to the pool, not to the driver
    >>> pool.used_bytes(), pool.free_bytes(), pool.n_free_blocks()
    (0, 1024, 1)
    >>> pool.free_all_blocks()
    >>> pool.total_bytes()
    0
    """

    def __init__(self, allocator=None):
        self._allocator = None if allocator is _malloc else allocator
        self._pools = {}  # Context -> _core.Pool

    def _make(self, ctx):
        with ctx.device:
            return _core.Pool("device", "cache", allocator=self._allocator)

    def _pool(self):
        ctx = _core.current_context()
        try:
            return self._pools[ctx]
        except KeyError:
            pool = self._pools[ctx] = self._make(ctx)
            return pool

    def malloc(self, size, stream=None):
        """A MemoryPointer to `size` bytes on the current device, reused if the pool
        holds a block of its size class.

        Parameters
        ----------
        size : int
            Bytes to allocate.
        stream : gpuhost.Stream, optional
            The stream the block's use is ordered on: a block freed on another stream is
            reused only once that stream has reached the free. None (the default) is the
            legacy default stream.

        Returns
        -------
        MemoryPointer
            Its ``mem`` is a `PooledMemory` (a plain `Memory` for size 0); the block goes
            back to the pool when the last reference to it dies.

        Raises
        ------
        OutOfMemoryError
            The pool would grow past its limit (`set_limit`), or the device has no memory
            left even after the pool gave its free blocks back.

        Examples
        --------
        >>> from gpuhost import memory
        >>> pool = memory.MemoryPool()
        >>> p = pool.malloc(4096)
        >>> p.mem.size, isinstance(p.mem, memory.PooledMemory)
        (4096, True)
        """
        return self._allocate(size, stream)
    _pointer = None  # the MemoryPointer class handed out (set below)

    def _allocate(self, size, stream, _current_context=_core.current_context):
        try:
            pool = self._pools[_current_context()]
        except KeyError:
            pool = self._pool()
        if size == 0:
            return self._pointer(Memory(0), 0)
        try:
            return pool.allocate_pointer(size, stream, self._pointer)
        except CudaOutOfMemoryError as e:
            raise OutOfMemoryError(size, pool.total_bytes, pool.limit) from e

    def free_all_blocks(self, stream=None):
        """Give the blocks held for reuse on the current device back to the driver.

        Parameters
        ----------
        stream : gpuhost.Stream, optional
            Only the blocks last freed on this stream; by default all of them.

        Examples
        --------
        >>> from gpuhost import memory
        >>> pool = memory.MemoryPool()
        >>> p = pool.malloc(1 << 20)
        >>> del p
        >>> pool.n_free_blocks()
        1
        >>> pool.free_all_blocks()
        >>> pool.n_free_blocks()
        0
        """
        self._pool().free_all_blocks(stream)

    def free_all_free(self):
        """Give the held blocks back to the driver, a deprecated alias of `free_all_blocks`.

        Kept for CuPy's old name; it frees every held block of the current device.

        Warns
        -----
        DeprecationWarning
            Always: use `free_all_blocks`.

        Examples
        --------
        >>> import warnings
        >>> from gpuhost import memory
        >>> pool = memory.MemoryPool()
        >>> p = pool.malloc(1024)
        >>> del p
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     pool.free_all_free()
        >>> caught[0].category.__name__, pool.n_free_blocks()
        ('DeprecationWarning', 0)
        """
        warnings.warn("free_all_free is deprecated. Use free_all_blocks instead.",
                      DeprecationWarning, stacklevel=2)
        self.free_all_blocks()

    def n_free_blocks(self):
        """The number of blocks held for reuse on the current device.

        Returns
        -------
        int

        Examples
        --------
        >>> from gpuhost import memory
        >>> pool = memory.MemoryPool()
        >>> a, b = pool.malloc(1000), pool.malloc(5000)
        >>> pool.n_free_blocks()
        0
        >>> del a, b                           # both kept for reuse
        >>> pool.n_free_blocks()
        2
        >>> c = pool.malloc(900)               # reuses the 1024-byte block
        >>> pool.n_free_blocks()
        1
        """
        return self._pool().n_free_blocks

    def used_bytes(self):
        """Bytes of the current device's blocks in use (handed out, not freed yet).

        Counted by size class: a 1000-byte request counts 1024.

        Returns
        -------
        int

        Examples
        --------
        >>> from gpuhost import memory
        >>> pool = memory.MemoryPool()
        >>> p = pool.malloc(1000)
        >>> pool.used_bytes()
        1024
        >>> with gpuhost.gpus[1]:              # another device: its own blocks
        ...     pool.used_bytes()
        0
        >>> del p
        >>> pool.used_bytes()
        0
        """
        return self._pool().used_bytes

    def free_bytes(self):
        """Bytes of the current device's blocks held for reuse.

        Returns
        -------
        int

        Examples
        --------
        >>> from gpuhost import memory
        >>> pool = memory.MemoryPool()
        >>> p = pool.malloc(1 << 20)
        >>> pool.free_bytes()
        0
        >>> del p
        >>> pool.free_bytes()
        1048576
        >>> pool.free_all_blocks()
        >>> pool.free_bytes()
        0
        """
        return self._pool().free_bytes

    def total_bytes(self):
        """All the bytes the pool has of the current device, ``used_bytes() + free_bytes()``.

        Returns
        -------
        int

        Examples
        --------
        >>> from gpuhost import memory
        >>> pool = memory.MemoryPool()
        >>> a, b = pool.malloc(4096), pool.malloc(4096)
        >>> del a
        >>> pool.used_bytes(), pool.free_bytes(), pool.total_bytes()
        (4096, 4096, 8192)
        """
        return self._pool().total_bytes

    def set_limit(self, size=None, fraction=None):
        """Limit the bytes the pool takes from the current device (in use and held).

        A `malloc` that would take the pool past the limit raises `OutOfMemoryError`.
        Give `size` or `fraction`, not both; neither (or 0) removes the limit.

        Parameters
        ----------
        size : int, optional
            The limit in bytes.
        fraction : float, optional
            The limit as a fraction (0 to 1) of the device's total memory.

        Raises
        ------
        ValueError
            Both given, a negative `size`, or a `fraction` outside [0, 1].

        Examples
        --------
        >>> from gpuhost import memory
        >>> pool = memory.MemoryPool()
        >>> pool.set_limit(size=1 << 30)
        >>> pool.get_limit()
        1073741824
        >>> pool.set_limit(fraction=0.5)
        >>> pool.get_limit() == gpuhost.gpus[0].total_memory // 2
        True
        >>> pool.set_limit()               # no limit
        >>> pool.get_limit()
        0
        """
        self._pool().limit = _limit_size(size, fraction)

    def get_limit(self):
        """The current device's limit in bytes, as `set_limit` set it; 0 for none.

        Returns
        -------
        int

        Examples
        --------
        >>> from gpuhost import memory
        >>> pool = memory.MemoryPool()
        >>> pool.get_limit()                   # none by default
        0
        >>> pool.set_limit(size=1 << 20)
        >>> pool.get_limit()
        1048576
        >>> with gpuhost.gpus[1]:              # each device has its own
        ...     pool.get_limit()
        0
        """
        return self._pool().limit

    def _repr_html_(self):
        """An HTML table of the pool's statistics, one row per device it has used."""
        return _core.html_table(*_pools_display(type(self).__name__, self._pools.values()))

    def _repr_pretty_(self, p, cycle):
        """IPython's pretty printer: the repr, then one line per device the pool has used."""
        _core.pretty(p, cycle, self, _pools_pretty_rows(self._pools.values()))


MemoryPool._pointer = MemoryPointer


class _DefaultMemoryPool(MemoryPool):
    """The contexts' default pools: the memory of device_array() and to_device()."""

    def _make(self, ctx):
        return _core.default_pool(ctx)


_default_pool = _DefaultMemoryPool()
_current_allocator = _default_pool.malloc


_UINT64_MAX = (1 << 64) - 1


def _limit_size(size, fraction):
    """The limit in bytes set_limit(size, fraction) asks for (0: none), checked as CuPy."""
    if size is None:
        if fraction is None:
            return 0
        if not 0 <= fraction <= 1:
            raise ValueError("memory limit fraction out of range: %r" % (fraction,))
        return int(fraction * _core.current_context().get_memory_info().total)
    if fraction is not None:
        raise ValueError("size and fraction cannot be specified at one time")
    if size < 0:
        raise ValueError("memory limit size out of range: %r" % (size,))
    return int(size)


class MemoryAsyncPool:
    """CuPy's pool over the driver's stream-ordered allocator, for every device.

    Blocks come from each device's default memory pool with cuMemAllocAsync, and go back
    with cuMemFreeAsync on the stream they were allocated on; ``set_allocator(
    MemoryAsyncPool().malloc)`` makes device arrays use it. Its statistics are the
    driver pool's (`used_bytes`: in use, `total_bytes`: reserved), so they count every
    user of that pool in the process. Its limit is the pool's release threshold, a soft
    limit: memory the pool keeps past it goes back at synchronization; unless set it is
    2**64 - 1 (keep everything). `n_free_blocks` is not known for the driver's pool.

    Parameters
    ----------
    pool_handles : {"current", "default"}, optional
        Which of the device's pools: both are its default pool here.

    Raises
    ------
    NotImplementedError
        Any other `pool_handles`.

    Examples
    --------
    >>> from gpuhost import memory
    >>> pool = memory.MemoryAsyncPool()
    >>> p = pool.malloc(1000)
    >>> p.mem.size                         # rounded up to 512-byte units
    1024
    >>> pool.used_bytes() >= 1024          # the driver pool's, for the whole process
    True
    >>> pool.get_limit() == 2**64 - 1
    True
    """

    def __init__(self, pool_handles="current"):
        if pool_handles not in ("current", "default"):
            raise NotImplementedError("MemoryAsyncPool uses each device's default memory pool; "
                                      "pool_handles must be 'current' or 'default', not %r"
                                      % (pool_handles,))
        self._configured = set()  # devices whose limit was set up (set_limit(0) at first use)

    def _device(self):
        dev = _core.current_context().device.id
        if dev not in self._configured:
            self._configured.add(dev)
            _core.mempool_attribute(dev, "release_threshold", _UINT64_MAX)
        return dev

    def malloc(self, size, stream=None):
        """A MemoryPointer to `size` bytes (rounded up to 512) on the current device.

        Parameters
        ----------
        size : int
            Bytes to allocate.
        stream : gpuhost.Stream, optional
            The stream it is allocated and freed on; None (the default) is the legacy
            default stream.

        Returns
        -------
        MemoryPointer
            Its ``mem`` is a `MemoryAsync`.

        Raises
        ------
        OutOfMemoryError
            The pool would grow past its limit, or the device has no memory left.

        Examples
        --------
        >>> from gpuhost import memory
        >>> s = gpuhost.stream()
        >>> p = memory.MemoryAsyncPool().malloc(100, s)
        >>> p.mem.size, p.mem.stream is s
        (512, True)
        """
        if size == 0:
            return self._pointer(self._memory(0, stream), 0)
        rounded = -(-size // _allocation_unit_size) * _allocation_unit_size
        total, limit = self.total_bytes(), 0
        if total - self.used_bytes() < rounded:
            limit = self.get_limit()
            if max(limit, total) < total + rounded:
                raise OutOfMemoryError(size, total, limit)
        try:
            return self._pointer(self._memory(rounded, stream), 0)
        except CudaOutOfMemoryError as e:
            raise OutOfMemoryError(size, total, limit) from e

    _pointer = MemoryPointer
    _memory = MemoryAsync

    def free_all_blocks(self, stream=None):
        """Give the current device's pool's unused memory back to the device.

        Waits for the work queued so far (frees queued on streams included), then trims
        the driver's pool (cuMemPoolTrimTo): what it keeps reserved and unused goes back,
        whoever freed it.

        Parameters
        ----------
        stream : gpuhost.Stream, optional
            Ignored; accepted for CuPy's signature.

        Examples
        --------
        >>> from gpuhost import memory
        >>> pool = memory.MemoryAsyncPool()
        >>> p = pool.malloc(1 << 20)
        >>> del p                              # its free is queued on its stream
        >>> pool.free_all_blocks()
        >>> pool.free_bytes() < 1 << 20
        True
        """
        _async_pool(_core.current_context()).free_all_blocks()

    def n_free_blocks(self):
        """The number of free blocks, which the driver's pool does not tell.

        Raises
        ------
        NotImplementedError
            Always, as CuPy's.

        Examples
        --------
        >>> from gpuhost import memory
        >>> try:
        ...     memory.MemoryAsyncPool().n_free_blocks()
        ... except NotImplementedError as e:
        ...     print(e)
        This function is not supported in MemoryAsyncPool
        """
        raise NotImplementedError("This function is not supported in MemoryAsyncPool")

    def used_bytes(self):
        """Bytes of the current device's pool in use, by every user in the process.

        The driver pool's CU_MEMPOOL_ATTR_USED_MEM_CURRENT: memory allocated from it and
        not freed yet (a free queued on a stream counts until the stream reaches it).

        Returns
        -------
        int

        Examples
        --------
        >>> from gpuhost import memory
        >>> pool = memory.MemoryAsyncPool()
        >>> before = pool.used_bytes()
        >>> p = pool.malloc(1000)
        >>> pool.used_bytes() - before         # rounded up to 512-byte units
        1024
        >>> del p
        >>> gpuhost.synchronize()              # the free has run
        >>> pool.used_bytes() - before
        0
        """
        return _core.mempool_attribute(self._device(), "used_current")

    def total_bytes(self):
        """Bytes the current device's pool has reserved from the device.

        The driver pool's CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: the memory in use and
        what the pool keeps for reuse.

        Returns
        -------
        int

        Examples
        --------
        >>> from gpuhost import memory
        >>> pool = memory.MemoryAsyncPool()
        >>> p = pool.malloc(4096)
        >>> pool.total_bytes() >= pool.used_bytes() >= 4096
        True
        """
        return _core.mempool_attribute(self._device(), "reserved_current")

    def free_bytes(self):
        """Bytes the current device's pool keeps for reuse, ``total_bytes() - used_bytes()``.

        Returns
        -------
        int

        Examples
        --------
        >>> from gpuhost import memory
        >>> pool = memory.MemoryAsyncPool()
        >>> p = pool.malloc(1 << 20)
        >>> del p
        >>> gpuhost.synchronize()              # the free has run: the pool keeps it
        >>> pool.free_bytes() >= 1 << 20
        True
        >>> pool.free_bytes() == pool.total_bytes() - pool.used_bytes()
        True
        """
        return self.total_bytes() - self.used_bytes()

    def set_limit(self, size=None, fraction=None):
        """Set the current device's soft limit: the pool's release threshold.

        Parameters
        ----------
        size : int, optional
            The limit in bytes.
        fraction : float, optional
            The limit as a fraction (0 to 1) of the device's total memory. Neither (or 0)
            removes the limit.

        Raises
        ------
        ValueError
            Both given, a negative `size`, or a `fraction` outside [0, 1].

        Examples
        --------
        >>> from gpuhost import memory
        >>> pool = memory.MemoryAsyncPool()
        >>> pool.set_limit(size=1 << 30)
        >>> pool.get_limit()
        1073741824
        >>> pool.set_limit()
        >>> pool.get_limit() == 2**64 - 1
        True
        """
        size = _limit_size(size, fraction)
        _core.mempool_attribute(self._device(), "release_threshold", size or _UINT64_MAX)

    def get_limit(self):
        """The current device's soft limit in bytes, the pool's release threshold.

        The driver pool's CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, shared by every user of the
        pool; 2**64 - 1 when no limit is set.

        Returns
        -------
        int

        Examples
        --------
        >>> from gpuhost import memory
        >>> pool = memory.MemoryAsyncPool()
        >>> pool.get_limit() == 2**64 - 1      # no limit
        True
        >>> pool.set_limit(size=1 << 30)
        >>> pool.get_limit()
        1073741824
        >>> pool.set_limit()
        """
        return _core.mempool_attribute(self._device(), "release_threshold")


def get_default_memory_pool():
    """The default MemoryPool: the one device arrays allocate from (CuPy's).

    Its blocks are those of the contexts' default pools, the memory of `device_array`,
    `to_device` and the other array functions, so its statistics count device arrays
    too. ``set_allocator(get_default_memory_pool().malloc)`` restores the default
    allocator.

    Returns
    -------
    MemoryPool

    Examples
    --------
    >>> from gpuhost import memory
    >>> pool = memory.get_default_memory_pool()
    >>> before = pool.used_bytes()
    >>> d = gpuhost.device_array(1024, np.uint8)
    >>> pool.used_bytes() - before
    1024
    """
    return _default_pool


def _array_allocator(allocator):
    """What device_array() calls for `allocator`: None (the C default pool), or
    fn(nbytes, stream) -> (owner, address)."""
    pool = getattr(allocator, "__self__", None)
    if isinstance(pool, MemoryPool) and getattr(allocator, "__name__", None) == "malloc":
        if isinstance(pool, _DefaultMemoryPool):
            return None

        def from_pool(nbytes, stream):
            p = pool._allocate(nbytes, stream)
            return p, p.ptr
        return from_pool

    def from_allocator(nbytes, stream):
        p = allocator(nbytes)
        return p, int(p.ptr)
    return from_allocator


class _ThreadAllocator(threading.local):
    allocator = None  # this thread's using_allocator() allocator, as get_allocator() gives it


_thread = _ThreadAllocator()


@_unbound  # a builtin in CuPy: it does not bind as a method
def set_allocator(allocator=None):
    """Set the allocator of `alloc` and of device arrays, for every thread (CuPy's).

    From then on `device_array`, `to_device` and the other array functions take their
    memory from ``allocator(size)``; arrays made before keep theirs. A `MemoryPool`'s
    ``malloc`` is called directly (it keeps its speed); CuPy's own pools work too.

    Parameters
    ----------
    allocator : callable or None, optional
        ``allocator(size)`` returns an object with an int ``.ptr`` (a MemoryPointer, say)
        that keeps the memory alive. None (the default) allocates each array's memory
        from the driver, without a pool. ``get_default_memory_pool().malloc`` restores
        the default.

    Raises
    ------
    TypeError
        `allocator` is not callable.
    ValueError
        Inside a `using_allocator` block, as CuPy's.

    Examples
    --------
    >>> from gpuhost import memory
    >>> pool = memory.MemoryPool()
    >>> memory.set_allocator(pool.malloc)
    >>> d = gpuhost.device_array(1000, np.uint8)
    >>> pool.used_bytes()
    1024
    >>> memory.set_allocator(memory.get_default_memory_pool().malloc)
    """
    global _current_allocator
    if allocator is None:
        allocator = _malloc
    if not callable(allocator):
        raise TypeError("allocator must be callable, not %s" % type(allocator).__name__)
    if _thread.allocator is not None:
        raise ValueError("Can't change the global allocator inside `using_allocator` context "
                         "manager")
    _core.set_array_allocator(_array_allocator(allocator))
    _current_allocator = allocator


@_unbound  # a builtin in CuPy: it does not bind as a method
def get_allocator():
    """The current allocator (CuPy's): this thread's `using_allocator` one, else the one
    `set_allocator` set.

    Returns
    -------
    callable
        ``allocator(size)``, returning a MemoryPointer (or what the allocator set
        returns).

    Examples
    --------
    >>> from gpuhost import memory
    >>> memory.get_allocator() == memory.get_default_memory_pool().malloc
    True
    """
    allocator = _thread.allocator
    return _current_allocator if allocator is None else allocator


@contextlib.contextmanager
def using_allocator(allocator=None):
    """A context manager: this thread's allocator, for the block (CuPy's).

    Inside the block `alloc` and the device arrays this thread makes take their memory
    from `allocator`; other threads keep theirs, and the previous one comes back at the
    end. Blocks nest.

    Parameters
    ----------
    allocator : callable or None, optional
        As for `set_allocator`; None (the default) is memory without a pool.

    Raises
    ------
    TypeError
        `allocator` is not callable.

    Examples
    --------
    >>> from gpuhost import memory
    >>> pool = memory.MemoryPool()
    >>> with memory.using_allocator(pool.malloc):
    ...     d = gpuhost.device_array(4096, np.uint8)
    ...     p = memory.alloc(512)
    >>> pool.used_bytes()
    4608
    >>> memory.get_allocator() == pool.malloc
    False
    """
    if allocator is None:
        allocator = _malloc
    if not callable(allocator):
        raise TypeError("allocator must be callable, not %s" % type(allocator).__name__)
    prev, prev_for_arrays = _thread.allocator, _core.thread_array_allocator()
    _core.set_thread_array_allocator(_array_allocator(allocator))
    _thread.allocator = allocator
    try:
        yield
    finally:
        _thread.allocator = prev
        _core.set_thread_array_allocator(*prev_for_arrays)


@_unbound  # a builtin in CuPy: it does not bind as a method
def alloc(size):
    """A MemoryPointer to `size` bytes of device memory from the current allocator
    (CuPy's).

    The allocator is this thread's `using_allocator` one, else the one `set_allocator`
    set (by default the default pool's ``malloc``).

    Parameters
    ----------
    size : int
        Bytes to allocate.

    Returns
    -------
    MemoryPointer
        Or whatever the allocator returns.

    Raises
    ------
    OutOfMemoryError
        The allocator's pool is out of memory (its limit, or the device's).

    Examples
    --------
    >>> from gpuhost import memory
    >>> h = np.arange(256, dtype=np.uint8)
    >>> p = memory.alloc(h.nbytes)
    >>> p.copy_from_host(h.ctypes.data, h.nbytes)
    >>> out = np.empty_like(h)
    >>> p.copy_to_host(out.ctypes.data, out.nbytes)
    >>> bool((out == h).all())
    True
    """
    return get_allocator()(size)


class PythonFunctionAllocator:
    """An allocator made of two Python functions (CuPy's).

    Its ``malloc`` is the allocator to pass to `set_allocator`, `using_allocator` or
    `MemoryPool`.

    Parameters
    ----------
    malloc_func : callable
        ``malloc_func(size, device_id)`` allocates `size` bytes on device `device_id` and
        returns the device address, an int.
    free_func : callable
        ``free_func(ptr, device_id)`` frees what `malloc_func` returned; called when the
        memory dies.

    Examples
    --------
    >>> from gpuhost import memory
    >>> live = {}
    >>> def my_malloc(size, device_id):
    ...     m = memory.Memory(size)
    ...     live[m.ptr] = m
    ...     return m.ptr
    >>> def my_free(ptr, device_id):
    ...     del live[ptr]
    >>> a = memory.PythonFunctionAllocator(my_malloc, my_free)
    >>> p = a.malloc(1024)
    >>> len(live)
    1
    >>> del p
    >>> len(live)
    0
    """

    def __init__(self, malloc_func, free_func):
        self._malloc, self._free = malloc_func, free_func

    def malloc(self, size):
        """A MemoryPointer to `size` bytes on the current device, from ``malloc_func``.

        ``malloc_func(size, device_id)`` is called now; ``free_func(ptr, device_id)`` when
        the memory (the last pointer into it) dies.

        Parameters
        ----------
        size : int
            Bytes to allocate; 0 calls neither function.

        Returns
        -------
        MemoryPointer

        Examples
        --------
        >>> from gpuhost import memory
        >>> calls = []
        >>> live = {}
        >>> def my_malloc(size, device_id):
        ...     m = live[0] = memory.Memory(size)
        ...     calls.append(("malloc", size, device_id))
        ...     return m.ptr
        >>> def my_free(ptr, device_id):
        ...     calls.append(("free", ptr == live.pop(0).ptr, device_id))
        >>> a = memory.PythonFunctionAllocator(my_malloc, my_free)
        >>> p = a.malloc(256)
        >>> p.mem.size, p.ptr == live[0].ptr
        (256, True)
        >>> del p
        >>> a.malloc(0).ptr                    # size 0: no call
        0
        >>> calls
        [('malloc', 256, 0), ('free', True, 0)]
        """
        return MemoryPointer(_PythonFunctionMemory(size, self._malloc, self._free), 0)


class _PythonFunctionMemory(BaseMemory):
    """Memory from a PythonFunctionAllocator's functions."""

    __slots__ = ("_free_func", "__weakref__")

    def __init__(self, size, malloc_func, free_func):
        ctx = _core.current_context()
        self.size, self.device_id, self.context, self._owner = size, ctx.device.id, ctx, None
        self.ptr = malloc_func(size, self.device_id) if size > 0 else 0
        self._free_func = free_func
        if self.ptr:
            weakref.finalize(self, free_func, self.ptr, self.device_id)


# ---- pinned memory ----

class PinnedMemory:
    """Page-locked (pinned) host memory of its own, freed when the object dies (CuPy's).

    Allocated with cuMemHostAlloc. ``ptr`` is its host address, ``size`` its size;
    wrap it in a `PinnedMemoryPointer` to view it as a numpy array.

    Parameters
    ----------
    size : int
        Bytes to allocate; 0 allocates nothing (``ptr`` is 0).
    flags : int, optional
        cuMemHostAlloc's flags: 1 portable (pinned for every context), 2 mapped into the
        device's address space, 4 write-combined. Default 0.

    Raises
    ------
    CudaOutOfMemoryError
        The driver could not page-lock that much host memory.

    Examples
    --------
    >>> from gpuhost import memory
    >>> m = memory.PinnedMemory(4096)
    >>> m.size, int(m) == m.ptr != 0
    (4096, True)
    >>> a = np.asarray(memory.PinnedMemoryPointer(m, 0))
    >>> a.shape, a.dtype
    ((4096,), dtype('uint8'))
    """

    __slots__ = {
        "ptr": """The host address of the first byte, an int (0 for size 0).

        The memory is the process's own: ctypes and numpy read and write it there.

        Examples
        --------
        >>> import ctypes
        >>> from gpuhost import memory
        >>> m = memory.PinnedMemory(64)
        >>> _ = ctypes.memset(m.ptr, 7, m.size)
        >>> np.asarray(memory.PinnedMemoryPointer(m, 0))[:4]
        array([7, 7, 7, 7], dtype=uint8)
        >>> int(m) == m.ptr, memory.PinnedMemory(0).ptr
        (True, 0)
        """,
        "size": """The size in bytes, as asked for.

        Examples
        --------
        >>> from gpuhost import memory
        >>> memory.PinnedMemory(4096).size
        4096
        >>> memory.PinnedMemoryPool().malloc(1000).mem.size   # its block holds 1024
        1000
        """,
        "_owner": "The Allocation that frees the memory when it dies.",
    }

    def __init__(self, size, flags=0):
        self.size = size
        self._owner = None
        self.ptr = 0
        if size > 0:
            kind = "mapped" if flags & 2 else "pinned"
            self._owner = _core.mem_alloc(size, kind, portable=bool(flags & 1),
                                          wc=bool(flags & 4))
            self.ptr = self._owner.host_ptr

    def __int__(self):
        return self.ptr


class PooledPinnedMemory(PinnedMemory):
    """Pinned memory a `PinnedMemoryPool` handed out; not made directly.

    `free` (or the object's death) gives it back to the pool; a second `free` does
    nothing.

    Examples
    --------
    >>> from gpuhost import memory
    >>> pool = memory.PinnedMemoryPool()
    >>> p = pool.malloc(4096)
    >>> type(p.mem).__name__
    'PooledPinnedMemory'
    >>> p.mem.free()
    >>> pool.n_free_blocks()
    1
    """

    __slots__ = ()

    @property
    def pool(self):
        """The gpuhost Pool the memory goes back to.

        The `PinnedMemoryPool`'s own pool of the device that was current at `malloc`,
        whose statistics count the memory.

        Examples
        --------
        >>> from gpuhost import memory
        >>> p = memory.PinnedMemoryPool().malloc(4096)
        >>> p.mem.pool
        <gpuhost.Pool of pinned memory on device 0, cache mode: 4096 bytes in use ...>
        >>> p.mem.pool.kind, p.mem.pool.used_bytes
        ('pinned', 4096)
        """
        return self._owner.pool

    def free(self):
        """Give the memory back to its pool now; ``ptr`` becomes 0.

        A second call does nothing. Without it the memory goes back when the object
        dies. The pool hands the block out again at once: synchronize first if an
        asynchronous copy still uses it.

        Examples
        --------
        >>> from gpuhost import memory
        >>> pool = memory.PinnedMemoryPool()
        >>> p = pool.malloc(4096)
        >>> p.mem.free()
        >>> p.mem.ptr, pool.used_bytes(), pool.free_bytes()
        (0, 0, 4096)
        >>> p.mem.free()                       # already free: nothing
        """
        if self.ptr:
            self.ptr = 0
            self._owner.free()

    @classmethod
    def _of(cls, allocation):
        self = object.__new__(cls)
        self._owner, self.size = allocation, allocation.size
        host = allocation.host_ptr
        self.ptr = host if host is not None else allocation.ptr
        return self


class PinnedMemoryPointer:
    """A pointer into pinned host memory, keeping that memory alive (CuPy's).

    What `alloc_pinned_memory` and `PinnedMemoryPool.malloc` return. ``mem`` is the
    memory, ``ptr`` a host address inside it; ``len(p)`` and ``p.size`` are the bytes from
    ``ptr`` to the end of ``mem``, and ``np.asarray(p)`` is a uint8 view of them
    (through ``__array_interface__``). Adding an int gives a pointer further along.

    Parameters
    ----------
    mem : ~gpuhost.memory.PinnedMemory
        The memory.
    offset : int
        Bytes from the start of `mem` to ``ptr``.

    Examples
    --------
    >>> from gpuhost import memory
    >>> p = memory.alloc_pinned_memory(16)
    >>> h = np.asarray(p).view(np.float32)
    >>> h[:] = [1, 2, 3, 4]
    >>> len(p), len(p + 8)
    (16, 8)
    >>> np.asarray(p + 8).view(np.float32)
    array([3., 4.], dtype=float32)
    """

    __slots__ = {
        "mem": """The pinned memory the pointer points into, kept alive by it.

        Pointers made from one another by adding an offset share it.

        Examples
        --------
        >>> from gpuhost import memory
        >>> p = memory.alloc_pinned_memory(64)
        >>> (p + 16).mem is p.mem, p.mem.size
        (True, 64)
        """,
        "ptr": """The host address the pointer holds, an int.

        ``mem.ptr`` plus the pointer's offset; ``int(p)`` is the same number.

        Examples
        --------
        >>> from gpuhost import memory
        >>> p = memory.alloc_pinned_memory(64)
        >>> q = p + 16
        >>> q.ptr - p.ptr, p.ptr == p.mem.ptr, int(q) == q.ptr
        (16, True, True)
        """,
        "__weakref__": None,
    }

    def __init__(self, mem, offset):
        self.mem, self.ptr = mem, _host_ptr(mem) + offset

    def __int__(self):
        return self.ptr

    def __add__(self, offset):
        if not isinstance(offset, int):
            return NotImplemented
        return PinnedMemoryPointer(self.mem, self.ptr - _host_ptr(self.mem) + offset)

    __radd__ = __add__

    def __sub__(self, offset):
        return self + -offset

    def __len__(self):
        return _host_ptr(self.mem) + self.mem.size - self.ptr

    @property
    def size(self):
        """The bytes from ``ptr`` to the end of ``mem``, ``len(p)``.

        Examples
        --------
        >>> from gpuhost import memory
        >>> p = memory.alloc_pinned_memory(64)
        >>> p.size, (p + 16).size, len(p + 16)
        (64, 48, 48)
        """
        return len(self)

    @property
    def __array_interface__(self):
        return {"shape": (len(self),), "typestr": "|u1", "data": (self.ptr, False),
                "version": 3}

    def __repr__(self):
        return "<PinnedMemoryPointer 0x%x size=%d>" % (self.ptr, len(self))


def _host_ptr(mem):
    ptr = getattr(mem, "host_ptr", None)
    return ptr if ptr is not None else mem.ptr


@_unbound  # a builtin in CuPy: it does not bind as a method
def _malloc_pinned(size):
    return PinnedMemoryPointer(PinnedMemory(size), 0)


class PinnedMemoryPool:
    """A caching pool of page-locked (pinned) host memory (CuPy's PinnedMemoryPool).

    Freed blocks are kept and handed out again, by size class. As with CuPy's, a block is
    reused as soon as it is freed: synchronize before dropping a buffer an asynchronous
    copy still uses. ``set_pinned_memory_allocator(pool.malloc)`` makes
    `alloc_pinned_memory` use it.

    Parameters
    ----------
    allocator : callable, optional
        ``allocator(size)`` makes a new block; by default cuMemHostAlloc.

    Examples
    --------
    >>> from gpuhost import memory
    >>> pool = memory.PinnedMemoryPool()
    >>> p = pool.malloc(1000)
    >>> pool.used_bytes(), pool.free_bytes()
    (1024, 0)
    >>> del p
    >>> pool.used_bytes(), pool.free_bytes(), pool.n_free_blocks()
    (0, 1024, 1)
    >>> pool.free_all_blocks()
    >>> pool.total_bytes()
    0
    """

    def __init__(self, allocator=None):
        self._allocator = None if allocator in (None, _malloc_pinned) else allocator
        self._pools = {}

    def _pool(self):
        ctx = _core.current_context()
        pool = self._pools.get(ctx)
        if pool is None:
            pool = self._pools[ctx] = _core.Pool("pinned", "cache", allocator=self._allocator)
        return pool

    def malloc(self, size):
        """A PinnedMemoryPointer to `size` bytes, reused if the pool holds a block of its
        size class.

        Parameters
        ----------
        size : int
            Bytes to allocate.

        Returns
        -------
        PinnedMemoryPointer
            Its ``mem`` is a `PooledPinnedMemory` (a plain `PinnedMemory` for size 0).

        Raises
        ------
        OutOfMemoryError
            The driver could not page-lock that much host memory.

        Examples
        --------
        >>> from gpuhost import memory
        >>> p = memory.PinnedMemoryPool().malloc(256)
        >>> np.asarray(p).nbytes
        256
        """
        if size == 0:
            return PinnedMemoryPointer(PinnedMemory(0), 0)
        pool = self._pool()
        try:
            return PinnedMemoryPointer(PooledPinnedMemory._of(pool.allocate(size)), 0)
        except CudaOutOfMemoryError as e:
            raise OutOfMemoryError(size, pool.total_bytes, pool.limit) from e

    def free_all_blocks(self):
        """Give the blocks the pool holds for reuse back to the driver (cuMemFreeHost).

        Blocks in use stay; they come back to the pool when freed.

        Examples
        --------
        >>> from gpuhost import memory
        >>> pool = memory.PinnedMemoryPool()
        >>> a, b = pool.malloc(4096), pool.malloc(4096)
        >>> del a
        >>> pool.free_all_blocks()
        >>> pool.n_free_blocks(), pool.used_bytes(), pool.total_bytes()
        (0, 4096, 4096)
        """
        for pool in self._pools.values():
            pool.free_all_blocks()

    def n_free_blocks(self):
        """The number of blocks the pool holds, free for reuse.

        Returns
        -------
        int

        Examples
        --------
        >>> from gpuhost import memory
        >>> pool = memory.PinnedMemoryPool()
        >>> a, b = pool.malloc(1000), pool.malloc(5000)
        >>> del a, b
        >>> pool.n_free_blocks()
        2
        >>> c = pool.malloc(1024)              # reuses the 1024-byte block
        >>> pool.n_free_blocks()
        1
        """
        return sum(p.n_free_blocks for p in self._pools.values())

    def used_bytes(self):
        """The bytes in blocks handed out and not yet returned (by size class).

        A 1000-byte request counts 1024.

        Returns
        -------
        int

        Examples
        --------
        >>> from gpuhost import memory
        >>> pool = memory.PinnedMemoryPool()
        >>> p = pool.malloc(1000)
        >>> pool.used_bytes()
        1024
        >>> del p
        >>> pool.used_bytes()
        0
        """
        return sum(p.used_bytes for p in self._pools.values())

    def free_bytes(self):
        """The bytes in blocks the pool holds, free for reuse.

        Returns
        -------
        int

        Examples
        --------
        >>> from gpuhost import memory
        >>> pool = memory.PinnedMemoryPool()
        >>> p = pool.malloc(1 << 20)
        >>> pool.free_bytes()
        0
        >>> del p
        >>> pool.free_bytes()
        1048576
        """
        return sum(p.free_bytes for p in self._pools.values())

    def total_bytes(self):
        """All the bytes of the pool's blocks, ``used_bytes() + free_bytes()``.

        Returns
        -------
        int

        Examples
        --------
        >>> from gpuhost import memory
        >>> pool = memory.PinnedMemoryPool()
        >>> a, b = pool.malloc(4096), pool.malloc(4096)
        >>> del a
        >>> pool.used_bytes(), pool.free_bytes(), pool.total_bytes()
        (4096, 4096, 8192)
        """
        return sum(p.total_bytes for p in self._pools.values())

    def _repr_html_(self):
        """An HTML table of the pool's statistics, one row per device it has used."""
        return _core.html_table(*_pools_display(type(self).__name__, self._pools.values()))

    def _repr_pretty_(self, p, cycle):
        """IPython's pretty printer: the repr, then one line per device the pool has used."""
        _core.pretty(p, cycle, self, _pools_pretty_rows(self._pools.values()))


_default_pinned_pool = PinnedMemoryPool()
_current_pinned_allocator = _default_pinned_pool.malloc


def get_default_pinned_memory_pool():
    """The default PinnedMemoryPool (CuPy's): the one `alloc_pinned_memory` uses unless
    `set_pinned_memory_allocator` changed it.

    Returns
    -------
    PinnedMemoryPool

    Examples
    --------
    >>> from gpuhost import memory
    >>> pool = memory.get_default_pinned_memory_pool()
    >>> before = pool.used_bytes()
    >>> p = memory.alloc_pinned_memory(4096)
    >>> pool.used_bytes() - before
    4096
    """
    return _default_pinned_pool


@_unbound  # a builtin in CuPy: it does not bind as a method
def set_pinned_memory_allocator(allocator=None):
    """Set the allocator of `alloc_pinned_memory` (CuPy's).

    Parameters
    ----------
    allocator : callable or None, optional
        ``allocator(size)`` returns a PinnedMemoryPointer (a `PinnedMemoryPool`'s
        ``malloc``, say). None (the default) allocates without a pool;
        ``get_default_pinned_memory_pool().malloc`` restores the default.

    Examples
    --------
    >>> from gpuhost import memory
    >>> pool = memory.PinnedMemoryPool()
    >>> memory.set_pinned_memory_allocator(pool.malloc)
    >>> p = memory.alloc_pinned_memory(4096)
    >>> pool.used_bytes()
    4096
    >>> memory.set_pinned_memory_allocator(
    ...     memory.get_default_pinned_memory_pool().malloc)
    """
    global _current_pinned_allocator
    _current_pinned_allocator = _malloc_pinned if allocator is None else allocator


@_unbound  # a builtin in CuPy: it does not bind as a method
def alloc_pinned_memory(size):
    """A PinnedMemoryPointer to `size` bytes of pinned host memory (CuPy's).

    The memory comes from the allocator `set_pinned_memory_allocator` set, by default the
    default `PinnedMemoryPool`. Copies from and to it run at full bus speed and can
    overlap other work.

    Parameters
    ----------
    size : int
        Bytes to allocate.

    Returns
    -------
    PinnedMemoryPointer

    Raises
    ------
    OutOfMemoryError
        The driver could not page-lock that much host memory.

    Examples
    --------
    >>> from gpuhost import memory
    >>> p = memory.alloc_pinned_memory(8 * 4)
    >>> h = np.asarray(p).view(np.float64)
    >>> h[:] = 2.5
    >>> d = memory.alloc(32)
    >>> d.copy_from_host(p.ptr, 32)
    """
    return _current_pinned_allocator(size)
