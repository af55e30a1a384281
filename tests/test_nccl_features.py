"""gpuhost.nccl beyond the collectives: creation bounded in time (non-blocking, then made
blocking) or not waited for at all, abort while creating, user-buffer registration and
NCCL's allocator, collectives captured into graphs and replayed, and all_reduce's fast path.

On the fake driver NCCL is tests/fakecuda/fakenccl; on a GPU the real libnccl (the same
tests: what needs the fake's counters takes the `fnccl` fixture, which skips on a GPU).
Ranks of one communicator here live in this process: init_all over every device, or one
thread per rank.
"""
import ctypes
import gc
import re
import sys
import threading
import time
import weakref

import numpy as np
import pytest

import gpuhost
from conftest import run_python

nccl = pytest.importorskip("gpuhost.nccl")

if not (gpuhost.is_available() and nccl.is_available()):
    pytest.skip("no CUDA driver or no libnccl", allow_module_level=True)

@pytest.fixture(autouse=True)
def _nvls_off(monkeypatch):
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "0")


class FakeNccl:
    """tests/fakecuda/fakenccl's control API."""

    def __init__(self):
        self.lib = ctypes.CDLL(nccl.library_path())

    def fail(self, name, code):
        self.lib.fakenccl_fail(name.encode(), code)

    def async_error(self, code):
        self.lib.fakenccl_set_async_error(code)

    def live(self):
        return self.lib.fakenccl_live()

    def registrations(self):
        return self.lib.fakenccl_registrations()

    def mem_allocs(self):
        return self.lib.fakenccl_mem_allocs()


@pytest.fixture
def fnccl(fake):
    f = FakeNccl()
    yield f
    f.fail("", 0)


def ints(n, gen=None):
    """Whole numbers as float32: sums over any number of ranks stay exact."""
    gen = gen or np.random.default_rng()
    return gen.integers(-1000, 1000, n).astype(np.float32)


def on(device, host):
    with gpuhost.gpus[device]:
        return gpuhost.to_device(host)


