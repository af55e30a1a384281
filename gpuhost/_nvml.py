"""Which processes use a device, from NVML (the driver's management library, loaded at run
time as libcuda is): what the pytest plugin's leak check asks before it blames a fall of the
device's free memory on the test, since free memory is the whole device's and other
processes move it.

Only the calls that question needs are bound, with ctypes: it is asked once per suspected
leak, never on a test's fast path.  The library is $GPUHOST_NVML where that is set (the test
suite's fake), else ``libnvidia-ml.so.1``.
"""
import ctypes
import os
import threading

_SUCCESS = 0
_INSUFFICIENT_SIZE = 7
_LOCK = threading.Lock()
_STATE = {}  # "lib": the loaded library, or "error": why there is none


class _ProcessInfo(ctypes.Structure):
    """nvmlProcessInfo_t as nvmlDeviceGetComputeRunningProcesses_v3 fills it."""
    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong),
                ("gpuInstanceId", ctypes.c_uint), ("computeInstanceId", ctypes.c_uint)]


def _error_text(lib, code):
    try:
        lib.nvmlErrorString.restype = ctypes.c_char_p
        text = lib.nvmlErrorString(code)
        return "%s (%d)" % (text.decode(errors="replace"), code) if text else str(code)
    except (AttributeError, OSError):
        return str(code)


def _library():
    """NVML, initialized once per process; raises OSError saying why not."""
    with _LOCK:
        if "lib" in _STATE:
            return _STATE["lib"]
        if "error" in _STATE:
            raise OSError(_STATE["error"])
        name = os.environ.get("GPUHOST_NVML") or "libnvidia-ml.so.1"
        try:
            lib = ctypes.CDLL(name)
            code = lib.nvmlInit_v2()
            if code != _SUCCESS:
                raise OSError("nvmlInit_v2 failed: %s" % _error_text(lib, code))
        except (OSError, AttributeError) as e:
            _STATE["error"] = "NVML (%s) is not usable: %s" % (name, e)
            raise OSError(_STATE["error"]) from None
        _STATE["lib"] = lib
        return lib


def compute_processes(pci_bus_id):
    """[(pid, bytes used), ...] of the processes with a CUDA context on the device at
    `pci_bus_id` (as ``Device.pci_bus_id`` gives it), this one included.  pids are as NVML
    sees them: in a container they may be the host's, not ``os.getpid()``'s kind.  Raises
    OSError saying why NVML cannot tell (no library, no permission, an unknown device)."""
    lib = _library()
    handle = ctypes.c_void_p()
    code = lib.nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id.encode(), ctypes.byref(handle))
    if code != _SUCCESS:
        raise OSError("nvmlDeviceGetHandleByPciBusId_v2(%r) failed: %s"
                      % (pci_bus_id, _error_text(lib, code)))
    count = ctypes.c_uint(0)
    infos = None
    for _ in range(4):  # processes may come between the two calls: ask again, larger
        code = lib.nvmlDeviceGetComputeRunningProcesses_v3(handle, ctypes.byref(count), infos)
        if code != _INSUFFICIENT_SIZE:
            break
        infos = (_ProcessInfo * (count.value + 4))()
        count = ctypes.c_uint(len(infos))
    if code != _SUCCESS:
        raise OSError("nvmlDeviceGetComputeRunningProcesses_v3 failed: %s"
                      % _error_text(lib, code))
    if infos is None:
        return []
    return [(infos[i].pid, infos[i].usedGpuMemory) for i in range(count.value)]
