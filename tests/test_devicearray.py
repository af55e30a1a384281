"""DeviceArray and numba's array functions: exact round trips for every dtype and layout,
copies that touch only the elements asked for, the CUDA array interface, and bad input."""
import gc

import numpy as np
import pytest

import gpuhost
import gpuhost.memory
from gpuhost import CudaOutOfMemoryError
from conftest import run_python

rng = np.random.default_rng()

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
          np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128,
          np.dtype([("a", np.int32), ("b", np.float64), ("c", "S3")])]


def random_array(shape, dtype):
    """Fresh random data of any dtype (never all zeros)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    raw = rng.integers(0, 256, size=n * dtype.itemsize, dtype=np.uint8)
    if dtype.kind == "b":
        return (raw[:n] & 1).astype(bool).reshape(shape)
    if dtype.kind in "fc":  # random bit patterns may be NaN: draw real numbers instead
        real = rng.standard_normal(n * (2 if dtype.kind == "c" else 1)) * 1e3
        return real.view(np.complex128).astype(dtype).reshape(shape) if dtype.kind == "c" \
            else real.astype(dtype).reshape(shape)
    return raw.view(dtype).reshape(shape).copy()


def same(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name or "struct")
@pytest.mark.parametrize("shape", [(), (0,), (3, 0), (7,), (5, 3), (2, 3, 4), (2, 1, 3, 2),
                                   (2, 2, 1, 3, 2)])
def test_round_trip_is_exact(dtype, shape):
    host = random_array(shape, dtype)
    dev = gpuhost.to_device(host)
    assert isinstance(dev, gpuhost.DeviceArray)
    assert (dev.shape, dev.dtype, dev.ndim, dev.size) == (host.shape, host.dtype, host.ndim,
                                                          host.size)
    assert dev.nbytes == host.nbytes and dev.itemsize == host.itemsize
    back = dev.copy_to_host()
    assert same(back, host)


@pytest.mark.parametrize("order", ["C", "F"])
def test_fortran_and_c_order_round_trip(order):
    host = np.asarray(random_array((4, 5, 3), np.float64), order=order)
    dev = gpuhost.to_device(host)
    assert dev.strides == host.strides
    assert dev.is_c_contiguous() == (order == "C") and dev.is_f_contiguous() == (order == "F")
    assert dev.flags == {"C_CONTIGUOUS": order == "C", "F_CONTIGUOUS": order == "F",
                         "WRITEABLE": True}
    assert same(dev.copy_to_host(), host)


@pytest.mark.parametrize("index", [np.s_[::2], np.s_[::-1], np.s_[1:-1, ::-2],
                                   np.s_[::-1, ::3, 1:], np.s_[:, 1]])
def test_to_device_of_strided_and_negatively_strided_host_views(index):
    base = random_array((9, 8, 5), np.int32)
    view = base[index]
    assert same(gpuhost.to_device(view).copy_to_host(), np.ascontiguousarray(view))


def test_copy_to_host_into_a_strided_target_writes_only_its_elements():
    host = random_array((6, 4), np.float32)
    dev = gpuhost.to_device(host)
    big = np.full((12, 8), -7.5, np.float32)
    target = big[::2, ::2]
    assert dev.copy_to_host(target) is target
    assert same(np.ascontiguousarray(target), host)
    gaps = np.ones(big.shape, bool)
    gaps[::2, ::2] = False
    assert (big[gaps] == -7.5).all()


def test_copy_to_host_into_a_matching_array_returns_it():
    host = random_array((3, 4), np.int64)
    dev = gpuhost.to_device(host)
    out = np.empty_like(host)
    assert dev.copy_to_host(out) is out and same(out, host)
    out_f = np.empty((3, 4), np.int64, order="F")
    assert same(dev.copy_to_host(out_f), host)


def strided_view(base, shape, strides, offset_elems=0):
    """A device view into `base` through the CUDA array interface (no copy)."""
    desc = dict(base.__cuda_array_interface__)
    desc.update(shape=shape, strides=strides,
                data=(base.ptr + offset_elems * base.itemsize, False))
    return gpuhost.from_cuda_array_interface(desc, owner=base)


@pytest.mark.parametrize("layout", [
    ((4, 3), (48, 8)),          # gapped rows, every other element
    ((3, 4), (64, 4)),          # gapped rows, contiguous inside
    ((2, 3, 2), (96, 16, 8)),   # three dims, gaps everywhere
    ((5,), (-4,)),              # reversed
    ((3, 2), (-64, 8)),         # reversed rows
])
def test_strided_device_arrays_copy_exactly_and_leave_gaps_alone(layout):
    shape, strides = layout
    base_host = random_array((64,), np.int32)
    base = gpuhost.to_device(base_host)
    offset = 0 if min(strides) > 0 else 60 - 16 * (strides[0] < -4)
    view = strided_view(base, shape, strides, offset_elems=offset)
    expected_view = np.lib.stride_tricks.as_strided(base_host[offset:], shape, strides)
    assert same(view.copy_to_host(), np.ascontiguousarray(expected_view))
    new = random_array(shape, np.int32)
    view.copy_to_device(new)
    expected = base_host.copy()
    np.lib.stride_tricks.as_strided(expected[offset:], shape, strides)[...] = new
    assert same(base.copy_to_host(), expected)


def test_device_array_and_like():
    dev = gpuhost.device_array((3, 4), np.float32, order="F")
    assert dev.strides == (4, 12) and dev.is_f_contiguous()
    like = gpuhost.device_array_like(np.empty((2, 5), np.int16, order="F"))
    assert like.shape == (2, 5) and like.dtype == np.int16 and like.is_f_contiguous()
    assert gpuhost.device_array(5).shape == (5,) and gpuhost.device_array(5).dtype == np.float64
    host = random_array((3, 4), np.float32)
    dev.copy_to_device(host)
    assert same(dev.copy_to_host(), host)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("make", ["device_array", "pinned_array", "mapped_array",
                                  "managed_array"])
def test_a_subarray_dtype_adds_its_dimensions_as_in_numpy(make, order):
    dt = np.dtype(("<i4", (2, 5)))
    arr = getattr(gpuhost, make)((3, 4), dt, order=order)
    ref = np.empty((3, 4), dt, order=order)
    assert (arr.shape, arr.strides, arr.dtype) == ((3, 4, 2, 5), ref.strides, np.int32)
    host = random_array(ref.shape, np.int32)
    if make == "device_array":
        arr.copy_to_device(host)
        assert same(arr.copy_to_host(), host)
    given = getattr(gpuhost, make)((3,), ("f4", 2), strides=(16,))
    assert given.shape == (3, 2) and given.strides == (16, 4)
    with pytest.raises(ValueError, match=r"strides \(16, 4\) do not match shape \(3,\)"):
        getattr(gpuhost, make)((3,), ("f4", 2), strides=(16, 4))  # the outer strides only


def test_to_device_into_an_existing_array():
    dev = gpuhost.device_array((10,), np.uint16)
    host = random_array((10,), np.uint16)
    assert gpuhost.to_device(host, to=dev) is dev
    assert same(dev.copy_to_host(), host)


def test_to_device_of_a_device_array_is_the_same_array():
    dev = gpuhost.to_device(random_array((4,), np.int8))
    assert gpuhost.to_device(dev) is dev


def test_copies_on_a_stream_and_bind():
    s = gpuhost.stream()
    host = gpuhost.pinned_array((1000,), np.float64)
    host[:] = random_array((1000,), np.float64)
    dev = gpuhost.to_device(host, stream=s)
    out = gpuhost.pinned_array((1000,), np.float64)
    dev.copy_to_host(out, stream=s)
    s.synchronize()
    assert same(out, host)
    assert dev.stream is s  # to_device(stream=s) binds, as numba's does
    plain = gpuhost.device_array_like(host)
    assert plain.stream == 0  # numba's "no stream"
    bound = plain.bind(s)
    assert bound.stream is s and bound.ptr == plain.ptr and plain.stream == 0
    assert bound.__cuda_array_interface__["stream"] == s.handle
    bound.copy_to_device(host)
    assert same(bound.copy_to_host(), host)
    assert plain.bind().stream == 0


def test_cuda_array_interface_v3():
    host = random_array((3, 4), np.float32)
    dev = gpuhost.to_device(host)
    cai = dev.__cuda_array_interface__
    assert cai["version"] == 3 and cai["shape"] == (3, 4) and cai["typestr"] == "<f4"
    assert cai["data"] == (dev.ptr, False) and cai["strides"] is None
    assert cai["stream"] is None  # no stream bound: nothing to wait for, as numba says
    s = gpuhost.stream()
    assert dev.bind(s).__cuda_array_interface__["stream"] == s.handle
    assert dev.bind(gpuhost.default_stream()).__cuda_array_interface__["stream"] == 1  # never 0
    assert gpuhost.is_cuda_array(dev) and not gpuhost.is_cuda_array(host)
    wrapped = gpuhost.as_cuda_array(dev)
    assert wrapped is dev
    other = gpuhost.from_cuda_array_interface(cai, owner=dev)
    assert other.ptr == dev.ptr and other.owner is dev
    assert same(other.copy_to_host(), host)
    f = gpuhost.to_device(np.asfortranarray(host))
    assert f.__cuda_array_interface__["strides"] == (4, 12)


def test_foreign_exporters_are_wrapped_without_a_copy():
    dev = gpuhost.to_device(random_array((6,), np.int32))

    class Exporter:
        __cuda_array_interface__ = dev.__cuda_array_interface__

    ex = Exporter()
    wrapped = gpuhost.to_device(ex)
    assert wrapped.ptr == dev.ptr and wrapped.owner is ex
    with pytest.raises(TypeError, match="int does not export __cuda_array_interface__"):
        gpuhost.as_cuda_array(3)
    bad = dict(dev.__cuda_array_interface__, stream=0)
    with pytest.raises(ValueError, match="stream 0 is forbidden"):
        gpuhost.from_cuda_array_interface(bad)
    with pytest.raises(NotImplementedError, match="Masked arrays are not supported"):
        gpuhost.from_cuda_array_interface(dict(bad, mask=object()))


def test_numpy_conversion_copies_to_the_host_as_numba_does():
    host = random_array((3, 5), np.float64)
    dev = gpuhost.to_device(host)
    got = np.asarray(dev)
    assert type(got) is np.ndarray and got.dtype == host.dtype and same(got, host)
    got[0, 0] += 1  # a copy: the device array is untouched
    assert same(dev.copy_to_host(), host)
    assert same(np.array(dev, dtype=np.float32), host.astype(np.float32))
    assert same(np.array(dev[:, ::2]), host[:, ::2])
    assert same(np.add(dev, 1), host + 1)
    with pytest.raises(ValueError, match="`copy=False` is not supported. A copy is always created."):
        dev.__array__(copy=False)
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
        with pytest.raises(ValueError, match="copy=False"):
            np.array(dev, copy=False)


def test_array_basics():
    dev = gpuhost.to_device(random_array((4, 2), np.int16))
    here = gpuhost.get_current_device()
    assert len(dev) == 4
    assert repr(dev) == "<gpuhost.DeviceArray shape=(4, 2) dtype=int16 on device %d at %#x>" % (
        here.id, dev.ptr)
    assert dev.device is here and dev.context is gpuhost.current_context()
    assert isinstance(dev.owner, gpuhost.Allocation) and dev.owner.kind == "device"
    with pytest.raises(TypeError, match="len.. of a 0-d device array"):
        len(gpuhost.to_device(np.float32(1)))
    with pytest.raises(TypeError, match="cannot create 'gpuhost.DeviceArray' instances"):
        gpuhost.DeviceArray()
    with pytest.raises(TypeError, match="cannot create 'gpuhost.Allocation' instances"):
        gpuhost.Allocation()


def test_bad_copies_name_both_shapes_and_dtypes():
    dev = gpuhost.device_array((3, 4), np.float32)
    with pytest.raises(ValueError, match=r"the source array has shape \(4, 3\) and dtype float32; "
                                         r"the device array has shape \(3, 4\) and dtype float32"):
        dev.copy_to_device(np.zeros((4, 3), np.float32))
    with pytest.raises(ValueError, match="dtype float64; the device array has shape .3, 4. and "
                                         "dtype float32"):
        dev.copy_to_device(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="the target array has shape .2,."):
        dev.copy_to_host(np.zeros(2, np.float32))
    with pytest.raises(ValueError, match="read-only"):
        ro = np.zeros((3, 4), np.float32)
        ro.flags.writeable = False
        dev.copy_to_host(ro)
    with pytest.raises(TypeError, match="copies into a numpy array, not list"):
        dev.copy_to_host([1, 2])


def test_bad_allocations():
    with pytest.raises(TypeError, match="holds Python objects"):
        gpuhost.to_device(np.array([object()]))
    with pytest.raises(TypeError, match="holds Python objects"):
        gpuhost.device_array(3, dtype=object)
    with pytest.raises(ValueError, match="negative dimensions are not allowed"):
        gpuhost.device_array((2, -1))
    with pytest.raises(ValueError, match="too large"):
        gpuhost.device_array((2**40, 2**30))
    with pytest.raises(TypeError, match="shape must be an int or a sequence of ints"):
        gpuhost.device_array("abc")
    with pytest.raises(ValueError, match="order must be 'C' or 'F'"):
        gpuhost.device_array(3, order="K")
    with pytest.raises(ValueError, match="strides .8,. do not match shape .2, 2."):
        gpuhost.device_array((2, 2), strides=(8,))
    with pytest.raises(ValueError, match="negative strides"):
        gpuhost.device_array((2,), strides=(-8,))


def test_out_of_memory_states_the_request_and_leaks_nothing():
    here = gpuhost.get_current_device()
    total = here.total_memory
    with pytest.raises(CudaOutOfMemoryError) as info:
        gpuhost.device_array(total * 2, np.uint8)
    e = info.value
    assert isinstance(e, MemoryError) and e.requested == total * 2
    assert "out of memory allocating %d bytes of device memory on device %d" % (
        total * 2, here.id) in str(e)
    gpuhost.device_array(16)  # still usable


def live_allocations(fake):
    """Driver allocations alive once the default pool has given back the blocks it holds
    (arrays that died return their memory to the pool, not to the driver)."""
    gpuhost.memory.get_default_memory_pool().free_all_blocks()
    return fake.live("allocations")


def test_allocations_are_counted_and_freed(fake):
    gc.collect()
    before = live_allocations(fake)
    arrays = [gpuhost.device_array(1000) for _ in range(5)]
    view = gpuhost.from_cuda_array_interface(arrays[0].__cuda_array_interface__, owner=arrays[0])
    assert live_allocations(fake) == before + 5
    del arrays
    gc.collect()
    assert live_allocations(fake) == before + 1  # the view keeps its owner alive
    del view
    assert live_allocations(fake) == before


def test_defer_cleanup_holds_frees_until_the_block_ends(fake):
    gc.collect()
    before = live_allocations(fake)
    with gpuhost.defer_cleanup():
        a = gpuhost.device_array(100)
        with gpuhost.defer_cleanup():
            del a
            assert live_allocations(fake) == before + 1
        assert live_allocations(fake) == before + 1  # still inside the outer block
    assert live_allocations(fake) == before


def test_pinned_mapped_and_managed_arrays():
    p = gpuhost.pinned_array((4, 4), np.float32)
    assert isinstance(p, np.ndarray) and p.shape == (4, 4) and p.flags.writeable
    p[:] = random_array((4, 4), np.float32)
    assert same(gpuhost.to_device(p).copy_to_host(), p)
    m = gpuhost.mapped_array((8,), np.int32, portable=True, wc=True)
    assert m.__cuda_array_interface__["data"][0] != 0
    m2 = gpuhost.managed_array((8,), np.int64)
    m2[:] = random_array((8,), np.int64)
    assert m2.__cuda_array_interface__["data"][0] == m2.__array_interface__["data"][0]
    dev_view = gpuhost.as_cuda_array(m2)
    assert same(dev_view.copy_to_host(), np.asarray(m2))
    assert gpuhost.pinned_array_like(p).shape == (4, 4)
    assert gpuhost.mapped_array_like(p).dtype == np.float32
    assert gpuhost.pinned_array(0).size == 0


def test_pinned_and_mapped_context_managers(fake):
    a, b = random_array((100,), np.float64), random_array((10, 3), np.int8)
    before = fake.live("registrations")
    with gpuhost.pinned(a, b):
        assert fake.live("registrations") == before + 2
        assert same(gpuhost.to_device(a).copy_to_host(), a)
    assert fake.live("registrations") == before
    with gpuhost.mapped(b) as dev:
        assert isinstance(dev, gpuhost.DeviceArray) and dev.shape == b.shape
        assert same(dev.copy_to_host(), b)
    with gpuhost.mapped(a, b) as devs:
        assert [d.shape for d in devs] == [a.shape, b.shape]
    assert fake.live("registrations") == before
    with pytest.raises(ValueError, match="write-combined memory can only be allocated"):
        with gpuhost.mapped(a, wc=True):
            pass


AFTER_RESET = r"""
import warnings, gc, numpy as np, gpuhost
warnings.simplefilter("error")
dev = gpuhost.to_device(np.arange(10))
p = gpuhost.pinned_array(10)
gpuhost.gpus[0].reset()
try:
    dev.copy_to_host()
