"""numba.cuda's host arrays that the device uses: pinned (page-locked), mapped and managed
memory, made new (pinned_array, mapped_array, managed_array and their _like) or from
existing numpy arrays for a block (pinned, mapped).

Imported on first use, not with gpuhost: a program that only copies pageable arrays never
needs it.
"""
import contextlib

import numpy as np

from . import _core
from ._arrays import _layout, _like, _stream_or_none

__all__ = [
    "managed_array", "mapped", "mapped_array", "mapped_array_like", "pinned", "pinned_array",
    "pinned_array_like",
]


def _host_alloc(kind, shape, dtype, strides, order, **flags):
    shape, dtype, strides, nbytes = _layout(shape, dtype, strides, order)
    alloc = _core.mem_alloc(nbytes, kind, **flags)
    return alloc, shape, dtype, strides


def pinned_array(shape, dtype=np.float64, strides=None, order="C"):
    """A numpy array in page-locked (pinned) host memory.

    Copies between pinned memory and the device run at full bus speed and, on a stream,
    asynchronously. The memory is freed when the array and its views are gone.

    Parameters
    ----------
    shape : int or tuple of int
        The array's shape.
    dtype : numpy dtype, optional
        The element type (default float64).
    strides : tuple of int, optional
        Strides in bytes; by default those of a contiguous array in `order`.
    order : {"C", "F"}, optional
        Row-major (default) or column-major layout.

    Returns
    -------
    numpy.ndarray
        Uninitialized.

    Raises
    ------
    CudaOutOfMemoryError
        The driver could not page-lock that much host memory.

    Examples
    --------
    >>> h = gpuhost.pinned_array((2, 3), np.float32)
    >>> h[:] = 1
    >>> float(gpuhost.to_device(h).copy_to_host().sum())
    6.0
    """
    alloc, shape, dtype, strides = _host_alloc("pinned", shape, dtype, strides, order)
    return np.ndarray(shape, dtype, buffer=alloc if alloc.size else None, strides=strides)


def pinned_array_like(ary):
    """A new, uninitialized pinned host array of `ary`'s shape, dtype and order.

    The layout is `device_array_like`'s (numba's rule): contiguous, in `ary`'s order.

    Parameters
    ----------
    ary : array_like
        As for `device_array_like`: a numpy or device array, a foreign array, any object
        with ``.shape`` and ``.dtype``.

    Returns
    -------
    numpy.ndarray
        In page-locked memory, as from `pinned_array`.

    Examples
    --------
    >>> d = gpuhost.to_device(np.arange(4))
    >>> h = gpuhost.pinned_array_like(d)
    >>> d.copy_to_host(h)
    array([0, 1, 2, 3])
    """
    shape, dtype, strides, order = _like(ary, "pinned_array_like")
    return pinned_array(shape, dtype, strides, order)


class MappedArray(np.ndarray):
    """A numpy array whose memory the device reads and writes directly (mapped or
    managed memory); it also exports __cuda_array_interface__, with the stream it was made
    on (`stream`, 0 for none), as numba's mapped and managed arrays do."""

    stream = 0

    def __array_finalize__(self, obj):
        self.stream = getattr(obj, "stream", 0)

    @property
    def __cuda_array_interface__(self):
        alloc = self.base
        while not isinstance(alloc, _core.Allocation):
            alloc = alloc.base
        offset = self.__array_interface__["data"][0] - alloc.host_ptr
        return {"shape": self.shape, "typestr": self.dtype.str, "descr": self.dtype.descr,
                "strides": None if self.flags["C_CONTIGUOUS"] else self.strides,
                "data": (alloc.ptr + offset if self.size else 0, False), "version": 3,
                "stream": _cai_stream(self.stream)}


def _cai_stream(stream):
    """The CUDA array interface's stream for an array bound to `stream`: None for none,
    else its handle (1, the legacy default stream, for the default stream's 0)."""
    if stream is None or (type(stream) is int and stream == 0):
        return None
    handle = stream.handle if hasattr(stream, "handle") else int(stream)
    return int(handle) or 1


def _mapped_view(alloc, shape, dtype, strides, stream=0):
    if alloc.size == 0:
        view = np.ndarray(shape, dtype, strides=strides).view(MappedArray)
    else:
        view = MappedArray(shape, dtype, buffer=alloc, strides=strides)
    view.stream = stream if stream is not None else 0
    return view


def mapped_array(shape, dtype=np.float64, strides=None, order="C", stream=0, portable=False,
                 wc=False):
    """A host array mapped into the device's address space.

    A kernel reads and writes the host memory directly, over the bus: no copies. The
    array is a numpy array that also exports ``__cuda_array_interface__``, so it can be
    passed to a kernel as it is.

    Parameters
    ----------
    shape, dtype, strides, order
        As for `pinned_array`.
    stream : Stream, optional
        The stream its ``__cuda_array_interface__`` reports (numba's); 0 for none.
    portable : bool, optional
        Usable from every context, not only the current one.
    wc : bool, optional
        Write-combined: fast for the device to read, very slow for the host to read.

    Returns
    -------
    numpy.ndarray
        Uninitialized; a subclass with ``__cuda_array_interface__``.

    Examples
    --------
    >>> m = gpuhost.mapped_array(4, np.int32)
    >>> m[:] = 7
    >>> gpuhost.is_cuda_array(m)
    True
    >>> gpuhost.as_cuda_array(m).copy_to_host()
    array([7, 7, 7, 7], dtype=int32)
    """
    alloc, shape, dtype, strides = _host_alloc("mapped", shape, dtype, strides, order,
                                               portable=portable, wc=wc)
    return _mapped_view(alloc, shape, dtype, strides, stream)


