"""cupy.cuda.runtime's streams and events as raw handles over gpuhost's Streams and Events;
re-exported by gpuhost.compat.cupy.runtime.
"""
from ... import _core
from ._runtime_codes import *  # noqa: F401,F403  (the status codes and enums)
from ._runtime_codes import CUDARuntimeError, _translated


# ---- streams and events ----

_streams = {}  # handle -> gpuhost Stream, until streamDestroy
_events = {}


def _stream_arg(stream):
    """What gpuhost's stream= arguments take for a raw handle (or a stream object)."""
    if isinstance(stream, int):
        if stream in _streams:
            return _streams[stream]
        if stream == 0:
            return _core.legacy_default_stream()
        if stream == streamPerThread:
            return _core.per_thread_default_stream()
        return _core.external_stream(stream)
    return stream


@_translated
def streamCreate():
    """Create a stream on the current device (cudaStreamCreate).

    The stream synchronizes with the legacy default stream and lives until streamDestroy().

    Returns
    -------
    int
        The CUstream handle.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> s = runtime.streamCreate()
    >>> runtime.streamQuery(s)
    0
    >>> runtime.streamDestroy(s)
    """
    return streamCreateWithFlags(streamDefault)


@_translated
def streamCreateWithFlags(flags, priority=0):
    """Create a stream with flags and a priority (cudaStreamCreateWithFlags).

    Also this module's ``streamCreateWithPriority``.

    Parameters
    ----------
    flags : int
        streamDefault (0) or streamNonBlocking (1: no synchronizing with the legacy default
        stream).
    priority : int, optional
        Lower numbers are higher priorities; 0 is the default.

    Returns
    -------
    int
        The CUstream handle; streamDestroy() destroys it.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> s = runtime.streamCreateWithFlags(runtime.streamNonBlocking)
    >>> runtime.streamSynchronize(s)
    >>> runtime.streamDestroy(s)
    """
    s = _core.stream(non_blocking=bool(flags & streamNonBlocking), priority=priority)
    _streams[s.handle] = s
    return s.handle


streamCreateWithPriority = streamCreateWithFlags


@_translated
def streamDestroy(stream):
    """Destroy a stream that streamCreate() or streamCreateWithFlags() made (cudaStreamDestroy).

    Work already queued on it still runs.

    Parameters
    ----------
    stream : int
        The handle.

    Raises
    ------
    gpuhost.compat.cupy.runtime.CUDARuntimeError
        cudaErrorInvalidResourceHandle (400) for a handle this module did not make, or one
        destroyed already.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> s = runtime.streamCreate()
    >>> runtime.streamDestroy(s)
    >>> try:
    ...     runtime.streamDestroy(s)
    ... except runtime.CUDARuntimeError as e:
    ...     print(e.status)
    400
    """
    if _streams.pop(stream, None) is None:
        raise CUDARuntimeError(errorInvalidResourceHandle)


@_translated
def streamSynchronize(stream):
    """Wait for the work queued on a stream (cudaStreamSynchronize).

    Parameters
    ----------
    stream : int
        A stream handle: one this module made, 0 (the legacy default stream),
        streamPerThread, or any other CUstream.

    Raises
    ------
    gpuhost.compat.cupy.runtime.CUDARuntimeError
        If queued work failed.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> runtime.streamSynchronize(0)
    >>> runtime.streamSynchronize(runtime.streamPerThread)
    """
    _stream_arg(stream).synchronize()


@_translated
def streamQuery(stream):
    """Whether a stream is idle, without waiting (cudaStreamQuery).

    Parameters
    ----------
    stream : int
        A stream handle.

    Returns
    -------
    int
        0 (cudaSuccess) if all its work has finished, else errorNotReady (600).

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> s = runtime.streamCreate()
    >>> runtime.streamQuery(s)
    0
    """
    return 0 if _stream_arg(stream).query() else errorNotReady


@_translated
def streamWaitEvent(stream, event, flags=0):
    """Make later work on a stream wait for an event (cudaStreamWaitEvent).

    Parameters
    ----------
    stream : int
        A stream handle.
    event : int
        An event handle from eventCreate().
    flags : int, optional
        0 (CuPy's signature; no other value is meaningful).

    Raises
    ------
    gpuhost.compat.cupy.runtime.CUDARuntimeError
        cudaErrorInvalidResourceHandle for an event this module did not make.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> s1, s2 = runtime.streamCreate(), runtime.streamCreate()
    >>> e = runtime.eventCreate()
    >>> runtime.eventRecord(e, s1)
    >>> runtime.streamWaitEvent(s2, e)  # s2's later work runs after s1's so far
    >>> runtime.streamSynchronize(s2)
    """
    _stream_arg(stream).wait_event(_event_arg(event))


