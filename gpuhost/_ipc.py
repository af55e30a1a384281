"""Interprocess handles: device arrays and events shared with other processes.

`IpcArrayHandle` (``DeviceArray.get_ipc_handle()``) and `IpcEventHandle`
(``Event.ipc_handle()``) are picklable; the other process opens them. numba's IpcHandle of
memory pointers (Context.get_ipc_handle) is gpuhost.memory_manager's.
"""
import weakref

import numpy as np

from . import _core, _methods
from ._arrays import _layout
from .errors import CudaAPIError, CudaDriverError

__all__ = ["IpcArrayHandle", "IpcEventHandle", "open_ipc_array"]


# ---- device arrays ----

class IpcArrayHandle:
    """A picklable handle to a device array's memory, for another process.

    Made by ``DeviceArray.get_ipc_handle()``; pickle it to another process (a
    multiprocessing queue, say) and open it there with ``with handle as arr:`` (closed at
    the end of the block) or ``arr = handle.open()`` (closed by ``handle.close()``). The
    exporting process must keep its array alive while the other one uses it.

    Examples
    --------
    >>> d = gpuhost.to_device(np.arange(4.0))
    >>> h = d.get_ipc_handle()
    >>> h.shape, h.dtype
    ((4,), dtype('float64'))
    >>> with h as view:              # in another process, after unpickling
    ...     view.copy_to_host()
    array([0., 1., 2., 3.])
    """

    # the attributes' docstrings (help() and the documentation read them here)
    __slots__ = {
        "handle": "The driver's IPC memory handle of the allocation, bytes.\n\n"
                  "The 64 bytes of a CUipcMemHandle; `open_ipc_array` takes them too.\n\n"
                  "Examples\n"
                  "--------\n"
                  ">>> h = gpuhost.device_array(4).get_ipc_handle()\n"
                  ">>> type(h.handle), len(h.handle)\n"
                  "(<class 'bytes'>, 64)",
        "offset": "Bytes from the start of the allocation to the array's first element.\n\n"
                  "Examples\n"
                  "--------\n"
                  ">>> d = gpuhost.device_array((2, 3), np.float32)\n"
                  ">>> d.get_ipc_handle().offset, d[1].get_ipc_handle().offset\n"
                  "(0, 12)",
        "size": "Bytes of the allocation the handle opens.\n\n"
                "At least the array's, up to its element at `offset`.\n\n"
                "Examples\n"
                "--------\n"
                ">>> d = gpuhost.device_array(100, np.float32)\n"
                ">>> d.get_ipc_handle().size >= d.nbytes\n"
                "True",
        "shape": "The array's shape, a tuple.\n\n"
                 "Examples\n"
                 "--------\n"
                 ">>> gpuhost.device_array((2, 3)).get_ipc_handle().shape\n"
                 "(2, 3)",
        "strides": "The array's strides in bytes, a tuple.\n\n"
                   "Examples\n"
                   "--------\n"
                   ">>> gpuhost.device_array((2, 3), np.float32).get_ipc_handle().strides\n"
                   "(12, 4)",
        "dtype": "The array's numpy dtype.\n\n"
                 "Examples\n"
                 "--------\n"
                 ">>> gpuhost.device_array(4, np.int16).get_ipc_handle().dtype\n"
                 "dtype('int16')",
        "device_uuid": "The UUID of the device the memory is on.\n\n"
                       "`open` finds the device by it, whatever its number in the other "
                       "process.\n\n"
                       "Examples\n"
                       "--------\n"
                       ">>> h = gpuhost.device_array(4).get_ipc_handle()\n"
                       ">>> h.device_uuid == gpuhost.gpus[0].uuid\n"
                       "True",
        "_opened": None,
    }

    def __init__(self, handle, offset, size, shape, strides, dtype, device_uuid):
        self.handle, self.offset, self.size = bytes(handle), offset, size
        self.shape, self.strides, self.dtype = tuple(shape), tuple(strides), np.dtype(dtype)
        self.device_uuid = device_uuid
        self._opened = None

    def __reduce__(self):
        return (IpcArrayHandle, (self.handle, self.offset, self.size, self.shape, self.strides,
                                 self.dtype, self.device_uuid))

    def open(self, device=None):
        """A DeviceArray over the exported memory.

        The memory stays where it is; writes from either process are seen by both. In the
        process that exported it (where the driver refuses to open it) this is a view of
        the exported array, which it keeps alive.

        Parameters
        ----------
        device : Device or int, optional
            Open it in this device's context; by default the device the memory is on
            (found by UUID). Another device reaches it through peer access.

        Returns
        -------
        DeviceArray

        Raises
        ------
        ValueError
            It is open already: `close` it first (as numba's).
        InvalidDeviceError
            The memory's device is not visible in this process.
        CudaDriverError
            `device` cannot access the memory's device (``Device.can_access_peer``).

        Examples
        --------
        >>> h = gpuhost.to_device(np.ones(2)).get_ipc_handle()
        >>> arr = h.open()
        >>> arr.copy_to_host()
        array([1., 1.])
        >>> h.close()
        """
        if self._opened is not None:
            raise ValueError("IpcHandle is already opened")
        home = _device_of_uuid(self.device_uuid, "array")
        target = home if device is None else _device_arg(device)
        if target != home and not target.can_access_peer(home):
            raise CudaDriverError("cannot open device %d's memory on device %d: device %d cannot "
                                  "access device %d's memory directly (can_access_peer is "
                                  "False); open it on device %d and copy"
                                  % (home.id, target.id, target.id, home.id, home.id))
        with target:
            alloc, array = _ipc_open(self.handle, self.size, self.offset, self.shape,
                                     self.strides, self.dtype)
            self._opened = alloc
            return array

    def close(self):
        """Close what `open` opened; arrays from it must not be used afterwards.

        Nothing happens when it is not open. ``with handle as arr:`` closes it at the
        end of the block.

        Examples
        --------
        >>> h = gpuhost.to_device(np.arange(3.0)).get_ipc_handle()
        >>> arr = h.open()                   # in another process, after unpickling
        >>> arr.copy_to_host()
        array([0., 1., 2.])
        >>> h.close()
        >>> arr = h.open()                   # it can be opened again
        >>> h.close()
        """
        if self._opened is not None:
            self._opened.close()
            self._opened = None

    def __enter__(self):
        return self.open()

    def __exit__(self, *exc_info):
        self.close()
        return False

    def __repr__(self):
        return "<IpcArrayHandle shape=%s dtype=%s on %s>" % (self.shape, self.dtype,
                                                             self.device_uuid)


