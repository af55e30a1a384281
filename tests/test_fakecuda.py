"""The fake driver itself (tests/fakecuda), through ctypes only: lookup, initialization,
devices, primary contexts, context stacks, fault injection, error names, the build.

Each test loads its own copy of the library (a copy is a different file, so the dynamic
loader gives it its own state): configuration read at the first cuInit can differ per test,
and nothing here touches the instance gpuhost itself loaded in this process.
"""
import ctypes
import os
import random
import re
import shutil
import subprocess
import sys
import threading

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "fakecuda"))
import build as fakecuda_build  # noqa: E402

CSRC = os.path.join(os.path.dirname(HERE), "csrc")


def _x_macro_entries(header, macro):
    """The (NAME, number) pairs of an X-macro list in csrc/<header>."""
    with open(os.path.join(CSRC, header)) as f:
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
    "cuMemGetInfo": [c_size_p, c_size_p],
    "cuGetErrorName": [ctypes.c_int, c_char_pp],
    "cuGetErrorString": [ctypes.c_int, c_char_pp],
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
        self.lib = lib

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

    def reset(self):
        self.lib.fakecuda_reset()

    def depth(self):
        return self.lib.fakecuda_thread_stack_depth()

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


@pytest.fixture(scope="session")
def built_lib():
    return fakecuda_build.build()


@pytest.fixture
def load(built_lib, tmp_path, monkeypatch):
    """load(init=True, **env) -> a fresh Fake whose configuration is `env`."""
    count = [0]

    def load(init=True, **env):
        for var in ("FAKECUDA_DEVICES", "FAKECUDA_INIT_ERROR", "FAKECUDA_DRIVER_VERSION"):
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


def in_thread(fn):
    box = {}

    def target():
        try:
            box["result"] = fn()
        except BaseException as e:  # handed back to the caller
            box["error"] = e

    t = threading.Thread(target=target)
    t.start()
    t.join(60)
    assert not t.is_alive(), "thread hung"
    if "error" in box:
        raise box["error"]
    return box["result"]


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
                 "fakecuda_thread_stack_depth"):
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
        assert fake.cuDeviceGetPCIBusId(buf, len(buf), dev) == SUCCESS
        assert buf.value == expected
        domain, bus, rest = buf.value.decode().split(":")
        assert int(domain, 16) == fake.attr("PCI_DOMAIN_ID", dev)
        assert int(bus, 16) == fake.attr("PCI_BUS_ID", dev)
        assert int(rest.split(".")[0], 16) == fake.attr("PCI_DEVICE_ID", dev)


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
    for kind in ("allocations", "streams", "events", "modules"):
        assert fake.live(kind) == 0, kind
    assert fake.live("widgets") == -1
    assert fake.lib.fakecuda_live(None) == -1


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
    assert sorted(os.listdir(tmp_path)) == ["libfakecuda.so", "libfakecuda.so.cmd"]


def test_missing_cuda_headers_are_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "nowhere"))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(fakecuda_build, "DEFAULT_CUDA_ROOT", str(tmp_path / "default"))
    with pytest.raises(fakecuda_build.BuildError, match="CUDA headers .cuda.h, cudaTypedefs.h. "
                                                        "were not found") as info:
        fakecuda_build.build(str(tmp_path / "out"))
    assert str(tmp_path / "nowhere" / "include") + " (CUDA_HOME)" in str(info.value)
    assert "Set CUDA_HOME" in str(info.value)


def test_compile_errors_are_reported_with_the_compilers_output(monkeypatch, tmp_path):
    monkeypatch.setenv("FAKECUDA_CFLAGS", "-include /nonexistent/fakecuda_missing.h")
    with pytest.raises(fakecuda_build.BuildError, match="compiling failed") as info:
        fakecuda_build.build(str(tmp_path))
    assert "fakecuda_missing.h" in str(info.value)
    assert os.listdir(tmp_path) == []
