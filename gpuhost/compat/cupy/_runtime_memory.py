"""cupy.cuda.runtime's memory calls over the driver: malloc and free (and their managed,
pinned and stream-ordered kinds), memcpy and memset, prefetch and advice, and
pointerGetAttributes; re-exported by gpuhost.compat.cupy.runtime.
"""
import ctypes

from ... import _core
from ._runtime_codes import *  # noqa: F401,F403  (the status codes and enums)
from ._runtime_codes import CUDARuntimeError, _translated
from ._runtime_streams import _stream_arg


# ---- memory ----

_allocations = {}  # address -> the Allocation that owns it, until free()


def _keep(allocation):
    ptr = allocation.ptr if allocation.kind != "pinned" else allocation.host_ptr
    _allocations[ptr] = allocation
    return ptr


@_translated
def malloc(size):
    """Allocate device memory on the current device (cudaMalloc).

    The memory lives until free(); it is not from a pool.

    Parameters
    ----------
    size : int
        Bytes; 0 allocates nothing.

    Returns
    -------
    int
        The device address (0 for size 0).

    Raises
    ------
    gpuhost.compat.cupy.runtime.CUDARuntimeError
        cudaErrorMemoryAllocation (2) when the device has not that much free.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> ptr = runtime.malloc(1024)
    >>> runtime.pointerGetAttributes(ptr).type == runtime.memoryTypeDevice
    True
    >>> runtime.free(ptr)
    >>> runtime.malloc(0)
    0
    """
    return _keep(_core.mem_alloc(size)) if size > 0 else 0


@_translated
def mallocManaged(size, flags=cudaMemAttachGlobal):
    """Allocate managed (unified) memory (cudaMallocManaged).

    Parameters
    ----------
    size : int
        Bytes; 0 allocates nothing.
    flags : int, optional
        cudaMemAttachGlobal (the default: any stream may access it) or cudaMemAttachHost.

    Returns
    -------
    int
        The address, valid on the host and the devices (0 for size 0).

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> ptr = runtime.mallocManaged(256)
    >>> runtime.pointerGetAttributes(ptr).type == runtime.memoryTypeManaged
    True
    >>> runtime.free(ptr)
    """
    if size == 0:
        return 0
    return _keep(_core.mem_alloc(size, "managed", attach_global=flags != cudaMemAttachHost))


@_translated
def hostAlloc(size, flags=0):
    """Allocate page-locked host memory (cudaHostAlloc).

    Parameters
    ----------
    size : int
        Bytes; 0 allocates nothing.
    flags : int, optional
        hostAllocDefault (0), or an or of hostAllocPortable, hostAllocMapped (also mapped
        into the device's address space) and hostAllocWriteCombined.

    Returns
    -------
    int
        The host address (0 for size 0); freeHost() frees it.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> ptr = runtime.hostAlloc(4096, runtime.hostAllocPortable)
    >>> runtime.pointerGetAttributes(ptr).type == runtime.memoryTypeHost
    True
    >>> runtime.freeHost(ptr)
    """
    if size == 0:
        return 0
    kind = "mapped" if flags & hostAllocMapped else "pinned"
    a = _core.mem_alloc(size, kind, portable=bool(flags & hostAllocPortable),
                        wc=bool(flags & hostAllocWriteCombined))
    _allocations[a.host_ptr] = a
    return a.host_ptr


@_translated
def mallocAsync(size, stream):
    """Allocate from the device's stream-ordered pool (cudaMallocAsync).

    The memory may be used by work queued on `stream` after this call; freeAsync() returns
    it to the pool.

    Parameters
    ----------
    size : int
        Bytes; 0 allocates nothing.
    stream : int
        A stream handle (0: the legacy default stream).

    Returns
    -------
    int
        The device address (0 for size 0).

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> s = runtime.streamCreate()
    >>> ptr = runtime.mallocAsync(1024, s)
    >>> runtime.freeAsync(ptr, s)
    >>> runtime.streamSynchronize(s)
    """
    if size == 0:
        return 0
    return _keep(_core.device_alloc(size, _stream_arg(stream)))


def _release(ptr, what):
    if ptr == 0:
        return
    allocation = _allocations.pop(ptr, None)
    if allocation is None:
        raise CUDARuntimeError(errorInvalidValue, "%s was not allocated by this module or "
                               "was freed already" % what)
    allocation.free()


@_translated
def free(ptr):
    """Free memory that malloc(), mallocManaged() or mallocAsync() returned (cudaFree).

    Parameters
    ----------
    ptr : int
        The address; 0 does nothing.

    Raises
    ------
    gpuhost.compat.cupy.runtime.CUDARuntimeError
        cudaErrorInvalidValue when `ptr` was not allocated by this module or was freed
        already.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> ptr = runtime.malloc(64)
    >>> runtime.free(ptr)
    >>> try:
    ...     runtime.free(ptr)
    ... except runtime.CUDARuntimeError as e:
    ...     print(e.status)
    1
    """
    _release(ptr, "device pointer 0x%x" % ptr)


