"""Other libraries' device arrays read in C (csrc/arrays/interop*.c): DLPack's C exchange API (a
producer built in the test double, tests/fakecuda/fakedlpack/), the CUDA array interface,
__dlpack__; the use's stream ordered after the exporter's; what kernel launches, gpuhost.jit's
keys and packing, copies and views make of them; every malformed export refused with a clear
exception before anything is launched.  The same paths with PyTorch and CuPy run on a GPU
(test_interop_gpu.py).
"""
import re
import struct
import sys

import numpy as np
import pytest

import gpuhost
from conftest import DRIVER, DlpackOnly, fake_last_launch

sys_path_fake = __import__("os").path.join(__import__("os").path.dirname(__file__), "fakecuda")
if sys_path_fake not in sys.path:
    sys.path.insert(0, sys_path_fake)
import build as fakecuda_build  # noqa: E402

LEGACY, PER_THREAD = 1, 2
FLOAT32, FLOAT64, BF16, FLOAT8 = (2, 32, 1), (2, 64, 1), (4, 16, 1), (10, 8, 1)
CUDA, CPU = (2, 0), (1, 0)
rng = np.random.default_rng()


@pytest.fixture(scope="module")
def fd():
    """The _fakedlpack module: its Tensor type exports DLPack's C exchange API."""
    return fakecuda_build.fakedlpack_module()


@pytest.fixture(autouse=True)
def _default_stream(fd):
    fd.set_current_stream(0)
    yield
    fd.set_current_stream(0)


