"""Fault sweep over the fake driver: every driver call a public operation makes, made to
fail in turn.

For each operation of OPERATIONS the sweep runs it once counting the calls it makes to each
entry point, then, for every (entry point, n-th call) pair, runs it again with exactly that
call failing (CUDA_ERROR_UNKNOWN).  Each injected failure must:

- reach Python as CudaAPIError naming the call and its code (or, for a release that runs
  in cleanup, become a RuntimeWarning naming it; or, for the few calls that only probe,
  be absorbed with the operation still correct, see ABSORBED);
- leave no resource behind: the fake driver's live allocations, streams, events, modules,
  contexts, host allocations, registrations and IPC mappings return to what they were
  (a release the driver refused leaks exactly that one handle: the driver still owns it);
- leave this thread's context stack as it was;
- leave gpuhost usable: the same operation then succeeds.

The fake driver reports where each injected failure was returned to (a return address in
gpuhost._core), so the sweep also counts distinct (entry point, call site) pairs.
Set GPUHOST_SWEEP_REPORT=path to write the pairs, with source lines, to a file.
"""
import ctypes
import gc
import io
import os
import pickle
import re
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

import gpuhost
from gpuhost import CudaAPIError, _core
from conftest import DRIVER

pytestmark = pytest.mark.fake

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CODE = 999  # CUDA_ERROR_UNKNOWN: a code no gpuhost path treats specially
KINDS = ("contexts", "allocations", "streams", "events", "modules", "host_allocations",
         "registrations", "ipc_mappings")
STAGED_BYTES = 5 << 20  # a pageable copy this large goes through the staging ring
rng = np.random.default_rng()


def entry_points():
    """Every "cuName" of csrc/base/cuda_api.h's list."""
    with open(os.path.join(ROOT, "csrc", "base", "cuda_api.h")) as f:
        return ["cu" + m for m in re.findall(r"^\s*X\((\w+), \d+\)", f.read(), re.M)]


# Release calls: when one fails in cleanup, gpuhost warns (RuntimeWarning naming it) and the
# handle stays with the driver, counted live under this kind.
RELEASES = {"cuMemFree": "allocations", "cuMemFreeHost": "host_allocations",
            "cuMemHostUnregister": "registrations", "cuStreamDestroy": "streams",
            "cuEventDestroy": "events", "cuIpcCloseMemHandle": "ipc_mappings",
            "cuModuleUnload": "modules", "cuDevicePrimaryCtxRelease": None,
            "cuMemFreeAsync": "allocations",
            # a trim the driver refused leaves its pool's cached allocations with it
            "cuMemPoolTrimTo": "allocations*"}

# Calls whose failure is absorbed by design, the operation still succeeding (and checking
# its results): why, for each.
ABSORBED = {
    # staging.c / devicearray.c ask whether host memory is pinned; "unknown" means pageable,
    # which is always a correct (if slower) way to copy it
    "cuPointerGetAttribute": "a pinned-memory probe: failure means 'pageable', still correct",
    # errors.c describes an error with them; failing, the enum's own name is used
    "cuGetErrorString": "only describes another error",
    "cuGetErrorName": "only describes another error",
    # event.c asks which context a refused foreign stream belongs to, to word the error
    "cuStreamGetCtx": "only words another error",
    # compiler.py's default target asks for the current device and falls back, as
    # documented, to GPUHOST_DEFAULT_PTX_CC or the oldest architecture whatever went wrong
    "op_modules:cuCtxGetCurrent": "compile()'s documented fallback target",
    "op_modules:cuDeviceGetAttribute": "compile()'s documented fallback target",
    "op_raw_kernel:cuCtxGetCurrent": "compile()'s documented fallback target",
    "op_raw_kernel:cuDeviceGetAttribute": "compile()'s documented fallback target",
    # context.c: leaving a with-block pops without the inquiry when the inquiry fails
    "cuCtxGetCurrent@gh_context_pop": "the pop is checked by what it popped instead",
    # memory.c states the device's free/total memory in an out-of-memory message
    "cuMemGetInfo@memory_info": "only words another error",
    "op_out_of_memory:cuCtxGetCurrent": "memory_info()'s gh_context_enter: words an error",
    # staging.c: without its pinned ring a large copy is the driver's own pageable copy
    "cuMemHostRegister@ensure_ring": "the documented fallback copy",
    # pool.c relaxes the thread's capture mode around cuMemAlloc/cuMemHostAlloc so that a
    # pool can grow during a global capture; refused, the allocation is made in the
    # thread's own mode (outside a capture the same; inside one the driver's refusal of the
    # allocation is reported)
    "cuThreadExchangeStreamCaptureMode": "only widens where the pool may allocate",
    # context.c: a Device.reset() knows a context it takes back by its id; without one, the
    # context taken back counts as a new one (what gpuhost made before is stale): still safe
    "cuCtxGetId": "an unknown id makes a retaken context count as new, which is safe",
}

# Known bugs in files other engineers own, reported to them: (operation, entry point) ->
# what is wrong.  Listed failures are printed, not failed.
KNOWN = {
    ("op_malloc_async", "cuCtxGetCurrent"):
        "pool.c, driver mode: the stream-ordered free clears a failed gh_context_enter "
        "(PyErr_Clear), so the block is kept with no warning",
}


# ---- the operations: each makes its inputs, does one public thing, checks the result ----

def rand(shape, dtype=np.float32):
    return (rng.standard_normal(shape) * 100).astype(dtype)


