"""numba.cuda's Context methods, memory manager and pending deallocations, the CUDA array
interface as numba produces and consumes it, and the array attributes numba scripts use
(issue: numba-cuda's own host-API tests). Fake driver where possible."""
import ctypes
import operator
import pickle
import weakref

import numpy as np
import pytest

import gpuhost
from gpuhost import memory_manager as emm
from conftest import in_thread

rng = np.random.default_rng()


def random_array(shape, dtype):
    return rng.integers(-1000, 1000, shape).astype(dtype)


@pytest.fixture
def ctx():
    c = gpuhost.current_context()
    c.deallocations.clear()
    yield c
    c.memory_manager = emm.DefaultMemoryManager(context=c)


# ---- Context: allocation through the memory manager ----

def test_memalloc_gives_a_memory_pointer_that_views_and_memsets(ctx):
    mem = ctx.memalloc(1024)
    assert isinstance(mem.device_ctypes_pointer, ctypes.c_uint64)
    assert mem.size == 1024 and mem.device_pointer_value
    view = mem.view(16)
    assert view.device_pointer_value == mem.device_pointer_value + 16 and view.size == 1008
    value = int(rng.integers(1, 255))
    mem.memset(value)
    dev = gpuhost.from_cuda_array_interface(
        {"shape": (1024,), "typestr": "|u1", "data": (mem.device_pointer_value, False),
         "version": 3}, owner=mem)
    assert (dev.copy_to_host() == value).all()


def test_memalloc_memory_goes_back_when_the_last_reference_dies(ctx):
    assert isinstance(ctx.memory_manager, emm.DefaultMemoryManager), ctx.memory_manager
    pool = gpuhost._core.default_pool(ctx)
    used = pool.used_bytes
    mem = ctx.memalloc(4096)
    assert pool.used_bytes == used + 4096, (pool, mem.device_pointer_value)
    del mem
    assert pool.used_bytes == used


def test_host_allocations_of_the_context(ctx):
    pinned = ctx.memhostalloc(64)
    assert isinstance(pinned, emm.PinnedMemory) and pinned.size == 64
    mapped = ctx.memhostalloc(64, mapped=True)
    assert mapped.size == 64 and mapped.device_pointer_value
    managed = ctx.memallocmanaged(64)
    assert managed.size == 64 and managed.device_pointer_value
    host = random_array(16, np.int32)
    pin = ctx.mempin(host, host.ctypes.data, host.nbytes)
    assert pin.size == host.nbytes
    del pinned, mapped, managed, pin


def test_streams_and_events_of_the_context(ctx):
    s = ctx.create_stream()
    assert isinstance(s, gpuhost.Stream) and s.context is ctx and not s.external
    ext = ctx.create_external_stream(s.handle)
    assert ext.external and ext.handle == s.handle
    with pytest.raises(TypeError, match="ptr for external stream must be an int"):
        ctx.create_external_stream(str(s.handle))
    ev = ctx.create_event(timing=False)
    assert isinstance(ev, gpuhost.Event)
    assert ctx.get_default_stream().handle == 0
    assert ctx.get_legacy_default_stream().handle == 1
    assert ctx.get_per_thread_default_stream().handle == 2


# ---- the memory manager and numba's pending-deallocation queue ----

def test_deallocations_count_freed_blocks_until_cleared(ctx):
    deallocs = ctx.memory_manager.deallocations
    assert len(deallocs) == 0
    a = gpuhost.to_device(random_array(5, np.int64))
    b = gpuhost.to_device(random_array(7, np.int64))
    del a
    assert len(deallocs) == 1
    del b
    assert len(deallocs) == 2 and deallocs._size > 0
    deallocs.clear()
    assert len(deallocs) == 0 and deallocs._size == 0


def test_deallocations_are_held_inside_defer_cleanup(ctx):
    deallocs = ctx.deallocations
    a = gpuhost.to_device(random_array(5, np.int64))
    with gpuhost.defer_cleanup():
        assert deallocs.is_disabled
        del a
        deallocs.clear()
        assert len(deallocs) == 1
    assert not deallocs.is_disabled
    deallocs.clear()
    assert len(deallocs) == 0