except gpuhost.CudaAPIError as e:
    print(e.name)
try:
    dev.__cuda_array_interface__
except gpuhost.CudaAPIError as e:
    print(e.name)
del dev, p
gc.collect()
print(gpuhost.to_device(np.arange(3)).copy_to_host().tolist())
"""


def test_arrays_of_a_reset_context_raise_and_free_quietly():
    proc = run_python(AFTER_RESET)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:3] == ["CUDA_ERROR_CONTEXT_IS_DESTROYED"] * 2 + ["[0, 1, 2]"]
    assert proc.stderr == ""


@pytest.mark.gpu
def test_zero_copy_interop_with_cupy_torch_and_numba():
    host = random_array((5, 7), np.float32)
    dev = gpuhost.to_device(host)
    cupy = pytest.importorskip("cupy")
    c = cupy.asarray(dev)
    assert c.data.ptr == dev.ptr and same(cupy.asnumpy(c), host)
    c *= 2  # written through CuPy, read through gpuhost
    cupy.cuda.runtime.deviceSynchronize()
    assert same(dev.copy_to_host(), host * 2)
    theirs = cupy.asarray(random_array((3, 3), np.int64))
    ours = gpuhost.as_cuda_array(theirs)
    assert ours.ptr == theirs.data.ptr and same(ours.copy_to_host(), cupy.asnumpy(theirs))
    torch = pytest.importorskip("torch")
    t = torch.as_tensor(dev, device="cuda")
    assert t.data_ptr() == dev.ptr
    t += 1
    torch.cuda.synchronize()
    assert same(dev.copy_to_host(), host * 2 + 1)
    try:
        from numba import cuda as ncuda
    except ImportError:
        return
    n = ncuda.as_cuda_array(dev)
    assert n.device_ctypes_pointer.value == dev.ptr
    assert same(n.copy_to_host(), host * 2 + 1)


INDICES = [np.s_[1], np.s_[-1], np.s_[1:3], np.s_[::2], np.s_[::-1], np.s_[::-2, 1:],
           np.s_[..., 2], np.s_[None, 1], np.s_[:, None, ::-3], np.s_[2, ..., ::2],
           np.s_[1, 2], np.s_[-1, -4, 0], np.s_[0, 0, ...], np.s_[5:2], np.s_[1, :, None]]


@pytest.mark.parametrize("key", INDICES, ids=repr)
def test_getitem_follows_numpy_and_shares_memory(key):
    host = random_array((4, 6, 5), np.float64)
    dev = gpuhost.to_device(host)
    expected = host[key]
    got = dev[key]
    if np.ndim(expected) == 0 and not isinstance(expected, np.ndarray):
        assert isinstance(got, np.generic) and got == expected
        return
    assert isinstance(got, gpuhost.DeviceArray)
    assert got.shape == expected.shape and got.strides == expected.strides
    assert same(got.copy_to_host(), np.ascontiguousarray(expected))
    assert got.owner is dev.owner  # a view: no new allocation


def test_full_integer_index_returns_a_numpy_scalar():
    host = random_array((3, 4), np.int32)
    dev = gpuhost.to_device(host)
    assert dev[2, 3] == host[2, 3] and isinstance(dev[2, 3], np.int32)
    assert dev[-1][-1] == host[-1, -1]
    zero_d = gpuhost.to_device(np.float32(2.5))
    assert zero_d[()] == np.float32(2.5)


def test_bad_indices():
    dev = gpuhost.to_device(random_array((3, 4), np.int32))
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        dev[3, 0]
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 3"):
        dev[5]
    with pytest.raises(TypeError, match="only basic indexing"):
        dev[[0, 1]]
    with pytest.raises(TypeError, match="only basic indexing"):
        dev[np.array([True, False, True])]
    with pytest.raises(TypeError, match="only basic indexing"):
        dev["a"]
    with pytest.raises(TypeError, match="cannot be deleted"):
        del dev[0]


@pytest.mark.parametrize("key,value", [
    (np.s_[1], 7), (np.s_[:, 2], -1.5), (np.s_[::2, ::-1], "array"), (np.s_[1, 2], 42),
    (np.s_[...], "row"), (np.s_[::-1, 1:3], "array"),
], ids=repr)
def test_setitem_writes_exactly_the_selected_elements(key, value):
    host = random_array((5, 4), np.float32)
    dev = gpuhost.to_device(host)
    if value == "array":
        value = random_array(host[key].shape, np.float32)
    elif value == "row":
        value = random_array((4,), np.float32)  # broadcast over the rows
    host[key] = value
    dev[key] = value
    assert same(dev.copy_to_host(), host)


def test_setitem_from_a_device_array_and_broadcast_errors():
    host = random_array((4, 3), np.int64)
    dev = gpuhost.to_device(host)
    src = random_array((3,), np.int64)
    dev[1] = gpuhost.to_device(src)
    host[1] = src
    assert same(dev.copy_to_host(), host)
    with pytest.raises(ValueError, match=r"could not broadcast input array from shape \(2,\) into shape "
                                         r"\(4,3\)"):
        dev[...] = np.zeros(2, np.int64)


def test_views_reshape_ravel_view_transpose_split():
    host = random_array((4, 6), np.int16)
    dev = gpuhost.to_device(host)
    assert same(dev.T.copy_to_host(), np.ascontiguousarray(host.T))
    assert same(dev.transpose((1, 0)).copy_to_host(), np.ascontiguousarray(host.T))
    assert same(dev.reshape(3, 8).copy_to_host(), host.reshape(3, 8))
    assert same(dev.reshape((2, -1)).copy_to_host(), host.reshape(2, -1))
    assert same(dev.ravel().copy_to_host(), host.ravel())
    assert same(dev.view(np.uint8).copy_to_host(), host.view(np.uint8))
    assert same(dev.T.reshape(24, order="F").copy_to_host(), host.T.reshape(24, order="F"))
    with pytest.raises(NotImplementedError, match="not C-contiguous needs a copy"):
        dev.T.reshape(24)
    with pytest.raises(NotImplementedError, match="ravel on non-contiguous array"):
        dev[:, ::2].ravel()
    flat = gpuhost.to_device(random_array((10,), np.float64))
    parts = flat.split(4)
    assert [p.shape for p in parts] == [(4,), (4,), (2,)]
    assert same(np.concatenate([p.copy_to_host() for p in parts]), flat.copy_to_host())
    with pytest.raises(ValueError, match="split.. works on 1-d arrays"):
        dev.split(2)
    with pytest.raises(ValueError, match="section must be positive"):
        flat.split(0)
    with pytest.raises(ValueError, match=r"cannot reshape array of size 24 into shape \(5,5\)"):
        dev.reshape(5, 5)


def test_views_keep_their_owner_alive(fake):
    gc.collect()
    before = live_allocations(fake)
    host = random_array((8,), np.int32)
    view = gpuhost.to_device(host)[2:6]
    gc.collect()
    assert live_allocations(fake) == before + 1
    assert same(view.copy_to_host(), host[2:6])
    del view
    assert live_allocations(fake) == before


@pytest.mark.parametrize("max_version", [None, (1, 0), (1, 2)])
def test_dlpack_round_trip_without_copy(max_version):
    host = random_array((3, 5), np.float32)
    dev = gpuhost.to_device(host)[:, 1:4]  # strided: strides travel in elements
    assert dev.__dlpack_device__() == (2, gpuhost.get_current_device().id)
    capsule = dev.__dlpack__(max_version=max_version)
    back = gpuhost._core.dlpack_import(capsule)
    assert back.ptr == dev.ptr and back.shape == dev.shape and back.strides == dev.strides
    assert same(back.copy_to_host(), np.ascontiguousarray(host[:, 1:4]))
    with pytest.raises(TypeError, match="capsule was consumed already: a capsule can be imported once"):
        gpuhost._core.dlpack_import(capsule)  # a capsule is consumed once


def test_from_dlpack_of_an_exporter():
    host = random_array((6,), np.int16)
    dev = gpuhost.to_device(host)

    class Exporter:
        def __dlpack__(self, stream=None, max_version=None):
            return dev.__dlpack__(stream=stream, max_version=max_version)

        def __dlpack_device__(self):
            return dev.__dlpack_device__()

    got = gpuhost.from_dlpack(Exporter())
    assert got.ptr == dev.ptr and same(got.copy_to_host(), host)
    assert gpuhost.from_dlpack(dev) is dev
    with pytest.raises(TypeError, match="int does not export __dlpack__"):
        gpuhost.from_dlpack(3)
    with pytest.raises(BufferError, match="not in CUDA device memory .DLPack device type 1."):
        gpuhost.from_dlpack(np.arange(3))


def test_dlpack_keeps_the_array_alive_until_the_consumer_is_done(fake):
    gc.collect()
    before = live_allocations(fake)
    dev = gpuhost.device_array(100)
    capsule = dev.__dlpack__()
    del dev
    gc.collect()
    assert live_allocations(fake) == before + 1  # the unconsumed capsule owns it
    del capsule
    gc.collect()
    assert live_allocations(fake) == before
    dev = gpuhost.device_array(100)
    imported = gpuhost._core.dlpack_import(dev.__dlpack__(max_version=(1, 0)))
    del dev
    gc.collect()
    assert live_allocations(fake) == before + 1  # the import's owner runs the deleter
    del imported
    gc.collect()
    assert live_allocations(fake) == before


def test_dlpack_export_errors():
    dev = gpuhost.to_device(random_array((4,), np.float64))
    with pytest.raises(BufferError, match="copy=True is not supported"):
        dev.__dlpack__(copy=True)
    here = gpuhost.get_current_device().id
    with pytest.raises(BufferError, match="the array is on CUDA device %d, not .1, %d."
                                          % (here, here + 1)):
        dev.__dlpack__(dl_device=(1, here + 1))
    with pytest.raises(ValueError, match="stream 0 is ambiguous"):
        dev.__dlpack__(stream=0)
    with pytest.raises(TypeError, match="stream must be an int or None"):
        dev.__dlpack__(stream="s")
    for bogus in (3, 300, 65535, -2, -2**63, 2**16 + 4, 2**56, 2**63 - 1, 2**64, 2**100):
        with pytest.raises(ValueError, match="is not a CUDA stream handle"):
            dev.__dlpack__(stream=bogus)
    with pytest.raises(BufferError, match="has no DLPack equivalent"):
        gpuhost.to_device(random_array((2,), DTYPES[-1])).__dlpack__()
    odd = strided_view(dev, (2,), (12,))  # float64 elements 12 bytes apart
    with pytest.raises(BufferError, match="not a multiple of its item size"):
        odd.__dlpack__()


def test_dlpack_orders_the_consumer_after_the_arrays_stream(fake):
    host = random_array((8,), np.int32)
    s = gpuhost.stream()
    dev = gpuhost.to_device(host).bind(s)
    other, bystander = gpuhost.stream(), gpuhost.stream()
    gpuhost.synchronize()

    def export(stream):
        """(records, waits) the export made, and whether s and other are idle after it,
        with the fake's queue held: a queued op keeps its stream busy."""
        records, waits = fake.calls("cuEventRecord"), fake.calls("cuStreamWaitEvent")
        fake.gate_close()
        try:
            got = gpuhost._core.dlpack_import(dev.__dlpack__(stream=stream))
            idle = (s.query(), other.query(), bystander.query())
        finally:
            fake.gate_open()
        assert same(got.copy_to_host(), host)
        return (fake.calls("cuEventRecord") - records,
                fake.calls("cuStreamWaitEvent") - waits) + idle

    # an event recorded on the array's stream, and the consumer's stream waits for it
    assert export(other.handle) == (1, 1, False, False, True)
    assert export(-1) == (0, 0, True, True, True)  # no ordering asked
    assert export(s.handle) == (0, 0, True, True, True)  # the array's own stream
    # the record comes first: where it fails no wait is made; where the wait fails the
    # record was made
    fake.fail("cuEventRecord", 1)
    waits = fake.calls("cuStreamWaitEvent")
    with pytest.raises(gpuhost.CudaAPIError, match="cuEventRecord failed"):
        dev.__dlpack__(stream=other.handle)
    assert fake.calls("cuStreamWaitEvent") == waits
    fake.fail("cuStreamWaitEvent", 1)
    records = fake.calls("cuEventRecord")
    with pytest.raises(gpuhost.CudaAPIError, match="cuStreamWaitEvent failed"):
        dev.__dlpack__(stream=other.handle)
    assert fake.calls("cuEventRecord") == records + 1


