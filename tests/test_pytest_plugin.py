"""gpuhost's pytest plugin (gpuhost/pytest_plugin.py), run on inner test suites with
pytest's pytester: markers, fixtures, the leak check, device choice and xdist.

Inner runs in this process share its driver (the fake one, or the GPU); those that need
another driver set-up, choose a device, or may poison the context run in a subprocess."""
import gc
import os
import sys
from importlib.metadata import entry_points

import numpy as np
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
    on the path of subprocesses.  Not an xdist worker, whatever this run is: the inner
    session is one of its own (the plugin reads the worker count from the environment)."""
    monkeypatch.delenv("CUDA_DEVICE", raising=False)
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT"):
        monkeypatch.delenv(name, raising=False)
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
    a = gpuhost.to_device(np.random.default_rng().random(1000, dtype=np.float32), stream=s)
    e.record(s)
    s.synchronize()
    del s, e, a

def test_keeps_a_stream(gpuhost_leak_check):
    KEEP.append(gpuhost.stream())

def make_an_event():
    return gpuhost.event()

def test_keeps_arrays_and_more(gpuhost_leak_check):
    KEEP.append(gpuhost.device_array(256, np.float64))
    KEEP.append(gpuhost.pinned_array(64, np.int32))
    KEEP.append((gpuhost.stream(), make_an_event()))

def test_keeps_a_pool_block(gpuhost_leak_check):
    pool = gpuhost.memory.MemoryPool()
    KEEP.append(pool.malloc(3000))

def test_a_cycle_is_collected(gpuhost_leak_check):
    cycle = [gpuhost.stream(), gpuhost.device_array(100, np.uint8)]
    cycle.append(cycle)

def test_fails_and_leaks(gpuhost_leak_check):
    KEEP.append(gpuhost.event())
    assert 1 == 2

def test_not_checked():
    KEEP.append([gpuhost.stream()])
"""


def _line(text, snippet):
    """The line number of the line of `text` holding `snippet` (a test file's source)."""
    lines = [n for n, line in enumerate(text.split("\n"), 1) if snippet in line]
    assert len(lines) == 1, snippet
    return lines[0]


PREFIX = ("gpuhost_leak_check: gpuhost objects made during the test are still alive after "
          "it (after gc.collect()): ")


def test_leak_check_fails_tests_that_leave_gpuhost_objects_alive_naming_where_made(inner):
    source = inner.makepyfile(test_leaks=LEAKS).read_text()
    result = run_in(inner)
    result.assert_outcomes(passed=3, failed=4)
    at = {s: _line(source, s) for s in ("KEEP.append(gpuhost.stream())", "device_array(256",
                                       "pinned_array", "make_an_event()))",
                                       "return gpuhost.event()", "pool.malloc",
                                       "KEEP.append(gpuhost.event())")}
    result.stdout.fnmatch_lines([
        PREFIX + "1 stream",
        "    stream made at test_leaks.py:%d in test_keeps_a_stream: <CUDA stream 0x* on "
        "device ?>" % at["KEEP.append(gpuhost.stream())"],
    ])
    # Sorted by kind, then line; an object made through gpuhost's Python (device_array)
    # names the test's line, one made in a helper of the test's file names the helper.
    result.stdout.fnmatch_lines([
        PREFIX + "2 allocations, 1 stream, 1 event",
        "    allocation made at test_leaks.py:%d in test_keeps_arrays_and_more: "
        "<gpuhost.Allocation of 2048 bytes of device memory at 0x* on device ?>, a block of "
        "<gpuhost.Pool of device memory on device ?, cache mode: *>" % at["device_array(256"],
        "    allocation made at test_leaks.py:%d in test_keeps_arrays_and_more: "
        "<gpuhost.Allocation of 256 bytes of pinned memory at 0x*>" % at["pinned_array"],
        "    stream made at test_leaks.py:%d in test_keeps_arrays_and_more: <CUDA stream *>"
        % at["make_an_event()))"],
        "    event made at test_leaks.py:%d in make_an_event: <CUDA event *>"
        % at["return gpuhost.event()"],
    ])
    result.stdout.fnmatch_lines([
        PREFIX + "1 allocation",
        "    allocation made at test_leaks.py:%d in test_keeps_a_pool_block: "
        "<gpuhost.Allocation of 3000 bytes of device memory at 0x* on device ?>, a block of "
        "<gpuhost.Pool of device memory on device ?, cache mode: 3072 bytes in use in 1 "
        "blocks, 0 bytes held in 0 blocks>" % at["pool.malloc"],
    ])
    # A test that failed keeps its own error; what it leaked is shown beside it.
    result.stdout.fnmatch_lines([
        "*assert 1 == 2", "*Captured gpuhost call*", PREFIX + "1 event",
        "    event made at test_leaks.py:%d in test_fails_and_leaks: <CUDA event *>"
        % at["KEEP.append(gpuhost.event())"]])
    # (a warning may name it: free memory that other processes on the device moved)
    assert "test_leaks.py::test_a_cycle_is_collected -" not in result.stdout.str()
    assert "_ test_a_cycle_is_collected _" not in result.stdout.str()


