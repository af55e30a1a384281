"""pycuda's memory pools (``pycuda.tools``) over gpuhost's C pools; re-exported by
gpuhost.tools.

    pool = DeviceMemoryPool()
    a = pool.allocate(1 << 20)      # a PooledDeviceAllocation: int(a), len(a), a.free()
    hpool = PageLockedMemoryPool()  # numpy arrays in pinned memory, .base pooled
    h = hpool.allocate((256, 256), np.float32)

Both keep freed blocks for reuse, by size class (pycuda's bin_number / alloc_size: 512
bytes, then 8 classes per doubling), until free_held() or stop_holding().  A device pool
orders reuse by stream as gpuhost's default pool does (``allocate(size, stream=None)``); a
pinned block is reused at once, as in pycuda: synchronize before dropping a buffer an
asynchronous copy still uses.
"""
import numpy as np

from ... import _core
from ..._arrays import _layout

__all__ = [
    "DeviceMemoryPool", "PageLockedAllocator", "PageLockedMemoryPool",
    "PooledDeviceAllocation", "PooledHostAllocation", "host_alloc_flags",
]

# What the pools hand out: gpuhost Allocations (int(), len(), free(), .ptr, .size; pinned
# ones export the buffer protocol), which give their memory back to the pool when they die.
PooledDeviceAllocation = _core.Allocation
PooledHostAllocation = _core.Allocation


class host_alloc_flags:  # noqa: N801 - pycuda.driver's name
    """cuMemHostAlloc's flags, for `PageLockedAllocator` (pycuda.driver's names).

    ``PORTABLE`` (1): pinned for every context; ``DEVICEMAP`` (2): mapped into the
    device's address space; ``WRITECOMBINED`` (4): write-combined, fast for the host to
    write and the device to read, slow for the host to read. Combine them with ``|``.

    Examples
    --------
    >>> from gpuhost.tools import host_alloc_flags
    >>> host_alloc_flags.PORTABLE | host_alloc_flags.DEVICEMAP
    3
    """

    PORTABLE = 1
    DEVICEMAP = 2
    WRITECOMBINED = 4


def _pool_display_rows(pool):
    """(label, value) rows of a gpuhost Pool's statistics, for the displays."""
    size = _core.format_bytes
    dev = pool.context.device
    return [
        ("kind", pool.kind),
        ("device", "%d (%s)" % (dev.id, dev.name)),
        ("active", "%s in %d blocks" % (size(pool.used_bytes), pool.n_used_blocks)),
        ("held", "%s in %d blocks" % (size(pool.free_bytes), pool.n_free_blocks)),
        ("limit", size(pool.limit) if pool.limit else "none"),
    ]


