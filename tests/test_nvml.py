"""gpuhost._nvml, the leak check's question to NVML (who else uses a device), over NVML's
test double (tests/fakecuda/fakenvml/), and on the real GPU over the real NVML."""
import os
import re

import pytest

import gpuhost
from gpuhost import _nvml


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    """NVML loaded afresh for each test: its loading (and failing to load) is cached."""
    monkeypatch.setattr(_nvml, "_STATE", {})
    return monkeypatch


@pytest.mark.gpu
def test_the_real_nvml_lists_this_process_on_its_device():
    with gpuhost.gpus[0]:
        gpuhost.to_device(b"x" * 64)  # a context, and memory in it
        processes = _nvml.compute_processes(gpuhost.get_current_device().pci_bus_id)
    assert processes, "NVML lists no process on the device this process uses"
    assert all(isinstance(pid, int) and used >= 0 for pid, used in processes)


@pytest.mark.fake
def test_this_process_alone_by_default():
    assert _nvml.compute_processes("0000:3B:00.0") == [(os.getpid(), 0)]


@pytest.mark.fake
def test_every_listed_process_with_its_memory(fresh):
    listed = [(1000 + i, 2**20 * i) for i in range(37)]  # past any first guess of the size
    fresh.setenv("FAKENVML_PROCESSES", ",".join("%d:%d" % p for p in listed))
    assert _nvml.compute_processes("00000000:3b:00.0") == listed
    fresh.setenv("FAKENVML_PROCESSES", "")
    assert _nvml.compute_processes("0000:3B:00.0") == []


@pytest.mark.fake
@pytest.mark.parametrize("fail, bus_id, message", [
    ("init", "0000:3B:00.0", "NVML (*) is not usable: nvmlInit_v2 failed: Driver Not Loaded (9)"),
    ("device", "0000:3B:00.0",
     "nvmlDeviceGetHandleByPciBusId_v2('0000:3B:00.0') failed: Not Found (6)"),
    (None, "3B:00", "nvmlDeviceGetHandleByPciBusId_v2('3B:00') failed: Not Found (6)"),
    ("processes", "0000:3B:00.0",
     "nvmlDeviceGetComputeRunningProcesses_v3 failed: Insufficient Permissions (4)"),
])
def test_what_nvml_cannot_tell_is_an_oserror_saying_why(fresh, fail, bus_id, message):
    if fail:
        fresh.setenv("FAKENVML_FAIL", fail)
    with pytest.raises(OSError) as info:
        _nvml.compute_processes(bus_id)
    assert re.fullmatch(re.escape(message).replace(r"\*", ".*"), str(info.value))


@pytest.mark.fake
def test_a_missing_library_is_an_oserror_and_stays_one(fresh, tmp_path):
    missing = str(tmp_path / "libnvidia-ml.so.1")
    fresh.setenv("GPUHOST_NVML", missing)
    for _ in range(2):  # the second answer is the cached one
        with pytest.raises(OSError, match="NVML \\(%s\\) is not usable: " % re.escape(missing)):
            _nvml.compute_processes("0000:3B:00.0")