def random_array(shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def tensor_over(fd, dev, cls=None, **kw):
    """A fake exchange-API tensor over a gpuhost array's memory (strides in elements)."""
    item = dev.dtype.itemsize
    return (cls or fd.Tensor)(dev.ptr, dev.shape, tuple(s // item for s in dev.strides),
                              kw.pop("dtype", (2, item * 8, 1) if dev.dtype.kind == "f"
                                     else (0, item * 8, 1)), kw.pop("device", CUDA), **kw)


class CAI:
    """Exports a CUDA array interface dict as given (an instance attribute)."""

    def __init__(self, desc):
        self.__cuda_array_interface__ = desc


def cai_of(dev, **changes):
    desc = dict(dev.__cuda_array_interface__)
    desc.update(changes)
    return desc


# ---- reading: the exchange API ----

def test_an_exchange_api_tensor_is_read_with_no_python_call(fd):
    dev = gpuhost.to_device(random_array((3, 4)))
    before = fd.calls()
    info = gpuhost._core._foreign_info(tensor_over(fd, dev))
    after = fd.calls()
    assert info["source"] == "x"
    assert (info["ptr"], info["shape"], info["strides"]) == (dev.ptr, (3, 4), (16, 4))
    assert info["dtype"] == np.float32 and info["dl"] == FLOAT32 and info["device"] == 0
    assert info["producer"] == LEGACY and info["layout"] == "C" and not info["readonly"]
    assert after["dltensor"] == before["dltensor"] + 1
    assert after["stream"] == before["stream"] + 1
    assert after["dlpack"] == before["dlpack"]  # __dlpack__ never called


@pytest.mark.parametrize("shape, strides, layout", [
    ((5,), None, "C"), ((3, 4), (1, 3), "F"), ((3, 4), (8, 2), "A"), ((), None, "C"),
    ((0, 4), (4, 1), "C"), ((4, 1), (2, 1), "A"), ((1, 4), (1, 1), "C"), ((6,), (-1,), "A"),
])
def test_exchange_layouts_as_numpy_would_type_them(fd, shape, strides, layout):
    base = gpuhost.device_array(64, np.float64)
    t = fd.Tensor(base.ptr + 256, shape, strides, FLOAT64, CUDA)
    info = gpuhost._core._foreign_info(t)
    expect = np.lib.stride_tricks.as_strided(np.empty(1), shape,
                                             [8 * s for s in (strides or [])] or None)
    assert info["shape"] == shape and info["ndim"] == len(shape)
    if strides is not None:
        assert info["strides"] == tuple(8 * s for s in strides)
    else:
        assert info["strides"] == np.empty(shape).strides
    assert info["layout"] == layout
    assert layout == ("C" if expect.flags.c_contiguous else "F" if expect.flags.f_contiguous
                      else "A")


@pytest.mark.parametrize("dl, dtype", [
    ((0, 8, 1), np.int8), ((0, 16, 1), np.int16), ((0, 32, 1), np.int32), ((0, 64, 1), np.int64),
    ((1, 8, 1), np.uint8), ((1, 16, 1), np.uint16), ((1, 32, 1), np.uint32),
    ((1, 64, 1), np.uint64), ((2, 16, 1), np.float16), (FLOAT32, np.float32),
    (FLOAT64, np.float64), ((5, 64, 1), np.complex64), ((5, 128, 1), np.complex128),
    ((6, 8, 1), np.bool_), (BF16, None), (FLOAT8, None),
])
def test_exchange_dtypes(fd, dl, dtype):
    base = gpuhost.device_array(8, np.float64)
    info = gpuhost._core._foreign_info(fd.Tensor(base.ptr, (2,), None, dl, CUDA))
    assert info["dl"] == dl and info["itemsize"] == dl[1] // 8
    assert info["dtype"] == (np.dtype(dtype) if dtype is not None else None)


def test_the_exporters_current_stream_is_the_producer(fd):
    s = gpuhost.stream()
    fd.set_current_stream(s.handle)
    base = gpuhost.device_array(4)
    assert gpuhost._core._foreign_info(fd.Tensor(base.ptr, (4,), None, FLOAT64, CUDA),
                                       stream=s)["producer"] == s.handle


@pytest.mark.parametrize("device, where", [(CPU, "host memory (CPU)"),
                                           ((3, 0), "pinned host memory (CUDAHost)"),
                                           ((7, 0), "memory of another kind than CUDA's")])
def test_a_tensor_in_host_memory_is_refused(fd, device, where):
    t = fd.Tensor(0x1000, (4,), None, FLOAT32, device)
    with pytest.raises(TypeError, match=r"Tensor is in %s \(DLPack device type %d\), not "
                                        r"device memory; move it to the GPU first"
                       % (re.escape(where), device[0])):
        gpuhost._core._foreign_info(t)


@pytest.mark.parametrize("dl, what", [((2, 32, 4), "4 lanes"), ((1, 4, 1), "4 bits")])
def test_vector_and_sub_byte_dtypes_are_refused(fd, dl, what):
    base = gpuhost.device_array(4)
    with pytest.raises(BufferError, match="gpuhost takes whole bytes, one lane") as info:
        gpuhost._core._foreign_info(fd.Tensor(base.ptr, (2,), None, dl, CUDA))
    assert what in str(info.value)


def test_a_capsule_of_the_wrong_name_or_version_is_refused(fd):
    base = gpuhost.device_array(4)
    with pytest.raises(TypeError, match=r"WrongNameTensor.__dlpack_c_exchange_api__ is not a "
                                        r"DLPack exchange API \(a PyCapsule named "
                                        r"'dlpack_exchange_api'\)"):
        gpuhost._core._foreign_info(fd.WrongNameTensor(base.ptr, (4,)))
    with pytest.raises(BufferError, match="Version2Tensor's DLPack exchange API is version 2.0; "
                                          "gpuhost reads version 1.x"):
        gpuhost._core._foreign_info(fd.Version2Tensor(base.ptr, (4,)))


def test_an_owning_only_table_is_read_and_its_tensor_deleted(fd):
    dev = gpuhost.to_device(random_array(6))
    before = fd.calls()
    info = gpuhost._core._foreign_info(tensor_over(fd, dev, fd.OwningOnlyTensor, readonly=True))
    after = fd.calls()
    assert info["ptr"] == dev.ptr and info["readonly"] and info["source"] == "x"
    assert after["managed"] == before["managed"] + 1
    assert after["deleted"] == before["deleted"] + 1  # released once read


def test_the_producers_own_error_comes_through(fd):
    base = gpuhost.device_array(4)
    with pytest.raises(RuntimeError, match="fake tensor refuses to be exchanged"):
        gpuhost._core._foreign_info(fd.Tensor(base.ptr, (4,), fail=True))


# ---- reading: the CUDA array interface ----

def test_a_cai_v3_stream_is_the_producer():
    dev = gpuhost.to_device(random_array(5))
    s = gpuhost.stream()
    for stream, producer in [(None, None), (1, LEGACY), (2, PER_THREAD), (s.handle, s.handle)]:
        info = gpuhost._core._foreign_info(CAI(cai_of(dev, stream=stream)))
        assert info["producer"] == producer and info["source"] == "c"
    assert gpuhost._core._foreign_info(CAI(cai_of(dev, version=2, stream=s.handle)))[
        "producer"] is None  # version 2 has no stream


@pytest.mark.parametrize("change, exc, message", [
    (dict(version=4), ValueError, r"version 4 is not one gpuhost knows \(0, 1, 2, 3\)"),
    (dict(version="3"), ValueError, r"version '3' is not one gpuhost knows"),
    (dict(shape=(-1,)), ValueError, r"shape \(-1,\) has a negative extent"),
    (dict(shape="x"), TypeError, "shape must be a tuple of at most 64 ints, not 'x'"),
    (dict(shape=(2.5,)), TypeError, "shape must hold ints, not float"),
    (dict(typestr=4), TypeError, "typestr must be a str, not int"),
    (dict(typestr="|O"), TypeError, "holds Python objects"),
    (dict(data=[1, False]), TypeError, r"data must be a \(pointer, read_only\) tuple"),
    (dict(data=("1", False)), TypeError, "data pointer must be an int, not str"),
    (dict(data=(0, False)), ValueError, r"data pointer is null for an array of shape \(5,\)"),
    (dict(strides=(6,)), ValueError, r"strides \(6,\) are not multiples of its item size "
                                     r"\(4 bytes\)"),
    (dict(strides=(4, 4)), ValueError, "strides has 2 items for 1 dimensions"),
    (dict(stream=0), ValueError, "stream 0 is forbidden by the protocol"),
    (dict(stream="s"), TypeError, "stream must be an int or None, not str"),
    (dict(stream=12345), ValueError, "is not a CUDA stream handle"),
    (dict(mask=object()), NotImplementedError, "Masked arrays are not supported"),
])
def test_a_malformed_interface_is_refused_naming_what(change, exc, message):
    dev = gpuhost.to_device(random_array(5))
    with pytest.raises(exc, match=message):
        gpuhost._core._foreign_info(CAI(cai_of(dev, **change)))


@pytest.mark.parametrize("key", ["version", "shape", "typestr", "data"])
def test_an_interface_missing_a_key_is_refused(key):
    desc = cai_of(gpuhost.to_device(random_array(3)))
    del desc[key]
    with pytest.raises(ValueError, match="CAI's __cuda_array_interface__ has no '%s'" % key):
        gpuhost._core._foreign_info(CAI(desc))


def test_an_interface_that_is_not_a_dict_or_refuses_is_reported():
    with pytest.raises(TypeError, match="__cuda_array_interface__ must be a dict, not list"):
        gpuhost._core._foreign_info(CAI([1, 2]))

    class Refuses:
        @property
        def __cuda_array_interface__(self):
            raise RuntimeError("requires grad")

    with pytest.raises(RuntimeError, match="requires grad"):
        gpuhost._core._foreign_info(Refuses())
    assert gpuhost._core._foreign_info(object()) is None  # exports nothing: not an array


def test_views_and_copies_take_strides_of_any_byte_count():
    rec = np.zeros(4, dtype=[("a", np.float32), ("b", np.float64)])  # packed: itemsize 12
    rec["b"] = random_array(4, np.float64)
    dev = gpuhost.to_device(rec)
    field = CAI(dict(shape=(4,), typestr="<f8", data=(dev.ptr + 4, False), strides=(12,),
                     version=3))
    view = gpuhost.as_cuda_array(field)  # a record's field: strides 12 for 8-byte items
    assert view.strides == (12,)
    np.testing.assert_array_equal(view.copy_to_host(), rec["b"])


# ---- numba's typing of foreign arrays ----

@pytest.fixture(scope="module")
def numba_typeof():
    """numba-cuda's typeof; the test is skipped where numba-cuda (the jit extra) is not
    installed.  numba-cuda 0.30 registers an implementation for np.row_stack as it imports,
    a name NumPy 2.5 removed: where it is missing it is lent for the import alone."""
    with pytest.MonkeyPatch.context() as mp:
        if not hasattr(np, "row_stack"):
            mp.setattr(np, "row_stack", np.vstack, raising=False)
        typing = pytest.importorskip("numba.cuda.typing.typeof",
                                     reason="needs numba-cuda (the jit extra)")
    return typing.typeof


def layout_cases():
    cases = [((5,), None), ((3, 4), (1, 3)), ((3, 4), (8, 2)), ((), None), ((0, 4), (4, 1)),
             ((4, 1), (2, 1)), ((1, 4), (1, 1)), ((2, 3, 4), None), ((2, 3, 4), (1, 2, 6)),
             ((2, 3, 4), (12, 1, 3))]
    r = np.random.default_rng(7)
    for _ in range(30):
        nd = int(r.integers(1, 4))
        shape = tuple(int(x) for x in r.integers(0, 4, nd))
        strides = tuple(int(x) for x in r.choice([-3, -1, 1, 2, 3, 4, 12], nd))
        cases.append((shape, strides))
    return cases


@pytest.mark.parametrize("shape, strides", layout_cases())
@pytest.mark.parametrize("readonly", [False, True])
def test_dlpack_arrays_are_typed_as_numba_types_them(numba_typeof, fd, shape, strides, readonly):
    base = gpuhost.device_array(4096, np.float32)
    cls = fd.OwningOnlyTensor if readonly else fd.Tensor
    t = cls(base.ptr + 8192, shape, strides, FLOAT32, CUDA, readonly)
    ty = numba_typeof(t)  # numba reads it through __dlpack__ (cuda.core)
    info = gpuhost._core._foreign_info(t)
    assert (info["layout"], info["ndim"], info["readonly"]) == (ty.layout, ty.ndim,
                                                                 not ty.mutable)


@pytest.mark.parametrize("shape, strides", layout_cases())
@pytest.mark.parametrize("typestr", ["<f4", "<f8", "|i1", "<c8", "<u2"])
def test_interface_arrays_are_typed_as_numba_types_them(numba_typeof, shape, strides, typestr):
    item = np.dtype(typestr).itemsize
    desc = dict(shape=shape, typestr=typestr, data=(0x7F0000000000, False), version=3,
                strides=None if strides is None else tuple(item * s for s in strides))
    ty = numba_typeof(CAI(desc))  # numba's own rule for the interface (bit widths and all)
    info = gpuhost._core._foreign_info(CAI(desc))
    assert (info["layout"], info["ndim"], info["dtype"]) == (ty.layout, ty.ndim, np.dtype(typestr))


def test_interface_dtypes_numba_cannot_type_through_it_are_left_to_numba():
    desc = dict(shape=(3,), typestr="|b1", data=(0x7F0000000000, False), version=3, strides=(1,))
    assert gpuhost._core._foreign_info(CAI(desc))["layout"] == ""  # numba's typeof fails there
    desc["strides"] = None
    assert gpuhost._core._foreign_info(CAI(desc))["layout"] == "C"


# ---- kernel launches (the fake's kernels mode records them) ----

PTX8 = (".version 8.0\n.target sm_75\n.address_size 64\n.visible .entry eight(\n"
        + ",\n".join("\t.param .u64 .ptr .global .align 4 eight_param_%d" % i for i in range(8))
        + "\n)\n{\n\tret;\n}\n")


@pytest.fixture
def eight(fake_kernels):
    m = gpuhost.Module(PTX8)
    yield m.get_function("eight")
    m.unload()


def pointers(params):
    return list(struct.unpack("<8Q", params))


def test_a_launch_packs_every_kind_of_array_and_orders_once_per_stream(device0, fd, eight,
                                                                     fake_kernels):
    arrays = [gpuhost.to_device(random_array(16)) for _ in range(8)]
    producer, consumer = gpuhost.stream(), gpuhost.stream()
    fd.set_current_stream(producer.handle)
    args = [arrays[0], tensor_over(fd, arrays[1]), tensor_over(fd, arrays[2]),
            CAI(cai_of(arrays[3], stream=producer.handle)), CAI(cai_of(arrays[4], stream=1)),
            DlpackOnly(arrays[5]), CAI(cai_of(arrays[6])), tensor_over(fd, arrays[7])]
    calls = ("cuEventRecord", "cuStreamWaitEvent", "cuEventCreate")
    eight[1, 32, consumer](*args)  # the context's ordering event is made once, here
    before = [fake_kernels.calls(c) for c in calls]
    eight[1, 32, consumer](*args)
    params, _ = fake_last_launch()
    assert pointers(params) == [a.ptr for a in arrays]
    after = [fake_kernels.calls(c) for c in calls]
    # two producer streams (the exchange API's and the interface's are the same one, and the
    # legacy default stream): one record and one wait each; the DLPack exporter (a gpuhost
    # array) ordered the launch's stream after its own itself; no event was made again
    assert [a - b for a, b in zip(after, before)] == [3, 3, 0]


def test_a_launch_on_the_producers_own_stream_orders_nothing(fd, eight, fake_kernels):
    arrays = [gpuhost.to_device(random_array(4)) for _ in range(8)]
    s = gpuhost.stream()
    fd.set_current_stream(s.handle)
    before = fake_kernels.calls("cuStreamWaitEvent")
    eight[1, 1, s](*[tensor_over(fd, a) for a in arrays])
    eight[1, 1](*[CAI(cai_of(a, stream=1)) for a in arrays])  # legacy on legacy
    assert fake_kernels.calls("cuStreamWaitEvent") == before
    assert pointers(fake_last_launch()[0]) == [a.ptr for a in arrays]


@pytest.mark.parametrize("make, exc, message", [
    (lambda fd, d: fd.Tensor(d.ptr, (4,), None, FLOAT32, CPU), TypeError,
     r"eight\(\): parameter 3: _fakedlpack.Tensor is in host memory \(CPU\)"),
    (lambda fd, d: CAI(cai_of(d, stream=0)), ValueError,
     r"eight\(\): parameter 3: CAI's __cuda_array_interface__ stream 0 is forbidden"),
    (lambda fd, d: fd.Version2Tensor(d.ptr, (4,)), BufferError, "version 2.0"),
    (lambda fd, d: [1, 2], TypeError, r"eight\(\): parameter 3 \(a 8-byte integer or pointer\) "
                                      r"cannot take list"),
])
def test_bad_foreign_arguments_launch_nothing(fd, eight, fake_kernels, make, exc, message):
    arrays = [gpuhost.to_device(random_array(4)) for _ in range(8)]
    launches = fake_kernels.launches()
    args = list(arrays)
    args[3] = make(fd, arrays[3])
    with pytest.raises(exc, match=message):
        eight[1, 1](*args)
    assert fake_kernels.launches() == launches


def test_a_consumed_capsule_is_refused():
    dev = gpuhost.to_device(random_array(4))
    capsule = dev.__dlpack__(stream=None)
    gpuhost._core.dlpack_import(capsule)
    with pytest.raises(TypeError, match="capsule was consumed already"):
        gpuhost._core.dlpack_import(capsule)


def test_versioned_and_unversioned_capsules_through_dlpack(fd):
    host = random_array((2, 3))
    dev = gpuhost.to_device(host)
    t = tensor_over(fd, dev)
    for capsule in (t.__dlpack__(max_version=(1, 0)), t.__dlpack__()):
        got = gpuhost._core.dlpack_import(capsule)
        assert got.ptr == dev.ptr and got.shape == (2, 3)
        np.testing.assert_array_equal(got.copy_to_host(), host)
    info = gpuhost._core._foreign_info(DlpackOnly(dev))
    assert info["source"] == "d" and info["keeps"] and info["shape"] == (2, 3)


# ---- the public functions ----

def test_from_dlpack_takes_the_exchange_api_and_keeps_the_tensor(fd):
    host = random_array((4, 5))
    dev = gpuhost.to_device(host)
    before = fd.calls()
    got = gpuhost.from_dlpack(tensor_over(fd, dev))
    assert fd.calls()["managed"] == before["managed"] + 1 and fd.calls()["dlpack"] == before[
        "dlpack"]
    np.testing.assert_array_equal(got.copy_to_host(), host)
    deleted = fd.calls()["deleted"]
    del got
    assert fd.calls()["deleted"] == deleted + 1  # the owning tensor released with the array


def test_from_dlpack_orders_the_legacy_stream_after_the_producer(fd, fake, device0):
    dev = gpuhost.to_device(random_array(3))
    s = gpuhost.stream()
    fd.set_current_stream(s.handle)
    before = fake.calls("cuStreamWaitEvent")
    gpuhost.from_dlpack(tensor_over(fd, dev))
    assert fake.calls("cuStreamWaitEvent") == before + 1
    with pytest.raises(BufferError, match="not in CUDA device memory"):
        gpuhost.from_dlpack(tensor_over(fd, dev, device=CPU))


def test_copies_and_to_device_take_foreign_arrays(fd, device0):
    host = random_array((3, 4))
    src = gpuhost.to_device(host)
    for foreign in (tensor_over(fd, src), CAI(cai_of(src)), DlpackOnly(src)):
        dst = gpuhost.device_array((3, 4), np.float32)
        dst.copy_to_device(foreign)
        np.testing.assert_array_equal(dst.copy_to_host(), host)
        np.testing.assert_array_equal(gpuhost.to_device(foreign).copy_to_host(), host)


def test_a_bfloat16_tensor_is_raw_bytes_to_the_jit_slow_path_and_an_error_elsewhere(fd):
    base = gpuhost.device_array(8, np.uint16)
    t = fd.Tensor(base.ptr, (8,), None, BF16, CUDA)
    view = gpuhost._core._foreign_array(t, void_ok=True)
    assert view.dtype == np.dtype("V2") and view.ptr == base.ptr and view.shape == (8,)
    with pytest.raises(BufferError, match=r"DLPack dtype \(code 4, 16 bits\), which has no NumPy"):
        gpuhost._core._foreign_array(t)
    assert gpuhost._core._foreign_array(fd.Tensor(1 << 20, (2,), None, FLOAT32, CPU),
                                        host_ok=True) is None


# ---- gpuhost.jit's keys and packing ----

@pytest.fixture
def dispatcher():
    return gpuhost._core.JitDispatcher()


def test_foreign_arrays_key_as_gpuhost_arrays_of_the_same_numba_type(fd, dispatcher):
    dev = gpuhost.to_device(random_array((3, 4)))
    own = dispatcher._jit_key((dev, dev.T, 1.5))
    assert dispatcher._jit_key((tensor_over(fd, dev), tensor_over(fd, dev.T), 1.5)) == own
    ro = dispatcher._jit_key((tensor_over(fd, dev, fd.OwningOnlyTensor, readonly=True),
                              dev.T, 1.5))
    assert ro != own  # numba types a read-only array apart


def test_foreign_key_is_left_to_numba_where_its_typing_fails(fd, dispatcher):
    base = gpuhost.device_array(4)
    desc = dict(shape=(3,), typestr="|b1", data=(base.ptr, False), version=3, strides=(1,))
    assert dispatcher._jit_key((CAI(desc),)) is None
    with pytest.raises(TypeError, match=r"argument 0: _fakedlpack.Tensor holds DLPack dtype \(code 10, 8 "
                                        r"bits\): a float8/float6/float4 format, which numba"):
        dispatcher._jit_key((fd.Tensor(base.ptr, (2,), None, FLOAT8, CUDA),))
    bf = dispatcher._jit_key((fd.Tensor(base.ptr, (2,), None, BF16, CUDA),))
    assert bf is not None and bf != dispatcher._jit_key((gpuhost.device_array(2, np.float16),))


def test_keys_of_any_number_of_arguments(dispatcher):
    args = tuple(np.float32(i) for i in range(300))
    key = dispatcher._jit_key(args)
    assert key is not None and key == dispatcher._jit_key(tuple(np.float32(-i) for i in range(300)))
    assert dispatcher._jit_key(args[:299]) != key


def test_foreign_arrays_pack_as_gpuhost_arrays(device0, fd, dispatcher, fake_kernels):
    ptx = (".version 8.0\n.target sm_75\n.address_size 64\n.visible .entry k(\n"
           + ",\n".join("\t.param .u64 k_param_%d" % i for i in range(2 * 9))
           + "\n)\n{\n\tret;\n}\n")
    kernel = gpuhost.Module(ptx).get_function("k")
    dev = gpuhost.to_device(random_array((3, 4)))[:, 1:]
    plan = b"A\x02A\x02"
    own = dispatcher._jit_pack(plan, (dev, dev), kernel)
    assert own is not None
    for foreign in (tensor_over(fd, dev), CAI(cai_of(dev)), DlpackOnly(dev)):
        assert dispatcher._jit_pack(plan, (dev, foreign), kernel) == own
    words = struct.unpack("<18q", own)
    assert words[:9] == (0, 0, 9, 4, dev.ptr, 3, 3, 16, 4)


# ---- NCCL buffers ----

@pytest.mark.skipif(DRIVER != "fake", reason="the fake NCCL (one process)")
def test_nccl_takes_foreign_buffers(fd, device0):
    from gpuhost import nccl

    host = random_array(16)
    send = gpuhost.to_device(host)
    recv = gpuhost.device_array(16, np.float32)
    comm = nccl.Communicator(1, nccl.get_unique_id(), 0)
    try:
        comm.all_reduce(tensor_over(fd, send), CAI(cai_of(recv)))
        np.testing.assert_array_equal(recv.copy_to_host(), host)
        with pytest.raises(TypeError, match=r"all_reduce\(\): send: _fakedlpack.Tensor is in host "
                                                         r"memory"):
            comm.all_reduce(tensor_over(fd, send, device=CPU), recv)
    finally:
        comm.destroy()


# ---- gpuhost Streams in numba-cuda's own functions ----

NUMBA_STREAMS = """
import os, sys
import numpy as np
np.row_stack = getattr(np, "row_stack", np.vstack)
numba_first = sys.argv[1] == "numba-first"
if numba_first:
    from numba.cuda.cudadrv import driver
import gpuhost
if not numba_first:
    from numba.cuda.cudadrv import driver
s = gpuhost.stream()
assert driver._stream_handle(s) == s.handle and driver._stream_handle(0) == 0
try:
    driver._stream_handle(object())
except TypeError as e:
    assert "Expected a Stream object or 0" in str(e)
else:
    raise AssertionError("numba's own refusal is gone")
print("ok")
"""


@pytest.mark.parametrize("order", ["numba-first", "gpuhost-first"])
def test_numba_cuda_functions_take_gpuhost_streams(order):
    import importlib.util
    import subprocess

    if importlib.util.find_spec("numba_cuda") is None:
        pytest.skip("needs numba-cuda (the jit extra)")

    env = dict(__import__("os").environ)
    proc = subprocess.run([sys.executable, "-c", NUMBA_STREAMS, order], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


# ---- CuPy's arrays through their attributes (a stand-in CuPy, in a subprocess) ----

CUPY_STANDIN = r"""
import sys, types
import numpy as np
cupy = types.ModuleType("cupy"); cuda = types.ModuleType("cupy.cuda")
cupy.cuda = cuda
sys.modules["cupy"], sys.modules["cupy.cuda"] = cupy, cuda
import gpuhost
from gpuhost import _core

class Stream:
    ptr = 0
current = Stream()
calls = []
def get_current_stream():
    calls.append(1)
    return current
cuda.get_current_stream = get_current_stream

class MemoryPointer:
    def __init__(self, ptr):
        self.ptr, self.device_id = ptr, 0

class ndarray:
    __slots__ = ("_dev", "lie", "data", "dtype", "size", "ndim", "shape", "strides",
                 "_c_contiguous")  # attributes of the type, as CuPy's (Cython) are

    def __init__(self, dev, lie=False):
        self._dev, self.lie = dev, lie
        self.data = MemoryPointer(dev.ptr + (dev.dtype.itemsize if lie else 0))
        self.dtype, self.size, self.ndim = dev.dtype, dev.size, dev.ndim
        self.shape, self.strides = dev.shape, dev.strides
        self._c_contiguous = dev.is_c_contiguous()
    @property
    def __cuda_array_interface__(self):
        return self._dev.__cuda_array_interface__
ndarray.__module__ = "cupy._core.core"

dev = gpuhost.to_device(np.arange(12.0).reshape(3, 4))
for arr in (ndarray(dev), ndarray(dev[:, 1:]), ndarray(dev[1]), ndarray(dev[1:2, 2])):
    info = _core._foreign_info(arr)
    assert info["source"] == "p", info
    assert (info["ptr"], info["shape"]) == (arr._dev.ptr, arr._dev.shape), info
    assert all(a == b for a, b, n in zip(info["strides"], arr._dev.strides, arr._dev.shape)
               if n > 1), info  # extents of 1 have no stride to keep
    assert info["producer"] == 1  # CuPy's default stream: the legacy one
s = gpuhost.stream()
current.ptr = s.handle
assert _core._foreign_info(ndarray(dev), stream=s)["producer"] == s.handle

class liar(ndarray):
    __slots__ = ()
liar.__module__, liar.__name__, liar.__qualname__ = "cupy._core.core", "ndarray", "ndarray"
info = _core._foreign_info(liar(dev, lie=True))  # its attributes and interface disagree
assert info["source"] == "c" and info["ptr"] == dev.ptr, info
print("ok")
"""


def test_cupy_arrays_are_read_through_their_attributes_checked_once():
    import os
    import subprocess

    proc = subprocess.run([sys.executable, "-c", CUPY_STANDIN], env=dict(os.environ),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_a_host_exporter_refusing_a_stream_is_said_to_be_in_host_memory():
    class Host:  # numpy's own __dlpack__ refuses any stream but None
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kw):
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    with pytest.raises(TypeError, match=r"Host is in host memory \(CPU\) \(DLPack device type 1\)"):
        gpuhost._core._foreign_info(Host(np.ones(3)))
    assert gpuhost._core._foreign_array(Host(np.ones(3)), host_ok=True) is None
