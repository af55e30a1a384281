"""numba.cuda.cudadrv.devicearray's names (``cuda.devicearray``), answered by gpuhost's
arrays: ``isinstance(x, DeviceNDArray)`` is true for every `gpuhost.DeviceArray`,
``MappedNDArray`` / ``ManagedNDArray`` for `gpuhost.mapped_array` / `gpuhost.managed_array`'s
arrays; calling ``DeviceNDArray(shape, strides, dtype, stream=0, gpu_data=None)`` or
``DeviceRecord(dtype, ...)`` makes a gpuhost DeviceArray, as numba's make theirs; and
numba's functions (``auto_device``, ``from_array_like``, ``is_cuda_ndarray``,
``sentry_contiguous`` ...) take gpuhost's arrays as numba's take its own.

The classes are for ``isinstance`` / ``issubclass`` and for making arrays: the arrays made
are gpuhost DeviceArrays (a record is a 0-d DeviceArray of a structured dtype, so it is a
``DeviceNDArray`` as well as a ``DeviceRecord``).
"""
import numpy as np

from .... import _arrays, _core, _host_arrays
from ...._ipc import IpcArrayHandle

__all__ = [
    "DeviceNDArrayBase", "DeviceNDArray", "DeviceRecord", "MappedNDArray", "ManagedNDArray",
    "IpcArrayHandle", "is_cuda_ndarray", "verify_cuda_ndarray_interface",
    "require_cuda_ndarray", "from_array_like", "from_record_like", "array_core",
    "is_contiguous", "errmsg_contiguous_buffer", "sentry_contiguous", "auto_device",
    "check_array_compatibility",
]


def _allocation_kind(arr):
    """The kind ("mapped", "managed") of the Allocation under a gpuhost host-side array,
    or None where there is none (an empty one)."""
    base = arr
    while base is not None and not isinstance(base, _core.Allocation):
        base = getattr(base, "base", None)
    return None if base is None else base.kind


class _ArrayClass(type):
    """numba's array classes, as gpuhost's arrays answer them: each class says which
    objects are its instances (`_is`), and its call makes a gpuhost array (`_make`)."""

    def __instancecheck__(cls, obj):
        return cls._is(obj)

    def __subclasscheck__(cls, sub):
        return type.__subclasscheck__(cls, sub) or any(
            issubclass(sub, t) for t in cls._types())

    def __call__(cls, *args, **kwargs):
        return cls._make(*args, **kwargs)


def _shape(shape):
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    out = []
    for s in shape:
        if not isinstance(s, (int, np.integer)):
            raise TypeError("shape elements must be integers, got %s" % type(s).__name__)
        out.append(int(s))
    return tuple(out)


def _new_array(shape, strides, dtype, stream=0, gpu_data=None):
    shape = _shape(shape)
    strides = (strides,) if isinstance(strides, (int, np.integer)) else tuple(strides or ())
    if len(strides) != len(shape):
        raise ValueError("strides not match ndim")
    if gpu_data is None:
        return _arrays.device_array(shape, dtype, strides, stream=stream)
    from .driver import device_pointer

    shape, dtype, strides, _ = _arrays._layout(shape, dtype, strides, "C")
    return _core.make_array(gpu_data, device_pointer(gpu_data) or 0, shape, strides, dtype,
                            _arrays._stream_or_none(stream))


class DeviceNDArrayBase(metaclass=_ArrayClass):
    """numba's base of every array in device memory: gpuhost's device arrays, and its
    mapped and managed arrays.

    Calling it makes a `gpuhost.DeviceArray`, as `DeviceNDArray` does.

    Examples
    --------
    >>> from gpuhost import devicearray
    >>> isinstance(gpuhost.device_array(3), devicearray.DeviceNDArrayBase)
    True
    >>> isinstance(gpuhost.mapped_array(3), devicearray.DeviceNDArrayBase)
    True
    >>> isinstance(np.zeros(3), devicearray.DeviceNDArrayBase)
    False
    """

    __cuda_memory__ = True
    __cuda_ndarray__ = True

    @staticmethod
    def _types():
        return (_core.DeviceArray, _host_arrays.MappedArray)

    @classmethod
    def _is(cls, obj):
        return isinstance(obj, cls._types())

    _make = staticmethod(_new_array)


