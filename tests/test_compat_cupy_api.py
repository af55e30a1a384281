"""gpuhost.compat.cupy as CuPy 14's own tests pin it down: the default streams' identity,
the current-stream stack, Stream.from_external, Device's attributes and PCI lookups, the
pool types CuPy hands out, using_allocator, managed-memory hints, MemoryAsyncPool, and the
runtime / driver modules with CUDARuntimeError. Runs on the fake driver and on a GPU."""
import ctypes
import gc
import pickle
import re
import threading
import warnings
import weakref

import numpy as np
import pytest

import gpuhost
import gpuhost.memory
from gpuhost import CudaAPIError, CudaOutOfMemoryError, _core
from gpuhost.compat import cupy as cuda
from gpuhost.compat.cupy import driver, memory, pinned_memory, runtime

RNG = np.random.default_rng()


@pytest.fixture(autouse=True)
def _restore():
    """Every test starts and ends on device 0 with the null stream current."""
    cuda.Device(0).use()
    yield
    cuda.Device(0).use()
    cuda.Stream.null.use()
    gpuhost.memory.set_allocator(gpuhost.memory.get_default_memory_pool().malloc)


# ---- streams ----

def test_default_streams_compare_and_hash_by_handle():
    assert cuda.Stream(null=True) == cuda.Stream.null and cuda.Stream(True) == cuda.Stream.null
    assert cuda.Stream(ptds=True) == cuda.Stream.ptds != cuda.Stream.null
    assert hash(cuda.Stream(null=True)) == hash(cuda.Stream.null)
    s = cuda.Stream()
    assert s != cuda.Stream.null and s != cuda.Stream() and s != s.ptr
    assert len({cuda.Stream(): 1, cuda.Stream(): 2}) == 2
    assert cuda.Stream.null.device_id == cuda.Stream.ptds.device_id == -1
    assert s.device_id == 0 and s.ptr == s._gpuhost().handle


def test_use_and_with_follow_cupys_stack():
    s1, s2, s3 = cuda.Stream(), cuda.Stream(), cuda.Stream()
    cuda.Stream.ptds.use()
    assert cuda.get_current_stream() == cuda.Stream.ptds
    with s1:
        assert cuda.get_current_stream() is s1
        assert s2.use() is s2 and cuda.get_current_stream() is s2
        with s3:
            assert cuda.get_current_stream() is s3
            ref = weakref.ref(s2)
            del s2  # no name is left, but nothing current is lost
        assert cuda.get_current_stream() is s1
    assert ref() is None  # once nothing makes it current, it is gone
    assert cuda.get_current_stream() is cuda.Stream.null  # ptds.use() was forgotten


def test_current_stream_is_per_thread():
    s = cuda.Stream()
    seen = []
    with s:
        t = threading.Thread(target=lambda: seen.append(cuda.get_current_stream()))
        t.start()
        t.join()
        assert cuda.get_current_stream() is s
    assert seen == [cuda.Stream.null]


def test_record_and_elapsed_time_use_the_current_stream():
    s = cuda.Stream()
    with s:
        e = cuda.Event()
        e.record()
        assert e._event.recorded
        e.synchronize()
        assert e.done
    start, end = cuda.Event(), cuda.Event()
    start.record(s)
    end.record(s)
    end.synchronize()
    assert cuda.get_elapsed_time(start, end) >= 0.0


class _Foreign:
    def __init__(self, result):
        self.result = result

    def __cuda_stream__(self):
        return self.result


def test_from_external_wraps_a_protocol_stream_and_keeps_it_alive():
    real = cuda.Stream()
    foreign = _Foreign((0, real.ptr))
    foreign.owner = real  # a protocol object owns its stream, as PyTorch's and CuPy's do
    ref = weakref.ref(foreign)
    s = cuda.Stream.from_external(foreign)
    assert (s.ptr, s.device_id, s._foreign_stream_ref) == (real.ptr, -1, foreign)
    assert s == real and s.__cuda_stream__() == (0, real.ptr)
    del foreign
    gc.collect()
    assert ref() is not None
    with s:  # usable: device -1 means the current device
        assert cuda.get_current_stream() is s
        a = memory.alloc(64)
        a.memset_async(7, 64)
    s.synchronize()
    assert s.done
    out = np.zeros(64, np.uint8)
    a.copy_to_host(out.ctypes.data, 64)
    assert (out == 7).all()
    del s, a
    gc.collect()
    assert ref() is not None  # the pool's block ordered on it keeps the stream alive
    memory.get_default_memory_pool().free_all_blocks()
    assert ref() is None
    again = cuda.Stream.from_external(real)  # a CuPy-style stream is one too
    assert again._foreign_stream_ref is real and again == real