def same(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def op_alloc():
    a = gpuhost.device_array((10, 10), np.float64)
    assert a.shape == (10, 10) and a.ptr != 0
    raw = _core.mem_alloc(4096)
    raw.close()


def op_copy_contiguous():
    h = rand(257)
    d = gpuhost.to_device(h)
    assert same(d.copy_to_host(), h)
    out = np.empty_like(h)
    d.copy_to_host(out)
    assert same(out, h)
    assert d[3] == h[3]


def op_copy_strided():
    base = rand((8, 6), np.float64)
    h = base[::2, ::-1]
    d = gpuhost.to_device(h)
    assert same(d.copy_to_host(), np.ascontiguousarray(h))
    target = np.zeros((8, 6))
    d.copy_to_host(target[1::2, :])
    assert same(np.ascontiguousarray(target[1::2]), np.ascontiguousarray(h))
    big = gpuhost.device_array((8, 6), np.float64)
    big[::2] = h
    assert same(big.copy_to_host()[::2], np.ascontiguousarray(h))


def op_copy_on_stream():
    s = gpuhost.stream()
    h = rand((4, 33))
    d = gpuhost.to_device(h, stream=s)
    out = d.copy_to_host(stream=s)
    s.synchronize()
    assert same(out, h)
    d2 = gpuhost.device_array_like(h, stream=s)
    d2.copy_to_device(d, stream=s)
    v = d[:, ::2].copy_to_host(stream=s)
    s.synchronize()
    assert same(d2.copy_to_host(), h) and same(v, np.ascontiguousarray(h[:, ::2]))


def op_copy_device_to_device():
    h = rand((6, 5))
    src = gpuhost.to_device(h)
    dst = gpuhost.device_array_like(h)
    dst.copy_to_device(src)
    dst2 = gpuhost.device_array((6, 5), np.float32, order="F")
    dst2.copy_to_device(src)  # another layout: the copy kernel, else through the host
    assert same(dst.copy_to_host(), h) and same(dst2.copy_to_host(), h)


def op_peer_copy():
    h = rand(100)
    with gpuhost.gpus[1]:
        on1 = gpuhost.to_device(h)
    on0 = gpuhost.device_array_like(h)
    on0.copy_to_device(on1)
    assert same(on0.copy_to_host(), h)


def op_staged_copy():
    h = fresh_words(STAGED_BYTES)
    d = gpuhost.to_device(h)
    assert np.array_equal(d.copy_to_host(), h)


def op_pinned_array():
    p = gpuhost.pinned_array((3, 50), np.int32)
    p[...] = rng.integers(-1000, 1000, p.shape)
    d = gpuhost.to_device(p)
    out = gpuhost.pinned_array_like(p)
    d.copy_to_host(out)
    assert same(out, p)


def op_mapped_and_managed():
    m = gpuhost.mapped_array(64, np.int64)
    m[:] = np.arange(64)
    dm = gpuhost.as_cuda_array(m)
    assert same(dm.copy_to_host(), np.arange(64))
    g = gpuhost.managed_array(32, np.float32)
    g[:] = 1.5
    assert same(gpuhost.as_cuda_array(g).copy_to_host(), np.full(32, 1.5, np.float32))


# Host buffers op_registered registered, kept for the whole run: when the driver refuses an
# unregistration the buffer stays registered, and a new buffer at the same address could
# not be registered again.
_REGISTERED = []


def op_registered():
    h = rand(1000)
    w = rand(16)
    _REGISTERED.extend((h, w))
    with gpuhost.pinned(h):
        d = gpuhost.to_device(h)
    assert same(d.copy_to_host(), h)
    with gpuhost.mapped(w) as dw:
        assert same(dw.copy_to_host(), w)


def op_memsets():
    d = gpuhost.to_device(rand((16, 8)))
    d[...] = 0.5
    d[:, 2:5] = 2.0
    d[3] = -1.0
    expect = np.full((16, 8), 0.5, np.float32)
    expect[:, 2:5] = 2.0
    expect[3] = -1.0
    assert same(d.copy_to_host(), expect)
    s = gpuhost.stream()
    b = gpuhost.device_array((4, 6), np.uint8, stream=s)
    b[...] = 7
    b[:, 1:3] = 9
    c = gpuhost.device_array(10, np.int16).bind(s)
    c[...] = -2
    s.synchronize()
    expect8 = np.full((4, 6), 7, np.uint8)
    expect8[:, 1:3] = 9
    assert same(b.copy_to_host(), expect8)
    assert same(c.copy_to_host(), np.full(10, -2, np.int16))


def op_streams():
    s = gpuhost.stream(non_blocking=True, priority=-1)
    assert s.query() and s.done and s.non_blocking and s.priority == -1
    s.synchronize()
    for t in (gpuhost.default_stream(), gpuhost.legacy_default_stream(),
              gpuhost.per_thread_default_stream()):
        t.synchronize()
        assert t.query()
    with s.auto_synchronize() as same_stream:
        assert same_stream is s


def op_events():
    s = gpuhost.stream()
    e1, e2 = gpuhost.event(), gpuhost.event(timing=True, blocking_sync=True)
    e1.record(s)
    d = gpuhost.to_device(rand(10), stream=s)
    e2.record(s)
    other = gpuhost.stream()
    e2.wait(other)
    other.wait_event(e1)
    e3 = s.record()
    e2.synchronize()
    e3.synchronize()
    assert e1.query() and e2.query()
    assert e1.elapsed_time(e2) >= 0 and gpuhost.event_elapsed_time(e1, e2) >= 0
    other.synchronize()
    del d


def op_ipc_event():
    e = gpuhost.event(interprocess=True, timing=False)
    e.record()
    handle = pickle.loads(pickle.dumps(e.ipc_handle()))
    opened = handle.open()
    opened.synchronize()
    assert opened.query()


def op_callbacks():
    s = gpuhost.stream()
    got = []
    s.add_callback(lambda stream, status, arg: got.append((status, arg)), 5)
    s.synchronize()
    assert got == [(0, 5)]


def op_contexts():
    with gpuhost.gpus[1]:
        ctx = gpuhost.current_context()
        assert ctx.device.id == 1
        info = ctx.get_memory_info()
        assert 0 < info.free <= info.total
        ctx.synchronize()
    ctx.push()
    ctx.pop()
    gpuhost.synchronize()
    assert gpuhost.get_current_device().id == 0


def op_reset():
    with gpuhost.gpus[1]:
        d = gpuhost.to_device(rand(8))
        s = gpuhost.stream()
        e = gpuhost.event()
    gpuhost.gpus[1].reset(force=True)  # destroyed even where an earlier fault left a retain
    for use in (d.copy_to_host, s.synchronize, e.record):
        try:
            use()
        except CudaAPIError as exc:
            assert exc.name == "CUDA_ERROR_CONTEXT_IS_DESTROYED", exc
        else:
            raise AssertionError("%s worked after the reset" % use)
    del d, s, e
    with gpuhost.gpus[1]:
        h = rand(8)
        assert same(gpuhost.to_device(h).copy_to_host(), h)


def op_dlpack():
    s = gpuhost.stream()
    h = rand((3, 5))
    d = gpuhost.to_device(h).bind(s)
    view = d[:, 1:4]
    consumer = gpuhost.stream()
    back = _core.dlpack_import(view.__dlpack__(stream=consumer.handle))
    legacy = _core.dlpack_import(d.__dlpack__(max_version=None))
    assert same(back.copy_to_host(), np.ascontiguousarray(h[:, 1:4]))
    assert same(legacy.copy_to_host(), h)


def op_ipc_array():
    h = rand((4, 5))
    base = gpuhost.to_device(h)
    handle = pickle.loads(pickle.dumps(base[1:].get_ipc_handle()))
    with handle as opened:
        assert same(opened.copy_to_host(), h[1:])


def op_defer_cleanup():
    with gpuhost.defer_cleanup():
        a = gpuhost.device_array(100)
        s = gpuhost.stream()
        del a, s


SAXPY = r"""
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


def not_supported(fn):
    """Run fn, which the fake driver refuses (it loads no modules)."""
    try:
        fn()
    except CudaAPIError as e:
        if e.name != "CUDA_ERROR_NOT_SUPPORTED":
            raise
    else:
        raise AssertionError("the fake driver loaded a module")


def op_modules():
    ptx = gpuhost.compile_ptx_for_current_device(SAXPY)
    not_supported(lambda: gpuhost.Module(ptx))
    not_supported(lambda: gpuhost.SourceModule(SAXPY, no_extern_c=True))
    linker = gpuhost.Linker()
    linker.add_ptx(ptx)
    not_supported(linker.complete)


def op_devices_and_profiler():
    dev = gpuhost.gpus[0]
    assert dev.get_attribute("MULTIPROCESSOR_COUNT") > 0
    assert len(dev.attributes) > 10
    out = io.StringIO()
    assert gpuhost.detect(file=out) and "gpuhost fake" in out.getvalue()
    with gpuhost.profiling():
        pass
    gpuhost.profile_start()
    gpuhost.profile_stop()


def op_select_device():
    gpuhost.select_device(1)
    try:
        assert gpuhost.get_current_device().id == 1
        h = rand(5)
        assert same(gpuhost.to_device(h).copy_to_host(), h)
    finally:
        gpuhost.select_device(0)


def op_other_context_objects():
    """Objects of device 1 used while device 0's context is current: each call pushes
    device 1's context for its duration."""
    with gpuhost.gpus[1]:
        h = rand((5, 4))
        d = gpuhost.to_device(h)
        s = gpuhost.stream()
        e = gpuhost.event()
        ctx = gpuhost.current_context()
    assert same(d.copy_to_host(), h)
    d[...] = 3.0
    d.bind(s)[1] = 4.0
    e.record(s)
    s.synchronize()
    e.synchronize()
    assert ctx.get_memory_info().free > 0
    ctx.synchronize()
    expect = np.full((5, 4), 3.0, np.float32)
    expect[1] = 4.0
    assert same(d.copy_to_host(), expect)


def op_close():
    gpuhost.close()  # gives up every primary context; the next call makes device 0's again
    h = rand(7)
    assert same(gpuhost.to_device(h).copy_to_host(), h)
    assert gpuhost.get_current_device().id == 0


op_close.empties_stack = True


def op_memset_variants():
    s = gpuhost.stream()
    for dtype, value in ((np.uint8, 5), (np.int16, -3), (np.float32, 0.25)):
        for stream in (None, s):
            d = gpuhost.device_array((6, 8), dtype, stream=stream or 0)
            d[...] = value
            d[:, 2:6] = value + 1
            if stream is not None:
                s.synchronize()
            expect = np.full((6, 8), value, dtype)
            expect[:, 2:6] = value + 1
            assert same(d.copy_to_host(), expect)


def op_peer_copy_on_stream():
    h = rand(64)
    with gpuhost.gpus[1]:
        on1 = gpuhost.to_device(h)
    s = gpuhost.stream()
    on0 = gpuhost.device_array_like(h)
    on0.copy_to_device(on1, stream=s)
    s.synchronize()
    assert same(on0.copy_to_host(), h)


def op_peer_access():
    ctx0 = gpuhost.current_context()
    assert gpuhost.gpus[0].can_access_peer(1) and ctx0.can_access_peer(1)
    ctx0.enable_peer_access(1)
    ctx0.enable_peer_access(gpuhost.gpus[1])  # already enabled: no error
    h = rand(32)
    with gpuhost.gpus[1]:
        on1 = gpuhost.to_device(h)
        s1 = gpuhost.stream()
    on0 = gpuhost.device_array_like(h)
    on0.copy_to_device(on1, stream=s1)  # on the source's stream
    s1.synchronize()
    ctx0.disable_peer_access(1)
    ctx0.disable_peer_access(1)  # not enabled: no error
    assert same(on0.copy_to_host(), h)


def op_foreign_stream():
    """Recording an event on another context's stream, known only by its handle."""
    with gpuhost.gpus[1]:
        s1 = gpuhost.stream()
    e = gpuhost.event()
    try:
        e.record(gpuhost.external_stream(s1.handle))
    except gpuhost.CudaDriverError as exc:
        if isinstance(exc, CudaAPIError) and exc.name != "CUDA_ERROR_INVALID_HANDLE":
            raise
    else:
        raise AssertionError("an event was recorded on another context's stream")


def op_out_of_memory():
    try:
        gpuhost.device_array(1 << 45, np.uint8)
    except gpuhost.CudaOutOfMemoryError as e:
        assert e.requested >= 1 << 45
    else:
        raise AssertionError("allocated 32 TiB")
    h = rand(3)
    assert same(gpuhost.to_device(h).copy_to_host(), h)


def op_pool_across_streams():
    """A block freed on a busy stream, reused by an allocation on another stream: the pool
    orders the second stream after the first (an event) before handing it out."""
    s1, s2 = gpuhost.stream(), gpuhost.stream()
    FAKE[0].gate_close()
    try:
        d = gpuhost.device_array(1000, np.float32, stream=s1)
        s1.add_callback(lambda *args: None)  # s1 stays busy until the gate opens
        del d
        d2 = gpuhost.device_array(1000, np.float32, stream=s2)
    finally:
        FAKE[0].gate_open()
    s2.synchronize()  # GIL released: the callback it waits for needs it
    h = rand(1000)
    d2.copy_to_device(h, stream=s2)
    assert same(d2.copy_to_host(stream=s2), h)
    s2.synchronize()


def op_pinned_pool():
    pool = _core.Pool(kind="pinned")
    a = pool.allocate(4096)
    view = np.frombuffer(a, np.uint8)
    view[:] = 7
    d = gpuhost.to_device(view)
    assert same(d.copy_to_host(), np.full(4096, 7, np.uint8))
    del view, a
    pool.free_all_blocks()


def op_cupy_pools():
    """gpuhost.memory, CuPy's names: a pool of its own, the default pool, async, managed
    and pinned memory."""
    import gpuhost.memory as mem

    pool = mem.MemoryPool()
    h = rng.integers(0, 256, 3000, dtype=np.uint8)
    p = pool.malloc(h.nbytes)
    p.copy_from_host(h.ctypes.data, h.nbytes)
    q = mem.alloc(h.nbytes)
    q.copy_from_device(p, h.nbytes)
    out = np.zeros_like(h)
    q.copy_to_host(out.ctypes.data, h.nbytes)
    assert same(out, h)
    q.memset(3, 100)
    q.copy_to_host(out.ctypes.data, 100)
    assert (out[:100] == 3).all()
    pool.set_limit(size=1 << 20)
    assert pool.get_limit() == 1 << 20
    del p, q
    assert pool.n_free_blocks() >= 1
    pool.free_all_blocks()
    g = mem.malloc_managed(512)
    g.copy_from_host(h.ctypes.data, 512)
    g.copy_to_host(out.ctypes.data, 512)
    assert same(out[:512], h[:512])
    pinned = mem.alloc_pinned_memory(1024)
    assert len(pinned) >= 1024
    del g, pinned
    mem.get_default_pinned_memory_pool().free_all_blocks()


def op_malloc_async():
    """Stream-ordered memory (cuMemAllocAsync), gpuhost.memory's malloc_async."""
    import gpuhost.memory as mem

    s = gpuhost.stream()
    h = rng.integers(0, 256, 4096, dtype=np.uint8)
    a = mem.malloc_async(4096, stream=s)
    a.copy_from_host_async(h.ctypes.data, 4096, stream=s)
    out = np.zeros_like(h)
    a.copy_to_host_async(out.ctypes.data, 4096, stream=s)
    s.synchronize()
    assert same(out, h)
    del a


def op_pycuda_pools():
    from gpuhost.tools import DeviceMemoryPool, PageLockedMemoryPool

    pool = DeviceMemoryPool()
    blocks = [pool.allocate(n) for n in (100, 5000, 100)]
    assert pool.active_blocks == 3
    del blocks
    assert pool.held_blocks >= 2
    pool.free_held()
    hpool = PageLockedMemoryPool()
    h = hpool.allocate((16, 8), np.float32)
    h[...] = rand((16, 8))
    assert same(gpuhost.to_device(h).copy_to_host(), h)
    del h
    hpool.free_held()
    pool.stop_holding()


def op_emm_plugin():
    from gpuhost import memory_manager as mm

    class Plugin(mm.HostOnlyCUDAMemoryManager):
        def initialize(self):
            pass

        def memalloc(self, size):
            alloc = _core.mem_alloc(size)
            return mm.MemoryPointer(self.context, ctypes.c_uint64(alloc.ptr), size,
                                    owner=alloc, finalizer=alloc.close)

        def get_memory_info(self):
            return mm.MemoryInfo(*self.context.get_memory_info())

        def get_ipc_handle(self, memory):
            raise NotImplementedError

        @property
        def interface_version(self):
            return 1

    mm.set_memory_manager(Plugin)
    try:
        h = rand((7, 3))
        d = gpuhost.to_device(h)
        assert same(d.copy_to_host(), h)
        mgr = mm.get_memory_manager()
        pinned = mgr.memhostalloc(256)
        del d, pinned
    finally:
        mm.set_memory_manager(None)


def op_raw_kernel():
    k = gpuhost.RawKernel(SAXPY, "saxpy")
    d = gpuhost.to_device(rand(32))
    not_supported(lambda: k((1,), (32,), (np.float32(2), d, d, np.int32(32))))


class _Exporter:
    def __init__(self, cai):
        self.__cuda_array_interface__ = cai


def op_cuda_array_interface():
    h = rand((5, 6))
    d = gpuhost.to_device(h)
    cai = dict(d.__cuda_array_interface__)
    owner = _Exporter(cai)
    assert gpuhost.is_cuda_array(owner)
    view = gpuhost.as_cuda_array(owner)
    assert same(view.copy_to_host(), h)
    other = gpuhost.from_cuda_array_interface(cai, owner=d)
    t = gpuhost.device_array_like(h)
    t.copy_to_device(owner)
    assert same(other.copy_to_host(), h) and same(t.copy_to_host(), h)


def fresh_words(nbytes):
    """nbytes of fresh, never all-zero data, fast to make (large staged copies)."""
    return np.arange(nbytes // 4, dtype=np.uint32) ^ np.uint32(rng.integers(1, 2**32))


def op_staged_many_chunks():
    h = fresh_words(33 << 20)  # 5 chunks of the 4-slot ring: a slot is waited for, reused
    d = gpuhost.to_device(h)
    assert np.array_equal(d.copy_to_host(), h)


def op_graph():
    s = gpuhost.stream()
    src, out = gpuhost.pinned_array(256, np.uint32), gpuhost.pinned_array(256, np.uint32)
    src[:] = fresh_words(1024)
    d = gpuhost.device_array(256, np.uint32, stream=s)
    seen = []
    with gpuhost.graph_capture(s) as cap:
        d.copy_to_device(src, stream=s)
        s.launch_host_func(seen.append, 1)
        d.copy_to_host(out, stream=s)
    g = gpuhost.Graph()
    g.add_memcpy(out, d, depends_on=g.add_memset(d, 7))
    cap.graph.launch(s)
    s.synchronize()
    assert same(out, src) and seen == [1]
    g.instantiate().launch(s)
    s.synchronize()
    assert (out == 7).all()


def op_staged_after_reset():
    gpuhost.gpus[0].reset(force=True)  # undoes the ring's registration: the next staged copy
    # redoes it (forced: destroyed even where an earlier fault left a retain)
    op_staged_copy()


OPERATIONS = [op_alloc, op_copy_contiguous, op_copy_strided, op_copy_on_stream,
              op_copy_device_to_device, op_peer_copy, op_staged_copy, op_pinned_array,
              op_mapped_and_managed, op_registered, op_memsets, op_streams, op_events,
              op_ipc_event, op_callbacks, op_contexts, op_reset, op_dlpack, op_ipc_array,
              op_defer_cleanup, op_modules, op_devices_and_profiler, op_select_device,
              op_other_context_objects, op_close, op_memset_variants, op_peer_copy_on_stream,
              op_foreign_stream, op_peer_access, op_out_of_memory, op_pool_across_streams,
              op_staged_many_chunks, op_staged_after_reset, op_graph, op_cupy_pools, op_pycuda_pools,
              op_emm_plugin, op_raw_kernel, op_cuda_array_interface, op_malloc_async]
if hasattr(_core, "Pool"):
    OPERATIONS.append(op_pinned_pool)
FAKE = []  # the fake driver's controls, for the operations that hold work back


# ---- the sweep ----

def raw_pop(fake):
    """cuCtxPopCurrent straight from the fake driver, behind gpuhost's back (repairs)."""
    fn = ctypes.c_void_p()
    if fake._lib.cuGetProcAddress_v2(b"cuCtxPopCurrent", ctypes.byref(fn), 4000, 0, None) != 0:
        raise RuntimeError("no cuCtxPopCurrent")
    popped = ctypes.c_void_p()
    ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p))(fn.value)(ctypes.byref(popped))


