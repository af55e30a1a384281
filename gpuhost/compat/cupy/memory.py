"""cupy.cuda.memory's names: gpuhost.memory's, where a stream left out means CuPy's
current stream (gpuhost.compat.cupy.stream) instead of gpuhost's legacy default stream:
MemoryPool.malloc(size) and the default pool allocate on it, malloc_async() allocates and
frees on it, MemoryPointer's *_async(..., stream=None) copies and sets on it, and
ManagedMemory.prefetch() takes CuPy's streams. The rest is gpuhost.memory itself
(set_allocator, using_allocator, the pinned pools, OutOfMemoryError ...).
"""
from ... import memory as _memory
from ...memory import (  # noqa: F401
    BaseMemory,
    Memory,
    OutOfMemoryError,
    PooledMemory,
    PythonFunctionAllocator,
    UnownedMemory,
    _allocation_unit_size,
    get_allocator,
    set_allocator,
    using_allocator,
)
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


class MemoryPointer(_memory.MemoryPointer):
    """gpuhost.memory.MemoryPointer whose *_async(..., stream=None) use the current
    stream, as CuPy's."""

    __slots__ = ()
    _stream_of = staticmethod(_current)


class ManagedMemory(_memory.ManagedMemory):
    """Managed memory; prefetch(stream) takes CuPy's streams (None: the current one);
    prefetch() and advise() raise CUDARuntimeError, as CuPy's."""

    __slots__ = ()
    _stream_arg = staticmethod(_current)

    @_runtime._translated
    def prefetch(self, stream, *, device_id=-2):
        """Queue migrating the memory to device `device_id` (-2: its own device; -1: the
        host) on `stream` (cuMemPrefetchAsync)."""
        super().prefetch(stream, device_id=device_id)

    @_runtime._translated
    def advise(self, advise, dev):
        """Tell the driver how device `dev` (-1: the host) uses the memory (cuMemAdvise;
        `advise`: runtime.cudaMemAdvise*)."""
        super().advise(advise, dev)


class MemoryAsync(_memory.MemoryAsync):
    """Memory from the driver's stream-ordered pool, allocated and freed on `stream` (a
    CuPy stream; its ``stream_ref()``)."""

    __slots__ = ()
    _stream_arg = staticmethod(_current)


class MemoryPool(_memory.MemoryPool):
    """gpuhost.memory.MemoryPool whose malloc(size) orders the memory on the current
    stream, as CuPy's: a block freed on one stream is reused on that stream."""

    _pointer = MemoryPointer

    def malloc(self, size):
        """A MemoryPointer to `size` bytes on the current device, ordered on the current
        stream."""
        return self._allocate(size, _current(None))

    def free_all_blocks(self, stream=None):
        """Free the blocks held for the current device (those freed on `stream` only, if
        given)."""
        super().free_all_blocks(None if stream is None else _stream_module._resolve(stream))


class MemoryAsyncPool(_memory.MemoryAsyncPool):
    """gpuhost.memory.MemoryAsyncPool whose malloc(size) allocates and frees on the
    current stream, as CuPy's."""

    _pointer = MemoryPointer
    _memory = MemoryAsync

    def malloc(self, size):
        """A MemoryPointer to `size` bytes from the driver's pool, on the current stream."""
        return super().malloc(size, _stream_module.get_current_stream())

    def free_all_blocks(self, stream=None):
        """Wait for the work queued so far, then give the pool's unused memory back."""
        super().free_all_blocks()


class _DefaultMemoryPool(MemoryPool, _memory._DefaultMemoryPool):
    """The contexts' default pools (those of device arrays), on the current stream."""


_default_pool = _DefaultMemoryPool()


def get_default_memory_pool():
    """The default MemoryPool: the contexts' default pools, which device arrays use."""
    return _default_pool


def alloc(size):
    """A MemoryPointer to `size` bytes from the current allocator; a MemoryPool's malloc
    (the default pool's, unless set_allocator() chose another) allocates on the current
    stream."""
    allocator = get_allocator()
    pool = getattr(allocator, "__self__", None)
    if isinstance(pool, _memory.MemoryPool) and getattr(allocator, "__name__", None) == "malloc":
        p = pool._allocate(size, _current(None))
        return p if isinstance(p, MemoryPointer) else MemoryPointer._wrap(p.mem)
    return allocator(size)


def _malloc(size):
    """Device memory without a pool (what set_allocator(None) selects)."""
    return MemoryPointer(Memory(size), 0)


def malloc_managed(size):
    """A MemoryPointer to `size` bytes of managed (unified) memory."""
    return MemoryPointer(ManagedMemory(size), 0)


def malloc_async(size, stream=None):
    """A MemoryPointer to `size` bytes from the driver's stream-ordered pool, allocated and
    freed on `stream` (None: the current stream)."""
    if stream is None:
        stream = _stream_module.get_current_stream()
    return MemoryPointer(MemoryAsync(size, stream), 0)

