"""gpuhost's pytest plugin (gpuhost/pytest_plugin.py), run on inner test suites with
pytest's pytester: markers, fixtures, the leak check, device choice and xdist.

Inner runs in this process share its driver (the fake one, or the GPU); those that need
another driver set-up, choose a device, or may poison the context run in a subprocess."""
import os
from importlib.metadata import entry_points

import pytest

import gpuhost

pytest_plugins = ["pytester"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(gpuhost.__file__)))


def _autoloaded():
    """Whether pytest loads the plugin by itself (gpuhost installed with its entry point):
    then ``-p gpuhost.pytest_plugin`` would register it a second time, an error."""
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        return False
    return any(ep.name == "gpuhost" for ep in entry_points(group="pytest11"))


PLUGIN = () if _autoloaded() else ("-p", "gpuhost.pytest_plugin")
# Hypothesis's plugin (in the test extras) costs a second per inner run: left out.
BASE = PLUGIN + ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-rfEs")


@pytest.fixture
def inner(pytester, monkeypatch, tmp_path):
    """pytester with a home of its own, no CUDA_DEVICE, and the checkout's gpuhost first
    on the path of subprocesses."""
    monkeypatch.delenv("CUDA_DEVICE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    return pytester


def run_in(pytester, *args):
    return pytester.runpytest_inprocess(*BASE, *args)


def run_sub(pytester, *args):
    return pytester.runpytest_subprocess(*BASE, *args, timeout=180)


# ---- registration ----

def test_the_plugin_is_the_pytest11_entry_point():
    try:
        import tomllib
    except ImportError:
        pytest.skip("needs tomllib (Python 3.11+)")
    path = os.path.join(ROOT, "pyproject.toml")
    if not os.path.exists(path):
        pytest.skip("not run from a checkout")
    with open(path, "rb") as f:
        project = tomllib.load(f)["project"]
    assert project["entry-points"]["pytest11"] == {"gpuhost": "gpuhost.pytest_plugin"}
    for ep in entry_points(group="pytest11"):
        if ep.name == "gpuhost":  # installed: the entry point is the same
            assert ep.value == "gpuhost.pytest_plugin"


def test_markers_and_options_are_registered(inner):
    result = run_in(inner, "--markers")
    result.stdout.fnmatch_lines([
        "@pytest.mark.cuda: needs a usable CUDA device; skipped otherwise",
        "@pytest.mark.gpus(n): needs at least n CUDA devices; skipped otherwise",
    ])
    result = run_in(inner, "--help")
    result.stdout.fnmatch_lines(["gpuhost (CUDA):", "*--gpuhost-device=N*",
                                 "*--gpuhost-leak-tolerance=BYTES*"])


# ---- markers ----

def test_cuda_and_gpus_markers_run_or_skip_by_the_device_count(inner):
    n = len(gpuhost.gpus)
    inner.makepyfile(test_marks="""
        import pytest

        @pytest.mark.cuda
        def test_cuda():
            pass

        @pytest.mark.gpus(%d)
        def test_enough():
            pass

        @pytest.mark.gpus(n=1)
        def test_keyword():
            pass

        @pytest.mark.gpus(%d)
        def test_too_many():
            pass
    """ % (n, n + 1))
    result = run_in(inner, "--strict-markers")
    result.assert_outcomes(passed=3, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] *: needs %d devices, %d found" % (n + 1, n)])


@pytest.mark.parametrize("arg", ["", "'two'", "0", "True"])
def test_a_gpus_marker_without_a_count_is_an_error(inner, arg):
    inner.makepyfile(test_bad="""
        import pytest

        @pytest.mark.gpus(%s)
        def test_bad():
            pass
    """ % arg)
    result = run_in(inner)
    result.assert_outcomes(errors=1)
    shown = {"": "None", "'two'": "'two'", "0": "0", "True": "True"}[arg]
    result.stdout.fnmatch_lines(["*@pytest.mark.gpus takes the number of devices the test "
                                 "needs, e.g. gpus(2); got %s" % shown])


def test_a_conftest_that_skips_gpus_itself_wins_and_nothing_skips_twice(inner):
    # The project's own tests/conftest.py registers gpus(n) and skips on it too.
    inner.makeconftest("""
        import pytest

        def pytest_configure(config):
            config.addinivalue_line("markers", "gpus(n): needs at least n devices")

        def pytest_runtest_setup(item):
            marker = item.get_closest_marker("gpus")
            if marker is not None and marker.args[0] > 64:
                pytest.skip("conftest: needs %d devices" % marker.args[0])
    """)
    inner.makepyfile(test_both="""
        import pytest

        @pytest.mark.gpus(1)
        def test_one():
            pass

        @pytest.mark.gpus(65)
        def test_many():
            pass
    """)
    result = run_in(inner, "--strict-markers")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] *: conftest: needs 65 devices"])


