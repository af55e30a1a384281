"""cupy.cuda.stream's names (Stream, ExternalStream, Event, get_current_stream,
get_elapsed_time) as thin wrappers of gpuhost's Stream and Event.

The current stream is CuPy's notion: one per device and thread, Stream.null until a
``with stream:`` block or ``stream.use()`` changes it; exiting a ``with`` block restores the
stream entered by the enclosing one (Stream.null outside all), as CuPy's does. Event.record()
and gpuhost.compat.cupy.memory's allocations and copies use it; gpuhost's own functions take
their stream explicitly and do not consult it.
"""
import threading
import warnings

from ... import _core
from . import runtime as _runtime
from .device import get_device_id

__all__ = ["Event", "ExternalStream", "Stream", "get_current_stream", "get_elapsed_time"]

_CU_STREAM_LEGACY = 1
_CU_STREAM_PER_THREAD = 2


class _ThreadLocal(threading.local):
    """CuPy's bookkeeping, per thread: each device's current stream, each device's stack of
    streams entered with ``with`` (its bottom is the default stream), and the devices of the
    open with-blocks in order, so that exiting one restores the stream it replaced even
    when ``use()`` calls were mixed in."""

    def __init__(self):
        self.current = {}  # device id -> the current stream (missing: the default stream)
        self.stacks = {}  # device id -> streams entered with `with`, innermost last
        self.devices = []  # the device id of each open with-block

    def push(self, stream, device_id):
        self.stacks.setdefault(device_id, []).append(stream)
        self.devices.append(device_id)
        self.current[device_id] = stream

    def pop(self):
        device_id = self.devices.pop()
        stack = self.stacks[device_id]
        stack.pop()
        self.current[device_id] = stack[-1] if stack else Stream.null


_tls = _ThreadLocal()


def get_current_stream(device_id=-1):
    """A device's current stream in this thread, as ``cupy.cuda.get_current_stream``.

    Parameters
    ----------
    device_id : int, optional
        The device; -1: the current device.

    Returns
    -------
    gpuhost.compat.cupy.stream.Stream
        Stream.null unless a ``with`` block or use() made another current.

    Examples
    --------
    >>> from gpuhost.compat import cupy as cuda
    >>> cuda.get_current_stream() == cuda.Stream.null
    True
    >>> s = cuda.Stream()
    >>> with s:
    ...     cuda.get_current_stream() == s
    True
    """
    if device_id == -1:
        device_id = get_device_id()
    return _tls.current.get(device_id, Stream.null)


def _check_device(device_id):
    """The stream's device id, or the current one for a stream of unknown device (-1);
    RuntimeError if it is not the current device, as CuPy says."""
    current = get_device_id()
    if device_id == -1:
        return current
    if device_id != current:
        raise RuntimeError("The device that the stream is created on (%d) does not match "
                           "with the current device (%d)" % (device_id, current))
    return device_id


def _resolve(stream):
    """What gpuhost's stream= arguments take for `stream`: a Stream of this module's own
    making is its gpuhost Stream; one from Stream.from_external() is itself (a
    __cuda_stream__ object), so that whatever keeps memory ordered on it (a pool's freed
    blocks) keeps the foreign stream alive; anything else is passed on."""
    if isinstance(stream, _BaseStream) and getattr(stream, "_foreign_stream_ref", None) is None:
        return stream._gpuhost()
    return stream