@_translated
def freeHost(ptr):
    """Free page-locked memory that hostAlloc() returned (cudaFreeHost).

    Parameters
    ----------
    ptr : int
        The host address; 0 does nothing.

    Raises
    ------
    gpuhost.compat.cupy.runtime.CUDARuntimeError
        cudaErrorInvalidValue when `ptr` was not allocated by hostAlloc() or was freed
        already.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> runtime.freeHost(runtime.hostAlloc(64))
    """
    _release(ptr, "host pointer 0x%x" % ptr)


@_translated
def freeAsync(ptr, stream):
    """Return memory that mallocAsync() allocated to its pool (cudaFreeAsync).

    The free is ordered on the stream the memory was allocated on.

    Parameters
    ----------
    ptr : int
        The address; 0 does nothing.
    stream : int
        A stream handle (CuPy's signature; the allocation's own stream orders the free).

    Raises
    ------
    gpuhost.compat.cupy.runtime.CUDARuntimeError
        cudaErrorInvalidValue when `ptr` was not allocated by this module or was freed
        already.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> ptr = runtime.mallocAsync(256, 0)
    >>> runtime.freeAsync(ptr, 0)
    """
    _release(ptr, "device pointer 0x%x" % ptr)


def _address(ptr):
    if isinstance(ptr, ctypes.c_void_p):
        return ptr.value or 0
    return int(ptr)


@_translated
def memcpy(dst, src, size, kind):
    """Copy bytes between addresses and wait until done (cudaMemcpy).

    Parameters
    ----------
    dst, src : int or ctypes.c_void_p
        Device, managed or host addresses.
    size : int
        Bytes.
    kind : int
        memcpyHostToHost, memcpyHostToDevice, memcpyDeviceToHost, memcpyDeviceToDevice or
        memcpyDefault: checked, but the direction comes from the addresses (unified
        addressing).

    Raises
    ------
    gpuhost.compat.cupy.runtime.CUDARuntimeError
        cudaErrorInvalidMemcpyDirection (21) for another `kind`, or the driver's error.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> h = np.arange(4, dtype=np.int32)
    >>> d = runtime.malloc(h.nbytes)
    >>> runtime.memcpy(d, h.ctypes.data, h.nbytes, runtime.memcpyHostToDevice)
    >>> back = np.zeros_like(h)
    >>> runtime.memcpy(back.ctypes.data, d, h.nbytes, runtime.memcpyDeviceToHost)
    >>> back
    array([0, 1, 2, 3], dtype=int32)
    >>> runtime.free(d)
    """
    _check_kind(kind)
    _core.memcpy(_address(dst), _address(src), size)


@_translated
def memcpyAsync(dst, src, size, kind, stream):
    """Queue a copy between addresses on a stream (cudaMemcpyAsync).

    Parameters
    ----------
    dst, src : int or ctypes.c_void_p
        Device, managed or host addresses (host memory should be page-locked for the copy
        to overlap other work).
    size : int
        Bytes.
    kind : int
        A memcpy* direction, checked as by memcpy().
    stream : int
        A stream handle (0: the legacy default stream).

    Raises
    ------
    gpuhost.compat.cupy.runtime.CUDARuntimeError
        For a bad `kind` or the driver's error.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> s = runtime.streamCreate()
    >>> h = np.arange(4, dtype=np.int32)
    >>> d = runtime.malloc(h.nbytes)
    >>> runtime.memcpyAsync(d, h.ctypes.data, h.nbytes, runtime.memcpyDefault, s)
    >>> runtime.streamSynchronize(s)
    >>> runtime.free(d)
    """
    _check_kind(kind)
    _core.memcpy(_address(dst), _address(src), size, _stream_arg(stream))


def _check_kind(kind):
    if kind not in (0, 1, 2, 3, 4):
        raise CUDARuntimeError(21, "invalid copy direction for memcpy")


@_translated
def memset(ptr, value, size):
    """Set device memory to a byte value and wait until done (cudaMemset).

    Parameters
    ----------
    ptr : int
        The device address.
    value : int
        The byte (only its low 8 bits count).
    size : int
        Bytes.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> d = runtime.malloc(4)
    >>> runtime.memset(d, 7, 4)
    >>> h = np.zeros(4, np.uint8)
    >>> runtime.memcpy(h.ctypes.data, d, 4, runtime.memcpyDeviceToHost)
    >>> h
    array([7, 7, 7, 7], dtype=uint8)
    >>> runtime.free(d)
    """
    memsetAsync(ptr, value, size, 0)
    _core.legacy_default_stream().synchronize()


