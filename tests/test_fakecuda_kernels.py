"""The fake driver's kernels mode (tests/fakecuda/fk_module.c, fk_kernel.c): PTX modules
load, and launches are recorded, never run, so the exact parameter bytes gpuhost passes can
be checked.  Fake driver only; the mode is off by default (loading is NOT_SUPPORTED).
"""
import struct

import numpy as np
import pytest

import gpuhost
from conftest import fake_last_launch
from gpuhost import CudaAPIError

pytestmark = pytest.mark.fake

CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701

PTX = r"""//
// hand-written, as NVRTC writes it
//
.version 8.0
.target sm_75
.address_size 64

	// .globl	scalars
.visible .entry scalars(
	.param .u8 scalars_param_0,
	.param .s16 scalars_param_1,
	.param .u32 scalars_param_2,
	.param .u64 scalars_param_3,
	.param .f32 scalars_param_4,
	.param .f64 scalars_param_5,
	.param .s8 scalars_param_6
)
{
	ret;
}

/* .entry commented_out(.param .u32 x) is no kernel */
.visible .entry aggregates(
	.param .u8 aggregates_param_0,
	.param .align 8 .b8 aggregates_param_1[16],
	.param .f32 aggregates_param_2,
	.param .align 4 .b8 aggregates_param_3[12],
	.param .u64 .ptr .global .align 1 aggregates_param_4,
	.param .align 16 .b8 aggregates_param_5[16]
)
{
	ret;
}

.entry nothing()
{
	ret;
}

.weak .entry half_and_byte(.param .b16 h, .param .b8 b, .param .f16 g)
{
	ret;
}
"""

# (offset, size) of each entry's parameters, laid out as cuFuncGetParamInfo reports them
LAYOUT = {
    "scalars": [(0, 1), (2, 2), (4, 4), (8, 8), (16, 4), (24, 8), (32, 1)],
    "aggregates": [(0, 1), (8, 16), (24, 4), (28, 12), (40, 8), (48, 16)],
    "nothing": [],
    "half_and_byte": [(0, 2), (2, 1), (4, 2)],
}


@pytest.fixture
def module(fake_kernels):
    m = gpuhost.Module(PTX)
    yield m
    m.unload()


def test_off_by_default_loading_is_not_supported(fake):
    with pytest.raises(CudaAPIError) as info:
        gpuhost.Module(PTX)
    assert info.value.name == "CUDA_ERROR_NOT_SUPPORTED"
    assert info.value.call == "cuModuleLoadDataEx"
    assert fake.live("modules") == 0
    assert fake.last_launch() is None and fake.launches() == 0


def test_turning_the_mode_off_refuses_loading_again(fake_kernels):
    gpuhost.Module(PTX).unload()
    fake_kernels.kernels(False)
    with pytest.raises(CudaAPIError) as info:
        gpuhost.Module(PTX)
    assert info.value.name == "CUDA_ERROR_NOT_SUPPORTED"


@pytest.mark.parametrize("name", sorted(LAYOUT))
def test_param_info_is_laid_out_from_the_ptx(module, name):
    k = module.get_function(name)
    assert [(offset, size) for offset, size, _ in k.param_info] == LAYOUT[name]


def test_param_kinds_come_from_the_ptx(module):
    assert "".join(p[2] for p in module.get_function("scalars").param_info) == "iiiiffi"
    assert "".join(p[2] for p in module.get_function("aggregates").param_info) == "isfsis"


def test_unknown_and_commented_out_entries_are_not_found(module):
    for name in ("missing", "commented_out"):
        with pytest.raises(CudaAPIError) as info:
            module.get_function(name)
        assert info.value.name == "CUDA_ERROR_NOT_FOUND"
        assert info.value.call == "cuModuleGetFunction"


def test_modules_are_counted_and_unload_frees_them(fake_kernels):
    before = fake_kernels.live("modules")
    m = gpuhost.Module(PTX)
    assert fake_kernels.live("modules") == before + 1
    m.unload()
    assert fake_kernels.live("modules") == before


def test_images_that_are_not_ptx_are_still_not_supported(fake_kernels):
    with pytest.raises(CudaAPIError) as info:
        gpuhost.Module(b"\x7fELF" + b"\x02\x01\x01" + bytes(64))
    assert info.value.name == "CUDA_ERROR_NOT_SUPPORTED"


def test_a_malformed_parameter_list_is_invalid_ptx(fake_kernels):
    bad = ".version 8.0\n.target sm_75\n.visible .entry k(.param .widget x)\n{\nret;\n}\n"
    with pytest.raises(CudaAPIError) as info:
        gpuhost.Module(bad)
    assert info.value.name == "CUDA_ERROR_INVALID_PTX"
    assert "fakecuda" in str(info.value)