class _BaseStream:
    """A CUDA stream: ``ptr`` (the raw handle, an int) and ``device_id`` (-1 for the
    default-stream singletons, which mean the current device's)."""

    def __init__(self, ptr, device_id, stream=None):
        self.ptr = ptr
        self.device_id = device_id
        self._stream = stream  # gpuhost Stream; None for the default streams until used

    def _gpuhost(self):
        """The gpuhost Stream this one wraps (for a default stream, the current
        context's)."""
        if self._stream is not None:
            return self._stream
        if self.ptr == 0:
            return _core.default_stream()
        if self.ptr in (_CU_STREAM_LEGACY, _CU_STREAM_PER_THREAD):
            return (_core.legacy_default_stream() if self.ptr == _CU_STREAM_LEGACY
                    else _core.per_thread_default_stream())
        self._stream = _core.external_stream(self.ptr)  # made elsewhere (from_external)
        return self._stream

    def __eq__(self, other):
        if isinstance(other, _BaseStream):
            return self.ptr == other.ptr
        return False

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return self.ptr

    def __repr__(self):
        return "<%s %d (device %d)>" % (type(self).__name__, self.ptr, self.device_id)

    def __cuda_stream__(self):
        """The CUDA stream protocol: (0, ptr); every gpuhost stream= argument takes it."""
        return (0, self.ptr)

    def __enter__(self):
        _tls.push(self, _check_device(self.device_id))
        return self

    def __exit__(self, *exc_info):
        """Restore the stream current before the matching ``with`` (a stream made current
        by use() inside the block is forgotten, as in CuPy)."""
        _tls.pop()
        return False

    def use(self):
        """Make this stream current on its device until changed.

        Use ``with stream:`` to switch only for a block.

        Returns
        -------
        gpuhost.compat.cupy.stream.Stream
            This stream.

        Raises
        ------
        RuntimeError
            The stream belongs to another device than the current one.

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> s = cuda.Stream().use()
        >>> cuda.get_current_stream() == s
        True
        >>> _ = cuda.Stream.null.use()
        """
        _tls.current[_check_device(self.device_id)] = self
        return self

    def is_capturing(self):
        """Whether the stream is capturing work into a CUDA graph (cuStreamIsCapturing).

        Returns
        -------
        bool

        Raises
        ------
        CUDARuntimeError
            The driver refused the query.

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> s = cuda.Stream()
        >>> s.begin_capture()
        >>> s.is_capturing()
        True
        >>> g = s.end_capture()
        >>> s.is_capturing()
        False
        """
        return _runtime.streamIsCapturing(self._gpuhost())

    @property
    def done(self):
        """Whether all work queued on the stream has finished (cuStreamQuery); no wait.

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> s = cuda.Stream()
        >>> s.synchronize()
        >>> s.done
        True
        """
        return self._gpuhost().query()

    def synchronize(self):
        """Wait until all work queued on the stream has finished (GIL released).

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> s = cuda.Stream()
        >>> d = gpuhost.to_device(np.arange(4), stream=s)
        >>> s.synchronize()
        """
        self._gpuhost().synchronize()

    def add_callback(self, callback, arg):
        """Call a function on a driver thread once the work queued so far is done.

        Parameters
        ----------
        callback : callable
            Called as ``callback(stream, status, arg)``: `stream` is this object,
            `status` an int (0: success). It must not call CUDA.
        arg : object
            Passed to `callback`.

        Raises
        ------
        TypeError
            `callback` is not callable.

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> seen = []
        >>> s = cuda.Stream()
        >>> s.add_callback(lambda stream, status, arg: seen.append((status, arg)), "done")
        >>> s.synchronize()
        >>> seen
        [(0, 'done')]
        """
        if not callable(callback):
            raise TypeError("callback must be callable, not %s" % type(callback).__name__)

        def call(_stream, status, _arg):
            callback(self, status, arg)

        self._gpuhost().add_callback(call, None)

    def launch_host_func(self, callback, arg):
        """Call ``callback(arg)`` on a driver thread once the work queued so far is done.

        cuLaunchHostFunc: while the stream captures, the call is captured into the graph.

        Parameters
        ----------
        callback : callable
            Called as ``callback(arg)``; it must not call CUDA.
        arg : object
            Passed to `callback`.

        Raises
        ------
        TypeError
            `callback` is not callable.

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> seen = []
        >>> s = cuda.Stream()
        >>> s.launch_host_func(seen.append, 42)
        >>> s.synchronize()
        >>> seen
        [42]
        """
        if not callable(callback):
            raise TypeError("callback must be callable, not %s" % type(callback).__name__)
        self._gpuhost().launch_host_func(callback, arg)

    def begin_capture(self, mode=None):
        """Begin capturing this stream's work into a CUDA graph (cuStreamBeginCapture).

        The work queued on the stream until `end_capture` is recorded, not run.

        Parameters
        ----------
        mode : int, optional
            A cudaStreamCaptureMode: 0 global, 1 thread-local, 2 relaxed (the default,
            as CuPy's).

        Raises
        ------
        RuntimeError
            On the default (legacy) stream.
        StreamCaptureError
            The stream is capturing already.

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> s = cuda.Stream()
        >>> s.begin_capture()
        >>> g = s.end_capture()
        >>> cuda.Stream.null.begin_capture()
        Traceback (most recent call last):
        ...
        RuntimeError: cannot capture on the default (legacy) stream
        """
        if self.ptr in (0, _CU_STREAM_LEGACY):
            raise RuntimeError("cannot capture on the default (legacy) stream")
        if mode is None:
            mode = 2  # runtime.streamCaptureModeRelaxed
        self._gpuhost().begin_capture(mode)

    def end_capture(self):
        """End the capture begun by `begin_capture` (cuStreamEndCapture).

        Returns
        -------
        gpuhost.compat.cupy.graph.Graph
            The captured work, instantiated and ready to launch.

        Raises
        ------
        StreamCaptureError
            The stream was not capturing, or the capture was invalidated.

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> s = cuda.Stream()
        >>> d = gpuhost.device_array(8, np.uint8)
        >>> s.begin_capture()
        >>> cuda.runtime.memsetAsync(d.device_ctypes_pointer.value, 3, 8, s.ptr)
        >>> graph = s.end_capture()
        >>> graph.launch(s)
        >>> s.synchronize()
        >>> int(d.copy_to_host()[0])
        3
        """
        from .graph import Graph

        return Graph._from_gpuhost(self._gpuhost().end_capture())

    def record(self, event=None):
        """Record an event on this stream.

        Parameters
        ----------
        event : gpuhost.compat.cupy.stream.Event, optional
            The event; None: a new `Event`.

        Returns
        -------
        gpuhost.compat.cupy.stream.Event
            The event recorded.

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> s = cuda.Stream()
        >>> start = s.record()
        >>> end = s.record()
        >>> end.synchronize()
        >>> cuda.get_elapsed_time(start, end) >= 0
        True
        """
        if event is None:
            event = Event()
        event.record(self)
        return event

    def wait_event(self, event):
        """Make later work on this stream wait until an event has completed.

        The host does not wait.

        Parameters
        ----------
        event : gpuhost.compat.cupy.stream.Event or gpuhost.Event
            A `gpuhost.compat.cupy.Event` or a gpuhost Event.

        Raises
        ------
        TypeError
            `event` is not an event.

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> producer, consumer = cuda.Stream(), cuda.Stream()
        >>> ready = producer.record()
        >>> consumer.wait_event(ready)
        >>> consumer.synchronize()
        """
        self._gpuhost().wait_event(_event_of(event))

    @property
    def is_non_blocking(self):
        """Whether the stream does not synchronize with the null stream.

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> cuda.Stream(non_blocking=True).is_non_blocking
        True
        """
        return self._gpuhost().non_blocking

    @property
    def priority(self):
        """The stream's priority (lower numbers run first).

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> cuda.Stream().priority
        0
        """
        return self._gpuhost().priority