_CONTEXTS = []


def release_pool_blocks():
    """Give back the device memory the default pools cache (and the streams their free
    lists keep alive), in the contexts gpuhost holds."""
    default_pool = getattr(_core, "default_pool", None)
    if default_pool is None:
        return
    if not _CONTEXTS:
        _CONTEXTS.extend(dev.get_primary_context() for dev in gpuhost.gpus)
    for ctx in _CONTEXTS:
        if ctx.handle is not None:
            default_pool(ctx).free_all_blocks()


def settle(fake, full=False):
    """Let queued work finish and everything the operation dropped be released."""
    deadline = time.monotonic() + 10
    while fake.pending() and time.monotonic() < deadline:
        time.sleep(0.0005)
    for _ in range(50):  # a release a driver thread handed back runs at the next bytecodes
        pass
    gc.collect() if full else gc.collect(1)
    _core.release_cached_events()
    release_pool_blocks()


def live(fake):
    return {k: fake.live(k) for k in KINDS}


def call_counts(fake, names):
    return {n: fake.calls(n) for n in names}


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


_libc = ctypes.CDLL(None)
_libc.dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]


def site_of(address):
    """(library file, offset in it) of a call site's return address, or None."""
    if not address:
        return None
    info = _DlInfo()
    if not _libc.dladdr(address, ctypes.byref(info)) or not info.dli_fname:
        return None
    return info.dli_fname.decode(), address - info.dli_fbase


