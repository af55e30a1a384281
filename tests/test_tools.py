"""pycuda's tools (gpuhost/compat/pycuda/_tools.py, re-exported by gpuhost.tools): the default
device and context, per-context memoization, DeviceData, OccupancyRecord and
mark_cuda_test.  Occupancy is compared with the driver's on a real GPU."""
import itertools

import numpy as np
import pytest

import gpuhost
from conftest import run_python
from gpuhost import CudaAPIError, CudaSupportError, InvalidDeviceError
from gpuhost.tools import (
    DeviceData,
    OccupancyRecord,
    clear_context_caches,
    context_dependent_memoize,
    get_default_device,
    make_default_context,
    mark_cuda_test,
)

rng = np.random.default_rng()

CUDA_ERROR_DEVICE_UNAVAILABLE = 46
FAKE_DEVICES = "the devices are 0 (gpuhost fake H100), 1 (gpuhost fake A100)"


@pytest.fixture(autouse=True)
def _no_device_setting(monkeypatch, tmp_path):
    """No CUDA_DEVICE, and a home without ~/.cuda-device, unless a test makes them."""
    monkeypatch.delenv("CUDA_DEVICE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))


def made_context():
    """make_default_context()'s context, popped again; checks it was current."""
    ctx = make_default_context()
    try:
        assert gpuhost.gpus.current is ctx.device
    finally:
        ctx.pop()
    return ctx


# ---- make_default_context / get_default_device ----

def test_make_default_context_pushes_the_first_device_and_pop_undoes_it():
    before = gpuhost.gpus.current
    ctx = make_default_context()
    assert ctx is gpuhost.gpus[0].get_primary_context()
    assert gpuhost.current_context() is ctx
    ctx.pop()
    assert gpuhost.gpus.current is before


@pytest.mark.gpus(2)
def test_make_default_context_takes_the_device_from_cuda_device(monkeypatch):
    monkeypatch.setenv("CUDA_DEVICE", " 1\n")
    assert made_context().device.id == 1


@pytest.mark.gpus(2)
@pytest.mark.parametrize("name", [".cuda-device", ".cuda_device"])
def test_make_default_context_takes_the_device_from_the_home_file(tmp_path, name):
    (tmp_path / name).write_text("1\n")
    assert made_context().device.id == 1


@pytest.mark.gpus(2)
def test_cuda_dash_device_is_read_before_cuda_underscore_device(tmp_path):
    (tmp_path / ".cuda-device").write_text("1")
    (tmp_path / ".cuda_device").write_text("0")
    assert made_context().device.id == 1


@pytest.mark.gpus(2)
def test_cuda_device_variable_wins_over_the_file(monkeypatch, tmp_path):
    (tmp_path / ".cuda-device").write_text("0")
    monkeypatch.setenv("CUDA_DEVICE", "1")
    assert made_context().device.id == 1


@pytest.mark.fake
@pytest.mark.parametrize("value, exc, message", [
    ("abc", ValueError, "CUDA_DEVICE is not a device number: 'abc'; " + FAKE_DEVICES),
    ("1.0", ValueError, "CUDA_DEVICE is not a device number: '1.0'; " + FAKE_DEVICES),
    ("", ValueError, "CUDA_DEVICE is not a device number: ''; " + FAKE_DEVICES),
    ("2", InvalidDeviceError, "CUDA_DEVICE names device 2, which does not exist; "
     + FAKE_DEVICES),
    ("-1", InvalidDeviceError, "CUDA_DEVICE names device -1, which does not exist; "
     + FAKE_DEVICES),
])
def test_a_bad_cuda_device_names_the_variable_and_the_devices(monkeypatch, value, exc, message):
    monkeypatch.setenv("CUDA_DEVICE", value)
    with pytest.raises(exc) as info:
        make_default_context()
    assert str(info.value) == message
    with pytest.raises(exc) as info, pytest.warns(DeprecationWarning):
        get_default_device()
    assert str(info.value) == message


@pytest.mark.fake
def test_with_one_device_the_message_names_the_only_device(tmp_path):
    proc = run_python("""
from gpuhost.tools import make_default_context
try:
    make_default_context()
except Exception as e:
    print(type(e).__name__, e)
""", env={"FAKECUDA_DEVICES": "1", "CUDA_DEVICE": "3", "HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ("InvalidDeviceError CUDA_DEVICE names device 3, which does not "
                           "exist; the only device is 0 (gpuhost fake H100)\n")


@pytest.mark.fake
@pytest.mark.parametrize("name", [".cuda-device", ".cuda_device"])
@pytest.mark.parametrize("text, exc, message", [
    ("gpu1\n", ValueError, "{path} is not a device number: 'gpu1'; " + FAKE_DEVICES),
    ("7", InvalidDeviceError, "{path} names device 7, which does not exist; " + FAKE_DEVICES),
])
def test_a_bad_device_file_names_the_file_and_the_devices(tmp_path, name, text, exc, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(exc) as info:
        make_default_context()
    assert str(info.value) == message.format(path=path)


@pytest.mark.fake
def test_make_default_context_skips_a_device_that_gives_no_usable_context(fake):
    fake.fail("cuMemGetInfo", CUDA_ERROR_DEVICE_UNAVAILABLE)
    assert made_context().device.id == 1


@pytest.mark.fake
def test_make_default_context_raises_when_no_device_is_usable(fake):
    fake.fail("cuMemGetInfo", CUDA_ERROR_DEVICE_UNAVAILABLE, times=2)
    with pytest.raises(CudaSupportError) as info:
        make_default_context()
    failure = ("cuMemGetInfo failed: [46] CUDA_ERROR_DEVICE_UNAVAILABLE: device unavailable")
    assert str(info.value) == ("make_default_context(): none of the 2 devices gave a usable "
                               "context (device 0: %s; device 1: %s)" % (failure, failure))


@pytest.mark.fake
def test_a_chosen_device_that_fails_raises_without_trying_others(fake, monkeypatch):
    monkeypatch.setenv("CUDA_DEVICE", "0")
    fake.fail("cuMemGetInfo", CUDA_ERROR_DEVICE_UNAVAILABLE)
    with pytest.raises(CudaAPIError) as info:
        make_default_context()
    assert info.value.name == "CUDA_ERROR_DEVICE_UNAVAILABLE"
    assert info.value.call == "cuMemGetInfo"


def test_make_default_context_calls_ctx_maker_with_the_device():
    seen = []
    token = object()
    assert make_default_context(lambda dev: seen.append(dev) or token) is token
    assert seen == [gpuhost.gpus[0]]


def test_get_default_device_warns_and_falls_back_to_default(monkeypatch):
    with pytest.warns(DeprecationWarning) as record:
        dev = get_default_device()
    assert str(record[0].message) == ("get_default_device() is deprecated; use "
                                      "make_default_context() instead")
    assert dev is gpuhost.gpus[0]
    if len(gpuhost.gpus) > 1:
        with pytest.warns(DeprecationWarning):
            assert get_default_device(1) is gpuhost.gpus[1]
        monkeypatch.setenv("CUDA_DEVICE", "1")
        with pytest.warns(DeprecationWarning):
            assert get_default_device(0) is gpuhost.gpus[1]


# ---- context_dependent_memoize ----

def test_memoize_caches_per_arguments_and_per_context(device0):
    calls = []

    @context_dependent_memoize
    def load(a, b=0):
        calls.append((gpuhost.current_context().device.id, a, b))
        return object()

    a, b = (int(x) for x in rng.integers(0, 1000, 2))
    first = load(a)
    assert load(a) is first and calls == [(0, a, 0)]
    assert load(a, b=b) is not first and load(a, b=b) is load(a, b=b)
    assert load(a + 1) is not first
    assert len(calls) == 3
    if len(gpuhost.gpus) > 1:
        with gpuhost.gpus[1]:
            other = load(a)
            assert other is not first and load(a) is other
        assert calls[-1] == (1, a, 0) and len(calls) == 4
        assert load(a) is first
    n = len(calls)
    clear_context_caches()
    again = load(a)
    assert again is not first and len(calls) == n + 1
    load.clear_cache()
    assert load(a) is not again and len(calls) == n + 2
    assert load.__name__ == "load" and load.__wrapped__ is not None


def test_memoize_refuses_unhashable_arguments():
    @context_dependent_memoize
    def f(x):
        return x

    with pytest.raises(TypeError, match="unhashable"):
        f([1, 2])


# ---- DeviceData ----

@pytest.mark.parametrize("index", [0, 1])
def test_device_data_reads_the_device_attributes(index):
    if index >= len(gpuhost.gpus):
        pytest.skip("needs %d devices" % (index + 1))
    dev = gpuhost.gpus[index]
    attrs = dev.attributes
    dd = DeviceData(dev)
    assert dd.device is dev and dd.compute_capability == dev.compute_capability
    assert dd.max_threads == attrs["MAX_THREADS_PER_BLOCK"]
    assert dd.warp_size == attrs["WARP_SIZE"]
    assert dd.warps_per_mp * dd.warp_size == attrs["MAX_THREADS_PER_MULTIPROCESSOR"]
    assert dd.thread_blocks_per_mp == attrs["MAX_BLOCKS_PER_MULTIPROCESSOR"]
    assert dd.registers == attrs["MAX_REGISTERS_PER_BLOCK"]
    assert dd.registers_per_mp == attrs["MAX_REGISTERS_PER_MULTIPROCESSOR"]
    assert dd.shared_memory == attrs["MAX_SHARED_MEMORY_PER_BLOCK"]
    assert dd.shared_memory_per_block_optin == attrs["MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"]
    assert dd.shared_memory_per_mp == attrs["MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"]
    assert dd.reserved_shared_memory == attrs["RESERVED_SHARED_MEMORY_PER_BLOCK"]
    assert dd.multiprocessor_count == attrs["MULTIPROCESSOR_COUNT"]
    assert dd.smem_alloc_granularity == (128 if dev.compute_capability >= (8, 0) else 256)
    assert (dd.smem_granularity, dd.register_allocation_unit) == (32, "warp")
    assert (dd.register_allocation_granularity, dd.warp_allocation_granularity) == (256, 4)
    assert DeviceData(index).registers_per_mp == dd.registers_per_mp


@pytest.mark.fake
def test_device_data_of_the_fake_h100_has_hopper_limits(device0):
    dd = DeviceData()
    assert (dd.warps_per_mp, dd.thread_blocks_per_mp, dd.registers_per_mp) == (64, 32, 65536)
    assert (dd.shared_memory_per_mp, dd.reserved_shared_memory) == (233472, 1024)
    assert repr(dd) == "<DeviceData of device 0 (gpuhost fake H100), cc 9.0>"


def test_device_data_defaults_to_the_current_device():
    assert DeviceData().device is gpuhost.get_current_device()


def test_device_data_refuses_other_arguments():
    with pytest.raises(TypeError) as info:
        DeviceData("0")
    assert str(info.value) == "DeviceData() takes a Device, a device number or None, not str"


def test_device_data_alignment_helpers():
    dd = DeviceData()
    assert dd.warp_size == 32
    assert [dd.align_bytes(w) for w in (1, 2, 4, 8, 16)] == [32, 64, 128, 128, 128]
    assert dd.align_bytes() == 128
    n = int(rng.integers(1, 10_000))
    assert dd.align(n) == -(-n // 128) * 128 and dd.align(n) - n < 128
    assert dd.align(129, 1) == 160 and dd.align(128) == 128 and dd.align(0) == 0
    assert [dd.align_words(w) for w in (1, 2, 4, 8, 16)] == [32, 32, 32, 16, 8]
    assert dd.align_dtype(17, 4) == 32 and dd.align_dtype(10, 8) == 16
    assert dd.coalesce(33) == 64
    assert [dd.make_valid_tex_channel_count(s) for s in (1, 2, 3, 4)] == [1, 2, 4, 4]


@pytest.mark.parametrize("call, message", [
    (lambda dd: dd.align_bytes(3),
     "no alignment possible for fetches of size 3 (the sizes are 1, 2, 4, 8 and 16 bytes)"),
    (lambda dd: dd.align(100, 12),
     "no alignment possible for fetches of size 12 (the sizes are 1, 2, 4, 8 and 16 bytes)"),
    (lambda dd: dd.make_valid_tex_channel_count(5),
     "could not enlarge argument to valid channel count: a texture has 1, 2 or 4 channels, "
     "not 5"),
])
def test_device_data_helpers_refuse_impossible_sizes(call, message):
    with pytest.raises(ValueError) as info:
        call(DeviceData())
    assert str(info.value) == message


# ---- OccupancyRecord ----

# Worked by hand from the fake H100's limits (64 warps, 32 blocks, 65536 registers and
# 233472 bytes of shared memory per SM, 1024 reserved per block, 128-byte units; registers
# in 256-register units per warp, over 4 sub-partitions of 16384).
H100_CASES = [
    # threads, smem, regs -> blocks, limited by, warps
    (256, 0, 0, 8, "warps", 64),            # 64 warps / 8
    (32, 0, 0, 32, "device", 32),           # 64 warps would fit, 32 blocks do
    (128, 0, 40, 12, "regs", 48),           # 1280 regs/warp: 12 warps per sub-partition
    (256, 0, 32, 8, "regs", 64),            # ties with warps at 8: pycuda picks "regs"
    (1000, 0, 64, 1, "regs", 32),           # 32 warps of 2048 registers: one block
    (64, 20000, 0, 11, "smem", 22),         # 21024 -> 21120 bytes: 233472 // 21120
    (64, 232448, 0, 1, "smem", 2),          # the opt-in maximum: one block per SM
    (64, 7000, 24, 28, "smem", 56),         # 8024 -> 8064 bytes: 28; registers allow 42
    (96, 7000, 24, 21, "warps", 63),        # 3 warps per block: 64 // 3
]


@pytest.mark.fake
@pytest.mark.parametrize("threads, smem, regs, blocks, limit, warps", H100_CASES)
def test_occupancy_record_on_the_fake_h100(threads, smem, regs, blocks, limit, warps):
    occ = OccupancyRecord(DeviceData(0), threads, smem, regs)
    assert (occ.tb_per_mp, occ.limited_by, occ.warps_per_mp) == (blocks, limit, warps)
    assert occ.occupancy == warps / 64
    assert (blocks, limit) in occ.tb_per_mp_limits


@pytest.mark.fake
def test_occupancy_record_on_the_fake_a100_uses_its_smaller_shared_memory():
    occ = OccupancyRecord(DeviceData(1), 64, 20000)
    assert (occ.tb_per_mp, occ.limited_by, occ.occupancy) == (7, "smem", 14 / 64)
    assert repr(occ) == "<OccupancyRecord: 7 blocks per multiprocessor (smem), occupancy 0.219>"


@pytest.mark.fake
@pytest.mark.parametrize("args, message", [
    ((1025,), "too many threads: 1025 per block, the device allows 1024"),
    ((0,), "threads per block must be at least 1, not 0"),
    ((64, -1), "shared_mem and registers cannot be negative (-1, 0)"),
    ((64, 0, 256), "too many registers: 256 per thread, the device allows 255"),
    ((1024, 0, 65), "too many registers: 1024 threads of 65 registers do not fit in one "
                    "multiprocessor (65536 registers per block, 65536 per multiprocessor)"),
    ((288, 0, 224), "too many registers: 288 threads of 224 registers do not fit in one "
                    "multiprocessor (65536 registers per block, 65536 per multiprocessor)"),
    ((64, 232449), "too much smem: 232449 bytes per block, the device allows 232448"),
])
def test_occupancy_record_refuses_blocks_past_the_limits(args, message):
    with pytest.raises(ValueError) as info:
        OccupancyRecord(DeviceData(0), *args)
    assert str(info.value) == message


OCCUPANCY_SRC = r"""
extern "C" __global__ void light(float *x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}

#define HEAVY(name, N)                                                          \
extern "C" __global__ void name(float *out, const float *in, int n)            \
{                                                                               \
    int i = blockIdx.x * blockDim.x + threadIdx.x;                              \
    float v[N];                                                                 \
    _Pragma("unroll") for (int k = 0; k < N; k++) v[k] = in[(i + k * 97) % n];  \
    _Pragma("unroll") for (int r = 0; r < 4; r++)                               \
        _Pragma("unroll") for (int k = 0; k < N; k++)                           \
            v[k] = v[k] * v[(k + r + 1) % N] + 0.5f;                            \
    float s = 0.0f;                                                             \
    _Pragma("unroll") for (int k = 0; k < N; k++) s += v[k] * (float)(k + 1);   \
    if (i < n) out[i] = s;                                                      \
}
HEAVY(heavy, 48)
HEAVY(heavier, 112)

extern "C" __global__ void tiled(float *out, const float *in, int n)
{
    __shared__ float tile[6144];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = threadIdx.x; k < 6144; k += blockDim.x) tile[k] = in[(i + k) % n];
    __syncthreads();
    if (i < n) out[i] = tile[(threadIdx.x * 7) % 6144] + tile[6143 - threadIdx.x % 6144];
}

extern "C" __global__ void dynamic(float *out, const float *in, int n)
{
    extern __shared__ float buf[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    buf[threadIdx.x] = i < n ? in[i] : 0.0f;
    __syncthreads();
    if (i < n) out[i] = buf[blockDim.x - 1 - threadIdx.x];
}
"""


@pytest.mark.gpu
def test_occupancy_record_agrees_with_the_driver():
    dd = DeviceData()
    default = gpuhost.SourceModule(OCCUPANCY_SRC, no_extern_c=True)
    capped = gpuhost.SourceModule(OCCUPANCY_SRC, options=("-maxrregcount=32",),
                                  no_extern_c=True)
    kernels = [default.get_function(n)
               for n in ("light", "heavy", "heavier", "tiled", "dynamic")]
    kernels += [capped.get_function("heavy"), capped.get_function("heavier")]
    regs = {k.num_regs for k in kernels}
    assert len(regs) >= 3, "the kernels should span register footprints: %s" % regs
    assert kernels[3].shared_size_bytes == 6144 * 4
    big = dd.shared_memory_per_block_optin - 4096
    kernels[4].max_dynamic_shared_size_bytes = big
    mismatches = []
    checked = 0
    for k, block, dynamic in itertools.product(
            kernels, (32, 64, 96, 100, 128, 160, 256, 384, 512, 640, 768, 1000, 1024),
            (0, 1000, 12345, 40000, big)):
        if block > k.max_threads_per_block:
            continue
        if dynamic > k.max_dynamic_shared_size_bytes:
            continue  # the launch would fail: the kernel did not opt in
        driver = k.max_active_blocks_per_multiprocessor(block, dynamic)
        try:
            ours = OccupancyRecord(dd, block, k.shared_size_bytes + dynamic, k.num_regs)
            got = ours.tb_per_mp
        except ValueError:
            got = 0
        checked += 1
        if got != driver:
            mismatches.append((k.name, k.num_regs, k.shared_size_bytes, block, dynamic,
                               driver, got))
    assert checked > 100
    assert mismatches == []


@pytest.mark.gpu
def test_device_data_of_an_h100():
    dd = DeviceData()
    if dd.compute_capability != (9, 0):
        pytest.skip("not an H100 (cc %d.%d)" % dd.compute_capability)
    assert (dd.warps_per_mp, dd.thread_blocks_per_mp, dd.registers_per_mp) == (64, 32, 65536)
    assert (dd.shared_memory_per_mp, dd.shared_memory_per_block_optin) == (233472, 232448)
    assert dd.reserved_shared_memory == 1024 and dd.smem_alloc_granularity == 128


# ---- mark_cuda_test ----

def test_mark_cuda_test_runs_with_a_context_then_pops_and_clears_caches():
    seen = []

    @context_dependent_memoize
    def cached():
        return object()

    @mark_cuda_test
    def body(x, y=2):
        seen.append((gpuhost.current_context(), cached(), x, y))
        return x * y

    before = gpuhost.gpus.current
    assert body(21) == 42
    ctx, value, _, _ = seen[0]
    assert ctx is gpuhost.gpus[0].get_primary_context()
    assert gpuhost.gpus.current is before
    assert cached() is not value  # the cache was cleared
    assert [m.name for m in body.pytestmark] == ["cuda"]
    assert body.__name__ == "body"


def test_mark_cuda_test_pops_when_the_test_raises():
    @mark_cuda_test
    def body():
        raise KeyError("boom")

    before = gpuhost.gpus.current
    with pytest.raises(KeyError, match="boom"):
        body()
    assert gpuhost.gpus.current is before