class PluginIpcArrayHandle(IpcArrayHandle):
    """An `IpcArrayHandle` of an array whose context's memory is an External Memory
    Management plugin's: the handle is whatever the plugin's ``get_ipc_handle`` made of the
    array's memory (``_ipc_handle``, as numba keeps it), and `open` opens it through that
    handle's own ``open``, as numba's IpcArrayHandle does. tests/test_numba_modules.py
    shows one."""

    __slots__ = {"_ipc_handle": None}

    def __init__(self, ipc_handle, shape, strides, dtype, device_uuid):
        super().__init__(b"", 0, getattr(ipc_handle, "size", 0), shape, strides, dtype,
                         device_uuid)
        self._ipc_handle = ipc_handle

    def __reduce__(self):
        return (PluginIpcArrayHandle, (self._ipc_handle, self.shape, self.strides, self.dtype,
                                       self.device_uuid))

    def open(self, device=None):
        """A DeviceArray over the memory the plugin's handle opens (its ``open(context)``),
        in `device`'s context (by default the memory's device)."""
        if self._opened is not None:
            raise ValueError("IpcHandle is already opened")
        target = _device_of_uuid(self.device_uuid, "array") if device is None \
            else _device_arg(device)
        with target:
            ctx = _core.current_context()
            memory = self._ipc_handle.open(ctx)  # numba's MemoryPointer, from the plugin
            shape, dtype, strides, _ = _layout(self.shape, self.dtype, self.strides, "C")
            array = _core.make_array(memory, memory.device_ctypes_pointer.value or 0, shape,
                                     strides, dtype, None)
        self._opened = self._ipc_handle
        return array


