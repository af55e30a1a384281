"""gpuhost.compat.cupy: cupy.cuda's low-level names over gpuhost's types (devices, the
current stream, streams, events, the memory API, cuBLAS/cuSOLVER handles, profiler, NVTX).

cuBLAS and cuSOLVER are stood in for by a small C library built here (create/destroy
that count, remember which device's context was current, and can be made to fail).
"""
import ctypes
import gc
import inspect
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import gpuhost
import gpuhost.memory
from gpuhost import CudaDriverError, CudaSupportError, InvalidDeviceError
from gpuhost.compat import cupy as cuda
from gpuhost.compat.cupy import _libs
from conftest import run_python

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# CuPy's device model, tested as CuPy's own tests run: from device 0, moving to device 1
# and back (gpuhost's pytest plugin may give an xdist worker another device).
pytestmark = pytest.mark.usefixtures("device0")


# ---- layout ----

def test_laid_out_like_cupy_cuda():
    import gpuhost.compat.cupy.device
    import gpuhost.compat.cupy.memory
    import gpuhost.compat.cupy.nvtx
    import gpuhost.compat.cupy.pinned_memory
    import gpuhost.compat.cupy.profiler
    import gpuhost.compat.cupy.stream  # noqa: F401
    from gpuhost.compat.cupy import device, memory, nvtx, profiler, stream

    assert cuda.Device is device.Device and cuda.Stream is stream.Stream
    assert cuda.Event is stream.Event and cuda.get_elapsed_time is stream.get_elapsed_time
    assert profiler.start is cuda.profiler.start and nvtx.RangePop is cuda.nvtx.RangePop
    # the memory API is gpuhost.memory's own, not a second implementation: the same
    # objects, or (where CuPy's current stream is the default) subclasses
    for name in ("Memory", "set_allocator", "get_allocator", "using_allocator",
                 "UnownedMemory", "OutOfMemoryError", "PooledMemory"):
        assert getattr(memory, name) is getattr(gpuhost.memory, name)
        assert getattr(cuda, name) is getattr(gpuhost.memory, name)
    for name in ("MemoryPointer", "MemoryPool", "ManagedMemory", "MemoryAsync"):
        assert issubclass(getattr(cuda, name), getattr(gpuhost.memory, name))
    assert cuda.PinnedMemoryPool is gpuhost.memory.PinnedMemoryPool
    for name in cuda.__all__:
        assert hasattr(cuda, name), name


def test_every_public_name_is_documented():
    from gpuhost.compat.cupy import device, driver, memory, nvtx, profiler, runtime, stream

    for mod in (cuda, device, stream, nvtx, profiler, _libs, runtime, driver, memory):
        for name in mod.__all__:
            obj = getattr(mod, name)
            if callable(obj) and not inspect.ismodule(obj):
                assert inspect.getdoc(obj), "%s.%s" % (mod.__name__, name)


def test_packaged():
    tomllib = pytest.importorskip("tomllib")

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        packages = tomllib.load(f)["tool"]["setuptools"]["packages"]
    assert {"gpuhost", "gpuhost.compat", "gpuhost.compat.cupy"} <= set(packages)


# ---- Device ----

@pytest.mark.gpus(2)
def test_device_ids_conversions_and_comparisons():
    assert cuda.Device().id == gpuhost.current_context().device.id == 0
    d1 = cuda.Device(1)
    assert d1.id == 1 and int(d1) == 1 and repr(d1) == "<CUDA Device 1>"
    assert cuda.Device(d1).id == 1 and cuda.Device(gpuhost.gpus[1]).id == 1
    assert cuda.Device(np.int64(1)).id == 1
    assert cuda.Device(0) == cuda.Device() and cuda.Device(0) != d1
    assert cuda.Device(0) < d1 <= cuda.Device(1) and d1 > cuda.Device(0) >= cuda.Device(0)
    assert hash(cuda.Device(1)) == hash(d1) and len({cuda.Device(1), d1}) == 1
    assert (d1 == 1) is False
    with pytest.raises(TypeError):
        cuda.Device(0) < 1
    with pytest.raises(ValueError):
        cuda.Device("one")


