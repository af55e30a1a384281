"""Where Python and C meet for a DeviceArray: one crossing per user call.  Indexing
(csrc/arrays/array_index.c) plans every basic key in C and answers as numpy does, errors
worded as numpy's; T and __array__ are C; device_array() is one C call
(_core.empty_array); gpu_data is numba's face's class, registered once.  And one answer for
one error: a stream of another device is CudaDriverError, worded one way, in every path.
"""
import re
import struct

import numpy as np
import pytest

import gpuhost
from gpuhost import CudaDriverError, _core

rng = np.random.default_rng()


@pytest.fixture
def python_refused(monkeypatch):
    """gpuhost's Python array helpers (field views, assignments C leaves) and the two-step
    functions device_array() once used replaced by ones that fail: what passes ran in C."""
    from gpuhost import _arrays

    def refuse(*args, **kwargs):
        raise AssertionError("gpuhost's Python side was called")

    _core._set_helpers(array_field=refuse, array_assign=refuse)
    monkeypatch.setattr(_core, "make_array", refuse)
    monkeypatch.setattr(_core, "array_memory", refuse)
    try:
        yield
    finally:
        _core._set_helpers(array_field=_arrays.field, array_assign=_arrays.assign)


class Index:
    def __init__(self, i):
        self.i = i

    def __index__(self):
        return self.i


def random_key(shape):
    """A random basic key for an array of `shape`: ints (Python, numpy, __index__), slices
    with any steps, at most one ellipsis, newaxes; as a tuple, or alone."""
    items = []
    for n in shape:
        if rng.random() < 0.35 and n:
            i = int(rng.integers(-n, n))
            items.append(rng.choice([int, np.int64, np.int16, Index])(i))
        else:
            pick = lambda: None if rng.random() < 0.3 else int(rng.integers(-n - 2, n + 3))
            items.append(slice(pick(), pick(), rng.choice([None, 1, 2, 3, -1, -2, -3])))
    head = int(rng.integers(0, len(items) + 1))
    if rng.random() < 0.4:  # an ellipsis for the axes between a head and a tail
        tail = int(rng.integers(0, len(items) - head + 1))
        key = items[:head] + [Ellipsis] + items[len(items) - tail:]
    else:
        key = items[:head]
    for _ in range(int(rng.integers(0, 3))):
        key.insert(int(rng.integers(0, len(key) + 1)), None)
    if len(key) == 1 and rng.random() < 0.5:
        return key[0]
    return tuple(key)


def numpy_key(key):
    """The same key for numpy's basic indexing: integer-likes as Python ints."""
    def one(k):
        return k if k is None or k is Ellipsis or isinstance(k, slice) else int(k.__index__())
    return tuple(one(k) for k in key) if isinstance(key, tuple) else one(key)


def test_random_basic_keys_give_numpys_views_and_elements(python_refused):
    compared = 0
    for _ in range(400):
        shape = tuple(int(n) for n in rng.integers(0, 6, size=rng.integers(0, 4)))
        host = rng.integers(-1000, 1000, size=shape).astype(np.int32)
        dev = gpuhost.to_device(host)
        if host.size == 0:  # an empty array's strides are its maker's choice: take dev's
            host = np.lib.stride_tricks.as_strided(host, shape, dev.strides)
        key = random_key(shape)
        want = host[numpy_key(key)]
        got = dev[key]
        if not isinstance(want, np.ndarray):
            assert type(got) is type(want) and got == want
            continue
        compared += 1
        assert isinstance(got, gpuhost.DeviceArray)
        assert (got.shape, got.strides, got.dtype) == (want.shape, want.strides, want.dtype)
        offset = want.__array_interface__["data"][0] - host.__array_interface__["data"][0]
        assert got.ptr == dev.ptr + offset and got.owner is dev.owner
        assert got.copy_to_host().tobytes() == np.ascontiguousarray(want).tobytes()
    assert compared > 200


def test_random_basic_keys_assign_what_numpy_assigns(python_refused):
    for _ in range(200):
        shape = tuple(int(n) for n in rng.integers(1, 6, size=rng.integers(1, 4)))
        host = rng.standard_normal(shape)
        dev = gpuhost.to_device(host)
        key = random_key(shape)
        target = host[numpy_key(key)]
        value = rng.standard_normal(np.shape(target))
        dev[key] = value
        host[numpy_key(key)] = value
        np.testing.assert_array_equal(dev.copy_to_host(), host)


def test_a_view_keeps_the_stream_and_the_read_only_flag():
    s = gpuhost.stream()
    dev = gpuhost.device_array((4, 5), np.float32, stream=s)
    assert dev[1:, None, ::-2].stream is s and dev.T.stream is s
    ro = gpuhost.from_cuda_array_interface(dict(dev.__cuda_array_interface__,
                                                data=(dev.ptr, True)), owner=dev)
    assert not ro[..., 1].flags["WRITEABLE"] and not ro.T.flags["WRITEABLE"]
    with pytest.raises(ValueError, match="read-only"):
        ro[0, ...] = 1.0