def test_pinned_can_be_entered_again_inside_defer_cleanup(ctx):
    arr = random_array(8, np.float64)
    dev = gpuhost.device_array_like(arr)
    with gpuhost.defer_cleanup():
        # unregistered at once, not deferred, so registering again works (the driver refuses
        # memory registered twice)
        for _ in range(2):
            with gpuhost.pinned(arr):
                dev.copy_to_device(arr)
                assert np.array_equal(dev.copy_to_host(), arr)
            assert len(ctx.deallocations) == 0
        for _ in range(2):
            with gpuhost.mapped(arr) as view:
                assert np.array_equal(view.copy_to_host(), arr)
            assert len(ctx.deallocations) == 0



# ---- MemoryPointer handles (numba's test_cuda_memory.test_derived_pointer) ----

def test_memalloc_handles_read_as_ints_and_views_offset_them(ctx):
    mem = ctx.memalloc(int(rng.integers(256, 4096)))
    base = int(mem.handle)
    assert base == operator.index(mem.handle) == mem.device_pointer_value
    assert isinstance(mem.device_ctypes_pointer, ctypes.c_size_t)
    assert mem.device_ctypes_pointer.value == base
    owner = mem.owner
    assert owner.refct == 1
    offset = int(rng.integers(1, 128))
    v1 = mem.view(offset)
    assert int(v1.owner.handle) == base and owner.refct == 2
    assert int(v1.handle) - offset == base
    v2 = v1.view(offset)
    assert int(v2.owner.handle) == base and owner.refct == 3
    assert int(v2.handle) - 2 * offset == base and v2.size == mem.size - 2 * offset
    assert repr(v2.handle) == "DevicePointer(%#x)" % (base + 2 * offset)
    del v2
    assert owner.refct == 2
    del v1
    assert owner.refct == 1


def test_a_plugins_ctypes_pointer_reads_as_an_int_and_an_int_stays_one(ctx):
    addr = int(rng.integers(1 << 32, 1 << 40))
    for given in (ctypes.c_void_p(addr), ctypes.c_uint64(addr), ctypes.c_size_t(addr)):
        mem = emm.MemoryPointer(ctx, given, 64)
        assert int(mem.handle) == addr and mem.handle is mem.device_pointer
        assert mem.device_ctypes_pointer.value == addr
    mem = emm.MemoryPointer(ctx, addr, 64)
    assert mem.handle == addr and type(mem.handle) is int  # numba keeps an int as it is
    assert isinstance(mem.device_ctypes_pointer, ctypes.c_size_t)
    assert mem.device_ctypes_pointer.value == addr
    assert int(mem.view(8).handle) == addr + 8

