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
    """A runtime-API call failed: ``status`` is the cudaError_t number; the message is
    "<cudaErrorName>: <description>", as CuPy's."""

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
    """The number of devices; CUDARuntimeError (cudaErrorNoDevice) when there is none."""
    n = _core.device_count()
    if n == 0:
        raise CUDARuntimeError(100)
    return n


def getDevice():
    """The current device's id (0 when no context is current yet)."""
    dev = _core.current_device()
    return 0 if dev is None else dev.id


@_translated
def setDevice(device):
    """Make `device`'s primary context current in this thread."""
    _core.select_device(_device_id(device))


@_translated
def deviceSynchronize():
    """Wait for all work on the current device."""
    _core.current_context().synchronize()


@_translated
def deviceGetAttribute(attrib, device):
    """The value of cudaDeviceAttr `attrib` (an int) of `device`."""
    return _core.get_device(_device_id(device)).get_attribute(int(attrib))


@_translated
def deviceGetPCIBusId(device):
    """The device's PCI bus id, "0000:3B:00.0"."""
    return _core.get_device(_device_id(device)).pci_bus_id


@_translated
def deviceGetByPCIBusId(pci_bus_id):
    """The id of the device at `pci_bus_id`."""
    return _core.device_by_pci_bus_id(pci_bus_id)


@_translated
def deviceCanAccessPeer(device, peer_device):
    """1 if `device` can access `peer_device`'s memory, else 0."""
    return int(_core.get_device(_device_id(device)).can_access_peer(_device_id(peer_device)))


@_translated
def getDeviceProperties(device):
    """A dict of the device's properties under cudaDeviceProp's names (``name`` is bytes)."""
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
    """The CUDA version the driver supports, as an int (13000 for 13.0)."""
    major, minor = _core.driver_version()
    return major * 1000 + minor * 10


def runtimeGetVersion():
    """The CUDA version of the headers gpuhost was built with (gpuhost stands in for the
    runtime and loads no libcudart), as an int."""
    return _core.CUDA_HEADERS_VERSION


@_translated
def memGetInfo():
    """(free, total) bytes of the current device."""
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
    """`size` bytes of device memory on the current device; its address (0 for size 0)."""
    return _keep(_core.mem_alloc(size)) if size > 0 else 0


@_translated
def mallocManaged(size, flags=cudaMemAttachGlobal):
    """`size` bytes of managed memory; its address."""
    if size == 0:
        return 0
    return _keep(_core.mem_alloc(size, "managed", attach_global=flags != cudaMemAttachHost))


@_translated
def hostAlloc(size, flags=0):
    """`size` bytes of page-locked host memory; its host address."""
    if size == 0:
        return 0
    kind = "mapped" if flags & hostAllocMapped else "pinned"
    a = _core.mem_alloc(size, kind, portable=bool(flags & hostAllocPortable),
                        wc=bool(flags & hostAllocWriteCombined))
    _allocations[a.host_ptr] = a
    return a.host_ptr


@_translated
def mallocAsync(size, stream):
    """`size` bytes from the device's stream-ordered pool, ordered on stream handle
    `stream`; its address."""
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
    """Free memory malloc(), mallocManaged() or mallocAsync() returned."""
    _release(ptr, "device pointer 0x%x" % ptr)


@_translated
def freeHost(ptr):
    """Free memory hostAlloc() returned."""
    _release(ptr, "host pointer 0x%x" % ptr)


@_translated
def freeAsync(ptr, stream):
    """Free memory mallocAsync() returned (ordered on the stream it was allocated on)."""
    _release(ptr, "device pointer 0x%x" % ptr)


def _address(ptr):
    if isinstance(ptr, ctypes.c_void_p):
        return ptr.value or 0
    return int(ptr)


@_translated
def memcpy(dst, src, size, kind):
    """Copy `size` bytes from `src` to `dst` (addresses); waits until done. `kind` is
    checked, the direction comes from the addresses (unified addressing)."""
    _check_kind(kind)
    _core.memcpy(_address(dst), _address(src), size)


@_translated
def memcpyAsync(dst, src, size, kind, stream):
    """Queue a copy of `size` bytes on stream handle `stream`."""
    _check_kind(kind)
    _core.memcpy(_address(dst), _address(src), size, _stream_arg(stream))


def _check_kind(kind):
    if kind not in (0, 1, 2, 3, 4):
        raise CUDARuntimeError(21, "invalid copy direction for memcpy")


