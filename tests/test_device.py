"""Device: discovery, fixed facts, attributes, identity, bad indices."""
import ctypes
import re
import weakref

import pytest

import gpuhost
from gpuhost import InvalidDeviceError
from conftest import DRIVER, FAKE_PATH


def test_gpus_is_sized_indexable_and_iterable():
    n = len(gpuhost.gpus)
    assert n >= 1
    devs = list(gpuhost.gpus)
    assert [d.id for d in devs] == list(range(n))
    assert all(gpuhost.gpus[i] is devs[i] for i in range(n))
    assert gpuhost.gpus[-1] is devs[-1]
    assert gpuhost.gpus[0:n] == devs
    assert gpuhost.list_devices() == devs
    assert gpuhost.gpus.lst == devs


@pytest.mark.parametrize("bad", [lambda n: n, lambda n: n + 5, lambda n: -n - 1])
def test_bad_device_index_says_how_many_devices_exist(bad):
    n = len(gpuhost.gpus)
    with pytest.raises(InvalidDeviceError) as info:
        gpuhost.gpus[bad(n)]
    assert isinstance(info.value, IndexError)
    assert "%d device%s found (ids 0 to %d)" % (n, "" if n == 1 else "s", n - 1) in str(info.value)


def test_select_device_rejects_bad_ids():
    n = len(gpuhost.gpus)
    with pytest.raises(InvalidDeviceError, match="no CUDA device %d: " % n):
        gpuhost.select_device(n)
    with pytest.raises(InvalidDeviceError, match="no CUDA device -1: "):
        gpuhost.select_device(-1)
    with pytest.raises(TypeError, match="device id must be an int, not str"):
        gpuhost.select_device("0")
    with pytest.raises(TypeError, match="device index must be an int, not float"):
        gpuhost.gpus[0.0]


def test_device_cannot_be_made_directly():
    with pytest.raises(TypeError):
        gpuhost.Device()


def test_fixed_facts_have_the_right_shapes():
    for dev in gpuhost.gpus:
        assert isinstance(dev.name, str) and dev.name
        major, minor = dev.compute_capability
        assert isinstance(major, int) and major >= 3 and 0 <= minor < 10
        assert re.fullmatch(r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
                            dev.uuid)
        assert re.fullmatch(r"[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]",
                            dev.pci_bus_id)
        assert dev.total_memory > 2**30
        assert dev.supports_float16 == (dev.compute_capability >= (5, 3))
        assert dev.supports_bfloat16 == (major >= 8)


def test_distinct_devices_have_distinct_uuids():
    uuids = [d.uuid for d in gpuhost.gpus]
    assert len(set(uuids)) == len(uuids)


def test_pci_bus_id_agrees_with_pci_attributes():
    for dev in gpuhost.gpus:
        domain, bus, rest = dev.pci_bus_id.split(":")
        assert int(domain, 16) == dev.PCI_DOMAIN_ID
        assert int(bus, 16) == dev.PCI_BUS_ID
        assert int(rest.split(".")[0], 16) == dev.PCI_DEVICE_ID


def test_pci_bus_id_has_the_documented_form_and_looks_its_device_up():
    for dev in gpuhost.gpus:
        assert re.fullmatch(r"[0-9A-F]{4}:[0-9A-F]{2}:[0-9A-F]{2}\.0", dev.pci_bus_id)
        assert gpuhost._core.device_by_pci_bus_id(dev.pci_bus_id) == dev.id
        assert gpuhost._core.device_by_pci_bus_id(dev.pci_bus_id.lower()) == dev.id


def _driver_function(name, *argtypes):
    """A driver entry point called directly (the fake's, or libcuda's on a GPU), through
    cuGetProcAddress, as gpuhost resolves it."""
    lib = ctypes.CDLL(FAKE_PATH if DRIVER == "fake" else "libcuda.so.1")
    lib.cuGetProcAddress.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p),
                                     ctypes.c_int, ctypes.c_uint64]
    fn = ctypes.c_void_p()
    assert lib.cuGetProcAddress(name.encode(), ctypes.byref(fn), 12000, 0) == 0
    return ctypes.CFUNCTYPE(ctypes.c_int, *argtypes)(fn.value)


def test_the_drivers_pci_bus_id_forms_and_what_its_lookup_takes():
    """What gpuhost's pci_bus_id relies on, asked of the driver itself (so that the fake is
    held to the real driver on a GPU run): the id has a 4-digit domain in the documented 13
    bytes and in a longer buffer alike (seen on the H200), and looks its device up, as do
    nvidia-smi's 8-digit domain and the "[bus]:[device].[function]" form."""
    get_id = _driver_function("cuDeviceGetPCIBusId", ctypes.c_char_p, ctypes.c_int, ctypes.c_int)
    by_id = _driver_function("cuDeviceGetByPCIBusId", ctypes.POINTER(ctypes.c_int),
                             ctypes.c_char_p)
    for dev in gpuhost.gpus:
        short, long = ctypes.create_string_buffer(13), ctypes.create_string_buffer(64)
        assert get_id(short, 13, dev.id) == 0 and get_id(long, 64, dev.id) == 0
        assert short.value.decode() == long.value.decode() == dev.pci_bus_id
        assert re.fullmatch(r"[0-9A-F]{4}:[0-9A-F]{2}:[0-9A-F]{2}\.0", dev.pci_bus_id)
        for form in (dev.pci_bus_id, "0000" + dev.pci_bus_id, dev.pci_bus_id.lower(),
                     dev.pci_bus_id.split(":", 1)[1]):
            found = ctypes.c_int(-1)
            assert by_id(ctypes.byref(found), form.encode()) == 0 and found.value == dev.id, form
        for bad in ("fake:id", ""):
            assert by_id(ctypes.byref(found), bad.encode()) == 1, bad  # INVALID_VALUE


