"""The fake driver itself (tests/fakecuda), through ctypes only: lookup, initialization,
devices, primary contexts, context stacks, streams, events, the work queue and its gate,
memory (allocations, copies, memsets, pointer queries, IPC), the profiler switch, fault
injection, error names, the build.  (One scenario, a reset under live graphs with
conditional nodes, runs gpuhost over it in a fresh process.)

Each test loads its own copy of the library (a copy is a different file, so the dynamic
loader gives it its own state): configuration read at the first cuInit can differ per test,
and nothing here touches the instance gpuhost itself loaded in this process.
"""
import contextlib
import ctypes
import os
import random
import re
import shutil
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "fakecuda"))
import build as fakecuda_build  # noqa: E402
from conftest import in_thread  # noqa: E402

CSRC = os.path.join(os.path.dirname(HERE), "csrc")


def _x_macro_entries(header, macro):
    """The (NAME, number) pairs of an X-macro list in csrc/base/<header>."""
    with open(os.path.join(CSRC, "base", header)) as f:
        text = f.read()
    return [(name, int(num)) for name, num in re.findall(macro + r"\((\w+), (\d+)\)", text)]


ENTRY_POINTS = ["cu" + name for name, _ in _x_macro_entries("cuda_api.h", r"\bX")]
ENTRY_VERSIONS = dict(zip(ENTRY_POINTS, (v for _, v in _x_macro_entries("cuda_api.h", r"\bX"))))
ERRORS = dict(_x_macro_entries("cuda_errors.h", r"\bE"))

SUCCESS = 0
INVALID_VALUE = ERRORS["CUDA_ERROR_INVALID_VALUE"]
OUT_OF_MEMORY = ERRORS["CUDA_ERROR_OUT_OF_MEMORY"]
NOT_INITIALIZED = ERRORS["CUDA_ERROR_NOT_INITIALIZED"]
NO_DEVICE = ERRORS["CUDA_ERROR_NO_DEVICE"]
INVALID_DEVICE = ERRORS["CUDA_ERROR_INVALID_DEVICE"]
INVALID_CONTEXT = ERRORS["CUDA_ERROR_INVALID_CONTEXT"]
NOT_FOUND = ERRORS["CUDA_ERROR_NOT_FOUND"]
CONTEXT_IS_DESTROYED = ERRORS["CUDA_ERROR_CONTEXT_IS_DESTROYED"]
UNKNOWN = ERRORS["CUDA_ERROR_UNKNOWN"]
INVALID_HANDLE = ERRORS["CUDA_ERROR_INVALID_HANDLE"]
NOT_READY = ERRORS["CUDA_ERROR_NOT_READY"]
NOT_PERMITTED = ERRORS["CUDA_ERROR_NOT_PERMITTED"]
NOT_SUPPORTED = ERRORS["CUDA_ERROR_NOT_SUPPORTED"]
ALREADY_REGISTERED = ERRORS["CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"]
NOT_REGISTERED = ERRORS["CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"]
CAPTURE_UNSUPPORTED = ERRORS["CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"]
CAPTURE_INVALIDATED = ERRORS["CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"]
CAPTURE_MODE_RELAXED = 2  # CUstreamCaptureMode

# the default stream handles, CUstream_flags, CUevent_flags
STREAM_NULL, STREAM_LEGACY, STREAM_PER_THREAD = None, 1, 2
NON_BLOCKING = 1
EVENT_DEFAULT, BLOCKING_SYNC, DISABLE_TIMING, INTERPROCESS = 0, 1, 2, 4

# CUmemorytype; cuMemHostAlloc, cuMemHostRegister, cuMemAllocManaged and IPC memory flags
MEM_HOST, MEM_DEVICE, MEM_ARRAY, MEM_UNIFIED = 1, 2, 3, 4
HOSTALLOC_PORTABLE, HOSTALLOC_DEVICEMAP, HOSTALLOC_WRITECOMBINED = 1, 2, 4
REGISTER_PORTABLE, REGISTER_DEVICEMAP, REGISTER_IOMEMORY, REGISTER_READ_ONLY = 1, 2, 4, 8
ATTACH_GLOBAL, ATTACH_HOST, ATTACH_SINGLE = 1, 2, 4
IPC_LAZY_ENABLE_PEER_ACCESS = 1
GARBAGE = 0xA5  # what new memory holds

# CUpointer_attribute: number and the ctypes type of its value
POINTER_ATTR = {
    "CONTEXT": (1, ctypes.c_void_p), "MEMORY_TYPE": (2, ctypes.c_uint),
    "DEVICE_POINTER": (3, ctypes.c_uint64), "HOST_POINTER": (4, ctypes.c_void_p),
    "P2P_TOKENS": (5, ctypes.c_uint64 * 2), "BUFFER_ID": (7, ctypes.c_ulonglong),
    "IS_MANAGED": (8, ctypes.c_uint), "DEVICE_ORDINAL": (9, ctypes.c_int),
    "RANGE_START_ADDR": (11, ctypes.c_uint64), "RANGE_SIZE": (12, ctypes.c_size_t),
}

# CUdriverProcAddressQueryResult, CU_GET_PROC_ADDRESS_LEGACY_STREAM
SYMBOL_FOUND, SYMBOL_NOT_FOUND, VERSION_NOT_SUFFICIENT = 0, 1, 2
LEGACY_STREAM = 1

# CUdevice_attribute numbers used below
ATTR = {
    "MAX_THREADS_PER_BLOCK": 1, "MAX_SHARED_MEMORY_PER_BLOCK": 8, "WARP_SIZE": 10,
    "MAX_REGISTERS_PER_BLOCK": 12, "CLOCK_RATE": 13, "MULTIPROCESSOR_COUNT": 16,
    "KERNEL_EXEC_TIMEOUT": 17, "INTEGRATED": 18, "CAN_MAP_HOST_MEMORY": 19, "COMPUTE_MODE": 20,
    "ECC_ENABLED": 32, "PCI_BUS_ID": 33, "PCI_DEVICE_ID": 34, "TCC_DRIVER": 35,
    "L2_CACHE_SIZE": 38, "UNIFIED_ADDRESSING": 41, "PCI_DOMAIN_ID": 50,
    "COMPUTE_CAPABILITY_MAJOR": 75, "COMPUTE_CAPABILITY_MINOR": 76, "MANAGED_MEMORY": 83,
    "CONCURRENT_MANAGED_ACCESS": 89, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 97,
    "MEMORY_POOLS_SUPPORTED": 115,
}

c_int_p = ctypes.POINTER(ctypes.c_int)
c_size_p = ctypes.POINTER(ctypes.c_size_t)
c_void_pp = ctypes.POINTER(ctypes.c_void_p)
c_char_pp = ctypes.POINTER(ctypes.c_char_p)
c_uint_p = ctypes.POINTER(ctypes.c_uint)
c_dptr = ctypes.c_uint64  # CUdeviceptr
c_dptr_p = ctypes.POINTER(c_dptr)
c_size = ctypes.c_size_t

# void CUstreamCallback(CUstream, CUresult, void *userData)
STREAM_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)


class IpcEventHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * 64)]


class IpcMemHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * 64)]


def _copy_side(prefix, three_d):
    fields = [(prefix + "XInBytes", c_size), (prefix + "Y", c_size)]
    if three_d:
        fields += [(prefix + "Z", c_size), (prefix + "LOD", c_size)]
    fields += [(prefix + "MemoryType", ctypes.c_int), (prefix + "Host", ctypes.c_void_p),
               (prefix + "Device", c_dptr), (prefix + "Array", ctypes.c_void_p)]
    if three_d:
        fields.append(("reserved" + ("0" if prefix == "src" else "1"), ctypes.c_void_p))
    fields.append((prefix + "Pitch", c_size))
    if three_d:
        fields.append((prefix + "Height", c_size))
    return fields


class Memcpy2D(ctypes.Structure):  # CUDA_MEMCPY2D
    _fields_ = (_copy_side("src", False) + _copy_side("dst", False)
                + [("WidthInBytes", c_size), ("Height", c_size)])


class Memcpy3D(ctypes.Structure):  # CUDA_MEMCPY3D
    _fields_ = (_copy_side("src", True) + _copy_side("dst", True)
                + [("WidthInBytes", c_size), ("Height", c_size), ("Depth", c_size)])


assert ctypes.sizeof(Memcpy2D) == 128 and Memcpy2D.dstXInBytes.offset == 56
assert ctypes.sizeof(Memcpy3D) == 200 and Memcpy3D.dstXInBytes.offset == 88


SIGNATURES = {
    "cuInit": [ctypes.c_uint],
    "cuDriverGetVersion": [c_int_p],
    "cuDeviceGet": [c_int_p, ctypes.c_int],
    "cuDeviceGetCount": [c_int_p],
    "cuDeviceGetName": [ctypes.c_char_p, ctypes.c_int, ctypes.c_int],
    "cuDeviceGetUuid": [ctypes.c_void_p, ctypes.c_int],
    "cuDeviceTotalMem": [c_size_p, ctypes.c_int],
    "cuDeviceGetAttribute": [c_int_p, ctypes.c_int, ctypes.c_int],
    "cuDeviceGetPCIBusId": [ctypes.c_char_p, ctypes.c_int, ctypes.c_int],
    "cuDeviceGetByPCIBusId": [c_int_p, ctypes.c_char_p],
    "cuDevicePrimaryCtxRetain": [c_void_pp, ctypes.c_int],
    "cuDevicePrimaryCtxRelease": [ctypes.c_int],
    "cuDevicePrimaryCtxReset": [ctypes.c_int],
    "cuDevicePrimaryCtxGetState": [ctypes.c_int, ctypes.POINTER(ctypes.c_uint), c_int_p],
    "cuCtxGetCurrent": [c_void_pp],
    "cuCtxSetCurrent": [ctypes.c_void_p],
    "cuCtxPushCurrent": [ctypes.c_void_p],
    "cuCtxPopCurrent": [c_void_pp],
    "cuCtxGetDevice": [c_int_p],
    "cuCtxSynchronize": [],
    "cuDeviceCanAccessPeer": [c_int_p, ctypes.c_int, ctypes.c_int],
    "cuCtxEnablePeerAccess": [ctypes.c_void_p, ctypes.c_uint],
    "cuCtxDisablePeerAccess": [ctypes.c_void_p],
    "cuMemGetInfo": [c_size_p, c_size_p],
    "cuGetErrorName": [ctypes.c_int, c_char_pp],
    "cuGetErrorString": [ctypes.c_int, c_char_pp],
    "cuCtxGetStreamPriorityRange": [c_int_p, c_int_p],
    "cuStreamCreateWithPriority": [c_void_pp, ctypes.c_uint, ctypes.c_int],
    "cuStreamDestroy": [ctypes.c_void_p],
    "cuStreamSynchronize": [ctypes.c_void_p],
    "cuStreamQuery": [ctypes.c_void_p],
    "cuStreamWaitEvent": [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint],
    "cuStreamGetPriority": [ctypes.c_void_p, c_int_p],
    "cuStreamGetFlags": [ctypes.c_void_p, c_uint_p],
    "cuStreamGetCtx": [ctypes.c_void_p, c_void_pp],
    "cuStreamAddCallback": [ctypes.c_void_p, STREAM_CALLBACK, ctypes.c_void_p, ctypes.c_uint],
    "cuEventCreate": [c_void_pp, ctypes.c_uint],
    "cuEventDestroy": [ctypes.c_void_p],
    "cuEventRecord": [ctypes.c_void_p, ctypes.c_void_p],
    "cuEventQuery": [ctypes.c_void_p],
    "cuEventSynchronize": [ctypes.c_void_p],
    "cuEventElapsedTime": [ctypes.POINTER(ctypes.c_float), ctypes.c_void_p, ctypes.c_void_p],
    "cuIpcGetEventHandle": [ctypes.POINTER(IpcEventHandle), ctypes.c_void_p],
    "cuIpcOpenEventHandle": [c_void_pp, IpcEventHandle],
    "cuProfilerStart": [],
    "cuProfilerStop": [],
    "cuMemAlloc": [c_dptr_p, c_size],
    "cuMemFree": [c_dptr],
    "cuMemAllocManaged": [c_dptr_p, c_size, ctypes.c_uint],
    "cuMemHostAlloc": [c_void_pp, c_size, ctypes.c_uint],
    "cuMemFreeHost": [ctypes.c_void_p],
    "cuMemHostGetDevicePointer": [c_dptr_p, ctypes.c_void_p, ctypes.c_uint],
    "cuMemHostRegister": [ctypes.c_void_p, c_size, ctypes.c_uint],
    "cuMemHostUnregister": [ctypes.c_void_p],
    "cuMemGetAddressRange": [c_dptr_p, c_size_p, c_dptr],
    "cuPointerGetAttribute": [ctypes.c_void_p, ctypes.c_int, c_dptr],
    "cuMemcpyHtoD": [c_dptr, ctypes.c_void_p, c_size],
    "cuMemcpyDtoH": [ctypes.c_void_p, c_dptr, c_size],
    "cuMemcpyDtoD": [c_dptr, c_dptr, c_size],
    "cuMemcpyHtoDAsync": [c_dptr, ctypes.c_void_p, c_size, ctypes.c_void_p],
    "cuMemcpyDtoHAsync": [ctypes.c_void_p, c_dptr, c_size, ctypes.c_void_p],
    "cuMemcpyDtoDAsync": [c_dptr, c_dptr, c_size, ctypes.c_void_p],
    "cuMemcpy2D": [ctypes.POINTER(Memcpy2D)],
    "cuMemcpy2DAsync": [ctypes.POINTER(Memcpy2D), ctypes.c_void_p],
    "cuMemcpy3D": [ctypes.POINTER(Memcpy3D)],
    "cuMemcpy3DAsync": [ctypes.POINTER(Memcpy3D), ctypes.c_void_p],
    "cuMemcpyPeer": [c_dptr, ctypes.c_void_p, c_dptr, ctypes.c_void_p, c_size],
    "cuMemcpyPeerAsync": [c_dptr, ctypes.c_void_p, c_dptr, ctypes.c_void_p, c_size,
                          ctypes.c_void_p],
    "cuMemsetD8": [c_dptr, ctypes.c_ubyte, c_size],
    "cuMemsetD16": [c_dptr, ctypes.c_ushort, c_size],
    "cuMemsetD32": [c_dptr, ctypes.c_uint, c_size],
    "cuMemsetD8Async": [c_dptr, ctypes.c_ubyte, c_size, ctypes.c_void_p],
    "cuMemsetD16Async": [c_dptr, ctypes.c_ushort, c_size, ctypes.c_void_p],
    "cuMemsetD32Async": [c_dptr, ctypes.c_uint, c_size, ctypes.c_void_p],
    "cuMemsetD2D8": [c_dptr, c_size, ctypes.c_ubyte, c_size, c_size],
    "cuMemsetD2D16": [c_dptr, c_size, ctypes.c_ushort, c_size, c_size],
    "cuMemsetD2D32": [c_dptr, c_size, ctypes.c_uint, c_size, c_size],
    "cuMemsetD2D8Async": [c_dptr, c_size, ctypes.c_ubyte, c_size, c_size, ctypes.c_void_p],
    "cuMemsetD2D16Async": [c_dptr, c_size, ctypes.c_ushort, c_size, c_size, ctypes.c_void_p],
    "cuMemsetD2D32Async": [c_dptr, c_size, ctypes.c_uint, c_size, c_size, ctypes.c_void_p],
    "cuIpcGetMemHandle": [ctypes.POINTER(IpcMemHandle), c_dptr],
    "cuIpcOpenMemHandle": [c_dptr_p, IpcMemHandle, ctypes.c_uint],
    "cuIpcCloseMemHandle": [c_dptr],
    "cuStreamBeginCapture": [ctypes.c_void_p, ctypes.c_int],
    "cuStreamEndCapture": [ctypes.c_void_p, c_void_pp],
}


