"""cupy.cuda.pinned_memory's names: gpuhost.memory's pinned-memory API
(compat/cupy/_pinned.py), re-exported."""
from ._pinned import (  # noqa: F401
    PinnedMemory,
    PinnedMemoryPointer,
    PinnedMemoryPool,
    PooledPinnedMemory,
    alloc_pinned_memory,
    get_default_pinned_memory_pool,
    set_pinned_memory_allocator,
)

__all__ = [
    "PinnedMemory", "PinnedMemoryPointer", "PinnedMemoryPool", "PooledPinnedMemory",
    "alloc_pinned_memory",
    "get_default_pinned_memory_pool", "set_pinned_memory_allocator",
]
