"""numba's IPC handles for EMM plugins (IpcHandle, IpcMemHandle): the handle a plugin's
``get_ipc_handle`` returns and the opening of one in another process; re-exported by
gpuhost.memory_manager.
"""
import numpy as np

from ... import _arrays, _core
from ...devices import device_of_uuid
from ._emm_pointers import DevicePointer, MemoryPointer


# ---- IPC ----

class IpcMemHandle(bytes):
    """The 64 bytes of a CUipcMemHandle; `reserved` names them as cuda-python's binding
    (which numba hands out) does."""

    @property
    def reserved(self):
        return bytes(self)


class _StagedOpening:
    """What an IpcHandle opened by staging holds: nothing to close (the copy is owned by
    the MemoryPointer returned)."""

    def close(self):
        pass


class IpcHandle:
    """A CUDA IPC handle of device memory, to open in another process (numba's).

    What a plugin's ``get_ipc_handle`` returns (`GetIpcHandleMixin`'s, for one). Pickle
    it to another process and `open` it there; the exporting process keeps the memory
    alive meanwhile. A handle cannot be opened in the process that made it.

    Parameters
    ----------
    base : MemoryPointer or None
        The exported memory in the exporting process; None once unpickled.
    handle : bytes
        The 64 bytes of the driver's CUipcMemHandle, kept as an `IpcMemHandle`.
    size : int
        The memory's size in bytes.
    source_info : bytes, optional
        The exporting device's UUID: `open` opens directly on that device and copies
        (`open_staged`) on another one.
    offset : int, optional
        Bytes from the start of the allocation the handle opens to the memory.

    Examples
    --------
    >>> import pickle
    >>> ctx = gpuhost.current_context()
    >>> mgr = ctx.memory_manager
    >>> h = mgr.get_ipc_handle(mgr.memalloc(4096))
    >>> h.size, len(h.handle)
    (4096, 64)
    >>> data = pickle.dumps(h)                 # send it to another process
    >>> mem = pickle.loads(data).open()        # doctest: +SKIP
    """

    def __init__(self, base, handle, size, source_info=None, offset=0):
        self.base = base
        self.handle = IpcMemHandle(bytes(handle))
        self.size = size
        self.source_info = source_info
        self.offset = offset
        self._opened = None

    def _check_openable(self):
        if self.base is not None:
            raise ValueError("opening IpcHandle from original process")
        if self._opened is not None:
            raise ValueError("IpcHandle is already opened")

    def open(self, context=None):
        """Open the memory in `context`: directly on the exporting device, else as a copy.

        Parameters
        ----------
        context : gpuhost.Context, optional
            Where to open it; by default the current context. On the exporting device
            (by UUID) it is `open_direct`, on another one `open_staged`.

        Returns
        -------
        MemoryPointer

        Raises
        ------
        ValueError
            In the exporting process, or the handle is open already.

        Examples
        --------
        >>> import pickle
        >>> mgr = gpuhost.current_context().memory_manager
        >>> data = pickle.dumps(mgr.get_ipc_handle(mgr.memalloc(4096)))
        >>> h = pickle.loads(data)               # in the process that receives it
        >>> mem = h.open()
        >>> mem.size
        4096
        >>> h.close()
        """
        self._check_openable()
        ctx = context if context is not None else _core.current_context()
        if self.source_info is not None and ctx.device.uuid != self.source_info:
            return self.open_staged(ctx)
        return self.open_direct(ctx)

    def open_direct(self, context):
        """The memory opened in `context` itself (cuIpcOpenMemHandle), without a copy.

        Writes from either process are seen by both. `context` must be on the exporting
        device, or reach it through peer access.

        Parameters
        ----------
        context : gpuhost.Context
            Where to open it.

        Returns
        -------
        MemoryPointer
            Over the exporting process's memory, until `close`.

        Raises
        ------
        ValueError
            In the exporting process, or the handle is open already.

        Examples
        --------
        >>> import pickle
        >>> ctx = gpuhost.current_context()
        >>> d = gpuhost.to_device(np.arange(4, dtype=np.uint8))
        >>> data = pickle.dumps(ctx.memory_manager.get_ipc_handle(d.gpu_data))
        >>> h = pickle.loads(data)               # in the process that receives it
        >>> mem = h.open_direct(ctx)
        >>> mem.memset(9)
        >>> d.copy_to_host()                     # the exporter's array sees the write
        array([9, 9, 9, 9], dtype=uint8)
        >>> h.close()
        """
        self._check_openable()
        with context.device:
            alloc = _core.ipc_open(bytes(self.handle), self.offset + self.size)
        self._opened = alloc
        return MemoryPointer(alloc.context, DevicePointer(alloc.ptr + self.offset), self.size,
                             owner=alloc)

    def open_staged(self, context):
        """A copy of the memory, in new memory of `context`.

        The handle is opened on the exporting device (found by its UUID), copied, and
        closed again; writes to the copy are not seen by the exporter. `open` uses it
        when `context` is on another device than the exporting one.

        Parameters
        ----------
        context : gpuhost.Context
            Where the copy goes; any device.

        Returns
        -------
        MemoryPointer
            The copy, from `context`'s memory manager.

        Raises
        ------
        ValueError
            In the exporting process, or the handle is open already.
        InvalidDeviceError
            The exporting device is not visible in this process.

        Examples
        --------
        >>> import pickle
        >>> mgr = gpuhost.current_context().memory_manager
        >>> data = pickle.dumps(mgr.get_ipc_handle(mgr.memalloc(4096)))
        >>> h = pickle.loads(data)               # in the process that receives it
        >>> copy = h.open_staged(gpuhost.gpus[1].get_primary_context())
        >>> copy.size, copy.context.device.id
        (4096, 1)
        >>> h.close()
        """
        self._check_openable()
        source = device_of_uuid(self.source_info, "IPC memory")
        with source:
            alloc = _core.ipc_open(bytes(self.handle), self.offset + self.size)
        try:
            src = _core.make_array(alloc, alloc.ptr + self.offset, (self.size,), (1,), np.uint8)
            with context.device:
                mem = context.memalloc(self.size)
                dst = _core.make_array(mem, mem.device_pointer_value or 0, (self.size,), (1,),
                                       np.uint8)
                if self.size:
                    dst.copy_to_device(src)
                    _core.current_context().synchronize()
        finally:
            alloc.close()
        self._opened = _StagedOpening()
        return mem

    def open_array(self, context, shape, dtype, strides=None):
        """Open the memory (as `open` does) as a DeviceArray.

        Parameters
        ----------
        context : gpuhost.Context or None
            Where to open it; None is the current context.
        shape : int or tuple of int
            The array's shape.
        dtype : numpy dtype
            Its element type.
        strides : tuple of int, optional
            Strides in bytes; by default C order.

        Returns
        -------
        DeviceArray

        Examples
        --------
        >>> import pickle
        >>> d = gpuhost.to_device(np.arange(6, dtype=np.int32))
        >>> mgr = gpuhost.current_context().memory_manager
        >>> data = pickle.dumps(mgr.get_ipc_handle(d.gpu_data))
        >>> h = pickle.loads(data)               # in the process that receives it
        >>> h.open_array(None, (2, 3), np.int32).copy_to_host()
        array([[0, 1, 2],
               [3, 4, 5]], dtype=int32)
        >>> h.close()
        """
        mem = self.open(context)
        dtype = np.dtype(dtype)
        shape, dtype, strides, _ = _arrays._layout(shape, dtype, strides, "C")
        return _core.make_array(mem, mem.device_pointer_value, shape, strides, dtype)

    def close(self):
        """Close the memory `open` opened (cuIpcCloseMemHandle).

        What was opened must not be used afterwards.

        Raises
        ------
        ValueError
            The handle is not open.

        Examples
        --------
        >>> import pickle
        >>> mgr = gpuhost.current_context().memory_manager
        >>> h = pickle.loads(pickle.dumps(mgr.get_ipc_handle(mgr.memalloc(64))))
        >>> mem = h.open()
        >>> h.close()
        >>> h.close()
        Traceback (most recent call last):
            ...
        ValueError: IpcHandle not opened
        """
        if self._opened is None:
            raise ValueError("IpcHandle not opened")
        self._opened.close()
        self._opened = None

    def __reduce__(self):
        return (IpcHandle, (None, bytes(self.handle), self.size, self.source_info, self.offset))