class CountingPlugin(emm.HostOnlyCUDAMemoryManager):
    """A device-only EMM plugin over gpuhost's allocations, recording what it is asked."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls, self.live = [], {}

    def memalloc(self, size):
        if "initialize" not in self.calls:
            raise RuntimeError("memalloc called before initialize")
        self.calls.append("memalloc")
        alloc = gpuhost._core.device_alloc(size)
        key = alloc.ptr
        self.live[key] = size
        return emm.AutoFreePointer(self.context, ctypes.c_uint64(alloc.ptr), size,
                                   finalizer=lambda: (self.live.pop(key), alloc.close()))

    def initialize(self):
        self.calls.append("initialize")

    def reset(self):
        self.calls.append("reset")
        super().reset()

    def get_memory_info(self):
        self.calls.append("get_memory_info")
        return emm.MemoryInfo(free=32, total=64)

    def get_ipc_handle(self, memory):
        return "dummy handle of %#x" % memory.device_pointer_value

    @property
    def interface_version(self):
        return 1


def test_a_plugin_set_on_a_context_allocates_its_arrays(ctx):
    plugin = CountingPlugin(context=ctx)
    ctx.memory_manager = plugin
    assert ctx.memory_manager is plugin and plugin.calls == ["initialize"]
    host = random_array(10, np.float32)
    d = gpuhost.to_device(host)
    assert plugin.calls[-1] == "memalloc" and list(plugin.live.values()) == [host.nbytes]
    assert (d.copy_to_host() == host).all()
    del d
    assert plugin.live == {}
    assert ctx.get_memory_info() == (32, 64) and plugin.calls[-1] == "get_memory_info"
    ctx.memory_manager = emm.DefaultMemoryManager(context=ctx)
    d = gpuhost.device_array(4)
    assert isinstance(d.owner, gpuhost.Allocation) and "memalloc" not in plugin.calls[-1:]
    assert ctx.get_memory_info().total != 64


@pytest.mark.resets_context
def test_a_context_reset_resets_its_plugin(ctx):
    plugin = CountingPlugin(context=ctx)
    ctx.memory_manager = plugin
    ctx.reset()  # frees gpuhost's state only: the context, shared with others, stays
    assert plugin.calls[-1] == "reset"


def test_a_memory_manager_must_have_the_plugin_methods(ctx):
    with pytest.raises(TypeError, match="a memory manager needs a memalloc"):
        ctx.memory_manager = object()
    with pytest.raises(AttributeError, match="cannot be deleted"):
        del ctx.memory_manager


class WeakContextPlugin(emm.HostOnlyCUDAMemoryManager):
    """A plugin written as numba's own classes and RMM's are: it holds its context through
    a weak reference, hands out pointers whose context is a weakref.proxy, and reports
    memory with numba's MemoryInfo built by keyword."""

    def __init__(self, context, free, total):
        super().__init__(context=context)
        self._context = weakref.ref(context)
        self.free, self.total, self.live = free, total, {}

    def memalloc(self, size):
        alloc = gpuhost._core.device_alloc(size)
        self.live[alloc.ptr] = alloc
        return emm.AutoFreePointer(weakref.proxy(self._context()), ctypes.c_uint64(alloc.ptr),
                                   size, finalizer=lambda: self.live.pop(alloc.ptr).close())

    def initialize(self):
        assert self._context() is self.context

    def get_memory_info(self):
        return gpuhost.MemoryInfo(free=self.free, total=self.total)

    def get_ipc_handle(self, memory):
        raise NotImplementedError

    @property
    def interface_version(self):
        return 1


def test_a_plugin_keeping_a_weak_reference_to_its_context_runs(ctx):
    free, total = sorted(int(v) for v in rng.integers(1 << 20, 1 << 40, 2))
    plugin = WeakContextPlugin(ctx, free, total)
    ctx.memory_manager = plugin
    assert weakref.ref(ctx)() is ctx and weakref.proxy(ctx).device is ctx.device
    host = random_array(37, np.int64)
    d = gpuhost.to_device(host)
    assert len(plugin.live) == 1
    np.testing.assert_array_equal(d.copy_to_host(), host)
    info = ctx.get_memory_info()
    assert type(info) is gpuhost.MemoryInfo and info == (free, total)
    assert (info.free, info.total) == (free, total)
    del d
    assert plugin.live == {}


def test_memory_info_is_built_as_numbas_named_tuple():
    free, total = sorted(int(v) for v in rng.integers(1, 1 << 40, 2))
    info = gpuhost.MemoryInfo(free=free, total=total)
    assert info == gpuhost.MemoryInfo(free, total) == (free, total)
    assert (info.free, info.total) == (free, total) and isinstance(info, tuple)
    assert gpuhost.MemoryInfo._fields == ("free", "total")
    assert info._asdict() == {"free": free, "total": total}
    assert info._replace(free=free - 1) == (free - 1, total)
    assert repr(info) == "MemoryInfo(free=%d, total=%d)" % (free, total)
    again = pickle.loads(pickle.dumps(info))
    assert again == info and type(again) is gpuhost.MemoryInfo
    assert emm.MemoryInfo is gpuhost.MemoryInfo  # one class, the one the context returns
    assert type(gpuhost.current_context().get_memory_info()) is gpuhost.MemoryInfo
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'total'"):
        gpuhost.MemoryInfo(free=free)
    with pytest.raises(TypeError, match="unexpected keyword argument 'used'"):
        gpuhost.MemoryInfo(free=free, total=total, used=total - free)