@pytest.mark.parametrize("result, match", [
    (123, "must return a 2-tuple"), ((0,), "must return a 2-tuple"),
    (("x", 0), r"must return \(int, int\), got \(str, int\)"),
    ((0, "x"), r"must return \(int, int\), got \(int, str\)"),
    ((1, 12345), "unsupported version 1"), ((-1, 12345), "unsupported version -1"),
])
def test_from_external_refuses_what_is_not_the_protocol(result, match):
    with pytest.raises(TypeError, match=match):
        cuda.Stream.from_external(_Foreign(result))
    with pytest.raises(TypeError, match="object does not implement the CUDA stream protocol"):
        cuda.Stream.from_external(object())


def test_external_stream_is_deprecated_as_in_cupy_14():
    ptr = runtime.streamCreate()
    try:
        with pytest.warns(DeprecationWarning, match="ExternalStream is deprecated"):
            ext = cuda.ExternalStream(ptr)
        assert ext.ptr == ptr and ext.device_id == -1
        ext.synchronize()
        called = []
        ext.launch_host_func(called.append, 5)
        ext.synchronize()
        assert called == [5]
    finally:
        runtime.streamDestroy(ptr)


def test_priority_non_blocking_and_capturing():
    lo, hi = cuda.Stream(priority=0), cuda.Stream(priority=-1)
    assert (lo.priority, hi.priority) == (0, -1)
    assert cuda.Stream(non_blocking=True).is_non_blocking is True
    assert cuda.Stream().is_non_blocking is False
    assert lo.is_capturing() is False and cuda.Stream.null.is_capturing() is False
    assert gpuhost.stream().is_capturing() is False


# ---- devices ----

def test_attributes_by_the_runtimes_names():
    attrs = cuda.Device().attributes
    assert isinstance(attrs, dict) and all(type(v) is int for v in attrs.values())
    dev = gpuhost.gpus[0]
    assert attrs["MaxThreadsPerBlock"] == dev.MAX_THREADS_PER_BLOCK
    assert attrs["ComputeCapabilityMajor"] == dev.compute_capability[0]
    assert attrs["MultiProcessorCount"] == dev.MULTIPROCESSOR_COUNT
    assert attrs is not cuda.Device().attributes  # a copy each time


def test_a_device_that_does_not_exist_raises_the_runtimes_error():
    n = runtime.getDeviceCount()
    with pytest.raises(runtime.CUDARuntimeError, match="^cudaErrorInvalidDevice") as info:
        cuda.device.Device(n).attributes
    assert info.value.status == runtime.errorInvalidDevice
    with pytest.raises(runtime.CUDARuntimeError):
        runtime.setDevice(-1)
    with pytest.raises(runtime.CUDARuntimeError):
        runtime.deviceGetAttribute(runtime.cudaDevAttrWarpSize, n)


def test_pci_bus_id_round_trip_and_errors():
    for i in range(len(gpuhost.gpus)):
        d = cuda.Device(i)
        assert re.match(r"^[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]$",
                        d.pci_bus_id)
        assert cuda.Device.from_pci_bus_id(d.pci_bus_id) == d
        assert cuda.Device(cuda.Device.from_pci_bus_id(d.pci_bus_id)) == d
    with pytest.raises(runtime.CUDARuntimeError, match="^cudaErrorInvalidValue") as info:
        cuda.Device.from_pci_bus_id("fake:id")
    assert info.value.status == 1
    with pytest.raises(runtime.CUDARuntimeError) as info:
        cuda.Device.from_pci_bus_id("FFFF:FF:FF.F")
    assert info.value.status in (1, 101)
    with pytest.raises(TypeError, match="pci_bus_id must be a str"):
        _core.device_by_pci_bus_id(3)