class DeviceNDArray(DeviceNDArrayBase):
    """numba's device array class: every `gpuhost.DeviceArray` is one.

    ``DeviceNDArray(shape, strides, dtype, stream=0, gpu_data=None)`` makes a gpuhost
    DeviceArray, as numba's constructor makes its own: of new device memory, or over
    `gpu_data` (a `gpuhost.memory_manager.MemoryPointer`, or any object with a device
    pointer), which it keeps alive.

    Parameters
    ----------
    shape : int or tuple of int
        The shape.
    strides : int or tuple of int
        The strides in bytes, one per dimension.
    dtype : numpy dtype
        The element type.
    stream : gpuhost.Stream or 0, optional
        The array's stream.
    gpu_data : object, optional
        The memory to view instead of new memory.

    Raises
    ------
    TypeError
        A shape element that is not an integer (numba's message).
    ValueError
        Not as many strides as dimensions (numba's message).

    Examples
    --------
    >>> from gpuhost import devicearray
    >>> d = devicearray.DeviceNDArray((2, 3), (24, 8), np.float64)
    >>> type(d).__name__, isinstance(d, devicearray.DeviceNDArray), d.strides
    ('DeviceArray', True, (24, 8))
    >>> issubclass(gpuhost.DeviceArray, devicearray.DeviceNDArray)
    True
    >>> devicearray.DeviceNDArray((2, 3), (8,), np.float64)
    Traceback (most recent call last):
        ...
    ValueError: strides not match ndim
    """

    @staticmethod
    def _types():
        return (_core.DeviceArray,)


class DeviceRecord(DeviceNDArrayBase):
    """numba's class of a record in device memory: a 0-d `gpuhost.DeviceArray` of a
    structured dtype (``gpuhost.to_device(record)`` makes one).

    ``DeviceRecord(dtype, stream=0, gpu_data=None)`` makes one, of new memory or over
    `gpu_data`.

    Examples
    --------
    >>> from gpuhost import devicearray
    >>> rec = np.zeros(1, [("a", np.int32), ("b", np.float64)])[0]
    >>> d = gpuhost.to_device(rec)
    >>> isinstance(d, devicearray.DeviceRecord), d.shape
    (True, ())
    >>> devicearray.DeviceRecord(rec.dtype).dtype == rec.dtype
    True
    >>> isinstance(gpuhost.device_array(3), devicearray.DeviceRecord)
    False
    """

    @staticmethod
    def _types():
        return ()

    @classmethod
    def _is(cls, obj):
        return isinstance(obj, _core.DeviceArray) and obj.ndim == 0 and obj.dtype.names is not None

    @staticmethod
    def _make(dtype, stream=0, gpu_data=None):
        return _new_array((), (), dtype, stream, gpu_data)


class _HostSide(DeviceNDArrayBase):
    _kind = None

    @staticmethod
    def _types():
        return ()

    @classmethod
    def _is(cls, obj):
        return isinstance(obj, _host_arrays.MappedArray) \
            and _allocation_kind(obj) in (cls._kind, None)

    @classmethod
    def _make(cls, *args, **kwargs):
        raise TypeError("%s is numba's class of %s arrays: make one with gpuhost.%s_array()"
                        % (cls.__name__, cls._kind, cls._kind))


class MappedNDArray(_HostSide):
    """numba's class of mapped host arrays: `gpuhost.mapped_array`'s arrays are ones.

    Make them with `gpuhost.mapped_array`; calling the class is a TypeError.

    Examples
    --------
    >>> from gpuhost import devicearray
    >>> isinstance(gpuhost.mapped_array(4), devicearray.MappedNDArray)
    True
    >>> isinstance(gpuhost.managed_array(4), devicearray.MappedNDArray)
    False
    """

    _kind = "mapped"


class ManagedNDArray(_HostSide):
    """numba's class of managed arrays: `gpuhost.managed_array`'s arrays are ones.

    Make them with `gpuhost.managed_array`; calling the class is a TypeError.

    Examples
    --------
    >>> from gpuhost import devicearray
    >>> isinstance(gpuhost.managed_array(4), devicearray.ManagedNDArray)
    True
    >>> devicearray.ManagedNDArray((4,), (8,), np.float64)
    Traceback (most recent call last):
        ...
    TypeError: ManagedNDArray is numba's class of managed arrays: make one with gpuhost.managed_array()
    """

    _kind = "managed"


