"""DeviceArray indexing in C (csrc/arrays/array_index.c): element reads, and self[key] = value for
keys of ints and slices with host data, scalars laid by a memset, and gpuhost or foreign
device arrays of the view's shape, never calling gpuhost's Python side; what needs it
(broadcasting, casting on the device, records) still reaches it.  Results are checked
against numpy doing the same assignment.
"""
import operator

import numpy as np
import pytest

import gpuhost
from gpuhost import _core

rng = np.random.default_rng()


class CAI:
    def __init__(self, dev):
        self.__cuda_array_interface__ = dev.__cuda_array_interface__


@pytest.fixture
def python_side_refused():
    """The Python side's field view and assignment helpers replaced by ones that fail: what
    passes with it ran in C."""
    from gpuhost import _arrays

    def refuse(*args):
        raise AssertionError("gpuhost's Python indexing was called")

    _core._set_helpers(array_field=refuse, array_assign=refuse)
    try:
        yield
    finally:
        _core._set_helpers(array_field=_arrays.field, array_assign=_arrays.assign)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16, np.uint8, np.complex64,
                                   np.bool_])
def test_element_reads_are_numpy_scalars(python_side_refused, dtype):
    host = (rng.standard_normal((4, 5)) * 10).astype(dtype)
    dev = gpuhost.to_device(host)
    for key in [(0, 0), (3, 4), (-1, -2), (2, -5)]:
        got = dev[key]
        assert type(got) is type(host[key]) and got == host[key]
    assert dev[1][2] == host[1][2]  # a row view, then its element


@pytest.mark.parametrize("key", [slice(2, 7), slice(None), slice(None, None, -1),
                                 slice(1, None, 3), (slice(None), 1), (2, slice(1, 4)),
                                 (slice(None, None, -2), slice(None, None, 2)), (1, 2)])
def test_host_data_of_the_views_shape_is_copied_in_c(python_side_refused, key):
    host = rng.standard_normal((8, 6)).astype(np.float32)
    if isinstance(key, slice):
        key = (key,)
    dev = gpuhost.to_device(host)
    value = rng.standard_normal(host[key].shape).astype(np.float32)
    dev[key] = value
    host[key] = value
    np.testing.assert_array_equal(dev.copy_to_host(), host)


def test_values_are_cast_as_numpy_casts_them(python_side_refused):
    host = np.arange(10, dtype=np.int32)
    dev = gpuhost.to_device(host)
    dev[2:5] = [1.9, -2.7, 3.2]  # a list, cast to int32 as numpy does
    host[2:5] = [1.9, -2.7, 3.2]
    dev[7] = 9.99
    host[7] = 9.99
    np.testing.assert_array_equal(dev.copy_to_host(), host)


@pytest.mark.parametrize("dtype, value", [(np.float32, 0), (np.int32, -1), (np.uint8, 7),
                                          (np.float64, 0.0), (np.int16, 0x0101),
                                          (np.complex64, 0)])
def test_repeating_scalars_are_a_memset(python_side_refused, fake, dtype, value):
    host = (rng.standard_normal((6, 8)) * 50).astype(dtype)
    dev = gpuhost.to_device(host)
    names = ("cuMemsetD8", "cuMemsetD16", "cuMemsetD32", "cuMemsetD2D8", "cuMemsetD2D16",
             "cuMemsetD2D32")
    before = sum(fake.calls(n) for n in names)
    dev[:] = value
    dev[1:4, 2:6] = value  # two strided rows: a 2D memset
    host[:] = value
    assert sum(fake.calls(n) for n in names) == before + 2
    np.testing.assert_array_equal(dev.copy_to_host(), host)


def test_device_arrays_of_the_views_shape_are_device_copies(python_side_refused, fake):
    host = rng.standard_normal((5, 4)).astype(np.float64)
    src = gpuhost.to_device(rng.standard_normal((3, 4)))
    dev = gpuhost.to_device(host)
    copies = fake.calls("cuMemcpyDtoD") + fake.calls("cuMemcpy2D")
    dev[1:4] = src
    dev[0] = CAI(gpuhost.to_device(host[4]))  # a foreign array: read in C
    host[1:4] = src.copy_to_host()
    host[0] = host[4]
    assert fake.calls("cuMemcpyDtoD") + fake.calls("cuMemcpy2D") > copies
    np.testing.assert_array_equal(dev.copy_to_host(), host)