@_translated
def memsetAsync(ptr, value, size, stream):
    """Queue setting device memory to a byte value on a stream (cudaMemsetAsync).

    Parameters
    ----------
    ptr : int
        The device address.
    value : int
        The byte (only its low 8 bits count).
    size : int
        Bytes; 0 queues nothing.
    stream : int
        A stream handle (0: the legacy default stream).

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> s = runtime.streamCreate()
    >>> d = runtime.malloc(16)
    >>> runtime.memsetAsync(d, 0, 16, s)
    >>> runtime.streamSynchronize(s)
    >>> runtime.free(d)
    """
    if size == 0:
        return
    arr = _core.make_array(None, ptr, (size,), (1,), "uint8", None, _core.current_context())
    _core.memset(arr, ptr, 1, value & 0xFF, size, 1, size, _stream_arg(stream))


@_translated
def memPrefetchAsync(ptr, size, device, stream):
    """Queue migrating managed memory to a device or the host (cudaMemPrefetchAsync).

    Parameters
    ----------
    ptr : int
        An address in memory from mallocManaged().
    size : int
        Bytes.
    device : int
        The destination device, or cudaCpuDeviceId (-1) for the host.
    stream : int
        A stream handle.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> m = runtime.mallocManaged(4096)
    >>> runtime.memPrefetchAsync(m, 4096, 0, 0)
    >>> runtime.memPrefetchAsync(m, 4096, runtime.cudaCpuDeviceId, 0)
    >>> runtime.deviceSynchronize()
    >>> runtime.free(m)
    """
    _core.mem_prefetch(ptr, size, device, _stream_arg(stream))


@_translated
def memAdvise(ptr, size, advice, device):
    """Advise the driver how managed memory is used (cudaMemAdvise).

    Parameters
    ----------
    ptr : int
        An address in memory from mallocManaged().
    size : int
        Bytes.
    advice : int
        cudaMemAdviseSetReadMostly, cudaMemAdviseSetPreferredLocation,
        cudaMemAdviseSetAccessedBy or their Unset counterparts.
    device : int
        The device the advice is about, or cudaCpuDeviceId (-1) for the host.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> m = runtime.mallocManaged(4096)
    >>> runtime.memAdvise(m, 4096, runtime.cudaMemAdviseSetReadMostly, 0)
    >>> runtime.free(m)
    """
    _core.mem_advise(ptr, size, advice, device)


class PointerAttributes:
    """What pointerGetAttributes() reports about an address (cudaPointerAttributes).

    Parameters
    ----------
    device : int
        The device the memory belongs to (cudaInvalidDeviceId, -2, for unregistered memory).
    devicePointer : int
        The address to use on the device (0 when there is none).
    hostPointer : int
        The address to use on the host (0 when there is none).
    type : int
        memoryTypeUnregistered, memoryTypeHost, memoryTypeDevice or memoryTypeManaged.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> ptr = runtime.malloc(64)
    >>> attrs = runtime.pointerGetAttributes(ptr)
    >>> attrs.device, attrs.devicePointer == ptr, attrs.hostPointer, attrs.type
    (0, True, 0, 2)
    >>> runtime.free(ptr)
    """

    def __init__(self, device, devicePointer, hostPointer, type):  # noqa: A002,N803
        self.device, self.devicePointer, self.hostPointer, self.type = \
            device, devicePointer, hostPointer, type

    def __repr__(self):
        return ("<PointerAttributes device=%d devicePointer=0x%x hostPointer=0x%x type=%d>"
                % (self.device, self.devicePointer, self.hostPointer, self.type))


@_translated
def pointerGetAttributes(ptr):
    """The memory type and device of an address (cudaPointerGetAttributes).

    Parameters
    ----------
    ptr : int
        Any address.

    Returns
    -------
    gpuhost.compat.cupy.runtime.PointerAttributes
        For memory the driver does not know (plain host memory): memoryTypeUnregistered on
        cudaInvalidDeviceId, as the runtime reports it.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> h = np.zeros(4)
    >>> runtime.pointerGetAttributes(h.ctypes.data)
    <PointerAttributes device=-2 devicePointer=0x0 hostPointer=0x0 type=0>
    >>> m = runtime.mallocManaged(64)
    >>> runtime.pointerGetAttributes(m).type == runtime.memoryTypeManaged
    True
    >>> runtime.free(m)
    """
    info = _core._pointer_info(ptr)
    if info is None:
        return PointerAttributes(cudaInvalidDeviceId, 0, 0, memoryTypeUnregistered)
    device, dptr, hptr, managed, is_host = info
    kind = memoryTypeManaged if managed else (memoryTypeHost if is_host else memoryTypeDevice)
    return PointerAttributes(device, dptr, hptr, kind)
