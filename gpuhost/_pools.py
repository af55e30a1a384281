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

from . import _core
from ._arrays import _layout

__all__ = [
    "DeviceMemoryPool", "PageLockedAllocator", "PageLockedMemoryPool",
    "PooledDeviceAllocation", "PooledHostAllocation", "host_alloc_flags",
]

# What the pools hand out: gpuhost Allocations (int(), len(), free(), .ptr, .size; pinned
# ones export the buffer protocol), which give their memory back to the pool when they die.
PooledDeviceAllocation = _core.Allocation
PooledHostAllocation = _core.Allocation


class host_alloc_flags:  # noqa: N801 - pycuda.driver's name
    """cuMemHostAlloc's flags."""

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


class _PoolStatistics:
    """pycuda's statistics and controls, over a gpuhost Pool in self._pool."""

    @property
    def held_blocks(self):
        """Free blocks kept for reuse."""
        return self._pool.n_free_blocks

    @property
    def active_blocks(self):
        """Blocks handed out and not freed yet."""
        return self._pool.n_used_blocks

    @property
    def managed_bytes(self):
        """Bytes of all the pool's blocks, active and held."""
        return self._pool.total_bytes

    @property
    def active_bytes(self):
        """Bytes of the active blocks (their size classes)."""
        return self._pool.used_bytes

    def free_held(self):
        """Free the held blocks."""
        self._pool.free_all_blocks()

    def stop_holding(self):
        """Free the held blocks, and free blocks at once from now on."""
        self._pool.stop_holding()

    def bin_number(self, size):
        """The size class of `size` bytes."""
        return self._pool.bin_number(size)

    def alloc_size(self, bin_nr):
        """The bytes a block of class `bin_nr` has."""
        return self._pool.alloc_size(bin_nr)

    def _repr_html_(self):
        """An HTML table of the pool's statistics, for Jupyter."""
        return _core.html_table(type(self).__name__, None, _pool_display_rows(self._pool))

    def _repr_pretty_(self, p, cycle):
        """IPython's pretty printer: the repr, then the statistics one per line."""
        _core.pretty(p, cycle, self, _pool_display_rows(self._pool))


class DeviceMemoryPool(_PoolStatistics):
    """A pool of device memory in the current context. ``allocator(size)``, if given, makes
    new blocks (pycuda's mem_alloc-like: it returns an object with int() or an int .ptr)."""

    def __init__(self, allocator=None):
        self._pool = _core.Pool("device", "cache", allocator=allocator)

    def allocate(self, size, stream=None):
        """A PooledDeviceAllocation of `size` bytes, reused from the pool if it holds one."""
        return self._pool.allocate(size, stream)

    def __repr__(self):
        return "<DeviceMemoryPool %d active, %d held blocks>" % (self.active_blocks,
                                                                  self.held_blocks)


class PageLockedAllocator:
    """Makes page-locked host memory with cuMemHostAlloc `flags` (host_alloc_flags)."""

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
    """A pool of page-locked host memory; allocate() returns numpy arrays over it."""

    def __init__(self, allocator=None):
        if allocator is None:
            allocator = PageLockedAllocator()
        if isinstance(allocator, PageLockedAllocator):
            self._pool = _core.Pool("pinned", "cache", host_flags=allocator.flags)
        else:
            self._pool = _core.Pool("pinned", "cache", allocator=allocator)
        self.allocator = allocator

    def allocate(self, shape, dtype, order="C"):
        """A numpy array of `shape` and `dtype` in pinned memory; its .base is the
        PooledHostAllocation, which goes back to the pool when the array dies."""
        shape, dtype, _, nbytes = _layout(shape, dtype, None, order)
        alloc = self._pool.allocate(nbytes)
        if nbytes == 0:
            return np.ndarray(shape, dtype, order=order)
        return np.ndarray(shape, dtype, buffer=alloc, order=order)

    def __repr__(self):
        return "<PageLockedMemoryPool %d active, %d held blocks>" % (self.active_blocks,
                                                                      self.held_blocks)
