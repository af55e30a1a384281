"""CuPy's device memory objects (``cupy.cuda.memory``'s BaseMemory, Memory, ManagedMemory,
MemoryAsync, UnownedMemory, PooledMemory), the allocations without a pool (``_malloc``,
``malloc_managed``, ``malloc_async``) and CuPy's OutOfMemoryError, over gpuhost's C
allocations; part of gpuhost.memory.
"""
from ... import _core
from ..._unbound import unbound as _unbound
from ._pointer import MemoryPointer


def _stream(stream):
    return 0 if stream is None else stream


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


# ---- allocations without a pool ----

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