_SOURCES = {}


def source_of(site):
    """(functions, 'csrc/memory/pool.c:123') of the call at `site` through addr2line: the functions
    it is in, innermost first when inlined, and the line of the call; ((), '?') where
    addr2line is not installed or knows nothing."""
    if site not in _SOURCES:
        path, offset = site
        funcs, where = (), "?"
        try:
            proc = subprocess.run(["addr2line", "-f", "-i", "-e", path, "%#x" % (offset - 1)],
                                  capture_output=True, text=True, timeout=30)
            lines = proc.stdout.splitlines()
            if len(lines) >= 2:
                funcs = tuple(lines[0::2])
                where = os.path.relpath(lines[1].split(" ")[0], ROOT)
        except (OSError, subprocess.TimeoutExpired):
            pass
        _SOURCES[site] = (funcs, where)
    return _SOURCES[site]


class Sweep:
    def __init__(self, fake):
        self.fake = fake
        self.names = entry_points()
        self.failures = []
        self.known = []
        self.times = {}
        self.runs = 0
        self.sites = set()       # (entry point, call site)
        self.unreached = 0       # pairs whose fault the operation never got to this time
        self.outcomes = {}       # kind of outcome -> count

    def fail(self, op, name, nth, what):
        line = "%s: %s call %d: %s" % (op.__name__, name, nth, what)
        if (op.__name__, name) in KNOWN:
            self.known.append(line)
        else:
            self.failures.append(line)

    def count_calls(self, op):
        settle(self.fake, full=True)
        before = call_counts(self.fake, self.names)
        op()
        settle(self.fake)
        after = call_counts(self.fake, self.names)
        return {n: after[n] - before[n] for n in self.names if after[n] > before[n]}

    def run_faulted(self, op, name, nth):
        """Run op with call `nth` of `name` failing; (exception or None, warnings, site)."""
        self.fake.take_fault_site()
        error = None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            self.fake.fail(name, CODE, nth=nth)
            try:
                op()
            except Exception as e:  # noqa: BLE001 - every exception is judged below
                error = e.with_traceback(None)
            try:
                settle(self.fake)  # releases are part of the operation: faults reach them
            except Exception as e:  # noqa: BLE001
                error = error or e.with_traceback(None)
            finally:
                self.fake.clear_faults()
            settle(self.fake)
        # A DeviceResetWarning says who else holds a context (a retain an earlier fault left
        # behind, here): the reset's own report, not a cleanup's.
        messages = [str(w.message) for w in caught
                    if not issubclass(w.category, gpuhost.DeviceResetWarning)]
        return error, messages, site_of(self.fake.take_fault_site())

    def judge(self, op, name, nth, error, messages, site):
        if site is None:
            self.unreached += 1
            outcome = "not reached"
        elif error is not None:
            if isinstance(error, CudaAPIError) and error.call == name and error.code == CODE:
                outcome = "CudaAPIError"
            else:
                outcome = "wrong error"
                self.fail(op, name, nth, "raised %s: %s" % (type(error).__name__, error))
        elif any(name in m for m in messages):
            outcome = "cleanup warning"
        elif (name in ABSORBED or "%s:%s" % (op.__name__, name) in ABSORBED
              or any("%s@%s" % (name, f) in ABSORBED for f in source_of(site)[0])):
            outcome = "absorbed"
        else:
            outcome = "silently ignored"
            self.fail(op, name, nth, "the failure was ignored (no error, no warning) at %s (%s)"
                      % (source_of(site)[1], " < ".join(source_of(site)[0])))
        if error is not None and messages and outcome != "wrong error":
            stray = [m for m in messages if "gpuhost" in m and name not in m]
            if stray:
                self.fail(op, name, nth, "warnings about other calls: %s" % stray)
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
        if site is not None:
            self.sites.add((name, site))
        return outcome

    def check_clean(self, op, name, nth, baseline, limit, depth, outcome):
        """Check nothing leaked past `limit` (the operation's baseline, plus the handles
        the driver refused to release); the new limit."""
        kind = RELEASES.get(name, "-")
        now = live(self.fake)
        if outcome == "cleanup warning" and kind not in ("-", None):
            if kind.endswith("*"):  # as many as the driver kept
                kind = kind[:-1]
                limit = dict(limit, **{kind: max(limit[kind], now[kind])})
            else:
                limit = dict(limit, **{kind: limit[kind] + 1})  # the driver still owns it
        if any(now[k] > limit[k] for k in KINDS):
            settle(self.fake, full=True)
            now = live(self.fake)
        leaked = {k: now[k] - limit[k] for k in KINDS if now[k] > limit[k]}
        if leaked:
            self.fail(op, name, nth, "leaked %s" % leaked)
        if self.fake.stack_depth() < depth and getattr(op, "empties_stack", False):
            gpuhost.current_context()  # close() popped it; the failed call did not redo it
        if self.fake.stack_depth() != depth:
            if not (name == "cuCtxPopCurrent" and outcome == "CudaAPIError"):
                self.fail(op, name, nth, "context stack depth %d, was %d"
                          % (self.fake.stack_depth(), depth))
            while self.fake.stack_depth() > depth:  # a pop the driver refused
                raw_pop(self.fake)
        # fewer is never a leak: a reset destroys what its context held, refused or not
        return {k: max(baseline[k], min(limit[k], now[k])) for k in KINDS}

    def sweep(self, op):
        op()  # warm: lazy set-up (the staging ring, contexts, the compile cache) done once
        op()
        calls = self.count_calls(op)
        settle(self.fake, full=True)
        baseline, depth = live(self.fake), self.fake.stack_depth()
        limit = baseline
        for name, count in sorted(calls.items()):
            for nth in range(1, count + 1):
                error, messages, site = self.run_faulted(op, name, nth)
                self.runs += 1
                outcome = self.judge(op, name, nth, error, messages, site)
                del error
                limit = self.check_clean(op, name, nth, baseline, limit, depth, outcome)
                try:
                    op()  # usable afterwards
                except Exception as e:  # noqa: BLE001
                    self.fail(op, name, nth, "the operation failed afterwards: %r" % e)
                settle(self.fake)
                limit = self.check_clean(op, name, nth, baseline, limit, depth, "recovery")
        return calls


