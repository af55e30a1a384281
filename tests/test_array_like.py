"""device_array_like, pinned_array_like and mapped_array_like: the layout numba-cuda 0.30
gives (its _contiguous_strides_like_array and _order_like_array), for numpy arrays, gpuhost
views and foreign arrays (CUDA array interface or DLPack exporters), and what they refuse."""
import numpy as np
import pytest

import gpuhost
from conftest import DlpackOnly

rng = np.random.default_rng()

LIKE = {"device": gpuhost.device_array_like, "pinned": gpuhost.pinned_array_like,
        "mapped": gpuhost.mapped_array_like}


def _host_views():
    """(name, array): contiguous and strided layouts, with numba's expected strides."""
    f = np.asfortranarray(rng.random((5, 12)))
    c = rng.random((10, 12))
    return {
        "f_strided": f[:, ::2],                       # the case: numba gives (8, 40)
        "c_strided_transposed": c[::2, ::2].T,
        "c_transposed": c.T,
        "f_contiguous": f,
        "c_contiguous": c,
        "negative_rows": c[::-1],
        "broadcast": np.broadcast_to(rng.random(4), (3, 4)),
        "3d_permuted_strided": rng.random((2, 3, 8)).transpose(1, 0, 2)[:, :, ::2],
        "size_one_dim_strided": rng.random((3, 1, 4))[:, :, ::2],
        "1d_strided": rng.random(10)[::3],
        "0d": np.array(rng.random()),
        "empty": rng.random((0, 3))[:, ::2],
        "int16_f_strided": np.asfortranarray(
            rng.integers(-999, 999, (4, 6, 5)).astype(np.int16))[:, 1::2, :],
    }


# What numba-cuda 0.30.4 gives for each (strides, order) of the layouts above: strides of
# a new contiguous array (None: device_array's own for `order`).
NUMBA = {
    "f_strided": ((8, 40), "C"),
    "c_strided_transposed": ((8, 48), "C"),
    "c_transposed": (None, "F"),
    "f_contiguous": (None, "F"),
    "c_contiguous": (None, "C"),
    "negative_rows": ((8, 80), "C"),  # numba sorts the signed strides (NumPy: C order)
    "broadcast": ((8, 24), "C"),
    "3d_permuted_strided": ((32, 96, 8), "C"),
    "size_one_dim_strided": ((16, 48, 8), "C"),
    "1d_strided": (None, "C"),
    "0d": (None, "C"),
    "empty": (None, "C"),
    "int16_f_strided": ((2, 8, 24), "C"),
}


def _expected_strides(view, kind):
    """numba's strides for `view`, or those of a new contiguous array in its order where
    numba leaves them to device_array (numpy's own for host arrays: 0 where empty)."""
    strides, order = NUMBA[view]
    ary = _host_views()[view]
    if strides is None:
        empty = gpuhost.device_array if kind == "device" else np.empty
        return empty(ary.shape, ary.dtype, order=order).strides
    return strides


@pytest.mark.parametrize("kind", sorted(LIKE))
@pytest.mark.parametrize("view", sorted(NUMBA))
def test_like_of_a_numpy_layout_is_numbas(kind, view):
    ary = _host_views()[view]
    like = LIKE[kind](ary)
    assert (like.shape, like.dtype) == (ary.shape, ary.dtype)
    assert like.strides == _expected_strides(view, kind)
    fresh = rng.random(ary.shape).astype(ary.dtype)
    if kind == "device":
        like.copy_to_device(fresh)
        assert np.array_equal(like.copy_to_host(), fresh)
    else:
        like[...] = fresh
        assert np.array_equal(like, fresh)


@pytest.mark.parametrize("view", sorted(NUMBA))
def test_the_rule_is_numba_cudas_own(view):
    """The table above against numba-cuda's own functions, where it is installed."""
    pytest.importorskip("numba_cuda")
    from gpuhost import _numba

    _numba.load()
    from numba.cuda import api

    ary = _host_views()[view]
    assert (api._contiguous_strides_like_array(ary), api._order_like_array(ary)) == NUMBA[view]


def test_like_of_a_fortran_view_keeps_fortran_order_and_numpys_strides():
    ary = np.asfortranarray(rng.random((6, 9)))[1:, ::3]
    for like in LIKE.values():
        got = like(ary)
        assert got.strides == np.empty_like(ary).strides == (8, 40)
        assert got.flags["F_CONTIGUOUS"] and not got.flags["C_CONTIGUOUS"]


@pytest.mark.parametrize("kind", sorted(LIKE))
def test_like_of_gpuhost_views_follows_the_same_rule(kind):
    f = gpuhost.device_array((10, 12), np.float32, order="F")
    c = gpuhost.device_array((10, 12), np.float32)
    assert LIKE[kind](f[::2, ::2]).strides == (4, 20)
    assert LIKE[kind](c[::2, ::2]).strides == (24, 4)
    # a transposed gpuhost array is a view (numba copies it into C order: (24, 4) there)
    assert LIKE[kind](c[::2, ::2].T).strides == (4, 24)
    assert LIKE[kind](f.T).strides == (40, 4)  # C-contiguous
    assert LIKE[kind](c[:, 3]).strides == (4,)