class _PoolStatistics:
    """pycuda's statistics and controls, over a gpuhost Pool in self._pool."""

    @property
    def held_blocks(self):
        """The number of free blocks the pool keeps for reuse.

        Examples
        --------
        >>> from gpuhost import tools
        >>> pool = tools.DeviceMemoryPool()
        >>> a, b = pool.allocate(1000), pool.allocate(5000)
        >>> pool.held_blocks
        0
        >>> del a, b
        >>> pool.held_blocks
        2
        >>> c = pool.allocate(900)                 # reuses the 1024-byte block
        >>> pool.held_blocks
        1
        """
        return self._pool.n_free_blocks

    @property
    def active_blocks(self):
        """The number of blocks handed out and not freed yet.

        Examples
        --------
        >>> from gpuhost import tools
        >>> pool = tools.PageLockedMemoryPool()
        >>> h = pool.allocate((16, 16), np.float32)
        >>> v = h[::2]                             # a view keeps the block too
        >>> del h
        >>> pool.active_blocks
        1
        >>> del v
        >>> pool.active_blocks
        0
        """
        return self._pool.n_used_blocks

    @property
    def managed_bytes(self):
        """Bytes of all the pool's blocks, active and held, by size class.

        Examples
        --------
        >>> from gpuhost import tools
        >>> pool = tools.DeviceMemoryPool()
        >>> a, b = pool.allocate(1000), pool.allocate(4096)
        >>> del a
        >>> pool.active_bytes, pool.managed_bytes
        (4096, 5120)
        """
        return self._pool.total_bytes

    @property
    def active_bytes(self):
        """Bytes of the active blocks, counted by size class (1000 bytes asked for count 1024).

        Examples
        --------
        >>> from gpuhost import tools
        >>> pool = tools.DeviceMemoryPool()
        >>> a = pool.allocate(1000)
        >>> len(a), pool.active_bytes
        (1000, 1024)
        >>> a.free()
        >>> pool.active_bytes
        0
        """
        return self._pool.used_bytes

    def free_held(self):
        """Give the held blocks back to the driver.

        Blocks in use stay; the pool keeps holding what is freed from now on (see
        `stop_holding`).

        Examples
        --------
        >>> from gpuhost import tools
        >>> pool = tools.DeviceMemoryPool()
        >>> a, b = pool.allocate(4096), pool.allocate(4096)
        >>> del a
        >>> pool.free_held()
        >>> pool.held_blocks, pool.active_blocks, pool.managed_bytes
        (0, 1, 4096)
        >>> del b                                  # held again
        >>> pool.held_blocks
        1
        """
        self._pool.free_all_blocks()

    def stop_holding(self):
        """Give the held blocks back to the driver, and from now on each block as it is freed.

        The pool still hands out new blocks; it only stops caching them.

        Examples
        --------
        >>> from gpuhost import tools
        >>> pool = tools.DeviceMemoryPool()
        >>> a, b = pool.allocate(4096), pool.allocate(4096)
        >>> del a
        >>> pool.stop_holding()
        >>> pool.held_blocks, pool.active_blocks
        (0, 1)
        >>> del b                                  # back to the driver at once
        >>> pool.held_blocks, pool.managed_bytes
        (0, 0)
        """
        self._pool.stop_holding()

    def bin_number(self, size):
        """The size class (bin) that `size` bytes fall in: 512 bytes and less are class
        0, then 8 classes per doubling.

        Examples
        --------
        >>> from gpuhost import tools
        >>> pool = tools.DeviceMemoryPool()
        >>> pool.bin_number(512), pool.bin_number(1000), pool.alloc_size(1)
        (0, 1, 1024)
        """
        return self._pool.bin_number(size)

    def alloc_size(self, bin_nr):
        """The bytes a block of size class `bin_nr` has, what an allocation of that class takes.

        The inverse of `bin_number`: ``alloc_size(bin_number(n))`` is the smallest block
        that holds `n` bytes.

        Parameters
        ----------
        bin_nr : int
            A size class, from 0.

        Returns
        -------
        int

        Examples
        --------
        >>> from gpuhost import tools
        >>> pool = tools.DeviceMemoryPool()
        >>> [pool.alloc_size(b) for b in range(4)]
        [512, 1024, 1536, 2048]
        >>> pool.alloc_size(pool.bin_number(5000))
        5120
        """
        return self._pool.alloc_size(bin_nr)

    def _repr_html_(self):
        """An HTML table of the pool's statistics, for Jupyter."""
        return _core.html_table(type(self).__name__, None, _pool_display_rows(self._pool))

    def _repr_pretty_(self, p, cycle):
        """IPython's pretty printer: the repr, then the statistics one per line."""
        _core.pretty(p, cycle, self, _pool_display_rows(self._pool))


class DeviceMemoryPool(_PoolStatistics):
    """A caching pool of device memory in the current context (pycuda's).

    Freed blocks are kept, by size class, and handed out again, until `free_held` or
    `stop_holding`; reuse is ordered by stream as in gpuhost's default pool. Its
    statistics are ``active_blocks``, ``held_blocks``, ``active_bytes`` and
    ``managed_bytes``.

    Parameters
    ----------
    allocator : callable, optional
        ``allocator(size)`` makes a new block, as pycuda's ``mem_alloc`` does: it
        returns an object with ``int()`` or an int ``.ptr`` that keeps the memory alive.
        By default the driver's cuMemAlloc.

    Examples
    --------
    >>> from gpuhost import tools
    >>> pool = tools.DeviceMemoryPool()
    >>> a = pool.allocate(1000)
    >>> len(a), pool.active_blocks, pool.active_bytes
    (1000, 1, 1024)
    >>> a.free()                               # or drop it
    >>> pool.active_blocks, pool.held_blocks
    (0, 1)
    >>> pool.free_held()
    >>> pool.managed_bytes
    0
    """

    def __init__(self, allocator=None):
        self._pool = _core.Pool("device", "cache", allocator=allocator)

    def allocate(self, size, stream=None):
        """`size` bytes of device memory, reused from the pool if it holds a block of their
        size class.

        Parameters
        ----------
        size : int
            Bytes to allocate.
        stream : gpuhost.Stream, optional
            The stream the block's use is ordered on; None (the default) is the legacy
            default stream.

        Returns
        -------
        PooledDeviceAllocation
            An `Allocation`: ``int(a)`` is its address, ``len(a)`` its size,
            ``a.free()`` gives it back to the pool (as does its death).

        Raises
        ------
        CudaOutOfMemoryError
            The device has no memory left, even after the pool gave its held blocks
            back.

        Examples
        --------
        >>> from gpuhost import tools
        >>> a = tools.DeviceMemoryPool().allocate(4096)
        >>> len(a), int(a) == a.ptr
        (4096, True)
        """
        return self._pool.allocate(size, stream)

    def __repr__(self):
        return "<DeviceMemoryPool %d active, %d held blocks>" % (self.active_blocks,
                                                                  self.held_blocks)