def is_cuda_ndarray(obj):
    """Whether `obj` is a device array of numba's kind: a gpuhost device, mapped or managed
    array, or an object that says ``__cuda_ndarray__`` (numba's own arrays).

    Examples
    --------
    >>> from gpuhost import devicearray
    >>> devicearray.is_cuda_ndarray(gpuhost.device_array(2)), devicearray.is_cuda_ndarray([1])
    (True, False)
    """
    return isinstance(obj, DeviceNDArrayBase) or bool(getattr(obj, "__cuda_ndarray__", False))


def require_cuda_ndarray(obj):
    """Raise numba's ValueError unless `is_cuda_ndarray(obj)`.

    Raises
    ------
    ValueError
        ``"require an cuda ndarray object"``, numba's message.

    Examples
    --------
    >>> from gpuhost import devicearray
    >>> devicearray.require_cuda_ndarray(gpuhost.device_array(2))
    >>> devicearray.require_cuda_ndarray(np.zeros(2))
    Traceback (most recent call last):
        ...
    ValueError: require an cuda ndarray object
    """
    if not is_cuda_ndarray(obj):
        raise ValueError("require an cuda ndarray object")


def verify_cuda_ndarray_interface(obj):
    """Check that `obj` is a device array with numba's attributes (``shape`` and ``strides``
    tuples, a numpy ``dtype``, an int ``size``).

    Raises
    ------
    ValueError
        `obj` is no device array.
    AttributeError
        An attribute is missing (named) or of another type.

    Examples
    --------
    >>> from gpuhost import devicearray
    >>> devicearray.verify_cuda_ndarray_interface(gpuhost.device_array((2, 2)))
    """
    require_cuda_ndarray(obj)
    for attr, typ in (("shape", tuple), ("strides", tuple), ("dtype", np.dtype), ("size", int)):
        if not hasattr(obj, attr):
            raise AttributeError(attr)
        if not isinstance(getattr(obj, attr), typ):
            raise AttributeError("%s must be of type %s" % (attr, typ))


def from_array_like(ary, stream=0, gpu_data=None):
    """A device array with `ary`'s shape, strides and dtype (numba's ``from_array_like``):
    new memory, or a view of `gpu_data`. Nothing is copied.

    Examples
    --------
    >>> from gpuhost import devicearray
    >>> d = devicearray.from_array_like(np.zeros((3, 4), np.int16, order="F"))
    >>> d.shape, d.strides, d.dtype
    ((3, 4), (2, 6), dtype('int16'))
    """
    return DeviceNDArray(ary.shape, ary.strides, ary.dtype, stream=stream, gpu_data=gpu_data)


def from_record_like(rec, stream=0, gpu_data=None):
    """A 0-d device array of `rec`'s structured dtype (numba's ``from_record_like``); nothing
    is copied.

    Examples
    --------
    >>> from gpuhost import devicearray
    >>> rec = np.zeros(1, [("x", np.float32), ("n", np.int64)])[0]
    >>> devicearray.from_record_like(rec).dtype.names
    ('x', 'n')
    """
    return DeviceRecord(rec.dtype, stream=stream, gpu_data=gpu_data)


def array_core(ary):
    """`ary` without its broadcast dimensions (those of stride 0, taken at index 0): the
    part of memory that holds its distinct elements.

    Examples
    --------
    >>> from gpuhost import devicearray
    >>> b = np.broadcast_to(np.arange(3.0), (4, 3))
    >>> devicearray.array_core(b).shape
    (3,)
    """
    if not ary.strides or not ary.size:
        return ary
    return ary[tuple(0 if s == 0 else slice(None) for s in ary.strides)]


def is_contiguous(ary):
    """Whether `ary` is C-contiguous when its broadcast dimensions and those of length 1 are
    left out.

    Examples
    --------
    >>> from gpuhost import devicearray
    >>> devicearray.is_contiguous(np.zeros((3, 4))), devicearray.is_contiguous(np.zeros((3, 4)).T)
    (True, False)
    """
    expect = ary.dtype.itemsize
    for n, s in zip(reversed(ary.shape), reversed(ary.strides)):
        if n > 1 and s != 0:
            if s != expect:
                return False
            expect *= n
    return True


