"""gpuhost.jit and numba-cuda 0.30's launch-configuration API: the configured launch is the
launch configuration numba.cuda.launchconfig shows while the launch compiles (its dispatcher
the gpuhost Dispatcher, its ``args`` the thread's), ``mark_launch_config_sensitive`` and the
recompilation per configuration it brings, a replaced ``_compile_for_args``; and launches
whose dimensions the driver refuses (a block past ``launch_bounds``), raised as numba
raises them (its CUDAError family, ``CUDA_ERROR_INVALID_VALUE``).

On a GPU the kernels run and count their launches. On the fake driver numba-cuda still
compiles (NVVM needs no GPU): the `jit_device` fixture answers numba's questions to a device
with sm_90, gives gpuhost the PTX instead of a linked cubin, and the fake's kernels mode
loads it and records the launches (it knows ``.maxntid``: a launch past it is the driver's
CUDA_ERROR_INVALID_VALUE).
"""
import pickle
import threading
import types
import warnings

import numpy as np
import pytest

import gpuhost
from conftest import DRIVER, FAKE_PATH, FakeDriver

pytest.importorskip("numba_cuda", reason="gpuhost.jit needs numba-cuda")

from gpuhost import _numba  # noqa: E402

cuda = gpuhost  # kernels below call their module `cuda`, as numba programs do
rng = np.random.default_rng()


@pytest.fixture(autouse=True)
def _quiet_occupancy():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Grid size")
        warnings.filterwarnings("ignore", message=".*Host array used in CUDA kernel")
        yield


class _Device:
    """Counts the kernels that ran: on a GPU, each kernel adds 1 to counter[0] (thread 0);
    on the fake driver, the launches it recorded."""

    def __init__(self, fake):
        self.fake = fake
        self.counter = gpuhost.to_device(np.zeros(1, np.int64))

    def runs(self):
        if self.fake is not None:
            return self.fake.launches()
        gpuhost.synchronize()
        return int(self.counter.copy_to_host()[0])


@pytest.fixture
def jit_device(monkeypatch):
    """A device numba-cuda compiles for and gpuhost launches on (see the module's
    docstring); yields a _Device."""
    if DRIVER != "fake":
        yield _Device(None)
        return
    _numba.load()
    import numba.cuda.codegen as codegen
    import numba.cuda.dispatcher as numba_dispatcher

    # numba asks its own driver for the device's compute capability, binds the cubin it
    # made, and links one: sm_90's PTX instead, for the fake to load.
    monkeypatch.setattr(numba_dispatcher, "get_current_device",
                        lambda: types.SimpleNamespace(compute_capability=(9, 0)))
    monkeypatch.setattr(numba_dispatcher._Kernel, "bind", lambda self: None)
    monkeypatch.setattr(codegen.CUDACodeLibrary, "_ensure_cc",
                        lambda self, cc: cc if cc is not None else (9, 0, "a"))
    monkeypatch.setattr(_numba, "cubin_for", lambda overload, device:
                        overload._codelibrary.get_asm_str(cc=(9, 0)).encode())
    fake = FakeDriver(FAKE_PATH)
    fake.kernels(True)
    try:
        yield _Device(fake)
    finally:
        fake.kernels(False)


def _count_launch(counter):
    if cuda.grid(1) == 0:
        cuda.atomic.add(counter, 0, 1)


def _counter():
    """The device function each kernel here calls to count that it ran (compiled by numba
    on first use: numba-cuda is imported then, not when the tests are collected)."""
    if not hasattr(_counter, "fn"):
        _counter.fn = cuda.jit(device=True)(_count_launch)
    return _counter.fn


class _Stop(Exception):
    """Raised by a replaced _compile_for_args to end a launch after looking at it."""


def _launchconfig():
    from numba.cuda import launchconfig

    return launchconfig


# ---- the configuration while a launch compiles ----