class Fake:
    """One loaded copy of the fake driver: entry points (resolved through
    cuGetProcAddress_v2, as gpuhost does) as attributes, the control API as methods."""

    def __init__(self, path):
        lib = ctypes.CDLL(path)
        lib.cuGetProcAddress_v2.argtypes = [ctypes.c_char_p, c_void_pp, ctypes.c_int,
                                            ctypes.c_uint64, c_int_p]
        lib.cuGetProcAddress.argtypes = [ctypes.c_char_p, c_void_pp, ctypes.c_int,
                                         ctypes.c_uint64]
        lib.fakecuda_fail.argtypes = [ctypes.c_char_p, ctypes.c_long, ctypes.c_int, ctypes.c_long]
        lib.fakecuda_calls.argtypes = [ctypes.c_char_p]
        lib.fakecuda_calls.restype = ctypes.c_long
        lib.fakecuda_live.argtypes = [ctypes.c_char_p]
        lib.fakecuda_live.restype = ctypes.c_long
        lib.fakecuda_bytes.argtypes = [ctypes.c_char_p]
        lib.fakecuda_bytes.restype = ctypes.c_long
        lib.fakecuda_pending.restype = ctypes.c_long
        lib.fakecuda_profiler_state.restype = ctypes.c_long
        self.lib = lib
        self.callbacks = []  # ctypes callbacks handed to the fake, kept alive

    def proc(self, name, version=13000, flags=LEGACY_STREAM):
        """cuGetProcAddress_v2: (result, status, address or None)."""
        pfn = ctypes.c_void_p(0x1234)  # a stale value the call must overwrite
        status = ctypes.c_int(-1)
        res = self.lib.cuGetProcAddress_v2(name.encode(), ctypes.byref(pfn), version, flags,
                                           ctypes.byref(status))
        return res, status.value, pfn.value

    def __getattr__(self, name):
        if not name.startswith("cu"):
            raise AttributeError(name)
        res, _, address = self.proc(name, ENTRY_VERSIONS[name])
        assert res == SUCCESS and address
        fn = ctypes.CFUNCTYPE(ctypes.c_int, *SIGNATURES[name])(address)
        setattr(self, name, fn)
        return fn

    # the control API
    def fail(self, name, code, nth=1, times=1):
        return self.lib.fakecuda_fail(name.encode(), nth, code, times)

    def clear_faults(self):
        self.lib.fakecuda_clear_faults()

    def calls(self, name):
        return self.lib.fakecuda_calls(name.encode())

    def live(self, kind):
        return self.lib.fakecuda_live(kind.encode())

    def bytes(self, kind):
        return self.lib.fakecuda_bytes(kind.encode())

    def reset(self):
        self.lib.fakecuda_reset()

    def depth(self):
        return self.lib.fakecuda_thread_stack_depth()

    def gate_close(self):
        self.lib.fakecuda_gate_close()

    def gate_open(self):
        self.lib.fakecuda_gate_open()

    def pending(self):
        return self.lib.fakecuda_pending()

    def profiler_state(self):
        return self.lib.fakecuda_profiler_state()

    # helpers over entry points
    def attr(self, name, dev=0):
        value = ctypes.c_int()
        assert self.cuDeviceGetAttribute(ctypes.byref(value), ATTR[name], dev) == SUCCESS
        return value.value

    def retain(self, dev=0):
        ctx = ctypes.c_void_p()
        assert self.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == SUCCESS
        assert ctx.value
        return ctx.value

    def current(self):
        ctx = ctypes.c_void_p()
        assert self.cuCtxGetCurrent(ctypes.byref(ctx)) == SUCCESS
        return ctx.value

    def pop(self):
        ctx = ctypes.c_void_p()
        res = self.cuCtxPopCurrent(ctypes.byref(ctx))
        return res, ctx.value

    def ctx_device(self):
        dev = ctypes.c_int(-1)
        res = self.cuCtxGetDevice(ctypes.byref(dev))
        return res, dev.value

    def state(self, dev=0):
        flags, active = ctypes.c_uint(), ctypes.c_int()
        assert self.cuDevicePrimaryCtxGetState(dev, ctypes.byref(flags),
                                               ctypes.byref(active)) == SUCCESS
        return flags.value, bool(active.value)

    def mem_info(self):
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        res = self.cuMemGetInfo(ctypes.byref(free), ctypes.byref(total))
        return res, free.value, total.value

    def push(self, dev=0):
        """Retain device `dev`'s primary context and make it current; its handle."""
        ctx = self.retain(dev)
        assert self.cuCtxPushCurrent(ctx) == SUCCESS
        return ctx

    def stream(self, flags=0, priority=0):
        handle = ctypes.c_void_p()
        assert self.cuStreamCreateWithPriority(ctypes.byref(handle), flags, priority) == SUCCESS
        assert handle.value
        return handle.value

    def event(self, flags=EVENT_DEFAULT):
        handle = ctypes.c_void_p()
        assert self.cuEventCreate(ctypes.byref(handle), flags) == SUCCESS
        assert handle.value
        return handle.value

    def stream_info(self, stream):
        """(result, priority, flags, context) of `stream`, from its three getters."""
        prio, flags, ctx = ctypes.c_int(-99), ctypes.c_uint(99), ctypes.c_void_p()
        results = {self.cuStreamGetPriority(stream, ctypes.byref(prio)),
                   self.cuStreamGetFlags(stream, ctypes.byref(flags)),
                   self.cuStreamGetCtx(stream, ctypes.byref(ctx))}
        assert len(results) == 1, results
        return results.pop(), prio.value, flags.value, ctx.value

    def add_callback(self, stream, fn):
        """Queue fn(stream, status) on `stream` as a host callback; the result."""
        callback = STREAM_CALLBACK(lambda handle, status, _: fn(handle, status))
        self.callbacks.append(callback)
        return self.cuStreamAddCallback(stream, callback, None, 0)

    def elapsed(self, start, end):
        ms = ctypes.c_float(-1.0)
        res = self.cuEventElapsedTime(ctypes.byref(ms), start, end)
        return res, ms.value

    def ipc_handle(self, event):
        handle = IpcEventHandle()
        return self.cuIpcGetEventHandle(ctypes.byref(handle), event), handle

    def ipc_open(self, handle):
        event = ctypes.c_void_p()
        return self.cuIpcOpenEventHandle(ctypes.byref(event), handle), event.value

    def alloc(self, size):
        """cuMemAlloc in the current context: the device address."""
        dptr = c_dptr()
        assert self.cuMemAlloc(ctypes.byref(dptr), size) == SUCCESS
        assert dptr.value
        return dptr.value

    def host_alloc(self, size, flags=0):
        """cuMemHostAlloc: the host address."""
        p = ctypes.c_void_p()
        assert self.cuMemHostAlloc(ctypes.byref(p), size, flags) == SUCCESS
        assert p.value
        return p.value

    def managed(self, size, flags=ATTACH_GLOBAL):
        dptr = c_dptr()
        assert self.cuMemAllocManaged(ctypes.byref(dptr), size, flags) == SUCCESS
        return dptr.value

    def write(self, dptr, data):
        """Copy the uint8 array `data` to dptr synchronously; the result.  From pageable
        memory, as the driver: returns once the bytes are staged, the device write queued
        on the legacy stream."""
        return self.cuMemcpyHtoD(dptr, data.ctypes.data, data.nbytes)

    def write_pinned(self, dptr, data):
        """write() through pinned memory: the copy is done when it returns."""
        pinned = self.host_alloc(max(data.nbytes, 1))
        ctypes.memmove(pinned, data.ctypes.data, data.nbytes)
        try:
            return self.cuMemcpyHtoD(dptr, pinned, data.nbytes)
        finally:
            assert self.cuMemFreeHost(ctypes.c_void_p(pinned)) == SUCCESS

    def read(self, dptr, size):
        """`size` bytes at dptr, as a new uint8 array."""
        out = np.empty(size, np.uint8)
        assert self.cuMemcpyDtoH(out.ctypes.data, dptr, size) == SUCCESS
        return out

    def device_pointer(self, p):
        dptr = c_dptr()
        res = self.cuMemHostGetDevicePointer(ctypes.byref(dptr), p, 0)
        return res, dptr.value

    def pointer_attr(self, name, ptr):
        """cuPointerGetAttribute: (result, value)."""
        number, ctype = POINTER_ATTR[name]
        value = ctype()
        res = self.cuPointerGetAttribute(ctypes.byref(value), number, ptr)
        return res, getattr(value, "value", value)

    def address_range(self, ptr):
        base, size = c_dptr(), c_size()
        res = self.cuMemGetAddressRange(ctypes.byref(base), ctypes.byref(size), ptr)
        return res, base.value, size.value

    def ipc_mem_handle(self, dptr):
        handle = IpcMemHandle()
        return self.cuIpcGetMemHandle(ctypes.byref(handle), dptr), handle

    def ipc_mem_open(self, handle, flags=0):
        dptr = c_dptr()
        return self.cuIpcOpenMemHandle(ctypes.byref(dptr), handle, flags), dptr.value


@pytest.fixture(scope="session")
def built_lib():
    return fakecuda_build.build()


@pytest.fixture
def load(built_lib, tmp_path, monkeypatch):
    """load(init=True, **env) -> a fresh Fake whose configuration is `env`."""
    count = [0]

    def load(init=True, **env):
        for var in ("FAKECUDA_DEVICES", "FAKECUDA_INIT_ERROR", "FAKECUDA_DRIVER_VERSION",
                    "FAKECUDA_PEER_ACCESS"):
            monkeypatch.delenv(var, raising=False)
        for var, value in env.items():
            monkeypatch.setenv(var, value)
        count[0] += 1
        path = str(tmp_path / ("libfakecuda-%d.so" % count[0]))
        shutil.copyfile(built_lib, path)
        fake = Fake(path)
        if init:
            assert fake.cuInit(0) == SUCCESS
        return fake

    return load


@pytest.fixture
def fake(load):
    """A fresh, initialized fake with the default configuration (two devices)."""
    return load()


# ---- lookup ----

def test_every_listed_entry_point_resolves_at_its_version_and_not_below(fake):
    assert len(ENTRY_POINTS) >= 20
    for name, version in ENTRY_VERSIONS.items():
        assert fake.proc(name, version)[:2] == (SUCCESS, SYMBOL_FOUND), name
        assert fake.proc(name, version)[2] is not None
        assert fake.proc(name, version - 1) == (NOT_FOUND, VERSION_NOT_SUFFICIENT, None), name


def test_unknown_symbol_is_not_found(fake):
    for name in ("cuNoSuchThing", "cuMemGetInfo_v2", "fk_Init", ""):
        assert fake.proc(name) == (NOT_FOUND, SYMBOL_NOT_FOUND, None), name


def test_lookup_rejects_unknown_flags_and_null_arguments(fake):
    assert fake.proc("cuInit", flags=1 << 7)[0] == INVALID_VALUE
    assert fake.lib.cuGetProcAddress_v2(None, ctypes.byref(ctypes.c_void_p()), 13000, 0,
                                        None) == INVALID_VALUE
    assert fake.lib.cuGetProcAddress_v2(b"cuInit", None, 13000, 0, None) == INVALID_VALUE


def test_version_1_lookup_finds_the_same_functions(fake):
    for name, version in ENTRY_VERSIONS.items():
        pfn = ctypes.c_void_p()
        assert fake.lib.cuGetProcAddress(name.encode(), ctypes.byref(pfn), version,
                                         LEGACY_STREAM) == SUCCESS
        assert pfn.value == fake.proc(name, version)[2]
    pfn = ctypes.c_void_p()
    assert fake.lib.cuGetProcAddress(b"cuNoSuchThing", ctypes.byref(pfn), 13000, 0) == NOT_FOUND
    assert pfn.value is None


def test_only_the_lookup_and_the_control_api_are_exported(fake):
    for name in ("cuGetProcAddress", "cuGetProcAddress_v2", "fakecuda_fail",
                 "fakecuda_clear_faults", "fakecuda_calls", "fakecuda_live", "fakecuda_reset",
                 "fakecuda_thread_stack_depth", "fakecuda_gate_close", "fakecuda_gate_open",
                 "fakecuda_pending", "fakecuda_profiler_state", "fakecuda_bytes"):
        assert hasattr(fake.lib, name), name
    for name in ("cuInit", "cuMemGetInfo", "fk_Init", "fk_enter", "fk_lock"):
        assert not hasattr(fake.lib, name), name


# ---- initialization and configuration ----

def test_calls_before_init_return_not_initialized_except_version_and_error_names(load):
    fake = load(init=False)
    count = ctypes.c_int(-1)
    assert fake.cuDeviceGetCount(ctypes.byref(count)) == NOT_INITIALIZED
    assert fake.cuCtxGetCurrent(ctypes.byref(ctypes.c_void_p())) == NOT_INITIALIZED
    assert fake.cuDevicePrimaryCtxRetain(ctypes.byref(ctypes.c_void_p()), 0) == NOT_INITIALIZED
    assert fake.cuCtxSynchronize() == NOT_INITIALIZED
    version = ctypes.c_int()
    assert fake.cuDriverGetVersion(ctypes.byref(version)) == SUCCESS
    assert version.value == 13000
    name = ctypes.c_char_p()
    assert fake.cuGetErrorName(NOT_INITIALIZED, ctypes.byref(name)) == SUCCESS
    assert fake.cuInit(0) == SUCCESS
    assert fake.cuDeviceGetCount(ctypes.byref(count)) == SUCCESS and count.value == 2
    assert fake.cuInit(0) == SUCCESS  # again: still fine


def test_init_rejects_nonzero_flags(load):
    fake = load(init=False)
    assert fake.cuInit(random.randint(1, 2**32 - 1)) == INVALID_VALUE
    assert fake.cuDeviceGetCount(ctypes.byref(ctypes.c_int())) == NOT_INITIALIZED


def test_no_devices_makes_init_fail_with_no_device(load):
    fake = load(init=False, FAKECUDA_DEVICES="0")
    assert fake.cuInit(0) == NO_DEVICE
    assert fake.cuInit(0) == NO_DEVICE
    assert fake.cuDeviceGetCount(ctypes.byref(ctypes.c_int())) == NOT_INITIALIZED


def test_init_error_is_returned_by_every_init(load):
    code = random.choice([UNKNOWN, ERRORS["CUDA_ERROR_STUB_LIBRARY"], OUT_OF_MEMORY])
    fake = load(init=False, FAKECUDA_INIT_ERROR=str(code))
    assert fake.cuInit(0) == code
    assert fake.cuInit(0) == code
    assert fake.cuDeviceGetCount(ctypes.byref(ctypes.c_int())) == NOT_INITIALIZED


def test_driver_version_comes_from_the_environment(load):
    wanted = random.choice([11080, 12000, 12040, 13010])
    fake = load(init=False, FAKECUDA_DRIVER_VERSION=str(wanted))
    version = ctypes.c_int()
    assert fake.cuDriverGetVersion(ctypes.byref(version)) == SUCCESS
    assert version.value == wanted
    assert fake.cuDriverGetVersion(None) == INVALID_VALUE


def test_more_devices_copy_device_1_on_other_pci_buses(load):
    n = random.randint(3, 8)
    fake = load(FAKECUDA_DEVICES=str(n))
    count = ctypes.c_int()
    assert fake.cuDeviceGetCount(ctypes.byref(count)) == SUCCESS and count.value == n
    buses = [fake.attr("PCI_BUS_ID", d) for d in range(n)]
    assert len(set(buses)) == n
    for d in range(2, n):
        assert fake.attr("MULTIPROCESSOR_COUNT", d) == fake.attr("MULTIPROCESSOR_COUNT", 1)


def test_malformed_configuration_fails_init_with_a_message(load, capfd):
    fake = load(init=False, FAKECUDA_DEVICES="two")
    assert fake.cuInit(0) == INVALID_VALUE
    assert "FAKECUDA_DEVICES must be an integer from 0 to 64, not 'two'" in capfd.readouterr().err