def test_attributes_are_plausible_and_settable(module):
    k = module.get_function("scalars")
    assert k.max_threads_per_block == 1024
    assert k.num_regs > 0
    assert k.shared_size_bytes == k.const_size_bytes == k.local_size_bytes == 0
    assert k.ptx_version == 80  # .version 8.0
    dev = gpuhost.get_current_device()
    major, minor = dev.compute_capability
    assert k.binary_version == 10 * major + minor
    assert k.max_dynamic_shared_size_bytes == 49152
    k.max_dynamic_shared_size_bytes = 65536
    assert k.max_dynamic_shared_size_bytes == 65536


def test_integers_and_floats_are_recorded_at_their_offsets(module, fake_kernels):
    k = module.get_function("scalars")
    calls = fake_kernels.calls("cuLaunchKernel")
    k[(2, 3), (32, 4)](200, -12345, 0xDEADBEEF, 2 ** 64 - 2, 1.5, -2.25, -7)
    params, dims = fake_last_launch()
    assert params == struct.pack("<BxhIQfxxxxdb", 200, -12345, 0xDEADBEEF, 2 ** 64 - 2, 1.5,
                                 -2.25, -7)
    assert dims == (2, 3, 1, 32, 4, 1, 0)
    assert fake_kernels.calls("cuLaunchKernel") == calls + 1
    assert fake_kernels.launches() == 1
    name, stream, cooperative, cluster = fake_kernels.last_launch_info()
    assert name == "scalars" and cooperative == 0 and cluster == (0, 0, 0)


def test_numpy_scalars_keep_their_bytes(module):
    k = module.get_function("scalars")
    k[1, 1](np.uint8(7), np.int16(-2), np.uint32(3), np.int64(-4), np.float32(0.1),
            np.float64(np.pi), np.int8(-128))
    params, _ = fake_last_launch()
    assert params == struct.pack("<BxhIqfxxxxdb", 7, -2, 3, -4, np.float32(0.1), np.pi, -128)


def test_aggregates_pointers_and_padding(module):
    k = module.get_function("aggregates")
    a = gpuhost.device_array(16, np.float32)
    pair = np.array([(3, 2.5)], dtype=[("a", "<i4"), ("b", "<f4")])[0]
    three = np.array([(1, 2, 3)], dtype=[("x", "<i4"), ("y", "<i4"), ("z", "<i4")])[0]
    k[4, 64](True, complex(1.5, -2.0), 3, three, a, complex(0.25, 8.0))
    params, dims = fake_last_launch()
    expected = (struct.pack("<B7x", 1) + struct.pack("<dd", 1.5, -2.0) + struct.pack("<f", 3.0)
                + struct.pack("<iii", 1, 2, 3) + struct.pack("<Q", a.ptr)
                + struct.pack("<dd", 0.25, 8.0))
    assert params == expected and len(params) == 64
    assert dims == (4, 1, 1, 64, 1, 1, 0)
    k[1, 1](0, pair.tobytes() + pair.tobytes(), 0.0, three, None, b"\xff" * 16)
    params, _ = fake_last_launch()
    assert params[8:24] == pair.tobytes() * 2 and params[40:48] == bytes(8)
    assert params[48:] == b"\xff" * 16


def test_a_kernel_without_parameters(module):
    module.get_function("nothing")[1, 1]()
    assert fake_last_launch() == (b"", (1, 1, 1, 1, 1, 1, 0))


def test_half_precision_parameters(module):
    # a .b16 is bits (an integer to gpuhost), a .f16 a float
    module.get_function("half_and_byte")[1, 1](np.float16(1.5).view(np.uint16), 9, 0.5)
    params, _ = fake_last_launch()
    assert params == np.float16(1.5).tobytes() + b"\x09\x00" + np.float16(0.5).tobytes()


def test_stream_and_dynamic_shared_memory_are_recorded(module, fake_kernels):
    k = module.get_function("nothing")
    s = gpuhost.stream()
    k[(5, 6, 7), (8, 4, 2), s, 1024]()
    assert fake_last_launch()[1] == (5, 6, 7, 8, 4, 2, 1024)
    assert fake_kernels.last_launch_info()[1] == s.handle