def test_compute_capability_is_cupys_string():
    for i in range(len(gpuhost.gpus)):
        major, minor = gpuhost.gpus[i].compute_capability
        cc = cuda.Device(i).compute_capability
        assert cc == "%d%d" % (major, minor) and isinstance(cc, str)
    last = len(gpuhost.gpus) - 1
    assert cuda.Device(last).pci_bus_id == gpuhost.gpus[last].pci_bus_id


@pytest.mark.gpus(2)
def test_with_device_restores_the_previous_device():
    d1 = cuda.Device(1)
    with d1 as entered:
        assert entered is d1
        assert cuda.get_device_id() == 1 and cuda.Device().id == 1
        assert gpuhost.current_context().device.id == 1
        with cuda.Device(0):
            assert cuda.get_device_id() == 0
            with d1:  # the same object again, nested
                assert cuda.get_device_id() == 1
            assert cuda.get_device_id() == 0
        assert cuda.get_device_id() == 1
    assert cuda.get_device_id() == 0


@pytest.mark.gpus(2)
def test_use_inside_with_is_undone_at_exit():
    with cuda.Device(1):
        cuda.Device(0).use()
        assert cuda.get_device_id() == 0
    assert cuda.get_device_id() == 0
    with cuda.Device(0):
        cuda.Device(1).use()
        assert cuda.get_device_id() == 1
    assert cuda.get_device_id() == 0
    cuda.Device(1).use()
    try:
        assert gpuhost.current_context().device.id == 1
    finally:
        cuda.Device(0).use()


@pytest.mark.gpus(2)
def test_with_device_in_a_thread_with_no_context_leaves_none():
    seen = []

    def run():
        seen.append(gpuhost.gpus.current)
        seen.append(cuda.Device().id)  # cudaGetDevice's answer: 0, making no context
        seen.append(gpuhost.gpus.current)
        with cuda.Device(1):
            seen.append(gpuhost.gpus.current.id)
        seen.append(gpuhost.gpus.current)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert seen == [None, 0, None, 1, None]


def test_a_device_that_does_not_exist():
    n = len(gpuhost.gpus) + 5
    d = cuda.Device(n)  # as in CuPy, only using it fails, with the runtime's error
    msg = r"^cudaErrorInvalidDevice: invalid device ordinal$"
    with pytest.raises(cuda.runtime.CUDARuntimeError, match=msg) as info:
        d.use()
    assert info.value.status == 101 and isinstance(info.value, RuntimeError)
    with pytest.raises(cuda.runtime.CUDARuntimeError, match=msg):
        with d:
            pass
    assert cuda.get_device_id() == 0
    for prop in ("compute_capability", "attributes", "pci_bus_id"):
        with pytest.raises(cuda.runtime.CUDARuntimeError, match=msg):
            getattr(d, prop)


def test_device_synchronize_and_mem_info():
    last = len(gpuhost.gpus) - 1
    d1 = cuda.Device(last)
    d1.synchronize()
    assert cuda.get_device_id() == 0
    # the device's free memory moves while other processes (pytest-xdist's workers) allocate:
    # compared where it held still from a reading before to one after
    for _ in range(50):
        with gpuhost.gpus[last]:
            before = gpuhost.current_context().get_memory_info()
            free, total = d1.mem_info
            after = gpuhost.current_context().get_memory_info()
        if before == after:
            break
    assert (free, total) == tuple(before) == tuple(after) and 0 < free <= total


# ---- cuBLAS / cuSOLVER handles ----

FAKE_LIB_C = r"""
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*get_proc_t)(const char *, void **, int, unsigned long long);
typedef int (*ctx_get_device_t)(int *);
static int live, made, fail_status, last_device = -2;

int fake_live(void) { return live; }
int fake_made(void) { return made; }
int fake_last_device(void) { return last_device; }
void fake_fail(int status) { fail_status = status; }

/* the device of the fake driver's current context, -1 if none */
static int current_device(void)
{
    void *drv = dlopen(getenv("GPUHOST_CUDA_DRIVER"), RTLD_NOW | RTLD_NOLOAD);
    get_proc_t get = drv ? (get_proc_t)dlsym(drv, "cuGetProcAddress") : NULL;
    ctx_get_device_t fn = NULL;
    int dev = -1;
    if (get == NULL || get("cuCtxGetDevice", (void **)&fn, 12000, 0) != 0 || fn(&dev) != 0)
        return -1;
    return dev;
}

int CREATE(void **handle)
{
    if (fail_status)
        return fail_status;
    last_device = current_device();
    *handle = (void *)(uintptr_t)(0x1000 * (LIBNO) + ++made);
    live++;
    return 0;
}

int DESTROY(void *handle)
{
    live--;
    printf("destroyed %s 0x%lx\n", NAME, (unsigned long)(uintptr_t)handle);
    fflush(stdout);
    return 0;
}
"""


