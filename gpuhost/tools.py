"""pycuda's ``pycuda.tools`` for gpuhost, at the path pycuda users import: the names of
`gpuhost.compat.pycuda.tools` (the default device and context, per-context memoization,
device data and occupancy, test helpers and memory pools)."""
from .compat.pycuda.tools import (  # noqa: F401
    DeviceData,
    DeviceMemoryPool,
    OccupancyRecord,
    PageLockedAllocator,
    PageLockedMemoryPool,
    PooledDeviceAllocation,
    PooledHostAllocation,
    __all__,
    clear_context_caches,
    context_dependent_memoize,
    get_default_device,
    host_alloc_flags,
    make_default_context,
    mark_cuda_test,
)