def test_attributes_of_a_missing_device_raise_the_runtime_modules_error_class():
    n = cuda.runtime.getDeviceCount()
    assert cuda.runtime.CUDARuntimeError is cuda.CUDARuntimeError is runtime.CUDARuntimeError
    for missing in (n, n + int(RNG.integers(1, 100))):
        with pytest.raises(cuda.runtime.CUDARuntimeError,
                           match=r"^cudaErrorInvalidDevice: invalid device ordinal$") as info:
            cuda.device.Device(missing).attributes
        assert type(info.value) is cuda.runtime.CUDARuntimeError
        assert info.value.status == cuda.runtime.errorInvalidDevice
    last = cuda.Device(n - 1).attributes  # a failed lookup leaves the others working
    assert last["MaxThreadsPerBlock"] == gpuhost.gpus[n - 1].MAX_THREADS_PER_BLOCK


def test_from_pci_bus_id_of_a_malformed_id_is_the_runtimes_invalid_value():
    with pytest.raises(cuda.runtime.CUDARuntimeError,
                       match=r"^cudaErrorInvalidValue: invalid argument$") as info:
        cuda.Device.from_pci_bus_id("fake:id")
    assert info.value.status == cuda.runtime.errorInvalidValue
    assert not isinstance(info.value, CudaAPIError)  # CuPy's class, not gpuhost's


def test_from_pci_bus_id_round_trips_in_every_form_the_driver_takes():
    """The id has the 4-digit domain CuPy's 13-byte cudaDeviceGetPCIBusId gives, and the
    driver's lookup takes it back, as it takes nvidia-smi's "00000000:..." form, lower case
    and "[bus]:[device].[function]"; an id of no device is CuPy's CUDARuntimeError."""
    for i in range(runtime.getDeviceCount()):
        d = cuda.Device(i)
        assert re.fullmatch(r"[0-9A-F]{4}:[0-9A-F]{2}:[0-9A-F]{2}\.0", d.pci_bus_id)
        assert cuda.Device.from_pci_bus_id(d.pci_bus_id) == d
        assert cuda.Device.from_pci_bus_id(d.pci_bus_id.lower()) == d
        assert cuda.Device.from_pci_bus_id("0000" + d.pci_bus_id) == d
        assert runtime.deviceGetByPCIBusId(d.pci_bus_id.split(":", 1)[1]) == i
    with pytest.raises(cuda.runtime.CUDARuntimeError, match=r"^cudaErrorInvalidValue: "):
        cuda.Device.from_pci_bus_id("not:a:bus.id")

def test_from_pci_bus_id_of_an_unknown_device_is_the_runtimes_invalid_device():
    bus = "%04X:%02X:1F.0" % (int(RNG.integers(0x100, 0xFFFF)), int(RNG.integers(0, 0xFF)))
    assert bus not in [cuda.Device(i).pci_bus_id for i in range(runtime.getDeviceCount())]
    for unknown in ("FFFF:FF:FF.F", bus):
        with pytest.raises(cuda.runtime.CUDARuntimeError,
                           match=r"^cudaErrorInvalidDevice: invalid device ordinal$") as info:
            cuda.Device.from_pci_bus_id(unknown)
        assert info.value.status == cuda.runtime.errorInvalidDevice
        assert not isinstance(info.value, CudaAPIError)


@pytest.mark.gpus(2)
def test_use_returns_the_device_and_with_restores_across_objects():
    d0, d1 = cuda.Device(0), cuda.Device(1)
    assert d1.use() is d1 and cuda.Device().id == 1
    with cuda.Device(0):
        assert cuda.Device().id == 0
        d1.use()
        with cuda.Device(1):
            assert cuda.Device().id == 1
        assert cuda.Device().id == 1  # what use() made current stays, as in CuPy
    assert cuda.Device().id == 1
    assert d0.use() is d0 and cuda.Device().id == 0


@pytest.mark.gpus(2)
def test_from_pointer_names_the_memorys_device():
    with cuda.Device(1):
        p = memory.alloc(16)
    assert cuda.device.from_pointer(p.ptr) == cuda.Device(1)
    assert cuda.device.from_pointer(memory.alloc(16).ptr).id == 0


# ---- memory: the types CuPy hands out ----

def test_pool_hands_out_pooled_memory_and_plain_memory_for_size_zero():
    pool = memory.MemoryPool()
    mem = pool.malloc(1).mem
    assert isinstance(mem, memory.PooledMemory) and isinstance(mem, memory.BaseMemory)
    assert pool.n_free_blocks() == 0
    mem.free()
    assert mem.ptr == 0 and pool.n_free_blocks() == 1
    mem.free()  # a second free does nothing
    assert pool.n_free_blocks() == 1
    pool.free_all_blocks()
    assert pool.n_free_blocks() == 0
    zero = pool.malloc(0).mem
    assert type(zero) is memory.Memory and zero.ptr == 0
    for allocator in (memory._malloc, memory.malloc_managed):
        p = memory.MemoryPool(allocator).malloc(100)
        assert isinstance(p, memory.MemoryPointer) and isinstance(p.mem, memory.PooledMemory)