def test_a_long_report_lists_ten_objects_and_counts_the_rest(inner):
    inner.makepyfile(test_many="""
        import gpuhost

        KEEP = []

        def test_keeps_many(gpuhost_leak_check):
            KEEP.extend(gpuhost.event() for _ in range(13))
    """)
    result = run_in(inner)
    result.assert_outcomes(failed=1)
    # The generator's name: <genexpr>, qualified on CPython 3.11+
    result.stdout.fnmatch_lines([PREFIX + "13 events"] + [
        "    event made at test_many.py:6 in *<genexpr>: <CUDA event *>"] * 10
        + ["    ... and 3 more"])


@pytest.mark.fake
def test_leak_check_names_modules_but_not_the_rawkernel_cache(inner):
    # The fake driver loads PTX in its kernels mode: a RawKernel made to give PTX.
    source = inner.makepyfile(test_mods="""
        import ctypes, os
        import pytest
        import gpuhost

        SRC = 'extern "C" __global__ void twice(float *x) { x[threadIdx.x] *= 2.0f; }'
        KEEP = []

        class PtxKernel(gpuhost.RawKernel):
            def compile(self):
                return gpuhost.compile(self.code, "ptx")

        RAW = PtxKernel(SRC, "twice")

        @pytest.fixture(autouse=True)
        def kernels_mode():
            lib = ctypes.CDLL(os.environ["GPUHOST_CUDA_DRIVER"])
            lib.fakecuda_kernels(1)
            yield
            lib.fakecuda_kernels(0)

        def test_rawkernel_loads_once(gpuhost_leak_check):
            assert RAW.kernel.name == "twice"

        def test_keeps_a_module(gpuhost_leak_check):
            KEEP.append(gpuhost.Module(gpuhost.compile(SRC, "ptx")))
    """).read_text()
    result = run_in(inner)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        PREFIX + "1 module",
        "    module made at test_mods.py:%d in test_keeps_a_module: <gpuhost.Module on device ?>"
        % _line(source, "KEEP.append")])


@pytest.mark.fake
def test_an_object_made_outside_python_code_is_reported_so(inner):
    # A thread started on a C function runs no Python frame.
    inner.makepyfile(test_thread="""
        import _thread, time
        import gpuhost

        KEEP = []

        def test_thread_made(gpuhost_leak_check):
            done = _thread.allocate_lock()
            done.acquire()
            _thread.start_new_thread(KEEP.extend, (map(gpuhost.event, [True]),))
            while not KEEP:
                time.sleep(0.001)
    """)
    result = run_in(inner)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([PREFIX + "1 event",
                                 "    event made outside Python code: <CUDA event *>"])


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
        PREFIX + "1 allocation; the device's free memory fell by 1.0 MiB during the test "
        "(tolerance 0.0 MiB: --gpuhost-leak-tolerance)",
        "    allocation made at test_mem.py:7 in test_leaks_a_mebibyte: *"])
    # Within the default tolerance only the allocation is reported.
    result = run_in(inner)
    result.assert_outcomes(failed=1)
    assert "free memory" not in result.stdout.str()


