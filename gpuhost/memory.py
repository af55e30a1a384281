"""CuPy's memory API (``cupy.cuda`` / ``cupy.cuda.memory``) over gpuhost's pools, with the
stream given rather than CuPy's current one (a face of gpuhost: the code is in
gpuhost/compat/cupy/, by subject; gpuhost.compat.cupy.memory is the same API on CuPy's
current stream).

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
from .compat.cupy._allocators import (  # noqa: F401
    PythonFunctionAllocator,
    alloc,
    get_allocator,
    set_allocator,
    using_allocator,
)
# The names of its __all__, and the allocators that are CuPy's private ones (_malloc: no
# pool, what set_allocator(None) selects; _malloc_pinned: pinned memory without a pool).
from .compat.cupy._common import OutOfMemoryError, _allocation_unit_size  # noqa: F401
from .compat.cupy._memory import (  # noqa: F401
    BaseMemory,
    ManagedMemory,
    Memory,
    MemoryAsync,
    PooledMemory,
    UnownedMemory,
    _malloc,
    malloc_async,
    malloc_managed,
)
from .compat.cupy._pinned import (  # noqa: F401
    PinnedMemory,
    PinnedMemoryPointer,
    PinnedMemoryPool,
    PooledPinnedMemory,
    _malloc_pinned,
    alloc_pinned_memory,
    get_default_pinned_memory_pool,
    set_pinned_memory_allocator,
)
from .compat.cupy._pointer import MemoryPointer  # noqa: F401
from .compat.cupy._pools import MemoryAsyncPool, MemoryPool, get_default_memory_pool  # noqa: F401

__all__ = [
    "BaseMemory", "ManagedMemory", "Memory", "MemoryAsync", "MemoryPointer", "MemoryPool",
    "MemoryAsyncPool", "OutOfMemoryError", "PinnedMemory", "PinnedMemoryPointer", "PinnedMemoryPool",
    "PooledMemory", "PooledPinnedMemory", "PythonFunctionAllocator", "UnownedMemory", "alloc",
    "alloc_pinned_memory", "get_allocator", "get_default_memory_pool",
    "get_default_pinned_memory_pool", "malloc_async", "malloc_managed", "set_allocator",
    "set_pinned_memory_allocator", "using_allocator",
]
