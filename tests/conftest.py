"""Test set-up: choose the driver the suite runs against, and the markers.

GPUHOST_TEST_DRIVER=fake runs everything over tests/fakecuda (the real extension code
over a test double of libcuda); =real runs on the machine's GPU. Unset: real if a GPU
answers, else fake.  The choice is made before gpuhost loads the driver, through the
same variable a user would set (GPUHOST_CUDA_DRIVER).
"""
import ctypes
import os
import subprocess
import sys
import threading

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "fakecuda"))
import build as fakecuda_build  # noqa: E402
from fake_control import FakeDriver  # noqa: E402  (the fake's control API, through ctypes)


def _real_gpu_count():
    """Devices a real libcuda.so.1 reports, or 0; probed with ctypes, not gpuhost."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        count = ctypes.c_int(0)
        if lib.cuInit(0) != 0 or lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
            return 0
        return count.value
    except OSError:
        return 0


REAL_GPU = _real_gpu_count() > 0  # whether this machine's libcuda.so.1 has a device

# Compiled kernels are cached on disk: the suite's go to a directory of its own (also
# for the processes it starts), never the user's ~/.cache/gpuhost.
if "GPUHOST_CACHE_DIR" not in os.environ:
    import atexit
    import shutil
    import tempfile

    os.environ["GPUHOST_CACHE_DIR"] = tempfile.mkdtemp(prefix="gpuhost-test-cache-")
    atexit.register(shutil.rmtree, os.environ["GPUHOST_CACHE_DIR"], True)


def _choose_driver():
    choice = os.environ.get("GPUHOST_TEST_DRIVER", "")
    if choice not in ("", "fake", "real"):
        raise pytest.UsageError("GPUHOST_TEST_DRIVER must be 'fake' or 'real', not %r" % choice)
    if choice == "real" or (choice == "" and REAL_GPU):
        os.environ.pop("GPUHOST_CUDA_DRIVER", None)
        return "real", None
    path = fakecuda_build.build()
    os.environ["GPUHOST_CUDA_DRIVER"] = path
    # NCCL over the fake driver is its test double (a real libnccl needs the real driver)
    os.environ.setdefault("GPUHOST_NCCL", fakecuda_build.nccl_path())
    # and NVML (which the leak check asks who else uses a device) is its test double too
    os.environ["GPUHOST_NVML"] = fakecuda_build.nvml_path()
    os.environ.setdefault("FAKECUDA_DEVICES", "2")
    return "fake", path


DRIVER, FAKE_PATH = _choose_driver()
# Running under AddressSanitizer (.ci/run's sanitizer step preloads its runtime).
SANITIZED = "libasan" in os.environ.get("LD_PRELOAD", "")
os.environ["GPUHOST_TEST_DRIVER"] = DRIVER  # subprocesses started by tests inherit it


def pytest_report_header(config):
    if DRIVER == "fake":
        return "gpuhost driver: fake (%s)" % FAKE_PATH
    return "gpuhost driver: real libcuda"


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a real CUDA GPU; skipped on the fake driver")
    config.addinivalue_line("markers", "gpus(n): needs at least n devices")
    config.addinivalue_line("markers", "fake: runs only on the fake driver (fault injection)")
    config.addinivalue_line("markers", "no_sanitizer(reason): skipped under AddressSanitizer")
    config.addinivalue_line("markers", "resets_context: frees what gpuhost made in this "
                                       "process (Context.reset); runs after the other tests "
                                       "(see below)")


def pytest_collection_modifyitems(session, config, items):
    """The tests that free what gpuhost made in this process (Context.reset(), which leaves
    the context, shared with CuPy and PyTorch, alive) run last, in their order: what other
    tests' modules made at import stays valid for them.  pytest-xdist hands tests out in
    collection order, so in every worker they come after the others too.  A test that
    resets a device (Device.reset, numba's driver.reset) does it in a process of its own,
    never in this one: that would end CuPy's and PyTorch's state here, and CuPy's handles
    can crash the process when they are freed at its exit."""
    items.sort(key=lambda item: item.get_closest_marker("resets_context") is not None)


def _device_count():
    import gpuhost

    return len(gpuhost.gpus) if gpuhost.is_available() else 0


def pytest_runtest_setup(item):
    if item.get_closest_marker("gpu") and DRIVER != "real":
        pytest.skip("needs a real GPU (running on the fake driver)")
    if item.get_closest_marker("fake") and DRIVER != "fake":
        pytest.skip("needs the fake driver (fault injection)")
    marker = item.get_closest_marker("no_sanitizer")
    if marker is not None and SANITIZED:
        pytest.skip("not under AddressSanitizer: %s" % marker.args[0])
    marker = item.get_closest_marker("gpus")
    if marker is not None:
        need = marker.args[0]
        have = _device_count()
        if have < need:
            pytest.skip("needs %d devices, %d found" % (need, have))


@pytest.fixture
def fake():
    """The fake driver's controls; the test is skipped on a real GPU."""
    if DRIVER != "fake":
        pytest.skip("needs the fake driver (fault injection)")
    drv = FakeDriver(FAKE_PATH)
    drv.clear_faults()
    yield drv
    drv.gate_open()
    drv.clear_faults()


@pytest.fixture
def fake_kernels(fake):
    """The fake driver's controls with its kernels mode on for the test (PTX modules load,
    launches are recorded instead of run: read them with fake_kernels.last_launch() or
    fake_last_launch()), off again after it; skipped on a real GPU."""
    fake.kernels(True)
    try:
        yield fake
    finally:
        fake.kernels(False)


@pytest.fixture
def device0(monkeypatch):
    """Pins the test to device 0: its context current for the test (CUDA_DEVICE=0 where
    set), the device current before it current again after.  gpuhost's pytest plugin
    gives each xdist worker a device of its own; most tests run on it, and those about
    device 0 itself, or written as moves between devices 0 and 1, pin it."""
    import gpuhost

    before = gpuhost.gpus.current
    if "CUDA_DEVICE" in os.environ:
        monkeypatch.setenv("CUDA_DEVICE", "0")
    gpuhost.select_device(0)
    yield gpuhost.gpus[0]
    if before is not None and gpuhost.gpus.current is not before:
        gpuhost.select_device(before.id)


def fake_last_launch():
    """(params, dims) of the fake driver's last recorded launch (FakeDriver.last_launch):
    the parameter buffer's bytes and (grid x, y, z, block x, y, z, dynamic shared bytes);
    None if none was recorded since the kernels mode was last switched."""
    return FakeDriver(FAKE_PATH).last_launch()


@pytest.fixture(autouse=True)
def _balanced_context_stack():
    """Every test leaves this thread's context stack as deep as it found it."""
    import gpuhost

    if DRIVER != "fake" or not gpuhost.is_available():
        yield
        return
    drv = FakeDriver(FAKE_PATH)
    gpuhost.current_context()  # the main thread keeps one current context, as numba's does
    before = drv.stack_depth()
    yield
    drv.clear_faults()
    assert drv.stack_depth() == before, "the test left the context stack unbalanced"


def run_python(code, env=None, timeout=120):
    """Run `code` in a fresh interpreter with extra `env`; return CompletedProcess."""
    full = dict(os.environ)
    for key, value in (env or {}).items():
        if value is None:
            full.pop(key, None)
        else:
            full[key] = value
    return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True,
                          text=True, timeout=timeout)


def in_thread(fn):
    """fn() in a new thread (on which no context is current yet): its result, or its
    exception raised here; fails the test if the thread runs past 60 s."""
    box = {}

    def target():
        try:
            box["result"] = fn()
        except BaseException as e:  # handed back to the caller
            box["error"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), "thread hung"
    if "error" in box:
        raise box["error"]
    return box["result"]

class DlpackOnly:
    """Exports `array` through DLPack alone (as JAX does): no CUDA array interface."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()