FOREIGN_MEBIBYTE = """
    import ctypes, os

    KEEP = []

    def test_another_library_keeps_a_mebibyte(gpuhost_leak_check):
        lib = ctypes.CDLL(os.environ["GPUHOST_CUDA_DRIVER"])  # as torch or CuPy would
        fn, ptr = ctypes.c_void_p(), ctypes.c_uint64()
        assert lib.cuGetProcAddress_v2(b"cuMemAlloc", ctypes.byref(fn), 12000, 0, None) == 0
        alloc = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t)(fn.value)
        assert alloc(ctypes.byref(ptr), 2**20) == 0
        KEEP.append(ptr)
"""
FELL = ("gpuhost_leak_check: the device's free memory fell by 1.0 MiB during the test "
        "(tolerance 0.0 MiB: --gpuhost-leak-tolerance)")


@pytest.fixture
def fresh_nvml(monkeypatch):
    """NVML not yet loaded in this process (the inner sessions run in it)."""
    from gpuhost import _nvml

    monkeypatch.setattr(_nvml, "_STATE", {})
    return monkeypatch


@pytest.mark.fake
@pytest.mark.parametrize("nvml", ["alone", "no-library", "no-permission", "nobody-listed"])
def test_leak_check_blames_the_test_for_fallen_free_memory_unless_others_use_the_device(
        inner, fresh_nvml, nvml, tmp_path):
    """The fall counts when NVML says this process is alone on the device, and where it
    cannot tell: it is the only sign of memory another library kept."""
    if nvml == "no-library":
        fresh_nvml.setenv("GPUHOST_NVML", str(tmp_path / "libnvidia-ml.so.1"))
    elif nvml == "no-permission":
        fresh_nvml.setenv("FAKENVML_FAIL", "processes")
    elif nvml == "nobody-listed":
        fresh_nvml.setenv("FAKENVML_PROCESSES", "")
    inner.makepyfile(test_foreign=FOREIGN_MEBIBYTE)
    result = run_in(inner, "--gpuhost-leak-tolerance=1000")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([FELL])


@pytest.mark.fake
@pytest.mark.parametrize("processes, others", [("self:0,4242:1000", "1 other process uses"),
                                               ("7:0,8:0,9:0", "2 other processes use")])
def test_leak_check_does_not_blame_the_test_for_other_processes_memory(
        inner, fresh_nvml, processes, others):
    """Free memory is the whole device's: with other processes on it (NVML's list; in a
    container its pids are the host's, so this process may not be found by its pid), a fall
    is a warning, not the test's failure."""
    fresh_nvml.setenv("FAKENVML_PROCESSES", processes)
    inner.makepyfile(test_foreign=FOREIGN_MEBIBYTE)
    result = run_in(inner, "--gpuhost-leak-tolerance=1000")
    assert result.parseoutcomes()["passed"] == 1 and "failed" not in result.parseoutcomes()
    result.stdout.fnmatch_lines([
        "*PytestWarning: " + FELL + ", but " + others + " the device (NVML says): not "
        "counted against this test, whose gpuhost objects were checked"])


@pytest.mark.fake
def test_leak_check_still_fails_what_gpuhost_kept_when_others_use_the_device(
        inner, fresh_nvml):
    fresh_nvml.setenv("FAKENVML_PROCESSES", "self:0,4242:1000")
    inner.makepyfile(test_mem="""
        import gpuhost
        import numpy as np

        KEEP = []

        def test_leaks_a_mebibyte(gpuhost_leak_check):
            KEEP.append(gpuhost.device_array(2**20, np.uint8))
    """)
    result = run_in(inner, "--gpuhost-leak-tolerance=1000")
    assert result.parseoutcomes()["failed"] == 1
    result.stdout.fnmatch_lines([PREFIX + "1 allocation",
                                 "    allocation made at test_mem.py:7 in test_leaks_a_mebibyte: *"])


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


