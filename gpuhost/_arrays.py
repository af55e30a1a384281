"""numba.cuda's array functions over gpuhost's C types, the current allocator of device
arrays, the strided-copy planner, and DeviceArray's views (reshape, ravel, view, transpose,
split: methods attached to the C type here).

The C DeviceArray copies contiguous data itself; layouts with gaps or negative strides
come here and become 2D copies (cuMemcpy2D), each moving only the array's own elements.
"""
import contextlib
import ctypes
import operator

import numpy as np

from . import _core, _methods

__all__ = [
    "as_cuda_array", "defer_cleanup", "device_array", "device_array_like", "from_dlpack",
    "from_cuda_array_interface", "is_cuda_array", "to_device",
]

_MAX_BYTES = 2**62


def _dtype(dtype):
    try:
        dt = np.dtype(dtype)
    except SyntaxError as e:  # numpy parses some strings (',', '2,') as Python
        raise TypeError("data type %r not understood" % (dtype,)) from e
    if dt.hasobject:
        raise TypeError("dtype %s holds Python objects, which cannot live in device memory" % dt)
    return dt


def _shape(shape):
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        shape = tuple(operator.index(n) for n in shape)
    except TypeError:
        raise TypeError("shape must be an int or a sequence of ints, not %r" % (shape,)) from None
    if any(n < 0 for n in shape):
        raise ValueError("negative dimensions are not allowed: shape %r" % (shape,))
    return shape


def _contiguous_strides(shape, itemsize, order="C"):
    strides, acc = [0] * len(shape), itemsize
    for i in (reversed(range(len(shape))) if order == "C" else range(len(shape))):
        strides[i] = acc
        acc *= shape[i]
    return tuple(strides)


def _layout(shape, dtype, strides, order):
    """(shape, dtype, strides, bytes to allocate) for a new array, validated.  A subarray
    dtype (('f4', 2)) adds its dimensions to the shape, as numpy does (given strides are
    the outer ones; the subarray's own are contiguous)."""
    shape, dtype = _shape(shape), _dtype(dtype)
    inner = ()
    if dtype.shape:
        inner = _contiguous_strides(dtype.shape, dtype.base.itemsize)
        shape, dtype = shape + dtype.shape, dtype.base
    size = 1
    for n in shape:
        size *= n
    if size * dtype.itemsize >= _MAX_BYTES:
        raise ValueError("array of shape %r and dtype %s is too large (%d bytes)"
                         % (shape, dtype, size * dtype.itemsize))
    if strides is None:
        if order not in ("C", "F"):
            raise ValueError("order must be 'C' or 'F', not %r" % (order,))
        return shape, dtype, _contiguous_strides(shape, dtype.itemsize, order), \
            size * dtype.itemsize
    strides = tuple(operator.index(s) for s in strides)
    if len(strides) + len(inner) != len(shape):
        raise ValueError("strides %r do not match shape %r"
                         % (strides, shape[:len(shape) - len(inner)]))
    strides += inner
    if any(s < 0 for s in strides):
        raise ValueError("a new array cannot have negative strides %r" % (strides,))
    extent = 0 if size == 0 else dtype.itemsize + sum((n - 1) * s for n, s in zip(shape, strides))
    return shape, dtype, strides, extent


def _stream_or_none(stream):
    """None for the default stream (0 or None), else the stream as given."""
    if stream is None or (type(stream) is int and stream == 0):
        return None
    return stream


# ---- where device arrays get their memory ----
#
# The current allocator of device arrays is owned by the C core (csrc/memory/allocator.c):
# the default pool, or the Python allocator gpuhost.memory (set_allocator, using_allocator)
# or gpuhost.memory_manager (set_memory_manager) set with _core.set_array_allocator.
# device_array() (_core.empty_array) and to_device() take their memory through it in C.
_manager_defer = None  # fn() -> the memory manager's defer_cleanup() context manager, or None


def set_manager_defer(defer):
    """Set the memory manager's deferral hook that defer_cleanup() enters: fn() -> its
    context manager or None; None (the default) when no memory manager is installed."""
    global _manager_defer
    _manager_defer = defer