def test_a_pool_calls_its_allocator_with_the_size_alone():
    calls = []

    def malloc_managed(*args):  # CuPy's allocators take one argument: the size
        calls.append(args)
        return memory.malloc_managed(*args)

    pool = memory.MemoryPool(malloc_managed)
    n = int(RNG.integers(1, 4096))
    with cuda.Device():
        p = pool.malloc(n)
    assert len(calls) == 1 and len(calls[0]) == 1 and calls[0][0] >= n
    assert isinstance(p.mem, memory.PooledMemory)
    data = RNG.integers(0, 256, n, dtype=np.uint8)
    p.copy_from_host(data.ctypes.data, n)
    back = np.zeros_like(data)
    p.copy_to_host(back.ctypes.data, n)
    np.testing.assert_array_equal(back, data)


@pytest.mark.parametrize("allocator", [memory._malloc, memory.malloc_managed])
def test_a_pool_over_cupys_allocators_frees_twice_and_empties(allocator):
    pool = memory.MemoryPool(allocator)
    with cuda.Device():
        mem = pool.malloc(int(RNG.integers(1, 4096))).mem
        assert isinstance(mem, memory.PooledMemory) and pool.n_free_blocks() == 0
        mem.free()
        mem.free()  # a double free is no error, and gives the block back once
        assert pool.n_free_blocks() == 1
        pool.free_all_blocks()
        assert pool.n_free_blocks() == 0
        pool.malloc(int(RNG.integers(1, 4096))).mem.free()
        assert pool.n_free_blocks() == 1
        with pytest.warns(DeprecationWarning,
                          match="free_all_free is deprecated. Use free_all_blocks instead."):
            pool.free_all_free()
        assert pool.n_free_blocks() == 0


ALLOCATOR_FUNCTIONS = [
    (memory, "_malloc"), (memory, "malloc_managed"), (memory, "malloc_async"), (memory, "alloc"),
    (gpuhost.memory, "_malloc"), (gpuhost.memory, "malloc_managed"),
    (gpuhost.memory, "malloc_async"), (gpuhost.memory, "alloc"),
    (pinned_memory, "alloc_pinned_memory"), (gpuhost.memory, "_malloc_pinned"),
]


@pytest.mark.parametrize("module, name", ALLOCATOR_FUNCTIONS,
                         ids=["%s.%s" % (m.__name__, n) for m, n in ALLOCATOR_FUNCTIONS])
def test_allocator_functions_kept_on_a_class_do_not_bind_as_cupys_builtins(module, name):
    """CuPy's parametrized tests keep its allocator functions (builtins) as class
    attributes and call ``self.allocator(size)``: gpuhost's behave the same."""
    fn = getattr(module, name)

    class Params:  # as cupy.testing.parameterize makes its test classes
        allocator = fn

    case = Params()
    assert case.allocator is fn and Params.allocator is fn  # CuPy's tests compare by identity
    n = int(RNG.integers(1, 4096))
    with cuda.Device():
        p = case.allocator(n)
    data = RNG.integers(0, 256, n, dtype=np.uint8)
    back = np.zeros_like(data)
    if module is pinned_memory or name == "_malloc_pinned":
        ctypes.memmove(p.ptr, data.ctypes.data, n)
        ctypes.memmove(back.ctypes.data, p.ptr, n)
    else:
        p.copy_from_host(data.ctypes.data, n)
        p.copy_to_host(back.ctypes.data, n)
    np.testing.assert_array_equal(back, data)
    assert fn.__name__ == name and repr(fn) == "<built-in function %s>" % name
    assert pickle.loads(pickle.dumps(fn)) is fn  # by reference, as a module's function


