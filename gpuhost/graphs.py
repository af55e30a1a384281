"""CUDA graphs: capture a stream's work once, replay it for one launch.

``Graph``, ``GraphExec`` and ``GraphNode`` are C types (csrc/graphs/graph.c); this module holds
the parts written in Python: ``graph_capture()`` and the memcpy/memset node builders
(``Graph.add_memcpy``, ``Graph.add_memset``, attached to the C type here), which take
arrays (gpuhost, NumPy, anything exporting the CUDA array interface).

The rules, the driver's and gpuhost's:

* A captured graph refers to memory by address: the arrays its work reads and writes must
  stay alive (and in place) for as long as the graph may be launched.  Kernels launched
  into a capture, and host functions, are kept alive by the Graph.
* The caching pool never hands a block a graph uses to other work while the graph may
  still be launched: blocks allocated on a stream while it captures (and blocks freed on
  it meanwhile) belong to the Graph, and go back to the pool only once the Graph and every
  GraphExec made from it are gone.  The driver's pool (``set_memory_manager("driver")``)
  captures its allocations as graph nodes itself.
* While a stream captures, nothing may wait for it: ``synchronize()``, ``query()``,
  synchronous copies and copies from pageable host memory raise StreamCaptureError.
"""

import contextlib

import numpy as np

from . import _core, _methods
from ._arrays import _contiguous_strides

__all__ = ["Graph", "GraphExec", "GraphNode", "graph_capture"]

Graph = _core.Graph
GraphExec = _core.GraphExec
GraphNode = _core.GraphNode


class _Capture:
    """What ``graph_capture()`` yields: ``stream``, and ``graph`` once the block ended."""

    __slots__ = ("stream", "graph")

    def __init__(self, stream):
        self.stream = stream
        self.graph = None

    def __repr__(self):
        return "<graph capture on %r: %r>" % (self.stream, self.graph)


@contextlib.contextmanager
def graph_capture(stream=None, mode="thread_local"):
    """Capture the work queued on `stream` inside a ``with`` block into a `Graph`.

    Nothing queued in the block runs then: it is recorded. Instantiate the graph once
    (`Graph.instantiate`) and launch the `GraphExec` as often as needed, one launch for
    all of it. If the block raises, the capture is ended and its graph dropped.

    Parameters
    ----------
    stream : Stream, optional
        The stream to capture; by default a new one (the legacy default stream cannot
        capture).
    mode : {"thread_local", "global", "relaxed"}, optional
        The driver's capture mode: which potentially unsafe calls make the capture fail.
        "thread_local" (the default): this thread's only, so that other threads (PyTorch's,
        CuPy's) are never refused; "global": every thread's, as PyTorch's own capture;
        "relaxed": none, as CuPy's.

    Yields
    ------
    capture
        With ``.stream``, to queue the work on, and ``.graph``, the Graph, set when the
        block ends.

    Raises
    ------
    StreamCaptureError
        The capture was invalidated (an unsafe call, a synchronization in the block...).

    Examples
    --------
    >>> x = gpuhost.device_array(1 << 20, np.float32)
    >>> with gpuhost.graph_capture() as cap:
    ...     x.copy_to_device(np.ones(1 << 20, np.float32), stream=cap.stream)
    ...     scale[256, 256, cap.stream](x, np.float32(2), np.int32(x.size))  # doctest: +SKIP
    >>> g = cap.graph.instantiate()                               # doctest: +SKIP
    >>> for _ in range(100):                                      # doctest: +SKIP
    ...     g.launch(cap.stream)
    """
    if stream is None:
        stream = _core.stream()
    cap = _Capture(stream)
    stream.begin_capture(mode)
    try:
        yield cap
    except BaseException:
        with contextlib.suppress(Exception):
            stream.end_capture()
        raise
    cap.graph = stream.end_capture()


def _span(obj, what):
    """(address, nbytes) of a contiguous array, or (address, None) of an int address."""
    if isinstance(obj, int) and not isinstance(obj, bool):
        return obj, None
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        shape, typestr = tuple(cai["shape"]), cai["typestr"]
        itemsize = np.dtype(typestr).itemsize
        strides = cai.get("strides")
        if strides is not None and tuple(strides) != _contiguous_strides(shape, itemsize):
            raise ValueError("%s must be C-contiguous for a graph node" % what)
        return int(cai["data"][0]), int(np.prod(shape, dtype=np.int64)) * itemsize
    if isinstance(obj, np.ndarray):
        if not obj.flags.c_contiguous:
            raise ValueError("%s must be C-contiguous for a graph node" % what)
        return obj.ctypes.data, obj.nbytes
    raise TypeError(
        "%s must be a device array, a NumPy array or an address (int), not %s"
        % (what, type(obj).__name__)
    )