def run_sweep(fake, ops, label):
    """Sweep `ops`; (Sweep, one-line summary).  GPUHOST_SWEEP_OPS=op_a,op_b keeps those
    alone; GPUHOST_SWEEP_REPORT=path appends the pairs swept, with source lines."""
    FAKE[:] = [fake]
    sweep = Sweep(fake)
    used = set()
    started = time.monotonic()
    only = os.environ.get("GPUHOST_SWEEP_OPS")
    for op in ops:
        if only and op.__name__ not in only.split(","):
            continue
        op_started = time.monotonic()
        used.update(sweep.sweep(op))
        sweep.times[op.__name__] = time.monotonic() - op_started
    sweep.entry_points = used
    lines = {(name, source_of(site)[1]) for name, site in sweep.sites}
    sweep.lines = lines
    summary = ("fault sweep (%s): %d operations, %d faulted runs, %d entry points, %d distinct "
               "(entry point, call site) pairs (%d source lines), outcomes %s, %.1f s"
               % (label, len(sweep.times), sweep.runs, len(used), len(sweep.sites), len(lines),
                  sweep.outcomes, time.monotonic() - started))
    print(summary)
    print("slowest:", sorted(sweep.times.items(), key=lambda t: -t[1])[:3])
    for line in sweep.known:
        print("known, reported:", line)
    report = os.environ.get("GPUHOST_SWEEP_REPORT")
    if report:
        rows = sorted("%-32s %s (%s)" % (name, source_of(site)[1],
                                         " < ".join(source_of(site)[0]))
                      for name, site in sweep.sites)
        with open(report, "a") as f:
            f.write(summary + "\n" + "\n".join(rows) + "\n")
    return sweep, summary