def test_allocator_setters_and_getters_do_not_bind_either():
    class Params:
        set_allocator = memory.set_allocator
        get_allocator = memory.get_allocator
        set_pinned = pinned_memory.set_pinned_memory_allocator

    case = Params()
    pool = memory.MemoryPool()
    case.set_allocator(pool.malloc)
    assert case.get_allocator() == pool.malloc
    case.set_allocator(None)
    assert memory.get_allocator() is memory._malloc or memory.get_allocator() is \
        gpuhost.memory._malloc
    case.set_pinned(None)
    assert pinned_memory.alloc_pinned_memory(16).ptr != 0
    pinned_memory.set_pinned_memory_allocator(
        pinned_memory.get_default_pinned_memory_pool().malloc)


def test_pinned_pool_hands_out_pooled_pinned_memory():
    pool = pinned_memory.PinnedMemoryPool()
    mem = pool.malloc(1).mem
    assert isinstance(mem, pinned_memory.PinnedMemory)
    assert isinstance(mem, pinned_memory.PooledPinnedMemory)
    mem.free()
    mem.free()
    assert pool.n_free_blocks() == 1
    pool.free_all_blocks()
    assert pool.n_free_blocks() == 0
    zero = pool.malloc(0).mem
    assert type(zero) is pinned_memory.PinnedMemory


def test_pinned_pool_takes_an_allocator_of_any_addresses():
    class Mock(pinned_memory.PinnedMemory):
        cur = 1

        def __init__(self, size):
            self.ptr, self.size = Mock.cur, size
            Mock.cur += size

    pool = pinned_memory.PinnedMemoryPool(
        allocator=lambda size: pinned_memory.PinnedMemoryPointer(Mock(size), 0))
    p1, p2 = pool.malloc(1000), pool.malloc(1000)
    assert p1.ptr != p2.ptr
    ptr = p1.ptr
    del p1
    assert pool.malloc(1000).ptr == ptr


def test_pointer_arithmetic_keeps_the_class_and_copies_on_the_current_stream():
    p = memory.alloc(64)
    q = p + 8
    assert type(q) is memory.MemoryPointer and int(q) == p.ptr + 8 and type(8 + p) is type(q)
    q -= 8
    assert int(q) == p.ptr
    data = RNG.integers(0, 1 << 31, 16, dtype=np.int32)
    out = np.zeros_like(data)
    s = cuda.Stream()
    with s:
        p.copy_from_host_async(data.ctypes.data, data.nbytes)
        b = memory.alloc(64)
        b.copy_from_device_async(p, 64)
        b.copy_to_host_async(ctypes.c_void_p(out.ctypes.data), 64)
    s.synchronize()
    assert (out == data).all()


def test_out_of_memory_error_is_cupys_and_pickles():
    e = memory.OutOfMemoryError(124, 1024, 1024)
    assert str(e) == ("Out of memory allocating 124 bytes (allocated so far: 1,024 bytes, "
                      "limit set to: 1,024 bytes).")
    assert str(memory.OutOfMemoryError(5, 0)) == "Out of memory allocating 5 bytes " \
        "(allocated so far: 0 bytes)."
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is memory.OutOfMemoryError and back.args == e.args and str(back) == str(e)
    assert isinstance(e, CudaOutOfMemoryError) and isinstance(e, MemoryError)
    pool = memory.MemoryPool()
    pool.set_limit(size=2048)
    keep = pool.malloc(1024)
    with pytest.raises(memory.OutOfMemoryError, match="limit set to: 2,048 bytes") as info:
        pool.malloc(4096)
    assert isinstance(info.value.__cause__, CudaOutOfMemoryError)
    del keep


# ---- graphs ----

def test_graph_is_a_package_level_name_as_in_cupy_14():
    assert cuda.Graph is cuda.graph.Graph and "Graph" in cuda.__all__
    with pytest.raises(NotImplementedError, match="must be created via stream capture"):
        cuda.Graph()
    n = int(RNG.integers(8, 256))
    src = gpuhost.pinned_array(n, np.int64)
    dst = gpuhost.pinned_array(n, np.int64)
    d = gpuhost.device_array(n, np.int64)
    s = cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        d.copy_to_device(src, stream=s)
        d.copy_to_host(dst, stream=s)
        g = s.end_capture()
    assert isinstance(g, cuda.Graph)
    src[:] = RNG.integers(-2**62, 2**62, n)
    g.launch(s)
    s.synchronize()
    np.testing.assert_array_equal(dst, src)


# ---- memory: allocators ----

