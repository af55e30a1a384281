"""pycuda's ``pycuda.tools`` for gpuhost: the default device and context, per-context
memoization, device data and occupancy, and test helpers."""
from ._tools import (  # noqa: F401
    DeviceData,
    OccupancyRecord,
    clear_context_caches,
    context_dependent_memoize,
    get_default_device,
    make_default_context,
    mark_cuda_test,
)
from ._pools import (  # noqa: F401  (memory pools)
    DeviceMemoryPool,
    PageLockedAllocator,
    PageLockedMemoryPool,
    PooledDeviceAllocation,
    PooledHostAllocation,
    host_alloc_flags,
)

__all__ = [
    "DeviceData", "OccupancyRecord", "clear_context_caches", "context_dependent_memoize",
    "get_default_device", "make_default_context", "mark_cuda_test", "DeviceMemoryPool",
    "PageLockedAllocator", "PageLockedMemoryPool", "PooledDeviceAllocation",
    "PooledHostAllocation", "host_alloc_flags",
]