@pytest.fixture(scope="module")
def fake_libs(tmp_path_factory):
    """Paths of the stand-in libcublas, libcusolver and libcusparse."""
    d = tmp_path_factory.mktemp("fakelibs")
    src = d / "fakelib.c"
    src.write_text(FAKE_LIB_C)
    out = {}
    for key, create, destroy, libno in (("cublas", "cublasCreate_v2", "cublasDestroy_v2", 1),
                                        ("cusolver", "cusolverDnCreate", "cusolverDnDestroy", 2),
                                        ("cusparse", "cusparseCreate", "cusparseDestroy", 3)):
        path = d / ("lib%s.so.99" % key)
        subprocess.run([os.environ.get("CC", "cc"), "-shared", "-fPIC", "-o", str(path),
                        str(src), "-DCREATE=" + create, "-DDESTROY=" + destroy,
                        "-DLIBNO=%d" % libno, '-DNAME="%s"' % key, "-ldl"],
                       check=True)
        out[key] = str(path)
    return out


@pytest.fixture
def use_libs(fake_libs, monkeypatch):
    """The stand-ins, loaded fresh; their handles destroyed after the test."""
    _libs.destroy_handles()  # made by the libraries loaded before
    monkeypatch.setenv("GPUHOST_CUBLAS_LIBRARY", fake_libs["cublas"])
    monkeypatch.setenv("GPUHOST_CUSOLVER_LIBRARY", fake_libs["cusolver"])
    monkeypatch.setenv("GPUHOST_CUSPARSE_LIBRARY", fake_libs["cusparse"])
    for lib in (_libs.CUBLAS, _libs.CUSOLVER, _libs.CUSPARSE):
        monkeypatch.setattr(lib, "lib", None)
    yield {k: ctypes.CDLL(v) for k, v in fake_libs.items()}
    _libs.destroy_handles()


@pytest.mark.fake
@pytest.mark.gpus(2)
def test_handles_are_made_once_per_device_under_its_context(use_libs):
    blas = use_libs["cublas"]
    h0 = cuda.Device(0).cublas_handle
    assert blas.fake_last_device() == 0 and blas.fake_made() == 1
    h1 = cuda.Device(1).cublas_handle
    assert blas.fake_last_device() == 1 and blas.fake_made() == 2
    assert cuda.get_device_id() == 0  # made under device 1's context, which is undone
    assert isinstance(h0, int) and h0 != h1 and h0 & 0xF000 == 0x1000
    assert cuda.Device().cublas_handle == h0 and cuda.get_cublas_handle() == h0
    with cuda.Device(1):
        assert cuda.get_cublas_handle() == h1
    assert blas.fake_made() == 2 and blas.fake_live() == 2

    solver = use_libs["cusolver"]
    s1 = cuda.Device(1).cusolver_handle
    assert solver.fake_last_device() == 1 and s1 & 0xF000 == 0x2000
    assert cuda.Device(1).cusolver_handle == s1 and solver.fake_made() == 1
    assert cuda.get_cusolver_handle() != s1  # device 0's, made now

    _libs.destroy_handles()
    assert blas.fake_live() == 0 and solver.fake_live() == 0
    assert cuda.Device(0).cublas_handle != h0  # a fresh one after destruction


@pytest.mark.fake
def test_handles_are_per_thread_and_die_with_the_thread(use_libs):
    blas, sparse = use_libs["cublas"], use_libs["cusparse"]
    mine = cuda.get_cublas_handle()
    theirs = []

    def body():
        cuda.Device().use()
        theirs.extend([cuda.get_cublas_handle(), cuda.get_cublas_handle(),
                       cuda.device.get_cusparse_handle(), cuda.Device().cusparse_handle])

    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert theirs[0] == theirs[1] != mine and theirs[2] == theirs[3]
    assert theirs[2] & 0xF000 == 0x3000
    gc.collect()
    assert blas.fake_live() == 1 and sparse.fake_live() == 0  # the thread's are destroyed
    assert cuda.get_cublas_handle() == mine