class PageLockedAllocator:
    """An allocator of page-locked host memory, for `PageLockedMemoryPool` (pycuda's).

    Calling it with a size allocates that many bytes with cuMemHostAlloc and `flags`.

    Parameters
    ----------
    flags : int, optional
        A combination of `host_alloc_flags`; default 0.

    Raises
    ------
    ValueError
        `flags` has bits other than host_alloc_flags'.

    Examples
    --------
    >>> from gpuhost import tools
    >>> alloc = tools.PageLockedAllocator(tools.host_alloc_flags.DEVICEMAP)
    >>> pool = tools.PageLockedMemoryPool(alloc)
    >>> pool.allocate(16, np.float32).base.kind
    'mapped'
    """

    def __init__(self, flags=0):
        if flags & ~7:
            raise ValueError("flags must combine host_alloc_flags (PORTABLE, DEVICEMAP, "
                             "WRITECOMBINED), not %r" % (flags,))
        self.flags = flags

    def __call__(self, size):
        return _core.mem_alloc(size, "mapped" if self.flags & host_alloc_flags.DEVICEMAP
                               else "pinned", portable=bool(self.flags & 1),
                               wc=bool(self.flags & 4))


class PageLockedMemoryPool(_PoolStatistics):
    """A caching pool of page-locked (pinned) host memory (pycuda's).

    `allocate` returns numpy arrays in pinned memory; when an array dies its block goes
    back to the pool, which hands it out again at once: synchronize before dropping an
    array an asynchronous copy still uses.

    Parameters
    ----------
    allocator : callable, optional
        A `PageLockedAllocator` (its flags are used), or ``allocator(size)`` returning
        pinned memory; by default ``PageLockedAllocator()``.

    Examples
    --------
    >>> from gpuhost import tools
    >>> pool = tools.PageLockedMemoryPool()
    >>> h = pool.allocate((256, 256), np.float32)
    >>> h[:] = 1
    >>> d = gpuhost.to_device(h)
    >>> pool.active_blocks
    1
    >>> del h
    >>> pool.active_blocks, pool.held_blocks
    (0, 1)
    """

    def __init__(self, allocator=None):
        if allocator is None:
            allocator = PageLockedAllocator()
        if isinstance(allocator, PageLockedAllocator):
            self._pool = _core.Pool("pinned", "cache", host_flags=allocator.flags)
        else:
            self._pool = _core.Pool("pinned", "cache", allocator=allocator)
        self.allocator = allocator

    def allocate(self, shape, dtype, order="C"):
        """A new, uninitialized numpy array in pinned memory from the pool.

        Parameters
        ----------
        shape : int or tuple of int
            The array's shape.
        dtype : numpy dtype
            Its element type.
        order : {"C", "F"}, optional
            Row-major (default) or column-major layout.

        Returns
        -------
        numpy.ndarray
            Its ``.base`` is the PooledHostAllocation, which goes back to the pool when
            the array and its views are gone.

        Raises
        ------
        CudaOutOfMemoryError
            The driver could not page-lock that much host memory.

        Examples
        --------
        >>> from gpuhost import tools
        >>> h = tools.PageLockedMemoryPool().allocate((2, 3), np.float64, order="F")
        >>> h.shape, h.flags.f_contiguous, h.base.kind
        ((2, 3), True, 'pinned')
        """
        shape, dtype, _, nbytes = _layout(shape, dtype, None, order)
        alloc = self._pool.allocate(nbytes)
        if nbytes == 0:
            return np.ndarray(shape, dtype, order=order)
        return np.ndarray(shape, dtype, buffer=alloc, order=order)

    def __repr__(self):
        return "<PageLockedMemoryPool %d active, %d held blocks>" % (self.active_blocks,
                                                                      self.held_blocks)