def test_using_allocator_is_per_thread_and_nests():
    default = memory.get_allocator()
    a, b = memory.MemoryPool(), memory.MemoryPool()
    other = []
    with memory.using_allocator(a.malloc):
        assert memory.get_allocator() == a.malloc
        with memory.using_allocator(b.malloc):
            assert memory.get_allocator() == b.malloc
            t = threading.Thread(target=lambda: other.append(memory.get_allocator()))
            t.start()
            t.join()
            with pytest.raises(ValueError, match="inside `using_allocator`"):
                memory.set_allocator(a.malloc)
            arr = gpuhost.device_array(100, np.int64)  # device arrays use it too
            assert b.used_bytes() >= 800 and a.used_bytes() == 0
        assert memory.get_allocator() == a.malloc
    assert memory.get_allocator() == default and other == [default]
    del arr
    with memory.using_allocator():  # None: no pool
        assert memory.get_allocator() is gpuhost.memory._malloc
    with pytest.raises(TypeError, match="allocator must be callable"):
        with memory.using_allocator(3):
            pass


def test_using_allocator_leaves_other_threads_arrays_alone():
    pool = memory.MemoryPool()
    entered, done = threading.Event(), threading.Event()

    def body():
        with memory.using_allocator(pool.malloc):
            entered.set()
            done.wait(10)

    t = threading.Thread(target=body)
    t.start()
    entered.wait(10)
    try:
        arr = gpuhost.to_device(np.arange(64))
        assert pool.used_bytes() == 0 and (arr.copy_to_host() == np.arange(64)).all()
    finally:
        done.set()
        t.join()


def test_python_function_allocator_calls_malloc_and_free():
    calls = []

    def malloc(size, device_id):
        calls.append(("malloc", size, device_id))
        return runtime.malloc(size)

    def free(ptr, device_id):
        calls.append(("free", device_id))
        runtime.free(ptr)

    alloc = memory.PythonFunctionAllocator(malloc, free)
    p = alloc.malloc(256)
    data = RNG.integers(0, 255, 256, dtype=np.uint8)
    p.copy_from_host(data.ctypes.data, 256)
    out = np.empty_like(data)
    p.copy_to_host(out.ctypes.data, 256)
    assert (out == data).all() and calls == [("malloc", 256, 0)]
    del p
    gc.collect()
    assert calls[-1] == ("free", 0)


def test_malloc_async_allocates_on_the_current_stream():
    s = cuda.Stream()
    with s:
        p = memory.malloc_async(100)
        assert isinstance(p.mem, memory.MemoryAsync)
        assert p.mem.stream_ref().ptr == s.ptr
    q = memory.malloc_async(100, stream=s)
    assert q.mem.stream_ref() is s
    assert memory.malloc_async(0).ptr == 0
    del p, q, s
    gc.collect()


def test_managed_memory_prefetch_and_advise():
    p = memory.malloc_managed(1024)
    assert isinstance(p.mem, memory.ManagedMemory)
    p.mem.prefetch(cuda.get_current_stream())
    p.mem.prefetch(cuda.Stream(), device_id=0)
    p.mem.prefetch(cuda.Stream(), device_id=runtime.cudaCpuDeviceId)
    p.mem.advise(runtime.cudaMemAdviseSetReadMostly, cuda.Device(0))
    p.mem.advise(runtime.cudaMemAdviseSetPreferredLocation, runtime.cudaCpuDeviceId)
    with pytest.raises(runtime.CUDARuntimeError) as info:
        p.mem.prefetch(cuda.Stream(), device_id=10 ** 8)
    assert info.value.status == runtime.errorInvalidDevice
    with pytest.raises(runtime.CUDARuntimeError) as info:
        p.mem.advise(-1, cuda.Device(0))
    assert info.value.status == runtime.errorInvalidValue
    # gpuhost's own managed memory has them too, raising gpuhost's errors
    m = gpuhost.memory.ManagedMemory(4096)
    m.prefetch(gpuhost.stream())
    m.advise(1, 0)
    with pytest.raises(CudaAPIError, match="cuMemAdvise"):
        m.advise(99, 0)
    with pytest.raises(CudaAPIError, match="cuMemPrefetchAsync"):
        gpuhost.memory.Memory(64)  # not managed memory:
        _core.mem_prefetch(gpuhost.memory.Memory(64).ptr, 64, 0)