def test_attribute_reads_agree_every_way():
    dev = gpuhost.gpus[0]
    v = dev.MAX_THREADS_PER_BLOCK
    assert v == dev.get_attribute("MAX_THREADS_PER_BLOCK")
    assert v == dev.get_attribute("CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK")
    assert v == dev.get_attribute(1)
    assert v == dev.attributes["MAX_THREADS_PER_BLOCK"]
    assert dev.COMPUTE_CAPABILITY_MAJOR == dev.compute_capability[0]
    assert dev.COMPUTE_CAPABILITY_MINOR == dev.compute_capability[1]
    assert dev.WARP_SIZE == 32


def test_attributes_dict_covers_the_common_attributes():
    attrs = gpuhost.gpus[0].attributes
    assert len(attrs) > 100
    for name in ("MULTIPROCESSOR_COUNT", "MAX_SHARED_MEMORY_PER_BLOCK", "UNIFIED_ADDRESSING",
                 "CONCURRENT_MANAGED_ACCESS", "L2_CACHE_SIZE", "MAX_BLOCK_DIM_X"):
        assert attrs[name] == gpuhost.gpus[0].get_attribute(name)
    assert attrs["MULTIPROCESSOR_COUNT"] > 0
    assert all(isinstance(v, int) for v in attrs.values())


def test_attribute_names_show_in_dir():
    names = dir(gpuhost.gpus[0])
    assert "MAX_THREADS_PER_BLOCK" in names and "get_attribute" in names


def test_bad_attributes_raise_clear_errors():
    dev = gpuhost.gpus[0]
    with pytest.raises(AttributeError):
        dev.NOT_AN_ATTRIBUTE
    with pytest.raises(AttributeError):
        dev.max_threads_per_block  # lower case is not an attribute name
    with pytest.raises(ValueError, match="unknown device attribute 'bogus'"):
        dev.get_attribute("bogus")
    with pytest.raises(ValueError, match="unknown device attribute number 99999"):
        dev.get_attribute(99999)
    with pytest.raises(ValueError, match="unknown device attribute number -3"):
        dev.get_attribute(-3)
    with pytest.raises(TypeError, match="must be a name .str. or a number .int., not float"):
        dev.get_attribute(1.5)
    with pytest.raises(OverflowError):
        dev.get_attribute(2**80)


def test_driver_refusing_an_attribute_raises_api_error(fake):
    dev = gpuhost.gpus[0]
    fake.fail("cuDeviceGetAttribute", 101)
    with pytest.raises(gpuhost.CudaAPIError) as info:
        dev.MULTIPROCESSOR_COUNT
    assert info.value.name == "CUDA_ERROR_INVALID_DEVICE"
    assert info.value.call == "cuDeviceGetAttribute"
    assert dev.MULTIPROCESSOR_COUNT > 0


def test_devices_take_weak_references():
    dev = gpuhost.gpus[len(gpuhost.gpus) - 1]
    proxy = weakref.proxy(dev)  # numba's Context hands out weakref.proxy(device)
    assert weakref.ref(dev)() is dev
    assert proxy.id == dev.id and proxy.name == dev.name
    assert proxy.compute_capability == dev.compute_capability
    assert proxy.MAX_THREADS_PER_BLOCK == dev.MAX_THREADS_PER_BLOCK  # the attribute names too
    assert weakref.WeakValueDictionary({dev.id: dev})[dev.id] is dev


def test_equality_hash_and_repr():
    dev = gpuhost.gpus[0]
    assert dev == gpuhost.gpus[0] and not (dev != gpuhost.gpus[0])
    assert hash(dev) == hash(gpuhost.gpus[0])
    assert dev != 0 and dev != "0"
    assert {dev: 1}[gpuhost.gpus[0]] == 1
    assert repr(dev) == "<CUDA device 0 '%s'>" % dev.name


@pytest.mark.gpus(2)
def test_two_devices_differ():
    a, b = gpuhost.gpus[0], gpuhost.gpus[1]
    assert a != b and hash(a) != hash(b)
    assert a.pci_bus_id != b.pci_bus_id


def test_device_facts_when_the_driver_fails_midway(fake):
    # A Device whose facts could not be read is not cached: the next try succeeds.
    from conftest import run_python

    code = (
        "import ctypes, os, gpuhost\n"
        "lib = ctypes.CDLL(os.environ['GPUHOST_CUDA_DRIVER'])\n"
        "lib.fakecuda_fail.argtypes = [ctypes.c_char_p, ctypes.c_long, ctypes.c_int, ctypes.c_long]\n"
        "gpuhost.is_available()\n"
        "lib.fakecuda_fail(b'cuDeviceGetUuid', 1, 999, 1)\n"
        "try:\n"
        "    gpuhost.gpus[0]\n"
        "except gpuhost.CudaAPIError as e:\n"
        "    print(e.call, e.name)\n"
        "print(gpuhost.gpus[0].uuid.startswith('GPU-'))\n"
    )
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["cuDeviceGetUuid", "CUDA_ERROR_UNKNOWN", "True"]


@pytest.mark.gpu
def test_facts_agree_with_cupy():
    cupy = pytest.importorskip("cupy")
    for dev in gpuhost.gpus:
        props = cupy.cuda.runtime.getDeviceProperties(dev.id)
        assert props["name"].decode() == dev.name
        assert props["totalGlobalMem"] == dev.total_memory
        assert (props["major"], props["minor"]) == dev.compute_capability
        assert props["multiProcessorCount"] == dev.MULTIPROCESSOR_COUNT
        assert props["pciBusID"] == dev.PCI_BUS_ID