@_translated
def streamIsCapturing(stream):
    """Whether a stream is capturing work into a CUDA graph (cudaStreamIsCapturing).

    Parameters
    ----------
    stream : int
        A stream handle.

    Returns
    -------
    bool

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> runtime.streamIsCapturing(runtime.streamCreate())
    False
    """
    return _stream_arg(stream).is_capturing()


def _event_arg(event):
    e = _events.get(event)
    if e is None:
        raise CUDARuntimeError(errorInvalidResourceHandle)
    return e


@_translated
def eventCreate():
    """Create a timing event on the current device (cudaEventCreate).

    Returns
    -------
    int
        The CUevent handle; eventDestroy() destroys it.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> e = runtime.eventCreate()
    >>> runtime.eventQuery(e)
    0
    >>> runtime.eventDestroy(e)
    """
    return eventCreateWithFlags(eventDefault)


@_translated
def eventCreateWithFlags(flags):
    """Create an event with flags (cudaEventCreateWithFlags).

    Parameters
    ----------
    flags : int
        eventDefault (0), or an or of eventBlockingSync (waiting sleeps instead of
        spinning), eventDisableTiming (no timestamps: cheaper) and eventInterprocess (shareable
        with other processes; needs eventDisableTiming).

    Returns
    -------
    int
        The CUevent handle.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> e = runtime.eventCreateWithFlags(runtime.eventDisableTiming)
    >>> runtime.eventRecord(e, 0)
    >>> runtime.eventSynchronize(e)
    >>> runtime.eventDestroy(e)
    """
    e = _core.event(not flags & eventDisableTiming, blocking_sync=bool(flags & eventBlockingSync),
                    interprocess=bool(flags & eventInterprocess))
    _events[e.handle] = e
    return e.handle


@_translated
def eventDestroy(event):
    """Destroy an event that eventCreate() or eventCreateWithFlags() made (cudaEventDestroy).

    Parameters
    ----------
    event : int
        The handle.

    Raises
    ------
    gpuhost.compat.cupy.runtime.CUDARuntimeError
        cudaErrorInvalidResourceHandle (400) for a handle this module did not make, or one
        destroyed already.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> runtime.eventDestroy(runtime.eventCreate())
    """
    if _events.pop(event, None) is None:
        raise CUDARuntimeError(errorInvalidResourceHandle)


@_translated
def eventRecord(event, stream):
    """Record an event on a stream (cudaEventRecord).

    The event completes when the work queued on the stream before it has finished.

    Parameters
    ----------
    event : int
        An event handle from eventCreate().
    stream : int
        A stream handle (0: the legacy default stream).

    Raises
    ------
    gpuhost.compat.cupy.runtime.CUDARuntimeError
        cudaErrorInvalidResourceHandle for an event this module did not make.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> e = runtime.eventCreate()
    >>> runtime.eventRecord(e, 0)
    >>> runtime.eventSynchronize(e)
    """
    _event_arg(event).record(_stream_arg(stream))


@_translated
def eventSynchronize(event):
    """Wait until an event has completed (cudaEventSynchronize).

    Parameters
    ----------
    event : int
        An event handle from eventCreate().

    Raises
    ------
    gpuhost.compat.cupy.runtime.CUDARuntimeError
        cudaErrorInvalidResourceHandle for an event this module did not make, or the error
        of the work it waited for.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> e = runtime.eventCreate()
    >>> runtime.eventRecord(e, 0)
    >>> runtime.eventSynchronize(e)
    >>> runtime.eventQuery(e)
    0
    """
    _event_arg(event).synchronize()


@_translated
def eventQuery(event):
    """Whether an event has completed, without waiting (cudaEventQuery).

    Parameters
    ----------
    event : int
        An event handle from eventCreate().

    Returns
    -------
    int
        0 (cudaSuccess) if it has completed (or was never recorded), else errorNotReady
        (600).

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> runtime.eventQuery(runtime.eventCreate())
    0
    """
    return 0 if _event_arg(event).query() else errorNotReady


@_translated
def eventElapsedTime(start, end):
    """The time between two recorded timing events (cudaEventElapsedTime).

    Parameters
    ----------
    start, end : int
        Event handles from eventCreate(), both recorded and completed.

    Returns
    -------
    float
        Milliseconds from `start` to `end`.

    Raises
    ------
    gpuhost.compat.cupy.runtime.CUDARuntimeError
        errorNotReady (600) when one has not completed; cudaErrorInvalidResourceHandle for
        an event this module did not make.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> start, end = runtime.eventCreate(), runtime.eventCreate()
    >>> runtime.eventRecord(start, 0)
    >>> runtime.eventRecord(end, 0)
    >>> runtime.eventSynchronize(end)
    >>> runtime.eventElapsedTime(start, end) >= 0
    True
    """
    return _event_arg(start).elapsed_time(_event_arg(end))