def test_memory_async_pool_statistics_and_limits():
    pool = memory.MemoryAsyncPool()
    unit = memory._allocation_unit_size
    assert pool.get_limit() == 2 ** 64 - 1
    base = pool.used_bytes()
    p1 = pool.malloc(unit * 2)
    assert isinstance(p1.mem, memory.MemoryAsync)
    assert not isinstance(p1.mem, memory.PooledMemory)
    assert pool.used_bytes() == base + unit * 2
    p2 = pool.malloc(unit * 3 - 5)  # rounded up to the unit
    assert pool.used_bytes() == base + unit * 5
    assert pool.free_bytes() == pool.total_bytes() - pool.used_bytes() >= 0
    del p1, p2
    gc.collect()
    pool.free_all_blocks()
    assert pool.used_bytes() == base
    with pytest.raises(NotImplementedError):
        pool.n_free_blocks()
    pool.set_limit(size=1024)
    assert pool.get_limit() == 1024
    pool.set_limit(fraction=0.5)
    assert pool.get_limit() == int(0.5 * runtime.memGetInfo()[1])
    pool.set_limit(size=0)
    assert pool.get_limit() == 2 ** 64 - 1
    for kwargs, match in (({"size": -1}, "size out of range"),
                          ({"fraction": 1.1}, "fraction out of range"),
                          ({"size": 1, "fraction": 0.1}, "cannot be specified at one time")):
        with pytest.raises(ValueError, match=match):
            pool.set_limit(**kwargs)
    with pytest.raises(NotImplementedError, match="pool_handles"):
        memory.MemoryAsyncPool(12345)
    with pytest.raises(ValueError, match="unknown memory-pool attribute"):
        _core.mempool_attribute(0, "nope")
    with pytest.raises(ValueError, match="read-only"):
        _core.mempool_attribute(0, "used_current", 5)
    with pytest.raises(CudaAPIError, match="INVALID_DEVICE"):
        _core.mempool_attribute(99, "used_current")


# ---- runtime and driver ----

def test_runtime_devices_and_versions():
    assert runtime.is_hip is False
    assert runtime.getDeviceCount() == len(gpuhost.gpus)
    runtime.setDevice(0)
    assert runtime.getDevice() == 0
    runtime.deviceSynchronize()
    free, total = runtime.memGetInfo()
    assert 0 < free <= total
    major, minor = gpuhost.driver_version() if hasattr(gpuhost, "driver_version") else \
        _core.driver_version()
    assert runtime.driverGetVersion() == driver.driverGetVersion() == major * 1000 + minor * 10
    assert runtime.runtimeGetVersion() == driver.get_build_version() == _core.CUDA_HEADERS_VERSION
    assert driver._is_cuda_python() is False
    dev = gpuhost.gpus[0]
    assert runtime.deviceGetAttribute(runtime.cudaDevAttrMaxThreadsPerBlock, 0) == \
        dev.MAX_THREADS_PER_BLOCK
    assert runtime.cudaDevAttrMemoryPoolsSupported == 115
    props = runtime.getDeviceProperties(0)
    assert props["name"] == dev.name.encode()
    assert (props["major"], props["minor"]) == dev.compute_capability
    assert props["totalGlobalMem"] == dev.total_memory
    assert props["maxThreadsDim"] == (dev.MAX_BLOCK_DIM_X, dev.MAX_BLOCK_DIM_Y,
                                      dev.MAX_BLOCK_DIM_Z)
    assert runtime.deviceGetPCIBusId(0) == dev.pci_bus_id
    assert runtime.deviceGetByPCIBusId(dev.pci_bus_id) == 0


def test_runtime_error_carries_status_and_pickles():
    with pytest.raises(runtime.CUDARuntimeError) as info:
        runtime.setDevice(runtime.getDeviceCount())
    e = info.value
    assert isinstance(e, RuntimeError) and e.status == 101
    assert str(e) == "cudaErrorInvalidDevice: invalid device ordinal"
    back = pickle.loads(pickle.dumps(e))
    assert back.status == 101 and str(back) == str(e)
    assert cuda.CUDARuntimeError is runtime.CUDARuntimeError


