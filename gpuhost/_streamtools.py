"""The methods of Stream written in Python (async_done, auto_synchronize), and the
profiler's context manager.  asyncio loads only when async_done is first used."""
import contextlib

from . import _core, _methods

__all__ = ["auto_synchronize", "async_done", "profiling"]


@_methods.method(_core.Stream)
@contextlib.contextmanager
def auto_synchronize(self):
    """A context manager that yields the stream and synchronizes it on exit.

    Examples
    --------
    >>> with gpuhost.stream().auto_synchronize() as s:
    ...     h = gpuhost.to_device(np.arange(3), stream=s).copy_to_host(stream=s)
    >>> h
    array([0, 1, 2])
    """
    try:
        yield self
    finally:
        self.synchronize()


@_methods.method(_core.Stream)
def async_done(self):
    """An asyncio future resolved once the work queued so far has finished.

    The future belongs to the running event loop and is resolved on the loop's thread;
    awaiting it does not block the loop.

    Examples
    --------
    >>> async def copy_back(d, s):
    ...     h = d.copy_to_host(stream=s)
    ...     await s.async_done()
    ...     return h
    >>> import asyncio
    >>> s = gpuhost.stream()
    >>> asyncio.run(copy_back(gpuhost.to_device(np.arange(3)), s))
    array([0, 1, 2])
    """
    # The driver's thread runs the callback; it only hands the result to the loop's thread
    # (call_soon_threadsafe), where the future is resolved.
    import asyncio

    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def resolve(status):
        if future.done():  # cancelled meanwhile
            return
        if status == 0:
            future.set_result(self)
        else:
            future.set_exception(_core_error(status))

    def callback(_stream, status, _arg):
        if not loop.is_closed():
            loop.call_soon_threadsafe(resolve, status)

    self.add_callback(callback)
    return future


def _core_error(status):
    from .errors import CudaAPIError

    return CudaAPIError(status, "CUDA_ERROR_%d" % status, "the stream failed", "cuStreamAddCallback")


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
