"""gpuhost's records of its live objects (csrc/base/live.c): the counts of allocations, streams,
events and modules, and, while recording, which ones were made since and where; the
pytest plugin's leak check reads them instead of the heap (tests/test_pytest_plugin.py
runs the check itself)."""
import gc
import os
import sys
import threading

import numpy as np
import pytest

import gpuhost
from gpuhost import _core

PTX = r"""//
.version 8.0
.target sm_90
.address_size 64

.visible .entry nothing()
{
    ret;
}
"""
rng = np.random.default_rng()


@pytest.fixture
def recording():
    """Recording for the test (gpuhost's package looked past), stopped after it."""
    _core._live_record(os.path.join(os.path.dirname(gpuhost.__file__), ""))
    yield
    _core._live_record_stop()


def _delta(before):
    now = _core._live_counts()
    return {k: now[k] - before[k] for k in now}


def _recorded():
    records, lost = _core._live_recorded()
    assert lost == 0
    return records


def test_counts_follow_every_kind_as_it_is_made_and_freed(fake_kernels):
    _core._release_pool_blocks()
    before = _core._live_counts()
    assert sorted(before) == ["Allocation", "Event", "Module", "Stream"]
    n = [int(k) for k in rng.integers(1, 6, size=4)]
    streams = [gpuhost.stream() for _ in range(n[0])]
    events = [gpuhost.event() for _ in range(n[1])]
    arrays = [gpuhost.to_device(rng.random(int(k))) for k in rng.integers(1, 999, size=n[2])]
    views = [a[1:] for a in arrays]  # views share their allocation
    modules = [gpuhost.Module(PTX) for _ in range(n[3])]
    pinned = gpuhost.pinned_array(16, np.float32)
    assert _delta(before) == {"Stream": n[0], "Event": n[1], "Allocation": n[2] + 1,
                              "Module": n[3]}
    del streams, events, arrays, views, modules, pinned
    _core._release_pool_blocks()  # the default pool held the arrays' blocks
    assert _core._live_counts() == before


def test_an_opened_ipc_event_and_a_closed_allocation_count_until_freed(fake):
    before = _core._live_counts()
    ev = gpuhost.event(interprocess=True, timing=False)
    opened = ev.ipc_handle().open()  # the fake opens in-process handles
    a = _core.Pool("device", "plain").allocate(int(rng.integers(1, 4096)))
    a.close()  # the memory is gone, the object lives on
    assert _delta(before) == {"Stream": 0, "Event": 2, "Allocation": 1, "Module": 0}
    del ev, opened, a
    assert _core._live_counts() == before


def test_recording_names_each_new_object_with_its_line_and_function(recording):
    old = gpuhost.event()  # made before the records were restarted: not listed
    _core._live_record(os.path.join(os.path.dirname(gpuhost.__file__), ""))
    line = sys._getframe().f_lineno + 1
    s = gpuhost.stream()
    d = gpuhost.device_array(int(rng.integers(1, 100)))  # through gpuhost's Python
    records = _recorded()
    here = __file__.replace(".pyc", ".py")
    name = test_recording_names_each_new_object_with_its_line_and_function.__name__
    assert sorted((kind, obj is s or obj is d.owner, f, n, fn.split(".")[-1])
                  for kind, obj, f, n, fn in records) == [
        ("Allocation", True, here, line + 1, name), ("Stream", True, here, line, name)]
    del s, records  # the records list held it too
    assert [r[0] for r in _recorded()] == ["Allocation"]
    del old


def _make_in_a_helper():
    return gpuhost.event()


def test_without_skip_the_innermost_frame_is_named(tmp_path):
    # A helper module in a folder of its own, looked past only when skip names it.
    helper = tmp_path / "helper_made.py"
    helper.write_text("import gpuhost\n\ndef make():\n    return gpuhost.event()\n")
    spec = __import__("importlib.util").util.spec_from_file_location("helper_made", helper)
    module = __import__("importlib.util").util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        _core._live_record()
        a = module.make()
        assert [(r[2], r[3], r[4]) for r in _recorded()] == [(str(helper), 4, "make")]
        _core._live_record(os.path.join(str(tmp_path), ""))
        line = sys._getframe().f_lineno + 1
        b = module.make()
        assert [(r[2], r[3], r[4]) for r in _recorded()] == [
            (__file__, line, "test_without_skip_the_innermost_frame_is_named")]
        _core._live_record()
        c = _make_in_a_helper()
        assert [r[4] for r in _recorded()] == ["_make_in_a_helper"]
        (kind, obj, path, n, function), = _recorded()
        assert obj is c and path == __file__
    finally:
        _core._live_record_stop()
    del a, b, c


def test_an_object_made_with_no_python_frame_has_no_origin(recording):
    # A thread started on a C function runs no Python code of its own.
    import _thread

    made = []
    _thread.start_new_thread(made.extend, (map(gpuhost.event, [True]),))
    for _ in range(5000):
        if made:
            break
        threading.Event().wait(0.001)
    assert [(kind, obj is made[0], f, n, fn) for kind, obj, f, n, fn in _recorded()] == [
        ("Event", True, None, None, None)]


