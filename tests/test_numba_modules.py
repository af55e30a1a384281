"""numba.cuda's submodules reached through the module (``cuda.devicearray``, ``cuda.driver``,
``cuda.cudadrv``, ``cuda.descriptor``): gpuhost's modules of those names, over gpuhost's
objects, as numba programs use them, and numba's EMM plugin example (numba-cuda's
test_emm_plugins.py) as written, with ``import gpuhost as cuda``."""
import ctypes
import importlib
import pickle
import re
import weakref

import numpy as np
import pytest

import gpuhost
import gpuhost as cuda  # as numba programs call the module

rng = np.random.default_rng()


# ---- the modules ----

def test_the_submodules_are_gpuhosts_own_modules_under_numbas_names():
    assert cuda.devicearray is cuda.cudadrv.devicearray
    assert cuda.driver is cuda.cudadrv.driver
    assert cuda.devicearray.__name__ == "gpuhost.cudadrv.devicearray"
    assert cuda.driver.__name__ == "gpuhost.cudadrv.driver"
    assert cuda.cudadrv.devices is gpuhost.devices and cuda.cudadrv.error is gpuhost.errors
    assert cuda.cudadrv.runtime is gpuhost.runtime
    for name in ("devices", "error", "runtime", "driver", "devicearray"):
        assert importlib.import_module("gpuhost.cudadrv." + name) is getattr(cuda.cudadrv, name)
    from gpuhost import devicearray, driver

    assert (devicearray, driver) == (cuda.devicearray, cuda.driver)
    assert {"cudadrv", "devicearray", "driver", "descriptor"} <= set(dir(gpuhost))