@pytest.mark.gpu
def test_dlpack_interop_with_torch_and_cupy():
    torch = pytest.importorskip("torch")
    host = random_array((4, 3), np.float32)
    dev = gpuhost.to_device(host)
    t = torch.from_dlpack(dev)
    assert t.data_ptr() == dev.ptr and t.is_cuda
    t.mul_(3)
    torch.cuda.synchronize()
    assert same(dev.copy_to_host(), host * 3)
    theirs = torch.arange(10, device="cuda", dtype=torch.int64)
    ours = gpuhost.from_dlpack(theirs)
    assert ours.ptr == theirs.data_ptr() and ours.copy_to_host().tolist() == list(range(10))
    cupy = pytest.importorskip("cupy")
    c = cupy.from_dlpack(dev)
    assert c.data.ptr == dev.ptr and same(cupy.asnumpy(c), host * 3)


@pytest.mark.parametrize("src_index,dst_order", [(np.s_[...], "C"), (np.s_[::-1], "C"),
                                                 (np.s_[...], "F"), (np.s_[:, ::2], "C")])
def test_copy_to_device_from_a_device_array(src_index, dst_order):
    host = random_array((4, 6), np.float64)
    src = gpuhost.to_device(host)[src_index]
    expected = np.ascontiguousarray(host[src_index])
    dst = gpuhost.device_array(expected.shape, np.float64, order=dst_order)
    dst.copy_to_device(src)
    assert same(dst.copy_to_host(), expected)
    s = gpuhost.stream()
    dst2 = gpuhost.device_array(expected.shape, np.float64, order=dst_order)
    dst2.copy_to_device(src, stream=s)
    s.synchronize()
    assert same(dst2.copy_to_host(), expected)
    with pytest.raises(ValueError, match="the source array has shape"):
        gpuhost.device_array((2,)).copy_to_device(src)