@_translated
def memset(ptr, value, size):
    """Set `size` bytes at device address `ptr` to the byte `value`; waits until done."""
    memsetAsync(ptr, value, size, 0)
    _core.legacy_default_stream().synchronize()


@_translated
def memsetAsync(ptr, value, size, stream):
    """Queue setting `size` bytes at `ptr` to the byte `value` on stream handle `stream`."""
    if size == 0:
        return
    arr = _core.make_array(None, ptr, (size,), (1,), "uint8", None, _core.current_context())
    _core.memset(arr, ptr, 1, value & 0xFF, size, 1, size, _stream_arg(stream))


@_translated
def memPrefetchAsync(ptr, size, device, stream):
    """Queue migrating managed memory to `device` (cudaCpuDeviceId: the host)."""
    _core.mem_prefetch(ptr, size, device, _stream_arg(stream))


@_translated
def memAdvise(ptr, size, advice, device):
    """Advise the driver how `device` (cudaCpuDeviceId: the host) uses managed memory."""
    _core.mem_advise(ptr, size, advice, device)


class PointerAttributes:
    """What pointerGetAttributes() reports: ``device``, ``devicePointer``,
    ``hostPointer`` and ``type`` (memoryType*)."""

    def __init__(self, device, devicePointer, hostPointer, type):  # noqa: A002,N803
        self.device, self.devicePointer, self.hostPointer, self.type = \
            device, devicePointer, hostPointer, type

    def __repr__(self):
        return ("<PointerAttributes device=%d devicePointer=0x%x hostPointer=0x%x type=%d>"
                % (self.device, self.devicePointer, self.hostPointer, self.type))


@_translated
def pointerGetAttributes(ptr):
    """The memory type and device of address `ptr`; memory the driver does not know is
    memoryTypeUnregistered on cudaInvalidDeviceId, as the runtime reports it."""
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
    """A new stream on the current device; its handle."""
    return streamCreateWithFlags(streamDefault)


@_translated
def streamCreateWithFlags(flags, priority=0):
    """A new stream (streamNonBlocking: not synchronizing with the null stream)."""
    s = _core.stream(non_blocking=bool(flags & streamNonBlocking), priority=priority)
    _streams[s.handle] = s
    return s.handle


streamCreateWithPriority = streamCreateWithFlags


@_translated
def streamDestroy(stream):
    """Destroy a stream streamCreate() made."""
    if _streams.pop(stream, None) is None:
        raise CUDARuntimeError(errorInvalidResourceHandle)


@_translated
def streamSynchronize(stream):
    """Wait for the work queued on stream handle `stream`."""
    _stream_arg(stream).synchronize()


@_translated
def streamQuery(stream):
    """0 if the stream is idle, else errorNotReady (600), as cudaStreamQuery returns."""
    return 0 if _stream_arg(stream).query() else errorNotReady


@_translated
def streamWaitEvent(stream, event, flags=0):
    """Make later work on `stream` wait for `event` (handles)."""
    _stream_arg(stream).wait_event(_event_arg(event))


@_translated
def streamIsCapturing(stream):
    """True while the stream captures into a graph."""
    return _stream_arg(stream).is_capturing()


def _event_arg(event):
    e = _events.get(event)
    if e is None:
        raise CUDARuntimeError(errorInvalidResourceHandle)
    return e


@_translated
def eventCreate():
    """A new timing event on the current device; its handle."""
    return eventCreateWithFlags(eventDefault)


@_translated
def eventCreateWithFlags(flags):
    """A new event: eventBlockingSync, eventDisableTiming, eventInterprocess."""
    e = _core.event(not flags & eventDisableTiming, blocking_sync=bool(flags & eventBlockingSync),
                    interprocess=bool(flags & eventInterprocess))
    _events[e.handle] = e
    return e.handle


@_translated
def eventDestroy(event):
    """Destroy an event eventCreate() made."""
    if _events.pop(event, None) is None:
        raise CUDARuntimeError(errorInvalidResourceHandle)


@_translated
def eventRecord(event, stream):
    """Record `event` on stream handle `stream`."""
    _event_arg(event).record(_stream_arg(stream))


@_translated
def eventSynchronize(event):
    """Wait until `event` has completed."""
    _event_arg(event).synchronize()


@_translated
def eventQuery(event):
    """0 if `event` has completed, else errorNotReady."""
    return 0 if _event_arg(event).query() else errorNotReady


@_translated
def eventElapsedTime(start, end):
    """Milliseconds between two recorded timing events."""
    return _event_arg(start).elapsed_time(_event_arg(end))

