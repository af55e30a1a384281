"""gpuhost.jit: Python kernels compiled by numba-cuda and launched by gpuhost.

Kernels run on a real GPU only (marker gpu); the choice of overload (keys), numba's
parameter layout (plans) and the import rules are checked without one.
"""
import importlib
import math
import warnings

import numpy as np
import pytest

import gpuhost
from gpuhost import _core

numba_cuda = pytest.importorskip("numba_cuda", reason="gpuhost.jit needs numba-cuda")

from gpuhost import _numba  # noqa: E402

cuda = gpuhost  # kernels below call their module `cuda`, as numba users write them
rng = np.random.default_rng()

gpu = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _quiet_occupancy():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Grid size")
        yield


# ---- without a GPU: keys, plans, imports ----

def test_missing_numba_cuda_is_an_import_error_naming_the_extra(monkeypatch):
    monkeypatch.setattr(_numba, "installed_version", lambda: None)
    monkeypatch.setattr(_numba, "_loaded", None)
    with pytest.raises(ImportError, match=r"numba-cuda, which is not installed: pip install "
                                          r"'numba-cuda>=0\.30,<0\.31' \(gpuhost's 'jit' extra\)"):
        gpuhost.jit(lambda a: None)


@pytest.mark.parametrize("version", ["0.29.2", "0.31.0", "1.0.0"])
def test_unsupported_numba_cuda_version_names_the_supported_range(monkeypatch, version):
    monkeypatch.setattr(_numba, "installed_version", lambda: version)
    monkeypatch.setattr(_numba, "_loaded", None)
    with pytest.raises(ImportError, match=r"supports numba-cuda >=0\.30,<0\.31; numba-cuda %s "
                                          r"is installed" % version.replace(".", r"\.")):
        _numba.load()


def test_gpuhost_types_as_numba_cuda_module():
    from numba.cuda import types
    from numba.cuda.typing.typeof import typeof

    import numba.cuda

    assert typeof(gpuhost) == types.Module(numba.cuda)


@pytest.mark.parametrize("name", ["grid", "gridsize", "threadIdx", "blockIdx", "blockDim",
                                  "gridDim", "laneid", "warpsize", "shared", "local", "const",
                                  "atomic", "syncthreads", "syncthreads_count", "threadfence",
                                  "shfl_down_sync", "ballot_sync", "ldcg", "float32x4", "cg",
                                  "fp16", "libdevice", "declare_device",
                                  "reduce", "Reduce", "KernelRuntimeError", "PTXSource",
                                  "CUSource", "literal_unroll", "vectorize", "random"])
def test_numba_kernel_names_resolve_to_numba_cudas(name):
    import numba.cuda

    ours = getattr(gpuhost, name)
    theirs = getattr(numba.cuda, name, None)
    if theirs is None:
        theirs = importlib.import_module("numba.cuda." + name)
    assert ours is theirs


def test_unknown_names_still_raise_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'gridz'"):
        gpuhost.gridz


def test_arg_hints_are_gpuhosts_and_typed_as_numba_types_their_values():
    from numba.cuda.typing.typeof import typeof

    host = rng.random(5).astype(np.float32)
    for name, copy_in, copy_out in (("In", True, False), ("Out", False, True),
                                    ("InOut", True, True)):
        hint = getattr(gpuhost, name)(host)
        assert type(hint).__module__ == "gpuhost._arghints" and hint.value is host
        assert (type(hint).copy_input, type(hint).copy_output) == (copy_in, copy_out)
        assert hint._numba_type_ == typeof(host)


def test_device_function_is_made_without_numba_and_becomes_numbas_dispatcher_when_used():
    from numba.cuda.dispatcher import CUDADispatcher

    @cuda.jit(device=True)
    def add(a, b):
        return a + b

    assert type(add) is gpuhost.dispatcher.DeviceFunction and "_made" not in vars(add)
    assert add.__name__ == "add" and add.py_func.__name__ == "add"
    assert type(add._numba_dispatcher()) is CUDADispatcher
    assert add._numba_type_ == add._numba_dispatcher()._numba_type_
    assert add.targetoptions["device"] is True  # numba's attributes, through it
    with pytest.raises(RuntimeError, match="Cannot compile a device function as a kernel"):
        add[1, 1](1, 2)