class Stream(_BaseStream):
    """A CUDA stream, as ``cupy.cuda.Stream``.

    A new stream on the current device, destroyed with the object. ``with stream:``
    makes it the current stream for the block (what `Event.record` and the memory
    module's allocations and copies use); `use` makes it current until changed. It has
    ``ptr`` (the CUstream, an int) and ``device_id``; every gpuhost ``stream=``
    argument takes it (``__cuda_stream__``).

    Parameters
    ----------
    null : bool, optional
        The null (legacy default) stream, as the ``Stream.null`` singleton.
    non_blocking : bool, optional
        The stream does not synchronize with the null stream.
    ptds : bool, optional
        The per-thread default stream, as ``Stream.ptds``.
    priority : int, optional
        Lower numbers run first; None: the default (0).

    Raises
    ------
    ValueError
        `priority` is outside the device's range.

    Examples
    --------
    >>> from gpuhost.compat import cupy as cuda
    >>> s = cuda.Stream(non_blocking=True)
    >>> with s:
    ...     d = gpuhost.to_device(np.arange(4), stream=cuda.get_current_stream())
    >>> s.synchronize()
    >>> d.copy_to_host()
    array([0, 1, 2, 3])
    >>> cuda.Stream.null.ptr
    0
    """

    null = None  # set below
    ptds = None

    def __init__(self, null=False, non_blocking=False, ptds=False, priority=None):
        if null:
            super().__init__(0, -1)
        elif ptds:
            super().__init__(_CU_STREAM_PER_THREAD, -1)
        else:
            s = _core.stream(non_blocking=bool(non_blocking),
                             priority=0 if priority is None else priority)
            super().__init__(s.handle, s.device.id, s)
        self._foreign_stream_ref = None

    @classmethod
    def from_external(cls, obj):
        """A Stream over another library's stream, which it keeps alive.

        Its ``device_id`` is -1 (unknown: it is used on the current device).

        Parameters
        ----------
        obj : object
            Anything with ``__cuda_stream__()``, the CUDA stream protocol (a gpuhost
            Stream, a PyTorch or CuPy stream, ...).

        Returns
        -------
        gpuhost.compat.cupy.stream.Stream

        Raises
        ------
        TypeError
            `obj` does not implement the protocol, or answers something else than
            ``(0, int)``.

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> theirs = gpuhost.stream()
        >>> s = cuda.Stream.from_external(theirs)
        >>> s.ptr == theirs.handle, s.device_id
        (True, -1)
        """
        try:
            version, ptr = obj.__cuda_stream__()
        except AttributeError as e:
            raise TypeError("Object of type %s does not implement the CUDA stream protocol "
                            "(__cuda_stream__ method)" % type(obj).__name__) from e
        except (TypeError, ValueError) as e:
            raise TypeError("__cuda_stream__() must return a 2-tuple of (version, "
                            "stream_ptr)") from e
        if not isinstance(version, int) or not isinstance(ptr, int):
            raise TypeError("__cuda_stream__() must return (int, int), got (%s, %s)"
                            % (type(version).__name__, type(ptr).__name__))
        if version != 0:
            raise TypeError("__cuda_stream__() returned unsupported version %d, only version "
                            "0 is supported" % version)
        stream = cls.__new__(cls)
        _BaseStream.__init__(stream, ptr, -1)
        stream._foreign_stream_ref = obj
        return stream