@pytest.mark.fake
@pytest.mark.gpus(2)
def test_handle_creation_failure_raises_the_librarys_status(use_libs):
    use_libs["cublas"].fake_fail(1)
    use_libs["cusolver"].fake_fail(7)
    try:
        with pytest.raises(cuda.CUBLASError,
                           match=r"^cublasCreate_v2 failed: CUBLAS_STATUS_NOT_INITIALIZED \(1\)$") \
                as info:
            cuda.Device(0).cublas_handle
        assert info.value.status == 1 and isinstance(info.value, RuntimeError)
        msg = r"^cusolverDnCreate failed: CUSOLVER_STATUS_INTERNAL_ERROR \(7\)$"
        with pytest.raises(cuda.CUSOLVERError, match=msg):
            cuda.Device(1).cusolver_handle
        assert cuda.get_device_id() == 0
    finally:
        use_libs["cublas"].fake_fail(0)
        use_libs["cusolver"].fake_fail(0)
    assert cuda.Device(0).cublas_handle  # works once the library does
    assert str(cuda.CUBLASError(99)) == "CUBLAS_STATUS_UNKNOWN (99)"


def test_absent_library_names_what_was_tried(monkeypatch, tmp_path):
    missing = str(tmp_path / "libcublas.so.12")
    monkeypatch.setenv("GPUHOST_CUBLAS_LIBRARY", missing)
    monkeypatch.setenv("GPUHOST_CUSOLVER_LIBRARY", str(tmp_path / "nothing.so"))
    _libs.destroy_handles()
    for lib in (_libs.CUBLAS, _libs.CUSOLVER):
        monkeypatch.setattr(lib, "lib", None)
    with pytest.raises(CudaSupportError) as info:
        cuda.Device(0).cublas_handle
    msg = str(info.value)
    assert msg.startswith("cuBLAS (libcublas) could not be loaded; tried:\n  %s (" % missing)
    assert "set GPUHOST_CUBLAS_LIBRARY to the library's path" in msg
    with pytest.raises(CudaSupportError, match=r"cuSOLVER \(libcusolver\) could not be loaded"
                       r"(.|\n)*nothing\.so(.|\n)*GPUHOST_CUSOLVER_LIBRARY"):
        cuda.get_cusolver_handle()
    # a library without the entry points is refused the same way
    monkeypatch.setenv("GPUHOST_CUBLAS_LIBRARY", gpuhost._core.__file__)
    with pytest.raises(CudaSupportError, match="cublasCreate_v2"):
        cuda.get_cublas_handle()


def test_library_search_order(monkeypatch, tmp_path):
    monkeypatch.delenv("GPUHOST_CUBLAS_LIBRARY", raising=False)
    home, wheel = tmp_path / "cuda", tmp_path / "site"
    (home / "lib64").mkdir(parents=True)
    (wheel / "nvidia" / "cublas" / "lib").mkdir(parents=True)
    (home / "lib64" / "libcublas.so.12").write_bytes(b"")
    (wheel / "nvidia" / "cublas" / "lib" / "libcublas.so.12").write_bytes(b"")
    monkeypatch.setenv("CUDA_HOME", str(home))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(sys, "path", [str(wheel)])
    got = _libs.CUBLAS.candidates()
    ours = [p for p in got if p.startswith(str(tmp_path))]
    assert ours == [str(home / "lib64" / "libcublas.so.12"),
                    str(wheel / "nvidia" / "cublas" / "lib" / "libcublas.so.12")]
    assert got[-3:] == ["libcublas.so.13", "libcublas.so.12", "libcublas.so.11"]
    assert got.index(ours[1]) < got.index("libcublas.so.13")
    monkeypatch.setenv("GPUHOST_CUBLAS_LIBRARY", "/x/libcublas.so")
    assert _libs.CUBLAS.candidates() == ["/x/libcublas.so"]