def test_devices_get_context_is_numbas_function_for_fresh_threads_and_processes():
    last = gpuhost.gpus[len(gpuhost.gpus) - 1]

    def fresh(devnum=None):
        before = gpuhost.gpus.current
        return before, gpuhost.devices.get_context(devnum), gpuhost.gpus.current

    before, ctx, after = in_thread(fresh)
    assert before is None and ctx is gpuhost.gpus[0].get_primary_context()
    assert after is gpuhost.gpus[0]
    before, ctx, after = in_thread(lambda: fresh(last.id))
    assert before is None and ctx is last.get_primary_context() and after is last

    def in_with():  # what numba's IPC code runs in a child process
        with gpuhost.gpus[last.id]:
            return gpuhost.devices.get_context()

    assert in_thread(in_with) is last.get_primary_context()
    assert gpuhost.devices.get_context() is gpuhost.current_context()


def test_devices_get_context_refuses_a_bad_device_number():
    n = len(gpuhost.gpus)
    with pytest.raises(gpuhost.InvalidDeviceError,
                       match=r"no CUDA device %d: %d devices? found" % (n, n)):
        gpuhost.devices.get_context(n)
    with pytest.raises(TypeError, match="devnum must be an int, not str"):
        gpuhost.devices.get_context("0")


def test_mempin_mapped_on_a_device_that_cannot_map_is_refused(ctx, monkeypatch):
    host = random_array(4, np.int32)
    if not ctx.device.CAN_MAP_HOST_MEMORY:
        with pytest.raises(gpuhost.CudaDriverError, match="cannot map host memory"):
            ctx.mempin(host, host.ctypes.data, host.nbytes, mapped=True)
    else:
        mem = ctx.mempin(host, host.ctypes.data, host.nbytes, mapped=True)
        assert mem.size == host.nbytes


# ---- IPC handles as numba hands them out ----

def test_ipc_handle_of_gpu_data_pickles_with_its_bytes_size_and_offset(ctx):
    dev = gpuhost.to_device(np.arange(10, dtype=np.intp))[3:]
    ipch = ctx.get_ipc_handle(dev.gpu_data)
    assert ipch.size == 7 * 8 and ipch.offset >= 3 * 8 and len(ipch.handle.reserved) == 64
    back = pickle.loads(pickle.dumps(ipch))
    assert back.base is None and back.size == ipch.size and back.offset == ipch.offset
    assert back.handle.reserved == ipch.handle.reserved and back.source_info == dev.device.uuid
    with pytest.raises(ValueError, match="opening IpcHandle from original process"):
        ipch.open(ctx)
    with pytest.raises(ValueError, match="IpcHandle not opened"):
        back.close()


def test_an_ipc_array_handle_cannot_be_opened_twice():
    dev = gpuhost.to_device(random_array(6, np.int64))
    handle = dev.get_ipc_handle()
    with handle as view:
        assert (view.copy_to_host() == dev.copy_to_host()).all()
        with pytest.raises(ValueError, match="IpcHandle is already opened"):
            handle.open()


# ---- arrays: numba's attributes ----

def test_gpu_data_is_a_memory_pointer_over_the_bytes_the_array_spans():
    dev = gpuhost.to_device(random_array((4, 6), np.float32))
    view = dev[1:3, ::2]
    mem = view.gpu_data
    assert mem.device_pointer_value == view.ptr and mem.size == view.alloc_size
    assert view.alloc_size == (1 * 24 + 2 * 8 + 4) and dev.alloc_size == dev.nbytes
    assert mem.owner is dev.owner and mem.pool is dev.owner.pool  # the owner reads through
    neg = dev[::-1]
    assert neg.gpu_data.device_pointer_value == dev.ptr and neg.alloc_size == dev.nbytes
    assert view.device_ctypes_pointer.value == view.ptr
    assert gpuhost.device_array(0).alloc_size == 0


