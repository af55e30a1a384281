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
default stream, on which the async calls complete before they return); out of memory is
gpuhost's CudaOutOfMemoryError (a MemoryError, also exported here as OutOfMemoryError);
the pool's size classes are gpuhost's (512 bytes, then 8 per doubling) rather than CuPy's
splitting of larger blocks.
"""
import ctypes
import warnings

import numpy as np

from . import _arrays, _core
from ._pools import _pools_display, _pools_pretty_rows
from .errors import CudaOutOfMemoryError

__all__ = [
    "BaseMemory", "ManagedMemory", "Memory", "MemoryAsync", "MemoryPointer", "MemoryPool",
    "OutOfMemoryError", "PinnedMemory", "PinnedMemoryPointer", "PinnedMemoryPool",
    "PooledMemory", "UnownedMemory", "alloc", "alloc_pinned_memory", "get_allocator",
    "get_default_memory_pool", "get_default_pinned_memory_pool", "malloc_async",
    "malloc_managed", "set_allocator", "set_pinned_memory_allocator",
]

OutOfMemoryError = CudaOutOfMemoryError
PooledMemory = _core.Allocation  # what a pool hands out: .ptr, .size, .device, .free()

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

class BaseMemory:
    """Memory on a CUDA device: ``ptr``, ``size``, ``device_id``, ``device``."""

    __slots__ = {"ptr": "The device address of the first byte (an int; 0 for size 0).",
                 "size": "The size in bytes.",
                 "device_id": "The ordinal of the device the memory is on.",
                 "_owner": "What frees the memory when it dies (an Allocation, or the "
                           "owner UnownedMemory keeps alive).",
                 "context": "The Context the memory belongs to."}

    @property
    def device(self):
        """The Device the memory is on."""
        return _core.get_device(self.device_id)

    def __int__(self):
        return self.ptr

    def __repr__(self):
        return "<%s 0x%x size=%d device=%d>" % (type(self).__name__, self.ptr, self.size,
                                                self.device_id)


class Memory(BaseMemory):
    """Device memory of its own (cuMemAlloc, no pool), freed when the object dies."""

    __slots__ = ()

    def __init__(self, size):
        ctx = _core.current_context()
        self._owner = _plain_pool(ctx).allocate(size) if size > 0 else None
        self.ptr = self._owner.ptr if size > 0 else 0
        self.size, self.device_id, self.context = size, ctx.device.id, ctx


class ManagedMemory(BaseMemory):
    """Managed (unified) memory (cuMemAllocManaged), freed when the object dies."""

    __slots__ = ()

    def __init__(self, size):
        ctx = _core.current_context()
        self._owner = _core.mem_alloc(size, "managed") if size > 0 else None
        self.ptr = self._owner.ptr if size > 0 else 0
        self.size, self.device_id, self.context = size, ctx.device.id, ctx


class MemoryAsync(BaseMemory):
    """Memory from the driver's stream-ordered pool (cuMemAllocAsync on `stream`), freed
    on the same stream when the object dies."""

    __slots__ = {"stream": "The stream the memory was allocated on and is freed on (None: "
                           "the legacy default stream)."}

    def __init__(self, size, stream=None):
        ctx = _core.current_context()
        self._owner = _async_pool(ctx).allocate(size, stream) if size > 0 else None
        self.ptr = self._owner.ptr if size > 0 else 0
        self.size, self.device_id, self.context, self.stream = size, ctx.device.id, ctx, stream


class UnownedMemory(BaseMemory):
    """Device memory someone else owns (`owner` is kept alive with it). Without
    `device_id`, the current device's."""

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


def _context_of(mem):
    ctx = getattr(mem, "context", None)
    return ctx if ctx is not None else _core.current_context()


