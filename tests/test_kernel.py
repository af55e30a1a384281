"""Modules, kernels and launch (csrc/launch/code_image.c, csrc/launch/kernel.c, gpuhost/kernels.py).

Loading and launching need a real GPU; image checks, PTX parsing and the fake driver's
refusal run everywhere.
"""
import re

import numpy as np
import pytest

import gpuhost
from conftest import DlpackOnly
from gpuhost import CudaAPIError
from gpuhost._code_images import ptx_param_types

rng = np.random.default_rng()

SAXPY = r"""
extern "C" __global__
void saxpy(float a, float *x, float *y, float *out, size_t n)
{
    size_t tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid < n) {
        out[tid] = a * x[tid] + y[tid];
    }
}
"""

ECHO = r"""
struct Pair { int a; float b; };
#define PUT(x) { const unsigned char *s = (const unsigned char *)&(x); \
                 for (int q = 0; q < (int)sizeof(x); q++) *o++ = s[q]; }
extern "C" __global__
void echo(signed char a, short b, int c, long long d, unsigned char e, unsigned short f,
          unsigned int g, unsigned long long h, float i, double j, bool k, float2 l,
          double2 m, Pair p, unsigned char *out)
{
    unsigned char *o = out;
    PUT(a) PUT(b) PUT(c) PUT(d) PUT(e) PUT(f) PUT(g) PUT(h) PUT(i) PUT(j) PUT(k) PUT(l)
    PUT(m) PUT(p)
}
"""
ECHO_SIZES = (1, 2, 4, 8, 1, 2, 4, 8, 4, 8, 1, 8, 16, 8)
PAIR = np.dtype([("a", "<i4"), ("b", "<f4")])


def echo_expected(a, b, c, d, e, f, g, h, i, j, k, l, m, p):
    parts = [np.int8(a), np.int16(b), np.int32(c), np.int64(d), np.uint8(e), np.uint16(f),
             np.uint32(g), np.uint64(h), np.float32(i), np.float64(j), np.uint8(k),
             np.array([l.real, l.imag], np.float32), np.array([m.real, m.imag], np.float64),
             np.array([p], PAIR)]
    return b"".join(np.asarray(x).tobytes() for x in parts)


def random_echo_args():
    def signed(bits):
        return int(rng.integers(-2 ** (bits - 1), 2 ** (bits - 1), dtype=np.int64))

    def unsigned(bits):
        return int(rng.integers(0, 2 ** bits - 1, dtype=np.uint64, endpoint=True))

    return (signed(8), signed(16), signed(32), signed(64), unsigned(8), unsigned(16),
            unsigned(32), unsigned(64), float(np.float32(rng.standard_normal())),
            float(rng.standard_normal()), bool(rng.integers(2)),
            complex(np.float32(rng.standard_normal()), np.float32(rng.standard_normal())),
            complex(rng.standard_normal(), rng.standard_normal()),
            (int(rng.integers(-1000, 1000)), float(np.float32(rng.standard_normal()))))


@pytest.fixture(scope="module")
def echo():
    return gpuhost.SourceModule(ECHO, no_extern_c=True).get_function("echo")


def run_echo(echo, args):
    out = gpuhost.device_array(sum(ECHO_SIZES) + 8, np.uint8)
    *scalars, p = args
    echo[1, 1](*scalars, np.array([p], PAIR)[0], out)
    return out.copy_to_host()[:sum(ECHO_SIZES)].tobytes()


# ---- everywhere: images and PTX ----

def test_ptx_param_types_read_kinds_sizes_and_alignment():
    ptx = gpuhost.compile_ptx(ECHO, cc=(7, 5))
    types = ptx_param_types(ptx.decode())["echo"]
    assert [t[1] for t in types] == list(ECHO_SIZES) + [8]
    assert "".join(t[0] for t in types) == "iiiiiiiiffisssi"
    assert types[12] == ("s", 16, 16) and types[11] == ("s", 8, 8) and types[13] == ("s", 8, 4)


def test_ptx_param_types_of_a_kernel_without_parameters():
    ptx = '.version 8.0\n.target sm_75\n.address_size 64\n.visible .entry nothing()\n{\nret;\n}\n'
    assert ptx_param_types(ptx) == {"nothing": ()}


@pytest.mark.parametrize("image, exc, text", [
    (b"", ValueError, "empty"),
    (b"\x00\x01garbage", ValueError, "is not PTX, a cubin or a fatbin"),
    (b"\xed\x43\x4e\x7f" + b"\0" * 16, ValueError, "LTO-IR"),
    (12345, TypeError, "Module() takes PTX"),
])
def test_module_refuses_what_is_not_an_image(image, exc, text):
    with pytest.raises(exc) as info:
        gpuhost.Module(image)
    assert text in str(info.value)