def in_threads(fn, n):
    """fn(rank, barrier) in n threads at once; [(result or None, exception or None)] by rank.
    fn waits on the barrier after posting a collective: the fake NCCL runs a collective of
    ranks in one process when its last rank posts it (or, replayed from a graph, when the
    last rank's part runs), and a rank that synchronizes earlier would find it not yet run;
    on a GPU, the first rank's stream would wait for the others."""
    out = [(None, None)] * n
    barrier = threading.Barrier(n, timeout=60)

    def run(r):
        try:
            out[r] = (fn(r, barrier), None)
        except BaseException as e:  # noqa: B902 - reported to the test
            out[r] = (None, e)

    threads = [threading.Thread(target=run, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a rank's thread hangs"
    return out


# ---- creation bounded in time ----

def test_a_timeout_makes_a_blocking_communicator_that_works(device0):
    with nccl.Communicator(1, nccl.get_unique_id(), 0, timeout=30) as c:
        assert (c.rank, c.size, c.closed, c.check_async_error()) == (0, 1, False, False)
        x = ints(100)
        d = on(0, x)
        assert c.all_reduce(d, d) is d
        np.testing.assert_array_equal(d.copy_to_host(), x)
        assert repr(c) == "<gpuhost.nccl.Communicator rank 0 of 1 on device 0>"


@pytest.mark.gpus(2)
def test_ranks_in_threads_made_with_a_timeout_reduce_together():
    n = len(gpuhost.gpus)
    uid = nccl.get_unique_id()
    xs = [ints(257) for _ in range(n)]

    def rank(r, barrier):
        with gpuhost.gpus[r]:
            c = nccl.Communicator(n, uid, r, device=r, timeout=60)
            d = gpuhost.to_device(xs[r])
            out = c.all_reduce(d)
            barrier.wait()
            c.wait(timeout=60)
            got = out.copy_to_host()
            c.destroy()
            return got

    results = in_threads(rank, n)
    for got, err in results:
        assert err is None, err
        np.testing.assert_array_equal(got, sum(xs))


def test_a_missing_rank_times_out_naming_the_call_and_leaks_nothing(fnccl):
    before = fnccl.live()
    t0 = time.monotonic()
    with pytest.raises(TimeoutError, match=re.escape(
            "rank 0 of 2: ncclCommInitRankConfig did not complete within 0.5 s (a rank that "
            "never came or died keeps the others waiting); the Communicator was aborted")):
        nccl.Communicator(2, nccl.get_unique_id(), 0, timeout=0.5)
    assert 0.5 <= time.monotonic() - t0 < 10
    assert fnccl.live() == before


@pytest.mark.gpu
def test_a_missing_rank_times_out_on_the_real_nccl():
    t0 = time.monotonic()
    with pytest.raises(TimeoutError, match="ncclCommInitRankConfig did not complete within 3 s"):
        nccl.Communicator(2, nccl.get_unique_id(), 0, timeout=3)
    assert time.monotonic() - t0 < 30


def test_blocking_false_returns_at_once_and_abort_ends_the_creation(fnccl, device0):
    before = fnccl.live()
    t0 = time.monotonic()
    c = nccl.Communicator(2, nccl.get_unique_id(), 0, blocking=False)
    assert time.monotonic() - t0 < 5
    assert c.check_async_error() is True  # in progress
    assert repr(c) == "<gpuhost.nccl.Communicator rank 0 of 2 on device 0, being created>"
    with pytest.raises(ValueError, match=re.escape("all_reduce(): the Communicator is still being "
                                                   "created (blocking=False): call wait_ready()")):
        c.all_reduce(on(0, ints(4)))
    c.abort()
    assert c.closed and repr(c).endswith("aborted>")
    assert fnccl.live() == before
    c.abort()  # again: nothing


@pytest.mark.gpu
def test_abort_ends_a_creation_under_way_on_the_real_nccl():
    c = nccl.Communicator(2, nccl.get_unique_id(), 0, blocking=False)
    assert c.check_async_error() is True
    t0 = time.monotonic()
    c.abort()
    assert c.closed and time.monotonic() - t0 < 30


def test_wait_ready_times_out_and_aborts(fnccl):
    before = fnccl.live()
    c = nccl.Communicator(2, nccl.get_unique_id(), 0, blocking=False)
    with pytest.raises(TimeoutError, match="ncclCommInitRankConfig did not complete within 0.2 s"):
        c.wait_ready(timeout=0.2)
    assert c.closed and fnccl.live() == before
    with pytest.raises(ValueError, match=re.escape("wait_ready(): the Communicator was aborted")):
        c.wait_ready()


@pytest.mark.gpus(2)
def test_non_blocking_ranks_in_threads_wait_ready_then_reduce_and_split():
    n = len(gpuhost.gpus)
    uid = nccl.get_unique_id()
    xs = [ints(64) for _ in range(n)]

    def rank(r, barrier):
        with gpuhost.gpus[r]:
            c = nccl.Communicator(n, uid, r, device=r, blocking=False)
            c.wait_ready(timeout=60)
            assert c.check_async_error() is False
            out = c.all_reduce(gpuhost.to_device(xs[r]), op="max")
            barrier.wait()
            c.wait(timeout=60)
            sub = c.split(0, -r)  # every rank, in the reverse order (non-blocking too)
            sub_out = sub.all_reduce(gpuhost.to_device(xs[r]))
            barrier.wait()
            sub.wait(timeout=60)
            got = (out.copy_to_host(), (sub.rank, sub.size), sub_out.copy_to_host())
            sub.destroy()
            c.destroy()
            return got

    for r, (got, err) in enumerate(in_threads(rank, n)):
        assert err is None, err
        np.testing.assert_array_equal(got[0], np.maximum.reduce(xs))
        assert got[1] == (n - 1 - r, n)
        np.testing.assert_array_equal(got[2], sum(xs))


def test_bad_timeouts_are_refused():
    with pytest.raises(ValueError, match=re.escape("timeout must be at least 0 seconds, not -1")):
        nccl.Communicator(1, nccl.get_unique_id(), 0, timeout=-1)
    with pytest.raises(TypeError, match="must be real number, not str"):
        nccl.Communicator(1, nccl.get_unique_id(), 0, timeout="1")
    c = nccl.Communicator(1, nccl.get_unique_id(), 0)
    with pytest.raises(ValueError, match=re.escape("wait_ready(): timeout must be at least 0, "
                                                   "not -0.5")):
        c.wait_ready(timeout=-0.5)
    c.wait_ready()  # ready: returns at once
    c.destroy()


def test_a_failed_non_blocking_creation_is_an_ncclerror_and_leaks_nothing(fnccl):
    before = fnccl.live()
    fnccl.fail("CommInitRankConfig", 2)
    with pytest.raises(nccl.NcclError, match="ncclCommInitRankConfig failed: "
                                             "NCCL_ERROR_SYSTEM_ERROR"):
        nccl.Communicator(1, nccl.get_unique_id(), 0, timeout=5)
    fnccl.fail("CommSplit", 3)  # the split into a blocking one
    with pytest.raises(nccl.NcclError, match="ncclCommSplit failed: NCCL_ERROR_INTERNAL_ERROR"):
        nccl.Communicator(1, nccl.get_unique_id(), 0, timeout=5)
    assert fnccl.live() == before


def test_an_error_found_while_creating_is_raised_with_nccls_text():
    """Two ranks on one GPU: NCCL refuses them both, during the non-blocking creation."""
    uid = nccl.get_unique_id()
    results = in_threads(lambda r, _: nccl.Communicator(2, uid, r, device=0, timeout=30), 2)
    for _, e in results:
        assert isinstance(e, nccl.NcclError), e
        # NCCL's text is its process-wide last error: the other rank's thread, or NCCL's
        # job thread ("job ... failed"), may have written it last (seen on the H200)
        assert e.name == "NCCL_ERROR_INVALID_USAGE" and str(e).startswith(
            "ncclCommInitRankConfig failed: NCCL_ERROR_INVALID_USAGE: ") and "(NCCL: " in str(e)


def test_a_with_block_that_raises_aborts_the_communicator():
    with pytest.raises(KeyError):
        with nccl.Communicator(1, nccl.get_unique_id(), 0) as c:
            raise KeyError("x")
    assert c.closed and repr(c).endswith("aborted>")


def test_wait_aborts_on_an_error_found_after_the_stream_finished(fnccl):
    c = nccl.Communicator(1, nccl.get_unique_id(), 0)
    s = gpuhost.stream()
    fnccl.async_error(6)
    with pytest.raises(nccl.NcclError, match="NCCL_ERROR_REMOTE_ERROR"):
        c.wait(s, timeout=5)
    assert c.closed and repr(c).endswith("aborted>")


# ---- user buffers and NCCL's allocator ----

def test_register_in_a_with_block_and_the_communicator_end_deregisters(fnccl):
    base = fnccl.registrations()
    c = nccl.Communicator(1, nccl.get_unique_id(), 0)
    x = ints(1024)
    d = nccl.device_array(1024, np.float32)
    d.copy_to_device(x)
    with c.register(d) as reg:
        assert fnccl.registrations() == base + 1
        assert (reg.array is d, reg.nbytes, reg.closed) == (True, 4096, False)
        assert repr(reg).startswith("<gpuhost.nccl.Registration of 4096 bytes at 0x")
        assert c.all_reduce(d, d) is d
        np.testing.assert_array_equal(d.copy_to_host(), x)
    assert reg.closed and fnccl.registrations() == base
    left = c.register(d)
    assert fnccl.registrations() == base + 1
    c.destroy()  # deregisters what is left
    assert left.closed and fnccl.registrations() == base
    left.close()  # nothing left to do


def test_register_refuses_what_nccl_cannot_register():
    c = nccl.Communicator(1, nccl.get_unique_id(), 0)
    d = nccl.device_array((4, 6), np.float32)
    with pytest.raises(TypeError, match=re.escape("register(): array must be a gpuhost "
                                                  "DeviceArray (see gpuhost.nccl.device_array), "
                                                  "not numpy.ndarray")):
        c.register(np.zeros(4))
    with pytest.raises(ValueError, match=re.escape("register(): the array is not contiguous")):
        c.register(d[:, ::2])
    with pytest.raises(ValueError, match=re.escape("register(): the array is empty")):
        c.register(d[:0])
    c.destroy()
    with pytest.raises(ValueError, match=re.escape("register(): the Communicator was destroyed")):
        c.register(d)


@pytest.mark.gpus(2)
def test_register_refuses_memory_of_another_device():
    c = nccl.Communicator(1, nccl.get_unique_id(), 0, device=0)
    other = nccl.device_array(8, device=1)
    with pytest.raises(ValueError, match=re.escape("register(): the array is memory of device 1; "
                                                   "this Communicator's rank 0 is on device 0")):
        c.register(other)
    c.destroy()


def test_device_array_is_ncclmemalloc_memory_freed_with_its_last_view(fnccl):
    base = fnccl.mem_allocs()
    x = np.arange(12, dtype=np.int64).reshape(3, 4) * 7
    d = nccl.device_array((3, 4), np.int64, order="F")
    assert (d.shape, d.dtype, d.strides) == ((3, 4), np.int64, (8, 24))
    d.copy_to_device(np.asfortranarray(x))
    np.testing.assert_array_equal(d.copy_to_host(), x)
    assert fnccl.mem_allocs() == base + 1
    view = d[1:]
    del d
    gc.collect()
    assert fnccl.mem_allocs() == base + 1  # the view keeps it
    del view
    gc.collect()
    assert fnccl.mem_allocs() == base
    with gpuhost.gpus[len(gpuhost.gpus) - 1]:
        assert nccl.device_array(3).device is gpuhost.gpus[len(gpuhost.gpus) - 1]
    assert nccl.device_array(3, device=0).device is gpuhost.gpus[0]


def test_device_array_refuses_bad_shapes_and_orders():
    with pytest.raises(ValueError, match=re.escape("device_array(): shape (0, 3) holds no bytes")):
        nccl.device_array((0, 3))
    with pytest.raises(ValueError, match=re.escape("device_array(): negative dimension in shape "
                                                   "(-1,)")):
        nccl.device_array(-1)
    with pytest.raises(ValueError, match=re.escape("order must be 'C' or 'F', not 'K'")):
        nccl.device_array(3, order="K")
    with pytest.raises(ValueError, match=re.escape("nccl_mem_alloc(): nbytes must be at least 1, "
                                                   "not 0")):
        gpuhost._core.nccl_mem_alloc(0)


def test_registration_and_allocation_failures_are_raised_or_warned(fnccl):
    c = nccl.Communicator(1, nccl.get_unique_id(), 0)
    d = nccl.device_array(16)
    base = fnccl.registrations()
    fnccl.fail("CommRegister", 4)
    with pytest.raises(nccl.NcclError, match="ncclCommRegister failed: "
                                             "NCCL_ERROR_INVALID_ARGUMENT"):
        c.register(d)
    assert fnccl.registrations() == base
    reg = c.register(d)
    fnccl.fail("CommDeregister", 3)
    with pytest.raises(nccl.NcclError, match="ncclCommDeregister failed"):
        reg.close()
    assert reg.closed  # NCCL forgets it with the communicator
    fnccl.fail("MemAlloc", 1)
    with pytest.raises(nccl.NcclError, match="ncclMemAlloc failed: "
                                             "NCCL_ERROR_UNHANDLED_CUDA_ERROR"):
        nccl.device_array(8)
    e = nccl.device_array(8)
    fnccl.fail("MemFree", 3)
    with pytest.warns(RuntimeWarning, match=re.escape("ncclMemFree failed (3)")):
        del e
        gc.collect()
    dropped = c.register(d)
    fnccl.fail("CommDeregister", 3)
    with pytest.warns(RuntimeWarning, match=re.escape("ncclCommDeregister failed (3) for a "
                                                      "dropped Registration")):
        del dropped
        gc.collect()
    c.destroy()


def test_an_nccl_without_registration_says_which_version_added_it(fake):
    from fakecuda import build

    old = build.nccl_218_path()
    proc = run_python(
        "import numpy as np, gpuhost\n"
        "from gpuhost import nccl\n"
        "print(nccl.get_version(), nccl.registration_available())\n"
        "c = nccl.Communicator(1, nccl.get_unique_id(), 0, timeout=30)\n"
        "d = gpuhost.to_device(np.arange(5.0))\n"
        "print(c.all_reduce(d).copy_to_host().tolist())\n"
        "for call in (lambda: nccl.device_array(4), lambda: c.register(d)):\n"
        "    try:\n"
        "        call()\n"
        "    except nccl.NcclSupportError as e:\n"
        "        print('ERR', e)\n", env={"GPUHOST_NCCL": old})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[:2] == ["21806 False", "[0.0, 1.0, 2.0, 3.0, 4.0]"]
    assert lines[2].startswith("ERR the loaded libnccl (2.18.6, %s) has no ncclMemAlloc: NCCL "
                               "2.19 added it" % old)
    assert lines[3].startswith("ERR the loaded libnccl (2.18.6, %s) has no ncclCommRegister: NCCL "
                               "2.19 added it" % old)


def test_has_optional_names_only_optional_entry_points():
    assert gpuhost._core.nccl_has_optional("ncclMemFree") in (True, False)
    with pytest.raises(ValueError, match="ncclAllReduce is not one of gpuhost's optional NCCL"):
        gpuhost._core.nccl_has_optional("ncclAllReduce")


# ---- graphs ----

@pytest.fixture
def comms():
    cs = nccl.Communicator.init_all(len(gpuhost.gpus))
    yield cs
    for c in cs:
        c.destroy()


def _end_captures(comms, streams):
    """End a capture a failure left open (it would make every later CUDA call fail)."""
    for c, s in zip(comms, streams):
        if s.is_capturing():
            with gpuhost.gpus[c.device.id]:
                try:
                    s.end_capture()
                except gpuhost.CudaAPIError:
                    pass


def test_collectives_captured_into_graphs_replay_with_fresh_data(comms):
    n = len(comms)
    streams, sends, recvs, gathered = [], [], [], []
    for c in comms:
        with gpuhost.gpus[c.device.id]:
            streams.append(gpuhost.stream())
            sends.append(gpuhost.device_array(300, np.float32))
            recvs.append(gpuhost.device_array(300, np.float32))
            gathered.append(gpuhost.device_array((n, 300), np.float32))
    for s, d in zip(streams, sends):
        d.copy_to_device(np.zeros(300, np.float32), stream=s)
        s.synchronize()
    gc.collect()  # no earlier test's memory freed during the captures (illegal then)
    gc.disable()
    try:
        for s in streams:
            # thread-local: NCCL's own threads keep working while this one captures
            s.begin_capture(mode="thread_local")
        with nccl.group():
            for c, s, d, r in zip(comms, streams, sends, recvs):
                c.all_reduce(d, r, stream=s)
        with nccl.group():
            for c, s, d, g in zip(comms, streams, sends, gathered):
                c.all_gather(d, g, stream=s)
        graphs = []
        for c, s in zip(comms, streams):
            with gpuhost.gpus[c.device.id]:
                graphs.append(s.end_capture())
    finally:
        gc.enable()
        _end_captures(comms, streams)
    execs = []
    for c, g in zip(comms, graphs):
        with gpuhost.gpus[c.device.id]:
            execs.append(g.instantiate())
    for _ in range(2):  # each replay on fresh data
        xs = [ints(300) for _ in comms]
        for c, s, d, x in zip(comms, streams, sends, xs):
            with gpuhost.gpus[c.device.id]:
                d.copy_to_device(x, stream=s)
        for c, s, e in zip(comms, streams, execs):
            with gpuhost.gpus[c.device.id]:
                e.launch(s)
        for c, s in zip(comms, streams):  # every rank's first (see in_threads)
            with gpuhost.gpus[c.device.id]:
                s.synchronize()
        for c, r, g in zip(comms, recvs, gathered):
            with gpuhost.gpus[c.device.id]:
                np.testing.assert_array_equal(r.copy_to_host(), sum(xs))
                np.testing.assert_array_equal(g.copy_to_host(), np.stack(xs))


def test_a_captured_collective_keeps_its_arrays_alive_with_the_graph():
    c = nccl.Communicator(1, nccl.get_unique_id(), 0)
    s = gpuhost.stream()
    d = gpuhost.to_device(ints(10), stream=s)
    r = gpuhost.device_array(10, np.float32)
    s.synchronize()
    gc.collect()  # no earlier test's memory freed during the capture (illegal then)
    s.begin_capture(mode="thread_local")
    try:
        c.all_reduce(d, r, stream=s)
    finally:
        graph = s.end_capture()
    refs = [weakref.ref(d), weakref.ref(r)]
    del d, r
    gc.collect()
    assert all(ref() is not None for ref in refs)  # the graph's replays need them
    graph.instantiate().launch(s)
    s.synchronize()
    np.testing.assert_array_equal(refs[1]().copy_to_host(), refs[0]().copy_to_host())
    del graph
    gc.collect()
    assert all(ref() is None for ref in refs)
    c.destroy()


# ---- all_reduce's fast path ----

def test_all_reduce_again_with_the_same_arguments_takes_the_fast_path_and_stays_exact(comms):
    streams, sends = [], []
    for c in comms:
        with gpuhost.gpus[c.device.id]:
            streams.append(gpuhost.stream())
            sends.append(gpuhost.device_array(1000, np.float32))
    for rep in range(4):
        xs = [ints(1000) for _ in comms]
        for c, s, d, x in zip(comms, streams, sends, xs):
            with gpuhost.gpus[c.device.id]:
                d.copy_to_device(x, stream=s)
        with nccl.group():
            for c, s, d in zip(comms, streams, sends):
                assert c.all_reduce(d, d, stream=s) is d
        for c, s, d in zip(comms, streams, sends):
            with gpuhost.gpus[c.device.id]:
                s.synchronize()
                np.testing.assert_array_equal(d.copy_to_host(), sum(xs))
        assert [c._fast_calls for c in comms] == [rep] * len(comms)


def test_the_fast_path_is_left_whenever_an_argument_changes():
    c = nccl.Communicator(1, nccl.get_unique_id(), 0)
    s1, s2 = gpuhost.stream(), gpuhost.stream()
    a, b = gpuhost.to_device(ints(8)), gpuhost.to_device(ints(8))
    ra = gpuhost.device_array(8, np.float32)
    c.all_reduce(a, ra, op="sum", stream=s1)
    c.all_reduce(a, ra, op="sum", stream=s1)
    assert c._fast_calls == 1
    for args, kwargs in [((b, ra), {"op": "sum", "stream": s1}),   # another send
                         ((a, ra), {"op": "max", "stream": s1}),   # another op
                         ((a, ra), {"op": "sum", "stream": s2}),   # another stream
                         ((a, ra, "sum", s1), {}),                 # passed otherwise
                         ((a,), {"recv": ra, "op": "sum", "stream": s1})]:
        c.all_reduce(*args, **kwargs)
        assert c._fast_calls == 1, (args, kwargs)
    c.all_reduce(a, recv=ra, op="sum", stream=s1)
    assert c._fast_calls == 2  # the last call's arguments again
    s1.synchronize()
    np.testing.assert_array_equal(ra.copy_to_host(), a.copy_to_host())


def test_the_fast_path_never_calls_nccl_on_what_went():
    c = nccl.Communicator(1, nccl.get_unique_id(), 0)
    a = gpuhost.to_device(ints(8))
    r = gpuhost.device_array(8, np.float32)
    c.all_reduce(a, r)
    del a  # another array may take its place (and its address): never taken for it
    gc.collect()
    a2 = gpuhost.to_device(ints(8))
    c.all_reduce(a2, r)
    assert c._fast_calls == 0
    np.testing.assert_array_equal(r.copy_to_host(), a2.copy_to_host())
    c.all_reduce(a2, r)
    assert c._fast_calls == 1
    c.destroy()
    with pytest.raises(ValueError, match=re.escape("all_reduce(): the Communicator was "
                                                   "destroyed")):
        c.all_reduce(a2, r)


def test_the_fast_path_leaves_foreign_arrays_new_results_and_captures_to_the_long_way():
    from conftest import DlpackOnly

    c = nccl.Communicator(1, nccl.get_unique_id(), 0)
    s = gpuhost.stream()
    d = gpuhost.to_device(ints(8), stream=s)
    foreign = DlpackOnly(d)
    for _ in range(2):
        c.all_reduce(foreign, d, stream=s)
        c.all_reduce(d, stream=s)  # a new result each time
    assert c._fast_calls == 0
    c.all_reduce(d, d, stream=s)
    c.all_reduce(d, d, stream=s)
    assert c._fast_calls == 1
    s.begin_capture(mode="thread_local")
    try:
        c.all_reduce(d, d, stream=s)  # the capture must keep the arrays: the long way
    finally:
        s.end_capture()
    assert c._fast_calls == 1
    c.destroy()


def test_after_the_first_call_no_python_runs_on_the_way_to_nccl():
    c = nccl.Communicator(1, nccl.get_unique_id(), 0)
    s = gpuhost.stream()
    d = gpuhost.to_device(ints(2), stream=s)
    calls = []

    def profile(frame, event, arg):
        if event in ("call", "c_call"):
            calls.append(arg.__name__ if event == "c_call" else frame.f_code.co_name)

    ar = c.all_reduce
    ar(d, d, stream=s)
    sys.setprofile(profile)
    try:
        ar(d, d, stream=s)
        ar(d, d, stream=s)
    finally:
        sys.setprofile(None)
    assert calls == ["all_reduce", "all_reduce", "setprofile"]
    assert c._fast_calls == 2
    c.destroy()