def check(sweep, summary, min_runs, min_pairs):
    assert not sweep.failures, "%d failures:\n%s" % (len(sweep.failures),
                                                     "\n".join(sweep.failures[:400]))
    # pairs of distinct call addresses; and of source lines, which inlining (another -O,
    # a sanitizer build) does not change
    assert sweep.runs >= min_runs and len(sweep.sites) >= min_pairs, summary
    assert len(sweep.lines) >= min_pairs, summary
    assert sweep.unreached <= sweep.runs // 20, summary


@pytest.mark.skipif(DRIVER != "fake", reason="needs the fake driver")
def test_every_driver_call_of_every_operation_fails_cleanly(fake, device0):
    # device0: the operations are written as moves between devices 0 and 1
    sweep, summary = run_sweep(fake, OPERATIONS, "default allocator")
    # lower bounds, so that coverage cannot shrink unnoticed (when written: 1097 runs,
    # 117 pairs, 102 source lines; 102 pairs in the sanitizer build, which inlines more)
    check(sweep, summary, 1000, 100)


# The operations that allocate device memory, swept again under the other allocators of
# GPUHOST_ALLOCATOR (read once per process: in a fresh interpreter each).
MEMORY_OPERATIONS = [op_alloc, op_copy_contiguous, op_copy_on_stream, op_copy_device_to_device,
                     op_memsets, op_peer_copy, op_pool_across_streams, op_out_of_memory,
                     op_ipc_array, op_dlpack, op_defer_cleanup, op_other_context_objects,
                     op_reset, op_close]

