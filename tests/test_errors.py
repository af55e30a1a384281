"""gpuhost.errors: numba-compatible classes, attributes, messages and pickling; the C core
raising those very classes, registered once, without importing anything."""
import os
import pickle

import pytest

import gpuhost
from conftest import run_python
from gpuhost import errors


def test_hierarchy_matches_numba():
    assert issubclass(errors.CudaSupportError, ImportError)
    assert issubclass(errors.CudaAPIError, errors.CudaDriverError)
    assert issubclass(errors.CudaOutOfMemoryError, errors.CudaAPIError)
    assert issubclass(errors.CudaOutOfMemoryError, MemoryError)
    assert issubclass(errors.InvalidDeviceError, errors.CudaDriverError)
    assert issubclass(errors.InvalidDeviceError, IndexError)
    assert issubclass(errors.NvrtcSupportError, errors.NvrtcError)
    assert issubclass(errors.NvrtcSupportError, ImportError)


def test_top_level_reexports_are_the_same_classes():
    for name in errors.__all__:
        assert getattr(gpuhost, name) is getattr(errors, name)


def test_cuda_api_error_attributes_and_message():
    e = errors.CudaAPIError(2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory", "cuMemAlloc")
    assert (e.code, e.name, e.msg, e.call) == (2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory",
                                              "cuMemAlloc")
    assert str(e) == "cuMemAlloc failed: [2] CUDA_ERROR_OUT_OF_MEMORY: out of memory"


def test_cuda_api_error_pickles_with_its_attributes():
    e = errors.CudaOutOfMemoryError(2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory", "cuMemAlloc")
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is errors.CudaOutOfMemoryError
    assert (back.code, back.name, back.msg, back.call) == (e.code, e.name, e.msg, e.call)
    assert str(back) == str(e)


def test_nvrtc_error_carries_log_code_and_name():
    e = errors.NvrtcError("compile failed", code=6, name="NVRTC_ERROR_COMPILATION", log="x.cu(1)")
    assert (e.code, e.name, e.log) == (6, "NVRTC_ERROR_COMPILATION", "x.cu(1)")
    assert str(e) == "compile failed"
    s = errors.NvrtcSupportError("no libnvrtc")
    assert s.log == "" and isinstance(s, ImportError)


def test_driver_failure_raises_cuda_api_error_naming_the_call(fake):
    ctx = gpuhost.current_context()
    fake.fail("cuCtxSynchronize", 700)
    with pytest.raises(errors.CudaAPIError) as info:
        ctx.synchronize()
    e = info.value
    assert (e.code, e.name, e.call) == (700, "CUDA_ERROR_ILLEGAL_ADDRESS", "cuCtxSynchronize")
    assert str(e).startswith("cuCtxSynchronize failed: [700] CUDA_ERROR_ILLEGAL_ADDRESS: ")
    assert e.msg  # the driver's own description
    ctx.synchronize()  # the fault was for one call only


def test_out_of_memory_is_a_memory_error(fake):
    ctx = gpuhost.current_context()
    fake.fail("cuMemGetInfo", 2)
    with pytest.raises(MemoryError) as info:
        ctx.get_memory_info()
    assert isinstance(info.value, errors.CudaOutOfMemoryError)
    assert info.value.name == "CUDA_ERROR_OUT_OF_MEMORY"
    assert info.value.call == "cuMemGetInfo"


def test_unknown_result_code_still_raises_with_a_name(fake):
    ctx = gpuhost.current_context()
    fake.fail("cuCtxSynchronize", 12345)
    with pytest.raises(errors.CudaAPIError) as info:
        ctx.synchronize()
    assert info.value.code == 12345
    assert info.value.name == "CUDA_ERROR_12345"


# ---- the classes the C core raises: gpuhost.errors' own, handed over once ----

@pytest.mark.parametrize("code, cls", [
    (1, errors.CudaAPIError),            # CUDA_ERROR_INVALID_VALUE
    (2, errors.CudaOutOfMemoryError),    # CUDA_ERROR_OUT_OF_MEMORY
    (700, errors.CudaAPIError),          # CUDA_ERROR_ILLEGAL_ADDRESS
    (900, errors.StreamCaptureError),    # CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, first of them
    (908, errors.StreamCaptureError),    # CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, last of them
    (999, errors.CudaAPIError),          # CUDA_ERROR_UNKNOWN
    (12345, errors.CudaAPIError),        # a code cuda.h does not name
])
def test_a_driver_failure_raises_the_very_class_of_gpuhost_errors(fake, code, cls):
    ctx = gpuhost.current_context()
    fake.fail("cuCtxSynchronize", code)
    with pytest.raises(BaseException) as info:
        ctx.synchronize()
    assert type(info.value) is cls
    assert (info.value.code, info.value.call) == (code, "cuCtxSynchronize")


def test_gpuhost_own_checks_raise_the_very_classes_of_gpuhost_errors(fake):
    with pytest.raises(BaseException) as info:
        gpuhost._core.get_device(99)
    assert type(info.value) is errors.InvalidDeviceError
    e = gpuhost.event(timing=False)
    e.record()
    with pytest.raises(BaseException) as info:
        e.elapsed_time(e)
    assert type(info.value) is errors.CudaDriverError
    with pytest.raises(BaseException) as info:
        gpuhost.stream().end_capture()
    assert type(info.value) is errors.StreamCaptureError


def test_a_library_that_does_not_load_raises_the_very_class_of_gpuhost_errors(tmp_path):
    code = (
        "import gpuhost\n"
        "from gpuhost import _core, errors\n"
        "for call, cls in ((_core.driver_version, errors.CudaSupportError),\n"
        "                  (_core.nvrtc_version, errors.NvrtcSupportError),\n"
        "                  (_core.nccl_version, errors.NcclSupportError)):\n"
        "    try:\n"
        "        call()\n"
        "    except BaseException as e:\n"
        "        print(type(e) is cls, type(e).__name__)\n"
    )
    proc = run_python(code, {"GPUHOST_CUDA_DRIVER": str(tmp_path / "libcuda.so.1"),
                             "GPUHOST_NVRTC": str(tmp_path / "libnvrtc.so.13"),
                             "GPUHOST_NCCL": str(tmp_path / "libnccl.so.2")})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n") == ["True CudaSupportError", "True NvrtcSupportError",
                                       "True NcclSupportError", ""]


# Everything the error paths need is made while imports work; then gpuhost.errors leaves
# sys.modules and any import fails: the errors raised are still gpuhost.errors' classes.
NO_IMPORT_SCRIPT = """
import builtins, ctypes, os, sys
import gpuhost
from gpuhost import _core, errors
import gpuhost.nccl as nccl

fake = ctypes.CDLL(os.environ["GPUHOST_CUDA_DRIVER"])
fake.fakecuda_fail.argtypes = [ctypes.c_char_p, ctypes.c_long, ctypes.c_int, ctypes.c_long]
ctx = _core.current_context()
stream = _core.stream()
fnccl = None
if nccl.is_available():
    _core.nccl_version()  # loads libnccl while imports work
    fnccl = ctypes.CDLL(_core.nccl_library())
results = []


def expect(cls, call):
    try:
        call()
    except BaseException as e:
        results.append("%s %s" % (type(e) is cls, type(e).__name__))
    else:
        results.append("nothing raised")


def refuse(name, *args, **kwargs):
    raise AssertionError("an error path imported %s" % name)


real_import = builtins.__import__
del sys.modules["gpuhost.errors"]
builtins.__import__ = refuse
try:
    fake.fakecuda_fail(b"cuCtxSynchronize", 1, 700, 1)
    expect(errors.CudaAPIError, ctx.synchronize)
    fake.fakecuda_fail(b"cuCtxSynchronize", 1, 2, 1)
    expect(errors.CudaOutOfMemoryError, ctx.synchronize)
    fake.fakecuda_fail(b"cuCtxSynchronize", 1, 901, 1)
    expect(errors.StreamCaptureError, ctx.synchronize)
    expect(errors.InvalidDeviceError, lambda: _core.get_device(99))
    expect(errors.StreamCaptureError, stream.end_capture)
    if fnccl is not None:
        fnccl.fakenccl_fail(b"GetVersion", 4)
        expect(errors.NcclError, _core.nccl_version)
finally:
    builtins.__import__ = real_import
print("\\n".join(results))
"""


def test_raising_imports_nothing_not_even_gpuhost_errors(fake):
    proc = run_python(NO_IMPORT_SCRIPT)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split()
    assert lines[:10] == ["True", "CudaAPIError", "True", "CudaOutOfMemoryError",
                          "True", "StreamCaptureError", "True", "InvalidDeviceError",
                          "True", "StreamCaptureError"], proc.stdout
    assert lines[10:] in ([], ["True", "NcclError"]), proc.stdout


def test_raising_before_the_classes_are_registered_is_a_clear_runtime_error():
    # gpuhost._core alone: a package object stands in for gpuhost, whose __init__.py (which
    # imports gpuhost.errors, which registers the classes) never runs.
    code = (
        "import sys, types\n"
        "package = types.ModuleType('gpuhost')\n"
        "package.__path__ = [%r]\n"
        "sys.modules['gpuhost'] = package\n"
        "from gpuhost import _core\n"
        "try:\n"
        "    _core.get_device(99)\n"
        "except RuntimeError as e:\n"
        "    print(type(e).__name__, e)\n"
    ) % os.path.dirname(os.path.abspath(gpuhost.__file__))
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (
        "RuntimeError gpuhost._core cannot raise InvalidDeviceError: gpuhost.errors never "
        "registered its exception classes (import gpuhost, not gpuhost._core alone)\n")


def _all_classes():
    return {name: getattr(errors, name) for name in errors.__all__ if not name.endswith("Warning")}


@pytest.mark.parametrize("change, message", [
    ({"Nope": ValueError}, "no exception is called 'Nope'"),
    ({"CudaAPIError": 3}, "3 is not an exception class"),
    ({"CudaAPIError": None}, "None is not an exception class"),
    ({"NcclError": "missing"}, "NcclError is missing"),
])
def test_set_exceptions_refuses_bad_registrations_and_keeps_the_classes(fake, change, message):
    classes = _all_classes()
    for name, cls in change.items():
        if cls == "missing":
            del classes[name]
        else:
            classes[name] = cls
    with pytest.raises(TypeError, match=message):
        gpuhost._core._set_exceptions(**classes)
    with pytest.raises(TypeError, match="keyword arguments only"):
        gpuhost._core._set_exceptions(errors.CudaAPIError)
    fake.fail("cuCtxSynchronize", 1)
    with pytest.raises(BaseException) as info:
        gpuhost.current_context().synchronize()
    assert type(info.value) is errors.CudaAPIError