class MemoryPointer:
    """A pointer into device memory: ``mem`` (the memory it keeps alive) and ``ptr`` (an
    address inside it). Offsets add and subtract; copies and memsets act on the bytes
    from ``ptr`` on."""

    __slots__ = {"mem": "The memory object the pointer points into, kept alive by it.",
                 "ptr": "The device address the pointer holds (an int).",
                 "__weakref__": None}

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
        """The ordinal of the device the memory is on."""
        return self.mem.device_id

    @property
    def device(self):
        """The Device the memory is on."""
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
        return MemoryPointer(self.mem, self.ptr - self.mem.ptr + offset)

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

    def _bytes(self, size):
        """A uint8 DeviceArray over `size` bytes from ptr, for the copy primitives."""
        return _core.make_array(self.mem, self.ptr, (size,), (1,), _U8, None,
                                _context_of(self.mem))

    # copies: the synchronous ones run on the legacy default stream, as CuPy's do

    def copy_from_device(self, src, size):
        """Copy `size` bytes from device memory `src` (a MemoryPointer), maybe another
        device's."""
        self.copy_from_device_async(src, size, None)

    def copy_from_device_async(self, src, size, stream=None):
        """Queue a copy of `size` bytes from device memory `src` (a MemoryPointer) on
        `stream` (None: the legacy default stream)."""
        if size > 0:
            self._bytes(size).copy_to_device(src._bytes(size), stream=_stream(stream))

    def copy_from_host(self, mem, size):
        """Copy `size` bytes from host address `mem` (int or ctypes.c_void_p)."""
        self.copy_from_host_async(mem, size, None)

    def copy_from_host_async(self, mem, size, stream=None):
        """Queue a copy of `size` bytes from host address `mem` on `stream`; the host
        memory must stay valid (and, to overlap, be pinned) until the copy has run."""
        if size > 0:
            _core.copy_2d(self._bytes(size), False, _address(mem), size, self.ptr, size, size, 1,
                          _stream(stream))

    def copy_from(self, mem, size):
        """copy_from_device for a MemoryPointer, else copy_from_host."""
        self.copy_from_async(mem, size, None)

    def copy_from_async(self, mem, size, stream=None):
        """copy_from_device_async for a MemoryPointer, else copy_from_host_async."""
        if isinstance(mem, MemoryPointer):
            self.copy_from_device_async(mem, size, stream)
        else:
            self.copy_from_host_async(mem, size, stream)

    def copy_to_host(self, mem, size):
        """Copy `size` bytes to host address `mem` (int or ctypes.c_void_p)."""
        self.copy_to_host_async(mem, size, None)

    def copy_to_host_async(self, mem, size, stream=None):
        """Queue a copy of `size` bytes to host address `mem` on `stream`; read the host
        memory only after the stream has reached it."""
        if size > 0:
            _core.copy_2d(self._bytes(size), True, _address(mem), size, self.ptr, size, size, 1,
                          _stream(stream))

    def memset(self, value, size):
        """Set `size` bytes to the byte `value`."""
        self.memset_async(value, size, None)

    def memset_async(self, value, size, stream=None):
        """Queue setting `size` bytes to the byte `value` on `stream`."""
        if size > 0:
            _core.memset(self._bytes(size), self.ptr, 1, value & 0xFF, size, 1, size,
                         _stream(stream))


# ---- allocators ----

_plain_pools = {}  # Context -> Pool(mode="plain"): memory of its own, for Memory
_async_pools = {}  # Context -> Pool(mode="driver"), for MemoryAsync / malloc_async


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


def _malloc(size):
    """Device memory without a pool (what set_allocator(None) selects)."""
    return MemoryPointer(Memory(size), 0)


def malloc_managed(size):
    """A MemoryPointer to `size` bytes of managed (unified) memory."""
    return MemoryPointer(ManagedMemory(size), 0)


def malloc_async(size, stream=None):
    """A MemoryPointer to `size` bytes from the driver's stream-ordered pool, allocated and
    freed on `stream`."""
    return MemoryPointer(MemoryAsync(size, stream), 0)


class MemoryPool:
    """A pool of device memory for every device (one gpuhost Pool per device, made on first
    use): freed blocks are kept and handed out again. ``allocator(size)`` (default: the
    driver) makes new blocks; it must return an object with an int ``.ptr``, such as a
    MemoryPointer (e.g. ``malloc_managed``)."""

    def __init__(self, allocator=None):
        self._allocator = None if allocator is _malloc else allocator
        self._pools = {}  # Context -> _core.Pool

    def _make(self, ctx):
        with ctx.device:
            return _core.Pool("device", "cache", allocator=self._allocator)

    def _pool(self):
        ctx = _core.current_context()
        pool = self._pools.get(ctx)
        if pool is None:
            pool = self._pools[ctx] = self._make(ctx)
        return pool

    def malloc(self, size, stream=None):
        """A MemoryPointer to `size` bytes on the current device, ordered on `stream`
        (None: the legacy default stream), from the pool if it holds a block."""
        return MemoryPointer._wrap(self._pool().allocate(size, stream))

    def free_all_blocks(self, stream=None):
        """Free the blocks held for the current device (those freed on `stream` only, if
        given)."""
        self._pool().free_all_blocks(stream)

    def free_all_free(self):
        """Deprecated: free_all_blocks()."""
        warnings.warn("free_all_free is deprecated. Use free_all_blocks instead.",
                      DeprecationWarning, stacklevel=2)
        self.free_all_blocks()

    def n_free_blocks(self):
        """Blocks held for reuse on the current device."""
        return self._pool().n_free_blocks

    def used_bytes(self):
        """Bytes in use on the current device."""
        return self._pool().used_bytes

    def free_bytes(self):
        """Bytes held for reuse on the current device."""
        return self._pool().free_bytes

    def total_bytes(self):
        """used_bytes() + free_bytes()."""
        return self._pool().total_bytes

    def set_limit(self, size=None, fraction=None):
        """Limit the bytes the pool takes from the current device (in use + held) to `size`,
        or to `fraction` of the device's memory; neither (or 0): no limit."""
        if size is None:
            if fraction is None:
                size = 0
            else:
                if not 0 <= fraction <= 1:
                    raise ValueError("memory limit fraction out of range: %r" % (fraction,))
                size = int(fraction * _core.current_context().get_memory_info().total)
        elif fraction is not None:
            raise ValueError("size and fraction cannot be specified at one time")
        if size < 0:
            raise ValueError("memory limit size out of range: %r" % (size,))
        self._pool().limit = int(size)

    def get_limit(self):
        """The current device's limit in bytes (0: none)."""
        return self._pool().limit

    def _repr_html_(self):
        """An HTML table of the pool's statistics, one row per device it has used."""
        return _core.html_table(*_pools_display(type(self).__name__, self._pools.values()))

    def _repr_pretty_(self, p, cycle):
        """IPython's pretty printer: the repr, then one line per device the pool has used."""
        _core.pretty(p, cycle, self, _pools_pretty_rows(self._pools.values()))