@pytest.mark.parametrize("key, exc, message", [
    (True, TypeError, r"^only basic indexing \(ints, slices, \.\.\., None\) is supported on a "
                      r"device array, not bool$"),
    (np.bool_(False), TypeError, r"^only basic indexing .* not bool$"),
    ([0, 1], TypeError, r"^only basic indexing .* not list$"),
    ((0, 1.5), TypeError, r"^only basic indexing .* not float$"),
    (np.array([0, 1]), TypeError, r"^only basic indexing .* not ndarray$"),
    ((0, "a"), TypeError, r"^only basic indexing .* not str$"),
    ((0, 0, 0), IndexError, r"^too many indices for array: array is 2-dimensional, but 3 were "
                            r"indexed$"),
    ((Ellipsis, 0, Ellipsis), IndexError,
     r"^an index can only have a single ellipsis \('\.\.\.'\)$"),
    ((-5, 0), IndexError, r"^index -5 is out of bounds for axis 0 with size 4$"),
    ((slice(None), 6), IndexError, r"^index 6 is out of bounds for axis 1 with size 6$"),
    (Index(4), IndexError, r"^index 4 is out of bounds for axis 0 with size 4$"),
    (2**70, IndexError, r"^cannot fit 'int' into an index-sized integer$"),
    (slice(0, 3, 0), ValueError, r"^slice step cannot be zero$"),
    (slice(0.5, 3), TypeError, "slice indices must be integers"),
    ((None,) * 64, ValueError, r"^a device array has 0 to 64 dimensions, not 66$"),
])
def test_bad_keys_raise_numpys_errors_on_reads_and_writes(key, exc, message):
    dev = gpuhost.device_array((4, 6), np.float32)
    with pytest.raises(exc, match=message):
        dev[key]
    with pytest.raises(exc, match=message):
        dev[key] = 1.0
    if exc is IndexError and "fit" not in message and "ellipsis" not in message:
        host = np.empty((4, 6), np.float32)
        with pytest.raises(IndexError, match=message):
            host[numpy_key(key)]


def test_deleting_elements_is_refused():
    dev = gpuhost.device_array(3)
    with pytest.raises(TypeError, match="^device array elements cannot be deleted$"):
        del dev[0]


def test_records_still_reach_pythons_field_views():
    rec = np.zeros(4, dtype=[("a", np.int32), ("b", np.float64, (2,))])
    rec["a"] = rng.integers(-100, 100, 4)
    rec["b"] = rng.standard_normal((4, 2))
    dev = gpuhost.to_device(rec)
    np.testing.assert_array_equal(dev["a"].copy_to_host(), rec["a"])
    np.testing.assert_array_equal(dev["b"].copy_to_host(), rec["b"])
    assert dev[2]["a"] == rec[2]["a"] and isinstance(dev[2], gpuhost.DeviceArray)
    value = rng.standard_normal((4, 2))
    dev["b"] = value
    rec["b"] = value
    np.testing.assert_array_equal(dev.copy_to_host(), rec)
    with pytest.raises(KeyError, match="no field of name c"):
        dev["c"]


# ---- T, __array__, gpu_data, device_array ----

@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (2, 3, 4)])
def test_T_is_numpys_transpose(python_refused, shape):
    host = rng.standard_normal(shape)
    dev = gpuhost.to_device(host)
    t = dev.T
    assert (t.shape, t.strides, t.ptr, t.owner) == (host.T.shape, host.T.strides, dev.ptr,
                                                    dev.owner)
    np.testing.assert_array_equal(t.copy_to_host(), host.T)


def test_array_is_a_host_copy_in_the_dtype_asked(python_refused):
    host = (rng.standard_normal((3, 4)) * 100).astype(np.float32)
    dev = gpuhost.to_device(host)
    for got, want in [(np.asarray(dev), host), (np.asarray(dev, np.int16), host.astype(np.int16)),
                      (dev.__array__(np.float64), host.astype(np.float64)),
                      (np.asarray(dev.T, np.float64), host.T.astype(np.float64)),
                      (dev.__array__(dtype="f4", copy=True), host)]:
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match=r"^`copy=False` is not supported\. A copy is always "
                                         r"created\.$"):
        dev.__array__(copy=False)
    with pytest.raises(TypeError, match="data type .* not understood"):
        dev.__array__("nope")


def test_device_array_is_one_c_call(python_refused):
    s = gpuhost.stream()
    for shape, dtype, order in [((3, 4), np.float32, "C"), (5, np.int8, "F"), ((), "c16", "C"),
                                ((2, 1, 3), np.uint16, "F")]:
        dev = gpuhost.device_array(shape, dtype, order=order, stream=s)
        want = np.empty(shape, dtype, order=order)
        assert (dev.shape, dev.strides, dev.dtype, dev.stream) == (want.shape, want.strides,
                                                                  want.dtype, s)
    like = gpuhost.device_array_like(np.empty((4, 6), np.int32)[:, ::2].T)
    assert like.shape == (3, 4) and like.strides == (4, 12)
    assert gpuhost.device_array(3, stream=0).stream == 0


