"""cupy.cuda.runtime's names over the driver: the calls host code makes most, with the
runtime API's status codes, names and errors, and no libcudart.

    from gpuhost.compat.cupy import runtime
    try:
        runtime.setDevice(7)
    except runtime.CUDARuntimeError as e:
        print(e.status, e)      # 101 cudaErrorInvalidDevice: invalid device ordinal

Handles are ints as in CuPy: streamCreate() and eventCreate() return the raw CUstream /
CUevent, malloc() a device address; each lives until its destroy call (streamDestroy,
eventDestroy, free). Calls run in the current device's primary context, which gpuhost
shares with the CUDA runtime, so addresses and handles pass between them. The runtime's
status numbers are the driver's: a failed driver call raises CUDARuntimeError with that
number as ``status``.
"""
import ctypes
import functools

from ... import _core
from ...errors import CudaAPIError, InvalidDeviceError
from ._runtime_enums import DEVICE_ATTRIBUTES, ERROR_NAMES

__all__ = [
    "CUDARuntimeError", "PointerAttributes", "deviceCanAccessPeer", "deviceGetAttribute",
    "deviceGetByPCIBusId", "deviceGetPCIBusId", "deviceSynchronize", "driverGetVersion",
    "eventCreate", "eventCreateWithFlags", "eventDestroy", "eventElapsedTime", "eventQuery",
    "eventRecord", "eventSynchronize", "free", "freeAsync", "freeHost", "getDevice",
    "getDeviceCount", "getDeviceProperties", "hostAlloc", "is_hip", "malloc", "mallocAsync",
    "mallocManaged", "memAdvise", "memGetInfo", "memPrefetchAsync", "memcpy", "memcpyAsync",
    "memset", "memsetAsync", "pointerGetAttributes", "runtimeGetVersion", "setDevice",
    "streamCreate", "streamCreateWithFlags", "streamDestroy", "streamIsCapturing",
    "streamQuery", "streamSynchronize", "streamWaitEvent",
]

is_hip = False

# status codes (cudaError_t), as CuPy names them
errorInvalidValue = 1
errorMemoryAllocation = 2
errorInvalidDevice = 101
errorInvalidResourceHandle = 400
errorNotReady = 600
errorPeerAccessAlreadyEnabled = 704
errorPeerAccessNotEnabled = 705

# enums CuPy exposes
memcpyHostToHost, memcpyHostToDevice, memcpyDeviceToHost, memcpyDeviceToDevice, \
    memcpyDefault = 0, 1, 2, 3, 4
memoryTypeUnregistered, memoryTypeHost, memoryTypeDevice, memoryTypeManaged = 0, 1, 2, 3
streamDefault, streamNonBlocking = 0, 1
streamLegacy, streamPerThread = 1, 2
eventDefault, eventBlockingSync, eventDisableTiming, eventInterprocess = 0, 1, 2, 4
hostAllocDefault, hostAllocPortable, hostAllocMapped, hostAllocWriteCombined = 0, 1, 2, 4
cudaMemAttachGlobal, cudaMemAttachHost = 1, 2
cudaCpuDeviceId, cudaInvalidDeviceId = -1, -2
cudaMemAdviseSetReadMostly, cudaMemAdviseUnsetReadMostly = 1, 2
cudaMemAdviseSetPreferredLocation, cudaMemAdviseUnsetPreferredLocation = 3, 4
cudaMemAdviseSetAccessedBy, cudaMemAdviseUnsetAccessedBy = 5, 6
globals().update({"cudaDevAttr" + name: value for name, value in DEVICE_ATTRIBUTES.items()})

# what cudaGetErrorString says, where gpuhost raises without a driver message
_DESCRIPTIONS = {1: "invalid argument", 2: "out of memory", 100: "no CUDA-capable device is "
                 "detected", 101: "invalid device ordinal", 400: "invalid resource handle",
                 600: "device not ready"}


class CUDARuntimeError(RuntimeError):
    """A runtime-API call failed (CuPy's ``cupy.cuda.runtime.CUDARuntimeError``).

    Every function of this module raises it in place of gpuhost's own errors: a failed
    driver call becomes a CUDARuntimeError whose ``status`` is the driver's CUresult (the
    runtime's cudaError_t numbers are the same), with the driver's `gpuhost.CudaAPIError` as
    its ``__cause__``; a bad device id is cudaErrorInvalidDevice (101). The message is
    ``"<cudaErrorName>: <description>"``, as CuPy's. It pickles.

    Parameters
    ----------
    status : int
        The cudaError_t number, kept as ``status``.
    description : str, optional
        The text after the name; None: what cudaGetErrorString says for the common codes,
        else "unknown error".

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> try:
    ...     runtime.setDevice(7)
    ... except runtime.CUDARuntimeError as e:
    ...     print(e.status, e)
    101 cudaErrorInvalidDevice: invalid device ordinal
    >>> str(runtime.CUDARuntimeError(2))
    'cudaErrorMemoryAllocation: out of memory'
    """

    def __init__(self, status, description=None):
        self.status = status
        name = ERROR_NAMES.get(status, "cudaErrorUnknown")
        if description is None:
            description = _DESCRIPTIONS.get(status, "unknown error")
        self._description = description
        super().__init__("%s: %s" % (name, description))

    def __reduce__(self):
        return (type(self), (self.status, self._description))