def test_many_records_grow_the_table_and_removals_leave_exactly_the_survivors(recording):
    n = int(rng.integers(3000, 6000))
    events = [gpuhost.event(timing=False) for _ in range(n)]
    keep = rng.random(n) < 0.5
    survivors = {id(e) for e, k in zip(events, keep) if k}
    events = [e for e, k in zip(events, keep) if k]
    assert {id(r[1]) for r in _recorded()} == survivors
    more = [gpuhost.event(timing=False) for _ in range(int(rng.integers(100, 500)))]
    assert {id(r[1]) for r in _recorded()} == survivors | {id(e) for e in more}
    del events, more
    assert _recorded() == []


def test_stopping_drops_the_records_and_kept_objects_are_not_listed(recording):
    kept, dropped = gpuhost.stream(), gpuhost.stream()
    assert _core._live_kept(kept) is None
    assert [r[1] for r in _recorded()] == [dropped]
    _core._live_kept(kept)  # no record: nothing happens
    _core._live_kept("not gpuhost's")
    _core._live_record_stop()
    assert _core._live_recorded() == ([], 0)
    later = gpuhost.stream()  # not recording: not noted
    assert _core._live_recorded() == ([], 0)
    del kept, dropped, later


def test_records_of_another_thread_name_its_frame(recording):
    made = []

    def worker():
        made.append(gpuhost.event())

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    (kind, obj, path, line, function), = _recorded()
    assert obj is made[0] and path == __file__ and function.endswith("worker")
    assert line == worker.__code__.co_firstlineno + 1


def test_record_refuses_a_skip_that_is_not_a_str():
    with pytest.raises(TypeError, match=r"^_live_record\(\) skip must be a str or None, not "
                                        r"bytes$"):
        _core._live_record(b"/tmp")
    with pytest.raises(TypeError):
        _core._live_record("a", "b")
    assert _core._live_recorded() == ([], 0)


@pytest.mark.gpus(2)
def test_release_pool_blocks_gives_back_what_every_pool_holds(fake):
    ctx = gpuhost.current_context()
    gc.collect()  # earlier tests' garbage back in its pools now, before they are emptied
    _core._release_pool_blocks()
    mine, other = _core.Pool("device", "cache"), _core.Pool("pinned", "cache")
    sizes = [int(k) for k in rng.integers(1, 1 << 16, size=5)]
    blocks = [mine.allocate(size) for size in sizes]
    for block in blocks:
        block.close()  # held now, each in its own block
    other.allocate(777).close()
    live = fake.live("allocations")
    with gpuhost.gpus[(ctx.device.id + 1) % len(gpuhost.gpus)]:  # another device
        away = _core.Pool("device", "cache")
        away.allocate(4096).close()
    held = sum(mine.alloc_size(mine.bin_number(size)) for size in sizes) + 1024
    assert mine.free_bytes + other.free_bytes == held
    assert _core._release_pool_blocks(ctx) == held  # the pools of ctx only
    assert mine.free_bytes == 0 and other.free_bytes == 0 and away.free_bytes == 4096
    assert fake.live("allocations") < live
    assert _core._release_pool_blocks() >= 4096 and away.free_bytes == 0
    assert _core._release_pool_blocks() == 0
    with pytest.raises(TypeError, match=r"^_release_pool_blocks\(\) takes a Context or None, "
                                        r"not int$"):
        _core._release_pool_blocks(0)


def test_the_records_stay_whole_while_the_collector_runs_during_a_read(recording):
    # Cycles of events left to the collector, which runs at almost every allocation the
    # read makes: what it frees, and what finalizers make, must not upset the read.
    import gc
    import weakref

    class Maker:
        def __del__(self):
            made.append(gpuhost.event())  # made while the collector runs

    made = []
    n = int(rng.integers(50, 200))
    refs = []
    for _ in range(n):
        cycle = [gpuhost.event(), Maker()]
        cycle.append(cycle)
        refs.append(weakref.ref(cycle[0]))
        del cycle
    threshold = gc.get_threshold()
    gc.set_threshold(1, 1, 1)
    try:
        for _ in range(5):
            records = _recorded()
            alive = {id(r()) for r in refs if r() is not None} | {id(e) for e in made}
            assert {id(r[1]) for r in records} <= alive and len(records) <= 2 * n
            del records
    finally:
        gc.set_threshold(*threshold)
    gc.collect()
    assert {id(r[1]) for r in _recorded()} == {id(e) for e in made} and len(made) == n


@pytest.mark.parametrize("name", ["_live_counts", "_live_record", "_live_recorded",
                                  "_live_record_stop", "_live_kept", "_release_pool_blocks"])
def test_the_private_functions_examples_run(name):
    # tests/test_docstring_examples.py runs the public names' examples; these are gpuhost's
    # own, documented the same way.
    import doctest

    fn = getattr(_core, name)
    doc = fn.__doc__
    assert fn.__text_signature__ is not None and "Examples\n--------\n>>> " in doc
    test = doctest.DocTestParser().get_doctest(doc, {"gpuhost": gpuhost, "np": np}, name,
                                               None, 0)
    report = []
    results = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS).run(test, out=report.append)
    assert results.failed == 0 and results.attempted >= 3, "".join(report)