def test_ravel_takes_numbas_orders_and_refuses_a_copy():
    host = random_array((3, 4), np.int16)
    c, f = gpuhost.to_device(host), gpuhost.to_device(np.asfortranarray(host))
    assert (c.ravel("A").copy_to_host() == host.ravel("A")).all()
    assert (f.ravel("A").copy_to_host() == np.asfortranarray(host).ravel("A")).all()
    assert (f.ravel("F").copy_to_host() == host.ravel("F")).all()
    with pytest.raises(NotImplementedError, match="ravel on non-contiguous array"):
        f.ravel("C")
    with pytest.raises(NotImplementedError, match="ravel on non-contiguous array"):
        c[:, ::2].ravel()
    with pytest.raises(ValueError, match=r"order not C\|F\|A"):
        c.ravel("K")
    s = gpuhost.stream()
    assert c.ravel(stream=s).stream is s


def test_records_stay_on_the_device_and_fields_read_and_write():
    rec = np.dtype([("a", np.float64), ("b", np.int32), ("v", np.float32, 3)])
    dev = gpuhost.device_array(3, dtype=rec)
    for i in range(3):
        dev[i]["a"] = i / 2
        dev[i]["b"] = i + 1
        dev[i]["v"][1] = 7.5
    host = dev.copy_to_host()
    assert list(host["a"]) == [0.0, 0.5, 1.0] and list(host["b"]) == [1, 2, 3]
    assert list(host["v"][:, 1]) == [7.5] * 3
    assert isinstance(dev[1], gpuhost.DeviceArray) and dev[1]["b"] == 2
    with pytest.raises(KeyError, match="no field of name c"):
        dev[0]["c"]
    with pytest.raises(TypeError, match="only basic indexing"):
        gpuhost.device_array(3)["a"]


def test_assignment_that_does_not_broadcast_is_refused_in_numpys_words():
    dev = gpuhost.to_device(np.arange(5))
    with pytest.raises(ValueError, match=r"could not broadcast input array from shape \(2,\) "
                                         r"into shape \(5,\)"):
        dev[:] = [1, 3]
    big = gpuhost.device_array(35)
    with pytest.raises(ValueError, match=r"from shape \(2,3\) into shape \(35,\)"):
        big[:] = np.zeros((1, 2, 3))


# ---- the CUDA array interface, produced and consumed as numba does ----

def test_the_stream_an_array_reports_is_the_one_it_was_made_on():
    s = gpuhost.stream()
    assert gpuhost.device_array(10).__cuda_array_interface__["stream"] is None
    assert gpuhost.device_array(10, stream=s).__cuda_array_interface__["stream"] == s.handle
    assert gpuhost.mapped_array(10).__cuda_array_interface__["stream"] is None
    assert gpuhost.mapped_array(10, stream=s).__cuda_array_interface__["stream"] == s.handle
    assert gpuhost.mapped_array(10, stream=s)[2:].__cuda_array_interface__["stream"] == s.handle
    assert gpuhost.managed_array(10, stream=s).__cuda_array_interface__["stream"] == s.handle
    assert gpuhost.managed_array(10).__cuda_array_interface__["stream"] is None


class Foreign:
    def __init__(self, desc):
        self.__cuda_array_interface__ = desc


def test_an_imported_array_takes_the_exporters_stream():
    s = gpuhost.stream()
    host = random_array(10, np.float64)
    src = gpuhost.to_device(host, stream=s)
    got = gpuhost.as_cuda_array(Foreign(src.__cuda_array_interface__))
    assert got.stream.external and got.stream.handle == s.handle
    assert (got.copy_to_host() == host).all()
    plain = gpuhost.as_cuda_array(Foreign(gpuhost.device_array(3).__cuda_array_interface__))
    assert plain.stream == 0


def test_ownership_of_a_converted_array_keeps_the_memory(ctx):
    deallocs = ctx.memory_manager.deallocations
    d = gpuhost.to_device(np.arange(100))
    cvted = gpuhost.as_cuda_array(d)
    del d
    assert len(deallocs) == 0 and (cvted.copy_to_host() == np.arange(100)).all()
    foreign = Foreign(gpuhost.to_device(np.arange(8)).__cuda_array_interface__)
    wrapped = gpuhost.as_cuda_array(foreign)
    assert wrapped.owner is foreign and wrapped.gpu_data.owner is foreign