def device_array(shape, dtype=np.float64, strides=None, order="C", stream=0):
    """A new, uninitialized array in device memory of the current context.

    The memory comes from the current allocator: the context's caching pool, unless
    `gpuhost.memory.set_allocator` or a memory manager replaced it.

    Parameters
    ----------
    shape : int or tuple of int
        The array's shape.
    dtype : numpy dtype, optional
        The element type (default float64, as numba's).
    strides : tuple of int, optional
        Strides in bytes; by default those of a contiguous array in `order`.
    order : {"C", "F"}, optional
        Row-major (default) or column-major layout.
    stream : Stream, optional
        The stream the allocation is ordered on, and the array's default stream for
        copies; 0 (the default) is the default stream.

    Returns
    -------
    DeviceArray
        Its contents are whatever the memory held: fill it before reading it.

    Raises
    ------
    CudaOutOfMemoryError
        The device has no memory left (also a `MemoryError`), with the device's free and
        total memory in the message.
    CudaSupportError
        No usable CUDA driver.

    Examples
    --------
    >>> d = gpuhost.device_array((1024, 3), np.float32)
    >>> d[:] = 0                          # a driver memset
    >>> d.shape, d.dtype, d.nbytes
    ((1024, 3), dtype('float32'), 12288)
    """
    shape, dtype, strides, nbytes = _layout(shape, dtype, strides, order)
    return _core.empty_array(nbytes, shape, strides, dtype, stream)  # memory and array in C


def _numpy_contiguity(shape, strides, itemsize):
    """(C_CONTIGUOUS, F_CONTIGUOUS) as numpy sets them for this layout: an array with no
    elements is both; dimensions of length 1 do not count."""
    if 0 in shape:
        return True, True
    flags = []
    for dims in (reversed(range(len(shape))), range(len(shape))):
        expect, ok = itemsize, True
        for i in dims:
            if shape[i] != 1:
                ok = ok and strides[i] == expect
                expect *= shape[i]
        flags.append(ok)
    return tuple(flags)


def _like_strides(shape, strides, itemsize, c_contiguous, f_contiguous):
    """(strides or None, order) of a new contiguous array like one of this layout, by
    numba's rule (numba.cuda.api._contiguous_strides_like_array, after NumPy's
    PyArray_NewLikeArrayWithShape): a contiguous array, or one of at most one dimension,
    keeps its order ("F" when only Fortran-contiguous); any other gets its dimensions laid
    out in the order of their strides, smallest first (signed, ties in dimension order)."""
    order = "F" if f_contiguous and not c_contiguous else "C"
    if c_contiguous or f_contiguous or len(shape) <= 1:
        return None, order
    new, acc = [0] * len(shape), itemsize
    for i in sorted(range(len(shape)), key=lambda i: strides[i]):
        new[i] = acc
        acc *= shape[i]
    return tuple(new), order


def _foreign_layout(ary, name):
    """(shape, dtype, strides) of an object that exports an array without being a numpy or
    gpuhost array, read as a launch reads it (csrc/arrays/interop.c: the CUDA array interface,
    DLPack); host memory exported through DLPack is read by numpy.  None when it exports
    neither; TypeError saying why when its export cannot be read."""
    if not (hasattr(ary, "__cuda_array_interface__") or hasattr(ary, "__dlpack__")):
        return None
    try:
        view = _core._foreign_array(ary, host_ok=True, void_ok=True)
        if view is None:  # host memory exported through DLPack
            view = np.from_dlpack(ary)
    except (BufferError, TypeError, ValueError, RuntimeError, NotImplementedError) as e:
        raise TypeError("%s() cannot read the layout of a %s (%s: %s)"
                        % (name, type(ary).__name__, type(e).__name__, e)) from e
    return view.shape, view.dtype, view.strides