def test_contiguous_device_copies_stay_on_the_device(fake):
    src = gpuhost.to_device(random_array((1000,), np.int32))
    dst = gpuhost.device_array_like(src)
    before = (fake.calls("cuMemcpyDtoD"), fake.calls("cuMemcpyDtoH"))
    dst.copy_to_device(src)
    dst[:] = src
    assert (fake.calls("cuMemcpyDtoD"), fake.calls("cuMemcpyDtoH")) == (before[0] + 2, before[1])
    assert same(dst.copy_to_host(), src.copy_to_host())


def test_ipc_handle_round_trip_in_process_on_the_fake(fake):
    import pickle

    host = random_array((4, 5), np.int32)
    base = gpuhost.to_device(host)
    view = base[1:, ::2]
    handle = pickle.loads(pickle.dumps(view.get_ipc_handle()))
    assert isinstance(handle, gpuhost.IpcArrayHandle)
    assert handle.shape == view.shape and handle.strides == view.strides
    assert handle.offset == view.ptr - base.ptr
    before = fake.live("ipc_mappings")
    with handle as opened:  # the fake opens in-process handles; the real driver refuses
        assert fake.live("ipc_mappings") == before + 1
        assert same(opened.copy_to_host(), np.ascontiguousarray(host[1:, ::2]))
        opened[0, 0] = 99
    assert fake.live("ipc_mappings") == before
    assert base.copy_to_host()[1, 0] == 99
    with gpuhost.open_ipc_array(handle.handle, shape=(4, 5), dtype=np.int32) as raw:
        assert raw.copy_to_host()[1, 0] == 99
    assert fake.live("ipc_mappings") == before