def _nbytes(nbytes, *sizes):
    known = [s for s in sizes if s is not None]
    if nbytes is None:
        if not known:
            raise TypeError("nbytes is needed when both sides are addresses")
        if len(set(known)) > 1:
            raise ValueError("the arrays differ in size (%d and %d bytes); pass nbytes" % tuple(known))
        return known[0]
    nbytes = int(nbytes)
    if nbytes < 0:
        raise ValueError("nbytes must not be negative, not %d" % nbytes)
    for s in known:
        if nbytes > s:
            raise ValueError("nbytes %d is past an array of %d bytes" % (nbytes, s))
    return nbytes


@_methods.method(_core.Graph, "add_memcpy")
def _add_memcpy(self, dst, src, nbytes=None, depends_on=()):
    """A copy node (a GraphNode): `nbytes` from `src` to `dst` at each launch.

    `dst` and `src` are device arrays, pinned or mapped host arrays, or addresses; the
    node refers to them by address, so they must stay alive while the graph may be
    launched.

    Parameters
    ----------
    dst, src : DeviceArray, numpy.ndarray or int
        C-contiguous arrays (or objects with the CUDA array interface), or addresses.
    nbytes : int, optional
        Bytes to copy; None: the arrays' size (they must be of one size).
    depends_on : GraphNode or sequence of GraphNode, optional
        Nodes of this graph that must finish first.

    Returns
    -------
    GraphNode

    Raises
    ------
    TypeError
        For another kind of `dst` or `src`, or when both are addresses and `nbytes` is None.
    ValueError
        For arrays that are not C-contiguous, of different sizes, or smaller than `nbytes`.

    Examples
    --------
    >>> src = gpuhost.to_device(np.arange(4, dtype=np.float32))
    >>> dst = gpuhost.device_array_like(src)
    >>> g = gpuhost.Graph()
    >>> node = g.add_memcpy(dst, src)
    >>> node.type
    'memcpy'
    >>> g.launch()
    >>> dst.copy_to_host()
    array([0., 1., 2., 3.], dtype=float32)
    """
    dptr, dsize = _span(dst, "dst")
    sptr, ssize = _span(src, "src")
    return self._add_memcpy(dptr, sptr, _nbytes(nbytes, dsize, ssize), depends_on)


@_methods.method(_core.Graph, "add_memset")
def _add_memset(self, dst, value, count=None, element_size=None, depends_on=()):
    """A memset node (a GraphNode): `count` elements at `dst` set to `value` at each launch.

    Parameters
    ----------
    dst : DeviceArray or int
        A C-contiguous device array, or an address.
    value : int or float
        The value: a float is stored as a float of `element_size` bytes (float16 or
        float32), a negative int as its two's complement.
    count : int, optional
        Elements to set; None: all of `dst`.
    element_size : {1, 2, 4}, optional
        Bytes per element. None: the array's itemsize when it is 1, 2 or 4 (else 4, or 1
        for a size not a multiple of 4), 1 for an address.
    depends_on : GraphNode or sequence of GraphNode, optional
        Nodes of this graph that must finish first.

    Returns
    -------
    GraphNode

    Raises
    ------
    TypeError
        For an address without `count`.
    ValueError
        For another `element_size`, or a `count` past the end of `dst`.
    OverflowError
        For a `value` that does not fit `element_size` bytes.

    Examples
    --------
    >>> d = gpuhost.device_array(4, np.int32)
    >>> g = gpuhost.Graph()
    >>> node = g.add_memset(d, 7)
    >>> g.launch()
    >>> d.copy_to_host()
    array([7, 7, 7, 7], dtype=int32)
    >>> g.add_memset(d, 1 << 40)
    Traceback (most recent call last):
        ...
    OverflowError: value 1099511627776 does not fit 4 bytes
    """
    ptr, size = _span(dst, "dst")
    if element_size is None:
        element_size = getattr(dst, "dtype", np.dtype(np.uint8)).itemsize
        if element_size not in (1, 2, 4):
            element_size = 4 if size is not None and size % 4 == 0 else 1
    element_size = int(element_size)
    if element_size not in (1, 2, 4):
        raise ValueError("element_size must be 1, 2 or 4, not %d" % element_size)
    if count is None:
        if size is None:
            raise TypeError("count is needed for an address")
        count = size // element_size
    count = int(count)
    if count < 0 or (size is not None and count * element_size > size):
        raise ValueError("count %d of %d-byte elements does not fit dst" % (count, element_size))
    if isinstance(value, (float, np.floating)):
        value = np.array(value, dtype={2: np.float16, 4: np.float32}.get(element_size, np.uint8))
        value = int(value.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[element_size]))
    value = int(value)
    if not 0 <= value < 1 << (8 * element_size):
        if -(1 << (8 * element_size - 1)) <= value < 0:
            value &= (1 << (8 * element_size)) - 1
        else:
            raise OverflowError("value %d does not fit %d bytes" % (value, element_size))
    return self._add_memset(ptr, value, element_size, count, depends_on)