def test_module_from_a_missing_path_names_it(tmp_path):
    path = tmp_path / "missing.cubin"
    with pytest.raises(FileNotFoundError) as info:
        gpuhost.Module(path)
    assert str(path) in str(info.value)


def test_linker_needs_inputs_and_known_kinds(tmp_path):
    with pytest.raises(ValueError, match="nothing to link"):
        gpuhost.Linker().complete()
    (tmp_path / "x.bin").write_bytes(b"123")
    with pytest.raises(ValueError, match="cannot tell the kind"):
        gpuhost.Linker().add_file(tmp_path / "x.bin")
    with pytest.raises(ValueError, match="kind must be one of"):
        gpuhost.Linker().add_file(tmp_path / "x.bin", kind="elf")
    with pytest.raises(ValueError, match="empty"):
        gpuhost.Linker().add_ptx("")


@pytest.mark.fake
def test_fake_driver_refuses_to_load_modules(fake):
    ptx = gpuhost.compile_ptx(SAXPY, cc=(7, 5))
    with pytest.raises(CudaAPIError) as info:
        gpuhost.Module(ptx)
    assert info.value.name == "CUDA_ERROR_NOT_SUPPORTED"
    assert info.value.call == "cuModuleLoadDataEx"
    link = gpuhost.Linker()
    link.add_ptx(ptx)
    with pytest.raises(CudaAPIError) as info:
        link.complete()
    assert info.value.name == "CUDA_ERROR_NOT_SUPPORTED"
    assert info.value.call == "cuLinkCreate"


# ---- on a GPU ----

@pytest.mark.gpu
def test_saxpy_as_in_the_cuda_python_overview():
    # Compile with NVRTC, load, copy in asynchronously on a stream, launch, copy back.
    ptx = gpuhost.compile_ptx_for_current_device(SAXPY, options=("-fmad=false",))
    module = gpuhost.Module(ptx)
    saxpy = module.get_function("saxpy")
    num_threads, num_blocks = 512, 32768
    n = num_threads * num_blocks
    a = np.float32(rng.standard_normal())
    h_x = rng.standard_normal(n, dtype=np.float32)
    h_y = rng.standard_normal(n, dtype=np.float32)
    stream = gpuhost.stream()
    d_x = gpuhost.to_device(h_x, stream=stream)
    d_y = gpuhost.to_device(h_y, stream=stream)
    d_out = gpuhost.device_array(n, np.float32, stream=stream)
    saxpy[num_blocks, num_threads, stream](a, d_x, d_y, d_out, np.uint64(n))
    h_out = d_out.copy_to_host(stream=stream)
    stream.synchronize()
    np.testing.assert_array_equal(h_out, a * h_x + h_y)  # no FMA contraction: exact