def mapped_array_like(ary, stream=0, portable=False, wc=False):
    """A new, uninitialized mapped host array of `ary`'s shape, dtype and order.

    The layout is `device_array_like`'s (numba's rule): contiguous, in `ary`'s order.

    Parameters
    ----------
    ary : array_like
        As for `device_array_like`: a numpy or device array, a foreign array, any object
        with ``.shape`` and ``.dtype``.
    stream, portable, wc
        As for `mapped_array`.

    Returns
    -------
    numpy.ndarray
        Mapped into the device's address space, as from `mapped_array`.

    Examples
    --------
    >>> m = gpuhost.mapped_array_like(np.zeros((2, 2), np.float32))
    >>> m.shape, m.dtype
    ((2, 2), dtype('float32'))
    """
    shape, dtype, strides, order = _like(ary, "mapped_array_like")
    return mapped_array(shape, dtype, strides, order, stream=stream, portable=portable, wc=wc)


def managed_array(shape, dtype=np.float64, strides=None, order="C", stream=0,
                  attach_global=True):
    """An array in managed (unified) memory, readable from the host and the device.

    The driver migrates the pages to whichever side touches them. Synchronize before the
    host reads what a kernel wrote.

    Parameters
    ----------
    shape, dtype, strides, order
        As for `device_array`.
    stream : Stream, optional
        The stream its ``__cuda_array_interface__`` reports; 0 for none.
    attach_global : bool, optional
        True (default): every stream may access it (``CU_MEM_ATTACH_GLOBAL``); False:
        attached to the host until a stream attaches it.

    Returns
    -------
    numpy.ndarray
        Uninitialized; a subclass with ``__cuda_array_interface__``.

    Examples
    --------
    >>> a = gpuhost.managed_array(3, np.float64)
    >>> a[:] = [1, 2, 3]
    >>> gpuhost.as_cuda_array(a).copy_to_host()
    array([1., 2., 3.])
    """
    alloc, shape, dtype, strides = _host_alloc("managed", shape, dtype, strides, order,
                                               attach_global=attach_global)
    return _mapped_view(alloc, shape, dtype, strides, stream)


@contextlib.contextmanager
def pinned(*arrays):
    """Page-lock existing host arrays for the duration of a ``with`` block.

    Inside the block their copies to and from the device are as fast as those of
    `pinned_array`'s memory (``cuMemHostRegister``); at its end they are unregistered.
    Registering costs time: worth it for large arrays copied more than once.

    Parameters
    ----------
    *arrays : numpy.ndarray
        Host arrays to page-lock.

    Examples
    --------
    >>> a = np.arange(1 << 16, dtype=np.float32)
    >>> with gpuhost.pinned(a):
    ...     d = gpuhost.to_device(a)
    >>> d.copy_to_host()[-2:]
    array([65534., 65535.], dtype=float32)
    """
    regs = []
    try:
        for a in arrays:
            regs.append(_core.mem_register(a))
        yield
    finally:
        for reg in regs:
            reg.close()


@contextlib.contextmanager
def mapped(*arrays, stream=0, portable=False, wc=False):
    """Page-lock and map existing host arrays into the device for a ``with`` block.

    Parameters
    ----------
    *arrays : numpy.ndarray
        Host arrays to map.
    stream : Stream, optional
        The device arrays' stream.
    portable : bool, optional
        Mapped for every context.
    wc : bool, optional
        Not supported here (only an allocation can be write-combined).

    Yields
    ------
    DeviceArray or list of DeviceArray
        One device array over each host array's memory (the array itself for one):
        writes through either are seen by the other.

    Raises
    ------
    ValueError
        `wc` is true.

    Examples
    --------
    >>> a = np.zeros(4, np.int32)
    >>> with gpuhost.mapped(a) as d:
    ...     d[:] = 5
    >>> a
    array([5, 5, 5, 5], dtype=int32)
    """
    if wc:
        raise ValueError("write-combined memory can only be allocated (mapped_array(wc=True)), "
                         "not made from an existing array")
    regs, devs = [], []
    try:
        for a in arrays:
            host = np.asarray(a)
            reg = _core.mem_register(host, mapped=True, portable=portable)
            regs.append(reg)
            devs.append(_core.make_array(reg, reg.ptr, host.shape, host.strides, host.dtype,
                                         _stream_or_none(stream)))
        yield devs[0] if len(devs) == 1 else devs
    finally:
        for reg in regs:
            reg.close()  # unregistered now, as numba does, even if the arrays live on
