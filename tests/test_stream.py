"""Stream: creation, kinds, synchronize/query, callbacks (never deadlocking), asyncio,
interop through __cuda_stream__, and use after the context is gone."""
import asyncio
import contextlib
import gc
import sys
import threading
import weakref

import numpy as np
import pytest

import gpuhost
from conftest import run_python


def test_stream_basics():
    s = gpuhost.stream()
    assert isinstance(s, gpuhost.Stream)
    assert isinstance(s.handle, int) and s.handle not in (0, 1, 2)
    assert s.ptr == s.handle == int(s)
    here = gpuhost.get_current_device()
    assert s.context is gpuhost.current_context() and s.device is here
    assert repr(s) == "<CUDA stream %#x on device %d>" % (s.handle, here.id)
    s.synchronize()
    assert s.query() is True and s.done is True
    assert s.priority == 0 and s.non_blocking is False
    assert s.__cuda_stream__() == (0, s.handle)


def test_streams_are_distinct_and_compare_by_handle():
    a, b = gpuhost.stream(), gpuhost.stream()
    assert a != b and a == a and hash(a) == hash(a)
    assert gpuhost.external_stream(a.handle) == a
    assert gpuhost.default_stream() == gpuhost.default_stream()
    assert a != 5


def test_default_stream_kinds():
    d, l, p = (gpuhost.default_stream(), gpuhost.legacy_default_stream(),
               gpuhost.per_thread_default_stream())
    assert (d.handle, l.handle, p.handle) == (0, 1, 2)
    here = gpuhost.get_current_device().id
    assert repr(d) == "<Default CUDA stream on device %d>" % here
    assert repr(l) == "<Legacy default CUDA stream on device %d>" % here
    assert repr(p) == "<Per-thread default CUDA stream on device %d>" % here
    for s in (d, l, p):
        s.synchronize()
        assert s.query()
        assert s.priority == 0


def test_non_blocking_and_priority():
    assert gpuhost.stream(non_blocking=True).non_blocking is True
    s = gpuhost.stream(priority=-1)
    assert s.priority == -1


def test_bad_stream_arguments():
    with pytest.raises(ValueError, match=r"stream priority 7 is out of range: device %d accepts 0 "
                                         r"\(lowest\) to -\d+ \(highest\)"
                                         % gpuhost.get_current_device().id):
        gpuhost.stream(priority=7)
    with pytest.raises(TypeError, match=r"^stream\(\) takes no positional arguments$"):
        gpuhost.stream(True)  # keyword-only
    with pytest.raises(TypeError, match="'str' object cannot be interpreted as an integer"):
        gpuhost.stream(priority="high")
    with pytest.raises(TypeError, match="takes the stream's address as an int, not str"):
        gpuhost.external_stream("0x10")
    with pytest.raises(ValueError, match="not a negative number"):
        gpuhost.external_stream(-1)
    with pytest.raises(OverflowError, match="too large to convert"):
        gpuhost.external_stream(2**70)
    for bogus in (3, 0x10, 65535, 65536 + 4, 1 << 56, 2**64 - 8):
        with pytest.raises(ValueError, match="0x%x is not a CUDA stream handle" % bogus):
            gpuhost.external_stream(bogus)

    class Protocol:
        def __cuda_stream__(self):
            return (0, 12345)

    class Attr:
        ptr = 7

    with pytest.raises(ValueError, match="__cuda_stream__.. handle 0x3039 is not a CUDA stream"):
        gpuhost.to_device(np.arange(3), stream=Protocol())
    cupy_like = type("Stream", (), {"ptr": 7, "__module__": "cupy.cuda.stream"})()
    with pytest.raises(ValueError, match="stream's handle 0x7 is not a CUDA stream handle"):
        gpuhost.to_device(np.arange(3), stream=cupy_like)
    with pytest.raises(TypeError, match="cannot create 'gpuhost.Stream' instances"):
        gpuhost.Stream()


def test_external_stream_is_never_destroyed_by_gpuhost():
    owner = gpuhost.stream()
    ext = gpuhost.external_stream(owner.handle)
    assert repr(ext) == "<External CUDA stream %#x on device %d>" % (owner.handle,
                                                                      owner.device.id)
    del ext
    gc.collect()
    owner.synchronize()  # still alive
    assert gpuhost.external_stream(0) == gpuhost.default_stream()
    assert gpuhost.external_stream(1) == gpuhost.legacy_default_stream()


def test_streams_take_weak_references_that_die_with_them():
    s, other = gpuhost.stream(), gpuhost.stream()
    died = []
    ref = weakref.ref(s, died.append)
    proxy = weakref.proxy(s)
    assert ref() is s and proxy.handle == s.handle and proxy.context is s.context
    cache = weakref.WeakKeyDictionary({s: "kept while the stream lives"})
    assert cache[s] == "kept while the stream lives"
    for kind in (gpuhost.default_stream(), gpuhost.legacy_default_stream(),
                 gpuhost.per_thread_default_stream(), gpuhost.external_stream(other.handle)):
        assert weakref.ref(kind)() is kind and weakref.proxy(kind).handle == kind.handle
    del s
    assert ref() is None and died == [ref] and len(cache) == 0
    with pytest.raises(ReferenceError, match="no longer exists"):
        proxy.handle


