"""cupy.cuda's low-level names over gpuhost's own types, for host code written against
cupy.cuda:

    from gpuhost.compat import cupy as cuda          # was: from cupy import cuda
    pool = cuda.MemoryPool()
    cuda.set_allocator(pool.malloc)
    s = cuda.Stream(non_blocking=True)
    with cuda.Device(0), s:
        start = s.record()
        ...
        end = s.record()
    end.synchronize()
    print(cuda.get_elapsed_time(start, end))

Laid out as cupy.cuda: the submodules device, stream, memory, pinned_memory, graph,
runtime, driver, profiler and nvtx hold the same names as CuPy's, and the package itself
the classes and functions CuPy 14's does (Device, Stream, MemoryPool, Graph ...). Devices,
streams and events wrap gpuhost's C types (``Stream._gpuhost()`` is the gpuhost Stream;
any gpuhost ``stream=`` argument takes these streams); the memory API is gpuhost.memory's,
with CuPy's current stream where a stream is left out; runtime raises CUDARuntimeError as
CuPy's. What differs from CuPy is listed in README.md ("CuPy's low-level names").
"""
import contextlib

from ... import _core
from . import device, driver, graph, memory, nvtx, pinned_memory, profiler, runtime, stream
from ._libs import CUBLASError, CUSOLVERError, CUSPARSEError
from .device import (
    Device,
    get_cublas_handle,
    get_cusolver_handle,
    get_cusparse_handle,
    get_device_id,
)
from .graph import Graph
from .memory import (
    BaseMemory,
    ManagedMemory,
    Memory,
    MemoryAsync,
    MemoryAsyncPool,
    MemoryPointer,
    MemoryPool,
    OutOfMemoryError,
    PooledMemory,
    PythonFunctionAllocator,
    UnownedMemory,
    alloc,
    get_allocator,
    get_default_memory_pool,
    malloc_async,
    malloc_managed,
    set_allocator,
    using_allocator,
)
from .pinned_memory import (
    PinnedMemory,
    PinnedMemoryPointer,
    PinnedMemoryPool,
    PooledPinnedMemory,
    alloc_pinned_memory,
    get_default_pinned_memory_pool,
    set_pinned_memory_allocator,
)
from .runtime import CUDARuntimeError
from .stream import Event, ExternalStream, Stream, get_current_stream, get_elapsed_time

__all__ = [
    "BaseMemory", "CUBLASError", "CUDARuntimeError", "CUSOLVERError", "CUSPARSEError",
    "Device", "Event", "ExternalStream", "Graph", "ManagedMemory", "Memory", "MemoryAsync",
    "MemoryAsyncPool",
    "MemoryPointer", "MemoryPool", "OutOfMemoryError", "PinnedMemory", "PinnedMemoryPointer",
    "PinnedMemoryPool", "PooledMemory", "PooledPinnedMemory", "PythonFunctionAllocator",
    "Stream", "UnownedMemory", "alloc", "alloc_pinned_memory", "device", "driver",
    "get_allocator", "get_cublas_handle", "get_current_stream", "get_cusolver_handle",
    "get_cusparse_handle", "get_default_memory_pool", "get_default_pinned_memory_pool",
    "get_device_id", "get_elapsed_time", "graph", "is_available", "malloc_async",
    "malloc_managed", "memory", "nvtx", "pinned_memory", "profile", "profiler", "runtime",
    "set_allocator", "set_pinned_memory_allocator", "stream", "using_allocator",
]


def is_available():
    """Whether a CUDA driver and at least one device can be used, as ``cupy.is_available``.

    Never raises.

    Returns
    -------
    bool

    Examples
    --------
    >>> from gpuhost.compat import cupy as cuda
    >>> cuda.is_available()
    True
    """
    try:
        return _core.is_available() and _core.device_count() > 0
    except Exception:
        return False


@contextlib.contextmanager
def profile():
    """Collect profiling data for the duration of the block, as ``cupy.cuda.profile``.

    `profiler.start` at its start, `profiler.stop` at its end (also when the block
    raises): with ``nsys --capture-range=cudaProfilerApi`` only the block is profiled.
    Without a profiler attached it does nothing.

    Examples
    --------
    >>> from gpuhost.compat import cupy as cuda
    >>> with cuda.profile():
    ...     d = gpuhost.to_device(np.arange(4))
    """
    profiler.start()
    try:
        yield
    finally:
        profiler.stop()