def test_cooperative_and_cluster_launches_go_through_launch_kernel_ex(module, fake_kernels):
    k = module.get_function("scalars")
    args = (1, 2, 3, 4, 5.0, 6.0, 7)
    calls = fake_kernels.calls("cuLaunchKernelEx")
    k.configure(8, 32, cooperative=True)(*args)
    assert fake_kernels.calls("cuLaunchKernelEx") == calls + 1
    params, dims = fake_last_launch()
    assert params == struct.pack("<BxhIQfxxxxdb", *args)
    assert dims == (8, 1, 1, 32, 1, 1, 0)
    assert fake_kernels.last_launch_info()[2:] == (1, (0, 0, 0))
    if gpuhost.get_current_device().compute_capability >= (9, 0):
        k.configure((8, 2), 32, cluster=(4, 2))(*args)
        assert fake_kernels.last_launch_info()[2:] == (0, (4, 2, 1))
        assert fake_kernels.launches() == 2


def test_a_fault_injected_into_the_launch_is_raised_and_nothing_recorded(module, fake_kernels):
    k = module.get_function("scalars")
    fake_kernels.fail("cuLaunchKernel", CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
    with pytest.raises(CudaAPIError) as info:
        k[1, 1](1, 2, 3, 4, 5.0, 6.0, 7)
    assert info.value.name == "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"
    assert info.value.call == "cuLaunchKernel"
    assert fake_kernels.launches() == 0 and fake_last_launch() is None
    k[1, 1](1, 2, 3, 4, 5.0, 6.0, 7)  # the fault was for one call
    assert fake_kernels.launches() == 1


def test_faults_reach_loading_and_lookup(fake_kernels):
    fake_kernels.fail("cuModuleLoadDataEx", CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
    with pytest.raises(CudaAPIError) as info:
        gpuhost.Module(PTX)
    assert info.value.call == "cuModuleLoadDataEx"
    m = gpuhost.Module(PTX)
    fake_kernels.fail("cuFuncGetParamInfo", CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
    with pytest.raises(CudaAPIError) as info:
        m.get_function("scalars")
    assert info.value.call == "cuFuncGetParamInfo"
    m.unload()


def test_launching_into_a_capture_stays_not_supported(module):
    k = module.get_function("nothing")
    s = gpuhost.stream()
    s.begin_capture()
    try:
        with pytest.raises(CudaAPIError) as info:
            k[1, 1, s]()
        assert info.value.name == "CUDA_ERROR_NOT_SUPPORTED"
    finally:
        try:
            s.end_capture()
        except CudaAPIError:
            pass
    assert fake_last_launch() is None


def test_a_function_outlives_the_mode_until_unloaded(fake_kernels):
    m = gpuhost.Module(PTX)
    k = m.get_function("nothing")
    fake_kernels.kernels(False)
    k[1, 1]()
    assert fake_kernels.launches() == 1
    m.unload()
    with pytest.raises(CudaAPIError) as info:
        k[1, 1]()
    assert (info.value.name, info.value.call) == ("CUDA_ERROR_INVALID_HANDLE", "cuLaunchKernel")
    assert "the module was unloaded" in str(info.value)


def test_nvrtc_ptx_is_recorded_byte_for_byte(fake_kernels):
    src = r"""
    struct Pair { int a; float b; };
    extern "C" __global__
    void echo(signed char a, short b, int c, long long d, float e, double f, bool g,
              float2 h, double2 i, Pair p, unsigned char *out) {}
    """
    try:
        ptx = gpuhost.compile_ptx(src, cc=(7, 5))
    except gpuhost.NvrtcSupportError as e:  # no libnvrtc here (an ImportError)
        pytest.skip("NVRTC is not available: %s" % e)
    k = gpuhost.Module(ptx).get_function("echo")
    out = gpuhost.device_array(8, np.uint8)
    pair = np.array([(-5, 0.75)], dtype=[("a", "<i4"), ("b", "<f4")])[0]
    k[1, 1](-3, 1000, -70000, 2 ** 40, 0.5, 1e300, True, complex(1, 2), complex(3, 4), pair, out)
    params, _ = fake_last_launch()
    expected = bytearray(len(params))
    parts = [struct.pack("<b", -3), struct.pack("<h", 1000), struct.pack("<i", -70000),
             struct.pack("<q", 2 ** 40), struct.pack("<f", 0.5), struct.pack("<d", 1e300),
             b"\x01", struct.pack("<ff", 1, 2), struct.pack("<dd", 3, 4), pair.tobytes(),
             struct.pack("<Q", out.ptr)]
    for (offset, size, _), part in zip(k.param_info, parts):
        assert size == len(part)
        expected[offset:offset + size] = part
    assert params == bytes(expected)
    assert [p[0] for p in k.param_info] == [0, 2, 4, 8, 16, 24, 32, 40, 48, 64, 72]
