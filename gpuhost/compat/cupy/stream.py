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
    """The current stream of device `device_id` (-1: the current device) in this thread:
    Stream.null unless a ``with`` block or use() made another current."""
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
        """Make this stream current on its device until changed (use ``with`` to switch
        temporarily); returns it. RuntimeError if another device is current."""
        _tls.current[_check_device(self.device_id)] = self
        return self

    def is_capturing(self):
        """True while the stream captures work into a CUDA graph (cuStreamIsCapturing);
        CUDARuntimeError where the driver refuses the query."""
        return _runtime.streamIsCapturing(self._gpuhost())

    @property
    def done(self):
        """True if all work queued on the stream has finished."""
        return self._gpuhost().query()

    def synchronize(self):
        """Wait until all work queued on the stream has finished (GIL released)."""
        self._gpuhost().synchronize()

    def add_callback(self, callback, arg):
        """Call ``callback(stream, status, arg)`` on a driver thread once the work queued
        so far is done; `stream` is this object, `status` an int (0: success)."""
        if not callable(callback):
            raise TypeError("callback must be callable, not %s" % type(callback).__name__)

        def call(_stream, status, _arg):
            callback(self, status, arg)

        self._gpuhost().add_callback(call, None)

    def launch_host_func(self, callback, arg):
        """Call ``callback(arg)`` on a driver thread once the work queued so far is
        done (cuLaunchHostFunc; captured into the graph while the stream captures)."""
        if not callable(callback):
            raise TypeError("callback must be callable, not %s" % type(callback).__name__)
        self._gpuhost().launch_host_func(callback, arg)

    def begin_capture(self, mode=None):
        """Begin capturing this stream's work into a CUDA graph; `mode` is one of
        runtime.streamCaptureMode* (default: relaxed, as CuPy). RuntimeError on the
        default (legacy) stream."""
        if self.ptr in (0, _CU_STREAM_LEGACY):
            raise RuntimeError("cannot capture on the default (legacy) stream")
        if mode is None:
            mode = 2  # runtime.streamCaptureModeRelaxed
        self._gpuhost().begin_capture(mode)

    def end_capture(self):
        """End the capture; returns the captured work as a :class:`graph.Graph`."""
        from .graph import Graph

        return Graph._from_gpuhost(self._gpuhost().end_capture())

    def record(self, event=None):
        """Record `event` (a new Event if None) on this stream; returns the event."""
        if event is None:
            event = Event()
        event.record(self)
        return event

    def wait_event(self, event):
        """Make later work on this stream wait until `event` has completed."""
        self._gpuhost().wait_event(_event_of(event))

    @property
    def is_non_blocking(self):
        """True if the stream does not synchronize with the null stream."""
        return self._gpuhost().non_blocking

    @property
    def priority(self):
        """The stream's priority (lower numbers run first)."""
        return self._gpuhost().priority


class Stream(_BaseStream):
    """A CUDA stream, as ``cupy.cuda.Stream``: a new stream on the current device,
    destroyed with the object; ``null=True``: the null (legacy default) stream, as the
    ``Stream.null`` singleton; ``ptds=True``: the per-thread default stream
    (``Stream.ptds``). `non_blocking`: does not synchronize with the null stream.
    `priority`: lower numbers run first (ValueError outside the device's range)."""

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
        """A Stream over another library's stream `obj` (anything with
        ``__cuda_stream__()``, the CUDA stream protocol), which it keeps alive; its
        ``device_id`` is -1 (unknown: used on the current device). TypeError if `obj`
        does not implement the protocol or answers something else than (0, int)."""
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
    """A stream made elsewhere, by its address `ptr` (the owner must keep it alive), on
    device `device_id` (-1: unknown, used as the current device's). Deprecated in CuPy 14
    (DeprecationWarning): use Stream.from_external()."""

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
    """A CUDA event, as ``cupy.cuda.Event``: it records time unless `disable_timing`;
    `block`: synchronize() yields the CPU instead of spinning; `interprocess`: it can be
    shared with other processes, and needs ``disable_timing=True`` (else ValueError)."""

    __slots__ = ("_event", "ptr", "__weakref__")

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
        """True if the work before the last record() has finished (or it was never
        recorded)."""
        return self._event.query()

    def record(self, stream=None):
        """Record the event on `stream` (None: the current stream)."""
        if stream is None:
            stream = get_current_stream()
        self._event.record(_resolve(stream))

    def synchronize(self):
        """Wait until the event has completed (GIL released)."""
        self._event.synchronize()


def get_elapsed_time(start_event, end_event):
    """Milliseconds (a float) from `start_event` to `end_event`. gpuhost's
    CudaDriverError if either was made with disable_timing=True or never recorded;
    CudaAPIError (CUDA_ERROR_NOT_READY) if one has not completed."""
    return _event_of(start_event).elapsed_time(_event_of(end_event))
