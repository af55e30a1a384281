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
from ... import _core
from ._runtime_codes import *  # noqa: F401,F403  (the status codes and enums)
from ._runtime_codes import CUDARuntimeError, _device_id, _translated  # noqa: F401
from ._runtime_enums import DEVICE_ATTRIBUTES
# The memory calls, and the streams and events, in their modules:
from ._runtime_memory import (  # noqa: F401
    PointerAttributes,
    free,
    freeAsync,
    freeHost,
    hostAlloc,
    malloc,
    mallocAsync,
    mallocManaged,
    memAdvise,
    memcpy,
    memcpyAsync,
    memPrefetchAsync,
    memset,
    memsetAsync,
    pointerGetAttributes,
)
from ._runtime_streams import (  # noqa: F401
    eventCreate,
    eventCreateWithFlags,
    eventDestroy,
    eventElapsedTime,
    eventQuery,
    eventRecord,
    eventSynchronize,
    streamCreate,
    streamCreateWithFlags,
    streamCreateWithPriority,
    streamDestroy,
    streamIsCapturing,
    streamQuery,
    streamSynchronize,
    streamWaitEvent,
)

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