def test_callbacks_run_in_order_on_another_thread_with_stream_status_and_arg():
    s = gpuhost.stream()
    seen = []
    for i in range(5):
        s.add_callback(lambda st, status, arg: seen.append((st, status, arg,
                                                              threading.get_ident())), i)
    s.synchronize()
    assert [x[2] for x in seen] == list(range(5))
    assert all(x[0] is s and x[1] == 0 for x in seen)
    assert all(x[3] != threading.get_ident() for x in seen)


def test_add_callback_keyword_and_default_arg():
    s = gpuhost.stream()
    seen = []
    s.add_callback(callback=lambda st, status, arg: seen.append(arg))
    s.synchronize()
    assert seen == [None]
    with pytest.raises(TypeError, match="callback must be callable, not int"):
        s.add_callback(3)


def test_a_raising_callback_goes_to_unraisablehook_and_the_stream_goes_on(monkeypatch):
    s = gpuhost.stream()
    reports, seen = [], []
    monkeypatch.setattr(sys, "unraisablehook", reports.append)

    def bad(st, status, arg):
        raise ValueError("boom %s" % arg)

    s.add_callback(bad, 1)
    s.add_callback(lambda st, status, arg: seen.append(arg), 2)
    s.synchronize()
    assert seen == [2]
    assert len(reports) == 1 and isinstance(reports[0].exc_value, ValueError)
    assert str(reports[0].exc_value) == "boom 1"


DEADLOCK = r"""
import threading, time, gpuhost
s = gpuhost.stream()
done = []
def needs_the_gil(stream, status, arg):
    total = sum(range(20000))   # Python work: needs the GIL
    time.sleep(0.01)
    done.append(total)
for _ in range(20):
    s.add_callback(needs_the_gil)
s.synchronize()                 # must release the GIL or this hangs
e = gpuhost.event()
s.add_callback(needs_the_gil)
e.record(s)
e.synchronize()
s.add_callback(needs_the_gil)
gpuhost.current_context().synchronize()
gpuhost.synchronize()
import numpy as np
for _ in range(3):                       # frees and copies that may wait on the callback
    arr = gpuhost.to_device(np.arange(1000))
    s.add_callback(needs_the_gil)
    del arr
    s.add_callback(needs_the_gil)
    gpuhost.to_device(np.arange(10)).copy_to_host()
s.synchronize()
print(len(done))
"""


def test_callbacks_needing_the_gil_never_deadlock_a_synchronizing_thread():
    proc = run_python(DEADLOCK, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "28"


def test_query_is_false_while_work_is_pending(fake):
    s = gpuhost.stream()
    fake.gate_close()
    s.add_callback(lambda *a: None)
    assert s.query() is False and s.done is False
    threading.Timer(0.05, fake.gate_open).start()
    s.synchronize()  # waits for the gate, with the GIL released
    assert s.query() is True


def test_auto_synchronize():
    s = gpuhost.stream()
    seen = []
    with s.auto_synchronize() as x:
        assert x is s
        s.add_callback(lambda *a: seen.append(1))
    assert seen == [1] and s.query()


def test_async_done_resolves_on_the_loop_thread():
    s = gpuhost.stream()
    seen = []

    async def main():
        s.add_callback(lambda *a: seen.append("callback"))
        fut = s.async_done()
        result = await asyncio.wait_for(fut, 30)
        seen.append(threading.get_ident())
        return result

    assert asyncio.run(main()) is s
    assert seen == ["callback", threading.get_ident()]


def test_async_done_waits_for_pending_work(fake):
    s = gpuhost.stream()

    async def main():
        fake.gate_close()
        s.add_callback(lambda *a: None)
        fut = s.async_done()
        await asyncio.sleep(0.02)
        pending = not fut.done()
        fake.gate_open()
        await asyncio.wait_for(fut, 30)
        return pending

    assert asyncio.run(main()) is True


def test_async_done_needs_a_running_loop():
    with pytest.raises(RuntimeError, match="no running event loop"):
        gpuhost.stream().async_done()


@contextlib.contextmanager
def held(stream):
    """The stream held busy by a callback that returns when the block ends."""
    release = threading.Event()
    stream.add_callback(lambda st, status, arg: release.wait(60))
    try:
        yield stream
    finally:
        release.set()


def test_record_and_wait_event():
    s = gpuhost.stream()
    ev = s.record()
    assert isinstance(ev, gpuhost.Event) and ev.recorded and ev.timing
    mine = gpuhost.event()
    other = gpuhost.stream()
    with held(s):
        assert s.record(mine) is mine
        other.wait_event(mine)
        # the record waits behind s's work, and other's later work behind the record
        assert not mine.query() and not other.query()
    other.synchronize()
    assert mine.query() and other.query()
    with pytest.raises(TypeError, match="event must be a gpuhost Event or None, not int"):
        s.record(3)


class ForeignStream:
    """A stream from another library, seen through the __cuda_stream__ protocol."""

    def __init__(self, handle):
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)