@pytest.mark.fake
@pytest.mark.gpus(2)
def test_handles_are_left_to_the_process_at_exit(fake_libs):
    """Destroying cuBLAS handles at exit crashed a process whose CUDA runtime or context
    was gone already: they are left for the driver to reclaim, and the exit is clean."""
    code = ("from gpuhost.compat import cupy as cuda\n"
            "print('made', hex(cuda.Device(0).cublas_handle), hex(cuda.Device(1).cublas_handle),"
            " hex(cuda.Device(1).cusolver_handle), flush=True)\n")
    res = run_python(code, env={"GPUHOST_CUBLAS_LIBRARY": fake_libs["cublas"],
                                "GPUHOST_CUSOLVER_LIBRARY": fake_libs["cusolver"]})
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["made 0x1001 0x1002 0x2001"]  # nothing destroyed
    assert "Warning" not in res.stderr and "Traceback" not in res.stderr


# ---- Stream and the current stream ----

def test_null_and_per_thread_singletons():
    null = cuda.Stream.null
    assert null.ptr == 0 and null.device_id == -1 and cuda.Stream(null=True) == null
    assert hash(null) == 0 and repr(null) == "<Stream 0 (device -1)>"
    assert cuda.Stream.ptds.ptr == 2 and cuda.Stream(ptds=True) == cuda.Stream.ptds
    assert null != cuda.Stream.ptds and null.__cuda_stream__() == (0, 0)
    null.synchronize()
    assert null.done is True and cuda.Stream.ptds.done is True
    assert null._gpuhost() == gpuhost.default_stream()


@pytest.mark.gpus(2)
def test_default_stream_singletons_are_the_current_devices():
    with cuda.Device(1):
        assert cuda.Stream.null._gpuhost().device is gpuhost.gpus[1]
        assert cuda.Stream.ptds._gpuhost().device is gpuhost.gpus[1]
    assert cuda.Stream.null._gpuhost().device is gpuhost.gpus[0]


def test_new_streams():
    s = cuda.Stream()
    assert s.ptr == s._gpuhost().handle != 0 and s.device_id == 0
    assert repr(s) == "<Stream %d (device 0)>" % s.ptr and hash(s) == s.ptr
    assert s.is_non_blocking is False and cuda.Stream(non_blocking=True).is_non_blocking
    assert s != cuda.Stream() and s == s and (s == 5) is False
    assert s.priority == 0
    with pytest.raises(ValueError, match="stream priority 99 is out of range"):
        cuda.Stream(priority=99)


@pytest.mark.gpus(2)
def test_streams_belong_to_the_current_device():
    with cuda.Device(1):
        s1 = cuda.Stream()
    assert s1.device_id == 1 and s1._gpuhost().device is gpuhost.gpus[1]
    # ExternalStream (deprecated in CuPy 14, and here) binds the stream to the device given
    with pytest.warns(DeprecationWarning, match="ExternalStream is deprecated"):
        ext1 = cuda.ExternalStream(s1.ptr, 1)
    assert ext1._gpuhost().device is gpuhost.gpus[1] and cuda.get_device_id() == 0


def test_with_stream_makes_it_current_and_restores():
    s, t = cuda.Stream(), cuda.Stream()
    assert cuda.get_current_stream() is cuda.Stream.null
    with s as entered:
        assert entered is s and cuda.get_current_stream() is s
        assert cuda.get_current_stream(0) is s
        with t:
            assert cuda.get_current_stream() is t
        assert cuda.get_current_stream() is s
    assert cuda.get_current_stream() is cuda.Stream.null
    assert s.use() is s
    try:
        assert cuda.get_current_stream() is s
        with t:
            assert cuda.get_current_stream() is t
        # as CuPy: leaving a with-block restores the stream of the enclosing with-block
        # (the default stream outside all); a stream made current by use() is forgotten
        assert cuda.get_current_stream() is cuda.Stream.null
        with s:
            t.use()
            u = cuda.Stream()
            with u:
                assert cuda.get_current_stream() is u
                del t  # the current stream outlives its last name
            assert cuda.get_current_stream() is s
    finally:
        cuda.Stream.null.use()
    assert cuda.get_current_stream() is cuda.Stream.null