class _DefaultMemoryPool(MemoryPool):
    """The contexts' default pools: the memory of device_array() and to_device()."""

    def _make(self, ctx):
        return _core.default_pool(ctx)


_default_pool = _DefaultMemoryPool()
_current_allocator = _default_pool.malloc


def get_default_memory_pool():
    """The default MemoryPool: the one device arrays allocate from."""
    return _default_pool


def _array_allocator(allocator):
    """What device_array() calls for `allocator`: None (the C default pool), or
    fn(nbytes, stream) -> (owner, address)."""
    if getattr(allocator, "__self__", None) is _default_pool and \
            getattr(allocator, "__func__", None) is MemoryPool.malloc:
        return None
    if getattr(allocator, "__func__", None) is MemoryPool.malloc:
        def from_pool(nbytes, stream):
            p = allocator(nbytes, stream)
            return p, p.ptr
        return from_pool

    def from_allocator(nbytes, stream):
        p = allocator(nbytes)
        return p, int(p.ptr)
    return from_allocator


def set_allocator(allocator=None):
    """Make `allocator(size)` (returning an object with an int ``.ptr``, e.g. a
    MemoryPointer) the allocator of alloc() and of device arrays; None: memory without a
    pool. ``set_allocator(get_default_memory_pool().malloc)`` restores the default."""
    global _current_allocator
    if allocator is None:
        allocator = _malloc
    if not callable(allocator):
        raise TypeError("allocator must be callable, not %s" % type(allocator).__name__)
    _arrays._allocator = _array_allocator(allocator)
    _current_allocator = allocator


def get_allocator():
    """The current allocator."""
    return _current_allocator


def alloc(size):
    """A MemoryPointer to `size` bytes from the current allocator."""
    return _current_allocator(size)


# ---- pinned memory ----

class PinnedMemory:
    """Page-locked host memory of its own (cuMemHostAlloc with `flags`)."""

    __slots__ = {"ptr": "The host address of the first byte (an int; 0 for size 0).",
                 "size": "The size in bytes.",
                 "_owner": "The Allocation that frees the memory when it dies."}

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


class PinnedMemoryPointer:
    """A pointer into pinned host memory: ``mem`` and ``ptr``; ``np.asarray(p)`` is a
    uint8 view of the bytes from ``ptr`` to the end of ``mem``."""

    __slots__ = {"mem": "The pinned memory the pointer points into, kept alive by it.",
                 "ptr": "The host address the pointer holds (an int).",
                 "__weakref__": None}

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
        """The bytes from ``ptr`` to the end of ``mem``."""
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


def _malloc_pinned(size):
    return PinnedMemoryPointer(PinnedMemory(size), 0)


class PinnedMemoryPool:
    """A pool of page-locked host memory: freed blocks are kept and handed out again.
    ``allocator(size)`` (default: cuMemHostAlloc) makes new blocks. As with CuPy's, a block
    is reused at once: synchronize before dropping a buffer an asynchronous copy uses."""

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
        """A PinnedMemoryPointer to `size` bytes."""
        return PinnedMemoryPointer(self._pool().allocate(size), 0)

    def free_all_blocks(self):
        """Free the blocks the pool holds."""
        for pool in self._pools.values():
            pool.free_all_blocks()

    def n_free_blocks(self):
        """The number of blocks the pool holds, free for reuse."""
        return sum(p.n_free_blocks for p in self._pools.values())

    def used_bytes(self):
        """The bytes in blocks handed out and not yet returned."""
        return sum(p.used_bytes for p in self._pools.values())

    def free_bytes(self):
        """The bytes in blocks the pool holds, free for reuse."""
        return sum(p.free_bytes for p in self._pools.values())

    def total_bytes(self):
        """used_bytes() + free_bytes()."""
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
    """The PinnedMemoryPool alloc_pinned_memory() uses unless set_pinned_memory_allocator
    changed it."""
    return _default_pinned_pool


def set_pinned_memory_allocator(allocator=None):
    """Make `allocator(size)` the allocator of alloc_pinned_memory(); None: no pool."""
    global _current_pinned_allocator
    _current_pinned_allocator = _malloc_pinned if allocator is None else allocator


def alloc_pinned_memory(size):
    """A PinnedMemoryPointer to `size` bytes from the current pinned allocator."""
    return _current_pinned_allocator(size)
