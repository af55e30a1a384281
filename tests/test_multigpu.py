"""Several GPUs in one process and across processes: peer access, copies between devices,
streams and events of one device refused where another's is needed, threads each with
their own current device, IPC opened on another device.

Marked gpus(2): on the fake driver they run on its two devices (FAKECUDA_DEVICES, default
2); on a machine with one GPU they skip.  Tests that need three devices or another peer
matrix run the fake in a subprocess with FAKECUDA_DEVICES / FAKECUDA_PEER_ACCESS.
"""
import os
import pickle
import threading

import numpy as np
import pytest

import gpuhost
from gpuhost import CudaAPIError, CudaDriverError
from conftest import DRIVER, run_python

# Written as moves between devices 0 and 1: pinned to device 0 (gpuhost's pytest plugin
# may give an xdist worker another device).
pytestmark = [pytest.mark.gpus(2), pytest.mark.usefixtures("device0")]
rng = np.random.default_rng()


def rand(shape, dtype=np.float64):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-10**6, 10**6, shape).astype(dtype)


def same(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)


def on(i, fn, *args, **kwargs):
    with gpuhost.gpus[i]:
        return fn(*args, **kwargs)


# ---- peer access ----

def test_can_access_peer_under_numbas_and_our_names():
    d0, d1 = gpuhost.gpus[0], gpuhost.gpus[1]
    ctx0 = d0.get_primary_context()
    assert d0.can_access_peer(d0) is True and ctx0.can_access_peer(0) is True
    for peer in (d1, 1, d1.get_primary_context()):
        assert d0.can_access_peer(peer) is ctx0.can_access_peer(peer)
    assert isinstance(d0.can_access_peer(d1), bool)


def test_peer_arguments_are_checked():
    d0 = gpuhost.gpus[0]
    ctx0 = d0.get_primary_context()
    with pytest.raises(TypeError, match="the peer must be a Device, a Context or a device id "
                                        r"\(int\), not str"):
        d0.can_access_peer("1")
    with pytest.raises(TypeError, match="peer_device must be a Device, a Context or a device id"):
        ctx0.can_access_peer(1.0)
    with pytest.raises(TypeError, match="not bool"):
        ctx0.enable_peer_access(True)
    with pytest.raises(gpuhost.InvalidDeviceError, match="no CUDA device 99: %d devices found"
                                                        % len(gpuhost.gpus)):
        d0.can_access_peer(99)
    with pytest.raises(ValueError, match="peer access is between two devices: device 0's "
                                         "context always reaches its own memory"):
        ctx0.enable_peer_access(d0)
    with pytest.raises(ValueError, match="peer access is between two devices"):
        ctx0.disable_peer_access(0)


def test_enable_and_disable_peer_access_are_idempotent(fake):
    ctx0, ctx1 = (gpuhost.gpus[i].get_primary_context() for i in (0, 1))
    current = gpuhost.current_context()
    ctx0.disable_peer_access(1)  # not enabled: nothing to do
    before = fake.calls("cuCtxEnablePeerAccess")
    ctx0.enable_peer_access(ctx1)
    ctx0.enable_peer_access(gpuhost.gpus[1])  # already enabled: not an error
    ctx1.enable_peer_access(0)  # the other direction is its own
    assert fake.calls("cuCtxEnablePeerAccess") == before + 3
    ctx0.disable_peer_access(1)
    ctx0.disable_peer_access(1)
    ctx1.disable_peer_access(ctx0)
    assert gpuhost.current_context() is current  # the calls pushed and popped what they needed


def test_peer_access_faults_raise_the_drivers_error(fake):
    ctx0 = gpuhost.gpus[0].get_primary_context()
    current = gpuhost.current_context()
    fake.fail("cuCtxEnablePeerAccess", 217)  # CUDA_ERROR_PEER_ACCESS_UNSUPPORTED
    with pytest.raises(CudaAPIError, match="device 0 cannot access device 1's memory directly "
                                           r"\(Device.can_access_peer\(\) is False\); copies "
                                           "between them still work") as info:
        ctx0.enable_peer_access(1)
    assert info.value.name == "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED"
    fake.fail("cuCtxEnablePeerAccess", 711)  # CUDA_ERROR_TOO_MANY_PEERS
    with pytest.raises(CudaAPIError, match="cuCtxEnablePeerAccess") as info:
        ctx0.enable_peer_access(1)
    assert info.value.name == "CUDA_ERROR_TOO_MANY_PEERS"
    fake.fail("cuDeviceCanAccessPeer", 101)
    with pytest.raises(CudaAPIError, match="cuDeviceCanAccessPeer"):
        gpuhost.gpus[0].can_access_peer(1)
    assert gpuhost.current_context() is current