ARM_STICKY = """
    import ctypes, os

    def arm_sticky():
        # Every later cuCtxSynchronize and cuMemGetInfo fails with error 700, as after a
        # kernel faulted.
        lib = ctypes.CDLL(os.environ["GPUHOST_CUDA_DRIVER"])
        lib.fakecuda_fail.argtypes = [ctypes.c_char_p, ctypes.c_long, ctypes.c_int,
                                      ctypes.c_long]
        for name in (b"cuCtxSynchronize", b"cuMemGetInfo"):
            assert lib.fakecuda_fail(name, 1, 700, -1) == 0
"""


@pytest.mark.fake
def test_a_sticky_error_fails_the_test_that_made_it_and_the_next_says_so(inner):
    # In a subprocess: the faults stay.
    inner.makepyfile(test_sticky=ARM_STICKY + """
    def test_breaks_it(gpuhost_leak_check):
        arm_sticky()

    def test_unchecked():
        pass

    def test_next(gpuhost_leak_check):
        pass
    """)
    result = run_sub(inner)
    result.assert_outcomes(passed=1, failed=1, errors=1)
    result.stdout.fnmatch_lines([
        "gpuhost_leak_check: an asynchronous CUDA error surfaced when the test's work was "
        "synchronized at its end: cuCtxSynchronize failed: [[]700] CUDA_ERROR_ILLEGAL_ADDRESS: "
        "an illegal memory access was encountered (a kernel faulted: this error is sticky*"])
    result.stdout.fnmatch_lines([
        "gpuhost_leak_check: no usable context for the test: make_default_context(): none of the "
        "2 devices gave a usable context (device 0: cuMemGetInfo failed: [[]700] "
        "CUDA_ERROR_ILLEGAL_ADDRESS: * this error is sticky*"])
    assert "Traceback" not in result.stdout.str()
    result.stdout.fnmatch_lines(["FAILED test_sticky.py::test_breaks_it*",
                                 "ERROR test_sticky.py::test_next*"])


@pytest.mark.fake
def test_a_context_broken_before_the_test_body_fails_it_saying_so(inner):
    # A fixture set up after gpuhost_leak_check breaks the context: the check cannot take
    # stock and says why, instead of raising from the plugin.
    inner.makepyfile(test_sticky=ARM_STICKY + """
    import pytest

    @pytest.fixture
    def breaks_it():
        arm_sticky()

    def test_after_a_breaking_fixture(gpuhost_leak_check, breaks_it):
        pass
    """)
    result = run_sub(inner)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "gpuhost_leak_check: the context was already unusable when the test began (an "
        "earlier test or fixture broke it): cuMemGetInfo failed: [[]700] "
        "CUDA_ERROR_ILLEGAL_ADDRESS: * this error is sticky*",
        "FAILED test_sticky.py::test_after_a_breaking_fixture*"])
    assert "Traceback" not in result.stdout.str()


@pytest.mark.gpu
def test_leak_check_on_the_gpu_counts_modules_but_not_kernel_caches(inner):
    inner.makepyfile(test_mods="""
        import gpuhost
        import numpy as np
        import pytest

        SRC = 'extern "C" __global__ void twice(float *x) { x[threadIdx.x] *= 2.0f; }'
        RAW = gpuhost.RawKernel(SRC, "twice")
        KEEP = []

        @gpuhost.jit
        def add_one(x):
            i = gpuhost.grid(1)
            if i < x.size:
                x[i] += 1

        def test_rawkernel_loads_once(gpuhost_leak_check):
            x = gpuhost.to_device(np.ones(32, np.float32))
            RAW((1,), (32,), (x,))
            assert (x.copy_to_host() == 2).all()

        def test_jit_loads_once(gpuhost_leak_check):
            pytest.importorskip("numba_cuda", reason="gpuhost.jit needs numba-cuda")
            x = gpuhost.to_device(np.arange(32, dtype=np.float32))
            add_one[1, 32](x)
            assert (x.copy_to_host() == np.arange(1, 33)).all()

        def test_copy_kernel_loads_once(gpuhost_leak_check):
            host = np.random.default_rng().random((64, 64))
            d = gpuhost.to_device(host)
            assert (d[::2, ::3].copy_to_host() == host[::2, ::3]).all()

        def test_keeps_a_module(gpuhost_leak_check):
            KEEP.append(gpuhost.SourceModule(SRC))
    """)
    result = run_in(inner)
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == 1 and outcomes["passed"] + outcomes.get("skipped", 0) == 3
    result.stdout.fnmatch_lines([PREFIX + "1 module",
                                 "    module made at test_mods.py:* in test_keeps_a_module: "
                                 "<gpuhost.Module on device ?>"])


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