def _like(ary, name):
    """(shape, dtype, strides or None, order) of a new array like `ary`, for the *_like
    functions: numba's rule (`_like_strides`) over the layout of a numpy or gpuhost array,
    of what a foreign array exports (CUDA array interface, DLPack), or of any object with
    .shape and .dtype (and .strides, if it has them; else C order). TypeError naming `name`
    for anything else."""
    if isinstance(ary, (np.ndarray, _core.DeviceArray)):
        flags = ary.flags
        strides, order = _like_strides(ary.shape, ary.strides, ary.dtype.itemsize,
                                       flags["C_CONTIGUOUS"], flags["F_CONTIGUOUS"])
        return ary.shape, ary.dtype, strides, order
    layout = _foreign_layout(ary, name)
    if layout is None:
        try:
            shape, dtype = _shape(ary.shape), _dtype(ary.dtype)
        except AttributeError:
            raise TypeError("%s() takes an array (an object with .shape and .dtype, or one "
                            "exporting __cuda_array_interface__ or __dlpack__), not %s"
                            % (name, type(ary).__name__)) from None
        strides = getattr(ary, "strides", None)
        strides = (_contiguous_strides(shape, dtype.itemsize) if strides is None
                   else tuple(operator.index(s) for s in strides))
        layout = shape, dtype, strides
    shape, dtype, strides = layout
    strides, order = _like_strides(shape, strides, dtype.itemsize,
                                   *_numpy_contiguity(shape, strides, dtype.itemsize))
    return shape, dtype, strides, order


def device_array_like(ary, stream=0):
    """A new, contiguous device array of `ary`'s shape and dtype, laid out in its order.

    The layout follows numba's rule (and NumPy's ``empty_like``): a contiguous `ary` keeps
    its order (C, or F when it is only Fortran-contiguous); a strided view, a transposed
    one, gets a contiguous layout whose dimensions are in the order of `ary`'s strides,
    smallest first: a Fortran-ordered view stays Fortran-ordered.

    Parameters
    ----------
    ary : array_like
        A numpy array, a device array, an object exporting ``__cuda_array_interface__``
        (CuPy, PyTorch, numba) or ``__dlpack__``, or any object with ``.shape`` and
        ``.dtype`` (and ``.strides``; without them, C order).
    stream : Stream, optional
        As for `device_array`; 0 (the default) is the default stream.

    Returns
    -------
    DeviceArray
        Uninitialized: fill it before reading it.

    Raises
    ------
    TypeError
        `ary` is none of those, or its ``__cuda_array_interface__`` or DLPack export
        cannot be read (the message says why).

    Examples
    --------
    >>> host = np.zeros((4, 5), np.int16, order="F")
    >>> d = gpuhost.device_array_like(host)
    >>> d.shape, d.dtype, d.is_f_contiguous()
    ((4, 5), dtype('int16'), True)
    >>> view = np.zeros((5, 12), order="F")[:, ::2]    # Fortran-ordered, not contiguous
    >>> gpuhost.device_array_like(view).strides
    (8, 40)
    """
    shape, dtype, strides, order = _like(ary, "device_array_like")
    return device_array(shape, dtype, strides, order, stream=stream)


def is_cuda_array(obj):
    """Whether `obj` exports the CUDA array interface (``__cuda_array_interface__``).

    True for gpuhost's device arrays and mapped arrays, CuPy arrays, numba's device arrays,
    PyTorch CUDA tensors; False for numpy arrays.

    Examples
    --------
    >>> gpuhost.is_cuda_array(gpuhost.to_device(np.ones(3)))
    True
    >>> gpuhost.is_cuda_array(np.ones(3))
    False
    """
    return hasattr(obj, "__cuda_array_interface__")


def _device_source(obj, stream=None):
    """obj as a DeviceArray when it is device memory (a DeviceArray, or another library's
    device array, with `stream` ordered after its exporter's), else None: host data."""
    if isinstance(obj, _core.DeviceArray):
        return obj
    if isinstance(obj, np.ndarray) and not hasattr(obj, "__cuda_array_interface__"):
        return None
    return _core._foreign_array(obj, stream, host_ok=True)


def _kernel_stream(dev, stream):
    return stream if stream not in (None, 0) else dev.stream


def _host_array(obj):
    host = np.asarray(obj)
    if host.dtype.hasobject:
        raise TypeError("dtype %s holds Python objects, which cannot live in device memory"
                        % host.dtype)
    return host