def test_the_configured_launch_is_numbas_launch_configuration_while_it_compiles(jit_device):
    count = _counter()
    launchconfig = _launchconfig()

    @cuda.jit
    def f(counter):
        count(counter)

    seen = {}
    orig = f._compile_for_args

    def wrapped(*args, **kws):
        seen["config"] = launchconfig.current_launch_config()
        seen["args"] = seen["config"].args
        return orig(*args, **kws)

    f._compile_for_args = wrapped
    grid, block = int(rng.integers(1, 5)), int(rng.integers(1, 9)) * 32
    assert launchconfig.current_launch_config() is None
    before = jit_device.runs()
    f[grid, block](jit_device.counter)
    cfg = seen["config"]
    assert cfg.dispatcher is f
    assert (cfg.griddim, cfg.blockdim, cfg.sharedmem) == ((grid, 1, 1), (block, 1, 1), 0)
    assert seen["args"] == (jit_device.counter,)
    assert jit_device.runs() == before + 1
    assert launchconfig.current_launch_config() is None and cfg.args is None
    with pytest.raises(RuntimeError, match="^No launch config set for this thread$"):
        launchconfig.ensure_current_launch_config()


def test_capture_compile_config_sees_it_and_restores_the_dispatcher(jit_device):
    count = _counter()
    launchconfig = _launchconfig()

    @cuda.jit
    def f(counter):
        count(counter)

    original = f._compile_for_args
    with launchconfig.capture_compile_config(f) as capture:
        f[1, 1](jit_device.counter)
    cfg = capture["config"]
    assert cfg is not None and cfg.dispatcher is f and cfg.blockdim == (1, 1, 1)
    assert "_compile_for_args" not in f.__dict__
    assert f._compile_for_args.__self__ is original.__self__
    assert f._compile_for_args.__func__ is original.__func__
    with launchconfig.capture_compile_config(f) as capture:
        f[1, 1](jit_device.counter)  # compiled already: nothing to see
    assert capture["config"] is None


def test_a_replaced_compile_for_args_runs_once_per_compilation(jit_device):
    count = _counter()
    calls = []

    @cuda.jit
    def f(x, counter):
        count(counter)

    orig = f._compile_for_args

    def wrapped(*args, **kws):
        calls.append(tuple(type(a).__name__ for a in args))
        return orig(*args, **kws)

    f._compile_for_args = wrapped
    d = gpuhost.device_array(4, np.float32)
    f[1, 32](d, jit_device.counter)
    f[1, 32](d, jit_device.counter)  # compiled: C launches it
    f[1, 32](gpuhost.device_array(4, np.int16), jit_device.counter)
    assert calls == [("DeviceArray", "DeviceArray")] * 2
    assert len(f.overloads) == 2


def test_mark_launch_config_sensitive_marks_the_kernel_and_recompiles_per_configuration(
        jit_device):
    count = _counter()
    launchconfig = _launchconfig()
    compiled = []

    @cuda.jit
    def f(counter):
        count(counter)

    orig = f._compile_for_args

    def wrapped(*args, **kws):
        cfg = launchconfig.ensure_current_launch_config()
        cfg.dispatcher.mark_launch_config_sensitive()
        assert cfg._is_kernel_launch_config_sensitive()
        compiled.append(cfg.blockdim)
        return orig(*args, **kws)

    f._compile_for_args = wrapped
    before = jit_device.runs()
    f[1, 32](jit_device.counter)
    kernel = next(iter(f.overloads.values()))
    assert kernel.launch_config_sensitive
    f[1, 32](jit_device.counter)  # the same configuration: the same kernel
    f[1, 64](jit_device.counter)  # another: numba compiles it a dispatcher of its own
    f[1, 64](jit_device.counter)
    f[1, 32](jit_device.counter)
    assert compiled == [(32, 1, 1)]  # (the replacement is f's, not the new dispatcher's)
    (key, other), = f._launch_config_specializations.items()
    assert key == ((1, 1, 1), (64, 1, 1), 0) and len(other.overloads) == 1
    assert len(f.overloads) == 1 and jit_device.runs() == before + 5
    assert not f[1, 32]._is_kernel_launch_config_sensitive()  # the mark was the compile's


