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

from . import _arrays, _core
from ._pools import _pools_display, _pools_pretty_rows
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
    """A pool or allocator ran out of memory, as CuPy's: ``OutOfMemoryError(size, total,
    limit=0)`` (the request, the bytes the pool had, its limit), with CuPy's message; also a
    CudaOutOfMemoryError and a MemoryError. The driver's own report, with the device's free
    and total memory, is its ``__cause__``."""

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

    def prefetch(self, stream, *, device_id=-2):
        """Queue migrating the memory to device `device_id` (-2: its own device; -1: the
        host) on `stream` (cuMemPrefetchAsync). CudaAPIError for a device that does not
        exist."""
        if device_id == -2:
            device_id = self.device_id
        _core.mem_prefetch(self.ptr, self.size, device_id, self._stream_arg(stream))

    def advise(self, advise, dev):
        """Tell the driver how device `dev` (a Device, or its id; -1: the host) uses the
        memory: `advise` is a CU_MEM_ADVISE_* number (1: set read-mostly, ... 6: unset
        accessed-by; cuMemAdvise). CudaAPIError for an advice that does not exist."""
        _core.mem_advise(self.ptr, self.size, advise, dev if isinstance(dev, int) else dev.id)

    @staticmethod
    def _stream_arg(stream):
        return stream


class MemoryAsync(BaseMemory):
    """Memory from the driver's stream-ordered pool (cuMemAllocAsync on `stream`), freed
    on the same stream when the object dies."""

    __slots__ = {"stream": "The stream the memory was allocated on and is freed on (None: "
                           "the legacy default stream)."}

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
        """The stream the memory was allocated on (CuPy keeps a weak reference; the
        memory keeps its stream's handle alive here, so this is the stream itself)."""
        return self.stream


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


class PooledMemory(BaseMemory):
    """Memory a MemoryPool handed out: the pool's own Allocation (``isinstance(mem,
    PooledMemory)`` is true of it), with ``ptr``, ``size``, ``device_id``, ``pool`` and
    ``free()``, which gives it back to the pool now (``ptr`` becomes 0; a second free()
    does nothing). Not made directly."""

    __slots__ = ()

    def __new__(cls, *args, **kwargs):
        raise TypeError("PooledMemory is what MemoryPool.malloc() hands out, not made directly")


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
        """Copy `size` bytes from device memory `src` (a MemoryPointer), maybe another
        device's."""
        self.copy_from_device_async(src, size, None)

    def copy_from_device_async(self, src, size, stream=None):
        """Queue a copy of `size` bytes from device memory `src` (a MemoryPointer) on
        `stream` (None: the legacy default stream)."""
        if size > 0:
            self._bytes(size).copy_to_device(src._bytes(size), stream=self._stream_of(stream))

    def copy_from_host(self, mem, size):
        """Copy `size` bytes from host address `mem` (int or ctypes.c_void_p)."""
        self.copy_from_host_async(mem, size, None)

    def copy_from_host_async(self, mem, size, stream=None):
        """Queue a copy of `size` bytes from host address `mem` on `stream`; the host
        memory must stay valid (and, to overlap, be pinned) until the copy has run."""
        if size > 0:
            _core.copy_2d(self._bytes(size), False, _address(mem), size, self.ptr, size, size, 1,
                          self._stream_of(stream))

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
                          self._stream_of(stream))

    def memset(self, value, size):
        """Set `size` bytes to the byte `value`."""
        self.memset_async(value, size, None)

    def memset_async(self, value, size, stream=None):
        """Queue setting `size` bytes to the byte `value` on `stream`."""
        if size > 0:
            _core.memset(self._bytes(size), self.ptr, 1, value & 0xFF, size, 1, size,
                         self._stream_of(stream))


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
        try:
            return self._pools[ctx]
        except KeyError:
            pool = self._pools[ctx] = self._make(ctx)
            return pool

    def malloc(self, size, stream=None):
        """A MemoryPointer to `size` bytes on the current device, ordered on `stream`
        (None: the legacy default stream), from the pool if it holds a block: its ``mem``
        is a PooledMemory (a plain Memory for size 0). OutOfMemoryError past the limit or
        the device's memory."""
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
        self._pool().limit = _limit_size(size, fraction)

    def get_limit(self):
        """The current device's limit in bytes (0: none)."""
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
    """CuPy's pool over the driver's stream-ordered allocator (cuMemAllocAsync from each
    device's default memory pool), for every device: ``set_allocator(MemoryAsyncPool().malloc)``.
    Its statistics are the driver pool's (used_bytes: in use, total_bytes: reserved), so
    they count every user of that pool in the process; its limit is the pool's release
    threshold (a soft limit: memory the pool keeps past it goes back at synchronization),
    2**64 - 1 (keep everything) unless set. `pool_handles`: 'current' or 'default' (the
    same pool here); other pools are not supported (NotImplementedError)."""

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
        """A MemoryPointer to `size` bytes (rounded up to 512) on the current device,
        allocated and freed on `stream` (None: the legacy default stream); its ``mem`` is
        a MemoryAsync. OutOfMemoryError if the pool would grow past its limit or the
        device has no more memory."""
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
        """Wait for the work queued so far, then give the pool's unused memory back to the
        device (cuMemPoolTrimTo)."""
        _async_pool(_core.current_context()).free_all_blocks()

    def n_free_blocks(self):
        """Not known for the driver's pool: NotImplementedError, as CuPy."""
        raise NotImplementedError("This function is not supported in MemoryAsyncPool")

    def used_bytes(self):
        """Bytes of the current device's pool in use."""
        return _core.mempool_attribute(self._device(), "used_current")

    def total_bytes(self):
        """Bytes the current device's pool has reserved from the device."""
        return _core.mempool_attribute(self._device(), "reserved_current")

    def free_bytes(self):
        """total_bytes() - used_bytes()."""
        return self.total_bytes() - self.used_bytes()

    def set_limit(self, size=None, fraction=None):
        """Set the current device's soft limit (the pool's release threshold) to `size`
        bytes or `fraction` of the device's memory; neither (or 0): no limit."""
        size = _limit_size(size, fraction)
        _core.mempool_attribute(self._device(), "release_threshold", size or _UINT64_MAX)

    def get_limit(self):
        """The current device's release threshold (2**64 - 1: no limit)."""
        return _core.mempool_attribute(self._device(), "release_threshold")