def test_what_c_leaves_still_works_through_python():
    host = rng.standard_normal((4, 6)).astype(np.float32)
    dev = gpuhost.to_device(host)
    row = rng.standard_normal(6).astype(np.float32)
    dev[:] = row  # broadcasting
    host[:] = row
    np.testing.assert_array_equal(dev.copy_to_host(), host)
    rec = np.zeros(3, dtype=[("a", np.int32), ("b", np.float64)])
    drec = gpuhost.to_device(rec)
    drec["b"] = np.arange(3.0)  # a field, in Python
    assert drec.copy_to_host()["b"].tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("key, exc, message", [
    ((0, 9), IndexError, "index 9 is out of bounds for axis 1 with size 6"),
    ((0, 0, 0), IndexError, "too many indices"),
    ("x", TypeError, "field names on structured ones"),
])
def test_bad_keys_raise_as_numpy_does(key, exc, message):
    dev = gpuhost.device_array((4, 6), np.float32)
    with pytest.raises(exc, match=message):
        dev[key] = 1.0
    with pytest.raises(exc, match=message):
        dev[key]


def test_bad_values_raise_and_write_nothing():
    host = rng.standard_normal(6).astype(np.float32)
    dev = gpuhost.to_device(host)
    with pytest.raises(ValueError, match="could not broadcast|cannot be broadcast"):
        dev[1:3] = np.ones(5, np.float32)
    with pytest.raises(ValueError, match="could not convert string to float"):
        dev[:] = "abc"
    ro = gpuhost.from_cuda_array_interface(dict(dev.__cuda_array_interface__,
                                                data=(dev.ptr, True)), owner=dev)
    with pytest.raises(ValueError, match="read-only"):
        ro[0] = 1.0
    np.testing.assert_array_equal(dev.copy_to_host(), host)


# ---- iteration (numba's arrays iterate; NumPy's rule for 0-d) ----

@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 2), (0,), (0, 3)])
def test_iteration_gives_what_numpy_gives(python_side_refused, shape):
    host = rng.standard_normal(shape).astype(np.float32)
    dev = gpuhost.to_device(host)
    got = list(dev)
    assert len(got) == len(host) and iter(dev).__length_hint__() == len(host)
    for g, h in zip(got, host):
        if host.ndim == 1:
            assert type(g) is np.float32 and g == h
        else:
            assert isinstance(g, gpuhost.DeviceArray)
            np.testing.assert_array_equal(g.copy_to_host(), h)


def test_zip_of_device_arrays_as_numbas_documentation_does(python_side_refused):
    x, y, z = (rng.standard_normal(5) for _ in range(3))
    d_x, d_y, d_z = (gpuhost.to_device(a) for a in (x, y, z))
    assert [(a, b, c) for a, b, c in zip(d_x, d_y, d_z)] == list(zip(x, y, z))
    assert list(gpuhost.to_device(x)[::-2]) == list(x[::-2])


def test_iterating_records_gives_device_records():
    rec = np.zeros(3, dtype=[("a", np.int32), ("b", np.float64)])
    rec["a"] = [1, 2, 3]
    got = list(gpuhost.to_device(rec))
    assert [r.copy_to_host()["a"] for r in got] == [1, 2, 3]


def test_a_0d_array_is_not_iterable():
    with pytest.raises(TypeError, match="iteration over a 0-d device array"):
        iter(gpuhost.to_device(np.array(2.5)))
    with pytest.raises(TypeError, match="iteration over a 0-d device array"):
        list(gpuhost.to_device(np.array(2.5)))


class Index:
    """An object that is an integer only through __index__."""

    def __init__(self, i):
        self.i = i

    def __index__(self):
        return self.i


INT_LIKE = {
    "0-d int64 array": lambda i: np.array(i),
    "0-d int16 array": lambda i: np.array(i, np.int16),
    "numpy uint8": lambda i: np.uint8(i % 256) if i >= 0 else np.int8(i),
    "__index__": Index,
}


@pytest.mark.parametrize("kind", sorted(INT_LIKE))
def test_integer_like_keys_index_as_their_int(kind):
    """numpy takes an integer array (0-d too) as advanced indexing; gpuhost's views are
    basic indexing, so such a key is its int (a 0-d array once gave a view at a wild
    address: out-of-bounds reads, a write anywhere)."""
    make = INT_LIKE[kind]
    host = rng.standard_normal((6, 3, 4)).astype(np.float32)
    d = gpuhost.to_device(host)
    for _ in range(20):
        i, j = int(rng.integers(-6, 6)), int(rng.integers(-3, 3))
        for key in [make(i), (make(i),), (make(i), slice(None), make(j % 4)),
                    (Ellipsis, make(j)), (make(i), None, slice(None, None, -1))]:
            got = d[key]
            want = host[tuple(operator.index(k) if not isinstance(k, slice) and k is not None
                              and k is not Ellipsis else k
                              for k in (key if isinstance(key, tuple) else (key,)))]
            assert isinstance(got, gpuhost.DeviceArray) and got.shape == want.shape
            assert got.copy_to_host().tobytes() == np.ascontiguousarray(want).tobytes()
    value = rng.standard_normal((3, 4)).astype(np.float32)
    d[make(-2)] = value
    host[-2] = value
    np.testing.assert_array_equal(d.copy_to_host(), host)
    with pytest.raises(IndexError):
        d[make(6)]