@pytest.mark.gpu
def test_saxpy_with_python_numbers_and_pycuda_call_style():
    saxpy = gpuhost.SourceModule(SAXPY, no_extern_c=True,
                                 options=("-fmad=false",)).get_function("saxpy")
    n = int(rng.integers(1000, 5000))
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    d_x, d_y, d_out = gpuhost.to_device(x), gpuhost.to_device(y), gpuhost.device_array_like(x)
    saxpy(3, d_x, d_y, d_out, n, grid=(n + 127) // 128, block=(128, 1, 1))
    np.testing.assert_array_equal(d_out.copy_to_host(), np.float32(3) * x + y)
    gpuhost.launch(saxpy, (n + 255) // 256, 256, -0.5, d_x, d_y, d_out, n)
    np.testing.assert_array_equal(d_out.copy_to_host(), np.float32(-0.5) * x + y)


@pytest.mark.gpu
@pytest.mark.parametrize("make", ["mapped_array", "managed_array"])
def test_mapped_and_managed_arrays_go_to_kernels_as_they_are(make):
    """As in numba: a kernel reads and writes mapped and managed memory directly; a plain
    numpy array is still refused."""
    saxpy = gpuhost.SourceModule(SAXPY, no_extern_c=True,
                                 options=("-fmad=false",)).get_function("saxpy")
    n = int(rng.integers(1000, 5000))
    x = getattr(gpuhost, make)(n, np.float32)
    out = getattr(gpuhost, make)(n, np.float32)
    x[:] = rng.standard_normal(n, dtype=np.float32)
    out[:] = 7
    y = gpuhost.to_device(rng.standard_normal(n, dtype=np.float32))
    saxpy[(n + 127) // 128, 128](2.5, x, y, out, n)
    gpuhost.synchronize()
    np.testing.assert_array_equal(out, np.float32(2.5) * x + y.copy_to_host())
    with pytest.raises(TypeError, match="parameter 1 .* cannot take a host array"):
        saxpy[1, 1](2.5, np.asarray(x).copy(), y, out, n)


@pytest.mark.gpu
def test_modules_take_weak_references_as_numbas_do():
    import gc
    import weakref

    module = gpuhost.Module(gpuhost.compile_ptx_for_current_device(SAXPY,
                                                                   options=("-fmad=false",)))
    proxy = weakref.proxy(module)  # numba's Context.create_module_ptx hands out a proxy
    saxpy = proxy.get_function("saxpy")
    n = int(rng.integers(1000, 5000))
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    d_x, d_y, d_out = gpuhost.to_device(x), gpuhost.to_device(y), gpuhost.device_array_like(x)
    saxpy[(n + 127) // 128, 128](np.float32(1.5), d_x, d_y, d_out, np.uint64(n))
    np.testing.assert_array_equal(d_out.copy_to_host(), np.float32(1.5) * x + y)
    ref = weakref.ref(module)
    del module, saxpy
    gc.collect()
    assert ref() is None
    with pytest.raises(ReferenceError):
        proxy.handle


@pytest.mark.gpu
def test_every_python_number_reaches_the_kernel_with_its_exact_bits(echo):
    for _ in range(5):
        args = random_echo_args()
        assert run_echo(echo, args) == echo_expected(*args)


@pytest.mark.gpu
def test_range_edges_of_integer_parameters(echo):
    args = list(random_echo_args())
    args[:8] = [-128, -32768, -2 ** 31, -2 ** 63, 255, 65535, 2 ** 32 - 1, 2 ** 64 - 1]
    assert run_echo(echo, args) == echo_expected(*args)
    args[6], args[7] = -1, -1  # a negative value to an unsigned parameter: two's complement
    got = run_echo(echo, args)
    assert got[18:22] == b"\xff" * 4 and got[22:30] == b"\xff" * 8


@pytest.mark.gpu
def test_numpy_scalars_and_ints_for_float_parameters(echo):
    args = list(random_echo_args())
    expected = echo_expected(*args)
    typed = [np.int8(args[0]), np.int16(args[1]), np.int32(args[2]), np.int64(args[3]),
             np.uint8(args[4]), np.uint16(args[5]), np.uint32(args[6]), np.uint64(args[7]),
             np.float32(args[8]), np.float64(args[9]), np.bool_(args[10]),
             np.complex64(args[11]), np.complex128(args[12]), args[13]]
    assert run_echo(echo, typed) == expected
    args[8], args[9] = 7, -3  # ints to float and double parameters are converted
    got = run_echo(echo, args)
    assert got[30:34] == np.float32(7).tobytes() and got[34:42] == np.float64(-3).tobytes()


@pytest.mark.gpu
@pytest.mark.parametrize("index, value, exc, text", [
    (0, 256, OverflowError, "parameter 0 (a 1-byte integer) cannot hold 256"),
    (1, -32769, OverflowError, "parameter 1 (a 2-byte integer) cannot hold -32769"),
    (2, 2 ** 32, OverflowError, "parameter 2 (a 4-byte integer) cannot hold 4294967296"),
    (7, 2 ** 64, OverflowError, "parameter 7 (a 8-byte integer) cannot hold"),
    (2, 1.5, TypeError, "echo(): parameter 2 (a 4-byte integer or pointer) cannot take float"),
    (8, 1e39, OverflowError, "parameter 8 (a 4-byte float) cannot hold 1e+39"),
    (8, np.float64(1.0), TypeError, "parameter 8 is 4 bytes; got 8 bytes of numpy.float64"),
    (2, np.float32(1.0), TypeError, "parameter 2 (a 4-byte integer or pointer) cannot take a"),
    (8, np.int32(1), TypeError, "parameter 8 (a 4-byte floating-point) cannot take a"),
    (13, b"1234", TypeError, "parameter 13 is 8 bytes; got 4 bytes of bytes"),
    (13, 5, TypeError, "parameter 13 (a 8-byte struct) cannot take int"),
    (14, np.zeros(4, np.uint8), TypeError, "cannot take a host array"),
    (14, "text", TypeError, "parameter 14 (a 8-byte integer or pointer) cannot take str"),
    (9, object(), TypeError, "parameter 9 (a 8-byte floating-point) cannot take"),
])
def test_bad_arguments_name_the_kernel_and_parameter(echo, index, value, exc, text):
    args = list(random_echo_args())
    *scalars, p = args
    full = scalars + [np.array([p], PAIR)[0], gpuhost.device_array(64, np.uint8)]
    full[index] = value
    with pytest.raises(exc) as info:
        echo[1, 1](*full)
    assert text in str(info.value)


@pytest.mark.gpu
def test_wrong_argument_count_is_a_type_error(echo):
    with pytest.raises(TypeError, match=r"echo\(\) takes 15 arguments, got 2"):
        echo[1, 1](1, 2)


@pytest.mark.gpu
@pytest.mark.parametrize("grid, block, exc, text", [
    (1, (32, 64), ValueError, "block (32, 64, 1) has 2048 threads; kernel 'saxpy' allows at most"),
    (1, (1, 1, 128), ValueError, "block (1, 1, 128) for kernel 'saxpy' is past the device's limits"),
    ((1, 70000), 32, ValueError, "grid (1, 70000, 1) for kernel 'saxpy' is past the device's limits"),
    (0, 32, ValueError, "grid dimensions must be between 1 and"),
    (1, (1, 2, 3, 4), ValueError, "block must have 1 to 3 dimensions, not 4"),
    ("1", 32, TypeError, "grid must be an int or a tuple of 1 to 3 ints, not str"),
    ((1.5,), 32, TypeError, "grid dimensions must be ints, not float"),
])
def test_launch_dimensions_are_checked_against_the_limits(grid, block, exc, text):
    saxpy = gpuhost.SourceModule(SAXPY, no_extern_c=True).get_function("saxpy")
    with pytest.raises(exc) as info:
        saxpy[grid, block]
    assert text in str(info.value)
    if exc is ValueError and "limits" in text:
        assert "at most (" in str(info.value)


@pytest.mark.gpu
def test_bad_launch_configurations():
    saxpy = gpuhost.SourceModule(SAXPY, no_extern_c=True).get_function("saxpy")
    with pytest.raises(ValueError, match=r"kernel\[grid, block\]"):
        saxpy[1]
    with pytest.raises(TypeError, match="needs block="):
        saxpy(1.0, None, None, None, 0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'threads'"):
        saxpy(1.0, None, None, None, 0, block=1, threads=3)
    with pytest.raises(ValueError, match="dynamic shared memory is past kernel 'saxpy'"):
        saxpy[1, 32, 0, 10 ** 6]
    with pytest.raises(TypeError):
        saxpy[1, 32, "not a stream"]


@pytest.mark.gpu
def test_launch_configurations_are_reused_and_describe_themselves():
    saxpy = gpuhost.SourceModule(SAXPY, no_extern_c=True).get_function("saxpy")
    s = gpuhost.stream()
    cfg = saxpy[4, (32, 2), s, 128]
    assert saxpy[4, (32, 2), s, 128] is cfg
    assert (cfg.griddim, cfg.blockdim, cfg.stream, cfg.sharedmem) == ((4, 1, 1), (32, 2, 1), s, 128)
    assert saxpy[5, 32] is not cfg
    assert "grid (5, 1, 1), block (32, 1, 1)" in repr(saxpy[5, 32])
    assert repr(saxpy) == "<gpuhost.Kernel 'saxpy' (5 parameters) on device %d>" % \
        gpuhost.get_current_device().id


@pytest.mark.gpu
def test_kernel_attributes_and_parameter_info():
    src = r"""
    extern "C" __global__ void tiles(float *out, int n)
    {
        __shared__ float tile[256];
        tile[threadIdx.x] = threadIdx.x * 2.0f;
        __syncthreads();
        if (threadIdx.x < n) out[threadIdx.x] = tile[255 - threadIdx.x];
    }
    """
    k = gpuhost.SourceModule(src, no_extern_c=True).get_function("tiles")
    cc = gpuhost.get_current_device().compute_capability
    assert k.num_regs > 0
    assert k.shared_size_bytes == 256 * 4
    assert k.max_threads_per_block == 1024
    assert k.binary_version == cc[0] * 10 + cc[1]
    assert k.num_params == 2
    assert k.param_info == ((0, 8, "i"), (8, 4, "i"))
    out = gpuhost.device_array(256, np.float32)
    k[1, 256](out, 256)
    np.testing.assert_array_equal(out.copy_to_host(), np.arange(255, -1, -1) * 2.0)


@pytest.mark.gpu
def test_dynamic_shared_memory_past_48k_after_raising_the_limit():
    src = r"""
    extern "C" __global__ void big(int *out, int words)
    {
        extern __shared__ int buf[];
        for (int i = threadIdx.x; i < words; i += blockDim.x) buf[i] = i;
        __syncthreads();
        if (threadIdx.x == 0) { long long s = 0; for (int i = 0; i < words; i++) s += buf[i];
                                out[0] = (int)(s % 1000003); }
    }
    """
    k = gpuhost.SourceModule(src, no_extern_c=True).get_function("big")
    optin = gpuhost.get_current_device().MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
    nbytes = optin - 1024
    with pytest.raises(ValueError, match="max_dynamic_shared_size_bytes"):
        k[1, 128, 0, nbytes]
    k.max_dynamic_shared_size_bytes = nbytes
    assert k.max_dynamic_shared_size_bytes == nbytes
    out = gpuhost.device_array(1, np.int32)
    words = nbytes // 4
    k[1, 128, 0, nbytes](out, words)
    assert out.copy_to_host()[0] == (words * (words - 1) // 2) % 1000003


@pytest.mark.gpu
def test_occupancy_queries():
    k = gpuhost.SourceModule(SAXPY, no_extern_c=True).get_function("saxpy")
    blocks = k.max_active_blocks_per_multiprocessor(256)
    assert 1 <= blocks <= 64
    assert k.max_active_blocks_per_multiprocessor(1024) <= blocks
    min_grid, block = k.max_potential_block_size()
    assert min_grid >= gpuhost.get_current_device().MULTIPROCESSOR_COUNT
    assert 32 <= block <= 1024 and block % 32 == 0
    _, limited = k.max_potential_block_size(block_size_limit=64)
    assert limited <= 64
    with pytest.raises(ValueError):
        k.max_active_blocks_per_multiprocessor(0)


@pytest.mark.gpu
def test_missing_kernel_names_it_and_lists_the_kernels():
    mod = gpuhost.SourceModule(SAXPY, no_extern_c=True)
    with pytest.raises(CudaAPIError) as info:
        mod.get_function("saxpi")
    assert info.value.name == "CUDA_ERROR_NOT_FOUND"
    assert "no kernel named 'saxpi' (its kernels: saxpy)" in str(info.value)


@pytest.mark.gpu
def test_ptx_for_a_newer_driver_is_a_clear_error():
    ptx = gpuhost.compile_ptx_for_current_device(SAXPY).decode()
    newer = re.sub(r"\.version \d+\.\d+", ".version 99.9", ptx)
    with pytest.raises(CudaAPIError) as info:
        gpuhost.Module(newer)
    assert info.value.name == "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"
    assert "newer CUDA version than this driver supports" in str(info.value)


@pytest.mark.gpu
def test_broken_ptx_reports_the_jit_log():
    ptx = gpuhost.compile_ptx_for_current_device(SAXPY).decode()
    broken = ptx.replace("ret;", "bogus.instruction %r1;", 1)
    with pytest.raises(CudaAPIError) as info:
        gpuhost.Module(broken)
    assert info.value.name == "CUDA_ERROR_INVALID_PTX"
    assert "bogus" in str(info.value)


@pytest.mark.gpu
def test_modules_from_cubin_ptx_text_and_files(tmp_path):
    n = 1000
    x = rng.standard_normal(n, dtype=np.float32)
    d_x, d_out = gpuhost.to_device(x), gpuhost.device_array(n, np.float32)
    cubin = gpuhost.compile(SAXPY, options=("-fmad=false",))
    path = tmp_path / "saxpy.cubin"
    path.write_bytes(bytes(cubin))
    ptx = gpuhost.compile_ptx_for_current_device(SAXPY, options=("-fmad=false",))
    for image in (cubin, ptx.decode(), bytes(ptx), path, str(path)):
        k = gpuhost.Module(image).get_function("saxpy")
        d_out.copy_to_device(np.zeros(n, np.float32))
        k[(n + 255) // 256, 256](2.0, d_x, d_x, d_out, n)
        np.testing.assert_array_equal(d_out.copy_to_host(), np.float32(2) * x + x)


@pytest.mark.gpu
def test_a_bare_cubin_knows_sizes_but_not_kinds():
    cubin = bytes(gpuhost.compile(SAXPY))  # plain bytes: the PTX is not with it
    k = gpuhost.Module(cubin).get_function("saxpy")
    assert [p[2] for p in k.param_info] == ["?"] * 5
    n = 64
    d_x, d_out = gpuhost.to_device(np.ones(n, np.float32)), gpuhost.device_array(n, np.float32)
    k[1, n](np.float32(2), d_x, d_x, d_out, np.uint64(n))
    np.testing.assert_array_equal(d_out.copy_to_host(), np.full(n, 3, np.float32))
    k[1, n](1.5, d_x, d_x, d_out, n)  # a float to a 4-byte value: float32
    np.testing.assert_array_equal(d_out.copy_to_host(), np.full(n, 2.5, np.float32))


@pytest.mark.gpu
def test_globals_and_constants():
    src = r"""
    __constant__ float coeffs[8];
    __device__ int counter;
    extern "C" __global__ void apply(float *out)
    {
        out[threadIdx.x] = coeffs[threadIdx.x] * 2.0f;
        atomicAdd(&counter, 1);
    }
    """
    mod = gpuhost.Module(gpuhost.compile(src))
    coeffs = rng.standard_normal(8, dtype=np.float32)
    d_coeffs = mod.get_global("coeffs", np.float32)
    assert d_coeffs.shape == (8,) and d_coeffs.dtype == np.float32
    d_coeffs.copy_to_device(coeffs)
    counter = mod.get_global("counter", np.int32)
    counter.copy_to_device(np.array([5], np.int32))
    out = gpuhost.device_array(8, np.float32)
    mod.get_function("apply")[1, 8](out)
    np.testing.assert_array_equal(out.copy_to_host(), coeffs * 2)
    assert counter.copy_to_host()[0] == 13
    assert mod.get_global("coeffs").nbytes == 32
    with pytest.raises(ValueError, match="needs 64"):
        mod.get_global("coeffs", np.float64, shape=8)
    with pytest.raises(CudaAPIError, match="no global named 'nothing'"):
        mod.get_global("nothing")


@pytest.mark.gpu
def test_name_expressions_for_templates():
    src = r"""
    template <typename T>
    __global__ void fill(T *x, T value, int n)
    {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) x[i] = value;
    }
    """
    code = gpuhost.compile(src, name_expressions=("fill<float>", "fill<int>"))
    mod = gpuhost.Module(code)
    fill_f, fill_i = mod.get_function("fill<float>"), mod.get_function("fill<int>")
    assert fill_f.symbol != "fill<float>"
    xf, xi = gpuhost.device_array(100, np.float32), gpuhost.device_array(100, np.int32)
    v = float(np.float32(rng.standard_normal()))
    fill_f[1, 128](xf, v, 100)
    fill_i[1, 128](xi, -7, 100)
    np.testing.assert_array_equal(xf.copy_to_host(), np.full(100, v, np.float32))
    np.testing.assert_array_equal(xi.copy_to_host(), np.full(100, -7, np.int32))
    with pytest.raises(TypeError, match="fill<int>"):
        fill_i[1, 128](xi, 0.5, 100)


@pytest.mark.gpu
def test_unloaded_module_refuses_launches():
    mod = gpuhost.SourceModule(SAXPY, no_extern_c=True).module
    k = mod.get_function("saxpy")
    d = gpuhost.device_array(4, np.float32)
    k[1, 4](1.0, d, d, d, 4)
    mod.unload()
    assert mod.unloaded
    with pytest.raises(CudaAPIError, match="the module was unloaded"):
        k[1, 4](1.0, d, d, d, 4)
    with pytest.raises(CudaAPIError, match="unloaded"):
        mod.get_function("saxpy")
    mod.unload()  # twice is fine


@pytest.mark.gpu
@pytest.mark.resets_context
def test_launch_after_context_reset_is_an_error_not_a_crash():
    k = gpuhost.SourceModule(SAXPY, no_extern_c=True).get_function("saxpy")
    d = gpuhost.device_array(4, np.float32)
    gpuhost.current_context().reset()  # gpuhost's module and memory go; the context stays
    with pytest.raises(CudaAPIError, match="before Context.reset") as info:
        k[1, 4](1.0, None, None, None, 4)
    assert info.value.name == "CUDA_ERROR_INVALID_HANDLE"
    fresh = gpuhost.SourceModule(SAXPY, no_extern_c=True).get_function("saxpy")
    with pytest.raises(CudaAPIError, match="before Context.reset") as info:  # an old array
        fresh[1, 4](1.0, d, d, d, 4)
    assert info.value.name == "CUDA_ERROR_INVALID_HANDLE"
    x = np.random.default_rng().random(4).astype(np.float32)
    dx, out = gpuhost.to_device(x), gpuhost.device_array(4, np.float32)
    fresh[1, 4](np.float32(2), dx, dx, out, 4)
    np.testing.assert_array_equal(out.copy_to_host(), np.float32(2) * x + x)


@pytest.mark.gpu
def test_cooperative_launch_honours_the_attribute():
    src = r"""
    extern "C" __global__ void ids(int *out) { out[blockIdx.x] = blockIdx.x; }
    """
    k = gpuhost.SourceModule(src, no_extern_c=True).get_function("ids")
    out = gpuhost.device_array(8, np.int32)
    gpuhost.launch(k, 8, 32, out, cooperative=True)
    np.testing.assert_array_equal(out.copy_to_host(), np.arange(8))
    sms = gpuhost.get_current_device().MULTIPROCESSOR_COUNT
    too_many = sms * k.max_active_blocks_per_multiprocessor(1024) + 1
    big = gpuhost.device_array(too_many, np.int32)
    with pytest.raises(CudaAPIError) as info:
        k.configure(too_many, 1024, cooperative=True)(big)
    assert info.value.name == "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"


@pytest.mark.gpu
def test_thread_block_clusters():
    if gpuhost.get_current_device().compute_capability < (9, 0):
        pytest.skip("clusters need compute capability 9.0")
    src = r"""
    extern "C" __global__ void rank(unsigned int *out)
    {
        unsigned int r;
        asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
        if (threadIdx.x == 0) out[blockIdx.x] = r;
    }
    """
    k = gpuhost.SourceModule(src, no_extern_c=True).get_function("rank")
    out = gpuhost.device_array(8, np.uint32)
    k.configure(8, 32, cluster=2)(out)
    np.testing.assert_array_equal(out.copy_to_host(), np.arange(8) % 2)
    k.configure(8, 32, cluster=(4, 1, 1))(out)
    np.testing.assert_array_equal(out.copy_to_host(), np.arange(8) % 4)
    assert k.max_active_clusters(8, 32, 2) >= 1
    with pytest.raises(ValueError, match="not a whole number of clusters"):
        k.configure(6, 32, cluster=4)


@pytest.mark.gpu
def test_linker_combines_relocatable_ptx():
    helper = r"""
    extern "C" __device__ float twice(float x) { return 2.0f * x; }
    """
    user = r"""
    extern "C" __device__ float twice(float x);
    extern "C" __global__ void apply(float *x, int n)
    {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) x[i] = twice(x[i]);
    }
    """
    link = gpuhost.Linker()
    link.add(gpuhost.compile_ptx_for_current_device(helper, options=("-rdc=true",)), "helper")
    link.add(gpuhost.compile_ptx_for_current_device(user, options=("-rdc=true",)), "user")
    cubin = link.complete()
    assert bytes(cubin[:4]) == b"\x7fELF"
    k = gpuhost.Module(cubin).get_function("apply")
    assert [p[2] for p in k.param_info] == ["i", "i"]
    x = rng.standard_normal(300, dtype=np.float32)
    d = gpuhost.to_device(x)
    k[2, 256](d, 300)
    np.testing.assert_array_equal(d.copy_to_host(), 2 * x)


@pytest.mark.gpu
def test_linker_reports_undefined_symbols():
    user = r"""
    extern "C" __device__ float missing(float x);
    extern "C" __global__ void apply(float *x) { x[0] = missing(x[0]); }
    """
    link = gpuhost.Linker()
    link.add_ptx(gpuhost.compile_ptx_for_current_device(user, options=("-rdc=true",)))
    with pytest.raises(CudaAPIError) as info:
        link.complete()
    assert "missing" in str(info.value)


@pytest.mark.gpu
def test_source_module_pycuda_style():
    src = r"""
    __device__ int hits[2];
    __global__ void count(int *x) { atomicAdd(&hits[threadIdx.x % 2], x[threadIdx.x]); }
    """
    mod = gpuhost.SourceModule(src)  # wrapped in extern "C", as pycuda does
    x = rng.integers(0, 100, 64).astype(np.int32)
    mod.get_function("count")[1, 64](gpuhost.to_device(x))
    ptr, size = mod.get_global("hits")
    assert size == 8 and ptr != 0
    got = mod.module.get_global("hits", np.int32).copy_to_host()
    np.testing.assert_array_equal(got, [x[0::2].sum(), x[1::2].sum()])


@pytest.mark.gpu
def test_raw_kernel_cupy_style():
    k = gpuhost.RawKernel(SAXPY, "saxpy", options=("-fmad=false",))
    n = 777
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    d_x, d_y, d_out = gpuhost.to_device(x), gpuhost.to_device(y), gpuhost.device_array(n, np.float32)
    k(((n + 63) // 64,), (64,), (np.float32(1.5), d_x, d_y, d_out, np.uint64(n)))
    np.testing.assert_array_equal(d_out.copy_to_host(), np.float32(1.5) * x + y)
    assert k.num_regs == k.attributes["num_regs"] > 0
    with pytest.raises(TypeError, match="tuple"):
        k(1, 64, d_x)


@pytest.mark.gpu
def test_foreign_arrays_go_as_pointers():
    saxpy = gpuhost.SourceModule(SAXPY, no_extern_c=True,
                                 options=("-fmad=false",)).get_function("saxpy")
    n = 512
    x = rng.standard_normal(n, dtype=np.float32)
    d_x = gpuhost.to_device(x)
    out = gpuhost.device_array(n, np.float32)

    class OnlyCai:
        def __init__(self, a):
            self.__cuda_array_interface__ = a.__cuda_array_interface__

    saxpy[2, 256](2.0, OnlyCai(d_x), DlpackOnly(d_x), OnlyCai(out), n)
    np.testing.assert_array_equal(out.copy_to_host(), np.float32(2) * x + x)


@pytest.mark.gpu
def test_cupy_arrays_as_arguments():
    cp = pytest.importorskip("cupy")
    saxpy = gpuhost.SourceModule(SAXPY, no_extern_c=True,
                                 options=("-fmad=false",)).get_function("saxpy")
    n = 1024
    x = rng.standard_normal(n, dtype=np.float32)
    c_x, c_out = cp.asarray(x), cp.zeros(n, cp.float32)
    saxpy[4, 256](0.25, c_x, c_x, c_out, n)
    gpuhost.synchronize()
    np.testing.assert_array_equal(cp.asnumpy(c_out), np.float32(0.25) * x + x)


@pytest.mark.gpu
def test_launch_on_a_stream_orders_with_copies():
    saxpy = gpuhost.SourceModule(SAXPY, no_extern_c=True,
                                 options=("-fmad=false",)).get_function("saxpy")
    n = 1 << 20
    s = gpuhost.stream()
    x = rng.standard_normal(n, dtype=np.float32)
    host = gpuhost.pinned_array(n, np.float32)
    d = gpuhost.to_device(x, stream=s)
    for _ in range(3):
        saxpy[n // 256, 256, s](1.0, d, d, d, n)  # d = 2d, three times
    d.copy_to_host(host, stream=s)
    s.synchronize()
    np.testing.assert_array_equal(host, x * 8)


def test_ptx_param_types_ignore_pointer_alignment():
    ptx = (".version 8.0\n.target sm_90\n.address_size 64\n"
           ".visible .entry k(\n\t.param .f32 k_param_0,\n\t.param .u64 .ptr .align 1 k_param_1,\n"
           "\t.param .align 8 .b8 k_param_2[16]\n)\n{ ret; }\n")
    assert ptx_param_types(ptx) == {"k": (("f", 4, 4), ("i", 8, 8), ("s", 16, 8))}


def test_link_reads_its_inputs_from_any_iterable_and_refuses_others():
    from gpuhost import _core

    with pytest.raises(TypeError, match=r"link\(\) takes a list of inputs"):
        _core.link(3)
    for inputs in ([3], (3,), (x for x in [3])):
        with pytest.raises(TypeError, match=r"link inputs are \(bytes, int, str\) tuples"):
            _core.link(inputs)


# ---- the parameters' C types, on a GPU (tests/test_kernel_types.py checks them everywhere) ----

TWICE = r"""
__global__ void twice(float *a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] *= 2;
}"""


@pytest.mark.gpu
def test_a_cplusplus_kernel_refuses_float64_for_float_and_runs_with_float32():
    k = gpuhost.SourceModule(TWICE, no_extern_c=True,
                             name_expressions=["twice"]).get_function("twice")
    assert k.param_types == ("float *", "int")
    n = int(rng.integers(1000, 5000))
    x64 = gpuhost.to_device(rng.random(n))
    with pytest.raises(TypeError, match=r"^twice\(\): parameter 0 \(float \*\) takes an array "
                                        r"of float32, not a gpuhost.DeviceArray of float64$"):
        k[(n + 255) // 256, 256](x64, n)
    with pytest.raises(OverflowError, match=r"parameter 1 \(int\) cannot hold 4294967296"):
        k[1, 32](gpuhost.device_array(4, np.float32), 2 ** 32)
    x = rng.random(n).astype(np.float32)
    d = gpuhost.to_device(x)
    k[(n + 255) // 256, 256](d, n)
    np.testing.assert_array_equal(d.copy_to_host(), 2 * x)


@pytest.mark.gpu
def test_templates_and_prepare_check_on_a_gpu():
    src = r"""
    template <typename T>
    __global__ void axpy(T *y, const T *x, T a, unsigned int n) {
        unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }"""
    mod = gpuhost.SourceModule(src, no_extern_c=True, options=("-fmad=false",),
                               name_expressions=["axpy<double>", "axpy<float>"])
    axpy_d, axpy_f = mod.get_function("axpy<double>"), mod.get_function("axpy<float>")
    n = int(rng.integers(1000, 5000))
    x, y = rng.random(n), rng.random(n)
    dx, dy = gpuhost.to_device(x), gpuhost.to_device(y)
    axpy_d[(n + 255) // 256, 256](dy, dx, 3.0, n)
    np.testing.assert_array_equal(dy.copy_to_host(), 3.0 * x + y)
    with pytest.raises(TypeError, match=r"axpy<float>\(\): parameter 0 \(float \*\)"):
        axpy_f[(n + 255) // 256, 256](dy, dx, 3.0, n)
    with pytest.raises(OverflowError, match=r"parameter 3 \(unsigned int\) cannot hold -1"):
        axpy_d[1, 32](dy, dx, 3.0, -1)
    plain = gpuhost.SourceModule(TWICE).get_function("twice")  # extern "C": prepare says it
    plain.prepare(["float *", "int"])
    with pytest.raises(TypeError, match=r"parameter 0 \(float \*\) takes an array of float32"):
        plain.prepared_call((1, 1), (32, 1, 1), dx, n)
    f = rng.random(n).astype(np.float32)
    df = gpuhost.to_device(f)
    plain.prepared_call(((n + 255) // 256, 1), (256, 1, 1), df, n)
    np.testing.assert_array_equal(df.copy_to_host(), 2 * f)