def test_markers_and_fixtures_skip_where_cuda_is_not_usable(inner, monkeypatch):
    inner.makepyfile(test_none="""
        import pytest
        from gpuhost.tools import mark_cuda_test

        @pytest.mark.cuda
        def test_marked():
            pass

        @pytest.mark.gpus(1)
        def test_one_gpu():
            pass

        def test_fixture(gpuhost_context):
            pass

        @mark_cuda_test
        def test_pycuda_style():
            pass
    """)
    missing = os.path.join(str(inner.path), "no-libcuda.so")
    monkeypatch.setenv("GPUHOST_CUDA_DRIVER", missing)
    result = run_sub(inner)
    result.assert_outcomes(skipped=4)
    why = "no CUDA driver library was found. Tried: %s (from GPUHOST_CUDA_DRIVER)" % missing
    result.stdout.fnmatch_lines([
        "SKIPPED [[]2[]] *: needs a CUDA device: %s*" % why,  # the two markers
        "SKIPPED [[]1[]] *: needs 1 devices, 0 found (%s*" % why,
        "SKIPPED [[]1[]] test_none.py:*: needs a CUDA device: %s*" % why,  # the fixture
    ])


# ---- fixtures ----

def test_context_and_device_fixtures(inner):
    inner.makepyfile(test_fix="""
        import gpuhost

        def test_context(gpuhost_context, gpuhost_device):
            assert gpuhost.current_context() is gpuhost_context
            assert gpuhost_context is gpuhost.gpus[0].get_primary_context()
            assert gpuhost_device is gpuhost_context.device

        def test_leak_check_gives_the_context(gpuhost_leak_check, gpuhost_context):
            assert gpuhost_leak_check is gpuhost_context
    """)
    # The suite's own autouse fixture checks the context stack is as deep afterwards.
    run_in(inner).assert_outcomes(passed=2)


@pytest.mark.gpus(2)
def test_the_context_fixture_follows_cuda_device(inner, monkeypatch):
    monkeypatch.setenv("CUDA_DEVICE", "1")
    inner.makepyfile(test_dev="""
        def test_device(gpuhost_device):
            assert gpuhost_device.id == 1
    """)
    run_in(inner).assert_outcomes(passed=1)


LEAKS = """
import gpuhost
import numpy as np

KEEP = []

def test_clean(gpuhost_leak_check):
    s = gpuhost.stream()
    e = gpuhost.event()
    a = gpuhost.to_device(np.arange(1000, dtype=np.float32), stream=s)
    e.record(s)
    s.synchronize()
    del s, e, a

def test_keeps_a_stream(gpuhost_leak_check):
    KEEP.append(gpuhost.stream())

def test_keeps_arrays_and_more(gpuhost_leak_check):
    KEEP.append(gpuhost.device_array(256, np.float64))
    KEEP.append(gpuhost.pinned_array(64, np.int32))
    KEEP.append((gpuhost.stream(), gpuhost.event()))

def test_fails_and_leaks(gpuhost_leak_check):
    KEEP.append(gpuhost.event())
    assert 1 == 2

def test_not_checked():
    KEEP.append(gpuhost.stream())
"""