def _plugin_handle(array):
    """A PluginIpcArrayHandle when `array`'s context allocates through an EMM plugin (its
    get_ipc_handle decides, as numba asks it), else None."""
    import sys

    mm = sys.modules.get(__package__ + ".memory_manager")
    plugin = mm.context_plugin(array.context) if mm is not None else None
    if plugin is None:
        return None
    ipch = array.context.get_ipc_handle(array.gpu_data)
    return PluginIpcArrayHandle(ipch, array.shape, array.strides, array.dtype,
                                array.device.uuid)


def _device_of_uuid(uuid, what):
    """gpuhost.devices.device_of_uuid (that module is imported on first use, not with
    gpuhost)."""
    from .devices import device_of_uuid

    return device_of_uuid(uuid, what)


def _device_arg(device):
    """A Device from a Device or a device id."""
    if isinstance(device, _core.Device):
        return device
    if isinstance(device, bool) or not isinstance(device, int):
        raise TypeError("device must be a Device or a device id (int), not %s"
                        % type(device).__name__)
    return _core.get_device(device)


# The driver will not open an IPC handle in the process that exported it
# (cuIpcOpenMemHandle: CUDA_ERROR_INVALID_CONTEXT), yet a handle often reaches a worker
# that turns out to be this process (a test, a pool with one worker).  Each exported handle
# remembers, weakly, the array it was made from; opened here, it gives a view of that.
_exported = weakref.WeakValueDictionary()  # handle bytes -> the exported DeviceArray


class _LocalOpening:
    """An IPC handle opened in the process that exported it: the view holds the exported
    array (and so its memory) itself, so closing has nothing to give back."""

    __slots__ = ()

    def close(self):
        pass


def _ipc_open(handle, size, offset, shape, strides, dtype):
    """(what to close, DeviceArray) for IPC handle bytes opened in the current context."""
    try:
        alloc = _core.ipc_open(handle, size)
    except CudaDriverError as exc:
        source = _exported.get(handle)
        if getattr(exc, "name", None) != "CUDA_ERROR_INVALID_CONTEXT" or source is None:
            raise
        base = source.ptr - _core.ipc_get_handle(source)[1]  # exported by this very process
        return _LocalOpening(), _core.make_array(source, base + offset, shape, strides,
                                                       dtype, base=source)
    return alloc, _core.make_array(alloc, alloc.ptr + offset, shape, strides, dtype)


@_methods.method(_core.DeviceArray)
def get_ipc_handle(self):
    """Export the array's memory to another process.

    Returns
    -------
    IpcArrayHandle
        A picklable handle; the other process opens it (`with handle as arr:` or
        `handle.open()`) and uses this array's memory without a copy. Where an External
        Memory Management plugin manages the array's context, its ``get_ipc_handle`` makes
        the handle, as numba asks it (a `PluginIpcArrayHandle`).

    Examples
    --------
    >>> d = gpuhost.device_array(1024, np.float32)
    >>> h = d.get_ipc_handle()  # doctest: +SKIP
    >>> queue.put(h)            # pickled to the other process  # doctest: +SKIP
    """
    plugin_handle = _plugin_handle(self)
    if plugin_handle is not None:
        return plugin_handle
    handle, offset, size = _core.ipc_get_handle(self)
    _exported[handle] = self
    return IpcArrayHandle(handle, offset, size, self.shape, self.strides, self.dtype,
                          self.device.uuid)


