"""The parts of Stream and Event written in Python (the C types call in here), and the
profiler's context manager.  Kept out of gpuhost's import: asyncio and contextlib load
only when first used."""
import contextlib
import weakref

from . import _core
from .errors import CudaAPIError

__all__ = ["auto_synchronize", "async_done", "IpcEventHandle", "profiling"]


@contextlib.contextmanager
def auto_synchronize(stream):
    """Yield `stream`; synchronize it when the block ends (also when it raises)."""
    try:
        yield stream
    finally:
        stream.synchronize()


def async_done(stream):
    """An asyncio future of the running loop, resolved once `stream`'s queued work is done.

    The driver's thread runs the callback; it only hands the result to the loop's thread
    (call_soon_threadsafe), where the future is resolved."""
    import asyncio

    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def resolve(status):
        if future.done():  # cancelled meanwhile
            return
        if status == 0:
            future.set_result(stream)
        else:
            future.set_exception(_core_error(status))

    def callback(_stream, status, _arg):
        if not loop.is_closed():
            loop.call_soon_threadsafe(resolve, status)

    stream.add_callback(callback)
    return future


def _core_error(status):
    from .errors import CudaAPIError

    return CudaAPIError(status, "CUDA_ERROR_%d" % status, "the stream failed", "cuStreamAddCallback")


class IpcEventHandle:
    """A picklable handle to an interprocess event, for another process.

    Made by `Event.ipc_handle` for an event made with ``event(interprocess=True)``: send
    it to another process (through multiprocessing, say) and call `open` there to get an
    Event for the same event, to wait on work the first process queued.

    Examples
    --------
    >>> e = gpuhost.event(timing=False, interprocess=True)
    >>> h = e.ipc_handle()
    >>> e.record()
    >>> other = h.open()                 # in the other process, after unpickling
    >>> other.synchronize()
    """

    __slots__ = {
        "handle": "The driver's IPC event handle, bytes.",
        "device_uuid": "The UUID of the device the event belongs to.",
    }

    def __init__(self, handle, device_uuid):
        self.handle = bytes(handle)
        self.device_uuid = device_uuid

    def __reduce__(self):
        return (IpcEventHandle, (self.handle, self.device_uuid))

    def open(self):
        """The Event, opened in the context of the device it was made on (found by UUID).

        In the process that exported it (where the driver refuses to open it) this is the
        exported Event itself, while it lives. Raises `InvalidDeviceError` if the device
        is not visible in this process.
        """
        for i in range(_core.device_count()):
            dev = _core.get_device(i)
            if dev.uuid == self.device_uuid:
                with dev:
                    try:
                        return _core.open_ipc_event(self.handle)
                    except CudaAPIError as exc:
                        event = _exported_events.get(self.handle)
                        if exc.name != "CUDA_ERROR_INVALID_CONTEXT" or event is None:
                            raise
                        return event  # exported by this very process
        raise _invalid_device(self.device_uuid)

    def __repr__(self):
        return "<IpcEventHandle of an event on %s>" % self.device_uuid


# The driver will not open an IPC handle in the process that exported it
# (CUDA_ERROR_INVALID_CONTEXT), yet a handle often reaches a worker that turns out to be
# this process (a test, a pool with one worker): exported events are remembered, weakly.
_exported_events = weakref.WeakValueDictionary()  # handle bytes -> the Event


def _export_event(event, handle, device_uuid):
    """Event.ipc_handle()'s result (called from C): remember the event, make the handle."""
    handle = bytes(handle)
    _exported_events[handle] = event
    return IpcEventHandle(handle, device_uuid)


def _invalid_device(uuid):
    from .errors import InvalidDeviceError

    return InvalidDeviceError("the event's device %s is not visible in this process" % uuid)


@contextlib.contextmanager
def profiling():
    """Collect profiling data for the duration of a ``with`` block.

    `profile_start` (``cuProfilerStart``) on entry, `profile_stop` on exit: with Nsight
    Systems' ``--capture-range=cudaProfilerApi`` only the block is recorded.

    Examples
    --------
    >>> with gpuhost.profiling():
    ...     d = gpuhost.to_device(np.arange(10))
    """
    _core.profile_start()
    try:
        yield
    finally:
        _core.profile_stop()