PEER_MATRIX = r"""
import numpy as np, gpuhost
from gpuhost import CudaAPIError, CudaDriverError
d = gpuhost.gpus
assert len(d) == 3
table = [[d[a].can_access_peer(b) for b in range(3)] for a in range(3)]
assert table == [[True, True, False], [False, True, False], [False, False, True]], table
assert d[1].get_primary_context().can_access_peer(0) is False
d[0].get_primary_context().enable_peer_access(1)
try:
    d[1].get_primary_context().enable_peer_access(0)
except CudaAPIError as e:
    assert e.name == "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED" and "device 1 cannot access" in str(e)
else:
    raise AssertionError("enabled an unsupported peer")
# copies work between every pair, peer access or not, both ways, sync and on either stream
host = np.random.default_rng().integers(0, 2**62, 1000)
arrays = [None] * 3
streams = [None] * 3
for i in range(3):
    with d[i]:
        arrays[i] = gpuhost.device_array_like(host)
        streams[i] = gpuhost.stream()
arrays[2].copy_to_device(host)
for dst, src, s in ((0, 2, None), (1, 0, 1), (2, 1, 1), (0, 1, 0), (1, 2, 2)):
    arrays[dst][:] = 0
    arrays[dst].copy_to_device(arrays[src], stream=streams[s] if s is not None else 0)
    if s is not None:
        streams[s].synchronize()
    assert (arrays[dst].copy_to_host() == host).all(), (dst, src, s)
try:
    arrays[0].copy_to_device(arrays[1], stream=streams[2])
except CudaDriverError as e:
    assert "the copy is from device 1 to device 0 but the stream is device 2's: use a stream of " \
           "either device" in str(e), e
else:
    raise AssertionError("a third device's stream was used")
# an IPC handle opens on a device that can reach the memory, and nowhere else
h = arrays[1].get_ipc_handle()
try:
    h.open(device=2)
except CudaDriverError as e:
    assert "cannot open device 1's memory on device 2: device 2 cannot access device 1's " \
           "memory directly (can_access_peer is False); open it on device 1 and copy" in str(e)
else:
    raise AssertionError("opened without a peer path")
print("ok")
"""