def to_device(obj, stream=0, copy=True, to=None):
    """Copy a host array to a new device array, or into `to`.

    Pageable host memory from 2 MiB up is copied through gpuhost's pinned staging ring;
    pinned host memory (`pinned_array`, `pinned`) is copied directly and, on a stream,
    asynchronously.

    Parameters
    ----------
    obj : array_like
        Anything `numpy.asarray` takes, in any layout (strided and negatively strided
        arrays copy correctly). A device array, or an object exporting the CUDA array
        interface or a CUDA DLPack tensor (CuPy, PyTorch, numba), comes back as a device
        array over the same memory: no copy.
    stream : Stream, optional
        The stream the copy is queued on; 0 (the default) is the default stream.
    copy : bool, optional
        numba's argument: False allocates the array without copying `obj` into it.
    to : DeviceArray, optional
        Copy into this array (same shape and dtype) instead of a new one.

    Returns
    -------
    DeviceArray
        The new array, or `to`.

    Raises
    ------
    ValueError
        `to` has another shape or dtype than `obj`.
    CudaOutOfMemoryError
        The device has no memory left for the new array.
    CudaSupportError
        No usable CUDA driver.

    Examples
    --------
    >>> host = np.arange(6, dtype=np.float32).reshape(2, 3)
    >>> d = gpuhost.to_device(host)
    >>> d.copy_to_host()
    array([[0., 1., 2.],
           [3., 4., 5.]], dtype=float32)

    On a stream, from pinned memory, the call returns before the copy is done:

    >>> s = gpuhost.stream()
    >>> h = gpuhost.pinned_array(1 << 20, np.float32)
    >>> d = gpuhost.to_device(h, stream=s)
    >>> s.synchronize()
    """
    if type(obj) is np.ndarray and copy and to is None:
        dev = _core.to_device(obj, stream)  # allocate and copy in C
        if dev is not NotImplemented:
            return dev
    if to is not None:
        to.copy_to_device(obj, stream=stream)
        return to
    src = _device_source(obj)
    if src is not None:
        return src
    host = _host_array(obj)
    dev = device_array(host.shape, host.dtype, order=_like(host, "to_device")[3], stream=stream)
    if copy:
        dev.copy_to_device(host, stream=stream)
    return dev


# The CUDA array interface and DLPack are read in C (csrc/arrays/interop.c), the same way a kernel
# launch reads other libraries' arrays.
from_cuda_array_interface = _core.from_cuda_array_interface
as_cuda_array = _core.as_cuda_array
from_dlpack = _core.from_dlpack


@contextlib.contextmanager
def defer_cleanup():
    """Hold the release of device memory, streams and events until the block ends.

    A free can synchronize the device; inside the block, arrays, streams and events that
    die are released at its end instead, so queued work is never stalled (numba's
    ``defer_cleanup``). An external memory manager's own deferral applies too.

    Examples
    --------
    >>> with gpuhost.defer_cleanup():
    ...     for _ in range(3):
    ...         tmp = gpuhost.device_array(1 << 20)   # each one freed at the end
    """
    _core._defer_cleanup_enter()
    try:
        manager_defer = _manager_defer() if _manager_defer is not None else None
        if manager_defer is None:
            yield
        else:
            with manager_defer:  # an external memory manager's own deferral (numba's EMM)
                yield
    finally:
        _core._defer_cleanup_exit()


# ---- copies from other device arrays (array_copy.c plans every host copy itself) ----

def _check_match(dev, host, what):
    if host.shape != dev.shape or host.dtype != dev.dtype:
        raise ValueError("%s has shape %s and dtype %s; the device array has shape %s and "
                         "dtype %s" % (what, host.shape, host.dtype, dev.shape, dev.dtype))


def _copy_kernels():
    """gpuhost._copykernel, imported by the first copy that needs one of its kernels (not
    with gpuhost: most programs never do)."""
    from . import _copykernel

    return _copykernel


