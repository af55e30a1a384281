"""cupy.cuda.memory's names: gpuhost.memory's, where a stream left out means CuPy's
current stream (gpuhost.compat.cupy.stream) instead of gpuhost's legacy default stream:
MemoryPool.malloc(size) and the default pool allocate on it, malloc_async() allocates and
frees on it, MemoryPointer's *_async(..., stream=None) copies and sets on it, and
ManagedMemory.prefetch() takes CuPy's streams: subclasses of gpuhost.memory's classes
(compat/cupy/_memory.py, _pointer.py, _pools.py), which take the stream as given.  The rest
is gpuhost.memory's own (set_allocator, using_allocator, the pinned pools, OutOfMemoryError
...).
"""
from . import _memory, _pointer, _pools
from ..._unbound import unbound as _unbound
from ._allocators import (  # noqa: F401
    PythonFunctionAllocator,
    get_allocator,
    set_allocator,
    using_allocator,
)
from ._common import OutOfMemoryError, _allocation_unit_size  # noqa: F401
from ._memory import BaseMemory, Memory, PooledMemory, UnownedMemory  # noqa: F401
from . import runtime as _runtime
from .device import get_device_id as _get_device_id
from . import stream as _stream_module

__all__ = [
    "BaseMemory", "ManagedMemory", "Memory", "MemoryAsync", "MemoryAsyncPool", "MemoryPointer",
    "MemoryPool",
    "OutOfMemoryError", "PooledMemory", "PythonFunctionAllocator", "UnownedMemory", "alloc",
    "get_allocator", "get_default_memory_pool", "malloc_async", "malloc_managed",
    "set_allocator", "using_allocator",
]


def _current(stream, _tls=_stream_module._tls):
    """The gpuhost stream for `stream` (None: the current stream; None back for the null
    stream, which gpuhost's stream=None means)."""
    if stream is None:
        current = _tls.current
        if not current:  # no stream was made current in this thread: the null stream
            return None
        stream = current.get(_get_device_id(), _stream_module.Stream.null)
    if stream is _stream_module.Stream.null:
        return None
    return _stream_module._resolve(stream)


class MemoryPointer(_pointer.MemoryPointer):
    """A pointer into device memory, as CuPy's ``cupy.cuda.MemoryPointer``.

    `gpuhost.memory.MemoryPointer`, except that its ``*_async(..., stream=None)`` copies and
    sets run on CuPy's current stream (`gpuhost.compat.cupy.stream.get_current_stream`)
    rather than on the legacy default stream. This module's pools and `alloc` hand these
    out.

    Parameters
    ----------
    mem : gpuhost.memory.BaseMemory
        The memory pointed into (kept alive by the pointer).
    offset : int
        Bytes from the start of `mem`.

    Examples
    --------
    >>> from gpuhost.compat.cupy import memory, stream
    >>> h = np.arange(4, dtype=np.float32)
    >>> p = memory.alloc(h.nbytes)
    >>> with stream.Stream() as s:
    ...     p.copy_from_host_async(h.ctypes.data, h.nbytes)  # on s
    ...     s.synchronize()
    >>> back = np.zeros_like(h)
    >>> p.copy_to_host(back.ctypes.data, h.nbytes)
    >>> back
    array([0., 1., 2., 3.], dtype=float32)
    """

    __slots__ = ()
    _stream_of = staticmethod(_current)


class ManagedMemory(_memory.ManagedMemory):
    """Managed (unified) memory, as CuPy's ``cupy.cuda.ManagedMemory``.

    `gpuhost.memory.ManagedMemory`, except that `prefetch` takes CuPy's streams (None: the
    current stream) and `prefetch` and `advise` raise
    `gpuhost.compat.cupy.runtime.CUDARuntimeError`, as CuPy's. `malloc_managed` allocates
    it.

    Parameters
    ----------
    size : int
        Bytes.

    Examples
    --------
    >>> from gpuhost.compat.cupy import memory, stream
    >>> p = memory.malloc_managed(4096)
    >>> isinstance(p.mem, memory.ManagedMemory), p.mem.size
    (True, 4096)
    """

    __slots__ = ()
    _stream_arg = staticmethod(_current)

    @_runtime._translated
    def prefetch(self, stream, *, device_id=-2):
        """Queue migrating the memory to a device or the host (cuMemPrefetchAsync).

        Parameters
        ----------
        stream : gpuhost.compat.cupy.stream.Stream or None
            The stream to queue on; None: the current stream.
        device_id : int, optional
            The destination: -2 (the default) its own device, -1 the host, else a device id.

        Raises
        ------
        gpuhost.compat.cupy.runtime.CUDARuntimeError
            The driver refused (such as a device without concurrent managed access).

        Examples
        --------
        >>> from gpuhost.compat.cupy import memory, stream
        >>> m = memory.malloc_managed(4096).mem
        >>> m.prefetch(None)
        >>> m.prefetch(stream.Stream.null, device_id=-1)  # to the host
        """
        super().prefetch(stream, device_id=device_id)

    @_runtime._translated
    def advise(self, advise, dev):
        """Tell the driver how a device or the host uses the memory (cuMemAdvise).

        Parameters
        ----------
        advise : int
            A ``runtime.cudaMemAdvise*`` value.
        dev : int
            The device the advice is about; -1: the host.

        Raises
        ------
        gpuhost.compat.cupy.runtime.CUDARuntimeError
            cudaErrorInvalidValue for an unknown `advise`, or the driver's error.

        Examples
        --------
        >>> from gpuhost.compat.cupy import memory, runtime
        >>> m = memory.malloc_managed(4096).mem
        >>> m.advise(runtime.cudaMemAdviseSetReadMostly, 0)
        >>> m.advise(999, 0)
        Traceback (most recent call last):
            ...
        gpuhost.compat.cupy.runtime.CUDARuntimeError: cudaErrorInvalidValue: invalid argument
        """
        super().advise(advise, dev)