def test_device_function_with_signatures_is_numbas_dispatcher_compiled_at_decoration():
    from numba.cuda.dispatcher import CUDADispatcher

    add = cuda.jit("int64(int64, int64)", device=True)(lambda a, b: a + b)
    assert type(add) is CUDADispatcher and len(add.overloads) == 1


def _plan(*tys):
    return _numba.plan(tys)


def test_plans_follow_numbas_parameter_layout():
    from numba.cuda import types

    assert _plan(types.float64[:, ::1]) == b"A\x02"
    assert _plan(types.int32, types.uint8, types.int64) == b"i\x04\x01i\x01\x00i\x08\x01"
    assert _plan(types.float16, types.float32, types.float64) == b"f\x02f\x04f\x08"
    assert _plan(types.complex64, types.complex128, types.boolean) == b"c\x08c\x10b\x00"
    assert _plan(types.UniTuple(types.int32, 2)) == b"t\x02i\x04\x01i\x04\x01"
    assert _plan(types.CPointer(types.float32)) == b"p\x00"
    assert _plan(types.NPDatetime("s")) is None
    assert _plan(types.Record.make_c_struct([("a", types.int32)])) is None


def _key(args):
    d = gpuhost.jit(lambda a: None)
    return d._jit_key(tuple(args))


def test_keys_separate_what_numba_types_apart():
    a = gpuhost.to_device(rng.random((4, 6)))
    b = gpuhost.to_device(rng.random((4, 6)).astype(np.float32))
    keys = {
        "c2": _key([a]), "f2": _key([a.T]), "a2": _key([a[:, ::2]]), "f32": _key([b]),
        "int": _key([5]), "uint": _key([2**63]), "float": _key([1.5]), "bool": _key([True]),
        "complex": _key([1j]), "np32": _key([np.float32(1)]), "npi8": _key([np.int8(1)]),
        "tuple": _key([(1, 2)]), "tuple3": _key([(1, 2, 3)]), "two": _key([1, 2]),
    }
    assert all(k is not None for k in keys.values())
    assert len({k[0] for k in keys.values()}) == len(keys)
    assert _key([7])[0] == _key([-7])[0] == _key([2**62])[0]  # all int64
    assert _key([a])[0] == _key([gpuhost.to_device(rng.random((3, 9)))])[0]


def test_keys_leave_to_numba_what_c_does_not_type():
    assert _key([2**64]) is None  # numba: "Int value is too large"
    assert _key([np.zeros(3)]) is None  # a host array: copied in and back
    assert _key(["text"]) is None
    assert _key([np.datetime64(1, "s")]) is None
    assert _key([np.longdouble(1)]) is None


def test_layouts_are_numbas():
    a = gpuhost.to_device(rng.random((4, 6)))
    assert _core._jit_layout(a) == ("C", False)
    assert _core._jit_layout(a.T) == ("F", False)
    assert _core._jit_layout(a[:, ::2]) == ("A", False)
    assert _core._jit_layout(gpuhost.to_device(rng.random((1, 5)))[:, :])[0] == "C"
    from numba.cuda.typing.typeof import typeof

    assert typeof(a.T).layout == "F" and typeof(a).dtype.name == "float64"


def test_bad_launch_configurations_are_value_errors():
    k = gpuhost.jit(lambda a: None)
    with pytest.raises(ValueError, match="must specify at least the griddim and blockdim"):
        k[1]
    with pytest.raises(ValueError, match="grid dimensions must be between 1"):
        k[0, 32]
    with pytest.raises(ValueError, match="block dimensions must be between 1"):
        k[1, -4]
    with pytest.raises(TypeError, match=r"griddim must be a sequence of integers, got \[.x.\]"):
        k["x", 32]
    with pytest.raises(ValueError, match="missing launch configuration|launch configuration"):
        k(1)


# ---- on the GPU ----