@pytest.mark.skipif(DRIVER != "fake", reason="configures the fake driver")
def test_three_devices_with_a_partial_peer_matrix():
    proc = run_python(PEER_MATRIX, env={"FAKECUDA_DEVICES": "3", "FAKECUDA_PEER_ACCESS": "0>1"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["ok"]


# ---- copies between devices ----

@pytest.mark.parametrize("dtype", [np.float64, np.int16, np.complex64])
@pytest.mark.parametrize("enable", [False, True], ids=["staged", "peer-access"])
def test_peer_copies_are_exact_both_ways_sync_and_on_either_devices_stream(dtype, enable):
    ctx0, ctx1 = (gpuhost.gpus[i].get_primary_context() for i in (0, 1))
    if enable and not gpuhost.gpus[0].can_access_peer(1):
        pytest.skip("these devices have no peer path")
    if enable:
        ctx0.enable_peer_access(ctx1)
        ctx1.enable_peer_access(ctx0)
    try:
        host = rand((37, 11), dtype)
        d0 = gpuhost.to_device(host)
        d1, s1 = on(1, gpuhost.device_array_like, host), on(1, gpuhost.stream)
        s0 = gpuhost.stream()
        d1.copy_to_device(d0)  # synchronous, 0 -> 1
        assert same(d1.copy_to_host(), host)
        host2 = rand(host.shape, dtype)
        d1.copy_to_device(host2)
        d0.copy_to_device(d1, stream=s0)  # 1 -> 0 on the destination's stream
        s0.synchronize()
        assert same(d0.copy_to_host(), host2)
        host3 = rand(host.shape, dtype)
        d0.copy_to_device(host3)
        d1.copy_to_device(d0, stream=s0)  # 0 -> 1 on the source's stream
        s0.synchronize()
        assert same(d1.copy_to_host(), host3)
        d1[5:9] = 0
        d0.copy_to_device(d1, stream=s1)  # 1 -> 0 on the source's stream
        s1.synchronize()
        expect = host3.copy()
        expect[5:9] = 0
        assert same(d0.copy_to_host(), expect)
    finally:
        if enable:
            ctx0.disable_peer_access(ctx1)
            ctx1.disable_peer_access(ctx0)


def test_peer_copy_of_another_layout_on_the_sources_stream():
    host = rand((12, 10), np.float32)
    d1, s1 = on(1, gpuhost.to_device, host), on(1, gpuhost.stream)
    d0 = gpuhost.device_array((6, 10), np.float32)
    d0.copy_to_device(d1[::2], stream=s1)  # another layout: through the host, exact
    assert same(d0.copy_to_host(), host[::2])
    dst = gpuhost.to_device(np.zeros((12, 10), np.float32))
    dst[::2] = d1[1::2]
    expect = np.zeros_like(host)
    expect[::2] = host[1::2]
    assert same(dst.copy_to_host(), expect)


def test_peer_copy_uses_the_peer_entry_points(fake):
    host = rand(64, np.int32)
    d1, s1 = on(1, gpuhost.to_device, host), on(1, gpuhost.stream)
    d0 = gpuhost.device_array_like(host)
    calls = lambda: (fake.calls("cuMemcpyPeer"), fake.calls("cuMemcpyPeerAsync"))
    before = calls()
    d0.copy_to_device(d1)
    d0.copy_to_device(d1, stream=s1)
    s1.synchronize()
    assert calls() == (before[0] + 1, before[1] + 1)
    assert same(d0.copy_to_host(), host)


def test_another_devices_stream_is_refused_before_the_driver_is_called(fake):
    host = rand(16)
    d0 = gpuhost.to_device(host)
    s1 = on(1, gpuhost.stream)
    counts = lambda: [fake.calls(n) for n in ("cuMemcpyDtoHAsync", "cuMemcpyHtoDAsync",
                                             "cuMemsetD32Async", "cuMemcpy2DAsync")]
    before = counts()
    message = "the array is on device 0 but the stream is device 1's"
    with pytest.raises(CudaDriverError, match=message):
        d0.copy_to_host(stream=s1)
    with pytest.raises(CudaDriverError, match=message):
        d0.copy_to_device(host, stream=s1)
    with pytest.raises(CudaDriverError, match=message):
        d0[::2].copy_to_host(stream=s1)
    with pytest.raises(CudaDriverError, match="the pool allocates on device 0 but the stream "
                                              "is device 1's"):
        gpuhost.to_device(host, stream=s1)
    with pytest.raises(CudaDriverError, match=r"bind\(\): " + message):
        d0.bind(s1)
    assert counts() == before
    with pytest.raises(CudaDriverError, match="the event is on device 0 but the stream is "
                                              "device 1's"):
        gpuhost.event().record(s1)
    assert same(d0.copy_to_host(), host)


def test_objects_remember_their_device():
    with gpuhost.gpus[1]:
        a, s, e = gpuhost.device_array(4), gpuhost.stream(), gpuhost.event()
        ctx1 = gpuhost.current_context()
    assert a.device is s.device is e.device is gpuhost.gpus[1]
    assert a.context is s.context is ctx1
    assert "on device 1" in repr(a) and "on device 1" in repr(s) and "on device 1" in repr(e)
    assert a.__dlpack_device__() == (2, 1)
    a.copy_to_device(np.arange(4.0))  # used from device 0's thread: device 1's context for it
    assert same(a.copy_to_host(), np.arange(4.0))
    e.record(s)
    s.synchronize()
    assert e.query()


def test_cross_device_pipeline_ordered_by_events():
    host = rand(1000)
    s0 = gpuhost.stream()
    d0 = gpuhost.to_device(host, stream=s0)
    done0 = s0.record()
    with gpuhost.gpus[1]:
        s1 = gpuhost.stream()
        d1 = gpuhost.device_array_like(host)
    done0.wait(s1)  # device 1's stream waits for device 0's upload
    d1.copy_to_device(d0, stream=s1)
    out = d1.copy_to_host(stream=s1)
    s1.synchronize()
    assert same(out, host)


# ---- kernels given another device's memory ----

ADD_INTO = r"""
extern "C" __global__ void add_into(const long long *x, long long *y, long long k, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] += k * x[i];
    }
}
"""


@pytest.mark.gpu
def test_a_kernel_given_another_devices_arrays_reaches_them_through_peer_access():
    """Without peer access a kernel that touches another device's memory faults, and the
    fault ends the process's use of the GPU; the launch turns peer access on instead (and
    where there is no peer path it refuses with ValueError before launching)."""
    if not gpuhost.gpus[0].can_access_peer(1):
        pytest.skip("devices 0 and 1 have no peer path")
    n = 3000
    x, y, z = (rng.integers(-10**9, 10**9, n) for _ in range(3))
    ctx0 = gpuhost.gpus[0].get_primary_context()
    ctx0.disable_peer_access(1)  # whatever earlier tests did: the launch must turn it on
    with gpuhost.gpus[0]:
        add_into = gpuhost.Module(gpuhost.compile(ADD_INTO)).get_function("add_into")
        s0 = gpuhost.stream()
        y0 = gpuhost.to_device(y)
    with gpuhost.gpus[1]:
        x1, z1 = gpuhost.to_device(x), gpuhost.to_device(z)
        m1 = gpuhost.managed_array(n, np.int64)
        m1[:] = y
    grid = ((n + 255) // 256, 1)
    add_into[grid, 256, s0](x1, y0, 3, n)    # reads device 1's memory
    add_into[grid, 256, s0](y0, z1, -2, n)   # writes device 1's memory
    add_into[grid, 256, s0](x1, m1, 5, n)    # managed memory of device 1: reachable anyway
    s0.synchronize()
    assert same(y0.copy_to_host(), y + 3 * x)
    assert same(z1.copy_to_host(), z - 2 * (y + 3 * x))
    assert same(np.asarray(m1), y + 5 * x)
    with gpuhost.gpus[1]:  # another context current: the kernel still runs in its own
        add_into[grid, 256, s0](x1, y0, 1, n)
        add_into[grid, 256](x1, y0, 1, n)    # its device's default stream, not device 1's
        gpuhost.gpus[0].get_primary_context().synchronize()
    s0.synchronize()
    assert same(y0.copy_to_host(), y + 5 * x)
    cupy = pytest.importorskip("cupy")
    with cupy.cuda.Device(1):
        c1 = cupy.asarray(z)                  # a foreign array (CUDA array interface)
        cupy.cuda.Device(1).synchronize()
    add_into[grid, 256, s0](x1, c1, 7, n)
    s0.synchronize()
    assert same(cupy.asnumpy(c1), z + 7 * x)


# ---- threads: each with its own current device ----

def run_threads(targets):
    errors, threads = [], []

    def wrap(fn, *args):
        try:
            fn(*args)
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    for fn, args in targets:
        threads.append(threading.Thread(target=wrap, args=(fn,) + args))
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]


@pytest.mark.parametrize("how", ["select_device", "with"])
def test_threads_each_keep_their_own_current_device(how):
    n = len(gpuhost.gpus)
    rounds = 25
    barrier = threading.Barrier(2 * n)
    seen = {}

    def worker(dev_id, k):
        def body():
            ctx = gpuhost.current_context()
            assert ctx.device.id == dev_id and gpuhost.get_current_device().id == dev_id
            other = gpuhost.gpus[(dev_id + 1) % n]
            with other:  # a peer array made in a nested block
                peer = gpuhost.device_array(64, np.int64)
            s = gpuhost.stream()
            mine = np.random.default_rng()
            for r in range(rounds):
                host = mine.integers(0, 2**62, 64)
                d = gpuhost.to_device(host, stream=s)
                assert d.device.id == dev_id and s.device.id == dev_id
                peer.copy_to_device(d, stream=s)  # across devices, on this thread's stream
                d2 = gpuhost.device_array(64, np.int64, stream=s)
                d2.copy_to_device(peer, stream=s)  # and back
                back = d2.copy_to_host(stream=s)
                s.synchronize()
                assert same(back, host), (dev_id, r)
                assert gpuhost.current_context() is ctx, "another thread's context leaked in"
                if r == rounds // 2:
                    barrier.wait(60)  # every thread mid-way at once
            seen[(dev_id, k)] = ctx

        if how == "select_device":
            gpuhost.select_device(dev_id)
            body()
            assert gpuhost.get_current_device().id == dev_id
        else:
            assert gpuhost.gpus.current is None  # a fresh thread has none yet
            with gpuhost.gpus[dev_id]:
                body()
            assert gpuhost.gpus.current is None

    before = gpuhost.current_context()
    run_threads([(worker, (i % n, i)) for i in range(2 * n)])
    assert gpuhost.current_context() is before  # the main thread's is untouched
    for (dev_id, _), ctx in seen.items():
        assert ctx is gpuhost.gpus[dev_id].get_primary_context()


def test_threads_copy_between_devices_concurrently():
    n = 8
    hosts = [rng.integers(0, 2**62, 50_000) for _ in range(n)]
    results = [None] * n

    def worker(i):
        src_dev, dst_dev = i % 2, (i + 1) % 2
        with gpuhost.gpus[src_dev]:
            src = gpuhost.to_device(hosts[i])
        with gpuhost.gpus[dst_dev]:
            dst = gpuhost.device_array_like(hosts[i])
            s = gpuhost.stream()
            dst.copy_to_device(src, stream=s)
            results[i] = dst.copy_to_host(stream=s)
            s.synchronize()

    run_threads([(worker, (i,)) for i in range(n)])
    for i in range(n):
        assert same(results[i], hosts[i])


# ---- IPC on another device ----

def test_an_imported_event_waited_on_by_another_devices_stream_is_waited_for_on_the_host(fake):
    """The driver crashed in cuStreamWaitEvent for an IPC-imported event and another
    device's stream: gpuhost synchronizes the event on the host instead; a same-device
    stream still gets a device-side wait."""
    ev = gpuhost.event(interprocess=True, timing=False)
    ev.record()
    imported = pickle.loads(pickle.dumps(ev.ipc_handle())).open()  # the fake opens it
    assert imported is not ev and imported.device is gpuhost.gpus[0]
    s1 = on(1, gpuhost.stream)
    s0 = gpuhost.stream()
    waits, syncs = fake.calls("cuStreamWaitEvent"), fake.calls("cuEventSynchronize")
    imported.wait(s1)
    assert fake.calls("cuStreamWaitEvent") == waits
    assert fake.calls("cuEventSynchronize") == syncs + 1 and imported.query()
    imported.wait(s0)
    assert fake.calls("cuStreamWaitEvent") == waits + 1
    ev.wait(s1)  # gpuhost's own event: a device-side wait across devices
    assert fake.calls("cuStreamWaitEvent") == waits + 2
    s1.synchronize()


def test_ipc_handle_opens_on_another_device_in_process(fake):
    host = rand((6, 5), np.int32)
    base = gpuhost.to_device(host)
    handle = pickle.loads(pickle.dumps(base[2:].get_ipc_handle()))
    before = fake.live("ipc_mappings")
    with pytest.raises(TypeError, match="device must be a Device or a device id"):
        handle.open(device="1")
    arr = handle.open(device=1)  # the fake opens in-process handles
    try:
        assert arr.device is gpuhost.gpus[1] and fake.live("ipc_mappings") == before + 1
        assert same(arr.copy_to_host(), host[2:])
        arr[0] = 7  # written through device 1's mapping
        s1 = on(1, gpuhost.stream)
        arr.copy_to_device(host[2:] * 3, stream=s1)
        s1.synchronize()
    finally:
        handle.close()
    assert fake.live("ipc_mappings") == before
    expect = host.copy()
    expect[2:] = host[2:] * 3
    assert same(base.copy_to_host(), expect)
    with handle as again:  # on its own device by default
        assert again.device is gpuhost.gpus[0]


IPC_TWO_DEVICES = r"""
import multiprocessing as mp, pickle
import numpy as np
def child(array_blob, event_blob, q):
    import gpuhost
    handle = pickle.loads(array_blob)
    ev = pickle.loads(event_blob).open()       # on the device it was made on: 0
    with gpuhost.gpus[1]:
        s1 = gpuhost.stream()
        ev.wait(s1)                            # device 1 waits for the parent's device-0 event
        s1.synchronize()
    arr = handle.open(device=1)                # device 0's memory, used from device 1
    assert arr.device.id == 1
    got = arr.copy_to_host()
    with gpuhost.gpus[1]:
        scratch = gpuhost.to_device(got * 2 + 1)
        arr.copy_to_device(scratch)            # a device-1 copy into the parent's memory
        gpuhost.synchronize()
    handle.close()
    q.put((got.tolist(), ev.device.id, ev.query()))
if __name__ == "__main__":
    import gpuhost
    host = np.random.default_rng().integers(0, 1000, size=(4, 5)).astype(np.int64)
    s = gpuhost.stream()
    dev = gpuhost.to_device(host, stream=s)
    ev = gpuhost.event(interprocess=True, timing=False)
    ev.record(s)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=child, args=(pickle.dumps(dev[1:].get_ipc_handle()),
                                        pickle.dumps(ev.ipc_handle()), q))
    p.start()
    seen, ev_device, done = q.get(timeout=120)
    p.join(60)
    assert seen == host[1:].tolist(), (seen, host)
    assert ev_device == 0 and done is True
    expected = host.copy()
    expected[1:] = host[1:] * 2 + 1
    assert (dev.copy_to_host() == expected).all()
    print("ok", p.exitcode)
"""


@pytest.mark.gpu
def test_ipc_array_and_event_used_on_the_other_device_by_another_process(tmp_path):
    if not gpuhost.gpus[1].can_access_peer(0):
        pytest.skip("device 1 cannot access device 0's memory")
    script = tmp_path / "ipc_two_devices.py"
    script.write_text(IPC_TWO_DEVICES)
    proc = run_python("import runpy; runpy.run_path(%r, run_name='__main__')" % str(script),
                      timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["ok", "0"]
