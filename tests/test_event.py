"""Event: record, query, synchronize, timing with its errors, IPC, profiling."""
import gc
import pickle
import threading
import time

import numpy as np
import pytest

import gpuhost
from gpuhost import CudaDriverError
from conftest import run_python


def test_event_basics():
    ev = gpuhost.event()
    assert isinstance(ev, gpuhost.Event)
    assert ev.timing is True and ev.recorded is False
    assert ev.query() is True  # never recorded: nothing to wait for
    ev.record()
    assert ev.recorded
    ev.synchronize()
    assert ev.query() is True
    here = gpuhost.get_current_device()
    assert ev.device is here
    assert repr(ev) == "<CUDA event %#x on device %d>" % (ev.handle, here.id)
    with pytest.raises(TypeError, match="cannot create 'gpuhost.Event' instances"):
        gpuhost.Event()


def test_elapsed_time_between_two_events():
    s = gpuhost.stream()
    start, end = gpuhost.event(), gpuhost.event()
    start.record(s)
    time.sleep(0.002)
    end.record(stream=s)
    end.synchronize()
    ms = start.elapsed_time(end)
    assert isinstance(ms, float) and ms >= 0
    assert gpuhost.event_elapsed_time(start, end) == ms


def test_timing_errors_explain_themselves():
    untimed = gpuhost.event(timing=False)
    timed, never = gpuhost.event(), gpuhost.event()
    untimed.record()
    timed.record()
    timed.synchronize()
    with pytest.raises(CudaDriverError, match="the start event was made with timing=False and "
                                              "cannot be timed"):
        untimed.elapsed_time(timed)
    with pytest.raises(CudaDriverError, match="the end event was made with timing=False"):
        timed.elapsed_time(untimed)
    with pytest.raises(CudaDriverError, match="the end event was never recorded: call its "
                                              "record.. before timing"):
        timed.elapsed_time(never)
    with pytest.raises(CudaDriverError, match="the start event was never recorded"):
        gpuhost.event_elapsed_time(never, timed)
    with pytest.raises(TypeError, match="the end event must be a gpuhost Event, not int"):
        timed.elapsed_time(1)
    with pytest.raises(TypeError, match="evtstart must be a gpuhost Event"):
        gpuhost.event_elapsed_time(None, timed)
    with pytest.raises(TypeError, match="takes 2 arguments"):
        gpuhost.event_elapsed_time(timed)


def test_elapsed_time_before_completion_is_not_ready(fake):
    start, end = gpuhost.event(), gpuhost.event()
    start.record()
    fake.gate_close()
    end.record()
    assert end.query() is False
    with pytest.raises(gpuhost.CudaAPIError) as info:
        start.elapsed_time(end)
    assert info.value.name == "CUDA_ERROR_NOT_READY"
    threading.Timer(0.05, fake.gate_open).start()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) >= 0


def test_record_argument_errors():
    ev = gpuhost.event()
    with pytest.raises(TypeError, match="record.. takes at most 1 argument .2 given."):
        ev.record(0, 0)
    with pytest.raises(TypeError, match="record.. got an unexpected keyword argument 'strm'"):
        ev.record(strm=0)
    with pytest.raises(TypeError, match="wait.. takes at most 1 argument"):
        ev.wait(0, stream=0)
    ev.record(None)
    ev.record(stream=gpuhost.default_stream())
    ev.wait(stream=gpuhost.stream())


def test_event_options():
    assert gpuhost.event(timing=False).timing is False
    gpuhost.event(blocking_sync=True).record()
    with pytest.raises(ValueError, match="an interprocess event cannot record time"):
        gpuhost.event(interprocess=True)
    with pytest.raises(ValueError, match="only an event made with event.interprocess=True"):
        gpuhost.event().ipc_handle()
    with pytest.raises(TypeError, match=r"event\(\) takes at most 1 positional argument "
                                        r"\(2 given\)"):
        gpuhost.event(True, True)  # blocking_sync is keyword-only


@pytest.mark.gpus(2)
def test_record_on_another_devices_stream_is_refused(device0):
    ev = gpuhost.event()
    with gpuhost.gpus[1]:
        other = gpuhost.stream()
    with pytest.raises(CudaDriverError, match=r"^Event.record\(\): the event is on device 0 but the "
                                              "stream is device 1's$"):
        ev.record(other)
    assert ev.recorded is False
    with gpuhost.gpus[1]:
        ev1 = gpuhost.event()
        ev1.record()
    ev.record()
    ev.synchronize()
    ev1.synchronize()
    with pytest.raises(CudaDriverError, match="cannot time events of two devices"):
        ev.elapsed_time(ev1)


@pytest.mark.gpus(2)
def test_a_stream_of_another_device_waits_for_an_event(fake, device0):
    ev = gpuhost.event()
    with gpuhost.gpus[1]:
        other = gpuhost.stream()
        legacy1 = gpuhost.default_stream()
    s0 = gpuhost.stream()
    fake.gate_close()  # hold device 0's record: device 1's stream must wait for it
    try:
        ev.record(s0)
        before = fake.calls("cuStreamWaitEvent")
        ev.wait(other)
        other.wait_event(ev)
        ev.wait(legacy1)  # device 1's default stream: its context is made current for the call
        assert fake.calls("cuStreamWaitEvent") == before + 3
        assert not other.query() and not ev.query()
    finally:
        fake.gate_open()
    other.synchronize()
    assert ev.query() and other.query()
    assert gpuhost.current_context().device is gpuhost.gpus[0]