def test_configuration_is_read_from_a_fresh_processs_environment(built_lib):
    code = (
        "import ctypes, sys\n"
        "lib = ctypes.CDLL(sys.argv[1])\n"
        "init = ctypes.c_void_p()\n"
        "lib.cuGetProcAddress_v2.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p),"
        " ctypes.c_int, ctypes.c_uint64, ctypes.c_void_p]\n"
        "assert lib.cuGetProcAddress_v2(b'cuInit', ctypes.byref(init), 2000, 1, None) == 0\n"
        "print(ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint)(init.value)(0))\n"
    )
    env = dict(os.environ, FAKECUDA_DEVICES="0")
    env.pop("FAKECUDA_INIT_ERROR", None)
    proc = subprocess.run([sys.executable, "-c", code, built_lib], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(NO_DEVICE)


# ---- devices ----

def test_device_0_looks_like_an_h100(fake):
    assert fake.attr("COMPUTE_CAPABILITY_MAJOR") == 9
    assert fake.attr("COMPUTE_CAPABILITY_MINOR") == 0
    assert fake.attr("MULTIPROCESSOR_COUNT") == 132
    assert fake.attr("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN") == 232448
    total = ctypes.c_size_t()
    assert fake.cuDeviceTotalMem(ctypes.byref(total), 0) == SUCCESS
    assert total.value == 85520809984
    name = ctypes.create_string_buffer(256)
    assert fake.cuDeviceGetName(name, len(name), 0) == SUCCESS
    assert name.value == b"gpuhost fake H100"


def test_device_1_looks_like_an_a100(fake):
    assert (fake.attr("COMPUTE_CAPABILITY_MAJOR", 1), fake.attr("COMPUTE_CAPABILITY_MINOR", 1)) \
        == (8, 0)
    assert fake.attr("MULTIPROCESSOR_COUNT", 1) == 108
    total = ctypes.c_size_t()
    assert fake.cuDeviceTotalMem(ctypes.byref(total), 1) == SUCCESS
    assert total.value == 40 * 2**30


@pytest.mark.parametrize("dev", [0, 1])
def test_common_attributes_have_plausible_values(fake, dev):
    expected = {
        "MAX_THREADS_PER_BLOCK": 1024, "WARP_SIZE": 32, "MAX_SHARED_MEMORY_PER_BLOCK": 49152,
        "MAX_REGISTERS_PER_BLOCK": 65536, "UNIFIED_ADDRESSING": 1, "MANAGED_MEMORY": 1,
        "CONCURRENT_MANAGED_ACCESS": 1, "CAN_MAP_HOST_MEMORY": 1, "INTEGRATED": 0,
        "COMPUTE_MODE": 0, "TCC_DRIVER": 0, "KERNEL_EXEC_TIMEOUT": 0, "ECC_ENABLED": 1,
        "MEMORY_POOLS_SUPPORTED": 1,
    }
    assert {name: fake.attr(name, dev) for name in expected} == expected
    assert fake.attr("CLOCK_RATE", dev) > 10**6
    assert fake.attr("L2_CACHE_SIZE", dev) >= 40 * 2**20


def test_every_attribute_number_answers_and_the_rest_are_invalid_value(fake):
    value = ctypes.c_int()
    n = 1
    while fake.cuDeviceGetAttribute(ctypes.byref(value), n, 1) == SUCCESS:
        n += 1
    assert n > 140  # CU_DEVICE_ATTRIBUTE_MAX of CUDA 13
    for bad in (0, -1, n, n + random.randint(1, 1000)):
        assert fake.cuDeviceGetAttribute(ctypes.byref(value), bad, 0) == INVALID_VALUE, bad
    assert fake.cuDeviceGetAttribute(None, 1, 0) == INVALID_VALUE


def test_bad_device_ordinals_are_invalid_device(fake):
    bad = random.choice([2, 3, 64, -1])
    buf = ctypes.create_string_buffer(64)
    assert fake.cuDeviceGet(ctypes.byref(ctypes.c_int()), bad) == INVALID_DEVICE
    assert fake.cuDeviceGetAttribute(ctypes.byref(ctypes.c_int()), 1, bad) == INVALID_DEVICE
    assert fake.cuDeviceGetName(buf, len(buf), bad) == INVALID_DEVICE
    assert fake.cuDeviceGetPCIBusId(buf, len(buf), bad) == INVALID_DEVICE
    assert fake.cuDeviceGetUuid(buf, bad) == INVALID_DEVICE
    assert fake.cuDeviceTotalMem(ctypes.byref(ctypes.c_size_t()), bad) == INVALID_DEVICE
    assert fake.cuDevicePrimaryCtxRetain(ctypes.byref(ctypes.c_void_p()), bad) == INVALID_DEVICE
    assert fake.cuDevicePrimaryCtxRelease(bad) == INVALID_DEVICE
    assert fake.cuDevicePrimaryCtxReset(bad) == INVALID_DEVICE
    dev = ctypes.c_int(-1)
    assert fake.cuDeviceGet(ctypes.byref(dev), 1) == SUCCESS and dev.value == 1


def test_null_outputs_are_invalid_value(fake):
    assert fake.cuDeviceGetCount(None) == INVALID_VALUE
    assert fake.cuDeviceGet(None, 0) == INVALID_VALUE
    assert fake.cuDeviceGetName(None, 10, 0) == INVALID_VALUE
    assert fake.cuDeviceGetUuid(None, 0) == INVALID_VALUE
    assert fake.cuDeviceTotalMem(None, 0) == INVALID_VALUE
    assert fake.cuDeviceGetPCIBusId(None, 13, 0) == INVALID_VALUE
    assert fake.cuDevicePrimaryCtxRetain(None, 0) == INVALID_VALUE
    assert fake.cuDevicePrimaryCtxGetState(0, None, None) == INVALID_VALUE
    assert fake.cuCtxGetCurrent(None) == INVALID_VALUE
    assert fake.cuMemGetInfo(None, None) == INVALID_VALUE


def test_name_is_truncated_to_the_buffer_and_terminated(fake):
    n = random.randint(1, 16)
    buf = ctypes.create_string_buffer(b"\xff" * 32)
    assert fake.cuDeviceGetName(buf, n, 0) == SUCCESS
    assert buf.raw[:n] == b"gpuhost fake H100"[:n - 1] + b"\0"
    assert buf.raw[n:32] == b"\xff" * (32 - n)  # nothing written past len


def test_pci_bus_id_is_upper_case_and_agrees_with_the_attributes(fake):
    buf = ctypes.create_string_buffer(64)
    for dev, expected in ((0, b"0000:1B:00.0"), (1, b"0000:3B:00.0")):
        assert fake.cuDeviceGetPCIBusId(buf, 13, dev) == SUCCESS
        assert buf.value == expected
        assert fake.cuDeviceGetPCIBusId(buf, 64, dev) == SUCCESS  # a longer buffer: the same
        assert buf.value == expected
        assert fake.cuDeviceGetPCIBusId(buf, 8, dev) == SUCCESS  # cut to the buffer
        assert buf.value == expected[:7]
        assert fake.cuDeviceGetPCIBusId(buf, 13, dev) == SUCCESS
        domain, bus, rest = buf.value.decode().split(":")
        assert int(domain, 16) == fake.attr("PCI_DOMAIN_ID", dev)
        assert int(bus, 16) == fake.attr("PCI_BUS_ID", dev)
        assert int(rest.split(".")[0], 16) == fake.attr("PCI_DEVICE_ID", dev)


@pytest.mark.parametrize("text, result", [
    ("0000:3B:00.0", 1), ("0000:3b:00.0", 1), ("3B:00.0", 1), ("0:3B:0.0", 1), ("0000:3B:00", 1),
    ("0000:1B:00.0", 0), ("1b:0.0", 0),
    ("00000000:3B:00.0", 1), ("00000:3B:00.0", 1), ("000000000:3B:00.0", "INVALID_VALUE"),
    ("0000:3B:00.00", "INVALID_VALUE"), ("0000:3B:000.0", "INVALID_VALUE"),
    ("0000:03B:00.0", "INVALID_VALUE"), ("0000:3B:00.0 ", "INVALID_VALUE"),
    ("3B:00", "INVALID_VALUE"), ("0000:3B:00.", "INVALID_VALUE"), (":3B:00.0", "INVALID_VALUE"),
    ("fake:id", "INVALID_VALUE"), ("", "INVALID_VALUE"), ("0:0:0:0.0", "INVALID_VALUE"),
    ("0000:3B:1F.0", "INVALID_DEVICE"), ("0000:3B:00.1", "INVALID_DEVICE"),
    ("FFFF:FF:FF.F", "INVALID_DEVICE"),
])
def test_pci_bus_id_lookup_takes_the_documented_forms_only(fake, text, result):
    """The forms cuDeviceGetByPCIBusId documents, with the real driver's widths: a domain of
    at most 8 hex digits (nvidia-smi's "00000000:..." form looks up on the H200 too), 2 of
    bus and device, 1 of function, either case."""
    found = ctypes.c_int(-1)
    got = fake.cuDeviceGetByPCIBusId(ctypes.byref(found), text.encode())
    if isinstance(result, int):
        assert (got, found.value) == (SUCCESS, result)
    else:
        assert got == {"INVALID_VALUE": INVALID_VALUE, "INVALID_DEVICE": INVALID_DEVICE}[result]


def test_uuids_are_deterministic_and_distinct(load):
    def uuids(fake):
        out = []
        for dev in range(4):
            buf = ctypes.create_string_buffer(16)
            assert fake.cuDeviceGetUuid(buf, dev) == SUCCESS
            out.append(buf.raw)
        return out

    first = uuids(load(FAKECUDA_DEVICES="4"))
    assert len(set(first)) == 4 and all(u != b"\0" * 16 for u in first)
    assert uuids(load(FAKECUDA_DEVICES="4")) == first


# ---- primary contexts ----

def test_retain_and_release_count_references(fake):
    dev = random.randint(0, 1)
    assert fake.live("contexts") == 0 and fake.state(dev) == (0, False)
    ctx = fake.retain(dev)
    assert fake.retain(dev) == ctx
    assert fake.live("contexts") == 1 and fake.state(dev) == (0, True)
    assert fake.cuDevicePrimaryCtxRelease(dev) == SUCCESS
    assert fake.live("contexts") == 1 and fake.state(dev)[1]
    assert fake.cuDevicePrimaryCtxRelease(dev) == SUCCESS
    assert fake.live("contexts") == 0 and not fake.state(dev)[1]
    assert fake.cuDevicePrimaryCtxRelease(dev) == INVALID_CONTEXT
    assert fake.state(1 - dev) == (0, False)


def test_a_retain_after_destruction_makes_a_new_context(fake):
    old = fake.retain(0)
    assert fake.cuDevicePrimaryCtxRelease(0) == SUCCESS
    new = fake.retain(0)
    assert new != old
    assert fake.cuCtxPushCurrent(old) == CONTEXT_IS_DESTROYED
    assert fake.cuCtxPushCurrent(new) == SUCCESS
    assert fake.pop() == (SUCCESS, new)


def test_contexts_of_two_devices_are_distinct(fake):
    c0, c1 = fake.retain(0), fake.retain(1)
    assert c0 != c1 and fake.live("contexts") == 2
    assert fake.cuCtxPushCurrent(c1) == SUCCESS
    assert fake.ctx_device() == (SUCCESS, 1)
    assert fake.cuCtxPushCurrent(c0) == SUCCESS
    assert fake.ctx_device() == (SUCCESS, 0)
    assert fake.pop() == (SUCCESS, c0) and fake.pop() == (SUCCESS, c1)


def test_reset_destroys_a_retained_context_and_its_stale_handle_is_detected(fake):
    ctx = fake.retain(0)
    fake.retain(0)
    assert fake.cuCtxPushCurrent(ctx) == SUCCESS
    assert fake.cuDevicePrimaryCtxReset(0) == SUCCESS
    assert fake.live("contexts") == 0 and fake.state(0) == (0, False)
    assert fake.current() == ctx  # still current, as with the real driver
    assert fake.ctx_device()[0] == CONTEXT_IS_DESTROYED
    assert fake.cuCtxSynchronize() == CONTEXT_IS_DESTROYED
    assert fake.mem_info()[0] == CONTEXT_IS_DESTROYED
    assert fake.cuCtxSetCurrent(ctx) == CONTEXT_IS_DESTROYED
    assert fake.cuCtxPushCurrent(ctx) == CONTEXT_IS_DESTROYED
    assert fake.cuDevicePrimaryCtxRelease(0) == INVALID_CONTEXT  # the reset dropped both refs
    assert fake.pop() == (SUCCESS, ctx)  # a dead context can still be popped
    assert fake.depth() == 0
    assert fake.cuDevicePrimaryCtxReset(0) == SUCCESS  # resetting an inactive one is fine


def test_a_handle_that_never_was_a_context_is_invalid_context(fake):
    fake.retain(0)
    bogus = random.randrange(0x1000, 2**40, 16)
    assert fake.cuCtxSetCurrent(bogus) == INVALID_CONTEXT
    assert fake.cuCtxPushCurrent(bogus) == INVALID_CONTEXT
    assert fake.cuCtxPushCurrent(None) == INVALID_CONTEXT
    assert fake.depth() == 0


# ---- the context stack ----

def test_calls_needing_a_context_fail_without_one(fake):
    assert fake.current() is None
    assert fake.ctx_device()[0] == INVALID_CONTEXT
    assert fake.cuCtxSynchronize() == INVALID_CONTEXT
    assert fake.mem_info()[0] == INVALID_CONTEXT
    assert fake.pop()[0] == INVALID_CONTEXT


def test_push_and_pop_nest(fake):
    c0, c1 = fake.retain(0), fake.retain(1)
    order = [random.choice([c0, c1]) for _ in range(random.randint(3, 10))]
    for i, ctx in enumerate(order):
        assert fake.cuCtxPushCurrent(ctx) == SUCCESS
        assert fake.current() == ctx and fake.depth() == i + 1
    for ctx in reversed(order):
        assert fake.pop() == (SUCCESS, ctx)
    assert fake.depth() == 0 and fake.current() is None
    assert fake.cuCtxPushCurrent(c0) == SUCCESS
    assert fake.cuCtxPopCurrent(None) == SUCCESS  # pctx may be NULL
    assert fake.depth() == 0


def test_set_current_replaces_the_top_pushes_if_empty_and_null_pops(fake):
    c0, c1 = fake.retain(0), fake.retain(1)
    assert fake.cuCtxSetCurrent(c0) == SUCCESS and fake.depth() == 1
    assert fake.cuCtxPushCurrent(c0) == SUCCESS
    assert fake.cuCtxSetCurrent(c1) == SUCCESS
    assert fake.depth() == 2 and fake.current() == c1
    assert fake.cuCtxSetCurrent(None) == SUCCESS
    assert fake.depth() == 1 and fake.current() == c0
    assert fake.cuCtxSetCurrent(None) == SUCCESS and fake.depth() == 0
    assert fake.cuCtxSetCurrent(None) == SUCCESS and fake.depth() == 0  # no-op when empty


def test_each_thread_has_its_own_stack(fake):
    c0, c1 = fake.retain(0), fake.retain(1)
    assert fake.cuCtxPushCurrent(c0) == SUCCESS

    def other():
        seen = (fake.depth(), fake.current())
        assert fake.cuCtxPushCurrent(c1) == SUCCESS
        assert fake.cuCtxPushCurrent(c1) == SUCCESS
        return seen, fake.depth(), fake.ctx_device()

    assert in_thread(other) == ((0, None), 2, (SUCCESS, 1))
    assert fake.depth() == 1 and fake.ctx_device() == (SUCCESS, 0)
    assert fake.pop() == (SUCCESS, c0)


def test_the_stack_has_a_depth_limit(fake):
    ctx = fake.retain(0)
    pushed = 0
    while fake.cuCtxPushCurrent(ctx) == SUCCESS:
        pushed += 1
        assert pushed <= 64
    assert pushed == 64 and fake.cuCtxPushCurrent(ctx) == OUT_OF_MEMORY
    for _ in range(pushed):
        assert fake.pop()[0] == SUCCESS


def test_memory_info_is_the_current_devices(fake):
    for dev in (0, 1):
        assert fake.cuCtxPushCurrent(fake.retain(dev)) == SUCCESS
        total = ctypes.c_size_t()
        assert fake.cuDeviceTotalMem(ctypes.byref(total), dev) == SUCCESS
        assert fake.mem_info() == (SUCCESS, total.value, total.value)  # nothing allocated
        assert fake.cuCtxSynchronize() == SUCCESS
        assert fake.pop()[0] == SUCCESS


def test_concurrent_retain_and_release_keep_count(fake):
    rounds = random.randint(100, 300)
    errors = []

    def worker():
        for _ in range(rounds):
            ctx = ctypes.c_void_p()
            if (fake.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 1) != SUCCESS
                    or fake.cuCtxPushCurrent(ctx) != SUCCESS or fake.ctx_device() != (SUCCESS, 1)
                    or fake.pop()[0] != SUCCESS or fake.cuDevicePrimaryCtxRelease(1) != SUCCESS):
                errors.append("failed")

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert fake.live("contexts") == 0
    assert fake.calls("cuDevicePrimaryCtxRetain") == 8 * rounds
    assert fake.calls("cuDevicePrimaryCtxRelease") == 8 * rounds


# ---- streams ----

@contextlib.contextmanager
def gate_closed(fake):
    """Hold the worker back in the block; the gate opens again whatever happens."""
    fake.gate_close()
    try:
        yield
    finally:
        fake.gate_open()


class Background:
    """fn() run on a thread of its own: done() says if it returned, result() joins it."""

    def __init__(self, fn):
        self.box = {}
        self.thread = threading.Thread(target=self._run, args=(fn,), daemon=True)
        self.thread.start()

    def _run(self, fn):
        try:
            self.box["result"] = fn()
        except BaseException as e:  # handed back by result()
            self.box["error"] = e

    def done(self):
        return not self.thread.is_alive()

    def result(self):
        self.thread.join(60)
        assert not self.thread.is_alive(), "thread hung"
        if "error" in self.box:
            raise self.box["error"]
        return self.box["result"]


def test_priority_range_is_an_h100s_and_needs_a_context(fake):
    least, greatest = ctypes.c_int(99), ctypes.c_int(99)
    assert fake.cuCtxGetStreamPriorityRange(ctypes.byref(least), ctypes.byref(greatest)) \
        == INVALID_CONTEXT
    fake.push(random.choice([0, 1]))
    assert fake.cuCtxGetStreamPriorityRange(ctypes.byref(least), ctypes.byref(greatest)) \
        == SUCCESS
    assert (least.value, greatest.value) == (0, -5)
    assert fake.cuCtxGetStreamPriorityRange(None, ctypes.byref(greatest)) == SUCCESS
    assert fake.cuCtxGetStreamPriorityRange(ctypes.byref(least), None) == SUCCESS
    assert fake.cuCtxGetStreamPriorityRange(None, None) == SUCCESS


def test_stream_keeps_its_flags_and_context_and_clamps_its_priority(fake):
    ctx = fake.push(1)
    for priority, expected in [(random.randint(-5, 0),) * 2, (random.randint(1, 10**6), 0),
                               (random.randint(-10**6, -6), -5)]:
        flags = random.choice([0, NON_BLOCKING])
        stream = fake.stream(flags, priority)
        assert fake.stream_info(stream) == (SUCCESS, expected, flags, ctx)
        assert fake.cuStreamDestroy(stream) == SUCCESS


def test_stream_create_rejects_bad_flags_null_and_no_context(fake):
    handle = ctypes.c_void_p()
    assert fake.cuStreamCreateWithPriority(ctypes.byref(handle), 0, 0) == INVALID_CONTEXT
    fake.push(0)
    for flags in (2, random.randint(2, 2**32 - 1)):
        assert fake.cuStreamCreateWithPriority(ctypes.byref(handle), flags, 0) == INVALID_VALUE
    assert fake.cuStreamCreateWithPriority(None, 0, 0) == INVALID_VALUE
    assert handle.value is None and fake.live("streams") == 0


def test_streams_are_counted_and_dead_after_destroy(fake):
    fake.push(0)
    n = random.randint(2, 8)
    streams = [fake.stream() for _ in range(n)]
    assert len(set(streams)) == n and fake.live("streams") == n
    for i, stream in enumerate(streams):
        assert fake.cuStreamDestroy(stream) == SUCCESS
        assert fake.live("streams") == n - i - 1
    stale = random.choice(streams)
    assert fake.cuStreamDestroy(stale) == INVALID_HANDLE
    assert fake.cuStreamQuery(stale) == INVALID_HANDLE
    assert fake.cuStreamSynchronize(stale) == INVALID_HANDLE
    assert fake.stream_info(stale)[0] == INVALID_HANDLE
    assert fake.add_callback(stale, lambda *a: None) == INVALID_HANDLE
    assert fake.stream() not in streams  # addresses are never reused
    bogus = random.randrange(0x1000, 2**40, 16)
    assert fake.cuStreamQuery(bogus) == INVALID_HANDLE


def test_default_stream_handles_name_the_current_context(fake):
    for handle in (STREAM_NULL, STREAM_LEGACY, STREAM_PER_THREAD):
        assert fake.stream_info(handle)[0] == INVALID_CONTEXT
        assert fake.cuStreamQuery(handle) == INVALID_CONTEXT
        assert fake.cuStreamSynchronize(handle) == INVALID_CONTEXT
    c0 = fake.push(0)
    c1 = fake.push(1)
    for handle in (STREAM_NULL, STREAM_LEGACY, STREAM_PER_THREAD):
        assert fake.stream_info(handle) == (SUCCESS, 0, 0, c1)
        assert fake.cuStreamQuery(handle) == SUCCESS
        assert fake.cuStreamSynchronize(handle) == SUCCESS
        assert fake.cuStreamDestroy(handle) == INVALID_HANDLE  # cannot be destroyed
    assert fake.pop() == (SUCCESS, c1)
    assert fake.stream_info(STREAM_LEGACY)[3] == c0


def test_query_is_not_ready_while_the_gate_holds_work_back(fake):
    fake.push(0)
    stream, idle = fake.stream(), fake.stream()
    ran = []
    with gate_closed(fake):
        for handle in (stream, STREAM_NULL, STREAM_PER_THREAD):
            assert fake.add_callback(handle, lambda h, s: ran.append(h)) == SUCCESS
            assert fake.cuStreamQuery(handle) == NOT_READY
        assert fake.pending() == 3 and ran == []
        assert fake.cuStreamQuery(idle) == SUCCESS  # nothing was queued on it
    assert fake.cuCtxSynchronize() == SUCCESS
    assert ran == [stream, None, STREAM_PER_THREAD] and fake.pending() == 0
    for handle in (stream, STREAM_NULL, STREAM_LEGACY, STREAM_PER_THREAD):
        assert fake.cuStreamQuery(handle) == SUCCESS


def test_callbacks_run_on_one_worker_thread_with_the_stream_as_given(fake):
    fake.push(0)
    stream = fake.stream(NON_BLOCKING)
    seen = []
    handles = [random.choice([stream, STREAM_NULL, STREAM_LEGACY, STREAM_PER_THREAD])
               for _ in range(random.randint(3, 10))]
    for handle in handles:
        assert fake.add_callback(
            handle, lambda h, s: seen.append((h, s, threading.get_ident()))) == SUCCESS
    assert fake.cuStreamSynchronize(handles[-1]) == SUCCESS
    assert [(h, s) for h, s, _ in seen] == [(h, SUCCESS) for h in handles]
    threads = {ident for _, _, ident in seen}
    assert len(threads) == 1 and threading.get_ident() not in threads


def test_callback_gets_its_user_data(fake):
    fake.push(0)
    seen = []
    callback = STREAM_CALLBACK(lambda handle, status, data: seen.append(data))
    data = random.randrange(1, 2**40)
    assert fake.cuStreamAddCallback(STREAM_NULL, callback, data, 0) == SUCCESS
    assert fake.cuStreamSynchronize(STREAM_NULL) == SUCCESS
    assert seen == [data]


def test_add_callback_rejects_null_callback_and_flags(fake):
    fake.push(0)
    callback = STREAM_CALLBACK(lambda *a: None)
    assert fake.cuStreamAddCallback(STREAM_NULL, ctypes.cast(None, STREAM_CALLBACK), None,
                                    0) == INVALID_VALUE
    assert fake.cuStreamAddCallback(STREAM_NULL, callback, None,
                                    random.randint(1, 2**32 - 1)) == INVALID_VALUE
    assert fake.pending() == 0


def test_ops_run_in_queue_order_across_streams(fake):
    fake.push(0)
    streams = [fake.stream(), fake.stream(NON_BLOCKING), STREAM_NULL, STREAM_PER_THREAD]
    order, expected = [], []
    with gate_closed(fake):
        for i in range(random.randint(10, 30)):
            stream = random.choice(streams)
            expected.append((i, stream))
            assert fake.add_callback(stream, lambda h, s, i=i: order.append((i, h))) == SUCCESS
        assert fake.pending() == len(expected)
    assert fake.cuCtxSynchronize() == SUCCESS
    assert order == expected