def open_ipc_array(handle, shape, dtype, strides=None, offset=0):
    """A context manager yielding a DeviceArray over another process's memory (numba's).

    The memory is opened in the current context and closed when the block ends.

    Parameters
    ----------
    handle : bytes or IpcArrayHandle
        The 64 bytes of a ``CUipcMemHandle``, or an `IpcArrayHandle`.
    shape : int or tuple of int
        The array's shape.
    dtype : numpy dtype
        The element type.
    strides : tuple of int, optional
        Strides in bytes; C-contiguous by default.
    offset : int, optional
        Bytes from the start of the allocation to the first element.

    Returns
    -------
    context manager
        Its ``__enter__`` gives the DeviceArray.

    Examples
    --------
    >>> src = gpuhost.to_device(np.arange(4, dtype=np.int32))
    >>> raw = src.get_ipc_handle().handle          # sent to another process
    >>> with gpuhost.open_ipc_array(raw, 4, np.int32) as d:
    ...     d.copy_to_host()
    array([0, 1, 2, 3], dtype=int32)
    """
    if isinstance(handle, IpcArrayHandle):
        handle = handle.handle
    shape, dtype, strides, nbytes = _layout(shape, dtype, strides, "C")
    return _IpcBlock(*_ipc_open(bytes(handle), offset + nbytes, offset, shape, strides, dtype))


class _IpcBlock:
    def __init__(self, alloc, array):
        self.alloc, self.array = alloc, array

    def __enter__(self):
        return self.array

    def __exit__(self, *exc_info):
        self.alloc.close()
        return False


# ---- events ----

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

    # the attributes' docstrings (help() and the documentation read them here)
    __slots__ = {
        "handle": "The driver's IPC event handle, bytes.\n\n"
                  "The 64 bytes of a CUipcEventHandle.\n\n"
                  "Examples\n"
                  "--------\n"
                  ">>> h = gpuhost.event(timing=False, interprocess=True).ipc_handle()\n"
                  ">>> type(h.handle), len(h.handle)\n"
                  "(<class 'bytes'>, 64)",
        "device_uuid": "The UUID of the device the event belongs to.\n\n"
                       "`open` finds the device by it, whatever its number in the other "
                       "process.\n\n"
                       "Examples\n"
                       "--------\n"
                       ">>> e = gpuhost.event(timing=False, interprocess=True)\n"
                       ">>> e.ipc_handle().device_uuid == gpuhost.gpus[0].uuid\n"
                       "True",
    }

    def __init__(self, handle, device_uuid):
        self.handle = bytes(handle)
        self.device_uuid = device_uuid

    def __reduce__(self):
        return (IpcEventHandle, (self.handle, self.device_uuid))

    def open(self):
        """The Event, opened in the context of the device it was made on (found by UUID).

        In the process that exported it (where the driver refuses to open it) this is the
        exported Event itself, while it lives.

        Returns
        -------
        Event
            For the same event: waiting on it waits for the work the other process
            recorded it after.

        Raises
        ------
        InvalidDeviceError
            The event's device is not visible in this process.

        Examples
        --------
        >>> import pickle
        >>> e = gpuhost.event(timing=False, interprocess=True)
        >>> data = pickle.dumps(e.ipc_handle())   # sent to another process
        >>> e.record()
        >>> other = pickle.loads(data).open()    # there
        >>> gpuhost.stream().wait_event(other)   # its stream waits for the recorded work
        """
        with _device_of_uuid(self.device_uuid, "event"):
            try:
                return _core.open_ipc_event(self.handle)
            except CudaAPIError as exc:
                event = _exported_events.get(self.handle)
                if exc.name != "CUDA_ERROR_INVALID_CONTEXT" or event is None:
                    raise
                return event  # exported by this very process

    def __repr__(self):
        return "<IpcEventHandle of an event on %s>" % self.device_uuid


# The driver will not open an IPC handle in the process that exported it
# (CUDA_ERROR_INVALID_CONTEXT), yet a handle often reaches a worker that turns out to be
# this process (a test, a pool with one worker): exported events are remembered, weakly.
_exported_events = weakref.WeakValueDictionary()  # handle bytes -> the Event


def _export_event(event, handle, device_uuid):
    """Event.ipc_handle()'s result (csrc/core/event.c calls it): remember the event, make the
    handle."""
    handle = bytes(handle)
    _exported_events[handle] = event
    return IpcEventHandle(handle, device_uuid)


# Event.ipc_handle() calls this (csrc/core/event.c): registered once.
_core._set_helpers(export_event=_export_event)
