"""Loading libcuda at run time: search order, and every way a driver can be missing or
unusable.  Each case runs in a fresh interpreter, since the load happens once a process."""
import os

import pytest

from conftest import DRIVER, FAKE_PATH, REAL_GPU, run_python

PROBE = r"""
import gpuhost, sys
print("available", gpuhost.is_available())
try:
    len(gpuhost.gpus)
except gpuhost.CudaSupportError as e:
    assert isinstance(e, ImportError)
    print("error", e)
print("detect", gpuhost.detect(file=sys.stderr))
"""

needs_fake = pytest.mark.skipif(DRIVER != "fake", reason="builds on the fake driver")


def probe(**env):
    proc = run_python(PROBE, env)
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    return lines, proc.stderr


def test_missing_driver_file_is_reported_with_the_path_tried():
    lines, err = probe(GPUHOST_CUDA_DRIVER="/nonexistent/libcuda.so.1")
    assert lines["available"] == "False"
    assert lines["detect"] == "False"
    assert "no CUDA driver library was found" in lines["error"]
    assert "/nonexistent/libcuda.so.1 (from GPUHOST_CUDA_DRIVER)" in lines["error"]
    assert "CUDA driver not usable" in err


def test_numba_variable_is_used_when_gpuhost_variable_is_unset():
    lines, _ = probe(GPUHOST_CUDA_DRIVER=None, NUMBA_CUDA_DRIVER="/nonexistent/numba/libcuda.so")
    assert "/nonexistent/numba/libcuda.so (from NUMBA_CUDA_DRIVER)" in lines["error"]


@needs_fake
def test_gpuhost_variable_takes_precedence_over_numba_variable():
    lines, _ = probe(GPUHOST_CUDA_DRIVER=FAKE_PATH, NUMBA_CUDA_DRIVER="/nonexistent/libcuda.so")
    assert lines["available"] == "True"
    lines, _ = probe(GPUHOST_CUDA_DRIVER=None, NUMBA_CUDA_DRIVER=FAKE_PATH)
    assert lines["available"] == "True"


def test_default_is_libcuda_so_1():
    lines, _ = probe(GPUHOST_CUDA_DRIVER=None, NUMBA_CUDA_DRIVER=None)
    if REAL_GPU:
        assert lines["available"] == "True"
    else:
        assert "libcuda.so.1 (from the system loader's default)" in lines["error"]


STUB = "/usr/local/cuda/lib64/stubs/libcuda.so"


@pytest.mark.skipif(not os.path.exists(STUB), reason="no CUDA toolkit stub library here")
def test_toolkit_stub_library_is_unusable_with_the_drivers_error_name():
    lines, _ = probe(GPUHOST_CUDA_DRIVER=STUB)
    assert lines["available"] == "False"
    assert "CUDA_ERROR_STUB_LIBRARY (34)" in lines["error"]
    assert STUB in lines["error"]


def test_a_library_that_is_not_a_driver_is_refused():
    lines, _ = probe(GPUHOST_CUDA_DRIVER="libm.so.6")
    assert lines["available"] == "False"
    assert "libm.so.6 is not a CUDA driver library" in lines["error"]


@needs_fake
def test_driver_without_devices_reports_no_device():
    lines, _ = probe(FAKECUDA_DEVICES="0")
    assert lines["available"] == "False"
    assert "cuInit failed with CUDA_ERROR_NO_DEVICE (100)" in lines["error"]


@needs_fake
def test_driver_whose_init_fails_reports_the_drivers_error():
    lines, _ = probe(FAKECUDA_INIT_ERROR="999")
    assert "cuInit failed with CUDA_ERROR_UNKNOWN (999)" in lines["error"]


@needs_fake
def test_driver_too_old_is_refused_with_both_versions():
    lines, _ = probe(FAKECUDA_DRIVER_VERSION="11080")
    assert lines["available"] == "False"
    assert "supports CUDA 11.8; gpuhost needs 12.0 or newer" in lines["error"]


def test_import_never_touches_the_driver():
    proc = run_python(
        "import sys, gpuhost\n"
        "import gpuhost.errors, gpuhost.runtime\n"
        "print(gpuhost.is_available.__module__)\n",
        {"GPUHOST_CUDA_DRIVER": "/nonexistent/libcuda.so.1"})
    assert proc.returncode == 0, proc.stderr


@needs_fake
def test_import_does_not_call_into_the_driver():
    code = (
        "import ctypes, os, gpuhost\n"
        "lib = ctypes.CDLL(os.environ['GPUHOST_CUDA_DRIVER'])\n"
        "lib.fakecuda_calls.argtypes = [ctypes.c_char_p]\n"
        "lib.fakecuda_calls.restype = ctypes.c_long\n"
        "print(lib.fakecuda_calls(b'cuInit'))\n"
        "gpuhost.is_available()\n"
        "print(lib.fakecuda_calls(b'cuInit'))\n"
    )
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0", "1"]


def test_driver_version_matches_the_driver():
    import ctypes

    import gpuhost

    version = gpuhost.driver_version()
    if DRIVER == "fake":
        assert version == (13, 0)
    else:
        raw = ctypes.c_int()
        assert ctypes.CDLL("libcuda.so.1").cuDriverGetVersion(ctypes.byref(raw)) == 0
        assert version == (raw.value // 1000, raw.value % 1000 // 10)
    assert gpuhost.runtime.driver_version() == version


def test_calls_that_need_the_driver_raise_support_error_without_one():
    code = (
        "import gpuhost\n"
        "calls = [lambda: gpuhost.gpus[0], gpuhost.current_context, gpuhost.driver_version,\n"
        "         gpuhost.synchronize, lambda: gpuhost.select_device(0), gpuhost.list_devices,\n"
        "         lambda: gpuhost.gpus.current, gpuhost.get_current_device, gpuhost.close]\n"
        "for call in calls:\n"
        "    try:\n"
        "        call()\n"
        "    except gpuhost.CudaSupportError as e:\n"
        "        assert '/nonexistent/x.so' in str(e), e\n"
        "    else:\n"
        "        raise AssertionError(call)\n"
        "print('ok')\n"
    )
    proc = run_python(code, {"GPUHOST_CUDA_DRIVER": "/nonexistent/x.so"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