def test_synchronize_waits_for_the_gate_without_holding_the_lock(fake):
    ctx = fake.push(0)
    stream = fake.stream()
    ran = []
    with gate_closed(fake):
        assert fake.add_callback(stream, lambda h, s: ran.append(h)) == SUCCESS

        def sync(call):
            assert fake.cuCtxPushCurrent(ctx) == SUCCESS
            return call(), list(ran)

        waiters = [Background(lambda: sync(lambda: fake.cuStreamSynchronize(stream))),
                   Background(lambda: sync(fake.cuCtxSynchronize))]
        time.sleep(0.02)
        assert not any(w.done() for w in waiters)
        # the waiters hold no lock: other calls go through meanwhile
        assert fake.cuStreamQuery(stream) == NOT_READY
        assert fake.stream_info(stream)[0] == SUCCESS and fake.live("streams") == 1
    assert [w.result() for w in waiters] == [(SUCCESS, [stream])] * 2


def test_destroying_a_stream_lets_its_queued_work_run(fake):
    fake.push(0)
    stream = fake.stream()
    ran = []
    with gate_closed(fake):
        assert fake.add_callback(stream, lambda h, s: ran.append((h, s))) == SUCCESS
        assert fake.cuStreamDestroy(stream) == SUCCESS
        assert fake.live("streams") == 0 and fake.pending() == 1
    assert fake.cuCtxSynchronize() == SUCCESS
    assert ran == [(stream, SUCCESS)]


def test_driver_calls_from_a_callback_are_not_permitted(fake):
    ctx = fake.push(0)
    stream, event = fake.stream(), fake.event()
    results = []

    def callback(handle, status):
        results.extend([fake.cuStreamQuery(handle), fake.cuStreamSynchronize(handle),
                        fake.cuCtxSynchronize(), fake.cuEventQuery(event),
                        fake.cuEventSynchronize(event), fake.cuEventRecord(event, handle),
                        fake.cuCtxPushCurrent(ctx), fake.cuStreamDestroy(handle)])

    assert fake.add_callback(stream, callback) == SUCCESS
    assert fake.cuStreamSynchronize(stream) == SUCCESS
    assert results == [NOT_PERMITTED] * 8
    assert fake.cuStreamDestroy(stream) == SUCCESS  # nothing the callback tried happened


def test_stream_wait_event_queues_behind_earlier_work(fake):
    fake.push(0)
    stream, other, event = fake.stream(), fake.stream(), fake.event()
    assert fake.cuStreamWaitEvent(stream, event, random.randint(2, 2**32 - 1)) == INVALID_VALUE
    assert fake.cuStreamWaitEvent(stream, random.randrange(0x1000, 2**40, 16), 0) \
        == INVALID_HANDLE
    with gate_closed(fake):
        assert fake.cuEventRecord(event, other) == SUCCESS
        assert fake.cuStreamWaitEvent(stream, event, random.choice([0, 1])) == SUCCESS
        assert fake.cuStreamQuery(stream) == NOT_READY and fake.pending() == 2
    assert fake.cuStreamSynchronize(stream) == SUCCESS
    assert fake.cuEventQuery(event) == SUCCESS


def test_an_event_of_another_context_may_be_waited_for(fake):
    fake.push(1)
    event = fake.event()
    fake.push(0)
    assert fake.cuStreamWaitEvent(fake.stream(), event, 0) == SUCCESS
    assert fake.cuCtxSynchronize() == SUCCESS


def test_concurrent_callbacks_and_synchronizes_lose_nothing(fake):
    ctx = fake.push(0)
    rounds = random.randint(20, 60)
    counted = []
    errors = []

    def worker():
        assert fake.cuCtxPushCurrent(ctx) == SUCCESS
        stream = fake.stream()
        for _ in range(rounds):
            if (fake.add_callback(stream, lambda h, s: counted.append(h)) != SUCCESS
                    or random.random() < 0.3 and fake.cuStreamSynchronize(stream) != SUCCESS):
                errors.append("failed")
        if fake.cuStreamSynchronize(stream) != SUCCESS or fake.cuStreamDestroy(stream):
            errors.append("failed")

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == [] and len(counted) == 4 * rounds
    assert fake.pending() == 0 and fake.live("streams") == 0


# ---- events ----

def test_event_create_takes_the_flag_combinations_the_driver_does(fake):
    handle = ctypes.c_void_p()
    assert fake.cuEventCreate(ctypes.byref(handle), 0) == INVALID_CONTEXT
    fake.push(0)
    good = [0, BLOCKING_SYNC, DISABLE_TIMING, BLOCKING_SYNC | DISABLE_TIMING,
            INTERPROCESS | DISABLE_TIMING, INTERPROCESS | DISABLE_TIMING | BLOCKING_SYNC]
    events = [fake.event(flags) for flags in good]
    assert fake.live("events") == len(good)
    for flags in (INTERPROCESS, INTERPROCESS | BLOCKING_SYNC, 8, random.randint(8, 2**32 - 1)):
        assert fake.cuEventCreate(ctypes.byref(handle), flags) == INVALID_VALUE, flags
    assert fake.cuEventCreate(None, 0) == INVALID_VALUE
    for event in events:
        assert fake.cuEventDestroy(event) == SUCCESS
    assert fake.live("events") == 0


def test_destroyed_event_is_invalid_handle(fake):
    fake.push(0)
    event = fake.event()
    assert fake.cuEventDestroy(event) == SUCCESS
    for call in (fake.cuEventDestroy, fake.cuEventQuery, fake.cuEventSynchronize):
        assert call(event) == INVALID_HANDLE
    assert fake.cuEventRecord(event, STREAM_NULL) == INVALID_HANDLE
    assert fake.cuStreamWaitEvent(STREAM_NULL, event, 0) == INVALID_HANDLE
    assert fake.elapsed(event, fake.event())[0] == INVALID_HANDLE
    assert fake.event() != event


def test_event_is_not_ready_until_its_record_runs(fake):
    fake.push(0)
    event = fake.event(random.choice([0, BLOCKING_SYNC, DISABLE_TIMING]))
    assert fake.cuEventQuery(event) == SUCCESS  # never recorded, as the driver
    assert fake.cuEventSynchronize(event) == SUCCESS
    with gate_closed(fake):
        assert fake.cuEventRecord(event, random.choice([STREAM_NULL, fake.stream()])) == SUCCESS
        assert fake.cuEventQuery(event) == NOT_READY
        waiter = Background(lambda: fake.cuEventSynchronize(event))
        time.sleep(0.02)
        assert not waiter.done()
    assert waiter.result() == SUCCESS
    assert fake.cuEventQuery(event) == SUCCESS


def test_elapsed_time_is_measured_when_the_worker_reaches_the_records(fake):
    fake.push(0)
    stream = fake.stream()
    start, end = fake.event(), fake.event(BLOCKING_SYNC)
    pause = random.uniform(0.01, 0.03)
    assert fake.cuEventRecord(start, stream) == SUCCESS
    assert fake.add_callback(stream, lambda h, s: time.sleep(pause)) == SUCCESS
    assert fake.cuEventRecord(end, stream) == SUCCESS
    assert fake.cuEventSynchronize(end) == SUCCESS
    res, ms = fake.elapsed(start, end)
    assert res == SUCCESS and ms >= pause * 1000 * 0.999
    res, back = fake.elapsed(end, start)
    assert res == SUCCESS and back == pytest.approx(-ms)
    assert fake.elapsed(start, start) == (SUCCESS, 0.0)


def test_elapsed_time_errors(fake):
    fake.push(0)
    timed, other, untimed = fake.event(), fake.event(), fake.event(DISABLE_TIMING)
    assert fake.cuEventRecord(timed, STREAM_NULL) == SUCCESS
    assert fake.cuEventRecord(untimed, STREAM_NULL) == SUCCESS
    assert fake.cuCtxSynchronize() == SUCCESS
    assert fake.elapsed(timed, untimed)[0] == INVALID_HANDLE
    assert fake.elapsed(untimed, timed)[0] == INVALID_HANDLE
    assert fake.elapsed(timed, other)[0] == INVALID_HANDLE  # never recorded
    assert fake.elapsed(other, timed)[0] == INVALID_HANDLE
    assert fake.cuEventElapsedTime(None, timed, timed) == INVALID_VALUE
    with gate_closed(fake):
        assert fake.cuEventRecord(other, STREAM_NULL) == SUCCESS
        assert fake.elapsed(timed, other)[0] == NOT_READY
        assert fake.elapsed(other, timed)[0] == NOT_READY
        assert fake.elapsed(untimed, other)[0] == INVALID_HANDLE  # unusable outranks pending
    assert fake.cuEventSynchronize(other) == SUCCESS
    assert fake.elapsed(timed, other)[0] == SUCCESS


def test_recording_again_replaces_the_previous_record(fake):
    fake.push(0)
    first, second = fake.stream(), fake.stream()
    event, mid = fake.event(), fake.event()
    inside, release = threading.Event(), threading.Event()

    def park(handle, status):  # holds the worker between the two records
        inside.set()
        release.wait(30)

    assert fake.cuEventRecord(event, first) == SUCCESS
    assert fake.cuEventSynchronize(event) == SUCCESS
    with gate_closed(fake):
        assert fake.cuEventRecord(event, second) == SUCCESS
        assert fake.cuEventQuery(event) == NOT_READY  # the finished record no longer counts
        assert fake.add_callback(second, park) == SUCCESS
        assert fake.cuEventRecord(mid, second) == SUCCESS
        assert fake.cuEventRecord(event, second) == SUCCESS
    try:
        assert inside.wait(30)
        assert fake.cuEventQuery(event) == NOT_READY  # the replaced record ran: not enough
    finally:
        release.set()
    assert fake.cuEventSynchronize(event) == SUCCESS
    res, ms = fake.elapsed(mid, event)  # stamped by the last record, after `mid`
    assert res == SUCCESS and ms >= 0.0


def test_record_on_a_stream_of_another_context_is_invalid_handle(load):
    fake = load(FAKECUDA_DEVICES="2")
    fake.push(1)
    foreign = fake.stream()
    fake.push(0)
    event = fake.event()
    assert fake.cuEventRecord(event, foreign) == INVALID_HANDLE
    assert fake.pop()[0] == SUCCESS  # device 1's context is current: stream 0 is its
    assert fake.cuEventRecord(event, STREAM_NULL) == INVALID_HANDLE
    assert fake.cuEventRecord(event, STREAM_PER_THREAD) == INVALID_HANDLE
    assert fake.pending() == 0 and fake.cuEventQuery(event) == SUCCESS


# ---- IPC events ----

def test_ipc_event_handle_round_trip_in_one_process(fake):
    fake.push(0)
    stream = fake.stream()
    event = fake.event(INTERPROCESS | DISABLE_TIMING)
    res, handle = fake.ipc_handle(event)
    assert res == SUCCESS and handle.reserved != b"\0" * 64
    res, opened = fake.ipc_open(handle)
    assert res == SUCCESS and opened and opened != event
    assert fake.live("events") == 2
    with gate_closed(fake):
        assert fake.cuEventRecord(event, stream) == SUCCESS
        assert fake.cuEventQuery(opened) == NOT_READY  # the same event underneath
    assert fake.cuEventSynchronize(opened) == SUCCESS
    assert fake.cuEventQuery(opened) == SUCCESS
    assert fake.elapsed(opened, opened)[0] == INVALID_HANDLE  # interprocess: untimed
    assert fake.cuEventDestroy(event) == SUCCESS
    with gate_closed(fake):
        assert fake.cuEventRecord(opened, stream) == SUCCESS  # outlives the original
        assert fake.cuEventQuery(opened) == NOT_READY
    assert fake.cuEventDestroy(opened) == SUCCESS
    assert fake.live("events") == 0
    assert fake.ipc_open(handle)[0] == INVALID_VALUE  # every handle on it is gone


def test_ipc_event_handle_refusals(load):
    fake = load()
    fake.push(0)
    plain = fake.event(random.choice([0, DISABLE_TIMING]))
    assert fake.ipc_handle(plain)[0] == INVALID_VALUE
    assert fake.cuIpcGetEventHandle(None, fake.event(INTERPROCESS | DISABLE_TIMING)) \
        == INVALID_VALUE
    assert fake.ipc_handle(random.randrange(0x1000, 2**40, 16))[0] == INVALID_HANDLE
    res, handle = fake.ipc_handle(fake.event(INTERPROCESS | DISABLE_TIMING))
    assert res == SUCCESS
    assert fake.cuIpcOpenEventHandle(None, handle) == INVALID_VALUE
    garbage = IpcEventHandle(bytes(random.randrange(256) for _ in range(64)))
    assert fake.ipc_open(garbage)[0] == INVALID_VALUE
    other_pid = IpcEventHandle(handle.reserved[:8] + (os.getpid() + 1).to_bytes(8, "little")
                               + handle.reserved[16:])
    assert fake.ipc_open(other_pid)[0] == INVALID_VALUE  # another process's: cannot be shared
    other_copy = load()  # another copy of the fake in this process counts as another process
    other_copy.push(0)
    assert other_copy.ipc_open(handle)[0] == INVALID_VALUE
    assert fake.pop()[0] == SUCCESS
    assert fake.ipc_open(handle)[0] == INVALID_CONTEXT


# ---- contexts take their streams, events and work with them ----

@pytest.mark.parametrize("how", ["reset", "release"])
def test_context_death_kills_its_streams_events_and_queued_work(fake, how):
    ctx = fake.push(0)
    fake.push(1)
    survivor_stream, survivor_event = fake.stream(), fake.event()
    assert fake.pop()[0] == SUCCESS
    streams = [fake.stream() for _ in range(random.randint(1, 4))]
    events = [fake.event() for _ in range(random.randint(1, 4))]
    ran = []
    with gate_closed(fake):
        for stream in streams + [STREAM_NULL, survivor_stream]:
            assert fake.add_callback(stream, lambda h, s: ran.append(h)) == SUCCESS
        assert fake.cuEventRecord(events[0], streams[0]) == SUCCESS
        assert fake.pending() == len(streams) + 3
        if how == "reset":
            assert fake.cuDevicePrimaryCtxReset(0) == SUCCESS
        else:
            assert fake.cuDevicePrimaryCtxRelease(0) == SUCCESS
        assert fake.live("streams") == 1 and fake.live("events") == 1
        assert fake.pending() == 1  # the other context's callback
    assert fake.cuStreamSynchronize(survivor_stream) == SUCCESS
    assert ran == [survivor_stream]
    for stream in streams:
        assert fake.cuStreamQuery(stream) == INVALID_HANDLE
    for event in events:
        assert fake.cuEventQuery(event) == INVALID_HANDLE
    assert fake.current() == ctx and fake.cuStreamQuery(STREAM_NULL) == CONTEXT_IS_DESTROYED
    assert fake.cuEventQuery(survivor_event) == SUCCESS


# A graph with conditional nodes alive across a reset, through gpuhost in a fresh process (a
# crash there fails the test): the bodies are graphs of the context too, yet their node's.
# {order} says whether gpuhost's objects go before the reset or after it.
GRAPH_RESET_CODE = """
import ctypes, gc, os
import gpuhost
lib = ctypes.CDLL(os.environ["GPUHOST_CUDA_DRIVER"])  # the instance gpuhost loaded
lib.fakecuda_live.restype = ctypes.c_long
lib.cuGetProcAddress_v2.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p),
                                    ctypes.c_int, ctypes.c_uint64, ctypes.c_void_p]
pfn = ctypes.c_void_p()
assert lib.cuGetProcAddress_v2(b"cuGraphDestroy", ctypes.byref(pfn), 13000, 1, None) == 0
destroy = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(pfn.value)
live = lambda: (lib.fakecuda_live(b"graphs"), lib.fakecuda_live(b"graph_execs"))
g = gpuhost.Graph()
node, (then, other) = g.add_conditional(g.conditional_handle(default=1), "if", size=2)
inner, (body,) = then.add_conditional(then.conditional_handle(default=0), "while")
body.add_empty()
exe = g.instantiate()
print(destroy(then.handle), destroy(body.handle))  # a body is its node's
print(*live())
handles = [x.handle for x in (g, then, other, body)]
if "{order}" == "collect-first":
    del g, node, then, other, inner, body, exe
    gc.collect()
gpuhost.get_current_device().reset()
print(*live())
if "{order}" == "reset-first":
    del g, node, then, other, inner, body, exe
    gc.collect()
print(*[destroy(h) for h in handles])  # stale now
g = gpuhost.Graph()  # a new context's
g.add_conditional(g.conditional_handle(default=1), "if")
s = gpuhost.stream()
g.launch(s)
s.synchronize()
print(*live())
"""


@pytest.mark.parametrize("order", ["reset-first", "collect-first"])
def test_a_reset_frees_graphs_with_conditional_bodies_once(built_lib, order):
    from conftest import run_python

    proc = run_python(GRAPH_RESET_CODE.replace("{order}", order),
                      env={"GPUHOST_CUDA_DRIVER": built_lib})
    assert proc.returncode == 0, proc.stderr
    invalid = str(INVALID_VALUE)
    assert proc.stdout.split("\n") == [invalid + " " + invalid, "4 1", "0 0",
                                       " ".join([invalid] * 4), "2 1", ""]


def test_synchronize_returns_when_the_context_dies_under_it(fake):
    ctx = fake.push(0)
    stream = fake.stream()
    with gate_closed(fake):
        assert fake.add_callback(stream, lambda h, s: None) == SUCCESS

        def sync():
            assert fake.cuCtxPushCurrent(ctx) == SUCCESS
            return fake.cuStreamSynchronize(stream)

        waiter = Background(sync)
        time.sleep(0.02)
        assert not waiter.done()
        assert fake.cuDevicePrimaryCtxReset(0) == SUCCESS
        assert waiter.result() == CONTEXT_IS_DESTROYED
    assert fake.pending() == 0


def test_ctx_synchronize_waits_only_for_its_own_context(fake):
    c0 = fake.push(0)
    fake.push(1)
    busy = fake.stream()
    assert fake.pop()[0] == SUCCESS
    with gate_closed(fake):
        assert fake.add_callback(busy, lambda h, s: None) == SUCCESS
        assert fake.cuCtxSynchronize() == SUCCESS  # device 0's context has nothing queued
        assert fake.current() == c0 and fake.pending() == 1
    assert fake.cuStreamSynchronize(busy) == SUCCESS


# ---- memory: allocations and accounting ----

def host_view(address, size):
    """A uint8 array over `size` bytes of host memory at `address` (no copy)."""
    return np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(address))


def random_bytes(rng, shape):
    return rng.integers(0, 256, size=shape, dtype=np.uint8)


def test_alloc_counts_against_the_devices_free_memory_and_free_gives_it_back(fake):
    rng = np.random.default_rng()
    fake.push(int(rng.integers(0, 2)))
    _, free, total = fake.mem_info()
    sizes = [int(n) for n in rng.integers(1, 1 << 20, size=int(rng.integers(2, 6)))]
    ptrs = [fake.alloc(n) for n in sizes]
    assert fake.mem_info() == (SUCCESS, free - sum(sizes), total)
    assert fake.live("allocations") == len(sizes) and fake.bytes("allocations") == sum(sizes)
    assert all(p % 512 == 0 for p in ptrs) and len(set(ptrs)) == len(ptrs)
    for p in ptrs:
        assert fake.cuMemFree(p) == SUCCESS
    assert fake.mem_info() == (SUCCESS, free, total)
    assert fake.live("allocations") == 0 and fake.bytes("allocations") == 0