REFUSED_IN_PROCESS = 201  # CUDA_ERROR_INVALID_CONTEXT: what the real driver says


def test_ipc_handle_opens_in_the_exporting_process_as_a_view_of_the_array(fake):
    """The driver refuses a handle in the process that exported it: gpuhost then gives a
    view of the exported array, which keeps it alive, and writes are shared."""
    import pickle

    host = random_array((6, 4), np.float32)
    base = gpuhost.to_device(host)
    view = base[2:]
    handle = pickle.loads(pickle.dumps(view.get_ipc_handle()))
    fake.fail("cuIpcOpenMemHandle", REFUSED_IN_PROCESS, times=-1)
    try:
        before = fake.live("ipc_mappings")
        with handle as opened:
            assert fake.live("ipc_mappings") == before  # no driver mapping
            assert opened.ptr == view.ptr and opened.shape == (4, 4)
            assert same(opened.copy_to_host(), host[2:])
            opened[0] = -1
            assert (base.copy_to_host()[2] == -1).all()
            with gpuhost.open_ipc_array(handle.handle, (4, 4), np.float32,
                                        offset=handle.offset) as raw:
                assert raw.ptr == opened.ptr and (raw.copy_to_host()[0] == -1).all()
            del base, view
            gc.collect()
            assert same(opened.copy_to_host()[1:], host[3:])  # still alive: the view holds it
        del opened, raw
        gc.collect()
        # the exported array is gone: nothing to view, and the driver's refusal stands
        with pytest.raises(gpuhost.CudaAPIError, match="CUDA_ERROR_INVALID_CONTEXT"):
            handle.open()
        ev = gpuhost.event(interprocess=True, timing=False)
        ev_handle = pickle.loads(pickle.dumps(ev.ipc_handle()))
        fake.fail("cuIpcOpenEventHandle", REFUSED_IN_PROCESS, times=-1)
        assert ev_handle.open() is ev
        del ev
        gc.collect()
        with pytest.raises(gpuhost.CudaAPIError, match="CUDA_ERROR_INVALID_CONTEXT"):
            ev_handle.open()
    finally:
        fake.clear_faults()