@pytest.mark.gpus(2)
def test_event_of_another_device_records_from_any_thread_context():
    with gpuhost.gpus[1]:
        ev = gpuhost.event()
    ev.record()  # device 0 is current: gpuhost makes device 1's context current for the call
    ev.synchronize()
    assert ev.device is gpuhost.gpus[1]


def test_events_are_counted_and_destroyed(fake):
    gc.collect()  # earlier tests' objects in cycles
    gpuhost._core.release_cached_events()
    before = fake.live("events")
    evs = [gpuhost.event() for _ in range(10)]
    assert fake.live("events") == before + 10
    del evs
    gc.collect()
    again = [gpuhost.event() for _ in range(10)]  # the dropped handles are reused
    assert fake.live("events") == before + 10
    del again
    gc.collect()
    gpuhost._core.release_cached_events()
    assert fake.live("events") == before


def test_a_reused_event_handle_behaves_as_a_fresh_event(fake):
    s = gpuhost.stream()
    ev = gpuhost.event()
    fake.gate_close()  # queued work stays pending
    try:
        ev.record(s)
        assert not ev.query()
        handle = ev.handle
        del ev
        fresh = gpuhost.event()
        assert fresh.handle == handle  # the same CUevent, still carrying the pending record
        assert not fresh.recorded
        assert fresh.query()           # yet a fresh event: nothing recorded, nothing pending
        fresh.synchronize()            # returns at once
        fresh.wait(s)                  # waits for nothing
        with pytest.raises(gpuhost.CudaDriverError, match="never recorded"):
            fresh.elapsed_time(fresh)
    finally:
        fake.gate_open()
    s.synchronize()


def test_ipc_handle_pickles_and_opens(fake):
    ev = gpuhost.event(interprocess=True, timing=False)
    ev.record()
    handle = pickle.loads(pickle.dumps(ev.ipc_handle()))
    assert isinstance(handle, gpuhost.IpcEventHandle)
    assert len(handle.handle) == 64 and handle.device_uuid == ev.device.uuid
    opened = handle.open()  # the fake opens in-process handles
    opened.synchronize()
    assert opened.query() and opened.timing is False


def test_open_ipc_event_checks_the_handle_size():
    with pytest.raises(ValueError, match="an IPC event handle has 64 bytes, not 3"):
        gpuhost._core.open_ipc_event(b"abc")
    with pytest.raises(TypeError, match="expected bytes, str found"):
        gpuhost._core.open_ipc_event("x" * 64)


IPC_CHILD = r"""
import multiprocessing as mp, pickle, sys
def child(blob, q):
    import gpuhost
    ev = pickle.loads(blob).open()
    ev.synchronize()
    s = gpuhost.stream()
    ev.wait(s)
    s.synchronize()
    q.put(ev.query())
if __name__ == "__main__":
    import gpuhost
    ev = gpuhost.event(interprocess=True, timing=False)
    ev.record()
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=child, args=(pickle.dumps(ev.ipc_handle()), q))
    p.start()
    print(q.get(timeout=120))
    p.join(60)
    print(p.exitcode)
"""


@pytest.mark.gpu
def test_ipc_event_in_another_process(tmp_path):
    script = tmp_path / "ipc_child.py"
    script.write_text(IPC_CHILD)
    proc = run_python("import runpy; runpy.run_path(%r, run_name='__main__')" % str(script),
                      timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "0"]


def test_profiler_switches(fake):
    gpuhost.profile_start()
    assert fake.profiler_state() == 1
    gpuhost.profile_stop()
    assert fake.profiler_state() == 0
    with gpuhost.profiling():
        assert fake.profiler_state() == 1
    assert fake.profiler_state() == 0
    with pytest.raises(KeyError, match="x"):
        with gpuhost.profiling():
            raise KeyError("x")
    assert fake.profiler_state() == 0


def test_profiling_runs_on_any_driver():
    """On a GPU with no profiler attached (test_profiler_switches checks the switching on
    the fake): the block's work runs, what it raises passes through, and profiling stops."""
    host = np.random.default_rng().standard_normal(64)
    with gpuhost.profiling() as entered:
        dev = gpuhost.to_device(host)
    assert entered is None
    assert np.array_equal(dev.copy_to_host(), host)
    with pytest.raises(KeyError, match="x"):
        with gpuhost.profiling():
            raise KeyError("x")
    with gpuhost.profiling():  # stopped each time: it starts again
        assert np.array_equal(dev.copy_to_host(), host)


def test_event_record_fault_leaves_event_unrecorded(fake):
    ev = gpuhost.event()
    fake.fail("cuEventRecord", 1)
    with pytest.raises(gpuhost.CudaAPIError, match="cuEventRecord failed"):
        ev.record()
    assert ev.recorded is False
    ev.record()
    assert ev.recorded