def test_leak_check_fails_tests_that_leave_gpuhost_objects_alive(inner):
    inner.makepyfile(test_leaks=LEAKS)
    result = run_in(inner)
    result.assert_outcomes(passed=2, failed=3)
    prefix = ("gpuhost_leak_check: gpuhost objects made during the test are still alive "
              "after it (after gc.collect()): ")
    out = result.stdout.str()
    assert prefix + "1 stream\n" in out
    assert prefix + "2 allocations, 1 stream, 1 event\n" in out
    # A test that failed keeps its own error; what it leaked is shown beside it.
    result.stdout.fnmatch_lines(["*assert 1 == 2", "*Captured gpuhost call*",
                                 prefix + "1 event"])


@pytest.mark.fake
def test_leak_check_reports_fallen_free_memory_beyond_the_tolerance(inner):
    inner.makepyfile(test_mem="""
        import gpuhost
        import numpy as np

        KEEP = []

        def test_leaks_a_mebibyte(gpuhost_leak_check):
            KEEP.append(gpuhost.device_array(2**20, np.uint8))
    """)
    result = run_in(inner, "--gpuhost-leak-tolerance=1000")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "gpuhost_leak_check: gpuhost objects made during the test are still alive after it "
        "(after gc.collect()): 1 allocation; the device's free memory fell by 1.0 MiB "
        "during the test (tolerance 0.0 MiB: --gpuhost-leak-tolerance)"])
    # Within the default tolerance only the allocation is reported.
    result = run_in(inner)
    result.assert_outcomes(failed=1)
    assert "free memory" not in result.stdout.str()


@pytest.mark.fake
def test_leak_check_fails_the_test_whose_work_raised_asynchronously(inner):
    inner.makepyfile(test_async="""
        import ctypes, os
        import gpuhost

        def test_poisons(gpuhost_leak_check):
            lib = ctypes.CDLL(os.environ["GPUHOST_CUDA_DRIVER"])
            lib.fakecuda_fail.argtypes = [ctypes.c_char_p, ctypes.c_long, ctypes.c_int,
                                          ctypes.c_long]
            lib.fakecuda_fail(b"cuCtxSynchronize", 1, 700, 1)

        def test_next(gpuhost_leak_check):
            pass
    """)
    result = run_in(inner)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "gpuhost_leak_check: an asynchronous CUDA error surfaced when the test's work was "
        "synchronized at its end: cuCtxSynchronize failed: [[]700] CUDA_ERROR_ILLEGAL_ADDRESS: "
        "an illegal memory access was encountered (a kernel faulted: this error is sticky*",
        "FAILED test_async.py::test_poisons*"])


@pytest.mark.gpu
def test_leak_check_on_the_gpu_counts_modules_but_not_rawkernel_caches(inner):
    inner.makepyfile(test_mods="""
        import gpuhost
        import numpy as np

        SRC = 'extern "C" __global__ void twice(float *x) { x[threadIdx.x] *= 2.0f; }'
        RAW = gpuhost.RawKernel(SRC, "twice")
        KEEP = []

        def test_rawkernel_loads_once(gpuhost_leak_check):
            x = gpuhost.to_device(np.ones(32, np.float32))
            RAW((1,), (32,), (x,))
            assert (x.copy_to_host() == 2).all()

        def test_keeps_a_module(gpuhost_leak_check):
            KEEP.append(gpuhost.SourceModule(SRC))
    """)
    result = run_in(inner)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "gpuhost_leak_check: gpuhost objects made during the test are still alive after it "
        "(after gc.collect()): 1 module*"])


@pytest.mark.gpu
def test_leak_check_surfaces_an_illegal_address_in_the_test_that_caused_it(inner):
    # In a subprocess: the error leaves the context unusable.
    inner.makepyfile(test_bad="""
        import gpuhost

        def test_writes_through_null(gpuhost_leak_check):
            poke = gpuhost.SourceModule(
                "__global__ void poke(int *p) { *p = 1; }").get_function("poke")
            poke[1, 1](None)
    """)
    result = run_sub(inner)
    # Only the outcome of the test counts: the poisoned context may also warn at exit.
    assert result.parseoutcomes()["failed"] == 1
    result.stdout.fnmatch_lines([
        "gpuhost_leak_check: an asynchronous CUDA error surfaced when the test's work was "
        "synchronized at its end: *CUDA_ERROR_ILLEGAL_ADDRESS*"])