class ExternalStream(_BaseStream):
    """A stream made elsewhere, by its address, as ``cupy.cuda.ExternalStream``.

    Deprecated in CuPy 14 (it warns DeprecationWarning): use `Stream.from_external`,
    which keeps the foreign stream alive. Here the owner must.

    Parameters
    ----------
    ptr : int
        The CUstream.
    device_id : int, optional
        Its device; -1: unknown, used as the current device's.

    Examples
    --------
    >>> import warnings
    >>> from gpuhost.compat import cupy as cuda
    >>> theirs = gpuhost.stream()
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", DeprecationWarning)
    ...     s = cuda.ExternalStream(theirs.handle, 0)
    >>> s.synchronize()
    """

    def __init__(self, ptr, device_id=-1):
        warnings.warn("ExternalStream is deprecated. Use Stream.from_external() instead to "
                      "interoperate with external streams that implement the CUDA stream "
                      "protocol.", DeprecationWarning, stacklevel=2)
        if device_id == -1:
            s = _core.external_stream(ptr)
        else:
            with _core.get_device(device_id):
                s = _core.external_stream(ptr)
        super().__init__(ptr, device_id, s)


Stream.null = Stream(null=True)
Stream.ptds = Stream(ptds=True)


def _event_of(event):
    """The gpuhost Event inside `event`."""
    if isinstance(event, Event):
        return event._event
    if isinstance(event, _core.Event):
        return event
    raise TypeError("event must be a cupy-style Event, not %s" % type(event).__name__)