class MemoryAsync(_memory.MemoryAsync):
    """Memory from the driver's stream-ordered pool, as CuPy's ``cupy.cuda.MemoryAsync``.

    Allocated (cuMemAllocAsync) and freed (cuMemFreeAsync, when the last reference goes) on
    `stream`; work on other streams must be ordered after that stream's. `malloc_async` and
    `MemoryAsyncPool` allocate it.

    Parameters
    ----------
    size : int
        Bytes.
    stream : gpuhost.compat.cupy.stream.Stream
        The stream it is allocated and freed on (held through its ``stream_ref()``).

    Examples
    --------
    >>> from gpuhost.compat.cupy import memory, stream
    >>> s = stream.Stream()
    >>> m = memory.MemoryAsync(128, s)
    >>> m.size, m.device_id
    (128, 0)
    """

    __slots__ = ()
    _stream_arg = staticmethod(_current)


class MemoryPool(_pools.MemoryPool):
    """A device memory pool, as CuPy's ``cupy.cuda.MemoryPool``.

    `gpuhost.memory.MemoryPool`, except that `malloc` orders the memory on CuPy's current
    stream: a block freed while one stream is current is reused when that stream is current
    again (a block is safe to reuse on the stream it was freed on).

    Parameters
    ----------
    allocator : callable, optional
        As `gpuhost.memory.MemoryPool`'s.

    Examples
    --------
    >>> from gpuhost.compat.cupy import memory, stream
    >>> pool = memory.MemoryPool()
    >>> p = pool.malloc(1000)
    >>> pool.used_bytes(), pool.total_bytes()
    (1024, 1024)
    >>> del p
    >>> pool.free_bytes(), pool.n_free_blocks()
    (1024, 1)
    """

    _pointer = MemoryPointer

    def malloc(self, size):
        """Allocate device memory from the pool on the current device and stream.

        Parameters
        ----------
        size : int
            Bytes; rounded up to the pool's size class.

        Returns
        -------
        gpuhost.compat.cupy.memory.MemoryPointer

        Raises
        ------
        gpuhost.compat.cupy.memory.OutOfMemoryError
            Past the pool's limit, or the device has no memory left.

        Examples
        --------
        >>> from gpuhost.compat.cupy import memory, stream
        >>> pool = memory.MemoryPool()
        >>> with stream.Stream():
        ...     p = pool.malloc(4096)       # ordered on that stream
        >>> type(p).__name__, pool.used_bytes()
        ('MemoryPointer', 4096)
        """
        return self._allocate(size, _current(None))

    def free_all_blocks(self, stream=None):
        """Free the unused blocks the pool holds for the current device.

        Parameters
        ----------
        stream : gpuhost.compat.cupy.stream.Stream, optional
            Only the blocks freed on this stream; None (the default): all of them.

        Examples
        --------
        >>> from gpuhost.compat.cupy import memory, stream
        >>> pool = memory.MemoryPool()
        >>> del_me = pool.malloc(1000)
        >>> del del_me
        >>> pool.free_bytes()
        1024
        >>> pool.free_all_blocks()
        >>> pool.free_bytes()
        0
        """
        super().free_all_blocks(None if stream is None else _stream_module._resolve(stream))