def test_empty_array_refuses_what_device_array_never_passes():
    with pytest.raises(TypeError, match=r"^empty_array\(\) takes 5 arguments \(1 given\)$"):
        _core.empty_array(8)
    with pytest.raises(TypeError, match="dtype must be a numpy dtype"):
        _core.empty_array(8, (1,), (8,), "f8", None)
    with pytest.raises(TypeError, match="strides must be a tuple of 1 ints"):
        _core.empty_array(8, (1,), (8, 8), np.dtype("f8"), None)
    with pytest.raises(ValueError, match="nbytes must be >= 0, not -1"):
        _core.empty_array(-1, (1,), (8,), np.dtype("f8"), None)


def test_device_array_honours_the_allocator_set():
    seen = []
    backing = gpuhost.device_array(64, np.uint8)

    def allocate(nbytes, stream):
        seen.append((nbytes, stream))
        return backing, backing.ptr

    before = _core.array_allocator()
    _core.set_array_allocator(allocate)
    try:
        dev = gpuhost.device_array((2, 3), np.float32)
    finally:
        _core.set_array_allocator(before)
    assert seen == [(24, None)] and dev.owner is backing and dev.ptr == backing.ptr


def test_gpu_data_is_numbas_memory_pointer_over_the_span():
    from gpuhost import memory_manager

    host = rng.standard_normal((4, 5))
    dev = gpuhost.to_device(host)
    view = dev[1:3, ::-2]
    mem = view.gpu_data
    assert type(mem) is memory_manager.ArrayMemory and mem.size == view.alloc_size
    assert mem.owner is dev.owner and dev.gpu_data == dev.view(np.uint8).gpu_data


def test_arrays_module_imports_no_face():
    import gpuhost._arrays
    import gpuhost._host_arrays

    faces = r"\b(memory_manager|_numba|cudadrv|compat|_pycuda_\w+|memory)\b"
    for mod in (gpuhost._arrays, gpuhost._host_arrays):
        with open(mod.__file__) as fh:
            text = fh.read()
        imports = re.findall(r"^\s*(?:from \.+(\S*) import (.+)|import (\S+))", text, re.M)
        for source, names, plain in imports:
            assert not re.search(faces, source or plain), (mod.__name__, source or plain)
            if source == "":
                assert not re.search(faces, names), (mod.__name__, names)


# ---- a stream of another device: CudaDriverError, one message shape ----

def driver_error(message):
    return pytest.raises(CudaDriverError, match="^" + re.escape(message) + "$")


@pytest.mark.gpus(2)
def test_another_devices_stream_is_a_driver_error_in_every_array_path(device0):
    host = rng.standard_normal(16)
    d0 = gpuhost.to_device(host)
    with gpuhost.gpus[1]:
        s1 = gpuhost.stream()
    with driver_error("the array is on device 0 but the stream is device 1's"):
        d0.copy_to_host(stream=s1)
    with driver_error("the array is on device 0 but the stream is device 1's"):
        d0.copy_to_device(host, stream=s1)
    with driver_error("bind(): the array is on device 0 but the stream is device 1's"):
        d0.bind(s1)
    with driver_error("the pool allocates on device 0 but the stream is device 1's"):
        gpuhost.device_array(4, stream=s1)
    with driver_error("Event.record(): the event is on device 0 but the stream is device 1's"):
        gpuhost.event().record(s1)
    np.testing.assert_array_equal(d0.copy_to_host(), host)


@pytest.mark.gpus(2)
def test_another_devices_stream_is_a_driver_error_for_a_graph(device0):
    s = gpuhost.stream()
    d = gpuhost.device_array(8, np.int32)
    src = gpuhost.pinned_array(8, np.int32)
    with gpuhost.graph_capture(s) as cap:
        d.copy_to_device(src, stream=s)
    exe = cap.graph.instantiate()
    with gpuhost.gpus[1]:
        s1 = gpuhost.stream()
    with driver_error("the graph is on device 0 but the stream is device 1's"):
        exe.launch(s1)


PTX1 = (".version 8.0\n.target sm_75\n.address_size 64\n.visible .entry one(\n"
        "\t.param .u64 .ptr .global .align 4 one_param_0\n)\n{\n\tret;\n}\n")


class CAI:
    def __init__(self, desc):
        self.__cuda_array_interface__ = desc


def test_another_devices_stream_is_a_driver_error_for_a_launch(device0, fake_kernels):
    module = gpuhost.Module(PTX1)
    one = module.get_function("one")
    d0 = gpuhost.to_device(rng.standard_normal(4).astype(np.float32))
    with gpuhost.gpus[1]:
        s1 = gpuhost.stream()
    try:
        with driver_error("kernel 'one' is loaded on device 0 but the stream is device 1's"):
            one[1, 1, s1](d0)
        foreign = CAI(dict(d0.__cuda_array_interface__, stream=s1.handle))
        with driver_error("one(): parameter 0: the array exported with stream %#x is on device "
                          "0 but the stream is device 1's" % s1.handle):
            one[1, 1](foreign)
        one[1, 1](d0)  # its own device's default stream: launched
        params, _ = fake_kernels.last_launch()
        assert struct.unpack("<Q", params) == (d0.ptr,)
    finally:
        module.unload()