def test_alloc_beyond_free_memory_is_out_of_memory_and_allocates_nothing(fake):
    fake.push(1)
    held = fake.alloc(int(np.random.default_rng().integers(1, 1 << 20)))
    _, free, total = fake.mem_info()
    dptr = c_dptr(12345)
    for size in (free + 1, total, 2**63, 2**64 - 1):
        assert fake.cuMemAlloc(ctypes.byref(dptr), size) == OUT_OF_MEMORY, size
    assert dptr.value == 12345 and fake.mem_info()[1] == free
    assert fake.live("allocations") == 1
    assert fake.cuMemFree(held) == SUCCESS


def test_alloc_argument_errors(fake):
    dptr = c_dptr()
    assert fake.cuMemAlloc(ctypes.byref(dptr), 64) == INVALID_CONTEXT
    fake.push(0)
    assert fake.cuMemAlloc(ctypes.byref(dptr), 0) == INVALID_VALUE  # as the driver
    assert fake.cuMemAlloc(None, 64) == INVALID_VALUE
    assert fake.live("allocations") == 0


@pytest.mark.no_sanitizer("it limits the address space, which ASan's shadow memory fills")
def test_host_memory_running_out_is_out_of_memory(built_lib):
    code = (
        "import ctypes, resource, sys\n"
        "lib = ctypes.CDLL(sys.argv[1])\n"
        "P = ctypes.POINTER\n"
        "lib.cuGetProcAddress_v2.argtypes = [ctypes.c_char_p, P(ctypes.c_void_p), ctypes.c_int,"
        " ctypes.c_uint64, ctypes.c_void_p]\n"
        "lib.fakecuda_live.restype = ctypes.c_long\n"
        "def fn(name, *args):\n"
        "    pfn = ctypes.c_void_p()\n"
        "    assert lib.cuGetProcAddress_v2(name, ctypes.byref(pfn), 13000, 1, None) == 0\n"
        "    return ctypes.CFUNCTYPE(ctypes.c_int, *args)(pfn.value)\n"
        "ctx, d = ctypes.c_void_p(), ctypes.c_uint64()\n"
        "free, total = ctypes.c_size_t(), ctypes.c_size_t()\n"
        "assert fn(b'cuInit', ctypes.c_uint)(0) == 0\n"
        "assert fn(b'cuDevicePrimaryCtxRetain', P(ctypes.c_void_p), ctypes.c_int)"
        "(ctypes.byref(ctx), 0) == 0\n"
        "assert fn(b'cuCtxPushCurrent', ctypes.c_void_p)(ctx) == 0\n"
        "alloc = fn(b'cuMemAlloc', P(ctypes.c_uint64), ctypes.c_size_t)\n"
        "info = fn(b'cuMemGetInfo', P(ctypes.c_size_t), P(ctypes.c_size_t))\n"
        "with open('/proc/self/statm') as f:\n"
        "    vm = int(f.read().split()[0]) * resource.getpagesize()\n"
        "hard = resource.getrlimit(resource.RLIMIT_AS)[1]\n"
        "resource.setrlimit(resource.RLIMIT_AS, (vm + (1 << 30), hard))\n"
        "print(alloc(ctypes.byref(d), 16 << 30))\n"  # the device has it, the host does not
        "assert info(ctypes.byref(free), ctypes.byref(total)) == 0\n"
        "print(free.value == total.value, lib.fakecuda_live(b'allocations'))\n"
        "print(alloc(ctypes.byref(d), 1 << 20), lib.fakecuda_live(b'allocations'))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, built_lib], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:3] == [str(OUT_OF_MEMORY), "True 0", "0 1"]


def test_new_memory_holds_garbage_not_zeros(fake):
    fake.push(0)
    n = int(np.random.default_rng().integers(1, 1 << 16))
    assert (fake.read(fake.alloc(n), n) == GARBAGE).all()
    assert (host_view(fake.managed(n), n) == GARBAGE).all()
    assert (host_view(fake.host_alloc(n), n) == GARBAGE).all()


def test_free_needs_no_context_and_refuses_what_is_not_an_allocation(fake):
    fake.push(0)
    d = fake.alloc(1024)
    p = fake.host_alloc(64)
    assert fake.pop()[0] == SUCCESS
    for bad in (d + 1, d + 512, p, 0, 0x1234):
        assert fake.cuMemFree(bad) == INVALID_VALUE, hex(bad)
    assert fake.cuMemFree(d) == SUCCESS  # no context current: the allocation names its own
    assert fake.cuMemFree(d) == INVALID_VALUE  # twice
    assert fake.cuMemFreeHost(p) == SUCCESS and fake.live("host_allocations") == 0


# ---- memory: copies ----

def test_htod_and_dtoh_round_trip_exactly_at_any_offset(fake):
    rng = np.random.default_rng()
    fake.push(int(rng.integers(0, 2)))
    size = int(rng.integers(2, 1 << 16))
    d = fake.alloc(size)
    data = random_bytes(rng, size)
    assert fake.write(d, data) == SUCCESS
    assert (fake.read(d, size) == data).all()
    off = int(rng.integers(0, size))
    patch = random_bytes(rng, int(rng.integers(1, size - off + 1)))
    assert fake.write(d + off, patch) == SUCCESS
    data[off:off + patch.size] = patch
    assert (fake.read(d, size) == data).all()
    assert (fake.read(d + off, patch.size) == patch).all()


def test_dtod_copies_between_and_within_allocations(fake):
    rng = np.random.default_rng()
    fake.push(0)
    size = int(rng.integers(2, 1 << 14))
    a, b = fake.alloc(size), fake.alloc(size)
    data = random_bytes(rng, size)
    assert fake.write(a, data) == SUCCESS
    assert fake.cuMemcpyDtoD(b, a, size) == SUCCESS
    assert (fake.read(b, size) == data).all()
    half = size // 2
    assert fake.cuMemcpyDtoD(a + size - half, a, half) == SUCCESS
    expected = data.copy()
    expected[size - half:] = data[:half]
    assert (fake.read(a, size) == expected).all()


def test_zero_byte_copies_and_memsets_succeed_and_touch_nothing(fake):
    rng = np.random.default_rng()
    fake.push(0)
    d = fake.alloc(256)
    data = random_bytes(rng, 256)
    assert fake.write(d, data) == SUCCESS
    assert fake.cuMemcpyHtoD(d, None, 0) == SUCCESS
    assert fake.cuMemcpyDtoD(d, d + 1, 0) == SUCCESS
    assert fake.cuMemsetD8(d, 0, 0) == SUCCESS
    assert fake.cuMemsetD2D32(d, 256, 0, 0, 5) == SUCCESS
    assert fake.cuMemcpyHtoDAsync(d, None, 0, STREAM_NULL) == SUCCESS
    assert (fake.read(d, 256) == data).all() and fake.pending() == 0


def test_copies_and_memsets_need_a_context(fake):
    fake.push(0)
    d = fake.alloc(64)
    host = np.zeros(64, np.uint8)
    assert fake.pop()[0] == SUCCESS
    assert fake.cuMemcpyHtoD(d, host.ctypes.data, 64) == INVALID_CONTEXT
    assert fake.cuMemcpyDtoH(host.ctypes.data, d, 64) == INVALID_CONTEXT
    assert fake.cuMemsetD8(d, 1, 64) == INVALID_CONTEXT
    assert fake.cuMemcpyHtoDAsync(d, host.ctypes.data, 64, STREAM_NULL) == INVALID_CONTEXT
    p = Memcpy2D(srcMemoryType=MEM_HOST, srcHost=host.ctypes.data, srcPitch=64,
                 dstMemoryType=MEM_DEVICE, dstDevice=d, dstPitch=64, WidthInBytes=64, Height=1)
    assert fake.cuMemcpy2D(ctypes.byref(p)) == INVALID_CONTEXT
    assert (host == 0).all()


def test_out_of_bounds_copies_and_memsets_are_invalid_value_and_touch_nothing(fake):
    rng = np.random.default_rng()
    fake.push(0)
    size = int(rng.integers(16, 4096))
    a, b = fake.alloc(size), fake.alloc(size)
    data_a, data_b = random_bytes(rng, size), random_bytes(rng, size)
    assert fake.write(a, data_a) == SUCCESS and fake.write(b, data_b) == SUCCESS
    host = random_bytes(rng, 2 * size)
    keep = host.copy()
    k = int(rng.integers(1, size))
    lo, hi = min(a, b), max(a, b)
    results = [
        fake.cuMemcpyHtoD(a, host.ctypes.data, size + 1),
        fake.cuMemcpyHtoD(a + size - k, host.ctypes.data, k + 1),
        fake.cuMemcpyHtoD(a - 1, host.ctypes.data, 1),
        fake.cuMemcpyHtoD(a + size, host.ctypes.data, 1),  # just past the end
        fake.cuMemcpyDtoH(host.ctypes.data, a + k, size - k + 1),
        fake.cuMemcpyDtoD(b, a + 1, size),
        fake.cuMemcpyDtoD(a + k, b, size),
        fake.cuMemsetD8(a + k, 0, size - k + 1),
        fake.cuMemsetD32(a, 0, size // 4 + 1),
        fake.cuMemsetD8(lo + size - 1, 0, hi - lo),  # from the end of one into the next
        fake.cuMemsetD2D8(a, size, 0, 1, 2),  # the second row is past the end
    ]
    assert results == [INVALID_VALUE] * len(results)
    assert (fake.read(a, size) == data_a).all() and (fake.read(b, size) == data_b).all()
    assert (host == keep).all()


def test_use_after_free_is_detected_and_addresses_are_never_reused(fake):
    rng = np.random.default_rng()
    fake.push(0)
    size = int(rng.integers(1, 4096))
    d = fake.alloc(size)
    other = fake.alloc(size)
    host = random_bytes(rng, size)
    keep = host.copy()
    assert fake.cuMemFree(d) == SUCCESS
    assert fake.write(d, host) == INVALID_VALUE
    assert fake.cuMemcpyDtoH(host.ctypes.data, d, size) == INVALID_VALUE
    assert fake.cuMemcpyDtoD(other, d, size) == INVALID_VALUE
    assert fake.cuMemcpyHtoD(other, d, size) == INVALID_VALUE  # a dead device address as host
    assert fake.cuMemsetD8(d, 0, 1) == INVALID_VALUE
    assert (host == keep).all()
    later = [fake.alloc(size) for _ in range(16)]
    assert all(not d <= p < d + size for p in later)


def test_device_addresses_are_not_host_memory(fake):
    fake.push(0)
    d = fake.alloc(4096)
    with open("/proc/self/maps") as f:
        spans = [line.split() for line in f]
    perms = [fields[1] for fields in spans
             if int(fields[0].split("-")[0], 16) <= d < int(fields[0].split("-")[1], 16)]
    assert perms and perms[0].startswith("---")  # reserved, inaccessible
    host = np.zeros(16, np.uint8)
    assert fake.cuMemcpyHtoD(d, d + 16, 16) == INVALID_VALUE  # a device address as host source
    assert fake.cuMemcpyDtoH(d + 16, d, 16) == INVALID_VALUE  # ... and as host destination
    assert fake.cuMemcpyHtoD(d, None, 16) == INVALID_VALUE
    assert fake.cuMemcpyDtoH(None, d, 16) == INVALID_VALUE
    assert fake.cuMemcpyDtoH(host.ctypes.data, d, 16) == SUCCESS


def make_2d(src, dst, width, height):
    """A CUDA_MEMCPY2D from (memory type, address, x, y, pitch) for each side."""
    p = Memcpy2D(WidthInBytes=width, Height=height)
    for prefix, (mtype, address, x, y, pitch) in (("src", src), ("dst", dst)):
        setattr(p, prefix + "MemoryType", mtype)
        setattr(p, prefix + ("Host" if mtype == MEM_HOST else "Device"), address)
        setattr(p, prefix + "XInBytes", x)
        setattr(p, prefix + "Y", y)
        setattr(p, prefix + "Pitch", pitch)
    return p


def make_3d(src, dst, width, height, depth):
    """A CUDA_MEMCPY3D from (memory type, address, x, y, z, pitch, height) for each side."""
    p = Memcpy3D(WidthInBytes=width, Height=height, Depth=depth)
    for prefix, (mtype, address, x, y, z, pitch, rows) in (("src", src), ("dst", dst)):
        setattr(p, prefix + "MemoryType", mtype)
        setattr(p, prefix + ("Host" if mtype == MEM_HOST else "Device"), address)
        setattr(p, prefix + "XInBytes", x)
        setattr(p, prefix + "Y", y)
        setattr(p, prefix + "Z", z)
        setattr(p, prefix + "Pitch", pitch)
        setattr(p, prefix + "Height", rows)
    return p


@pytest.mark.parametrize("device_type", [MEM_DEVICE, MEM_UNIFIED])
def test_2d_copies_match_a_numpy_reference(fake, device_type):
    rng = np.random.default_rng()
    fake.push(0)
    for _ in range(12):
        w, h = (int(v) for v in rng.integers(1, 48, size=2))
        sx, sy, dx, dy, bx, by = (int(v) for v in rng.integers(0, 12, size=6))
        spitch, dpitch, bpitch = (x + w + int(rng.integers(0, 24)) for x in (sx, dx, bx))
        src = random_bytes(rng, (sy + h + int(rng.integers(0, 3)), spitch))
        rows = dy + h
        dev_size = (rows - 1) * dpitch + dx + w  # exactly what the copy spans: no last pitch
        d = fake.alloc(dev_size)
        p = make_2d((MEM_HOST, src.ctypes.data, sx, sy, spitch), (device_type, d, dx, dy, dpitch),
                    w, h)
        assert fake.cuMemcpy2D(ctypes.byref(p)) == SUCCESS
        expected = np.full(rows * dpitch, GARBAGE, np.uint8)
        expected.reshape(rows, dpitch)[dy:, dx:dx + w] = src[sy:sy + h, sx:sx + w]
        assert (fake.read(d, dev_size) == expected[:dev_size]).all()
        back = random_bytes(rng, (by + h + int(rng.integers(0, 3)), bpitch))
        want = back.copy()
        want[by:by + h, bx:bx + w] = src[sy:sy + h, sx:sx + w]
        p = make_2d((device_type, d, dx, dy, dpitch), (MEM_HOST, back.ctypes.data, bx, by, bpitch),
                    w, h)
        assert fake.cuMemcpy2D(ctypes.byref(p)) == SUCCESS
        assert (back == want).all()
        assert fake.cuMemFree(d) == SUCCESS


def test_2d_device_rows_must_lie_inside_one_allocation(fake):
    rng = np.random.default_rng()
    fake.push(0)
    w, h, pitch = 24, int(rng.integers(2, 9)), 40
    src = random_bytes(rng, h * pitch)
    short = fake.alloc((h - 1) * pitch + w - 1)  # the last row misses one byte
    p = make_2d((MEM_HOST, src.ctypes.data, 0, 0, pitch), (MEM_DEVICE, short, 0, 0, pitch), w, h)
    assert fake.cuMemcpy2D(ctypes.byref(p)) == INVALID_VALUE
    assert (fake.read(short, (h - 1) * pitch + w - 1) == GARBAGE).all()
    p.dstDevice = fake.alloc(pitch * h)
    p.dstY = 1  # one row down: the last row falls off the end
    assert fake.cuMemcpy2D(ctypes.byref(p)) == INVALID_VALUE
    p.dstY = 0
    assert fake.cuMemcpy2D(ctypes.byref(p)) == SUCCESS


def test_3d_copies_match_a_numpy_reference(fake):
    rng = np.random.default_rng()
    fake.push(1)

    def geometry(w, h, depth):
        x, y, z = (int(v) for v in rng.integers(0, 5, size=3))
        pitch, height = x + w + int(rng.integers(0, 9)), y + h + int(rng.integers(0, 3))
        return x, y, z, pitch, height, z + depth + int(rng.integers(0, 2))

    for _ in range(8):
        w, h, depth = int(rng.integers(1, 24)), int(rng.integers(1, 7)), int(rng.integers(1, 5))
        sx, sy, sz, spitch, sheight, sslices = geometry(w, h, depth)
        src = random_bytes(rng, (sslices, sheight, spitch))
        region = src[sz:sz + depth, sy:sy + h, sx:sx + w]
        dx, dy, dz, dpitch, dheight, dslices = geometry(w, h, depth)
        d = fake.alloc(dslices * dheight * dpitch)
        p = make_3d((MEM_HOST, src.ctypes.data, sx, sy, sz, spitch, sheight),
                    (MEM_DEVICE, d, dx, dy, dz, dpitch, dheight), w, h, depth)
        assert fake.cuMemcpy3D(ctypes.byref(p)) == SUCCESS
        expected = np.full((dslices, dheight, dpitch), GARBAGE, np.uint8)
        expected[dz:dz + depth, dy:dy + h, dx:dx + w] = region
        assert (fake.read(d, expected.size).reshape(expected.shape) == expected).all()
        # device to device with another geometry, then back to the host as a unified pointer
        ex, ey, ez, epitch, eheight, eslices = geometry(w, h, depth)
        e = fake.alloc(eslices * eheight * epitch)
        p = make_3d((MEM_DEVICE, d, dx, dy, dz, dpitch, dheight),
                    (MEM_DEVICE, e, ex, ey, ez, epitch, eheight), w, h, depth)
        assert fake.cuMemcpy3D(ctypes.byref(p)) == SUCCESS
        bx, by, bz, bpitch, bheight, bslices = geometry(w, h, depth)
        back = random_bytes(rng, (bslices, bheight, bpitch))
        want = back.copy()
        want[bz:bz + depth, by:by + h, bx:bx + w] = region
        p = make_3d((MEM_UNIFIED, e, ex, ey, ez, epitch, eheight),
                    (MEM_UNIFIED, back.ctypes.data, bx, by, bz, bpitch, bheight), w, h, depth)
        assert fake.cuMemcpy3D(ctypes.byref(p)) == SUCCESS
        assert (back == want).all()


def test_2d_and_3d_copy_parameter_errors(fake):
    rng = np.random.default_rng()
    fake.push(0)
    d = fake.alloc(4096)
    host = random_bytes(rng, 4096)

    def copy_2d(**changes):
        p = make_2d((MEM_HOST, host.ctypes.data, 0, 0, 64), (MEM_DEVICE, d, 0, 0, 64), 64, 8)
        for name, value in changes.items():
            setattr(p, name, value)
        return fake.cuMemcpy2D(ctypes.byref(p))

    def copy_3d(**changes):
        p = make_3d((MEM_HOST, host.ctypes.data, 0, 0, 0, 64, 8),
                    (MEM_DEVICE, d, 0, 0, 0, 64, 8), 64, 8, 2)
        for name, value in changes.items():
            setattr(p, name, value)
        return fake.cuMemcpy3D(ctypes.byref(p))

    assert copy_2d() == SUCCESS and copy_3d() == SUCCESS
    assert copy_2d(srcPitch=63) == INVALID_VALUE  # pitch < width
    assert copy_2d(dstXInBytes=1) == INVALID_VALUE  # pitch < x + width
    assert copy_2d(srcMemoryType=MEM_ARRAY) == NOT_SUPPORTED
    assert copy_2d(dstMemoryType=MEM_ARRAY) == NOT_SUPPORTED
    assert copy_2d(dstMemoryType=99) == INVALID_VALUE
    assert copy_2d(srcHost=None) == INVALID_VALUE
    assert copy_2d(dstMemoryType=MEM_HOST, dstHost=d) == INVALID_VALUE  # device address as host
    assert copy_2d(dstDevice=d + 4096 - 511) == INVALID_VALUE  # the last row ends past it
    assert copy_2d(WidthInBytes=0) == SUCCESS and copy_2d(Height=0) == SUCCESS
    assert copy_3d(srcLOD=1) == INVALID_VALUE and copy_3d(dstLOD=1) == INVALID_VALUE
    assert copy_3d(reserved0=1) == INVALID_VALUE and copy_3d(reserved1=1) == INVALID_VALUE
    assert copy_3d(dstHeight=7) == INVALID_VALUE  # slices would overlap
    assert copy_3d(Depth=1, srcHeight=0, dstHeight=0) == SUCCESS  # height unused for one slice
    assert copy_3d(Depth=1, srcZ=1, srcHeight=0) == INVALID_VALUE
    assert copy_3d(dstZ=7) == INVALID_VALUE  # past the allocation
    assert copy_3d(srcMemoryType=MEM_ARRAY) == NOT_SUPPORTED
    assert fake.cuMemcpy2D(None) == INVALID_VALUE and fake.cuMemcpy3D(None) == INVALID_VALUE
    assert fake.cuMemcpy2DAsync(None, STREAM_NULL) == INVALID_VALUE


# ---- memory: memsets ----

MEMSET = {1: "cuMemsetD8", 2: "cuMemsetD16", 4: "cuMemsetD32"}
MEMSET_2D = {1: "cuMemsetD2D8", 2: "cuMemsetD2D16", 4: "cuMemsetD2D32"}


@pytest.mark.parametrize("elem", [1, 2, 4])
def test_memsets_set_exactly_their_elements(fake, elem):
    rng = np.random.default_rng()
    fake.push(0)
    size = 4 * int(rng.integers(4, 1024))
    d = fake.alloc(size)
    data = random_bytes(rng, size)
    assert fake.write(d, data) == SUCCESS
    count = int(rng.integers(1, size // elem - 1))
    start = elem * int(rng.integers(0, size // elem - count + 1))
    value = int(rng.integers(0, 256**elem))
    assert getattr(fake, MEMSET[elem])(d + start, value, count) == SUCCESS
    data[start:start + count * elem] = np.full(count, value, "<u%d" % elem).view(np.uint8)
    assert (fake.read(d, size) == data).all()
    if elem > 1:
        assert getattr(fake, MEMSET[elem])(d + 1, value, 1) == INVALID_VALUE  # misaligned
        assert (fake.read(d, size) == data).all()


@pytest.mark.parametrize("elem", [1, 2, 4])
def test_2d_memsets_set_each_row_and_leave_the_gaps(fake, elem):
    rng = np.random.default_rng()
    fake.push(1)
    width, height = int(rng.integers(1, 17)), int(rng.integers(2, 9))
    pitch = elem * (width + int(rng.integers(0, 9)))
    offset = elem * int(rng.integers(0, 5))
    size = offset + pitch * height + int(rng.integers(0, 9))
    d = fake.alloc(size)
    data = random_bytes(rng, size)
    assert fake.write(d, data) == SUCCESS
    value = int(rng.integers(0, 256**elem))
    fn = getattr(fake, MEMSET_2D[elem])
    assert fn(d + offset, pitch, value, width, height) == SUCCESS
    row = np.full(width, value, "<u%d" % elem).view(np.uint8)
    for r in range(height):
        data[offset + r * pitch:offset + r * pitch + width * elem] = row
    assert (fake.read(d, size) == data).all()
    assert fn(d + offset, width * elem - 1, value, width, 2) == INVALID_VALUE  # rows overlap
    assert fn(d + offset, pitch, value, width, size // pitch + 2) == INVALID_VALUE  # past end
    if elem > 1:
        assert fn(d + offset, pitch + 1, value, width, 2) == INVALID_VALUE  # rows misaligned
        assert fn(d + offset + 1, pitch, value, width, 1) == INVALID_VALUE
    assert fn(d + offset, 0, value, width, 1) == SUCCESS  # one row: the pitch is unused
    assert (fake.read(d, size) == data).all()


# ---- memory: asynchronous work ----

def host_buffer(fake, kind, size, keep):
    """`size` bytes of host memory of `kind` (pinned, registered, managed, pageable); its
    address.  Registered and pageable buffers are numpy arrays appended to `keep`."""
    if kind == "pinned":
        return fake.host_alloc(size)
    if kind == "managed":
        return fake.managed(size)
    array = np.empty(size, np.uint8)
    keep.append(array)
    if kind == "registered":
        assert fake.cuMemHostRegister(array.ctypes.data, size, 0) == SUCCESS
    return array.ctypes.data


@pytest.mark.parametrize("kind", ["pinned", "registered", "managed"])
def test_async_copies_with_pinned_memory_wait_in_their_stream(fake, kind):
    rng = np.random.default_rng()
    fake.push(0)
    stream, keep = fake.stream(), []
    n = int(rng.integers(1, 1 << 16))
    d, e = fake.alloc(n), fake.alloc(n)
    src, dst = host_buffer(fake, kind, n, keep), host_buffer(fake, kind, n, keep)
    data = random_bytes(rng, n)
    host_view(src, n)[:] = data
    before = host_view(dst, n).copy()
    with gate_closed(fake):
        assert fake.cuMemcpyHtoDAsync(d, src, n, stream) == SUCCESS
        assert fake.cuMemcpyDtoDAsync(e, d, n, stream) == SUCCESS
        assert fake.cuMemcpyDtoHAsync(dst, e, n, stream) == SUCCESS
        assert fake.pending() == 3 and fake.cuStreamQuery(stream) == NOT_READY
        assert (host_view(dst, n) == before).all()
    assert fake.cuStreamSynchronize(stream) == SUCCESS
    assert (host_view(dst, n) == data).all()


def test_async_copies_from_pageable_memory_are_done_at_return(fake):
    rng = np.random.default_rng()
    fake.push(0)
    stream = random.choice([fake.stream(), STREAM_NULL, STREAM_PER_THREAD])
    n = int(rng.integers(1, 1 << 16))
    d = fake.alloc(n)
    data, out = random_bytes(rng, n), random_bytes(rng, n)
    with gate_closed(fake):
        assert fake.cuMemcpyHtoDAsync(d, data.ctypes.data, n, stream) == SUCCESS
        assert fake.cuMemcpyDtoHAsync(out.ctypes.data, d, n, stream) == SUCCESS
        assert fake.pending() == 0 and (out == data).all()
        back = random_bytes(rng, (2, n))
        p = make_2d((MEM_DEVICE, d, 0, 0, n), (MEM_HOST, back.ctypes.data, 0, 1, n), n, 1)
        assert fake.cuMemcpy2DAsync(ctypes.byref(p), stream) == SUCCESS
        assert fake.pending() == 0 and (back[1] == data).all()


def test_a_pageable_async_copy_waits_for_its_streams_earlier_work(fake):
    rng = np.random.default_rng()
    fake.push(0)
    stream = fake.stream()
    d = fake.alloc(64)
    data = random_bytes(rng, 64)
    order = []
    with gate_closed(fake):
        assert fake.add_callback(stream, lambda h, s: order.append("callback")) == SUCCESS

        def copy():
            res = fake.cuMemcpyHtoDAsync(d, data.ctypes.data, 64, stream)
            order.append("copy")
            return res

        copier = Background(copy)
        time.sleep(0.02)
        assert not copier.done()
    assert copier.result() == SUCCESS and order == ["callback", "copy"]


def test_synchronous_copies_wait_for_blocking_streams_not_non_blocking_ones(fake):
    rng = np.random.default_rng()
    ctx = fake.push(0)
    blocking, non_blocking = fake.stream(), fake.stream(NON_BLOCKING)
    d = fake.alloc(64)
    data = random_bytes(rng, 64)
    with gate_closed(fake):
        assert fake.add_callback(non_blocking, lambda h, s: None) == SUCCESS
        assert fake.write_pinned(d, data) == SUCCESS  # the legacy stream does not wait for it
        assert fake.cuMemsetD8(d, 7, 1) == SUCCESS
        assert fake.add_callback(blocking, lambda h, s: None) == SUCCESS

        def write():
            assert fake.cuCtxPushCurrent(ctx) == SUCCESS
            return fake.write_pinned(d, data)

        writer = Background(write)
        time.sleep(0.02)
        assert not writer.done()
    assert writer.result() == SUCCESS and fake.pending() == 0
    assert (fake.read(d, 64) == data).all()


def test_a_synchronous_copy_from_pageable_memory_returns_once_staged(fake):
    """As the driver documents cuMemcpyHtoD from pageable memory: it waits for the legacy
    stream, stages the bytes and returns; the device write follows on the legacy stream, so
    a non-blocking stream may read the old bytes, and a synchronous call waits for it."""
    rng = np.random.default_rng()
    ctx = fake.push(0)
    non_blocking = fake.stream(NON_BLOCKING)
    rows = int(rng.integers(1, 4))
    d = fake.alloc(64 * rows)
    old, data = random_bytes(rng, 64 * rows), random_bytes(rng, (rows, 96))
    assert fake.write_pinned(d, old) == SUCCESS
    before = fake.read(d, 64 * rows)
    sent = data[:, :64].copy()
    with gate_closed(fake):
        if rows == 1:
            assert fake.write(d, data[0, :64].copy()) == SUCCESS
        else:  # rows of a wider host array: cuMemcpy2D
            p = make_2d((MEM_HOST, data.ctypes.data, 0, 0, 96), (MEM_DEVICE, d, 0, 0, 64), 64, rows)
            assert fake.cuMemcpy2D(ctypes.byref(p)) == SUCCESS
        data[:] = 0  # staged: the caller's buffer is free again
        assert fake.pending() == 1
        out = np.empty(64 * rows, np.uint8)
        assert fake.cuMemcpyDtoHAsync(out.ctypes.data, d, out.nbytes, non_blocking) == SUCCESS
        assert (out == before).all()

        def read():
            assert fake.cuCtxPushCurrent(ctx) == SUCCESS
            return fake.read(d, 64 * rows)

        reader = Background(read)
        time.sleep(0.02)
        assert not reader.done()  # a synchronous read waits for the legacy stream
    got = reader.result()
    assert fake.pending() == 0
    assert (got.reshape(rows, 64) == sent).all()


def test_async_memsets_run_in_stream_order(fake):
    rng = np.random.default_rng()
    fake.push(0)
    stream = fake.stream()
    size = 4 * int(rng.integers(16, 256))
    d = fake.alloc(size)
    out = fake.host_alloc(size)
    values = [int(rng.integers(0, 256**e)) for e in (1, 2, 4, 1, 2, 4)]
    with gate_closed(fake):
        assert fake.cuMemsetD32Async(d, values[2], size // 4, stream) == SUCCESS
        assert fake.cuMemsetD16Async(d + 4, values[1], 4, stream) == SUCCESS
        assert fake.cuMemsetD8Async(d + 1, values[0], 2, stream) == SUCCESS
        assert fake.cuMemsetD2D8Async(d + 16, 8, values[3], 2, 3, stream) == SUCCESS
        assert fake.cuMemsetD2D16Async(d + 18, 8, values[4], 1, 3, stream) == SUCCESS
        assert fake.cuMemsetD2D32Async(d + 20, 8, values[5], 1, 3, stream) == SUCCESS
        assert fake.cuMemcpyDtoHAsync(out, d, size, stream) == SUCCESS
        assert fake.pending() == 7 and (host_view(out, size) == GARBAGE).all()
    assert fake.cuStreamSynchronize(stream) == SUCCESS
    want = np.full(size // 4, values[2], "<u4").view(np.uint8).copy()
    want[4:12] = np.full(4, values[1], "<u2").view(np.uint8)
    want[1:3] = values[0]
    for r in range(3):
        want[16 + 8 * r:18 + 8 * r] = values[3]
        want[18 + 8 * r:20 + 8 * r] = np.array([values[4]], "<u2").view(np.uint8)
        want[20 + 8 * r:24 + 8 * r] = np.array([values[5]], "<u4").view(np.uint8)
    assert (host_view(out, size) == want).all()


def test_async_ops_check_their_ranges_when_queued(fake):
    fake.push(0)
    stream = fake.stream()
    n = 256
    d, pinned = fake.alloc(n), fake.host_alloc(n + 1)
    with gate_closed(fake):
        assert fake.cuMemcpyHtoDAsync(d + 1, pinned, n, stream) == INVALID_VALUE
        assert fake.cuMemcpyDtoHAsync(pinned, d, n + 1, stream) == INVALID_VALUE
        assert fake.cuMemcpyDtoDAsync(d, d + n, 1, stream) == INVALID_VALUE
        assert fake.cuMemsetD8Async(d, 0, n + 1, stream) == INVALID_VALUE
        assert fake.cuMemsetD32Async(d + 2, 0, 1, stream) == INVALID_VALUE
        p = make_3d((MEM_HOST, pinned, 0, 0, 0, 16, 4), (MEM_DEVICE, d, 0, 0, 0, 16, 4), 16, 4,
                    5)
        assert fake.cuMemcpy3DAsync(ctypes.byref(p), stream) == INVALID_VALUE
        assert fake.pending() == 0
        assert fake.cuMemcpyHtoDAsync(d, pinned, n, 0xDEAD0) == INVALID_HANDLE
    assert (fake.read(d, n) == GARBAGE).all()


def test_queued_copies_are_dropped_when_their_context_dies(fake):
    rng = np.random.default_rng()
    fake.push(0)
    stream = fake.stream()
    n = int(rng.integers(1, 4096))
    d = fake.alloc(n)
    assert fake.write_pinned(d, random_bytes(rng, n)) == SUCCESS
    target = random_bytes(rng, n)
    keep = target.copy()
    assert fake.cuMemHostRegister(target.ctypes.data, n, 0) == SUCCESS
    with gate_closed(fake):
        assert fake.cuMemcpyDtoHAsync(target.ctypes.data, d, n, stream) == SUCCESS
        assert fake.pending() == 1
        assert fake.cuDevicePrimaryCtxReset(0) == SUCCESS
        assert fake.pending() == 0
    assert (target == keep).all()
    assert fake.live("allocations") == 0 and fake.live("registrations") == 0


def test_memory_freed_while_a_copy_is_queued_lives_until_the_copy_ran(fake):
    rng = np.random.default_rng()
    fake.push(0)
    stream = fake.stream()
    n = int(rng.integers(1, 1 << 16))
    d, p = fake.alloc(n), fake.host_alloc(n)
    host_view(p, n)[:] = random_bytes(rng, n)
    total = fake.mem_info()[2]
    with gate_closed(fake):
        assert fake.cuMemcpyHtoDAsync(d, p, n, stream) == SUCCESS
        assert fake.cuMemcpyDtoHAsync(p, d, n, stream) == SUCCESS
        assert fake.cuMemFree(d) == SUCCESS and fake.cuMemFreeHost(p) == SUCCESS
        assert fake.live("allocations") == 0 and fake.live("host_allocations") == 0
        assert fake.mem_info()[1] == total
        assert fake.cuMemsetD8(d, 0, n) == INVALID_VALUE
        assert fake.pending() == 2
    assert fake.cuStreamSynchronize(stream) == SUCCESS


def is_mapped(address):
    """Whether `address` lies in a mapping of this process (/proc/self/maps)."""
    with open("/proc/self/maps") as f:
        for line in f:
            low, high = (int(end, 16) for end in line.split()[0].split("-"))
            if low <= address < high:
                return True
    return False


def test_work_dropped_by_an_invalidated_capture_lets_go_of_its_memory_once(fake):
    """Work queued on a stream whose capture is invalidated is dropped, and the hold it took
    on its memory goes with it, once: the memory stays its allocation's."""
    fake.push(0)
    stream = fake.stream()
    size = 4096
    pinned, d = fake.host_alloc(size), fake.alloc(size)
    assert fake.cuStreamBeginCapture(stream, CAPTURE_MODE_RELAXED) == SUCCESS
    assert fake.add_callback(stream, lambda *_: None) == CAPTURE_UNSUPPORTED  # invalidates it
    for _ in range(3):
        assert fake.cuMemsetD8Async(pinned, 1, 16, stream) == CAPTURE_INVALIDATED
        assert is_mapped(pinned)  # a second release would have unmapped it
        assert fake.cuMemsetD8Async(d, 1, 16, stream) == CAPTURE_INVALIDATED
    graph = ctypes.c_void_p()
    assert fake.cuStreamEndCapture(stream, ctypes.byref(graph)) == CAPTURE_INVALIDATED
    data = np.random.default_rng().integers(0, 256, size, np.uint8)
    ctypes.memmove(pinned, data.ctypes.data, size)
    assert fake.write(d, data) == SUCCESS and (fake.read(d, size) == data).all()
    assert (host_view(pinned, size) == data).all()
    assert fake.cuMemFreeHost(pinned) == SUCCESS and fake.cuMemFree(d) == SUCCESS
    assert fake.live("allocations") == 0 and fake.live("host_allocations") == 0


# ---- memory: pinned, registered, managed ----

def test_pinned_memory_is_host_memory_with_a_device_pointer_only_when_mapped(fake):
    rng = np.random.default_rng()
    p = ctypes.c_void_p()
    assert fake.cuMemHostAlloc(ctypes.byref(p), 64, 0) == INVALID_CONTEXT
    fake.push(0)
    n = int(rng.integers(1, 1 << 14))
    plain = fake.host_alloc(n, HOSTALLOC_PORTABLE)
    mapped = fake.host_alloc(n, HOSTALLOC_DEVICEMAP | HOSTALLOC_WRITECOMBINED)
    assert fake.live("host_allocations") == 2 and fake.bytes("host_allocations") == 2 * n
    assert fake.live("allocations") == 0 and fake.mem_info()[1] == fake.mem_info()[2]
    data = random_bytes(rng, n)
    host_view(plain, n)[:] = data  # the caller writes it directly
    assert fake.device_pointer(mapped) == (SUCCESS, mapped)
    assert fake.device_pointer(mapped + n - 1) == (SUCCESS, mapped + n - 1)
    assert fake.device_pointer(plain)[0] == INVALID_VALUE
    assert fake.cuMemHostGetDevicePointer(ctypes.byref(c_dptr()), mapped, 1) == INVALID_VALUE
    assert fake.device_pointer(data.ctypes.data)[0] == INVALID_VALUE
    # with unified addressing a pinned range is a valid device side of a copy or memset
    d = fake.alloc(n)
    assert fake.cuMemcpyDtoD(d, plain, n) == SUCCESS and (fake.read(d, n) == data).all()
    assert fake.cuMemsetD8(mapped, 7, n) == SUCCESS and (host_view(mapped, n) == 7).all()
    assert fake.device_pointer(d)[0] == INVALID_VALUE
    assert fake.cuMemHostAlloc(ctypes.byref(p), n, 8) == INVALID_VALUE
    assert fake.cuMemHostAlloc(ctypes.byref(p), 0, 0) == INVALID_VALUE
    assert fake.cuMemHostAlloc(None, n, 0) == INVALID_VALUE
    for bad in (data.ctypes.data, plain + 1, d):
        assert fake.cuMemFreeHost(bad) == INVALID_VALUE
    assert fake.cuMemFreeHost(plain) == SUCCESS and fake.cuMemFreeHost(mapped) == SUCCESS
    assert fake.cuMemFreeHost(plain) == INVALID_VALUE
    assert fake.live("host_allocations") == 0 and fake.bytes("host_allocations") == 0


def test_registered_memory_is_the_callers_and_cannot_overlap(fake):
    rng = np.random.default_rng()
    fake.push(0)
    n = int(rng.integers(64, 4096))
    buf = random_bytes(rng, n + 64)
    p = buf.ctypes.data + 16
    assert fake.cuMemHostRegister(p, n, REGISTER_DEVICEMAP | REGISTER_PORTABLE) == SUCCESS
    assert fake.live("registrations") == 1 and fake.bytes("registrations") == n
    assert fake.device_pointer(p + 5) == (SUCCESS, p + 5)
    d = fake.alloc(n)
    assert fake.cuMemcpyDtoD(d, p, n) == SUCCESS  # a device address too
    assert (fake.read(d, n) == buf[16:16 + n]).all()
    pinned = fake.host_alloc(64)
    for addr, size in ((p + n - 1, 2), (buf.ctypes.data, 17), (p + 1, 1), (pinned + 8, 8)):
        assert fake.cuMemHostRegister(addr, size, 0) == ALREADY_REGISTERED
    assert fake.cuMemHostRegister(p + n, 8, 0) == SUCCESS  # adjacent is fine
    assert fake.device_pointer(p + n)[0] == INVALID_VALUE  # registered without DEVICEMAP
    assert fake.cuMemHostUnregister(p + n) == SUCCESS
    assert fake.cuMemHostRegister(d, 8, 0) == INVALID_VALUE  # not host memory
    assert fake.cuMemHostRegister(buf.ctypes.data, 8, REGISTER_IOMEMORY) == INVALID_VALUE
    assert fake.cuMemHostRegister(buf.ctypes.data, 8, 0x100) == INVALID_VALUE
    assert fake.cuMemHostRegister(None, 8, 0) == INVALID_VALUE
    assert fake.cuMemHostRegister(buf.ctypes.data, 0, 0) == INVALID_VALUE
    for bad in (p + 1, pinned, buf.ctypes.data):
        assert fake.cuMemHostUnregister(bad) == NOT_REGISTERED
    assert fake.cuMemHostUnregister(None) == INVALID_VALUE
    assert fake.cuMemHostUnregister(p) == SUCCESS
    assert fake.cuMemHostUnregister(p) == NOT_REGISTERED
    assert fake.live("registrations") == 0 and fake.bytes("registrations") == 0


def test_read_only_registered_memory_is_never_written(fake):
    rng = np.random.default_rng()
    fake.push(0)
    n = int(rng.integers(64, 4096))
    buf = random_bytes(rng, n + 32)
    keep = buf.copy()
    p = buf.ctypes.data + 16
    assert fake.cuMemHostRegister(p, n, REGISTER_READ_ONLY) == SUCCESS
    d = fake.alloc(n + 32)
    assert fake.cuMemcpyHtoD(d, p, n) == SUCCESS and (fake.read(d, n) == keep[16:16 + n]).all()
    assert fake.cuMemcpyDtoH(p, d, n) == INVALID_VALUE
    assert fake.cuMemcpyDtoH(buf.ctypes.data, d, 17) == INVALID_VALUE  # overlaps its start
    assert fake.cuMemsetD8(p, 0, 1) == INVALID_VALUE
    assert (buf == keep).all()


def test_managed_memory_is_host_memory_at_its_device_address(fake):
    rng = np.random.default_rng()
    fake.push(1)
    _, free, _ = fake.mem_info()
    n = int(rng.integers(1, 1 << 14))
    m, h = fake.managed(n, ATTACH_GLOBAL), fake.managed(n, ATTACH_HOST)
    assert fake.live("allocations") == 2 and fake.bytes("allocations") == 2 * n
    assert fake.mem_info()[1] == free  # not counted as device memory used
    data = random_bytes(rng, n)
    host_view(m, n)[:] = data
    assert (fake.read(m, n) == data).all()
    assert fake.cuMemcpyDtoD(h, m, n) == SUCCESS and (host_view(h, n) == data).all()
    assert fake.pointer_attr("IS_MANAGED", m) == (SUCCESS, 1)
    assert fake.pointer_attr("MEMORY_TYPE", m) == (SUCCESS, MEM_DEVICE)
    assert fake.pointer_attr("HOST_POINTER", m + 1) == (SUCCESS, m + 1)
    assert fake.pointer_attr("DEVICE_POINTER", m + 1) == (SUCCESS, m + 1)
    dptr = c_dptr()
    for flags in (0, ATTACH_SINGLE, ATTACH_GLOBAL | ATTACH_HOST):
        assert fake.cuMemAllocManaged(ctypes.byref(dptr), n, flags) == INVALID_VALUE
    assert fake.cuMemAllocManaged(ctypes.byref(dptr), 0, ATTACH_GLOBAL) == INVALID_VALUE
    assert fake.cuMemFreeHost(m) == INVALID_VALUE
    assert fake.cuMemFree(m) == SUCCESS and fake.cuMemFree(h) == SUCCESS
    assert fake.live("allocations") == 0 and fake.bytes("allocations") == 0


# ---- memory: pointer queries ----

def test_pointer_attributes_of_device_memory(fake):
    rng = np.random.default_rng()
    ctx = fake.push(1)
    n = int(rng.integers(2, 1 << 16))
    d = fake.alloc(n)
    inner = d + int(rng.integers(0, n))
    assert fake.pointer_attr("CONTEXT", inner) == (SUCCESS, ctx)
    assert fake.pointer_attr("MEMORY_TYPE", inner) == (SUCCESS, MEM_DEVICE)
    assert fake.pointer_attr("DEVICE_POINTER", inner) == (SUCCESS, inner)
    assert fake.pointer_attr("HOST_POINTER", inner)[0] == INVALID_VALUE
    assert fake.pointer_attr("IS_MANAGED", inner) == (SUCCESS, 0)
    assert fake.pointer_attr("DEVICE_ORDINAL", inner) == (SUCCESS, 1)
    assert fake.pointer_attr("RANGE_START_ADDR", inner) == (SUCCESS, d)
    assert fake.pointer_attr("RANGE_SIZE", inner) == (SUCCESS, n)
    ids = {fake.pointer_attr("BUFFER_ID", p)[1] for p in (d, fake.alloc(8), fake.host_alloc(8))}
    assert len(ids) == 3
    assert fake.cuMemFree(d) == SUCCESS
    assert fake.pointer_attr("BUFFER_ID", fake.alloc(n))[1] not in ids  # never reused
    for name in ("CONTEXT", "MEMORY_TYPE", "RANGE_SIZE"):
        assert fake.pointer_attr(name, inner)[0] == INVALID_VALUE  # freed
    e = fake.alloc(n)
    assert fake.pointer_attr("P2P_TOKENS", e)[0] == INVALID_VALUE  # not implemented
    assert fake.cuPointerGetAttribute(ctypes.byref(ctypes.c_uint64()), 99, e) == INVALID_VALUE
    assert fake.cuPointerGetAttribute(None, 2, e) == INVALID_VALUE
    assert fake.pointer_attr("MEMORY_TYPE", 0x1234)[0] == INVALID_VALUE
    assert fake.pop()[0] == SUCCESS
    assert fake.pointer_attr("DEVICE_POINTER", e)[0] == INVALID_CONTEXT
    assert fake.pointer_attr("RANGE_START_ADDR", e) == (SUCCESS, e)  # no context needed


def test_pointer_attributes_of_host_memory(fake):
    rng = np.random.default_rng()
    ctx = fake.push(0)
    n = int(rng.integers(8, 1 << 12))
    mapped, plain = fake.host_alloc(n, HOSTALLOC_DEVICEMAP), fake.host_alloc(n)
    buf = np.empty(n, np.uint8)
    assert fake.cuMemHostRegister(buf.ctypes.data, n, 0) == SUCCESS
    for p in (mapped, plain, buf.ctypes.data):
        assert fake.pointer_attr("MEMORY_TYPE", p + 3) == (SUCCESS, MEM_HOST)
        assert fake.pointer_attr("HOST_POINTER", p + 3) == (SUCCESS, p + 3)
        assert fake.pointer_attr("CONTEXT", p) == (SUCCESS, ctx)
        assert fake.pointer_attr("DEVICE_ORDINAL", p) == (SUCCESS, 0)
        assert fake.pointer_attr("IS_MANAGED", p) == (SUCCESS, 0)
        assert fake.pointer_attr("RANGE_START_ADDR", p + n - 1) == (SUCCESS, p)
        assert fake.pointer_attr("RANGE_SIZE", p) == (SUCCESS, n)
    assert fake.pointer_attr("DEVICE_POINTER", mapped + 3) == (SUCCESS, mapped + 3)
    assert fake.pointer_attr("DEVICE_POINTER", plain)[0] == INVALID_VALUE  # not mapped
    pageable = np.empty(16, np.uint8)
    assert fake.pointer_attr("MEMORY_TYPE", pageable.ctypes.data)[0] == INVALID_VALUE


def test_address_range_finds_the_allocation_around_a_pointer(fake):
    rng = np.random.default_rng()
    fake.push(0)
    n = int(rng.integers(2, 1 << 16))
    d, p = fake.alloc(n), fake.host_alloc(n)
    inner = d + int(rng.integers(0, n))
    assert fake.address_range(inner) == (SUCCESS, d, n)
    base, size = c_dptr(), c_size()
    assert fake.cuMemGetAddressRange(ctypes.byref(base), None, inner) == SUCCESS
    assert fake.cuMemGetAddressRange(None, ctypes.byref(size), inner) == SUCCESS
    assert (base.value, size.value) == (d, n)
    assert fake.cuMemGetAddressRange(None, None, inner) == SUCCESS
    assert fake.address_range(p + n - 1) == (SUCCESS, p, n)
    for bad in (d + n, d - 1, 0, 0x1234):
        assert fake.address_range(bad)[0] == NOT_FOUND, hex(bad)
    assert fake.pop()[0] == SUCCESS
    assert fake.address_range(inner)[0] == INVALID_CONTEXT
    assert fake.cuMemFree(d) == SUCCESS
    fake.push(0)
    assert fake.address_range(inner)[0] == NOT_FOUND


# ---- memory: peer copies and IPC ----

def test_peer_copies_move_bytes_between_two_devices_contexts(fake):
    rng = np.random.default_rng()
    c0 = fake.push(0)
    n = int(rng.integers(1, 1 << 14))
    a = fake.alloc(n)
    c1 = fake.push(1)
    b = fake.alloc(n)
    stream = fake.stream()
    data = random_bytes(rng, n)
    assert fake.write_pinned(a, data) == SUCCESS  # unified addressing: any context's memory
    assert fake.cuMemcpyPeer(b, c1, a, c0, n) == SUCCESS
    assert (fake.read(b, n) == data).all()
    assert fake.cuMemcpyPeer(b, c0, a, c0, n) == INVALID_VALUE  # b is not c0's
    assert fake.cuMemcpyPeer(b, c1, a, c1, n) == INVALID_VALUE  # a is not c1's
    assert fake.cuMemcpyPeer(b, c1, a, c0, n + 1) == INVALID_VALUE
    assert fake.cuMemcpyPeer(b, 0x1234, a, c0, n) == INVALID_CONTEXT
    data = random_bytes(rng, n)
    assert fake.write_pinned(a, data) == SUCCESS
    with gate_closed(fake):
        assert fake.cuMemcpyPeerAsync(b, c1, a, c0, n, stream) == SUCCESS
        assert fake.cuMemcpyPeerAsync(b, c0, a, c0, n, stream) == INVALID_VALUE
        assert fake.pending() == 1
    assert fake.cuStreamSynchronize(stream) == SUCCESS
    assert (fake.read(b, n) == data).all()
    assert fake.cuDevicePrimaryCtxReset(0) == SUCCESS
    assert fake.cuMemcpyPeer(b, c1, a, c0, n) == CONTEXT_IS_DESTROYED


PEER_UNSUPPORTED = ERRORS["CUDA_ERROR_PEER_ACCESS_UNSUPPORTED"]
PEER_ALREADY_ENABLED = ERRORS["CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED"]
PEER_NOT_ENABLED = ERRORS["CUDA_ERROR_PEER_ACCESS_NOT_ENABLED"]


def can_access(fake, dev, peer):
    out = ctypes.c_int(-1)
    res = fake.cuDeviceCanAccessPeer(ctypes.byref(out), dev, peer)
    return res, out.value


@pytest.mark.parametrize("setting,pairs", [
    (None, {(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)}),
    ("all", {(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)}),
    ("none", set()),
    ("0>1", {(0, 1)}),
    ("2>0,0>2,1>2", {(2, 0), (0, 2), (1, 2)}),
])
def test_peer_matrix_comes_from_the_environment(load, setting, pairs):
    env = {"FAKECUDA_DEVICES": "3"}
    if setting is not None:
        env["FAKECUDA_PEER_ACCESS"] = setting
    fake = load(**env)
    for a in range(3):
        for b in range(3):
            assert can_access(fake, a, b) == (SUCCESS, int((a, b) in pairs)), (a, b)
    assert can_access(fake, 0, 3)[0] == INVALID_DEVICE
    assert can_access(fake, -1, 0)[0] == INVALID_DEVICE
    assert fake.cuDeviceCanAccessPeer(None, 0, 1) == INVALID_VALUE


@pytest.mark.parametrize("bad", ["some", "0>0", "0>3", "0-1", "0>1,", ">1", "1>", "0>1;1>0"])
def test_malformed_peer_matrix_fails_init(load, bad, capfd):
    fake = load(init=False, FAKECUDA_DEVICES="3", FAKECUDA_PEER_ACCESS=bad)
    assert fake.cuInit(0) == INVALID_VALUE
    assert "FAKECUDA_PEER_ACCESS must be 'all', 'none' or pairs 'A>B'" in capfd.readouterr().err


def test_peer_access_enables_once_and_disables_once(load):
    fake = load(FAKECUDA_PEER_ACCESS="0>1")
    c1 = fake.push(1)
    c0 = fake.push(0)
    assert fake.cuCtxDisablePeerAccess(c1) == PEER_NOT_ENABLED
    assert fake.cuCtxEnablePeerAccess(c1, 1) == INVALID_VALUE  # flags must be 0
    assert fake.cuCtxEnablePeerAccess(c1, 0) == SUCCESS
    assert fake.cuCtxEnablePeerAccess(c1, 0) == PEER_ALREADY_ENABLED
    assert fake.cuCtxEnablePeerAccess(c0, 0) == INVALID_CONTEXT  # the current context itself
    assert fake.cuCtxEnablePeerAccess(0x1234, 0) == INVALID_CONTEXT
    assert fake.cuCtxDisablePeerAccess(c1) == SUCCESS
    assert fake.cuCtxDisablePeerAccess(c1) == PEER_NOT_ENABLED
    assert fake.cuCtxEnablePeerAccess(c1, 0) == SUCCESS
    assert fake.pop() == (SUCCESS, c0)
    assert fake.current() == c1
    assert fake.cuCtxEnablePeerAccess(c0, 0) == PEER_UNSUPPORTED  # 1 may not access 0
    assert fake.cuCtxDisablePeerAccess(c0) == PEER_NOT_ENABLED
    assert fake.pop() == (SUCCESS, c1)
    assert fake.cuCtxEnablePeerAccess(c1, 0) == INVALID_CONTEXT  # no current context
    assert fake.cuCtxDisablePeerAccess(c1) == INVALID_CONTEXT


def test_peer_access_to_a_destroyed_context_is_gone(fake):
    c1 = fake.push(1)
    fake.push(0)
    assert fake.cuCtxEnablePeerAccess(c1, 0) == SUCCESS
    assert fake.cuDevicePrimaryCtxReset(1) == SUCCESS
    assert fake.cuCtxEnablePeerAccess(c1, 0) == CONTEXT_IS_DESTROYED
    fresh = fake.retain(1)
    assert fresh != c1
    assert fake.cuCtxDisablePeerAccess(fresh) == PEER_NOT_ENABLED  # never enabled to this one
    assert fake.cuCtxEnablePeerAccess(fresh, 0) == SUCCESS


def test_ipc_memory_opens_on_another_device_only_with_a_peer_path(load):
    rng = np.random.default_rng()
    for setting, expected in (("all", SUCCESS), ("1>0", SUCCESS),
                              ("0>1", ERRORS["CUDA_ERROR_MAP_FAILED"])):
        fake = load(FAKECUDA_PEER_ACCESS=setting)
        fake.push(0)
        n = int(rng.integers(1, 4096))
        d = fake.alloc(n)
        data = random_bytes(rng, n)
        assert fake.write_pinned(d, data) == SUCCESS  # done: read in another context
        res, handle = fake.ipc_mem_handle(d)
        assert res == SUCCESS
        fake.push(1)
        res, alias = fake.ipc_mem_open(handle, IPC_LAZY_ENABLE_PEER_ACCESS)
        assert res == expected, setting
        if res == SUCCESS:
            assert (fake.read(alias, n) == data).all()
            assert fake.cuIpcCloseMemHandle(alias) == SUCCESS


def test_ipc_memory_handle_opens_an_alias_of_the_same_bytes(fake):
    rng = np.random.default_rng()
    fake.push(0)
    n = int(rng.integers(2, 1 << 14))
    d = fake.alloc(n)
    data = random_bytes(rng, n)
    assert fake.write_pinned(d, data) == SUCCESS
    free = fake.mem_info()[1]
    res, handle = fake.ipc_mem_handle(d + int(rng.integers(0, n)))  # any address inside
    assert res == SUCCESS
    res, alias = fake.ipc_mem_open(handle, random.choice([0, IPC_LAZY_ENABLE_PEER_ACCESS]))
    assert res == SUCCESS and alias % 512 == 0 and not d - n < alias < d + n
    assert fake.live("ipc_mappings") == 1 and fake.bytes("ipc_mappings") == n
    assert fake.live("allocations") == 1 and fake.mem_info()[1] == free
    assert (fake.read(alias, n) == data).all()
    patch = random_bytes(rng, n)
    assert fake.write(alias, patch) == SUCCESS and (fake.read(d, n) == patch).all()
    assert fake.address_range(alias + 1) == (SUCCESS, alias, n)
    assert fake.cuMemFree(alias) == INVALID_VALUE  # closed, not freed
    assert fake.cuMemFree(d) == SUCCESS  # the bytes stay while the alias is open
    assert (fake.read(alias, n) == patch).all()
    assert fake.ipc_mem_open(handle)[0] == INVALID_VALUE  # the allocation is gone
    assert fake.cuIpcCloseMemHandle(alias) == SUCCESS
    assert fake.cuIpcCloseMemHandle(alias) == INVALID_VALUE
    assert fake.cuMemsetD8(alias, 0, 1) == INVALID_VALUE
    assert fake.live("ipc_mappings") == 0 and fake.bytes("ipc_mappings") == 0


def test_ipc_memory_handle_refusals(load):
    fake, other = load(), load()
    fake.push(0)
    other.push(0)
    d = fake.alloc(64)
    for bad in (fake.host_alloc(64), fake.managed(64), d + 64, 0x1234):
        assert fake.ipc_mem_handle(bad)[0] == INVALID_VALUE, hex(bad)
    assert fake.cuIpcGetMemHandle(None, d) == INVALID_VALUE
    res, handle = fake.ipc_mem_handle(d)
    assert res == SUCCESS
    assert other.ipc_mem_open(handle)[0] == INVALID_VALUE  # another copy of the fake
    forged = bytearray(bytes(handle))
    forged[8:16] = (os.getpid() + 1).to_bytes(8, sys.byteorder)  # another process's
    assert fake.ipc_mem_open(IpcMemHandle.from_buffer_copy(forged))[0] == INVALID_VALUE
    assert fake.ipc_mem_open(IpcMemHandle())[0] == INVALID_VALUE
    assert fake.ipc_mem_open(handle, 2)[0] == INVALID_VALUE
    assert fake.cuIpcOpenMemHandle(None, handle, 0) == INVALID_VALUE
    assert fake.cuIpcCloseMemHandle(d) == INVALID_VALUE  # not an opened mapping
    assert fake.pop()[0] == SUCCESS
    assert fake.ipc_mem_handle(d)[0] == INVALID_CONTEXT
    assert fake.ipc_mem_open(handle)[0] == INVALID_CONTEXT
    assert fake.live("ipc_mappings") == 0


# ---- memory: context death, concurrency ----

@pytest.mark.parametrize("how", ["reset", "release"])
def test_context_death_frees_all_its_memory(fake, how):
    rng = np.random.default_rng()
    fake.push(1)
    survivor = fake.alloc(64)
    assert fake.pop()[0] == SUCCESS
    fake.push(0)
    n = int(rng.integers(1, 1 << 14))
    d, m, p = fake.alloc(n), fake.managed(n), fake.host_alloc(n)
    buf = np.empty(n, np.uint8)
    assert fake.cuMemHostRegister(buf.ctypes.data, n, 0) == SUCCESS
    alias = fake.ipc_mem_open(fake.ipc_mem_handle(d)[1])[1]
    assert fake.live("allocations") == 3 and fake.live("ipc_mappings") == 1
    if how == "reset":
        assert fake.cuDevicePrimaryCtxReset(0) == SUCCESS
    else:
        assert fake.cuDevicePrimaryCtxRelease(0) == SUCCESS
    for kind, live, size in (("allocations", 1, 64), ("host_allocations", 0, 0),
                             ("registrations", 0, 0), ("ipc_mappings", 0, 0)):
        assert (fake.live(kind), fake.bytes(kind)) == (live, size), kind
    for ptr in (d, m, p, buf.ctypes.data, alias):
        assert fake.pointer_attr("RANGE_START_ADDR", ptr)[0] == INVALID_VALUE
    assert fake.cuMemFree(d) == INVALID_VALUE and fake.cuMemFree(m) == INVALID_VALUE
    assert fake.cuMemFreeHost(p) == INVALID_VALUE
    assert fake.cuMemHostUnregister(buf.ctypes.data) == NOT_REGISTERED
    assert fake.cuIpcCloseMemHandle(alias) == INVALID_VALUE
    assert fake.pointer_attr("RANGE_SIZE", survivor) == (SUCCESS, 64)
    fake.push(0)
    assert fake.mem_info()[1] == fake.mem_info()[2]  # device 0 has everything free again


def test_concurrent_allocations_and_copies_lose_nothing(fake):
    ctx = fake.retain(0)
    errors = []

    def worker():
        rng = np.random.default_rng()
        if fake.cuCtxPushCurrent(ctx) != SUCCESS:
            errors.append("push")
        for _ in range(40):
            n, d = int(rng.integers(1, 1 << 12)), c_dptr()
            data = random_bytes(rng, n)
            if fake.cuMemAlloc(ctypes.byref(d), n) != SUCCESS:
                errors.append("alloc")
                continue
            if (fake.write(d.value, data) != SUCCESS or not (fake.read(d.value, n) == data).all()
                    or fake.cuMemFree(d.value) != SUCCESS):
                errors.append("copy")

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert fake.live("allocations") == 0 and fake.bytes("allocations") == 0


# ---- the gate, the profiler, process exit ----

def test_reset_opens_the_gate(fake):
    fake.push(0)
    fake.gate_close()
    assert fake.add_callback(STREAM_NULL, lambda h, s: None) == SUCCESS
    assert fake.pending() == 1
    fake.reset()
    assert fake.cuStreamSynchronize(STREAM_NULL) == SUCCESS and fake.pending() == 0


def test_profiler_state_follows_start_and_stop_with_a_context(fake):
    assert fake.cuProfilerStart() == INVALID_CONTEXT and fake.profiler_state() == 0
    fake.push(random.choice([0, 1]))
    assert fake.cuProfilerStart() == SUCCESS and fake.profiler_state() == 1
    assert fake.cuProfilerStart() == SUCCESS and fake.profiler_state() == 1
    assert fake.cuProfilerStop() == SUCCESS and fake.profiler_state() == 0
    assert fake.cuProfilerStop() == SUCCESS and fake.profiler_state() == 0
    assert fake.calls("cuProfilerStart") == 3 and fake.calls("cuProfilerStop") == 2


@pytest.mark.parametrize("gate", ["open", "closed"])
def test_the_worker_thread_never_holds_up_process_exit(built_lib, gate):
    code = (
        "import ctypes, sys\n"
        "lib = ctypes.CDLL(sys.argv[1])\n"
        "P = ctypes.POINTER\n"
        "lib.cuGetProcAddress_v2.argtypes = [ctypes.c_char_p, P(ctypes.c_void_p), ctypes.c_int,"
        " ctypes.c_uint64, ctypes.c_void_p]\n"
        "def fn(name, *args):\n"
        "    pfn = ctypes.c_void_p()\n"
        "    assert lib.cuGetProcAddress_v2(name, ctypes.byref(pfn), 13000, 1, None) == 0\n"
        "    return ctypes.CFUNCTYPE(ctypes.c_int, *args)(pfn.value)\n"
        "CB = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)\n"
        "cb = CB(lambda *a: None)\n"
        "ctx = ctypes.c_void_p()\n"
        "assert fn(b'cuInit', ctypes.c_uint)(0) == 0\n"
        "assert fn(b'cuDevicePrimaryCtxRetain', P(ctypes.c_void_p), ctypes.c_int)"
        "(ctypes.byref(ctx), 0) == 0\n"
        "assert fn(b'cuCtxPushCurrent', ctypes.c_void_p)(ctx) == 0\n"
        "if sys.argv[2] == 'closed':\n"
        "    lib.fakecuda_gate_close()\n"
        "add = fn(b'cuStreamAddCallback', ctypes.c_void_p, CB, ctypes.c_void_p, ctypes.c_uint)\n"
        "for _ in range(5):\n"
        "    assert add(None, cb, None, 0) == 0\n"
        "if sys.argv[2] == 'open':\n"
        "    assert fn(b'cuCtxSynchronize')() == 0\n"
        "print(lib.fakecuda_pending())\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, built_lib, gate], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ("0" if gate == "open" else "5")


# ---- fault injection and counters ----

def test_fault_hits_the_nth_call_for_times_calls(fake):
    nth, times = random.randint(1, 5), random.randint(1, 4)
    code = random.choice([OUT_OF_MEMORY, UNKNOWN, ERRORS["CUDA_ERROR_ILLEGAL_ADDRESS"]])
    assert fake.fail("cuDeviceGetCount", code, nth=nth, times=times) == 0
    count = ctypes.c_int()
    results = [fake.cuDeviceGetCount(ctypes.byref(count)) for _ in range(nth + times + 3)]
    assert results == [SUCCESS] * (nth - 1) + [code] * times + [SUCCESS] * 4


def test_fault_forever_lasts_until_cleared(fake):
    n = random.randint(5, 50)
    assert fake.fail("cuCtxSynchronize", UNKNOWN, times=-1) == 0
    assert [fake.cuCtxSynchronize() for _ in range(n)] == [UNKNOWN] * n
    fake.clear_faults()
    assert fake.cuCtxSynchronize() == INVALID_CONTEXT  # runs again: no context is current


def test_a_faulted_call_does_not_run(fake):
    assert fake.fail("cuDevicePrimaryCtxRetain", OUT_OF_MEMORY) == 0
    ctx = ctypes.c_void_p()
    assert fake.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == OUT_OF_MEMORY
    assert ctx.value is None and fake.live("contexts") == 0 and fake.state(0) == (0, False)
    fake.retain(0)
    assert fake.live("contexts") == 1


def test_faults_on_several_entry_points_at_once(fake):
    assert fake.fail("cuDeviceGetCount", UNKNOWN, nth=2) == 0
    assert fake.fail("cuDeviceTotalMem", INVALID_DEVICE) == 0
    count, total = ctypes.c_int(), ctypes.c_size_t()
    assert fake.cuDeviceTotalMem(ctypes.byref(total), 0) == INVALID_DEVICE
    assert fake.cuDeviceGetCount(ctypes.byref(count)) == SUCCESS
    assert fake.cuDeviceGetCount(ctypes.byref(count)) == UNKNOWN
    assert fake.cuDeviceTotalMem(ctypes.byref(total), 0) == SUCCESS


def test_a_fault_applies_before_the_init_check(load):
    fake = load(init=False)
    assert fake.fail("cuInit", UNKNOWN) == 0
    assert fake.cuInit(0) == UNKNOWN
    assert fake.cuInit(0) == SUCCESS
    assert fake.calls("cuInit") == 2


# Every entry point through one prototype, every argument zero: enough for what is checked
# before any argument is read (an armed fault, initialization).  Arguments past an entry
# point's own are ignored by the calling convention; 20 leave room for a 64-byte handle
# passed by value.
ZERO_ARGS = 20
WORK_BEFORE_INIT = {"cuInit", "cuDriverGetVersion", "cuGetErrorName", "cuGetErrorString"}


def call_with_zeros(fake, name):
    address = fake.proc(name, ENTRY_VERSIONS[name])[2]
    fn = ctypes.CFUNCTYPE(ctypes.c_int, *[ctypes.c_uint64] * ZERO_ARGS)(address)
    return fn(*[0] * ZERO_ARGS)


def test_every_entry_point_counts_one_call_and_meets_its_fault_before_any_check(fake):
    for name in ENTRY_POINTS:
        before = fake.calls(name)
        code = random.choice([UNKNOWN, OUT_OF_MEMORY, NOT_SUPPORTED, INVALID_HANDLE])
        assert fake.fail(name, code) == 0
        assert call_with_zeros(fake, name) == code, name
        assert fake.calls(name) == before + 1, name
    assert fake.live("contexts") == 0 and fake.depth() == 0


def test_every_entry_point_but_four_needs_init_and_counts_one_call(load):
    fake = load(init=False)
    for name in ENTRY_POINTS:
        if name not in WORK_BEFORE_INIT:
            assert call_with_zeros(fake, name) == NOT_INITIALIZED, name
            assert fake.calls(name) == 1, name


def test_bad_fault_requests_are_refused(fake):
    assert fake.fail("cuNoSuchThing", UNKNOWN) == -1
    assert fake.fail("cuInit", UNKNOWN, nth=0) == -1
    assert fake.fail("cuInit", UNKNOWN, times=0) == -1
    assert fake.fail("cuInit", UNKNOWN, times=-2) == -1
    assert fake.fail("cuInit", SUCCESS) == -1
    assert fake.lib.fakecuda_fail(None, 1, UNKNOWN, 1) == -1


def test_calls_are_counted_per_entry_point(fake):
    n = random.randint(1, 10)
    for _ in range(n):
        fake.cuDeviceGetCount(None)  # failing calls count too
    assert fake.calls("cuDeviceGetCount") == n
    assert fake.calls("cuInit") == 1
    assert fake.calls("cuMemGetInfo") == 0
    assert fake.calls("cuNoSuchThing") == -1
    assert fake.lib.fakecuda_calls(None) == -1


def test_live_counts_every_kind_and_refuses_unknown_ones(fake):
    fake.retain(0)
    assert fake.live("contexts") == 1
    for kind in ("allocations", "streams", "events", "modules", "host_allocations",
                 "registrations", "ipc_mappings"):
        assert fake.live(kind) == 0, kind
    assert fake.live("widgets") == -1
    assert fake.lib.fakecuda_live(None) == -1


def test_bytes_count_only_memory_kinds(fake):
    for kind in ("allocations", "host_allocations", "registrations", "ipc_mappings"):
        assert fake.bytes(kind) == 0, kind
    for kind in ("contexts", "streams", "events", "modules", "widgets"):
        assert fake.bytes(kind) == -1, kind
    assert fake.lib.fakecuda_bytes(None) == -1


def test_reset_clears_faults_and_counters_but_keeps_contexts(fake):
    ctx = fake.retain(0)
    assert fake.fail("cuCtxSynchronize", UNKNOWN, times=-1) == 0
    fake.reset()
    assert fake.calls("cuInit") == 0 and fake.calls("cuDevicePrimaryCtxRetain") == 0
    assert fake.live("contexts") == 1 and fake.retain(0) == ctx
    assert fake.cuCtxSynchronize() == INVALID_CONTEXT  # ran: the fault is gone


# ---- error names and messages ----

def test_every_error_has_its_name_and_a_message(load):
    fake = load(init=False)  # they work before cuInit
    name, text = ctypes.c_char_p(), ctypes.c_char_p()
    for expected, code in ERRORS.items():
        assert fake.cuGetErrorName(code, ctypes.byref(name)) == SUCCESS
        assert name.value.decode() == expected
        assert fake.cuGetErrorString(code, ctypes.byref(text)) == SUCCESS
        assert text.value and text.value.decode() != expected


@pytest.mark.parametrize("name, message", [
    ("CUDA_SUCCESS", "no error"),
    ("CUDA_ERROR_OUT_OF_MEMORY", "out of memory"),
    ("CUDA_ERROR_INVALID_VALUE", "invalid argument"),
    ("CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"),
    ("CUDA_ERROR_TOO_MANY_PEERS", "too many peers"),  # derived from the name
])
def test_error_messages(fake, name, message):
    text = ctypes.c_char_p()
    assert fake.cuGetErrorString(ERRORS[name], ctypes.byref(text)) == SUCCESS
    assert text.value.decode() == message


def test_unknown_error_code_is_invalid_value_with_null_string(fake):
    code = random.choice([12345, 37, 998, -1])
    out = ctypes.c_char_p(b"stale")
    assert fake.cuGetErrorName(code, ctypes.byref(out)) == INVALID_VALUE
    assert out.value is None
    out = ctypes.c_char_p(b"stale")
    assert fake.cuGetErrorString(code, ctypes.byref(out)) == INVALID_VALUE
    assert out.value is None
    assert fake.cuGetErrorName(0, None) == INVALID_VALUE


# ---- the build ----

def test_build_is_skipped_when_up_to_date_and_redone_when_a_source_changes(tmp_path):
    lib = fakecuda_build.build(str(tmp_path))
    assert lib == str(tmp_path / "libfakecuda.so")
    first = os.stat(lib).st_mtime_ns
    assert fakecuda_build.build(str(tmp_path)) == lib
    assert os.stat(lib).st_mtime_ns == first
    old = min(os.stat(dep).st_mtime_ns for dep in fakecuda_build.dependencies()) - 10**9
    os.utime(lib, ns=(old, old))  # every source is now newer
    assert fakecuda_build.build(str(tmp_path)) == lib
    assert os.stat(lib).st_mtime_ns > old
    assert [p for p in os.listdir(tmp_path) if p.endswith(".tmp")] == []


def test_build_is_redone_when_the_flags_change(tmp_path, monkeypatch):
    lib = fakecuda_build.build(str(tmp_path))
    first = os.stat(lib).st_mtime_ns
    monkeypatch.setenv("FAKECUDA_CFLAGS", "-DFAKECUDA_TEST_FLAG=%d" % random.randint(1, 99))
    fakecuda_build.build(str(tmp_path))
    assert os.stat(lib).st_mtime_ns != first
    Fake(lib)


def test_concurrent_builds_all_get_a_whole_library(tmp_path):
    code = ("import sys, ctypes; sys.path.insert(0, %r); import build; "
            "ctypes.CDLL(build.build(sys.argv[1])); print('ok')" % os.path.join(HERE, "fakecuda"))
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    results = [p.communicate(timeout=120) for p in procs]
    assert [(p.returncode, out.strip()) for p, (out, _) in zip(procs, results)] == \
        [(0, "ok")] * 4, [err for _, err in results]
    assert sorted(os.listdir(tmp_path)) == ["libfakecuda.so", "libfakecuda.so.cmd",
                                            "libfakenccl.so.2", "libfakenccl.so.2.cmd",
                                            "libfakenvml.so.1", "libfakenvml.so.1.cmd"]


def test_missing_cuda_headers_are_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "nowhere"))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    real_exists = os.path.isfile
    monkeypatch.setattr(os.path, "isfile", lambda p: not p.startswith("/usr/local/cuda")
                        and real_exists(p))  # the default toolkit, hidden
    monkeypatch.setattr(sys, "path", [p for p in sys.path if not os.path.isdir(
        os.path.join(p or ".", "nvidia"))] + [str(tmp_path / "site")])
    with pytest.raises(fakecuda_build.BuildError, match="fakecuda: the CUDA header cuda.h was "
                                                        "not found") as info:
        fakecuda_build.build(str(tmp_path / "out"))
    assert str(tmp_path / "nowhere" / "include") + " ($CUDA_HOME)" in str(info.value)
    assert "set CUDA_HOME" in str(info.value) and "nvidia-cuda-runtime" in str(info.value)


def test_compile_errors_are_reported_with_the_compilers_output(monkeypatch, tmp_path):
    monkeypatch.setenv("FAKECUDA_CFLAGS", "-include /nonexistent/fakecuda_missing.h")
    with pytest.raises(fakecuda_build.BuildError, match="compiling failed") as info:
        fakecuda_build.build(str(tmp_path))
    assert "fakecuda_missing.h" in str(info.value)
    assert os.listdir(tmp_path) == []