def test_device_arrays_and_events_take_weak_references():
    import weakref

    dev = gpuhost.to_device(random_array((8,), np.int16))
    ev = gpuhost.event()
    refs = [weakref.ref(dev), weakref.ref(ev), weakref.ref(dev[2:])]
    assert refs[0]() is dev and refs[1]() is ev
    gc.collect()
    assert refs[2]() is None
    del dev, ev
    gc.collect()
    assert refs[0]() is None and refs[1]() is None


def test_allocations_take_weak_references_that_die_with_them():
    import weakref

    host = random_array((96,), np.float64)
    d = gpuhost.to_device(host)
    owner = weakref.ref(d.owner)  # the pool's Allocation the array keeps alive
    assert isinstance(owner(), gpuhost.Allocation) and owner().ptr == d.device_ctypes_pointer.value
    np.testing.assert_array_equal(d.copy_to_host(), host)
    died = []
    allocs = [gpuhost._core.mem_alloc(int(rng.integers(1, 4096)), kind)
              for kind in ("device", "managed", "pinned", "mapped")]
    refs = [weakref.ref(a, died.append) for a in allocs]
    assert [weakref.proxy(a).size for a in allocs] == [a.size for a in allocs]
    del d, allocs
    gc.collect()
    assert owner() is None and all(r() is None for r in refs)
    assert sorted(map(id, died)) == sorted(map(id, refs))  # each callback ran once