def get_default_memory_pool():
    """The default MemoryPool: the one device arrays allocate from."""
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
    allocator = None  # this thread's using_allocator() allocator
    for_arrays = None  # what device_array() calls for it


_thread = _ThreadAllocator()
_lock = threading.Lock()
_users = 0  # threads inside a using_allocator() block
_global_for_arrays = None  # the global allocator's device_array() hook while _users > 0


def _dispatch(nbytes, stream):
    """device_array()'s allocator while some thread is in a using_allocator() block: that
    thread's, else the global one (the C default pool for None)."""
    fn = _thread.for_arrays
    if fn is None:
        fn = _global_for_arrays
        if fn is None:
            a = _core.device_alloc(nbytes, stream)
            return a, a.ptr
    return fn(nbytes, stream)


def _set_global_for_arrays(fn):
    global _global_for_arrays
    with _lock:
        if _users:
            _global_for_arrays = fn
        else:
            _arrays._allocator = fn


def set_allocator(allocator=None):
    """Make `allocator(size)` (returning an object with an int ``.ptr``, e.g. a
    MemoryPointer) the allocator of alloc() and of device arrays; None: memory without a
    pool. ``set_allocator(get_default_memory_pool().malloc)`` restores the default.
    ValueError inside a using_allocator() block, as CuPy."""
    global _current_allocator
    if allocator is None:
        allocator = _malloc
    if not callable(allocator):
        raise TypeError("allocator must be callable, not %s" % type(allocator).__name__)
    if _thread.allocator is not None:
        raise ValueError("Can't change the global allocator inside `using_allocator` context "
                         "manager")
    _set_global_for_arrays(_array_allocator(allocator))
    _current_allocator = allocator


def get_allocator():
    """The current allocator: this thread's using_allocator() one, else the global one."""
    allocator = _thread.allocator
    return _current_allocator if allocator is None else allocator


@contextlib.contextmanager
def using_allocator(allocator=None):
    """Make `allocator` (None: memory without a pool) this thread's allocator for alloc()
    and device arrays for the block; other threads keep theirs. Blocks nest."""
    global _users, _global_for_arrays
    if allocator is None:
        allocator = _malloc
    if not callable(allocator):
        raise TypeError("allocator must be callable, not %s" % type(allocator).__name__)
    prev, prev_fn = _thread.allocator, _thread.for_arrays
    fn = _array_allocator(allocator)
    with _lock:
        if _users == 0:
            _global_for_arrays, _arrays._allocator = _arrays._allocator, _dispatch
        _users += 1
    _thread.allocator = allocator
    _thread.for_arrays = fn if fn is not None else _default_for_arrays
    try:
        yield
    finally:
        _thread.allocator, _thread.for_arrays = prev, prev_fn
        with _lock:
            _users -= 1
            if _users == 0:
                _arrays._allocator = _global_for_arrays


def _default_for_arrays(nbytes, stream):
    a = _core.device_alloc(nbytes, stream)
    return a, a.ptr


def alloc(size):
    """A MemoryPointer to `size` bytes from the current allocator."""
    return get_allocator()(size)


class PythonFunctionAllocator:
    """An allocator from two Python functions: ``malloc_func(size, device_id)`` returns a
    device address, ``free_func(ptr, device_id)`` frees it; ``malloc`` is the allocator
    to pass to set_allocator()."""

    def __init__(self, malloc_func, free_func):
        self._malloc, self._free = malloc_func, free_func

    def malloc(self, size):
        """A MemoryPointer to `size` bytes from malloc_func, given to free_func when the
        memory dies."""
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


class PooledPinnedMemory(PinnedMemory):
    """Pinned memory a PinnedMemoryPool handed out: free() (or the object's death) gives
    it back to the pool; a second free() does nothing."""

    __slots__ = ()

    @property
    def pool(self):
        """The gpuhost Pool the memory goes back to."""
        return self._owner.pool

    def free(self):
        """Give the memory back to its pool now (the pointer becomes 0)."""
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
        """A PinnedMemoryPointer to `size` bytes: its ``mem`` is a PooledPinnedMemory (a
        plain PinnedMemory for size 0)."""
        if size == 0:
            return PinnedMemoryPointer(PinnedMemory(0), 0)
        pool = self._pool()
        try:
            return PinnedMemoryPointer(PooledPinnedMemory._of(pool.allocate(size)), 0)
        except CudaOutOfMemoryError as e:
            raise OutOfMemoryError(size, pool.total_bytes, pool.limit) from e

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
