"""Reference and memory leaks: each operation, repeated many times, leaves object counts
where they were.

After a warm-up (caches, free lists, the pools' size classes), an operation runs four
windows of N times.  Nothing may grow by anything like N in all three later windows: the
objects the cycle collector tracks (len(gc.get_objects())), the Python memory tracemalloc
traces, and the references held to the operation's long-lived arguments and to every
gpuhost type (each instance of a heap type holds one to its type, so a leaked DeviceArray,
Stream, Event or Allocation shows there even when it is not collectable).  A leak of one
object or one reference per call grows by N; the bounds below allow a small constant.
Error paths count too: bad input, injected driver failures, out of memory.
"""
import gc
import pickle
import sys
import tracemalloc
import weakref

import numpy as np
import pytest

import gpuhost
import gpuhost.memory as gmem
from gpuhost import CudaAPIError, _core
from gpuhost.tools import DeviceMemoryPool, PageLockedMemoryPool
from conftest import DRIVER

N = 300
rng = np.random.default_rng()
TYPES = [t for t in vars(_core).values() if isinstance(t, type) and t.__module__.startswith(
    "gpuhost")]


def settle():
    gc.collect()
    _core.release_cached_events()


def snapshot(keep):
    settle()
    return (len(gc.get_objects()), tracemalloc.get_traced_memory()[0],
            [sys.getrefcount(o) for o in keep], [sys.getrefcount(t) for t in TYPES])


def assert_no_growth(op, keep=(), n=N, warm=60):
    """Run op warm + 4n times; fail if all three later windows of n runs grew what
    snapshot() counts (a leak grows every window; the allocator's, numpy's and the caches'
    churn settles)."""
    keep = list(keep)
    for _ in range(warm):
        op()
    tracemalloc.start()
    try:
        shots = []
        for _ in range(4):
            for _ in range(n):
                op()
            shots.append(snapshot(keep))
    finally:
        tracemalloc.stop()
    objects = min(b[0] - a[0] for a, b in zip(shots, shots[1:]))
    grown = [b[1] - a[1] for a, b in zip(shots, shots[1:])]
    memory = min(grown)
    first, last = shots[1], shots[-1]
    refs = [(repr(o)[:60], b - a) for o, a, b in zip(keep, first[2], last[2]) if b != a]
    types = [(t.__name__, b - a) for t, a, b in zip(TYPES, first[3], last[3]) if b != a]
    assert objects < n // 8, "%d more gc-tracked objects per %d runs" % (objects, n)
    assert memory < n * 24, "%d more bytes traced per %d runs (windows: %s)" % (
        memory, n, grown)
    assert not refs, "references grew: %s" % refs
    assert not types, "instances of gpuhost types grew: %s" % types


def rand(shape, dtype=np.float32):
    return (rng.standard_normal(shape) * 100).astype(dtype)


