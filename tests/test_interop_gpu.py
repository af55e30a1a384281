"""Other libraries' arrays with the real libraries on a GPU: PyTorch tensors (DLPack's C
exchange API) and CuPy arrays as kernel arguments (CUDA C++ and gpuhost.jit), typed as
numba-cuda types them, their producers' streams ordered before the launch (a producer still
running when the launch is queued), assignment and copies, the bad inputs a user meets.
Needs a GPU with torch and CuPy installed (the GPU machine has both); each is skipped where
missing.
"""
import numpy as np
import pytest

import gpuhost
from conftest import DRIVER

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch") if DRIVER == "real" else None
cupy = pytest.importorskip("cupy") if DRIVER == "real" else None
rng = np.random.default_rng()

COPY = r"""
extern "C" __global__ void copy(float *dst, const float *src, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i];
}
extern "C" __global__ void spin(long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {}
}
"""


@pytest.fixture(autouse=True)
def _same_device():
    """torch's and CuPy's current device: the one gpuhost's plugin gave this worker."""
    dev = gpuhost.get_current_device().id
    with torch.cuda.device(dev), cupy.cuda.Device(dev):
        yield


@pytest.fixture(scope="module")
def kernels():
    m = gpuhost.SourceModule(COPY)
    return m.get_function("copy"), m.get_function("spin")


@pytest.fixture(scope="module")
def numba_typeof():
    """numba-cuda's typeof.  numba-cuda 0.30 registers an implementation for np.row_stack as
    it imports, a name NumPy 2.5 removed: where it is missing it is lent for the import."""
    with pytest.MonkeyPatch.context() as mp:
        if not hasattr(np, "row_stack"):
            mp.setattr(np, "row_stack", np.vstack, raising=False)
        from numba.cuda.typing.typeof import typeof
    return typeof


def jit_copy():
    @gpuhost.jit
    def copy(dst, src):
        i = gpuhost.grid(1)
        if i < dst.size:
            dst[i] = src[i]

    return copy


# ---- the producer's stream is ordered before the launch ----

