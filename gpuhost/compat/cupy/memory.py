"""cupy.cuda.memory's names: gpuhost.memory's, re-exported (``from cupy.cuda import
memory`` code imports this module). See gpuhost.memory for the differences from CuPy."""
from ...memory import (  # noqa: F401
    BaseMemory,
    ManagedMemory,
    Memory,
    MemoryAsync,
    MemoryPointer,
    MemoryPool,
    OutOfMemoryError,
    UnownedMemory,
    alloc,
    get_allocator,
    get_default_memory_pool,
    malloc_async,
    malloc_managed,
    set_allocator,
)

__all__ = [
    "BaseMemory", "ManagedMemory", "Memory", "MemoryAsync", "MemoryPointer", "MemoryPool",
    "OutOfMemoryError", "UnownedMemory", "alloc", "get_allocator", "get_default_memory_pool",
    "malloc_async", "malloc_managed", "set_allocator",
]