def fails(exc_type, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except exc_type:
        return
    raise AssertionError("%s did not raise %s" % (fn, exc_type.__name__))


# ---- the operations ----

def test_allocation_and_free_do_not_leak():
    dt = np.dtype(np.float64)
    assert_no_growth(lambda: gpuhost.device_array((7, 9), dt), keep=[dt])


def test_to_device_and_copy_to_host_do_not_leak():
    h = rand((16, 9))
    out = np.empty_like(h)

    def op():
        d = gpuhost.to_device(h)
        d.copy_to_host(out)
        assert out[3, 4] == h[3, 4]
        d.copy_to_host()
        d.copy_to_device(h)
    assert_no_growth(op, keep=[h, out])


def test_strided_copies_views_and_assignments_do_not_leak():
    h = rand((12, 10), np.float64)
    view = h[::2, ::-3]
    d = gpuhost.to_device(h)

    def op():
        v = gpuhost.to_device(view)
        v.copy_to_host()
        d[1:5, 2] = 3.5
        d[::3] = 1.0
        d[2] = h[2]
        d[::2, 1:].copy_to_host()
        d.reshape(10, 12).T.ravel(order="F")
        d.view(np.int64)[0, 0]
        d[0].split(5)
    assert_no_growth(op, keep=[h, view, d], n=200)


def test_streams_events_and_callbacks_do_not_leak():
    ctx = gpuhost.current_context()
    s = gpuhost.stream()
    arg = object()

    def callback(stream, status, a):
        assert a is arg

    def op():
        t = gpuhost.stream(non_blocking=True)
        e1, e2 = gpuhost.event(), gpuhost.event(timing=True)
        e1.record(t)
        t.wait_event(e1)
        e2.record(t)
        t.add_callback(callback, arg)
        e2.synchronize()
        e1.elapsed_time(e2)
        t.synchronize()
        t.query()
        s.record().synchronize()
        with s.auto_synchronize():
            pass
    assert_no_growth(op, keep=[ctx, s, arg, callback])


def test_contexts_and_devices_do_not_leak():
    dev = gpuhost.gpus[0]

    def op():
        with gpuhost.gpus[len(gpuhost.gpus) - 1]:
            gpuhost.current_context().get_memory_info()
        gpuhost.current_context().synchronize()
        dev.get_attribute("MULTIPROCESSOR_COUNT")
        gpuhost.get_current_device().compute_capability
    assert_no_growth(op, keep=[dev])


def test_weak_references_memory_info_and_get_context_do_not_leak():
    ctx = gpuhost.current_context()
    dev = ctx.device
    died = []

    def op():
        s, a = gpuhost.stream(), _core.mem_alloc(int(rng.integers(1, 4096)), "managed")
        objs = (ctx, dev, s, a)
        refs = [weakref.ref(o, died.append) for o in objs]
        assert [weakref.proxy(o) for o in objs][2].handle == s.handle
        del s, a, objs
        assert refs[2]() is None and refs[3]() is None and len(died) == 2
        died.clear()
        free, total = ctx.get_memory_info()
        assert gpuhost.MemoryInfo(free=free, total=total).total == total
        assert gpuhost.devices.get_context() is ctx
    assert_no_growth(op, keep=[ctx, dev])


def test_host_memory_and_registration_do_not_leak():
    buf = rand(256)

    def op():
        p = gpuhost.pinned_array((4, 8), np.int32)
        m = gpuhost.mapped_array(16)
        gpuhost.as_cuda_array(m).copy_to_host()
        with gpuhost.pinned(buf):
            pass
        with gpuhost.mapped(buf) as dbuf:
            dbuf.shape
        del p
    assert_no_growth(op, keep=[buf], n=200)


def test_dlpack_and_cuda_array_interface_do_not_leak():
    d = gpuhost.to_device(rand((5, 6)))

    class Exporter:
        def __init__(self, cai):
            self.__cuda_array_interface__ = cai

    def op():
        back = gpuhost.from_dlpack(d)
        legacy = _core.dlpack_import(d.__dlpack__(max_version=None))
        cap = d[1:].__dlpack__()
        del cap  # a capsule never consumed
        cai = d.__cuda_array_interface__
        gpuhost.as_cuda_array(Exporter(cai)).shape
        gpuhost.from_cuda_array_interface(cai, owner=d)
        del back, legacy
    assert_no_growth(op, keep=[d])


def test_ipc_handles_do_not_leak():
    d = gpuhost.to_device(rand(64))
    e = gpuhost.event(interprocess=True, timing=False)

    def op():
        handle = pickle.loads(pickle.dumps(d.get_ipc_handle()))
        with handle as opened:
            opened.shape
        e.record()
        eh = pickle.loads(pickle.dumps(e.ipc_handle()))
        eh.open().synchronize()
    assert_no_growth(op, keep=[d, e], n=200)


def test_pools_do_not_leak():
    pool = gmem.MemoryPool()
    dpool = DeviceMemoryPool()
    hpool = PageLockedMemoryPool()

    def op():
        p = pool.malloc(3000)
        p.memset(1, 100)
        q = gmem.alloc(5000)
        a = gmem.malloc_async(4096)
        blocks = [dpool.allocate(n) for n in (100, 1000)]
        h = hpool.allocate((8, 8), np.float32)
        pinned = gmem.alloc_pinned_memory(512)
        del p, q, a, blocks, h, pinned
        pool.n_free_blocks()
    assert_no_growth(op, keep=[pool, dpool, hpool])


def test_bad_input_errors_do_not_leak():
    d = gpuhost.to_device(rand(10))
    wrong = np.zeros(3, np.float32)

    def op():
        fails(TypeError, gpuhost.device_array, "x")
        fails(ValueError, gpuhost.device_array, (-1, 3))
        fails(ValueError, d.copy_to_host, wrong)
        fails(IndexError, d.__getitem__, 99)
        fails(TypeError, gpuhost.stream, priority="high")
        fails(TypeError, d.__dlpack__, stream="x")
        fails(TypeError, gpuhost.to_device, np.zeros(2, object))
        fails(TypeError, gpuhost.from_cuda_array_interface, {"shape": "x", "version": 3})
        fails(gpuhost.CudaOutOfMemoryError, gpuhost.device_array, 1 << 46, np.uint8)
    assert_no_growth(op, keep=[d, wrong])


@pytest.mark.fake
def test_driver_errors_do_not_leak(fake):
    h = rand(32)
    d = gpuhost.to_device(h)
    s = gpuhost.stream()

    def op():
        for name, call in (("cuMemcpyDtoH", d.copy_to_host), ("cuMemAlloc", lambda: None),
                           ("cuStreamSynchronize", s.synchronize),
                           ("cuStreamCreateWithPriority", gpuhost.stream),
                           ("cuEventRecord", lambda: gpuhost.event().record(s)),
                           ("cuMemsetD32", lambda: d.__setitem__(Ellipsis, 2.0))):
            fake.fail(name, 999)
            try:
                call()
            except CudaAPIError as e:
                assert e.call == name
            fake.clear_faults()
        assert gpuhost.to_device(h).copy_to_host()[5] == h[5]
    assert_no_growth(op, keep=[h, d, s])


def test_compilation_and_modules_do_not_leak():
    src = 'extern "C" __global__ void k(float *p) { p[threadIdx.x] = 1.0f; }'
    gpuhost.compile_ptx(src)

    def op():
        ptx = gpuhost.compile_ptx(src)  # the memory cache
        if DRIVER == "fake":
            fails(CudaAPIError, gpuhost.Module, ptx)  # the fake loads no modules
        else:
            gpuhost.Module(ptx).get_function("k")
    assert_no_growth(op, keep=[src], n=200)


@pytest.mark.gpu
def test_kernel_launches_do_not_leak():
    k = gpuhost.RawKernel(r"""
extern "C" __global__ void add(float *p, float v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] += v;
}""", "add")
    d = gpuhost.to_device(np.zeros(256, np.float32))
    s = gpuhost.stream()
    fn = k.kernel if hasattr(k, "kernel") else None

    def op():
        k((1,), (256,), (d, np.float32(1), np.int32(256)), stream=s)
        if fn is not None:
            fn[1, 256, s](d, 1.0, 256)
        s.synchronize()
    assert_no_growth(op, keep=[d, s, k])
    assert (d.copy_to_host() > 0).all()


def test_nccl_collectives_and_their_errors_do_not_leak():
    nccl = pytest.importorskip("gpuhost.nccl")
    if not nccl.is_available():
        pytest.skip("no libnccl")
    comm = nccl.Communicator(1, nccl.get_unique_id(), 0)
    d = gpuhost.to_device(rng.standard_normal(64).astype(np.float32))
    out = gpuhost.device_array(64, np.float32)
    bad = gpuhost.to_device(np.zeros(3, np.int16))
    s = gpuhost.stream()

    def op():  # results into given arrays: the binding's own paths (recv=None is the pool's)
        comm.all_reduce(d, d, stream=s)
        comm.all_gather(d, out, stream=s)
        comm.all_to_all(d, out, stream=s)
        comm.reduce_scatter(d, out, op="max", stream=s)
        fails(TypeError, comm.all_reduce, bad)  # int16: refused before NCCL
        fails(ValueError, comm.broadcast, d, root=3)
        fails(ValueError, comm.all_reduce, d, out[:3])
        s.synchronize()
    assert_no_growth(op, keep=[comm, d, out, bad, s])
    comm.destroy()
