"""CuPy's device memory pools (``cupy.cuda.MemoryPool``, ``MemoryAsyncPool`` and
``get_default_memory_pool``) over gpuhost's C pools; part of gpuhost.memory.
"""
import warnings

from ... import _core
from ...errors import CudaOutOfMemoryError
from ._common import OutOfMemoryError, _allocation_unit_size, _pools_display, _pools_pretty_rows
from ._memory import Memory, MemoryAsync, _async_pool, _malloc
from ._pointer import MemoryPointer


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