def test_stream_arguments_accept_the_cuda_stream_protocol():
    s, other = gpuhost.stream(), gpuhost.stream()
    ev = gpuhost.event()
    with held(s):
        ev.record(ForeignStream(s.handle))  # on s: behind its held work
        ev.wait(ForeignStream(other.handle))  # other waits for it
        assert ev.recorded and not ev.query() and not other.query()
    other.synchronize()
    assert ev.query() and other.query()
    with held(gpuhost.default_stream()):
        ev.record(ForeignStream(0))  # 0: the default stream
        assert not ev.query()
    ev.synchronize()
    assert ev.query()


def test_bad_stream_arguments_say_what_is_accepted():
    ev = gpuhost.event()
    with pytest.raises(TypeError, match="the only int accepted is 0"):
        ev.record(5)
    with pytest.raises(TypeError, match="stream must be a gpuhost Stream, 0 or None .the default "
                                        "stream., or a stream exporting __cuda_stream__"):
        ev.record("stream")

    class Bad:
        def __cuda_stream__(self):
            return 7

    with pytest.raises(TypeError, match=r"Bad.__cuda_stream__\(\) must return \(version, handle\)"):
        ev.record(Bad())


def test_streams_are_counted_and_destroyed(fake):
    gc.collect()  # earlier tests' objects in cycles
    before = fake.live("streams")
    streams = [gpuhost.stream() for _ in range(10)]
    assert fake.live("streams") == before + 10
    del streams
    gc.collect()
    assert fake.live("streams") == before


def test_stream_create_failure_leaves_nothing(fake):
    gc.collect()  # earlier tests' objects in cycles
    before = fake.live("streams")
    fake.fail("cuStreamCreateWithPriority", 2)
    with pytest.raises(gpuhost.CudaOutOfMemoryError) as info:
        gpuhost.stream()
    assert info.value.call == "cuStreamCreateWithPriority"
    assert fake.live("streams") == before


def test_callback_that_cannot_be_queued_raises_and_releases_its_arguments(fake):
    s = gpuhost.stream()
    arg = object()
    before = sys.getrefcount(arg)
    fake.fail("cuStreamAddCallback", 1)
    with pytest.raises(gpuhost.CudaAPIError, match="cuStreamAddCallback failed"):
        s.add_callback(lambda *a: None, arg)
    assert sys.getrefcount(arg) == before


AFTER_RESET = r"""
import warnings, gc, gpuhost
warnings.simplefilter("error")
s = gpuhost.stream()
e = gpuhost.event()
gpuhost.gpus[0].reset()
for call in (s.synchronize, s.query, lambda: e.record(s), e.synchronize, lambda: e.record()):
    try:
        call()
    except gpuhost.CudaAPIError as err:
        print(err.name)
del s, e
gc.collect()
gpuhost.stream().synchronize()
print("ok")
"""


def test_objects_of_a_reset_context_raise_and_free_quietly():
    proc = run_python(AFTER_RESET)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["CUDA_ERROR_CONTEXT_IS_DESTROYED"] * 5 + ["ok"]
    assert proc.stderr == ""


@pytest.mark.gpu
def test_interop_with_cupy_and_torch_streams():
    ev = gpuhost.event()
    cupy = pytest.importorskip("cupy")
    cs = cupy.cuda.Stream()
    ev.record(cs)
    ev.synchronize()
    ev.wait(cs)
    torch = pytest.importorskip("torch")
    ts = torch.cuda.Stream()
    ev.record(ts)
    ev.synchronize()
    ours = gpuhost.stream()
    theirs = cupy.cuda.Stream.from_external(ours)  # through our __cuda_stream__
    assert theirs.ptr == ours.handle


def test_objects_dying_in_a_callback_are_released_after_it_not_on_the_driver_thread(fake):
    import warnings

    s = gpuhost.stream()
    gc.collect()
    gpuhost._core.release_cached_events()  # the baseline holds no cached event handles
    streams, events = fake.live("streams"), fake.live("events")
    box = [gpuhost.stream(), gpuhost.event()]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s.add_callback(lambda *a: box.clear())  # the last references die on the driver thread
        s.synchronize()
        for _ in range(1000):  # the main thread runs the deferred releases between bytecodes
            if fake.live("streams") == streams:
                break
    assert not box
    gpuhost._core.release_cached_events()  # the event's handle was kept for reuse
    assert (fake.live("streams"), fake.live("events")) == (streams, events)
    assert [str(w.message) for w in caught] == []
