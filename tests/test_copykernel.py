"""The built-in copy kernel (gpuhost/_copykernel.py): device-to-device copies between
layouts and broadcasting assignments stay on the device, exactly.  On the fake driver
(no kernels) the same calls go through the host; test_devicearray.py covers that path.
"""
import numpy as np
import pytest

import gpuhost
from conftest import DlpackOnly
from gpuhost import _copykernel

rng = np.random.default_rng()

DTYPES = [np.bool_, np.int8, np.uint16, np.int32, np.float32, np.float64, np.complex128,
          np.dtype([("a", "<i4"), ("b", "<f4"), ("c", "<i2")])]  # 10-byte records: bytewise


def random_array(shape, dtype):
    dtype = np.dtype(dtype)
    raw = rng.integers(0, 256, int(np.prod(shape)) * dtype.itemsize, dtype=np.uint8)
    a = raw.view(dtype).reshape(shape)
    if dtype.kind == "b":
        a = raw[: a.size].astype(bool).reshape(shape)
    return a


def assert_kernel_used():
    assert not _copykernel._unavailable, _copykernel._unavailable
    assert _copykernel._loaded


def same_bytes(a, b):
    np.testing.assert_array_equal(np.ascontiguousarray(a).view(np.uint8),
                                  np.ascontiguousarray(b).view(np.uint8))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_copy_between_layouts_is_exact(dtype):
    host = random_array((6, 7, 5), dtype)
    src = gpuhost.to_device(np.asfortranarray(host))        # F order
    dst = gpuhost.device_array((6, 7, 5), dtype)             # C order
    dst.copy_to_device(src)
    same_bytes(dst.copy_to_host(), host)
    flipped = gpuhost.to_device(host)[::-1, ::2, 1:]        # negative and stepped strides
    target = gpuhost.device_array(flipped.shape, dtype, order="F")
    target.copy_to_device(flipped)
    same_bytes(target.copy_to_host(), host[::-1, ::2, 1:])
    assert_kernel_used()


@pytest.mark.gpu
def test_copy_into_a_strided_view_leaves_the_gaps_alone():
    base = rng.standard_normal((8, 10))
    dev = gpuhost.to_device(base)
    part = rng.standard_normal((4, 5))
    dev[::2, ::2].copy_to_device(gpuhost.to_device(part))
    expected = base.copy()
    expected[::2, ::2] = part
    np.testing.assert_array_equal(dev.copy_to_host(), expected)
    assert_kernel_used()


@pytest.mark.gpu
def test_broadcasting_assignments_from_device_and_host():
    base = rng.standard_normal((64, 33)).astype(np.float32)
    dev = gpuhost.to_device(base)
    row = rng.standard_normal(33).astype(np.float32)
    dev[10:20] = gpuhost.to_device(row)
    col = rng.standard_normal((64, 1)).astype(np.float32)
    dev[:, ::3] = col                                        # a host column, broadcast
    expected = base.copy()
    expected[10:20] = row
    expected[:, ::3] = col
    np.testing.assert_array_equal(dev.copy_to_host(), expected)
    with pytest.raises(ValueError, match="could not broadcast input array from shape"):
        dev[:] = gpuhost.to_device(np.zeros(5, np.float32))
    assert_kernel_used()


@pytest.mark.gpu
def test_scalar_fill_that_no_memset_can_do():
    base = rng.standard_normal((5, 6, 7))
    dev = gpuhost.to_device(base)
    value = rng.standard_normal()  # 8 bytes that do not repeat a 1-, 2- or 4-byte pattern
    dev[1:4, ::2, ::3] = value                               # three strided levels
    expected = base.copy()
    expected[1:4, ::2, ::3] = value
    np.testing.assert_array_equal(dev.copy_to_host(), expected)
    c = gpuhost.to_device(np.zeros((4, 4), np.complex128))
    c[:, 1] = 1.5 - 2.5j                                     # 16-byte elements
    expected = np.zeros((4, 4), np.complex128)
    expected[:, 1] = 1.5 - 2.5j
    np.testing.assert_array_equal(c.copy_to_host(), expected)
    assert_kernel_used()


@pytest.mark.gpu
def test_dlpack_only_objects_are_device_arrays_everywhere():
    host = rng.standard_normal((7, 9))
    src = DlpackOnly(gpuhost.to_device(host))
    same = gpuhost.to_device(src)
    assert isinstance(same, gpuhost.DeviceArray) and same.ptr == src.array.ptr
    dst = gpuhost.device_array((7, 9), order="F")
    dst.copy_to_device(src)
    np.testing.assert_array_equal(dst.copy_to_host(), host)
    dst[2] = DlpackOnly(gpuhost.to_device(np.full(9, 4.0)))
    host[2] = 4.0
    np.testing.assert_array_equal(dst.copy_to_host(), host)