def copy_device_layouts(dev, ary, stream):
    """DeviceArray.copy_to_device(ary) for what the C copy does not take itself: a device
    array of another layout or device, a foreign device array (CUDA array interface,
    DLPack), or a host object that is not a numpy array (a list, a scalar)."""
    src = _device_source(ary, stream)
    if src is not None:
        if src is not ary and src.shape == dev.shape and src.dtype == dev.dtype:
            return dev.copy_to_device(src, stream=stream)  # contiguous case: a device copy
        _check_match(dev, src, "the source array")
        if src.context == dev.context \
                and _copy_kernels().copy(dev, src, _kernel_stream(dev, stream)):
            return None  # other layouts: the built-in copy kernel
        if src.context != dev.context and isinstance(stream, _core.Stream) \
                and stream.context == src.context:
            # another device's layout, on the source's stream: read there, write in order
            ary = src.copy_to_host(stream=stream)
            stream.synchronize()
            stream = 0
        else:
            ary = src.copy_to_host()  # another device, or no kernels here: through the host
    return dev.copy_to_device(_host_array(ary), stream=stream)


# ---- views: numpy's own indexing rules, applied to a probe that owns no device memory ----

def _probe(dev):
    """A numpy array with dev's shape, strides and dtype over a 1-element host buffer.

    numpy computes views of it (basic indexing, transpose, reshape of contiguous arrays,
    dtype views) by metadata alone; the view's data address minus the probe's is the byte
    offset to apply to the device address.  Nothing here reads through the probe."""
    cell = np.empty(1, dev.dtype)
    probe = np.lib.stride_tricks.as_strided(cell, dev.shape, dev.strides)
    return probe, cell.__array_interface__["data"][0]


def _from_probe(dev, view, base_addr, stream=0):
    offset = view.__array_interface__["data"][0] - base_addr
    return _core.make_array(dev.owner, dev.ptr + offset, view.shape, view.strides, view.dtype,
                            dev.stream if stream == 0 else _stream_or_none(stream),
                            base=dev)


def _index_tuple(key):
    return key if isinstance(key, tuple) else (key,)


def _is_int(k):
    if isinstance(k, (bool, np.bool_)):
        return False
    try:
        operator.index(k)
        return True
    except TypeError:
        return False


def _check_basic(key):
    for k in _index_tuple(key):
        if k is None or k is Ellipsis or isinstance(k, slice) or _is_int(k):
            continue
        raise TypeError("only basic indexing (ints, slices, ..., None) is supported on a "
                        "device array, not %s" % type(k).__name__)


def _element_offset(dev, key):
    """Byte offset of dev[key] when key indexes every axis with an int; IndexError as
    numpy words it."""
    offset = 0
    for axis, (k, n, s) in enumerate(zip(key, dev.shape, dev.strides)):
        i = operator.index(k)
        if not -n <= i < n:
            raise IndexError("index %d is out of bounds for axis %d with size %d" % (i, axis, n))
        offset += (i % n) * s
    return offset


def _field_view(dev, name):
    """The device view of field `name` of a structured array (numba's DeviceRecord)."""
    fields = dev.dtype.fields
    if fields is None:
        raise TypeError("only basic indexing (ints, slices, ..., None) is supported on a "
                        "device array, and field names on structured ones, not str")
    if name not in fields:
        raise KeyError("no field of name %s" % name)
    probe, base = _probe(dev)
    return _from_probe(dev, probe[name], base)


def getitem(dev, key):
    """dev[key] planned by numpy's own rules over a probe: what the C planner
    (csrc/arrays/array_index.c, DeviceArray.__getitem__) answers, kept as its reference."""
    if isinstance(key, str):
        view = _field_view(dev, key)
        if view.ndim == 0 and view.dtype.names is None:
            return view.copy_to_host()[()]  # a scalar field of a record: its value, as numba
        return view
    _check_basic(key)
    items = _index_tuple(key)
    if len(items) == dev.ndim and all(_is_int(k) for k in items):
        offset = _element_offset(dev, items)
        cell = _core.make_array(dev.owner, dev.ptr + offset, (), (), dev.dtype,
                                dev.stream, base=dev)
        if dev.dtype.names is not None:
            return cell  # a record stays on the device (numba's DeviceRecord)
        return cell.copy_to_host()[()]  # a numpy scalar
    probe, base = _probe(dev)
    view = probe[_basic_key(key)]
    if not _derives_from(view, probe):  # never an address outside dev: a bug, said so
        raise RuntimeError("gpuhost: indexing %r made no view of the array" % (key,))
    return _from_probe(dev, view, base)