def test_live_counts_move_with_the_objects_and_the_scan_agrees():
    # live_counts() reads the types' reference counts; _scan_counts() (free-threaded
    # builds) looks one reference below every tracked object, and through device arrays.
    from gpuhost.pytest_plugin import _LEAK_TYPES, _free_pool_blocks, _scan_counts, live_counts

    ctx = gpuhost.current_context()
    types = {name: getattr(gpuhost, name) for name, _ in _LEAK_TYPES}
    _free_pool_blocks(ctx)
    before, scanned = live_counts(), _scan_counts(types)
    stream = gpuhost.stream()
    keep = [stream, gpuhost.event(), gpuhost.device_array(8, stream=stream)]
    keep.append(keep[-1][2:])  # a view: the same allocation
    expected = {"Allocation": 1, "Stream": 1, "Event": 1, "Module": 0}
    counts = live_counts()
    assert {k: counts[k] - before[k] for k in counts} == expected
    del stream
    scanned_now = _scan_counts(types)
    assert {k: scanned_now[k] - scanned[k] for k in scanned_now} == expected
    del keep
    _free_pool_blocks(ctx)  # a pool may keep a freed block, and its stream, for reuse
    assert live_counts() == before


# ---- choosing the device ----

CHOSEN = """
import os
import gpuhost
from gpuhost.tools import make_default_context

def test_runs_on_the_chosen_device():
    assert gpuhost.gpus.current.id == {n}
    assert os.environ["CUDA_DEVICE"] == "{n}"
    ctx = make_default_context()
    assert ctx.device.id == {n}
    ctx.pop()

def test_switches_away():
    gpuhost.select_device(0)

def test_is_back_on_the_chosen_device(gpuhost_device):
    assert gpuhost.gpus.current.id == {n}
    assert gpuhost_device.id == {n}
"""


@pytest.mark.gpus(2)
def test_gpuhost_device_option_runs_every_test_on_that_device(inner):
    inner.makepyfile(test_chosen=CHOSEN.format(n=1))
    run_sub(inner, "--gpuhost-device", "1").assert_outcomes(passed=3)


@pytest.mark.fake
def test_gpuhost_device_option_out_of_range_is_a_usage_error(inner):
    inner.makepyfile(test_x="def test_x(): pass")
    result = run_sub(inner, "--gpuhost-device", "5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --gpuhost-device 5: there is no device 5; the devices "
                                 "are 0 (gpuhost fake H100), 1 (gpuhost fake A100)"])


@pytest.mark.fake
def test_gpuhost_device_option_without_cuda_is_a_usage_error(inner, monkeypatch):
    inner.makepyfile(test_x="def test_x(): pass")
    monkeypatch.setenv("FAKECUDA_DEVICES", "0")
    result = run_sub(inner, "--gpuhost-device", "0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --gpuhost-device 0: CUDA is not usable here: the CUDA "
                                 "driver * is unusable: cuInit failed with "
                                 "CUDA_ERROR_NO_DEVICE (100)*"])


def test_xdist_workers_spread_over_the_devices(inner, tmp_path):
    pytest.importorskip("xdist")
    n = len(gpuhost.gpus)
    out = tmp_path / "seen"
    out.mkdir()
    inner.makepyfile(test_spread="""
        import os
        import gpuhost

        def test_where(gpuhost_device):
            worker = os.environ["PYTEST_XDIST_WORKER"]
            with open(os.path.join(%r, worker), "w") as f:
                f.write("%%d %%d %%s" %% (gpuhost.gpus.current.id,
                                          gpuhost_device.id, os.environ["CUDA_DEVICE"]))
    """ % str(out))
    result = run_sub(inner, "-n", "3", "--dist", "each")
    result.assert_outcomes(passed=3)
    seen = {p.name: p.read_text() for p in out.iterdir()}
    assert seen == {"gw%d" % k: "%d %d %d" % (k % n, k % n, k % n) for k in range(3)}