errmsg_contiguous_buffer = (
    "Array contains non-contiguous buffer and cannot be transferred as a single memory "
    "region. Please ensure contiguous buffer with numpy .ascontiguousarray()")


def sentry_contiguous(ary):
    """Raise numba's ValueError unless the core of `ary` (`array_core`) is C- or
    F-contiguous.

    Raises
    ------
    ValueError
        ``errmsg_contiguous_buffer``.

    Examples
    --------
    >>> from gpuhost import devicearray
    >>> devicearray.sentry_contiguous(np.zeros((4, 4)).T)
    >>> devicearray.sentry_contiguous(np.zeros((4, 4))[:, ::2])
    Traceback (most recent call last):
        ...
    ValueError: Array contains non-contiguous buffer and cannot be transferred as a single memory region...
    """
    core = array_core(ary)
    if not core.flags["C_CONTIGUOUS"] and not core.flags["F_CONTIGUOUS"]:
        raise ValueError(errmsg_contiguous_buffer)


def auto_device(obj, stream=0, copy=True, user_explicit=False):
    """(device array, whether it is new) for `obj`, as numba's ``auto_device``: device
    memory (a gpuhost array, a memory pointer) comes back as it is, an object exporting
    ``__cuda_array_interface__`` as a view of its memory, and host data (an array, a
    record, a scalar, a list) as a new device array of its layout, copied in when `copy`.

    Parameters
    ----------
    obj : object
        What to have on the device.
    stream : gpuhost.Stream or 0, optional
        The stream of the copy and of the new array.
    copy : bool, optional
        Copy host data in (default).
    user_explicit : bool, optional
        numba's flag for copies the user asked for; accepted and unused.

    Returns
    -------
    tuple
        (the device array or memory, True if it was made here).

    Raises
    ------
    ValueError
        Host data that is not contiguous (`errmsg_contiguous_buffer`).

    Examples
    --------
    >>> from gpuhost import devicearray
    >>> d, new = devicearray.auto_device(np.arange(3))
    >>> new, d.copy_to_host()
    (True, array([0, 1, 2]))
    >>> devicearray.auto_device(d) == (d, False)
    True
    >>> devicearray.auto_device(2)[0].copy_to_host()
    array(2)
    """
    from .driver import is_device_memory

    if is_device_memory(obj):
        return obj, False
    desc = getattr(obj, "__cuda_array_interface__", None)
    if desc is not None:
        return _arrays.from_cuda_array_interface(desc, owner=obj), False
    if isinstance(obj, np.void):
        dev = from_record_like(obj, stream=stream)
        host = np.array(obj, dtype=obj.dtype)
    else:
        host = obj = np.array(obj, copy=None, subok=True)
        sentry_contiguous(obj)
        dev = from_array_like(obj, stream=stream)
    if copy:
        dev.copy_to_device(host, stream=stream)
    return dev, True


def check_array_compatibility(ary1, ary2):
    """Raise unless `ary1` and `ary2` can be copied one into the other byte for byte: the
    same dtype, and, dimensions of length 1 left out, the same shape and (with elements)
    strides.

    Raises
    ------
    TypeError
        ``"incompatible dtype: <a> vs. <b>"``.
    ValueError
        ``"incompatible shape: ..."`` or ``"incompatible strides: ..."``.

    Examples
    --------
    >>> from gpuhost import devicearray
    >>> devicearray.check_array_compatibility(gpuhost.device_array((1, 4)), np.zeros(4))
    >>> devicearray.check_array_compatibility(gpuhost.device_array(4), np.zeros(5))
    Traceback (most recent call last):
        ...
    ValueError: incompatible shape: (4,) vs. (5,)
    """
    def squeezed(a):
        kept = [(n, s) for n, s in zip(a.shape, a.strides) if n != 1]
        return tuple(n for n, _ in kept), tuple(s for _, s in kept)

    (shape1, strides1), (shape2, strides2) = squeezed(ary1), squeezed(ary2)
    if ary1.dtype != ary2.dtype:
        raise TypeError("incompatible dtype: %s vs. %s" % (ary1.dtype, ary2.dtype))
    if shape1 != shape2:
        raise ValueError("incompatible shape: %s vs. %s" % (ary1.shape, ary2.shape))
    if ary1.size and strides1 != strides2:
        raise ValueError("incompatible strides: %s vs. %s" % (ary1.strides, ary2.strides))