def test_a_cuda_array_interface_stream_that_cannot_be_a_handle_is_refused():
    dev = gpuhost.to_device(np.arange(4, dtype=np.float32))
    desc = dict(dev.__cuda_array_interface__, version=3)
    for bogus in (12345, 2**40 + 3, 2**60):
        with pytest.raises(ValueError, match="%#x is not a CUDA stream handle" % bogus):
            gpuhost.from_cuda_array_interface(dict(desc, stream=bogus), owner=dev)
    view = gpuhost.from_cuda_array_interface(dict(desc, stream=1), owner=dev)
    assert same(view.copy_to_host(), np.arange(4, dtype=np.float32))


def test_a_dtype_string_numpy_chokes_on_is_a_type_error():
    dev = gpuhost.to_device(np.zeros(4, np.float32))
    for bad in (",", ",,", "2,"):
        with pytest.raises(TypeError, match="data type .* not understood"):
            dev.view(bad)
        with pytest.raises(TypeError, match="data type .* not understood"):
            gpuhost.device_array(3, bad)


def test_registering_an_empty_array_registers_and_unregisters_nothing(fake):
    import warnings

    calls = (fake.calls("cuMemHostRegister"), fake.calls("cuMemHostUnregister"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no cleanup warning for a range never registered
        with gpuhost.pinned(np.zeros(0), np.zeros((3, 0), np.float32)):
            pass
        with gpuhost.mapped(np.zeros(0)) as dev:
            assert dev.size == 0
        del dev
        gc.collect()
    assert (fake.calls("cuMemHostRegister"), fake.calls("cuMemHostUnregister")) == calls


def test_ipc_errors():
    with pytest.raises(ValueError, match="an IPC memory handle has 64 bytes, not 3"):
        gpuhost._core.ipc_open(b"abc", 8)
    with pytest.raises(TypeError, match="takes a DeviceArray, not int"):
        gpuhost._core.ipc_get_handle(3)
    mapped = gpuhost.mapped_array(16, np.uint8)
    with pytest.raises(ValueError, match="only arrays in device memory"):
        gpuhost.as_cuda_array(mapped).get_ipc_handle()


IPC_ARRAY = r"""
import multiprocessing as mp, pickle
import numpy as np
def child(blob, q):
    import gpuhost
    handle = pickle.loads(blob)
    with handle as arr:
        got = arr.copy_to_host()
        arr[...] = got * 2 + 1          # written here, read back by the parent
        gpuhost.synchronize()
    q.put(got.tolist())
if __name__ == "__main__":
    import gpuhost
    host = np.random.default_rng().integers(0, 1000, size=(3, 4)).astype(np.int64)
    dev = gpuhost.to_device(host)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=child, args=(pickle.dumps(dev[1:].get_ipc_handle()), q))
    p.start()
    seen = q.get(timeout=120)
    p.join(60)
    assert seen == host[1:].tolist(), (seen, host)
    expected = host.copy()
    expected[1:] = host[1:] * 2 + 1
    assert (dev.copy_to_host() == expected).all()
    print("ok", p.exitcode)
"""


@pytest.mark.gpu
def test_ipc_array_written_by_another_process(tmp_path):
    script = tmp_path / "ipc_array.py"
    script.write_text(IPC_ARRAY)
    proc = run_python("import runpy; runpy.run_path(%r, run_name='__main__')" % str(script),
                      timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["ok", "0"]


@pytest.mark.parametrize("dtype,value", [(np.uint8, 7), (np.int16, -2), (np.float32, 1.5),
                                         (np.float64, 0.0), (np.int64, -1), (np.complex64, 0),
                                         (np.float64, 3.25)])
@pytest.mark.parametrize("key", [np.s_[...], np.s_[1:4], np.s_[::-1, 1:], np.s_[:, 2],
                                 np.s_[::2, ::3]], ids=repr)
def test_scalar_assignment_is_exact_and_touches_nothing_else(dtype, value, key):
    host = random_array((5, 6), dtype)
    dev = gpuhost.to_device(host)
    dev[key] = value
    host[key] = value
    assert same(dev.copy_to_host(), host)


def test_scalar_assignment_uses_memsets_where_the_pattern_allows(fake):
    dev = gpuhost.to_device(random_array((64, 32), np.float32))
    calls = lambda: sum(fake.calls(n) for n in ("cuMemsetD32", "cuMemsetD2D32", "cuMemsetD8",
                                                "cuMemsetD2D8", "cuMemsetD16", "cuMemsetD2D16"))
    host_copies = lambda: fake.calls("cuMemcpyHtoD") + fake.calls("cuMemcpy2D")
    before, before_copies = calls(), host_copies()
    dev[...] = 0.5             # whole array: one 1-D memset
    dev[:, 3:9] = 2.0          # gapped rows: one 2-D memset
    dev[10] = -1.0
    assert calls() == before + 3 and host_copies() == before_copies
    d64 = gpuhost.to_device(random_array((10,), np.float64))
    before = calls()
    d64[...] = 0.0             # an 8-byte value whose halves repeat: still a memset
    d64[::2] = 1.0             # 8-byte pattern that does not repeat: through the host
    assert calls() == before + 1
    assert d64.copy_to_host().tolist() == [1.0, 0.0] * 5


@pytest.mark.gpus(2)
def test_copies_between_devices_are_peer_copies_and_exact(device0):
    host = random_array((50, 3), np.float64)
    with gpuhost.gpus[1]:
        on1 = gpuhost.to_device(host)
        s1 = gpuhost.stream()
    on0 = gpuhost.device_array_like(host)
    assert on0.device is gpuhost.gpus[0] and on1.device is gpuhost.gpus[1]
    on0.copy_to_device(on1)
    assert same(on0.copy_to_host(), host)
    back = gpuhost.device_array_like(host)
    with gpuhost.gpus[1]:
        other = gpuhost.device_array_like(host)
    other.copy_to_device(on0, stream=s1)  # async on the destination's stream
    s1.synchronize()
    assert same(other.copy_to_host(), host)
    back[::2] = on1[::2]  # strided across devices: through the host, still exact
    assert same(back.copy_to_host()[::2], host[::2])
    with pytest.raises(gpuhost.CudaDriverError, match="the array is on device 0 but the stream "
                                                      "is device 1's"):
        on0.copy_to_host(stream=s1)


def test_peer_copy_goes_through_cuMemcpyPeer(fake, device0):
    with gpuhost.gpus[1]:
        on1 = gpuhost.to_device(random_array((8,), np.int32))
    on0 = gpuhost.device_array_like(on1)
    before = fake.calls("cuMemcpyPeer")
    on0.copy_to_device(on1)
    assert fake.calls("cuMemcpyPeer") == before + 1
    assert same(on0.copy_to_host(), on1.copy_to_host())


def test_c_views_match_the_python_planner_on_random_keys():
    """DeviceArray.__getitem__ answers ints and slices in C; gpuhost._arrays.getitem plans
    every key by numpy's rules. Both must give the same view, or the same error."""
    import random

    from gpuhost import _arrays

    rng = random.Random(np.random.randint(1 << 30))
    compared = 0
    for _ in range(3000):
        shape = tuple(rng.randint(0, 5) for _ in range(rng.randint(1, 4)))
        dev = gpuhost.device_array(shape, np.int16, order=rng.choice("CF"),
                                   stream=rng.choice([0, gpuhost.stream()]))
        if rng.random() < 0.5:
            dev = dev[tuple(slice(None, None, rng.choice([1, -1, 2, -2])) for _ in shape)]
        key = []
        for axis in range(rng.randint(0, dev.ndim)):
            if rng.random() < 0.3 and dev.shape[axis]:
                key.append(rng.randint(-dev.shape[axis] - 1, dev.shape[axis]))
            else:
                key.append(slice(rng.choice([None, -7, -2, 0, 1, 3, 9]),
                                 rng.choice([None, -7, -1, 0, 2, 4, 9]),
                                 rng.choice([None, 1, 2, 3, -1, -2])))
        key = key[0] if len(key) == 1 and rng.random() < 0.5 else tuple(key)
        try:
            want = _arrays.getitem(dev, key)
        except Exception as e:  # the same error, worded the same
            with pytest.raises(type(e)) as info:
                dev[key]
            assert str(info.value) == str(e)
            continue
        got = dev[key]
        if not isinstance(want, gpuhost.DeviceArray):
            assert got == want
            continue
        compared += 1
        assert (got.ptr, got.shape, got.strides, got.dtype, got.stream, got.owner) == \
            (want.ptr, want.shape, want.strides, want.dtype, want.stream, want.owner)
    assert compared > 1500


@pytest.mark.parametrize("make", [
    lambda: random_array((7, 5), np.float32),
    lambda: np.asfortranarray(random_array((4, 6, 3), np.int64)),
    lambda: random_array((9,), np.dtype(">i4")),
    lambda: random_array((1, 5, 1), np.uint8),
    lambda: random_array((3,), np.complex128)[::-1].copy(),
])
@pytest.mark.parametrize("bound", [False, True])
def test_to_device_of_contiguous_arrays_matches_the_general_path(make, bound):
    host = make()
    stream = gpuhost.stream() if bound else 0
    dev = gpuhost.to_device(host, stream=stream)
    assert dev.shape == host.shape and dev.dtype == host.dtype
    assert dev.is_c_contiguous() == host.flags.c_contiguous
    assert dev.is_f_contiguous() == host.flags.f_contiguous
    assert dev.stream is stream if bound else dev.stream == 0
    general = gpuhost.device_array_like(host)
    general.copy_to_device(host)
    assert dev.strides == general.strides
    back = dev.copy_to_host(stream=stream)
    if bound:
        stream.synchronize()
    assert same(back, host)