def test_read_only_foreign_memory_refuses_writes():
    host = random_array(6, np.int32)
    src = gpuhost.to_device(host)
    desc = dict(src.__cuda_array_interface__, data=(src.ptr, True))
    ro = gpuhost.from_cuda_array_interface(desc, owner=src)
    assert ro.flags["WRITEABLE"] is False and src.flags["WRITEABLE"] is True
    assert (ro.copy_to_host() == host).all()
    for write in (lambda: ro.__setitem__(0, 1), lambda: ro[2:].__setitem__(slice(None), 5),
                  lambda: ro.copy_to_device(host), lambda: ro.bind(None).copy_to_device(host)):
        with pytest.raises(ValueError, match="the device array is read-only"):
            write()
    assert (src.copy_to_host() == host).all()


def test_interfaces_gpuhost_cannot_use_are_refused_before_the_driver():
    src = gpuhost.to_device(random_array(4, np.float32))
    cai = src.__cuda_array_interface__
    with pytest.raises(ValueError, match=r"version 4 is not one gpuhost knows \(0, 1, 2, 3\)"):
        gpuhost.from_cuda_array_interface(dict(cai, version=4))
    with pytest.raises(ValueError, match="__cuda_array_interface__ has no 'version'"):
        gpuhost.from_cuda_array_interface({k: v for k, v in cai.items() if k != "version"})
    with pytest.raises(ValueError, match=r"data pointer is null for an array of shape \(4,\)"):
        gpuhost.from_cuda_array_interface(dict(cai, data=(0, False)))
    empty = gpuhost.from_cuda_array_interface(dict(cai, shape=(0,), data=(0, False)))
    assert empty.size == 0
    with pytest.raises(NotImplementedError, match="Masked arrays are not supported"):
        gpuhost.from_cuda_array_interface(dict(cai, mask=src))
    with pytest.raises(ValueError, match="stream 0 is forbidden"):
        gpuhost.from_cuda_array_interface(dict(cai, stream=0))


# ---- module-level numba names ----

def test_is_supported_version_cuda_error_and_the_float_formats():
    assert gpuhost.is_supported_version() is True
    assert gpuhost.cuda_error() is None
    cc = gpuhost.get_current_device().compute_capability
    assert gpuhost.is_float16_supported() is True
    assert gpuhost.is_bfloat16_supported() is (cc >= (8, 0))
    assert gpuhost.is_fp8_supported() is (cc >= (8, 9))


def test_detect_prints_numbas_lines(capsys):
    assert gpuhost.detect() is True
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Found %d CUDA devices" % len(gpuhost.gpus)
    dev = gpuhost.gpus[0]
    assert out[1] == "id %d    %20s %40s" % (dev.id, dev.name, "[SUPPORTED]")
    labels = [line.split(":")[0].strip() for line in out[2:11]]
    assert labels == ["Compute Capability", "PCI Device ID", "PCI Bus ID", "UUID", "Watchdog",
                      "FP32/FP64 Performance Ratio", "FP16 Support", "BF16 Support",
                      "FP8 Support"]
    assert out[-2:] == ["Summary:", "\t%d/%d devices are supported" % ((len(gpuhost.gpus),) * 2)]



# ---- modules and occupancy (numba's test_cuda_driver.test_cuda_driver_occupancy) ----

# numba's own test PTX (test_cuda_driver.py's ptx2): each thread writes its index.
HELLO_PTX = """
.version 3.0
.target sm_20
.address_size 64

.entry _Z10helloworldPi(
    .param .u64 _Z10helloworldPi_param_0
)
{
    .reg .s32 	%r<3>;
    .reg .s64 	%rl<5>;

    ld.param.u64 	%rl1, [_Z10helloworldPi_param_0];
    cvta.to.global.u64 	%rl2, %rl1;
    mov.u32 	%r1, %tid.x;
    mul.wide.u32 	%rl3, %r1, 4;
    add.s64 	%rl4, %rl2, %rl3;
    st.global.u32 	[%rl4], %r1;
    ret;
}
"""