class _CaiExporter:
    """A foreign device array known by its __cuda_array_interface__ alone (no .flags,
    .strides, .dtype: as a minimal library would export one)."""

    def __init__(self, dev, strides_none=False):
        self._dev = dev
        self.__cuda_array_interface__ = dict(dev.__cuda_array_interface__)
        if strides_none:
            self.__cuda_array_interface__["strides"] = None


_DlpackExporter = DlpackOnly  # a foreign array known by __dlpack__ / __dlpack_device__ alone


@pytest.mark.parametrize("kind", sorted(LIKE))
@pytest.mark.parametrize("wrap", ["cai", "dlpack"])
def test_like_of_a_foreign_device_array_keeps_its_order(kind, wrap):
    host = np.asfortranarray(rng.integers(0, 1000, (6, 10)).astype(np.int32))
    dev = gpuhost.to_device(host)
    assert dev.is_f_contiguous()
    make = _CaiExporter if wrap == "cai" else _DlpackExporter
    for source, strides in ((dev, (4, 24)), (dev[:, ::2], (4, 24)), (dev[::2], (4, 12)),
                            (dev.T, (24, 4)), (dev.T[::3], (24, 4))):
        like = LIKE[kind](make(source))
        assert (like.shape, like.dtype, like.strides) == (source.shape, np.int32, strides)
        fresh = rng.integers(-50, 50, source.shape).astype(np.int32)
        if kind == "device":
            like.copy_to_device(fresh)
            assert np.array_equal(like.copy_to_host(), fresh)
        else:
            like[...] = fresh
            assert np.array_equal(like, fresh)


def test_like_of_a_cai_exporter_without_strides_is_c_ordered():
    dev = gpuhost.to_device(rng.random((3, 4, 5)).astype(np.float16))
    like = gpuhost.device_array_like(_CaiExporter(dev, strides_none=True))
    assert (like.shape, like.dtype, like.strides) == ((3, 4, 5), np.float16, (40, 10, 2))


def test_like_of_a_host_dlpack_exporter_keeps_its_order():
    host = np.asfortranarray(rng.random((4, 7)))[:, 1::2]
    like = gpuhost.device_array_like(_DlpackExporter(host))
    assert (like.shape, like.strides) == ((4, 3), (8, 32))


class _ShapeOnly:
    def __init__(self, shape, dtype, strides=None):
        self.shape, self.dtype = shape, np.dtype(dtype)
        if strides is not None:
            self.strides = strides


def test_like_of_an_object_with_shape_and_dtype():
    assert gpuhost.device_array_like(_ShapeOnly((3, 4), np.int8)).strides == (4, 1)
    assert gpuhost.device_array_like(_ShapeOnly((3, 4), np.int8, (1, 6))).strides == (1, 3)


@pytest.mark.parametrize("name", sorted(LIKE))
def test_like_of_something_without_a_layout_is_a_type_error(name):
    like = LIKE[name]
    fn = like.__name__
    with pytest.raises(TypeError, match=r"^%s\(\) takes an array \(an object with \.shape and "
                                        r"\.dtype, or one exporting __cuda_array_interface__ or "
                                        r"__dlpack__\), not list$" % fn):
        like([1, 2, 3])


def test_a_foreign_array_whose_layout_cannot_be_read_says_why():
    dev = gpuhost.to_device(rng.random((2, 3)))
    bad = _CaiExporter(dev)
    bad.__cuda_array_interface__["strides"] = (8,)
    with pytest.raises(TypeError, match=r"^device_array_like\(\) cannot read the layout of a "
                                        r"_CaiExporter \(ValueError: _CaiExporter's "
                                        r"__cuda_array_interface__ strides has 1 items for 2 "
                                        r"dimensions\)$"):
        gpuhost.device_array_like(bad)
    del bad.__cuda_array_interface__["typestr"]
    with pytest.raises(TypeError, match=r"^pinned_array_like\(\) cannot read the layout of a "
                                        r"_CaiExporter \(ValueError: _CaiExporter's "
                                        r"__cuda_array_interface__ has no 'typestr'\)$"):
        gpuhost.pinned_array_like(bad)

    class Refusing(_DlpackExporter):
        def __dlpack__(self, **kwargs):
            raise BufferError("cannot export a read-only view")

    with pytest.raises(TypeError, match=r"^mapped_array_like\(\) cannot read the layout of a "
                                        r"Refusing \(BufferError: cannot export a read-only "
                                        r"view\)$"):
        gpuhost.mapped_array_like(Refusing(dev))