class MemoryAsyncPool(_pools.MemoryAsyncPool):
    """The driver's stream-ordered pool, as CuPy's ``cupy.cuda.MemoryAsyncPool``.

    `gpuhost.memory.MemoryAsyncPool`, except that `malloc` allocates and frees on CuPy's
    current stream; its pointers hold `gpuhost.compat.cupy.memory.MemoryAsync`.

    Parameters
    ----------
    pool_handles : str or int, optional
        As `gpuhost.memory.MemoryAsyncPool`'s: ``"current"`` (the default), ``"default"``
        or a CUmemoryPool handle.

    Examples
    --------
    >>> from gpuhost.compat.cupy import memory, stream
    >>> pool = memory.MemoryAsyncPool()
    >>> p = pool.malloc(512)
    >>> type(p.mem).__name__
    'MemoryAsync'
    """

    _pointer = MemoryPointer
    _memory = MemoryAsync

    def malloc(self, size):
        """Allocate from the driver's pool on the current stream.

        The memory is freed on that same stream when the last reference goes.

        Parameters
        ----------
        size : int
            Bytes.

        Returns
        -------
        gpuhost.compat.cupy.memory.MemoryPointer

        Examples
        --------
        >>> from gpuhost.compat.cupy import memory, stream
        >>> with stream.Stream():
        ...     p = memory.MemoryAsyncPool().malloc(512)
        >>> p.mem.size
        512
        """
        return super().malloc(size, _stream_module.get_current_stream())

    def free_all_blocks(self, stream=None):
        """Give the pool's unused memory back to the driver.

        Waits for the work queued so far on the device, then trims the pool.

        Parameters
        ----------
        stream : object, optional
            Ignored (CuPy's signature).

        Examples
        --------
        >>> from gpuhost.compat.cupy import memory, stream
        >>> pool = memory.MemoryAsyncPool()
        >>> del_me = pool.malloc(512)
        >>> del del_me
        >>> pool.free_all_blocks()
        """
        super().free_all_blocks()


class _DefaultMemoryPool(MemoryPool, _pools._DefaultMemoryPool):
    """The contexts' default pools (those of device arrays), on the current stream."""


_default_pool = _DefaultMemoryPool()


def get_default_memory_pool():
    """The default device memory pool (CuPy's ``cupy.get_default_memory_pool``).

    It is the contexts' default pools, the ones `gpuhost.device_array` and
    `gpuhost.to_device` take memory from, so its statistics count those arrays too; its
    `MemoryPool.malloc` orders memory on the current stream.

    Returns
    -------
    gpuhost.compat.cupy.memory.MemoryPool
        Always the same object.

    Examples
    --------
    >>> from gpuhost.compat.cupy import memory
    >>> pool = memory.get_default_memory_pool()
    >>> pool is memory.get_default_memory_pool()
    True
    >>> isinstance(pool, memory.MemoryPool)
    True
    """
    return _default_pool


@_unbound  # a builtin in CuPy: it does not bind as a method
def alloc(size):
    """Allocate device memory with the current allocator (CuPy's ``cupy.cuda.alloc``).

    The allocator is what `gpuhost.memory.set_allocator` chose; the default is the default
    pool's `MemoryPool.malloc`. A `MemoryPool`'s malloc allocates on the current stream.

    Parameters
    ----------
    size : int
        Bytes.

    Returns
    -------
    gpuhost.compat.cupy.memory.MemoryPointer
        Or whatever a custom allocator returns.

    Examples
    --------
    >>> from gpuhost.compat.cupy import memory
    >>> p = memory.alloc(1024)
    >>> type(p).__name__, p.ptr != 0
    ('MemoryPointer', True)
    """
    allocator = get_allocator()
    pool = getattr(allocator, "__self__", None)
    if isinstance(pool, _pools.MemoryPool) and getattr(allocator, "__name__", None) == "malloc":
        p = pool._allocate(size, _current(None))
        return p if isinstance(p, MemoryPointer) else MemoryPointer._wrap(p.mem)
    return allocator(size)


@_unbound  # a builtin in CuPy: it does not bind as a method
def _malloc(size):
    """Device memory without a pool (what set_allocator(None) selects)."""
    return MemoryPointer(Memory(size), 0)


@_unbound  # a builtin in CuPy: it does not bind as a method
def malloc_managed(size):
    """Allocate managed (unified) memory (CuPy's ``cupy.cuda.malloc_managed``).

    Parameters
    ----------
    size : int
        Bytes.

    Returns
    -------
    gpuhost.compat.cupy.memory.MemoryPointer
        Pointing to a `gpuhost.compat.cupy.memory.ManagedMemory`.

    Examples
    --------
    >>> from gpuhost.compat.cupy import memory
    >>> p = memory.malloc_managed(4096)
    >>> type(p.mem).__name__, p.mem.size
    ('ManagedMemory', 4096)
    """
    return MemoryPointer(ManagedMemory(size), 0)


@_unbound  # a builtin in CuPy: it does not bind as a method
def malloc_async(size, stream=None):
    """Allocate from the driver's stream-ordered pool (CuPy's ``cupy.cuda.malloc_async``).

    Parameters
    ----------
    size : int
        Bytes.
    stream : gpuhost.compat.cupy.stream.Stream, optional
        The stream the memory is allocated and freed on; None (the default): the current
        stream.

    Returns
    -------
    gpuhost.compat.cupy.memory.MemoryPointer
        Pointing to a `gpuhost.compat.cupy.memory.MemoryAsync`.

    Examples
    --------
    >>> from gpuhost.compat.cupy import memory, stream
    >>> s = stream.Stream()
    >>> p = memory.malloc_async(256, s)
    >>> type(p.mem).__name__, p.mem.size
    ('MemoryAsync', 256)
    """
    if stream is None:
        stream = _stream_module.get_current_stream()
    return MemoryPointer(MemoryAsync(size, stream), 0)