def test_mark_launch_config_sensitive_outside_a_compilation_or_for_another_kernel():
    launchconfig = _launchconfig()

    @cuda.jit
    def f(a):
        pass

    @cuda.jit
    def g(a):
        pass

    with pytest.raises(RuntimeError, match="^No launch config set for this thread$"):
        f.mark_launch_config_sensitive()
    errors = []

    def wrapped(*args, **kws):
        try:
            g.mark_launch_config_sensitive()
        except RuntimeError as e:
            errors.append(str(e))
        assert launchconfig.current_launch_config().dispatcher is f
        raise _Stop

    f._compile_for_args = wrapped
    with pytest.raises(_Stop):
        f[1, 1](gpuhost.device_array(2))
    assert errors == ["mark_launch_config_sensitive() must be called on the active launch "
                      "configuration's dispatcher"]


def test_launch_arguments_are_each_threads_own():
    launchconfig = _launchconfig()

    @cuda.jit
    def f(x):
        x[0] = 1

    configured = f[1, 1]
    barrier = threading.Barrier(2)
    seen, errors = [], []

    def wrapped(*args, **kws):
        cfg = launchconfig.ensure_current_launch_config()
        barrier.wait(timeout=10)  # both threads compile at once, with one configuration
        seen.append(id(cfg.args[0]))
        assert cfg is configured
        raise _Stop

    f._compile_for_args = wrapped
    arrays = [gpuhost.device_array(1, np.int32), gpuhost.device_array(1, np.int32)]

    def launch(arr):
        try:
            configured(arr)
        except _Stop:
            pass
        except BaseException as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=launch, args=(a,)) for a in arrays]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads)
    assert errors == [] and sorted(seen) == sorted(id(a) for a in arrays)
    assert configured.args is None


_REWRITE_LOG = []
_REWRITE_TARGET = "gpuhost_lcs_rewrite_kernel"


def _register_rewrite():
    """A numba rewrite that reads the launch configuration, as cuda.coop's do (numba-cuda's
    own test_launch_config_sensitive.py has one): it logs the configuration and marks the
    compilation launch-configuration sensitive, for one kernel (by its name) only."""
    if getattr(_register_rewrite, "done", False):
        return
    from numba.cuda.core.rewrites import Rewrite, register_rewrite

    @register_rewrite("after-inference")
    class LaunchConfigRewrite(Rewrite):
        def __init__(self, state):
            super().__init__(state)
            self._done = False

        def match(self, func_ir, block, typemap, calltypes):
            self._block = block
            return func_ir.func_id.func_name == _REWRITE_TARGET and not self._done

        def apply(self):
            cfg = _launchconfig().ensure_current_launch_config()
            _REWRITE_LOG.append((cfg.griddim, cfg.blockdim, cfg.sharedmem))
            cfg.dispatcher.mark_launch_config_sensitive()
            self._done = True
            return self._block

    _register_rewrite.done = True


def test_a_rewrite_reading_the_launch_configuration_compiles_once_per_configuration(
        jit_device):
    count = _counter()
    _register_rewrite()
    _REWRITE_LOG.clear()
    namespace = {"cuda": cuda, "count": count}
    exec("def %s(counter):\n    count(counter)\n" % _REWRITE_TARGET, namespace)
    kernel = cuda.jit(namespace[_REWRITE_TARGET])
    before = jit_device.runs()
    kernel[1, 32](jit_device.counter)
    assert _REWRITE_LOG == [((1, 1, 1), (32, 1, 1), 0)]
    kernel[1, 64, 0, 16](jit_device.counter)
    assert _REWRITE_LOG[1:] == [((1, 1, 1), (64, 1, 1), 16)]
    kernel[1, 32](jit_device.counter)
    kernel[1, 64, 0, 16](jit_device.counter)
    assert len(_REWRITE_LOG) == 2 and jit_device.runs() == before + 4


# ---- launches the driver refuses for their dimensions ----

def _cuda_core_error():
    from cuda.core._utils.cuda_utils import CUDAError

    return CUDAError


