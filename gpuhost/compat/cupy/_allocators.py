"""CuPy's allocator API (``set_allocator``, ``get_allocator``, ``using_allocator``, ``alloc``,
``PythonFunctionAllocator``): which allocator device arrays and ``alloc()`` use, as the C
core's current allocator; part of gpuhost.memory.
"""
import contextlib
import threading
import weakref

from ... import _core
from ..._unbound import unbound as _unbound
from ._memory import BaseMemory, _malloc
from ._pointer import MemoryPointer
from ._pools import MemoryPool, _DefaultMemoryPool, _default_pool


# The current allocator: the default pool's malloc until set_allocator() says otherwise.
_current_allocator = _default_pool.malloc


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