def _translated(fn):
    """Run `fn`, turning gpuhost's driver errors into CUDARuntimeError."""

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except CudaAPIError as e:
            raise CUDARuntimeError(e.code, e.msg or None) from e
        except InvalidDeviceError as e:
            raise CUDARuntimeError(errorInvalidDevice) from e
    return call


def _device_id(device):
    device = int(device)
    if not 0 <= device < _device_count():
        raise CUDARuntimeError(errorInvalidDevice)
    return device


def _device_count():
    try:
        return _core.device_count()
    except Exception:
        return 0


# ---- devices ----

@_translated
def getDeviceCount():
    """The number of CUDA devices (cudaGetDeviceCount).

    Returns
    -------
    int
        At least 1.

    Raises
    ------
    gpuhost.compat.cupy.runtime.CUDARuntimeError
        cudaErrorNoDevice (100) when there is no device, or the driver's error.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> runtime.getDeviceCount() >= 1
    True
    """
    n = _core.device_count()
    if n == 0:
        raise CUDARuntimeError(100)
    return n


def getDevice():
    """The current device's id (cudaGetDevice).

    The device of the context current in this thread; 0 when none is current yet, as the
    runtime, which would make device 0's current on first use.

    Returns
    -------
    int

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> runtime.setDevice(0)
    >>> runtime.getDevice()
    0
    """
    dev = _core.current_device()
    return 0 if dev is None else dev.id


@_translated
def setDevice(device):
    """Make a device current in this thread (cudaSetDevice).

    Its primary context, which gpuhost shares with the CUDA runtime, becomes the calling
    thread's current context.

    Parameters
    ----------
    device : int
        The device id, 0 to getDeviceCount() - 1.

    Raises
    ------
    gpuhost.compat.cupy.runtime.CUDARuntimeError
        cudaErrorInvalidDevice (101) for an id out of range.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> runtime.setDevice(0)
    >>> runtime.getDevice()
    0
    >>> runtime.setDevice(99)
    Traceback (most recent call last):
        ...
    gpuhost.compat.cupy.runtime.CUDARuntimeError: cudaErrorInvalidDevice: invalid device ordinal
    """
    _core.select_device(_device_id(device))


@_translated
def deviceSynchronize():
    """Wait until all work on the current device has finished (cudaDeviceSynchronize).

    Raises
    ------
    gpuhost.compat.cupy.runtime.CUDARuntimeError
        If queued work failed.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> runtime.deviceSynchronize()
    """
    _core.current_context().synchronize()


@_translated
def deviceGetAttribute(attrib, device):
    """One attribute of a device (cudaDeviceGetAttribute).

    Parameters
    ----------
    attrib : int
        A cudaDeviceAttr number; this module has them as ``cudaDevAttr*``
        (``runtime.cudaDevAttrWarpSize``).
    device : int
        The device id.

    Returns
    -------
    int

    Raises
    ------
    gpuhost.compat.cupy.runtime.CUDARuntimeError
        cudaErrorInvalidDevice for a bad id, cudaErrorInvalidValue for an unknown attribute.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> runtime.deviceGetAttribute(runtime.cudaDevAttrWarpSize, 0)
    32
    """
    return _core.get_device(_device_id(device)).get_attribute(int(attrib))


@_translated
def deviceGetPCIBusId(device):
    """A device's PCI bus id (cudaDeviceGetPCIBusId).

    Parameters
    ----------
    device : int
        The device id.

    Returns
    -------
    str
        ``"domain:bus:device.function"`` in hex, such as ``"0000:3B:00.0"``.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> runtime.deviceGetPCIBusId(0)
    '0000:...:00.0'
    """
    return _core.get_device(_device_id(device)).pci_bus_id


@_translated
def deviceGetByPCIBusId(pci_bus_id):
    """The device at a PCI bus id (cudaDeviceGetByPCIBusId).

    Parameters
    ----------
    pci_bus_id : str
        As deviceGetPCIBusId() returns it (case does not matter).

    Returns
    -------
    int
        The device id.

    Raises
    ------
    gpuhost.compat.cupy.runtime.CUDARuntimeError
        No device is at that address.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> runtime.deviceGetByPCIBusId(runtime.deviceGetPCIBusId(0))
    0
    """
    return _core.device_by_pci_bus_id(pci_bus_id)


@_translated
def deviceCanAccessPeer(device, peer_device):
    """Whether one device can access another's memory (cudaDeviceCanAccessPeer).

    Parameters
    ----------
    device : int
        The device that would access.
    peer_device : int
        The device whose memory it would access.

    Returns
    -------
    int
        1 if it can (after peer access is enabled), else 0.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> runtime.deviceCanAccessPeer(0, 0) in (0, 1)
    True
    """
    return int(_core.get_device(_device_id(device)).can_access_peer(_device_id(peer_device)))