@pytest.mark.parametrize("ptx, exc, message", [
    (12345, TypeError, r"create_module_ptx\(\) takes PTX text \(str or bytes\), not int"),
    (None, TypeError, r"create_module_ptx\(\) takes PTX text \(str or bytes\), not NoneType"),
    (b"\x7fELF\x02\x01\x01" + bytes(64), ValueError,
     r"these bytes are a cubin or a fatbin: load them with gpuhost.Module\(\)"),
    (b"\x50\xed\x55\xba" + bytes(64), ValueError, "these bytes are a cubin or a fatbin"),
    ("int main() { return 0; }", ValueError, "is not PTX, a cubin or a fatbin"),
    (b"", ValueError, "is empty: nothing to load"),
])
def test_create_module_ptx_refuses_what_is_not_ptx(ctx, ptx, exc, message):
    with pytest.raises(exc, match=message):
        ctx.create_module_ptx(ptx)


def test_occupancy_queries_refuse_what_is_not_a_kernel(ctx):
    with pytest.raises(TypeError, match=r"get_active_blocks_per_multiprocessor\(\) takes a "
                                        r"Kernel \(Module.get_function\(\)\), not str"):
        ctx.get_active_blocks_per_multiprocessor("_Z10helloworldPi", 128, 128)
    with pytest.raises(TypeError, match=r"get_max_potential_block_size\(\) takes a Kernel"):
        ctx.get_max_potential_block_size(object(), 0, 0, 1024)
    with pytest.raises(TypeError, match=r"unload_module\(\) takes a Module"):
        ctx.unload_module("module")


def test_occupancy_flags_other_than_the_default_are_refused(ctx):
    with pytest.raises(NotImplementedError, match="flags=CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE "
                                                  "needs the driver's \\*WithFlags"):
        ctx.get_active_blocks_per_multiprocessor(None, 128, 0, flags=1)
    with pytest.raises(ValueError, match=r"get_max_potential_block_size\(\): flags is a "
                                         r"CUoccupancy_flags value \(0 or 1\) or None, not 7"):
        ctx.get_max_potential_block_size(None, 0, 0, 1024, flags=7)
    with pytest.raises(ValueError, match="not 'x'"):
        ctx.get_active_blocks_per_multiprocessor(None, 128, 0, flags="x")


def test_b2d_func_must_be_a_function_an_address_or_zero(ctx):
    with pytest.raises(TypeError, match="b2d_func is a function of the block size giving the "
                                        "dynamic shared memory in bytes, the address of a C "
                                        "one, or 0; not 'x'"):
        ctx.get_max_potential_block_size(None, "x", 0, 1024)
    with pytest.raises(TypeError, match="or 0; not -5"):
        ctx.get_max_potential_block_size(None, -5, 0, 1024)


B2D = ctypes.CFUNCTYPE(ctypes.c_size_t, ctypes.c_int)