def test_a_torch_tensor_written_on_a_busy_stream_is_read_after_it(kernels):
    copy, _ = kernels
    n = 1 << 16
    producer = torch.cuda.Stream()
    consumer = gpuhost.stream()
    for trial in range(3):
        value = float(rng.integers(1, 1000))
        src = torch.zeros(n, device="cuda")
        torch.cuda.synchronize()
        with torch.cuda.stream(producer):
            torch.cuda._sleep(50_000_000)  # ~25 ms of the producer's stream busy
            src.fill_(value)  # written only after the sleep
            dst = gpuhost.device_array(n, np.float32)
            copy[(n + 255) // 256, 256, consumer](dst, src, n)  # torch's current stream: producer
        host = dst.copy_to_host(stream=consumer)
        consumer.synchronize()
        assert (host == value).all(), "trial %d read the tensor before it was written" % trial


def test_a_cupy_array_written_on_a_busy_stream_is_read_after_it(kernels):
    copy, spin = kernels
    n = 1 << 16
    producer = cupy.cuda.Stream(non_blocking=True)
    consumer = gpuhost.stream(non_blocking=True)
    jcopy = jit_copy()
    for launch in ("nvrtc", "jit"):
        value = float(rng.integers(1, 1000))
        src = cupy.zeros(n, cupy.float32)
        cupy.cuda.Device().synchronize()
        with producer:
            spin[1, 1, gpuhost.external_stream(producer.ptr)](50_000_000)
            src.fill(value)
            dst = gpuhost.device_array(n, np.float32)
            if launch == "nvrtc":
                copy[(n + 255) // 256, 256, consumer](dst, src, n)
            else:
                jcopy[(n + 255) // 256, 256, consumer](dst, src)
        host = dst.copy_to_host(stream=consumer)
        consumer.synchronize()
        assert (host == value).all(), "%s read the array before it was written" % launch


def test_a_jit_launch_orders_after_torch_too():
    n = 1 << 16
    k = jit_copy()
    producer = torch.cuda.Stream()
    consumer = gpuhost.stream(non_blocking=True)
    for _ in range(2):  # the second launch takes C's path
        value = float(rng.integers(1, 1000))
        src = torch.zeros(n, device="cuda")
        torch.cuda.synchronize()
        with torch.cuda.stream(producer):
            torch.cuda._sleep(50_000_000)
            src.fill_(value)
            dst = gpuhost.device_array(n, np.float32)
            k[(n + 255) // 256, 256, consumer](dst, src)
        consumer.synchronize()
        assert (dst.copy_to_host() == value).all()


# ---- typed as numba types them ----

def torch_cases():
    return {
        "1-D": lambda: torch.rand(64, device="cuda"),
        "2-D C": lambda: torch.rand(8, 6, device="cuda"),
        "2-D F": lambda: torch.rand(8, 6, device="cuda").T,
        "sliced": lambda: torch.rand(64, device="cuda")[::3],
        "0-d": lambda: torch.tensor(2.5, device="cuda"),
        "empty": lambda: torch.zeros(0, 4, device="cuda"),
        "1x4 from a transpose": lambda: torch.rand(4, 1, device="cuda").T,
        "column": lambda: torch.rand(4, 2, device="cuda")[:, :1],
        "float16": lambda: torch.rand(6, device="cuda").half(),
        "float64": lambda: torch.rand(6, device="cuda", dtype=torch.float64),
        "int32": lambda: torch.arange(6, device="cuda", dtype=torch.int32),
        "uint8": lambda: torch.arange(6, device="cuda", dtype=torch.uint8),
        "bool": lambda: torch.rand(6, device="cuda") > 0.5,
        "complex64": lambda: torch.rand(6, device="cuda", dtype=torch.complex64),
        "bfloat16": lambda: torch.rand(6, device="cuda").bfloat16(),
        "requires grad": lambda: torch.rand(6, device="cuda", requires_grad=True),
    }


def cupy_cases():
    return {
        "1-D": lambda: cupy.random.rand(64),
        "2-D F": lambda: cupy.asfortranarray(cupy.random.rand(8, 6)),
        "negative stride": lambda: cupy.random.rand(64)[::-2],
        "0-d": lambda: cupy.array(1.5),
        "empty": lambda: cupy.zeros((0, 3)),
        "complex128": lambda: cupy.random.rand(6) + 1j,
        "int16": lambda: cupy.arange(6, dtype=cupy.int16),
    }


@pytest.mark.parametrize("lib, case", [("torch", c) for c in torch_cases()]
                         + [("cupy", c) for c in cupy_cases()])
def test_foreign_arrays_key_as_numba_types_them(numba_typeof, lib, case):
    make = (torch_cases() if lib == "torch" else cupy_cases())[case]
    a = make()

    @gpuhost.jit
    def touch(x):
        pass

    touch[1, 1](a)  # numba resolves the overload (its typeof), gpuhost keys it in C
    touch[1, 1](make())  # another array of the same kind: C's path, no new overload
    (types,) = [sig for sig in touch.overloads]
    assert types == (numba_typeof(a),)
    assert touch._jit_key((a,)) is not None  # keyed in C
    assert len(touch._jit_entries()) == 1


def test_bfloat16_and_complex_tensors_compute_as_numba_would():
    @gpuhost.jit
    def twice(out, x):
        i = gpuhost.grid(1)
        if i < x.size:
            out[i] = x[i] * 2

    x = torch.rand(64, device="cuda", dtype=torch.complex64)
    out = torch.zeros_like(x)
    twice[1, 64](out, x)
    twice[1, 64](out, x)
    torch.cuda.synchronize()
    assert torch.equal(out, x * 2)

    @gpuhost.jit
    def same(out, x):
        i = gpuhost.grid(1)
        if i < x.size:
            out[i] = x[i]

    b = torch.rand(64, device="cuda").bfloat16()
    ob = torch.zeros_like(b)
    same[1, 64](ob, b)
    torch.cuda.synchronize()
    assert torch.equal(ob, b)


def test_float8_and_host_tensors_are_clear_errors(kernels):
    copy, _ = kernels

    @gpuhost.jit
    def touch(x):
        pass

    f8 = torch.zeros(4, device="cuda").to(torch.float8_e4m3fn)
    with pytest.raises(TypeError, match=r"float8/float6/float4 format, which numba has no type "
                                        r"for; pass a view of it as unsigned integers"):
        touch[1, 1](f8)
    touch[1, 1](f8.view(torch.uint8))
    cpu = torch.zeros(4)
    with pytest.raises(TypeError, match=r"Tensor is in host memory \(CPU\)"):
        touch[1, 1](cpu)
    dst = gpuhost.device_array(4, np.float32)
    with pytest.raises(TypeError, match=r"copy\(\): parameter 1: Tensor is in host memory"):
        copy[1, 4](dst, cpu, 4)


def test_a_tensor_that_requires_grad_is_written_as_torch_extensions_write_it():
    @gpuhost.jit
    def fill(x, v):
        i = gpuhost.grid(1)
        if i < x.size:
            x[i] = v

    t = torch.zeros(32, device="cuda", requires_grad=True)
    fill[1, 32](t, 3.0)
    torch.cuda.synchronize()
    assert (t.detach().cpu().numpy() == 3.0).all()


@pytest.fixture(scope="module")
def add1():
    """In-place x += 1 kernels for 0-, 1- and 2-D arrays."""
    @gpuhost.jit
    def add1_0d(x):
        x[()] += 1

    @gpuhost.jit
    def add1_1d(x):
        for i in range(x.shape[0]):
            x[i] += 1

    @gpuhost.jit
    def add1_2d(x):
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                x[i, j] += 1

    return add1_0d, add1_1d, add1_2d


@pytest.mark.parametrize("case", list(cupy_cases()))
def test_cupy_arrays_of_every_layout_compute_as_numpy_does(add1, case):
    a = cupy_cases()[case]()
    expect = cupy.asnumpy(a) + 1
    add1[a.ndim][1, 1](a)
    add1[a.ndim][1, 1](a)  # again: C's path
    cupy.cuda.Device().synchronize()
    np.testing.assert_array_equal(cupy.asnumpy(a), expect + 1)


# ---- assignment, copies, NVRTC kernels ----

def test_assignment_and_copies_take_torch_and_cupy(kernels):
    host = rng.standard_normal(256).astype(np.float32)
    d = gpuhost.device_array(256, np.float32)
    d[:] = torch.from_numpy(host).cuda()
    np.testing.assert_array_equal(d.copy_to_host(), host)
    d[10:20] = cupy.asarray(host[:10])
    host[10:20] = host[:10]
    np.testing.assert_array_equal(d.copy_to_host(), host)
    back = gpuhost.from_dlpack(torch.from_numpy(host).cuda())
    np.testing.assert_array_equal(back.copy_to_host(), host)
    copy, _ = kernels
    t = torch.zeros(256, device="cuda")
    copy[1, 256](t, cupy.asarray(host), 256)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(t.cpu().numpy(), host)


def test_numba_cuda_libraries_take_gpuhost_streams(monkeypatch):
    if not hasattr(np, "row_stack"):  # numba-cuda 0.30 needs it as it imports and compiles
        monkeypatch.setattr(np, "row_stack", np.vstack, raising=False)
    from numba.cuda.random import create_xoroshiro128p_states

    s = gpuhost.stream()
    states = create_xoroshiro128p_states(64, seed=7, stream=s)
    ref = create_xoroshiro128p_states(64, seed=7)
    s.synchronize()
    np.testing.assert_array_equal(states.copy_to_host(), ref.copy_to_host())


@pytest.mark.gpus(2)
def test_a_tensor_of_another_gpu(kernels):
    copy, _ = kernels  # loaded on this worker's device
    other = (gpuhost.get_current_device().id + 1) % len(gpuhost.gpus)
    t = torch.ones(8, device="cuda:%d" % other)
    dst = gpuhost.device_array(8, np.float32)
    try:
        copy[1, 8](dst, t, 8)  # through peer access where the devices have it
    except ValueError as e:
        assert "cannot reach" in str(e)
    else:
        np.testing.assert_array_equal(dst.copy_to_host(), np.ones(8, np.float32))