@gpu
def test_axpy_lazily_typed_then_launched_in_c():
    @cuda.jit
    def axpy(r, a, x, y):
        i = cuda.grid(1)
        if i < r.size:
            r[i] = a * x[i] + y[i]

    n = 1000
    x, y = rng.random(n), rng.random(n)
    dx, dy, dr = gpuhost.to_device(x), gpuhost.to_device(y), gpuhost.device_array(n)
    axpy[(n + 127) // 128, 128](dr, 2.0, dx, dy)  # a power of two: a * x is exact, so
    np.testing.assert_array_equal(dr.copy_to_host(), 2.0 * x + y)  # fused or not alike
    assert len(axpy._jit_entries()) == 1
    x2 = rng.random(n)
    axpy[(n + 127) // 128, 128](dr, -1.0, gpuhost.to_device(x2), dy)
    np.testing.assert_array_equal(dr.copy_to_host(), -1.0 * x2 + y)
    assert len(axpy.overloads) == 1


@gpu
def test_scalar_types_reach_the_kernel_as_numba_passes_them():
    @cuda.jit
    def store(out, i8, u8, f, c, b, h, f32, t):
        out[0] = i8
        out[1] = u8
        out[2] = f
        out[3] = c.real
        out[4] = c.imag
        out[5] = 1.0 if b else 0.0
        out[6] = h
        out[7] = f32
        out[8] = t[0] + 10 * t[1]

    out = gpuhost.device_array(9)
    args = (-12345, np.uint8(200), 2.75, 1.5 - 2.25j, True, np.float16(0.5), np.float32(1.25),
            (3, 4))
    for _ in range(2):  # through numba's rules, then through C
        store[1, 1](out, *args)
        np.testing.assert_array_equal(out.copy_to_host(),
                                      [-12345, 200, 2.75, 1.5, -2.25, 1, 0.5, 1.25, 43])
    assert len(store._jit_entries()) == 1


@gpu
def test_two_dimensional_layouts_and_views():
    @cuda.jit
    def add2(r, a, b):
        i, j = cuda.grid(2)
        if i < r.shape[0] and j < r.shape[1]:
            r[i, j] = a[i, j] + b[i, j]

    a = rng.random((37, 53))
    for view in (lambda x: x, lambda x: x.T, lambda x: x[::2, 1::3]):
        ha, hb = view(a), view(a * 3)
        da, db = gpuhost.to_device(np.ascontiguousarray(ha)), gpuhost.to_device(hb)
        dv = view(gpuhost.to_device(a * 3))
        dr = gpuhost.device_array(ha.shape)
        add2[(8, 8), (8, 8)](dr, da, dv)
        np.testing.assert_array_equal(dr.copy_to_host(), ha + hb)
        del db


@gpu
def test_shared_memory_atomics_and_warp_intrinsics():
    @cuda.jit
    def block_sums(x, out, total):
        tile = cuda.shared.array(128, np.float32)
        t = cuda.threadIdx.x
        i = cuda.grid(1)
        tile[t] = x[i] if i < x.size else 0
        cuda.syncthreads()
        s = 64
        while s > 0:
            if t < s:
                tile[t] += tile[t + s]
            cuda.syncthreads()
            s //= 2
        if t == 0:
            out[cuda.blockIdx.x] = tile[0]
            cuda.atomic.add(total, 0, tile[0])
        v = cuda.shfl_down_sync(0xFFFFFFFF, t, 1)
        if t == 0 and v != 1:
            total[1] = -1

    x = rng.integers(0, 100, 1000).astype(np.float32)
    out, total = gpuhost.device_array(8, np.float32), gpuhost.to_device(np.zeros(2, np.float32))
    block_sums[8, 128](gpuhost.to_device(x), out, total)
    pad = np.concatenate([x, np.zeros(24, np.float32)]).reshape(8, 128)
    np.testing.assert_array_equal(out.copy_to_host(), pad.sum(axis=1))
    np.testing.assert_array_equal(total.copy_to_host(), [x.sum(), 0])


@gpu
def test_grid_sync_is_a_cooperative_launch():
    @cuda.jit
    def two_phase(a, b):
        g = cuda.cg.this_grid()
        i = cuda.grid(1)
        a[i] = i
        g.sync()
        b[i] = a[(i + 1) % a.size]

    n = 4 * 64
    a, b = gpuhost.device_array(n, np.int64), gpuhost.device_array(n, np.int64)
    two_phase[4, 64](a, b)
    two_phase[4, 64](a, b)
    np.testing.assert_array_equal(b.copy_to_host(), (np.arange(n) + 1) % n)


@gpu
def test_host_arrays_are_copied_in_and_back_with_numbas_warning():
    @cuda.jit
    def inc(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] += 1

    from numba.cuda.core.errors import NumbaPerformanceWarning

    a = rng.random(100)
    expect = a + 1
    with pytest.warns(NumbaPerformanceWarning, match="Host array used in CUDA kernel"):
        inc[1, 128](a)
    np.testing.assert_array_equal(a, expect)
    b = rng.random(100)
    kept = b.copy()
    inc[1, 128](cuda.In(b))
    np.testing.assert_array_equal(b, kept)
    inc[1, 128](cuda.InOut(b))
    np.testing.assert_array_equal(b, kept + 1)


@gpu
def test_debug_kernels_raise_numbas_exception_naming_the_thread():
    @cuda.jit(debug=True, opt=False)
    def check(a):
        i = cuda.grid(1)
        if i == 5:
            raise ValueError("bad element")
        a[i] = i

    a = gpuhost.device_array(32, np.int64)
    with pytest.raises(ValueError, match=r"tid=\[0, 0, 5\] ctaid=\[0, 0, 0\]: bad element"):
        check[1, 32](a)


@gpu
def test_eager_signatures_convert_as_numba_does():
    @cuda.jit("void(float32[::1], float32)")
    def scale(a, f):
        i = cuda.grid(1)
        if i < a.size:
            a[i] *= f

    x = rng.random(64).astype(np.float32)
    d = gpuhost.to_device(x)
    scale[1, 64](d, 2)  # a Python int into a float32 parameter
    scale[1, 64](d, 0.5)
    np.testing.assert_array_equal(d.copy_to_host(), x * np.float32(2) * np.float32(0.5))
    assert len(scale.overloads) == 1


def test_an_eager_string_signature_refuses_arguments_of_other_types():
    """Checked before anything loads or launches, on any driver: numba's TypeError and
    message, for the array's dtype and for a missing argument alike."""
    def scale(a, f):
        i = cuda.grid(1)
        if i < a.size:
            a[i] *= f

    k = cuda.jit("void(float32[::1], float32)")(scale)
    with pytest.raises(TypeError, match=r"^No matching definition for argument type\(s\) "
                                        r"array\(float64, 1d, C\), float64$"):
        k[1, 64](gpuhost.to_device(rng.random(64)), 2.0)
    with pytest.raises(TypeError, match=r"^No matching definition for argument type\(s\) "
                                        r"array\(int32, 1d, C\)$"):
        k[1, 64](gpuhost.to_device(np.zeros(64, np.int32)))


@gpu
def test_a_float64_array_for_an_eager_float32_signature_is_numbas_type_error():
    """numba-cuda refuses it where the eager signatures come as a list (compilation is off
    once they are given); so does gpuhost.jit, with numba's exception and message, for the
    one-string form too, which numba-cuda 0.30 launches unchecked (its specialized
    dispatcher reads the float64 data as float32)."""
    import numba.cuda

    def scale(a, f):
        i = cuda.grid(1)
        if i < a.size:
            a[i] *= f

    x = rng.random(64)
    ours = cuda.jit("void(float32[::1], float32)")(scale)
    ours_list = cuda.jit(["void(float32[::1], float32)"])(scale)
    theirs = numba.cuda.jit(["void(float32[::1], float32)"])(scale)
    with pytest.raises(TypeError) as got_list:
        ours_list[1, 64](gpuhost.to_device(x), 2.0)
    with pytest.raises(TypeError) as got:
        ours[1, 64](gpuhost.to_device(x), 2.0)
    with pytest.raises(TypeError) as expected:
        theirs[1, 64](numba.cuda.to_device(x), 2.0)
    assert str(got.value) == str(got_list.value) == str(expected.value) == (
        "No matching definition for argument type(s) array(float64, 1d, C), float64")
    d = gpuhost.to_device(x.astype(np.float32))
    ours[1, 64](d, 2.0)
    np.testing.assert_array_equal(d.copy_to_host(), x.astype(np.float32) * np.float32(2))


@gpu
def test_device_functions_forall_and_specialize():
    @cuda.jit(device=True)
    def sq(v):
        return v * v

    @cuda.jit
    def squares(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] = sq(a[i])

    x = rng.random(1000)
    d = gpuhost.to_device(x)
    squares.forall(d.size)(d)
    np.testing.assert_array_equal(d.copy_to_host(), x * x)
    s = squares.specialize(d)
    assert s.specialized and isinstance(s, gpuhost.dispatcher.Dispatcher)
    s[4, 256](d)
    np.testing.assert_array_equal(d.copy_to_host(), (x * x) ** 2)


@gpu
def test_bad_arguments_raise_numbas_errors_and_launch_nothing():
    from numba.core.errors import TypingError

    @cuda.jit
    def fill(a, v):
        a[cuda.grid(1)] = v

    d = gpuhost.to_device(np.zeros(4))
    with pytest.raises(TypeError):
        fill[1, 4](d)
    with pytest.raises(TypingError):
        fill[1, 4](d, "text")
    with pytest.raises(gpuhost.CudaAPIError, match=r"CUDA_ERROR_INVALID_VALUE: block \(4096, 1, "
                                                    r"1\) .* past the device's limits"):
        fill[1, 4096](d, 1.0)  # as numba's launch raises it (the driver's INVALID_VALUE)
    np.testing.assert_array_equal(d.copy_to_host(), 0)


@gpu
def test_numba_and_nvrtc_kernels_share_streams_and_one_graph():
    @cuda.jit
    def twice(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] *= 2

    mod = gpuhost.SourceModule("""
    extern "C" __global__ void add1(double *a, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) a[i] += 1;
    }""", no_extern_c=True)
    add1 = mod.get_function("add1")
    x = rng.random(256)
    d = gpuhost.to_device(x)
    s = gpuhost.stream()
    twice[2, 128, s](d)  # compiled and loaded outside the capture
    s.synchronize()
    with gpuhost.graph_capture(s) as cap:
        twice[2, 128, s](d)
        add1[2, 128, s](d, np.int32(256))
    exe = cap.graph.instantiate()
    exe.launch(s)
    exe.launch(s)
    s.synchronize()
    np.testing.assert_array_equal(d.copy_to_host(), ((x * 2) * 2 + 1) * 2 + 1)


@gpu
def test_cupy_arrays_are_launched_without_a_copy():
    cp = pytest.importorskip("cupy")

    @cuda.jit
    def neg(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] = -a[i]

    x = cp.asarray(rng.random(77))
    before = x.get()
    neg[1, 128](x)
    cp.cuda.Device().synchronize()
    np.testing.assert_array_equal(x.get(), -before)


@gpu
def test_compile_ptx_of_a_python_function_goes_to_numba():
    def f(a):
        a[0] = 1.0

    ptx, resty = gpuhost.compile_ptx(f, "void(float64[::1])")
    assert ".entry" in ptx and str(resty) == "none"
    assert "extern" not in ptx
    assert ".entry k" in gpuhost.compile_ptx('extern "C" __global__ void k() {}').ptx


@gpu
def test_numba_random_states_work_with_gpuhost_launches():
    from numba.cuda.random import create_xoroshiro128p_states, xoroshiro128p_uniform_float32

    @cuda.jit
    def draw(states, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = xoroshiro128p_uniform_float32(states, i)

    n = 512
    states = create_xoroshiro128p_states(n, seed=7)
    out = gpuhost.device_array(n, np.float32)
    draw[4, 128](states, out)
    v = out.copy_to_host()
    assert ((v >= 0) & (v < 1)).all() and len(np.unique(v)) > n // 2
    assert math.isclose(v.mean(), 0.5, abs_tol=0.1)


# ---- the bytes launched, on the fake driver, against numba's own argument rules ----

def _numba_kernelargs(argtypes, args):
    """What numba's launcher makes of `args` before its launch: _Kernel._prepare_args,
    numba's own argument rules, called as numba calls it (no extensions, stream 0)."""
    import types as pytypes

    from numba.cuda.dispatcher import _Kernel

    host = pytypes.SimpleNamespace(extensions=[])
    host._prepare_args = pytypes.MethodType(_Kernel._prepare_args, host)
    kernelargs = []
    for ty, val in zip(argtypes, args):
        host._prepare_args(ty, val, 0, [], kernelargs)
    return kernelargs


def _numba_param_bytes(argtypes, args, kernel):
    """The parameters numba's launcher would pass for `args` (its _Kernel._prepare_args,
    converted as its launch converts Python ints, ctypes values and bools), laid out at the
    kernel's parameter offsets."""
    import ctypes

    kernelargs = _numba_kernelargs(argtypes, args)
    info = kernel.param_info
    assert len(info) == len(kernelargs)
    out = bytearray(max(off + size for off, size, _ in info))
    for (off, size, _), v in zip(info, kernelargs):
        if isinstance(v, bool):
            b = bytes(ctypes.c_bool(v))
        elif isinstance(v, int):
            b = bytes(ctypes.c_int64(v))
        else:
            b = bytes(v)
        assert len(b) == size
        out[off:off + size] = b
    return bytes(out)


def _fake_jit_launch(fake_kernels, pyfunc, args, launch=(3, 64)):
    """Compile `pyfunc` for `args`' numba types with numba-cuda (PTX, no GPU needed), load
    it on the fake driver, let gpuhost's C launcher launch it with `args`, and return
    (bytes recorded by the fake, the bytes numba's rules give)."""
    import numba.cuda
    from numba.cuda.typing.typeof import typeof

    from conftest import fake_last_launch

    argtypes = tuple(typeof(a) for a in args)
    ptx, _ = numba.cuda.compile_ptx(pyfunc, argtypes, cc=(9, 0))
    name = [ln.split()[-1].rstrip("(") for ln in ptx.splitlines() if ".entry" in ln][0]
    kernel = gpuhost.Module(ptx).get_function(name)
    disp = gpuhost.jit(pyfunc)
    key, keep, _ = disp._jit_key(tuple(args))
    assert disp._jit_add(key, keep, _numba.plan(argtypes), len(args), "overload", kernel,
                         False, None)
    launches = fake_kernels.launches()
    disp[launch](*args)
    assert fake_kernels.launches() == launches + 1  # launched in C, not by the slow path
    got, dims = fake_last_launch()
    assert dims[:6] == (launch[0], 1, 1, launch[1], 1, 1)
    return got, _numba_param_bytes(argtypes, args, kernel)


def _scalars(out, i, u, f, c, b, h, f32, i8):
    out[0] = i + u + f + c.real + b + h + f32 + i8


def _arrays(a, b, c, t):
    a[0, 0] = b[0] + c[0, 0, 0] + t[0] + t[1]


def test_c_launch_packs_scalars_as_numba_does(fake_kernels):
    out = gpuhost.to_device(rng.random(4))
    args = (out, int(rng.integers(-2**62, 2**62)), 2**63 + int(rng.integers(0, 2**62)),
            float(rng.random()), complex(rng.random(), rng.random()), True,
            np.float16(rng.random()), np.float32(rng.random()), np.int8(rng.integers(-128, 127)))
    got, expect = _fake_jit_launch(fake_kernels, _scalars, args)
    assert got == expect


def test_c_launch_packs_arrays_views_and_tuples_as_numba_does(fake_kernels):
    a = gpuhost.to_device(rng.random((6, 10)))
    b = gpuhost.to_device(rng.random(40).astype(np.float32))[3::2]
    c = gpuhost.to_device(rng.integers(0, 9, (2, 3, 4)).astype(np.int16)).T
    t = (int(rng.integers(0, 100)), float(rng.random()))
    got, expect = _fake_jit_launch(fake_kernels, _arrays, (a.T, b, c, t))
    assert got == expect


def _picklable_kernel(a):
    a[0] = 1


def test_dispatchers_and_configured_launches_pickle_as_numbas():
    import pickle

    d = gpuhost.jit(_picklable_kernel)
    d2 = pickle.loads(pickle.dumps(d))
    assert isinstance(d2, gpuhost.dispatcher.Dispatcher) and d2.py_func.__name__ == "_picklable_kernel"
    launch = pickle.loads(pickle.dumps(d[(5, 2), 8, 0, 16]))
    assert (launch.griddim, launch.blockdim, launch.sharedmem) == ((5, 2, 1), (8, 1, 1), 16)
    configured = d[1, 1]
    configured.pre_launch_callbacks.append(print)
    with pytest.raises(pickle.PicklingError, match="pre-launch callbacks"):
        pickle.dumps(configured)


def test_low_occupancy_warning_when_a_launch_is_configured():
    from numba.cuda.core.errors import NumbaPerformanceWarning

    d = gpuhost.jit(_picklable_kernel)
    with warnings.catch_warnings():
        warnings.resetwarnings()
        with pytest.warns(NumbaPerformanceWarning, match="Grid size 6 will likely"):
            d[(3, 2), 32]


def test_numbas_dimension_messages():
    d = gpuhost.jit(_picklable_kernel)
    with pytest.raises(ValueError, match=r"griddim must be a sequence of 1, 2 or 3 integers, "
                                         r"got \[1, 2, 3, 4\]"):
        d[(1, 2, 3, 4), 1]
    with pytest.raises(TypeError, match=r"blockdim must be a sequence of integers, got \[2.0\]"):
        d[1, 2.0]


def test_jit_warns_at_decoration_as_numba_does():
    from numba.cuda.core.errors import NumbaInvalidConfigWarning

    with pytest.warns(NumbaInvalidConfigWarning, match="not supported by CUDA"):
        gpuhost.jit(debug=True, opt=True)


def test_python_packing_of_what_c_leaves_to_numbas_rules():
    """Datetimes, timedeltas, enums and records are packed on the Python side, by numba's
    rules: the bytes equal numba's own _prepare_args (records: a device copy of the record,
    written back after the launch)."""
    import ctypes
    import enum

    from numba.cuda import types
    from numba.cuda.typing.typeof import typeof

    from gpuhost import _jitargs

    class Color(enum.IntEnum):
        RED = 3
        BLUE = 9

    args = (np.datetime64(int(rng.integers(0, 2**40)), "s"),
            np.timedelta64(int(rng.integers(-2**40, 2**40)), "ms"), Color.BLUE)
    argtypes = tuple(typeof(a) for a in args)
    assert isinstance(argtypes[2], types.EnumMember)
    retr = []
    ours = _numba.pack(argtypes, args, 0, [],
                       lambda v, t, s: _jitargs.device_view(gpuhost.current_context(), retr,
                                                            v, t, s), retr)
    theirs = _numba_kernelargs(argtypes, args)
    assert ours == [bytes(v) if not isinstance(v, int) else bytes(ctypes.c_int64(v))
                    for v in theirs]

    rec_t = np.dtype([("a", np.float64), ("b", np.int32)], align=True)
    recs = np.zeros(2, rec_t)
    recs["a"], recs["b"] = rng.random(2), rng.integers(0, 100, 2)
    retr = []
    (ptr,) = _numba.pack((typeof(recs[1]),), (recs[1],), 0, [],
                         lambda v, t, s: _jitargs.device_view(gpuhost.current_context(),
                                                              retr, v, t, s), retr)
    dev = gpuhost.from_cuda_array_interface(
        {"shape": (1,), "typestr": "|V%d" % rec_t.itemsize, "version": 3, "strides": None,
         "data": (int.from_bytes(ptr, "little"), False)}, sync=False)
    assert dev.copy_to_host().tobytes() == recs[1].tobytes()
    dev.copy_to_device(np.frombuffer(np.array((2.5, 7), rec_t).tobytes(), dev.dtype))
    for writeback in retr:
        writeback()
    assert recs[1]["a"] == 2.5 and recs[1]["b"] == 7 and recs[0]["a"] != 2.5