def test_best_block_size_follows_the_drivers_search():
    """The configurator's rule, against a model of a device (2048 threads per
    multiprocessor, at most 16 blocks; a kernel limited to 1000 threads per block): sizes
    from the limit down by warps, the first with the most resident threads wins, and the
    search stops once a multiprocessor is full."""
    from gpuhost.compat.numba._context import _b2d_callable, _best_block_size

    sms = int(rng.integers(1, 200))
    per_byte = int(rng.integers(2, 9))
    tried = []

    def model(rule):
        def active(block, smem):
            tried.append((block, smem))
            return rule(block)
        return active

    smem_of = B2D(lambda block: per_byte * block)  # kept alive: its address is used below
    b2d = _b2d_callable(ctypes.cast(smem_of, ctypes.c_void_p).value)
    assert _best_block_size(model(lambda b: min(16, 2048 // b)), b2d, 1000, 32, 2048,
                            sms) == (4 * sms, 512)
    blocks = [b for b, _ in tried]
    assert blocks[:3] == [1000, 992, 960] and blocks[-1] == 512
    assert all(smem == per_byte * b for b, smem in tried)
    # no size fills a multiprocessor: every size is tried, the largest best one kept
    tried.clear()
    assert _best_block_size(model(lambda b: 1 if b > 100 else 0), lambda b: 0, 300, 32,
                            2048, sms) == (sms, 300)
    assert [b for b, _ in tried] == [300] + list(range(288, 0, -32))


@pytest.mark.parametrize("gives, shown", [(-1, "-1"), ("x", "'x'"), (1.5, "1.5"),
                                          (True, "True")])
def test_b2d_func_must_give_a_size_in_bytes(gives, shown):
    from gpuhost.compat.numba._context import _best_block_size

    with pytest.raises(ValueError, match=r"b2d_func\(64\) gave %s; it must give the dynamic "
                                         r"shared memory in bytes, an int >= 0" % shown):
        _best_block_size(lambda b, s: 1, lambda b: gives, 64, 32, 2048, 1)


@pytest.mark.gpu
def test_create_module_ptx_loads_a_module_whose_kernels_launch(ctx):
    module = ctx.create_module_ptx(HELLO_PTX)
    assert isinstance(module, gpuhost.Module) and module.context is ctx
    kernel = module.get_function("_Z10helloworldPi")
    n = int(rng.integers(32, 1024))
    out = gpuhost.to_device(random_array(n, np.int32))
    kernel[1, n](out)
    np.testing.assert_array_equal(out.copy_to_host(), np.arange(n, dtype=np.int32))
    assert ctx.create_module_ptx(HELLO_PTX.encode()).get_function("_Z10helloworldPi")


@pytest.mark.gpu
def test_active_blocks_of_a_loaded_kernel_are_the_drivers(ctx):
    kernel = ctx.create_module_ptx(HELLO_PTX).get_function("_Z10helloworldPi")
    block = 32 * int(rng.integers(1, 33))
    memsize = int(rng.integers(0, 8192))
    value = ctx.get_active_blocks_per_multiprocessor(kernel, block, memsize)
    assert value > 0
    assert value == kernel.max_active_blocks_per_multiprocessor(block, memsize)
    assert ctx.get_active_blocks_per_multiprocessor(kernel, block, memsize, flags=0) == value
    with pytest.raises(ValueError, match="block_size must be positive"):
        ctx.get_active_blocks_per_multiprocessor(kernel, 0, memsize)


@pytest.mark.gpu
def test_max_potential_block_size_is_the_drivers_with_or_without_b2d_func(ctx):
    kernel = ctx.create_module_ptx(HELLO_PTX).get_function("_Z10helloworldPi")
    memsize = int(rng.integers(1, 48)) * 1024
    limit = 32 * int(rng.integers(1, 33))
    expected = kernel.max_potential_block_size(memsize, limit)
    assert ctx.get_max_potential_block_size(kernel, 0, memsize, limit) == expected
    assert ctx.get_max_potential_block_size(kernel, None, memsize, limit) == expected
    # the search made here for a b2d_func agrees with the driver's for a constant one
    assert ctx.get_max_potential_block_size(kernel, lambda b: memsize, 0, limit) == expected
    smem_of = B2D(lambda b: memsize)
    address = ctypes.cast(smem_of, ctypes.c_void_p).value
    assert ctx.get_max_potential_block_size(kernel, address, 0, limit) == expected
    unlimited = kernel.max_potential_block_size(memsize, 0)
    assert ctx.get_max_potential_block_size(kernel, lambda b: memsize, 0, 0) == unlimited
    with pytest.raises(ValueError, match="blocksizelimit must not be negative"):
        ctx.get_max_potential_block_size(kernel, lambda b: memsize, 0, -1)


@pytest.mark.gpu
def test_unload_module_unloads_a_module_of_this_context(ctx):
    module = ctx.create_module_ptx(HELLO_PTX)
    ctx.unload_module(module)
    assert module.unloaded


@pytest.mark.gpu
@pytest.mark.gpus(2)
def test_a_kernel_of_another_context_is_refused():
    other = gpuhost.gpus[1].get_primary_context()
    with gpuhost.gpus[0]:
        ctx0 = gpuhost.current_context()
        module = ctx0.create_module_ptx(HELLO_PTX)
    kernel = module.get_function("_Z10helloworldPi")
    with pytest.raises(ValueError, match="kernel '_Z10helloworldPi' was loaded in"):
        other.get_active_blocks_per_multiprocessor(kernel, 128, 0)
    with pytest.raises(ValueError, match="the module was loaded in"):
        other.unload_module(module)