# ---- the leak check's cost and safety: gpuhost's records, never the heap ----

def test_live_counts_are_exact_and_follow_the_objects():
    from gpuhost import _core
    from gpuhost.pytest_plugin import live_counts

    _core._release_pool_blocks()
    before = live_counts()
    assert set(before) == {"Allocation", "Stream", "Event", "Module"}
    stream = gpuhost.stream()
    n = int(np.random.default_rng().integers(2, 9))
    keep = [stream, [gpuhost.event() for _ in range(n)],
            gpuhost.device_array(8, stream=stream)]
    keep.append(keep[-1][2:])  # a view: the same allocation
    counts = live_counts()
    assert {k: counts[k] - before[k] for k in counts} == {
        "Allocation": 1, "Stream": 1, "Event": n, "Module": 0}
    del stream, keep
    # The pool holds the freed block, and with it its stream, for reuse.
    assert live_counts()["Stream"] == before["Stream"] + 1
    assert _core._release_pool_blocks() >= 512
    assert live_counts() == before


INSTRUMENTED_GC = """
import gc
import pytest

COLLECTIONS = []

def pytest_configure(config):
    real_collect = gc.collect

    def refused(*args, **kwargs):
        raise AssertionError("the leak check walked the heap")

    def counted(*args, **kwargs):
        COLLECTIONS.append(1)
        return real_collect(*args, **kwargs)

    for name in ("get_objects", "get_referents", "get_referrers"):
        setattr(gc, name, refused)
    gc.collect = counted


@pytest.fixture
def collections():
    return COLLECTIONS
"""


def test_leak_check_never_walks_the_heap_and_collects_only_for_survivors(inner, monkeypatch):
    # gc.get_objects / get_referents / get_referrers raise, gc.collect is counted: a clean
    # test costs no collection, one whose objects survive the pools' release costs one.
    for name in ("get_objects", "get_referents", "get_referrers", "collect"):
        monkeypatch.setattr(gc, name, getattr(gc, name))  # restored after the inner run
    inner.makeconftest(INSTRUMENTED_GC)
    inner.makepyfile(test_gc="""
        import gpuhost
        import numpy as np

        KEEP = []

        def test_clean(gpuhost_leak_check, collections):
            s = gpuhost.stream()
            d = gpuhost.to_device(np.random.default_rng().random(100), stream=s)
            s.synchronize()
            del d, s   # the pool keeps d's block, and s, until the check gives it back

        def test_clean_again(gpuhost_leak_check, collections):
            assert collections == []

        def test_cycle(gpuhost_leak_check, collections):
            cycle = [gpuhost.event()]
            cycle.append(cycle)

        def test_after_cycle(gpuhost_leak_check, collections):
            assert len(collections) == 1

        def test_leak(gpuhost_leak_check):
            KEEP.append(gpuhost.event())

        def test_after_leak(collections):
            assert len(collections) == 2
    """)
    result = run_in(inner)
    result.assert_outcomes(passed=5, failed=1)
    result.stdout.fnmatch_lines([PREFIX + "1 event"])