@pytest.mark.gpus(2)
def test_current_stream_is_per_device_and_per_thread():
    with cuda.Device(1):
        s1 = cuda.Stream()
        with s1:
            assert cuda.get_current_stream() is s1
            assert cuda.get_current_stream(1) is s1
            assert cuda.get_current_stream(0) is cuda.Stream.null
            with cuda.Stream.null:  # a singleton goes to the current device
                assert cuda.get_current_stream(1) is cuda.Stream.null
            assert cuda.get_current_stream(1) is s1
    # per thread: test_compat_cupy_api.test_current_stream_is_per_thread


@pytest.mark.gpus(2)
def test_a_stream_of_another_device_cannot_be_made_current():
    s0 = cuda.Stream()
    with cuda.Device(1):
        msg = r"^The device that the stream is created on \(0\) does not match with the " \
              r"current device \(1\)$"
        with pytest.raises(RuntimeError, match=msg):
            with s0:
                pass
        with pytest.raises(RuntimeError, match=msg):
            s0.use()
        assert cuda.get_current_stream() is cuda.Stream.null


@pytest.mark.fake
def test_callbacks_get_the_stream_status_and_arg(fake):
    s = cuda.Stream()
    calls = []
    fake.gate_close()
    s.add_callback(lambda stream, status, arg: calls.append((stream, status, arg)), "first")
    s.launch_host_func(lambda arg: calls.append(arg), ["second"])
    assert s.done is False and calls == []
    threading.Timer(0.05, fake.gate_open).start()
    s.synchronize()
    assert s.done is True
    assert calls == [(s, 0, "first"), ["second"]] and calls[0][0] is s
    with pytest.raises(TypeError, match="callback must be callable, not int"):
        s.add_callback(3, None)
    with pytest.raises(TypeError, match="callback must be callable, not str"):
        s.launch_host_func("f", None)
    with pytest.raises(TypeError):
        s.add_callback(lambda *a: None)  # arg is required, as in CuPy


def test_gpuhost_functions_take_these_streams():
    s = cuda.Stream(non_blocking=True)
    host = np.random.default_rng().standard_normal(1000)
    dev = gpuhost.to_device(host, stream=s)
    back = dev.copy_to_host(stream=s)
    s.synchronize()
    np.testing.assert_array_equal(back, host)
    ev = gpuhost.event()
    ev.record(s)
    ev.synchronize()
    ext = cuda.Stream.from_external(s)
    assert ext.ptr == s.ptr and ext.device_id == -1 and ext == s
    back = gpuhost.to_device(host, stream=ext).copy_to_host(stream=ext)
    ext.synchronize()
    np.testing.assert_array_equal(back, host)
    del ext
    s.synchronize()  # the external wrapper never destroyed the stream


# ---- Event ----

def test_event_flags_follow_cupy():
    ev = cuda.Event()
    assert ev._event.timing is True  # CuPy's events time by default
    assert ev.ptr == ev._event.handle and isinstance(ev.ptr, int)
    assert cuda.Event(disable_timing=True)._event.timing is False
    assert cuda.Event(block=True)._event.timing is True
    ipc = cuda.Event(disable_timing=True, interprocess=True)
    assert ipc._event.ipc_handle() is not None
    with pytest.raises(ValueError, match="^Timing must be disabled for interprocess events$"):
        cuda.Event(interprocess=True)
    with pytest.raises(ValueError, match="^Timing must be disabled for interprocess events$"):
        cuda.Event(block=True, interprocess=True)
    assert repr(ev) == "<Event %d (device 0)>" % ev.ptr


def test_record_synchronize_done_and_elapsed_time():
    s = cuda.Stream()
    start = s.record()
    assert isinstance(start, cuda.Event) and start._event.recorded
    end = cuda.Event()
    assert s.record(end) is end
    end.synchronize()
    assert start.done is True and end.done is True
    ms = cuda.get_elapsed_time(start, end)
    assert type(ms) is float and ms >= 0
    assert cuda.Event().done is True  # never recorded
    s.wait_event(end)
    s.wait_event(end._event)  # a gpuhost Event too
    with pytest.raises(TypeError, match="event must be a cupy-style Event, not str"):
        s.wait_event("e")


def test_record_defaults_to_the_current_stream():
    ev = cuda.Event()
    with cuda.Stream() as s:
        ev.record()
    ev.synchronize()
    assert ev._event.recorded and ev.done
    ev.record(gpuhost.stream())  # a gpuhost stream is taken as well
    assert s.done