SUBPROCESS_SWEEP = r"""
import os, sys
sys.path.insert(0, %(tests)r)
import conftest, test_fault_sweep as t
fake = conftest.FakeDriver(os.environ["GPUHOST_CUDA_DRIVER"])
sweep, summary = t.run_sweep(fake, t.MEMORY_OPERATIONS, os.environ["GPUHOST_ALLOCATOR"])
t.check(sweep, summary, 300, 50)
"""


@pytest.mark.skipif(DRIVER != "fake", reason="needs the fake driver")
@pytest.mark.parametrize("allocator", ["driver", "plain"])
def test_every_memory_operation_fails_cleanly_under_each_allocator(allocator):
    proc = subprocess.run([sys.executable, "-c", SUBPROCESS_SWEEP % {"tests": HERE}],
                          env=dict(os.environ, GPUHOST_ALLOCATOR=allocator), cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    print(proc.stdout)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    assert "fault sweep (%s)" % allocator in proc.stdout


# The first calls of a process: loading the driver, then each device's facts.  A failed
# load is final (CudaSupportError naming the call, is_available() False); a failed device
# query raises CudaAPIError and is asked again next time.
LOADER = r"""
import ctypes, os, sys
lib = ctypes.CDLL(os.environ["GPUHOST_CUDA_DRIVER"])
lib.fakecuda_take_fault_site.restype = ctypes.c_void_p
name = sys.argv[1]
lib.fakecuda_fail(name.encode(), 1, 999, 1)
import gpuhost
if name in ("cuDriverGetVersion", "cuInit", "cuDeviceGetCount"):
    assert not gpuhost.is_available()
    try:
        gpuhost.device_array(4)
    except gpuhost.CudaSupportError as e:
        assert name in str(e) and "CUDA_ERROR_UNKNOWN" in str(e), e
    else:
        raise AssertionError("the driver loaded")
else:
    try:
        gpuhost.gpus[1].name
    except gpuhost.CudaAPIError as e:
        assert e.call == name and e.code == 999, e
    else:
        raise AssertionError("no error")
    assert gpuhost.gpus[1].name == "gpuhost fake A100"
    assert (gpuhost.to_device([1, 2, 3]).copy_to_host() == [1, 2, 3]).all()
print("site", lib.fakecuda_take_fault_site() or 0)
"""
LOADER_CALLS = ["cuDriverGetVersion", "cuInit", "cuDeviceGetCount", "cuDeviceGet",
                "cuDeviceGetName", "cuDeviceGetUuid", "cuDeviceGetPCIBusId", "cuDeviceTotalMem"]


@pytest.mark.skipif(DRIVER != "fake", reason="needs the fake driver")
@pytest.mark.parametrize("name", LOADER_CALLS)
def test_a_failing_first_call_is_reported_and_never_crashes(name):
    proc = subprocess.run([sys.executable, "-c", LOADER, name], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[:1] == ["site"] and proc.stdout.split()[1] != "0", proc.stdout


# ---- Python's own allocations failing: every path that reads other libraries' arrays ----

NOMEMORY = r"""
import ctypes, os, sys, types
import _testcapi
import numpy as np
import gpuhost

ctypes.CDLL(os.environ["GPUHOST_CUDA_DRIVER"]).fakecuda_kernels(1)


def CAI(a):  # a foreign array through the CUDA array interface
    return types.SimpleNamespace(__cuda_array_interface__=a.__cuda_array_interface__)


def DL(a):  # through DLPack alone
    return types.SimpleNamespace(__dlpack__=a.__dlpack__, __dlpack_device__=a.__dlpack_device__)


PTX = (".version 8.0\n.target sm_75\n.address_size 64\n"
       ".visible .entry k(.param .u64 k_param_0)\n{\nret;\n}\n")
base = gpuhost.to_device(np.arange(64, dtype=np.float32))
ops = {
    "as_cuda_array": lambda: gpuhost.as_cuda_array(CAI(base)).copy_to_host(),
    "from_dlpack": lambda: gpuhost.from_dlpack(DL(base)).copy_to_host(),
    "copy_from_foreign": lambda: gpuhost.device_array(64, np.float32).copy_to_device(CAI(base)),
    "launch_with_foreign": lambda: gpuhost.Module(PTX).get_function("k")[1, 1](CAI(base)),
    "index_assign_foreign": lambda: (base[..., None][1:5, 0], base[3], base.T, np.asarray(
        base, np.float64), base.__setitem__(slice(2, 6), CAI(base[8:12]))),
}
op = ops[sys.argv[1]]
other = []
for k in range(int(sys.argv[2])):
    _testcapi.set_nomemory(k, k + 1)  # the k-th allocation from here fails, and only it
    try:
        op()
    except MemoryError:
        pass
    except Exception as e:  # a clean error, still: which it was is reported
        other.append("%d %s: %s" % (k, type(e).__name__, e))
    finally:
        _testcapi.remove_mem_hooks()
print("swept", k + 1)
print("\n".join(other))
"""


@pytest.mark.skipif(DRIVER != "fake", reason="needs the fake driver")
@pytest.mark.parametrize("op", ["as_cuda_array", "from_dlpack", "copy_from_foreign",
                                "launch_with_foreign", "index_assign_foreign"])
def test_a_failing_python_allocation_while_reading_a_foreign_array_is_an_error_never_a_crash(op):
    """Each of the first 400 Python allocations of the operation, from a cold start (the
    interned names, the types learnt, the first use of each path), made to fail in turn:
    the operation raises MemoryError or a clean error, never crashes, never answers with an
    exception left set (SystemError)."""
    try:
        import _testcapi
    except ImportError:
        pytest.skip("this Python has no _testcapi (its test support module)")
    if not hasattr(_testcapi, "set_nomemory"):
        pytest.skip("this Python's _testcapi has no set_nomemory")
    proc = subprocess.run([sys.executable, "-c", NOMEMORY, op, "400"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[0] == "swept 400"
    assert not [line for line in lines[1:] if "SystemError" in line], lines