def _basic_key(key):
    """key with every integer-like item (a numpy integer, a 0-d integer array, any
    __index__) as a Python int: numpy takes an integer *array*, 0-d too, as advanced
    indexing, whose result is a copy, not a view of the probe (its address would be
    meaningless); the element it names is the same."""
    if isinstance(key, tuple):
        return tuple(operator.index(k) if _is_int(k) else k for k in key)
    return operator.index(key) if _is_int(key) else key


def _derives_from(view, probe):
    """Whether `view` is a view of `probe` (its base chain reaches it)."""
    while view is not None:
        if view is probe:
            return True
        view = view.base if isinstance(view, np.ndarray) else None
    return False


def field(dev, name):
    """dev[name] for a str key (csrc/arrays/array_index.c asks): the field's view."""
    return _field_view(dev, name)


def assign(target, value):
    """target[...] = value for what csrc/arrays/array_index.c leaves (target is the view its
    key selected): broadcasting, a cast or another device's source, a record's field, a
    scalar no memset lays."""
    src = _device_source(value)
    if src is not None:
        if src.shape == target.shape and src.dtype == target.dtype:
            target.copy_to_device(src)  # a device copy, or the copy kernel for other layouts
            return
        if src.dtype == target.dtype and src.context == target.context:
            _copy_kernels().broadcast_strides(src.shape, src.strides, target.shape)  # or ValueError
            if _copy_kernels().copy(target, src, target.stream):
                return
        value = src.copy_to_host()  # casting, another device, no kernels: through the host
    host = np.asarray(value, dtype=target.dtype) if not isinstance(value, np.ndarray) \
        else value.astype(target.dtype, copy=False)
    if host.ndim == 0 and (_fill(target, host)
                           or _copy_kernels().fill(target, host, target.stream)):
        return
    try:
        _copy_kernels().broadcast_strides(host.shape, host.strides, target.shape)
    except ValueError:
        raise ValueError(_copy_kernels().broadcast_error(host.shape, target.shape)) from None
    if host.size < target.size and host.size:
        # broadcasting: only the host array's own elements cross the bus
        small = to_device(np.ascontiguousarray(host), stream=target.stream or 0)
        if _copy_kernels().copy(target, small, target.stream):
            return
    target.copy_to_device(np.broadcast_to(host, target.shape))