@pytest.mark.gpus(2)
def test_record_uses_the_current_stream_of_the_current_device():
    ev = cuda.Event()
    # device 1's current stream refuses device 0's event: it is the one record() took
    with cuda.Device(1):
        with cuda.Stream():
            with pytest.raises(CudaDriverError,
                               match="the event is on device 0 but the stream is device 1's"):
                ev.record()


def test_elapsed_time_errors():
    untimed, timed, never = cuda.Event(disable_timing=True), cuda.Event(), cuda.Event()
    untimed.record()
    timed.record()
    timed.synchronize()
    with pytest.raises(CudaDriverError, match="the start event was made with timing=False"):
        cuda.get_elapsed_time(untimed, timed)
    with pytest.raises(CudaDriverError, match="the end event was never recorded"):
        cuda.get_elapsed_time(timed, never)
    with pytest.raises(TypeError, match="event must be a cupy-style Event, not int"):
        cuda.get_elapsed_time(timed, 0)


# ---- memory (gpuhost.memory's API through this module) ----

def test_allocator_pool_and_pointers_through_compat():
    pool = cuda.MemoryPool()
    cuda.set_allocator(pool.malloc)
    try:
        assert cuda.get_allocator() == pool.malloc
        host = np.random.default_rng().integers(0, 2**31, 4096, dtype=np.int32)
        p = cuda.alloc(host.nbytes)
        assert isinstance(p, cuda.MemoryPointer) and pool.used_bytes() == host.nbytes
        s = cuda.Stream()
        p.copy_from_host_async(host.ctypes.data, host.nbytes, s)  # a compat stream
        s.synchronize()
        out = np.empty_like(host)
        (p + 400).copy_to_host(out.ctypes.data, host.nbytes - 400)
        np.testing.assert_array_equal(out[:-100], host[100:])
        p.memset(0x7F, 64)
        p.copy_to_host(out.ctypes.data, 64)
        assert (out[:16] == 0x7F7F7F7F).all()
        del p
        assert pool.n_free_blocks() == 1 and pool.free_bytes() == host.nbytes
        q = cuda.alloc(host.nbytes)
        assert pool.n_free_blocks() == 0
        del q
        pool.free_all_blocks()
        assert pool.n_free_blocks() == 0 and pool.total_bytes() == 0
        with pytest.warns(DeprecationWarning, match="free_all_free is deprecated"):
            pool.free_all_free()
        m = cuda.Memory(1024)
        assert m.size == 1024 and m.device_id == 0 and m.ptr != 0
    finally:
        cuda.set_allocator(gpuhost.memory.get_default_memory_pool().malloc)


# ---- profiler and NVTX ----

@pytest.mark.fake
def test_profiler_and_profile(fake):
    cuda.profiler.start()
    assert fake.profiler_state() == 1
    cuda.profiler.stop()
    assert fake.profiler_state() == 0
    with cuda.profile():
        assert fake.profiler_state() == 1
    assert fake.profiler_state() == 0
    with pytest.raises(ZeroDivisionError):
        with cuda.profile():
            1 / 0
    assert fake.profiler_state() == 0


def test_profiler_initialize_is_gone_since_cuda_12():
    assert (cuda.profiler.cudaKeyValuePair, cuda.profiler.cudaCSV) == (0, 1)
    with pytest.raises(RuntimeError, match="^cudaProfilerInitialize no longer available in "
                                           r"CUDA 12\+$"):
        cuda.profiler.initialize("cfg", "out", cuda.profiler.cudaCSV)