@pytest.mark.parametrize("bounds", [128, (128,), (128, 2)])
def test_a_block_past_launch_bounds_is_numbas_cuda_error_invalid_value(jit_device, bounds):
    """numba-cuda 0.30 launches through cuda.core, whose CUDAError the driver's refusal
    becomes ("CUDA_ERROR_INVALID_VALUE: ..."): numba programs catch that; gpuhost's is also
    its CudaAPIError, and nothing is launched."""
    count = _counter()
    CUDAError = _cuda_core_error()

    @cuda.jit(launch_bounds=bounds)
    def f(counter):
        count(counter)

    before = jit_device.runs()
    f[1, 128](jit_device.counter)
    for _ in range(2):  # the slow path, then the C launch of the same arguments' types
        with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE") as info:
            f[1, 256](jit_device.counter)
        err = info.value
        assert isinstance(err, gpuhost.CudaAPIError)
        assert (err.code, err.name) == (1, "CUDA_ERROR_INVALID_VALUE")
        assert str(err) == ("[1] CUDA_ERROR_INVALID_VALUE: block (256, 1, 1) has 256 threads; "
                            "kernel 'test_a_block_past_launch_bounds_is_numbas_cuda_error_"
                            "invalid_value.<locals>.f' allows at most 128 per block")
        f[1, 128](jit_device.counter)
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
        f[1, (16, 16)](jit_device.counter)
    assert jit_device.runs() == before + 3
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err) and str(back) == str(err)


def test_other_dimensions_the_driver_refuses_are_the_same_error(jit_device):
    count = _counter()
    CUDAError = _cuda_core_error()

    @cuda.jit
    def f(counter):
        count(counter)

    dev = gpuhost.get_current_device()
    with pytest.raises(CUDAError, match=r"CUDA_ERROR_INVALID_VALUE: block \(2048, 1, 1\) for "
                                        r"kernel '.*f' is past the device's limits"):
        f[1, 2048](jit_device.counter)
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE: .* bytes of dynamic shared "
                                        "memory is past kernel"):
        f[1, 32, 0, dev.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN + 1](jit_device.counter)


def test_kernels_not_compiled_by_numba_keep_gpuhosts_value_error(fake_kernels):
    """An NVRTC/PTX kernel (gpuhost's own launch API) says it before the launch with a
    ValueError, as it always has: only gpuhost.jit's launches are numba's."""
    ptx = (".version 8.0\n.target sm_90\n.address_size 64\n"
           ".visible .entry bounded(.param .u64 p)\n.maxntid 128, 1, 1\n{\n\tret;\n}\n")
    k = gpuhost.Module(ptx).get_function("bounded")
    assert k.max_threads_per_block == 128  # the fake reads .maxntid, as the driver does
    with pytest.raises(ValueError, match=r"^block \(256, 1, 1\) has 256 threads; kernel "
                                         r"'bounded' allows at most 128 per block$"):
        k[1, 256](np.uint64(0))


@pytest.mark.parametrize("directive, limit", [(".maxntid 128, 1, 1", 128), (".maxntid 96", 96),
                                              (".reqntid 16, 8", 128), ("", 1024),
                                              (".maxntid 4096, 1, 1", 1024)])
def test_the_fake_driver_bounds_a_kernels_threads_by_its_ptx_directives(fake_kernels, directive,
                                                                        limit):
    ptx = (".version 8.0\n.target sm_90\n.address_size 64\n"
           ".visible .entry k(.param .u32 p)\n%s\n{\n\tret;\n}\n"
           ".visible .entry free(.param .u32 p)\n{\n\tret;\n}\n" % directive)
    module = gpuhost.Module(ptx)
    assert module.get_function("k").max_threads_per_block == limit
    assert module.get_function("free").max_threads_per_block == 1024  # its own, not k's


def test_the_fake_driver_refuses_a_malformed_thread_bound(fake_kernels):
    ptx = (".version 8.0\n.target sm_90\n.address_size 64\n"
           ".visible .entry k(.param .u32 p)\n.maxntid 0, 1, 1\n{\n\tret;\n}\n")
    with pytest.raises(gpuhost.CudaAPIError, match="CUDA_ERROR_INVALID_PTX"):
        gpuhost.Module(ptx)
