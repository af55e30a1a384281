"""CuPy's pinned host memory (``cupy.cuda.pinned_memory``: PinnedMemory, PinnedMemoryPool,
``alloc_pinned_memory`` ...) over gpuhost's C pinned pools; part of gpuhost.memory.
"""
from ... import _core
from ..._unbound import unbound as _unbound
from ...errors import CudaOutOfMemoryError
from ._common import OutOfMemoryError, _pools_display, _pools_pretty_rows


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