class Event:
    """A CUDA event on the current device, as ``cupy.cuda.Event``.

    It has ``ptr``, the CUevent as an int. Time two with `get_elapsed_time`.

    Parameters
    ----------
    block : bool, optional
        synchronize() yields the CPU instead of spinning.
    disable_timing : bool, optional
        The event records no time (cheaper to record and wait for).
    interprocess : bool, optional
        It can be shared with other processes; needs ``disable_timing=True``.

    Raises
    ------
    ValueError
        `interprocess` without `disable_timing`.

    Examples
    --------
    >>> from gpuhost.compat import cupy as cuda
    >>> e = cuda.Event()
    >>> e.record()
    >>> e.synchronize()
    >>> e.done
    True
    """

    __slots__ = {
        "_event": "The gpuhost Event this one wraps.",
        "ptr": """The event's handle, the CUevent as an int.

        For handing the event to other CUDA libraries (through ctypes, say); the same
        as the wrapped gpuhost Event's ``handle``, valid while the Event lives.

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> e = cuda.Event()
        >>> isinstance(e.ptr, int), e.ptr != 0, e.ptr != cuda.Event().ptr
        (True, True, True)
        >>> e
        <Event ... (device 0)>
        """,
        "__weakref__": None,
    }

    def __init__(self, block=False, disable_timing=False, interprocess=False):
        if interprocess and not disable_timing:
            raise ValueError("Timing must be disabled for interprocess events")
        self._event = _core.event(not disable_timing, blocking_sync=bool(block),
                                  interprocess=bool(interprocess))
        self.ptr = self._event.handle

    def __repr__(self):
        return "<Event %d (device %d)>" % (self.ptr, self._event.device.id)

    @property
    def done(self):
        """Whether the work before the last record() has finished; no wait.

        True also for an event never recorded.

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> cuda.Event().done
        True
        """
        return self._event.query()

    def record(self, stream=None):
        """Record the event on a stream: it completes when the work queued before it has.

        Parameters
        ----------
        stream : gpuhost.compat.cupy.stream.Stream, optional
            None: the current stream.

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> s = cuda.Stream()
        >>> e = cuda.Event(disable_timing=True)
        >>> e.record(s)
        >>> e.synchronize()
        """
        if stream is None:
            stream = get_current_stream()
        self._event.record(_resolve(stream))

    def synchronize(self):
        """Wait until the event has completed (GIL released).

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> e = cuda.get_current_stream().record()
        >>> e.synchronize()
        >>> e.done
        True
        """
        self._event.synchronize()


def get_elapsed_time(start_event, end_event):
    """The time between two recorded events, as ``cupy.cuda.get_elapsed_time``.

    Parameters
    ----------
    start_event, end_event : gpuhost.compat.cupy.stream.Event or gpuhost.Event
        Recorded timing events (of this module, or gpuhost's).

    Returns
    -------
    float
        Milliseconds from `start_event` to `end_event`.

    Raises
    ------
    CudaDriverError
        Either was made with disable_timing=True or never recorded.
    CudaAPIError
        CUDA_ERROR_NOT_READY: one has not completed.

    Examples
    --------
    >>> from gpuhost.compat import cupy as cuda
    >>> s = cuda.Stream()
    >>> start = s.record()
    >>> d = gpuhost.to_device(np.zeros(1000), stream=s)
    >>> end = s.record()
    >>> end.synchronize()
    >>> cuda.get_elapsed_time(start, end) >= 0.0
    True
    """
    return _event_of(start_event).elapsed_time(_event_of(end_event))