def test_no_numba_module_is_imported_for_them():
    from conftest import run_python

    proc = run_python("import sys, gpuhost as cuda\n"
                      "cuda.devicearray.DeviceNDArray, cuda.driver.AutoFreePointer\n"
                      "cuda.cudadrv.driver.driver.get_device_count()\n"
                      "print(sorted(m for m in sys.modules if m.split('.')[0] == 'numba'))\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_unknown_names_are_attribute_errors():
    with pytest.raises(AttributeError, match="module 'gpuhost.cudadrv.driver' has no attribute "
                                             "'nope'"):
        cuda.driver.nope
    with pytest.raises(AttributeError, match=r"^gpuhost calls the driver in C: numba's raw "
                                             r"binding cuMemAlloc is not offered"):
        cuda.driver.driver.cuMemAlloc
    with pytest.raises(AttributeError, match="module 'gpuhost.descriptor' has no attribute "
                                             "'nope'"):
        cuda.descriptor.nope


# ---- devicearray ----

def test_gpuhost_arrays_are_numbas_device_arrays():
    da = cuda.devicearray
    host = rng.random((4, 6))
    arrays = [cuda.to_device(host), cuda.device_array(3), cuda.to_device(host)[1:, ::2],
              cuda.to_device(host).T, cuda.as_cuda_array(cuda.to_device(host))]
    for d in arrays:
        assert isinstance(d, da.DeviceNDArray) and isinstance(d, da.DeviceNDArrayBase)
        assert da.is_cuda_ndarray(d) and cuda.driver.is_device_memory(d)
        assert not isinstance(d, (da.MappedNDArray, da.ManagedNDArray, da.DeviceRecord))
    assert issubclass(gpuhost.DeviceArray, da.DeviceNDArray)
    assert not issubclass(np.ndarray, da.DeviceNDArray)
    for other in (host, [1, 2], 3.0, None):
        assert not isinstance(other, da.DeviceNDArrayBase) and not da.is_cuda_ndarray(other)
        assert not cuda.driver.is_device_memory(other)


def test_mapped_and_managed_arrays_are_numbas_classes_of_them():
    da = cuda.devicearray
    mapped, managed = cuda.mapped_array(5), cuda.managed_array((2, 3))
    assert isinstance(mapped, da.MappedNDArray) and not isinstance(mapped, da.ManagedNDArray)
    assert isinstance(managed, da.ManagedNDArray) and not isinstance(managed, da.MappedNDArray)
    assert isinstance(mapped[1:], da.MappedNDArray)  # a view keeps its memory's kind
    for a in (mapped, managed):
        assert isinstance(a, da.DeviceNDArrayBase) and not isinstance(a, da.DeviceNDArray)
    with pytest.raises(TypeError, match=r"^MappedNDArray is numba's class of mapped arrays: "
                                        r"make one with gpuhost\.mapped_array\(\)$"):
        da.MappedNDArray((3,), (8,), np.float64)


def test_records_are_device_records():
    da = cuda.devicearray
    rec_t = np.dtype([("a", np.int32), ("b", np.float64)])
    rec = np.zeros(1, rec_t)[0]
    rec["a"], rec["b"] = rng.integers(-99, 99), rng.random()
    d = cuda.to_device(rec)
    assert isinstance(d, da.DeviceRecord) and d.shape == ()
    assert d.copy_to_host().tobytes() == np.array(rec).tobytes()
    made = da.DeviceRecord(rec_t)
    assert isinstance(made, da.DeviceRecord) and made.dtype == rec_t
    assert not isinstance(cuda.device_array((), np.float64), da.DeviceRecord)


def test_device_nd_array_makes_gpuhost_arrays_as_numbas_constructor():
    da = cuda.devicearray
    host = rng.integers(-1000, 1000, (3, 5)).astype(np.int32)
    d = da.DeviceNDArray((3, 5), (4, 12), np.int32)  # Fortran order, as given
    assert type(d) is gpuhost.DeviceArray and d.strides == (4, 12) and d.is_f_contiguous()
    d.copy_to_device(host)
    assert np.array_equal(d.copy_to_host(), host)
    one = da.DeviceNDArray(7, 8, np.float64)
    assert one.shape == (7,) and one.strides == (8,)
    ctx = cuda.current_context()
    mem = ctx.memalloc(host.nbytes)
    view = da.DeviceNDArray(host.shape, (20, 4), host.dtype, gpu_data=mem)
    assert view.ptr == mem.device_pointer_value
    view.copy_to_device(host)
    again = da.DeviceNDArray(host.shape, (20, 4), host.dtype, gpu_data=mem)
    assert np.array_equal(again.copy_to_host(), host)
    s = cuda.stream()
    assert da.DeviceNDArray((2,), (8,), np.float64, stream=s).stream is s
    with pytest.raises(TypeError, match=r"^shape elements must be integers, got float$"):
        da.DeviceNDArray((2.0, 3), (24, 8), np.float64)
    with pytest.raises(ValueError, match=r"^strides not match ndim$"):
        da.DeviceNDArray((2, 3), (8,), np.float64)


def test_auto_device_as_numbas():
    da = cuda.devicearray
    host = rng.random((3, 4)).astype(np.float32)
    d, new = da.auto_device(host)
    assert new and isinstance(d, da.DeviceNDArray) and np.array_equal(d.copy_to_host(), host)
    assert da.auto_device(d) == (d, False)
    mem = cuda.current_context().memalloc(16)
    assert da.auto_device(mem) == (mem, False)

    class Exporter:
        def __init__(self, dev):
            self.__cuda_array_interface__ = dev.__cuda_array_interface__

    viewed, new = da.auto_device(Exporter(d))
    assert not new and viewed.ptr == d.ptr and np.array_equal(viewed.copy_to_host(), host)
    f = np.asfortranarray(host)
    df, _ = da.auto_device(f)
    assert df.strides == f.strides and np.array_equal(df.copy_to_host(), f)
    empty, new = da.auto_device(host, copy=False)
    assert new and empty.shape == host.shape
    scalar, _ = da.auto_device(int(rng.integers(1, 100)))
    assert scalar.shape == () and scalar.dtype == np.int64
    lst = rng.integers(0, 9, 5).tolist()
    assert da.auto_device(lst)[0].copy_to_host().tolist() == lst
    rec = np.zeros(1, [("x", np.float64)])[0]
    rec["x"] = rng.random()
    drec, _ = da.auto_device(rec)
    assert isinstance(drec, da.DeviceRecord) and drec.copy_to_host()["x"] == rec["x"]
    with pytest.raises(ValueError, match=r"^Array contains non-contiguous buffer and cannot be "
                                         r"transferred as a single memory region"):
        da.auto_device(host[:, ::2])


def test_layout_helpers_as_numbas():
    da = cuda.devicearray
    a = rng.random((4, 6))
    like = da.from_array_like(a[:, ::2].copy(order="F"))
    assert (like.shape, like.strides) == ((4, 3), (8, 32))
    assert da.from_record_like(np.zeros(1, [("q", np.int8)])[0]).dtype.names == ("q",)
    b = np.broadcast_to(a[0], (5, 6))
    assert da.array_core(b).shape == (6,) and da.is_contiguous(b)
    assert da.is_contiguous(a) and not da.is_contiguous(a.T) and not da.is_contiguous(a[:, ::2])
    da.sentry_contiguous(b)
    da.sentry_contiguous(a.T)
    with pytest.raises(ValueError, match="^%s$" % re.escape(da.errmsg_contiguous_buffer)):
        da.sentry_contiguous(a[::2, ::2])
    da.verify_cuda_ndarray_interface(cuda.device_array((2, 2)))
    with pytest.raises(ValueError, match=r"^require an cuda ndarray object$"):
        da.verify_cuda_ndarray_interface(a)
    d = cuda.device_array((1, 6))
    da.check_array_compatibility(d, a[0])
    with pytest.raises(TypeError, match=r"^incompatible dtype: float64 vs\. float32$"):
        da.check_array_compatibility(d, a[0].astype(np.float32))
    with pytest.raises(ValueError, match=r"^incompatible shape: \(1, 6\) vs\. \(4, 6\)$"):
        da.check_array_compatibility(d, a)
    with pytest.raises(ValueError, match=r"^incompatible strides: \(48, 8\) vs\. \(192, 16\)$"):
        da.check_array_compatibility(cuda.device_array((2, 6)), np.empty((4, 12))[::2, ::2])


# ---- driver ----

def test_driver_classes_are_gpuhosts():
    drv = cuda.driver
    assert (drv.Context, drv.Device, drv.Stream, drv.Event) == (
        gpuhost.Context, gpuhost.Device, gpuhost.Stream, gpuhost.Event)
    assert drv.Module is gpuhost.Module and drv.Function is gpuhost.Kernel
    assert drv.Linker is gpuhost.Linker and drv.MemoryInfo is gpuhost.MemoryInfo
    assert (drv.CudaAPIError, drv.CudaDriverError, drv.CudaSupportError) == (
        gpuhost.CudaAPIError, gpuhost.CudaDriverError, gpuhost.CudaSupportError)
    import gpuhost.memory_manager as mm

    assert drv.AutoFreePointer is mm.AutoFreePointer and drv.MemoryPointer is mm.MemoryPointer
    assert drv.NumbaCUDAMemoryManager is mm.DefaultMemoryManager
    assert drv.HostOnlyCUDAMemoryManager is cuda.HostOnlyCUDAMemoryManager
    assert drv.set_memory_manager is cuda.set_memory_manager
    assert isinstance(cuda.current_context(), drv.Context)


def test_driver_object_answers_from_gpuhosts_devices():
    drv = cuda.driver.driver
    assert drv.is_available and drv.get_device_count() == len(gpuhost.gpus)
    last = len(gpuhost.gpus) - 1  # the fake driver has two devices, an H200 machine may have one
    assert drv.get_device() is gpuhost.gpus[0] and drv.get_device(last) is gpuhost.gpus[last]
    assert drv.list_devices() == list(gpuhost.gpus)
    assert drv.get_version() == cuda.driver.get_version()
    assert cuda.driver.get_version() == gpuhost.driver_version()
    with pytest.raises(gpuhost.InvalidDeviceError):
        drv.get_device(len(gpuhost.gpus))


def test_driver_reset_resets_every_device_and_they_work_again():
    # in a process of its own: a reset of the devices is never done to the test process's
    from conftest import run_python

    proc = run_python(
        "import numpy as np, warnings, gpuhost as cuda\n"
        "host = np.random.default_rng().random(8)\n"
        "d = cuda.to_device(host)\n"
        "with warnings.catch_warnings():\n"
        "    warnings.simplefilter('error')\n"   # gpuhost alone holds the contexts: no warning
        "    cuda.driver.driver.reset()\n"
        "try:\n"
        "    d.copy_to_host()\n"
        "except cuda.CudaAPIError as e:\n"
        "    print(e.name)\n"
        "fresh = cuda.to_device(host)\n"   # the devices work again after the reset
        "print(np.array_equal(fresh.copy_to_host(), host))\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["CUDA_ERROR_CONTEXT_IS_DESTROYED", "True"]


@pytest.mark.parametrize("on_stream", [False, True])
def test_copies_and_memset_by_device_memory_as_numbas(on_stream):
    drv = cuda.driver
    s = cuda.stream() if on_stream else 0
    host = rng.integers(0, 2**31, 64).astype(np.int32)
    d = cuda.device_array(64, np.int32)
    drv.host_to_device(d, host, host.nbytes, stream=s)
    out = np.zeros_like(host)
    drv.device_to_host(out, d, host.nbytes, stream=s)
    if on_stream:
        s.synchronize()
    assert np.array_equal(out, host)
    mem = cuda.current_context().memalloc(host.nbytes)  # a memory pointer, as numba's
    drv.device_to_device(mem, d, host.nbytes, stream=s)
    byte = int(rng.integers(1, 255))
    drv.device_memset(d[8:], byte, 16, stream=s)
    drv.device_to_host(out, d, host.nbytes, stream=s)
    back = np.zeros_like(host)
    drv.device_to_host(back, mem, host.nbytes, stream=s)
    if on_stream:
        s.synchronize()
    expect = host.copy()
    expect.view(np.uint8)[32:48] = byte
    assert np.array_equal(out, expect) and np.array_equal(back, host)
    with pytest.raises(ValueError, match="read-only"):
        ro = np.zeros(4, np.int32)
        ro.flags.writeable = False
        drv.device_to_host(ro, d, 16)


def test_pointers_extents_and_sizes_as_numbas():
    drv = cuda.driver
    d = cuda.device_array(100, np.float64)
    assert drv.device_pointer(d) == d.ptr and drv.device_pointer(d[3:]) == d.ptr + 24
    assert drv.device_ctypes_pointer(d).value == d.ptr
    assert drv.device_ctypes_pointer(None).value is None
    start, end = drv.device_extents(d[10:20])
    assert start <= d.ptr and end >= d.ptr + d.nbytes
    assert drv.device_memory_size(d[10:20]) == end - start >= d.nbytes
    mem = cuda.current_context().memalloc(4096)
    assert drv.device_pointer(mem) == mem.device_pointer_value
    with pytest.raises(Exception, match=r"^Not a CUDA memory object\.$") as info:
        drv.device_pointer(np.zeros(3))
    assert type(info.value) is Exception  # numba's own
    h = rng.random((5, 7))
    assert drv.host_pointer(h) == h.ctypes.data and drv.host_pointer(42) == 42
    assert drv.host_memory_extents(h) == (h.ctypes.data, h.ctypes.data + h.nbytes)
    assert drv.host_memory_size(h[:, ::2]) == (4 * 7 + 6 + 1) * 8
    assert drv.host_memory_size(h[::-1]) == h.nbytes
    assert drv.host_memory_size(bytearray(13)) == 13


@pytest.mark.parametrize("shape, strides, itemsize", [
    ((3, 4), (32, 8), 8), ((3, 4), (8, 24), 8), ((5,), (-4,), 4), ((2, 3), (0, 4), 4),
    ((0, 3), (12, 4), 4), ((), (), 16), ((4, 1, 3), (24, 7, 8), 8), ((2, 2), (-16, 4), 4),
])
def test_memory_size_from_info_is_numbas(shape, strides, itemsize):
    expect = {((3, 4), (32, 8), 8): 96, ((3, 4), (8, 24), 8): 96, ((5,), (-4,), 4): 20,
              ((2, 3), (0, 4), 4): 12, ((0, 3), (12, 4), 4): 0, ((), (), 16): 16,
              ((4, 1, 3), (24, 7, 8), 8): 96, ((2, 2), (-16, 4), 4): 24}
    assert cuda.driver.memory_size_from_info(shape, strides, itemsize) == \
        expect[(shape, strides, itemsize)]


def test_memory_size_from_info_agrees_with_numba_cuda():
    pytest.importorskip("numba_cuda")
    from gpuhost import _numba

    _numba.load()
    from numba.cuda.cudadrv import driver as numba_driver

    for _ in range(200):
        ndim = int(rng.integers(0, 4))
        shape = tuple(int(n) for n in rng.integers(0, 5, ndim))
        itemsize = int(rng.choice([1, 2, 4, 8, 16]))
        strides = tuple(int(s) * itemsize for s in rng.integers(-6, 7, ndim))
        assert cuda.driver.memory_size_from_info(shape, strides, itemsize) == \
            numba_driver.memory_size_from_info(shape, strides, itemsize), (shape, strides)


def test_profiling_and_elapsed_time():
    with cuda.driver.profiling():
        start, end = cuda.event(), cuda.event()
        start.record()
        cuda.to_device(rng.random(1000))
        end.record()
        end.synchronize()
    assert cuda.driver.event_elapsed_time(start, end) >= 0


# ---- descriptor ----

def test_descriptor_is_the_target_gpuhost_jit_compiles_for():
    pytest.importorskip("numba_cuda")
    from gpuhost import _numba

    _numba.load()
    import numba.cuda.descriptor as nd

    assert cuda.descriptor.cuda_target is nd.cuda_target
    assert cuda.descriptor.CUDATarget is nd.CUDATarget
    assert cuda.descriptor.CUDATargetOptions is nd.CUDATargetOptions
    assert cuda.descriptor.cuda_target.typing_context is nd.cuda_target.typing_context
    assert {"cuda_target", "CUDATarget"} <= set(dir(cuda.descriptor))


def test_descriptor_without_numba_cuda_says_what_to_install(monkeypatch):
    from gpuhost import _numba

    monkeypatch.setattr(_numba, "installed_version", lambda: None)
    monkeypatch.setattr(_numba, "_loaded", None)
    monkeypatch.delitem(cuda.descriptor.__dict__, "cuda_target", raising=False)
    with pytest.raises(ImportError, match="numba-cuda, which is not installed"):
        cuda.descriptor.cuda_target


# ---- numba's EMM plugin example, as numba-cuda's tests write it ----

class DeviceOnlyPlugin(cuda.HostOnlyCUDAMemoryManager):
    """numba-cuda's dummy plugin's shape (its test_emm_plugins.py): fake device pointers
    wrapped in ``cuda.cudadrv.driver.AutoFreePointer``, whose finalizer drops the record."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.allocations, self.count, self.initialized = {}, 0, False
        self.reset_called = self.memory_info_called = self.ipc_called = False

    def memalloc(self, size):
        if not self.initialized:
            raise RuntimeError("memalloc called before initialize")
        self.count += 1
        key, allocations = self.count, self.allocations
        allocations[key] = size

        def finalizer():
            del allocations[key]

        return cuda.cudadrv.driver.AutoFreePointer(weakref.proxy(self.context),
                                                   ctypes.c_void_p(key), size,
                                                   finalizer=finalizer)

    def initialize(self):
        self.initialized = True

    def reset(self):
        self.reset_called = True

    def get_memory_info(self):
        self.memory_info_called = True
        return cuda.MemoryInfo(free=32, total=64)

    def get_ipc_handle(self, memory):
        self.ipc_called = True
        return "Dummy IPC handle for alloc %s" % memory.device_pointer_value

    @property
    def interface_version(self):
        return 1


@pytest.fixture
def plugin_context():
    ctx = cuda.current_context()
    ctx.reset()
    initial = ctx.memory_manager
    ctx.memory_manager = DeviceOnlyPlugin(context=ctx)
    try:
        yield ctx
    finally:
        ctx.reset()
        ctx.memory_manager = initial


@pytest.mark.resets_context  # plugin_context resets the context
def test_emm_example_allocates_and_finalizes_through_the_plugin(plugin_context):
    mgr = plugin_context.memory_manager
    assert mgr.initialized
    n1, n2 = int(rng.integers(2, 50)), int(rng.integers(2, 50))
    d1 = cuda.device_array_like(np.arange(n1))
    assert mgr.count == 1 and mgr.allocations[1] == n1 * 8 and d1.ptr == 1
    d2 = cuda.device_array_like(np.arange(n2))
    assert mgr.count == 2 and mgr.allocations[2] == n2 * 8
    del d1
    assert 1 not in mgr.allocations and 2 in mgr.allocations
    del d2
    assert mgr.allocations == {}


@pytest.mark.resets_context  # plugin_context resets the context
def test_emm_example_reset_and_memory_info(plugin_context):
    info = plugin_context.get_memory_info()
    assert plugin_context.memory_manager.memory_info_called and (info.free, info.total) == (32, 64)
    plugin_context.reset()
    assert plugin_context.memory_manager.reset_called


@pytest.mark.resets_context  # plugin_context resets the context
def test_emm_example_ipc_handle_comes_from_the_plugin(plugin_context):
    d = cuda.device_array_like(np.arange(2))
    h = d.get_ipc_handle()
    assert plugin_context.memory_manager.ipc_called
    assert "Dummy IPC handle for alloc 1" in h._ipc_handle
    assert isinstance(h, gpuhost.IpcArrayHandle) and (h.shape, h.dtype) == ((2,), np.int64)
    back = pickle.loads(pickle.dumps(h))
    assert back._ipc_handle == h._ipc_handle and back.strides == (8,)


class _Plugin(cuda.HostOnlyCUDAMemoryManager):
    """A plugin over gpuhost's memory, with the IPC handle `handle_class` makes."""

    handle_class = None

    def initialize(self):
        self.pool = gpuhost._core.Pool("device", "plain")

    def memalloc(self, size):
        alloc = self.pool.allocate(size)
        return cuda.driver.MemoryPointer(self.context, alloc.ptr, size, finalizer=alloc.free)

    def get_memory_info(self):
        return cuda.MemoryInfo(free=1, total=2)

    def reset(self):
        pass

    def get_ipc_handle(self, memory):
        return self.handle_class(memory)

    @property
    def interface_version(self):
        return 1


@pytest.fixture
def plugin_of():
    ctx = cuda.current_context()
    initial = ctx.memory_manager

    def install(handle_class, base=_Plugin):
        plugin = type("Plugin", (base,), {"handle_class": handle_class})
        ctx.memory_manager = plugin(context=ctx)
        return ctx.memory_manager

    yield install
    ctx.memory_manager = initial


def test_an_array_handle_from_a_plugin_opens_through_the_plugins_handle(plugin_of):
    """numba's IpcArrayHandle.open: the plugin's handle opens the memory (its open(context)
    gives a memory pointer) and the array views it; close() closes the plugin's handle."""
    events = []

    class Handle:
        def __init__(self, memory):
            self.memory = memory  # what another process would reach through the driver

        def open(self, context):
            events.append(("open", context))
            return self.memory

        def close(self):
            events.append(("close",))

    plugin_of(Handle)
    host = rng.random((3, 4))
    d = cuda.to_device(host)[:, 1:]
    h = d.get_ipc_handle()
    assert isinstance(h._ipc_handle, Handle) and h._ipc_handle.memory.device_pointer_value == d.ptr
    with h as opened:
        assert isinstance(opened, gpuhost.DeviceArray) and opened.ptr == d.ptr
        assert (opened.shape, opened.strides) == (d.shape, d.strides)
        assert np.array_equal(opened.copy_to_host(), host[:, 1:])
        with pytest.raises(ValueError, match=r"^IpcHandle is already opened$"):
            h.open()
    assert events == [("open", cuda.current_context()), ("close",)]


def test_a_plugin_with_numbas_ipc_mixin_hands_out_its_ipc_handles(plugin_of):
    """GetIpcHandleMixin (RMM's shape): the array's handle is the mixin's IpcHandle of the
    memory, picklable; opening it in the process that made it is numba's ValueError."""
    import gpuhost.memory_manager as mm

    class Mixed(mm.GetIpcHandleMixin, _Plugin):
        pass

    plugin_of(None, base=Mixed)
    d = cuda.to_device(rng.random(16))
    h = d.get_ipc_handle()
    assert isinstance(h._ipc_handle, mm.IpcHandle) and h._ipc_handle.size >= d.nbytes
    back = pickle.loads(pickle.dumps(h))
    assert bytes(back._ipc_handle.handle) == bytes(h._ipc_handle.handle) and len(h._ipc_handle.handle) == 64
    assert back._ipc_handle.base is None and (back.shape, back.dtype) == (d.shape, d.dtype)
    with pytest.raises(ValueError, match=r"^opening IpcHandle from original process$"):
        h.open()


def test_emm_example_plugin_of_another_version_is_refused():
    class BadVersion(DeviceOnlyPlugin):
        @property
        def interface_version(self):
            return 2

    with pytest.raises(RuntimeError, match="version 1 required"):
        cuda.set_memory_manager(BadVersion)