HOSTILE = """
import gc
import gpuhost

class Hostile:
    # An object that cannot be inspected: every attribute, its class, repr and comparison raise.
    def __getattribute__(self, name):
        raise RuntimeError("no attribute for you: " + name)
    def __repr__(self):
        raise RuntimeError("no repr")
    def __eq__(self, other):
        raise RuntimeError("no comparison")
    __hash__ = None

class HostileType(type):
    def __instancecheck__(cls, obj):
        raise RuntimeError("no isinstance")
    def __subclasscheck__(cls, sub):
        raise RuntimeError("no issubclass")

class Opaque(metaclass=HostileType):
    pass

HEAP = [Hostile() for _ in range(10)] + [Opaque() for _ in range(10)]
KEEP = []

def test_with_hostile_objects_around(gpuhost_leak_check):
    s = gpuhost.stream()
    cycle = [Hostile(), Opaque(), s]
    cycle.append(cycle)   # a collection runs, with the hostile objects in a cycle

def test_leaks_beside_hostile_objects(gpuhost_leak_check):
    KEEP.append((Hostile(), gpuhost.event(), Opaque()))
"""


def test_leak_check_never_raises_on_objects_it_cannot_inspect(inner):
    source = inner.makepyfile(test_hostile=HOSTILE).read_text()
    result = run_in(inner)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([PREFIX + "1 event",
                                 "    event made at test_hostile.py:%d in "
                                 "test_leaks_beside_hostile_objects: <CUDA event *>"
                                 % _line(source, "KEEP.append")])
    assert "RuntimeError" not in result.stdout.str()


def test_a_leaked_object_whose_repr_fails_is_still_named():
    from gpuhost.pytest_plugin import _leak_lines

    class Unshowable:
        def __repr__(self):
            raise ValueError("no")

    headline, lines = _leak_lines([("Stream", Unshowable(), "/r/t.py", 3, "test_x")], 0, "/r/")
    assert "gpuhost_leak_check: " + headline == PREFIX + "1 stream"
    assert lines == ["    stream made at t.py:3 in test_x: <Unshowable object (repr() raised "
                     "ValueError)>"]
    headline, lines = _leak_lines([], 2, "/r/")
    assert "gpuhost_leak_check: " + headline == PREFIX + "2 made while memory ran out, not recorded"
    assert lines == []


ASYNC_THEN_CHECKED = """
import asyncio
import gpuhost
import numpy as np

def test_awaits_a_future():
    async def main():
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        loop.call_soon(fut.set_result, 7)
        return await fut
    assert asyncio.run(main()) == 7

def test_awaits_a_stream():
    async def copy_back(d, s):
        h = d.copy_to_host(stream=s)
        await s.async_done()
        return h
    host = np.random.default_rng().random(64)
    s = gpuhost.stream()
    assert (asyncio.run(copy_back(gpuhost.to_device(host, stream=s), s)) == host).all()

def test_checked(gpuhost_leak_check):
    gpuhost.stream().synchronize()

def test_checked_with_a_cycle(gpuhost_leak_check):
    cycle = [gpuhost.stream()]
    cycle.append(cycle)

KEEP = []

def test_checked_and_leaking(gpuhost_leak_check):
    KEEP.append(gpuhost.stream())

def test_collects_last():
    import gc
    gc.collect()
"""


def test_an_awaited_future_then_a_leak_check_does_not_hang(inner):
    # CPython 3.12.0-3.12.5 (gh-122695): after asyncio awaited a future, walking the
    # _asyncio module's references (gc.get_referents) corrupts its free list and the next
    # gc.collect() loops for ever.  The check must not walk it; a regression fails here
    # after the timeout instead of hanging the suite.  In a subprocess, for the timeout.
    inner.makepyfile(test_after_asyncio=ASYNC_THEN_CHECKED)
    try:
        result = inner.runpytest_subprocess(*BASE, timeout=90)
    except inner.TimeoutExpired:
        pytest.fail("the leak check hung after an awaited asyncio future (on CPython %s: "
                    "gh-122695)" % sys.version.split()[0])
    result.assert_outcomes(passed=5, failed=1)
    result.stdout.fnmatch_lines([PREFIX + "1 stream"])


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