def test_runtime_memory_round_trip():
    n = 4096
    data = RNG.integers(0, 1 << 62, n // 8, dtype=np.int64)
    out = np.zeros_like(data)
    d = runtime.malloc(n)
    runtime.memcpy(d, data.ctypes.data, n, runtime.memcpyHostToDevice)
    d2 = runtime.malloc(n)
    runtime.memcpy(d2, d, n, runtime.memcpyDefault)
    runtime.memcpy(out.ctypes.data, d2, n, runtime.memcpyDeviceToHost)
    assert (out == data).all()
    runtime.memset(d2, 0xAB, n)
    raw = np.zeros(n, np.uint8)
    runtime.memcpy(raw.ctypes.data, d2, n, runtime.memcpyDeviceToHost)
    assert (raw == 0xAB).all()
    s = runtime.streamCreate()
    out[:] = 0
    runtime.memsetAsync(d, 0, 8, s)
    runtime.memcpyAsync(out.ctypes.data, d, n, runtime.memcpyDeviceToHost, s)
    runtime.streamSynchronize(s)
    assert out[0] == 0 and (out[1:] == data[1:]).all()
    assert runtime.streamQuery(s) == 0
    runtime.streamDestroy(s)
    with pytest.raises(runtime.CUDARuntimeError) as info:
        runtime.streamDestroy(s)
    assert info.value.status == runtime.errorInvalidResourceHandle
    with pytest.raises(runtime.CUDARuntimeError) as info:
        runtime.memcpy(d, d2, n, 7)
    runtime.free(d)
    runtime.free(d2)
    runtime.free(0)
    with pytest.raises(runtime.CUDARuntimeError, match="freed already") as info:
        runtime.free(d)
    assert info.value.status == runtime.errorInvalidValue
    m = runtime.mallocManaged(64)
    h = runtime.hostAlloc(64)
    assert runtime.pointerGetAttributes(m).type == runtime.memoryTypeManaged
    assert runtime.pointerGetAttributes(h).type == runtime.memoryTypeHost
    attrs = runtime.pointerGetAttributes(runtime.malloc(64))
    assert (attrs.type, attrs.device) == (runtime.memoryTypeDevice, 0)
    local = np.zeros(4)
    unknown = runtime.pointerGetAttributes(local.ctypes.data)
    assert (unknown.type, unknown.device) == (runtime.memoryTypeUnregistered,
                                              runtime.cudaInvalidDeviceId)
    runtime.free(m)
    runtime.freeHost(h)
    with pytest.raises(ValueError, match="must not be negative"):
        _core.memcpy(0, 0, -1)


def test_runtime_events_and_stream_waits():
    s = runtime.streamCreateWithFlags(runtime.streamNonBlocking)
    start, end = runtime.eventCreate(), runtime.eventCreateWithFlags(0)
    runtime.eventRecord(start, s)
    runtime.eventRecord(end, s)
    runtime.eventSynchronize(end)
    assert runtime.eventQuery(end) == 0
    assert runtime.eventElapsedTime(start, end) >= 0.0
    runtime.streamWaitEvent(0, end)
    assert runtime.streamIsCapturing(s) is False
    for e in (start, end):
        runtime.eventDestroy(e)
    with pytest.raises(runtime.CUDARuntimeError):
        runtime.eventRecord(start, s)
    runtime.streamDestroy(s)


def test_faults_become_runtime_errors(fake):
    fake.fail("cuMemcpyAsync", 700)
    d = runtime.malloc(64)
    with pytest.raises(runtime.CUDARuntimeError) as info:
        runtime.memcpy(d, d, 64, runtime.memcpyDeviceToDevice)
    assert info.value.status == 700 and str(info.value).startswith("cudaErrorIllegalAddress")
    fake.fail("cuDeviceGetByPCIBusId", 1)
    with pytest.raises(runtime.CUDARuntimeError):
        cuda.Device.from_pci_bus_id(gpuhost.gpus[0].pci_bus_id)
    fake.fail("cuStreamIsCapturing", 400)
    with pytest.raises(runtime.CUDARuntimeError) as info:
        cuda.Stream().is_capturing()
    assert info.value.status == 400
    runtime.free(d)
    warnings.simplefilter("default")


def test_alloc_orders_the_default_pools_memory_on_the_current_stream():
    s = cuda.Stream()
    with s:
        p = memory.alloc(1000)
    assert type(p) is memory.MemoryPointer and isinstance(p.mem, memory.PooledMemory)
    ptr = p.ptr
    del p
    with s:  # freed on s: handed out again on s at once
        assert memory.alloc(1000).ptr == ptr
    calls = []
    memory.set_allocator(lambda size: calls.append(size) or memory.Memory(size))
    memory.alloc(10)
    assert calls == [10]
