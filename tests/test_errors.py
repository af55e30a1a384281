"""gpuhost.errors: numba-compatible classes, attributes, messages and pickling."""
import pickle

import pytest

import gpuhost
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