def test_nvtx_names():
    nvtx = cuda.nvtx
    assert nvtx.available is True
    assert nvtx.Mark("m") is None and nvtx.Mark("m", 3) is None and nvtx.Mark("m", 13) is None
    assert nvtx.MarkC("m", 0xFF123456) is None and nvtx.MarkC("m") is None
    assert nvtx.RangePush("r") is None and nvtx.RangePush("r", 5) is None
    assert nvtx.RangePushC("r", 0x80FFFFFF) is None
    for _ in range(3):
        assert nvtx.RangePop() is None
    assert nvtx._indexed(13) == nvtx._indexed(3) == 0xFFFF0000  # CuPy's fourth color
    assert nvtx._indexed(-1) is None and len(nvtx._COLORS) == 10
    with pytest.raises(TypeError, match="message must be a str, not int"):
        nvtx.Mark(1)
    with pytest.raises(TypeError, match="message must be a str, not bytes"):
        nvtx.RangePushC(b"r", 0)
    with pytest.raises(TypeError, match="id_color must be an int, not float"):
        nvtx.RangePush("r", 1.5)
    with pytest.raises(OverflowError, match="color must be in 0 .. 0xFFFFFFFF, not -1"):
        nvtx.MarkC("m", -1)
    with pytest.raises(TypeError, match=r"color must be an int \(0xAARRGGBB\), not str"):
        nvtx.RangePushC("r", "red")


def test_is_available():
    assert cuda.is_available() is (len(gpuhost.gpus) > 0)


def test_importing_needs_no_driver():
    res = run_python("from gpuhost.compat import cupy as cuda\n"
                     "print(cuda.Stream.null.ptr, cuda.Stream.ptds.ptr, cuda.is_available())\n"
                     "cuda.Device()\n",
                     env={"GPUHOST_CUDA_DRIVER": "/nonexistent/libcuda.so.1"})
    assert res.stdout == "0 2 False\n"
    assert "CudaSupportError" in res.stderr and "/nonexistent/libcuda.so.1" in res.stderr


# ---- on a real GPU ----

@pytest.mark.gpu
def test_real_cublas_and_cusolver_handles():
    try:
        _libs.CUBLAS.load()
        _libs.CUSOLVER.load()
    except CudaSupportError as e:  # a machine without them; creation failures still fail
        pytest.skip(str(e))
    h = cuda.Device(0).cublas_handle
    assert isinstance(h, int) and h != 0
    assert cuda.get_cublas_handle() == h and cuda.Device().cublas_handle == h
    sh = cuda.Device(0).cusolver_handle
    assert isinstance(sh, int) and sh != 0 and sh != h
    assert cuda.get_cusolver_handle() == sh
    # the handle works: cublasGetVersion_v2 through it
    version = ctypes.c_int()
    assert _libs.CUBLAS.lib.cublasGetVersion_v2(ctypes.c_void_p(h), ctypes.byref(version)) == 0
    assert version.value >= 11000


@pytest.mark.gpu
def test_real_elapsed_time_grows_with_work():
    s = cuda.Stream()
    host = np.random.default_rng().standard_normal(1 << 24).astype(np.float32)
    start = s.record()
    dev = gpuhost.to_device(host, stream=s)
    end = s.record()
    end.synchronize()
    ms = cuda.get_elapsed_time(start, end)
    assert type(ms) is float and ms > 0
    np.testing.assert_array_equal(dev.copy_to_host(), host)


def _cupy_usable():
    res = subprocess.run([sys.executable, "-c",
                          "import cupy; assert cupy.cuda.runtime.getDeviceCount() > 0"],
                         capture_output=True, text=True, timeout=120)
    return res.returncode == 0, (res.stderr.strip().splitlines() or [""])[-1]


@pytest.mark.gpu
def test_cupy_host_script_gives_the_same_output_under_both():
    ok, why = _cupy_usable()
    if not ok:
        pytest.skip("cupy is not usable here: %s" % why)
    script = os.path.join(HERE, "scripts", "cupy_host_script.py")
    outs = {}
    for which in ("cupy", "gpuhost"):
        res = subprocess.run([sys.executable, script, which], capture_output=True, text=True,
                             timeout=300, cwd=ROOT)
        assert res.returncode == 0, "%s:\n%s" % (which, res.stderr)
        outs[which] = res.stdout
    assert outs["gpuhost"].splitlines() == outs["cupy"].splitlines()
    assert len(outs["cupy"].splitlines()) > 20


def test_cupy_host_script_runs_here_with_gpuhost():
    """The script's gpuhost run, on whatever driver the suite uses (no cupy needed)."""
    script = os.path.join(HERE, "scripts", "cupy_host_script.py")
    res = subprocess.run([sys.executable, script, "gpuhost"], capture_output=True, text=True,
                         timeout=300, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert "pool: used 1048576 free 0 blocks 0" in lines
    assert "copy round trip: True" in lines
    assert lines[-1] == "done"