def _fill(target, scalar):
    """Set every element of `target` to `scalar` with a driver memset where the value's
    bytes repeat a 1-, 2- or 4-byte pattern and the layout is at most 2 strided rows.
    True if done."""
    raw = scalar.tobytes()
    item = len(raw)
    unit = next((u for u in (1, 2, 4) if item % u == 0 and raw == raw[:u] * (item // u)), None)
    if unit is None or target.size == 0:
        return unit is not None
    ptr, axes = _core.plan_layout(target)
    if not axes:
        axes = [(1, item)]
    if axes[-1][1] != item or len(axes) > 2:
        return False
    width = axes[-1][0] * item // unit
    height, pitch = (axes[0][0], axes[0][1]) if len(axes) == 2 else (1, width * unit)
    if pitch % unit:
        return False
    _core.memset(target, ptr, unit, int.from_bytes(raw[:unit], "little"), width, height, pitch,
                 target.stream)
    return True


@_methods.method(_core.DeviceArray)
def transpose(self, axes=None):
    """A view with the axes permuted.

    Parameters
    ----------
    axes : tuple of int, optional
        The new order of the axes; None reverses them (as the `T` attribute).

    Examples
    --------
    >>> d = gpuhost.device_array((2, 3, 4), np.float32)
    >>> d.transpose().shape, d.transpose((1, 0, 2)).shape
    ((4, 3, 2), (3, 2, 4))
    """
    probe, base = _probe(self)
    return _from_probe(self, probe.transpose(axes), base)


@_methods.method(_core.DeviceArray)
def reshape(self, *newshape, order="C"):
    """A view of the same memory with a new shape.

    Parameters
    ----------
    *newshape : int or tuple of int
        The new shape, as separate ints or one tuple; one dimension may be -1 (inferred).
    order : {'C', 'F'}, optional
        The order the elements are read in; the array must be contiguous in it.

    Returns
    -------
    DeviceArray
        A view; no data is copied.

    Raises
    ------
    NotImplementedError
        If the array is not contiguous in `order` (the reshape would need a copy).
    ValueError
        If the sizes do not match.

    Examples
    --------
    >>> d = gpuhost.to_device(np.arange(6))
    >>> d.reshape(2, 3).shape, d.reshape((3, -1)).shape
    ((2, 3), (3, 2))
    """
    if len(newshape) == 1 and not _is_int(newshape[0]):
        newshape = tuple(newshape[0])
    if order not in ("C", "F"):
        raise ValueError("order must be 'C' or 'F', not %r" % (order,))
    contiguous = self.is_c_contiguous() if order == "C" else self.is_f_contiguous()
    if not contiguous:
        raise NotImplementedError("reshape of a device array that is not %s-contiguous needs "
                                  "a copy; make one first" % order)
    probe, base = _probe(self)
    return _from_probe(self, probe.reshape(newshape, order=order), base)


@_methods.method(_core.DeviceArray)
def ravel(self, order="C", stream=0):
    """A 1-d view of the array's elements.

    Parameters
    ----------
    order : {'C', 'F', 'A'}, optional
        The order the array must be contiguous in; 'A': whichever it is.
    stream : Stream or 0, optional
        The stream the view is bound to (see bind()); 0: the array's.

    Raises
    ------
    NotImplementedError
        If the array is not contiguous in `order` (the ravel would need a copy).
    ValueError
        For another `order`.

    Examples
    --------
    >>> d = gpuhost.device_array((2, 3), np.float32)
    >>> d.ravel().shape, d.T.ravel(order='F').shape
    ((6,), (6,))
    """
    if order not in ("C", "F", "A"):
        raise ValueError("order not C|F|A")
    if order == "A":
        order = "F" if self.is_f_contiguous() and not self.is_c_contiguous() else "C"
    if not (self.is_c_contiguous() if order == "C" else self.is_f_contiguous()):
        raise NotImplementedError("ravel on non-contiguous array")
    flat = reshape(self, self.size, order=order)
    return flat.bind(stream) if stream else flat


@_methods.method(_core.DeviceArray)
def view(self, dtype):
    """The same memory seen as another dtype.

    The last dimension is rescaled by the ratio of the item sizes, as numpy's
    `ndarray.view` does; it must be contiguous.

    Parameters
    ----------
    dtype : dtype_like
        The new element type.

    Returns
    -------
    DeviceArray
        A view; no data is copied.

    Examples
    --------
    >>> d = gpuhost.to_device(np.zeros(4, np.float32))
    >>> v = d.view(np.uint8)
    >>> v.dtype, v.shape
    (dtype('uint8'), (16,))
    """
    dtype = _dtype(dtype)
    probe, base = _probe(self)
    return _from_probe(self, probe.view(dtype), base)


@_methods.method(_core.DeviceArray)
def split(self, section, stream=0):
    """Split a 1-d array into views of `section` elements each.

    Parameters
    ----------
    section : int
        Elements per view; the last view may be shorter.
    stream : Stream or 0, optional
        The stream the views are bound to.

    Returns
    -------
    list of DeviceArray

    Examples
    --------
    >>> d = gpuhost.device_array(10, np.float32)
    >>> [part.shape for part in d.split(4)]
    [(4,), (4,), (2,)]
    """
    if self.ndim != 1:
        raise ValueError("split() works on 1-d arrays, not %d-d" % self.ndim)
    section = operator.index(section)
    if section <= 0:
        raise ValueError("section must be positive, not %d" % section)
    probe, base = _probe(self)
    return [_from_probe(self, probe[i:i + section], base, stream)
            for i in range(0, self.shape[0], section)]


# The C core calls these (array_copy.c, array_index.c, devicearray.c): registered once.
# DeviceArray.gpu_data is numba's MemoryPointer: numba's face registers it (array_gpu_data).
_core._set_helpers(copy_device_layouts=copy_device_layouts, array_field=field,
                   array_assign=assign, ctypes_pointer=ctypes.c_void_p)