@_translated
def getDeviceProperties(device):
    """A device's properties as a dict (cudaGetDeviceProperties).

    The keys are cudaDeviceProp's field names, as CuPy returns them: ``name`` (bytes),
    ``totalGlobalMem``, ``major``, ``minor``, ``multiProcessorCount``, ``warpSize``,
    ``maxThreadsPerBlock``, ``maxThreadsDim`` and ``maxGridSize`` (tuples), ``pciBusID`` and
    others; each is read from the driver's device attributes.

    Parameters
    ----------
    device : int
        The device id.

    Returns
    -------
    dict

    Raises
    ------
    gpuhost.compat.cupy.runtime.CUDARuntimeError
        cudaErrorInvalidDevice for a bad id.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> props = runtime.getDeviceProperties(0)
    >>> type(props["name"]), props["warpSize"], len(props["maxThreadsDim"])
    (<class 'bytes'>, 32, 3)
    """
    dev = _core.get_device(_device_id(device))
    a = dev.get_attribute
    attr = DEVICE_ATTRIBUTES
    props = {
        "name": dev.name.encode(), "uuid": dev.uuid.replace("GPU-", "").replace("-", "")
        .encode() if getattr(dev, "uuid", None) else b"",
        "totalGlobalMem": dev.total_memory,
        "sharedMemPerBlock": a(attr["MaxSharedMemoryPerBlock"]),
        "regsPerBlock": a(attr["MaxRegistersPerBlock"]),
        "warpSize": a(attr["WarpSize"]),
        "maxThreadsPerBlock": a(attr["MaxThreadsPerBlock"]),
        "maxThreadsDim": tuple(a(attr["MaxBlockDim" + c]) for c in "XYZ"),
        "maxGridSize": tuple(a(attr["MaxGridDim" + c]) for c in "XYZ"),
        "clockRate": a(attr["ClockRate"]),
        "totalConstMem": a(attr["TotalConstantMemory"]),
        "major": a(attr["ComputeCapabilityMajor"]),
        "minor": a(attr["ComputeCapabilityMinor"]),
        "multiProcessorCount": a(attr["MultiProcessorCount"]),
        "l2CacheSize": a(attr["L2CacheSize"]),
        "maxThreadsPerMultiProcessor": a(attr["MaxThreadsPerMultiProcessor"]),
        "memoryClockRate": a(attr["MemoryClockRate"]),
        "memoryBusWidth": a(attr["GlobalMemoryBusWidth"]),
        "sharedMemPerMultiprocessor": a(attr["MaxSharedMemoryPerMultiprocessor"]),
        "regsPerMultiprocessor": a(attr["MaxRegistersPerMultiprocessor"]),
        "managedMemory": a(attr["ManagedMemory"]),
        "concurrentManagedAccess": a(attr["ConcurrentManagedAccess"]),
        "pciBusID": a(attr["PciBusId"]),
        "pciDeviceID": a(attr["PciDeviceId"]),
        "pciDomainID": a(attr["PciDomainId"]),
        "integrated": a(attr["Integrated"]),
        "canMapHostMemory": a(attr["CanMapHostMemory"]),
        "ECCEnabled": a(attr["EccEnabled"]),
        "asyncEngineCount": a(attr["AsyncEngineCount"]),
        "unifiedAddressing": a(attr["UnifiedAddressing"]),
        "memoryPoolsSupported": a(attr["MemoryPoolsSupported"]),
        "sharedMemPerBlockOptin": a(attr["MaxSharedMemoryPerBlockOptin"]),
    }
    return props


def driverGetVersion():
    """The CUDA version the driver supports (cudaDriverGetVersion).

    Returns
    -------
    int
        1000 * major + 10 * minor: 13000 for CUDA 13.0.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> runtime.driverGetVersion() >= runtime.runtimeGetVersion() - 1000
    True
    """
    major, minor = _core.driver_version()
    return major * 1000 + minor * 10


def runtimeGetVersion():
    """The CUDA version of the headers gpuhost was built with (cudaRuntimeGetVersion).

    gpuhost stands in for the runtime and loads no libcudart, so this is the version of the
    CUDA headers its C extension was compiled against.

    Returns
    -------
    int
        1000 * major + 10 * minor.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> runtime.runtimeGetVersion() >= 12000
    True
    """
    return _core.CUDA_HEADERS_VERSION


@_translated
def memGetInfo():
    """The free and total memory of the current device (cudaMemGetInfo).

    Returns
    -------
    tuple of int
        ``(free, total)`` in bytes.

    Examples
    --------
    >>> from gpuhost.compat.cupy import runtime
    >>> free, total = runtime.memGetInfo()
    >>> 0 <= free <= total
    True
    """
    info = _core.current_context().get_memory_info()
    return (info.free, info.total)


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

