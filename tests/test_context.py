"""Context: numba's primary-context model, per-thread current contexts, push/pop,
memory info, synchronize, close and reset."""
import threading
import time
import weakref

import numpy as np
import pytest

import gpuhost
from gpuhost import CudaDriverError
from conftest import DRIVER, in_thread, run_python


def test_current_context_defaults_to_device_0_in_a_fresh_thread():
    def fresh():
        before = gpuhost.gpus.current
        ctx = gpuhost.current_context()
        return before, ctx, gpuhost.gpus.current

    before, ctx, after = in_thread(fresh)
    assert before is None
    assert isinstance(ctx, gpuhost.Context)
    assert ctx.device is gpuhost.gpus[0] and after is gpuhost.gpus[0]
    assert isinstance(ctx.handle, int) and ctx.handle != 0


def test_one_context_object_per_device():
    ctx = gpuhost.current_context()
    assert gpuhost.current_context() is ctx
    assert ctx.device.get_primary_context() is ctx
    assert gpuhost.get_current_device() is ctx.device


def test_memory_info_is_a_named_tuple_consistent_with_the_device():
    ctx = gpuhost.current_context()
    info = ctx.get_memory_info()
    free, total = info
    assert (info.free, info.total) == (free, total)
    assert isinstance(info, tuple) and type(info).__name__ == "MemoryInfo"
    assert 0 < free <= total == ctx.device.total_memory


def test_memory_info_works_from_a_thread_with_no_current_context():
    ctx = gpuhost.current_context()
    info, current = in_thread(lambda: (ctx.get_memory_info(), gpuhost.gpus.current))
    assert info.total == ctx.device.total_memory
    assert current is None  # the context was pushed for the call and popped after


def test_synchronize_module_and_context_wait_for_the_queued_work():
    ctx = gpuhost.current_context()
    waits = {"gpuhost.synchronize": gpuhost.synchronize, "Context.synchronize": ctx.synchronize,
             "from another thread": lambda: in_thread(ctx.synchronize)}
    for name, sync in waits.items():
        done = []
        # a callback that takes a while: each synchronize returns after it, not before
        gpuhost.stream().add_callback(lambda st, status, arg: done.append(time.sleep(0.05) or arg),
                                      name)
        assert sync() is None
        assert done == [name]


def test_with_device_makes_it_current_and_restores():
    ctx = gpuhost.current_context()
    last = gpuhost.gpus[len(gpuhost.gpus) - 1]
    with last as entered:
        assert entered is last
        assert gpuhost.gpus.current is last
        assert gpuhost.current_context().device is last
        with gpuhost.gpus[0]:
            assert gpuhost.gpus.current is gpuhost.gpus[0]
        assert gpuhost.gpus.current is last
    assert gpuhost.current_context() is ctx


def test_with_device_pops_even_when_the_block_raises():
    ctx = gpuhost.current_context()
    with pytest.raises(KeyError, match="x"):
        with gpuhost.gpus[0]:
            raise KeyError("x")
    assert gpuhost.current_context() is ctx


def test_push_and_pop():
    def body():
        ctx = gpuhost.gpus[0].get_primary_context()
        ctx.push()
        top = gpuhost.gpus.current
        ctx.pop()
        return top, gpuhost.gpus.current

    top, after = in_thread(body)
    assert top is gpuhost.gpus[0] and after is None


def test_pop_on_an_empty_stack_is_a_clear_error():
    ctx = gpuhost.current_context()
    with pytest.raises(CudaDriverError, match="cannot pop device %d's context: this thread's "
                                              "context stack is empty" % ctx.device.id):
        in_thread(ctx.pop)


@pytest.mark.gpus(2)
def test_pop_of_a_context_not_on_top_names_the_top():
    ctx0 = gpuhost.gpus[0].get_primary_context()

    def body():
        with gpuhost.gpus[1]:
            ctx0.pop()

    with pytest.raises(CudaDriverError, match=r"cannot pop device 0's context: it is not on "
                                              r"top of this thread's context stack \(device 1's is\)"):
        in_thread(body)


@pytest.mark.gpus(2)
def test_select_device_switches_this_thread_only():
    def body():
        gpuhost.select_device(0)
        dev = gpuhost.select_device(1)
        seen = (dev, gpuhost.gpus.current, gpuhost.current_context(1).device)
        with pytest.raises(CudaDriverError, match="device 1's context is current in this thread, "
                                                  "not device 0's: use select_device.0."):
            gpuhost.current_context(0)
        return seen

    main = gpuhost.current_context()
    dev, current, ctxdev = in_thread(body)
    assert dev is current is ctxdev is gpuhost.gpus[1]
    assert gpuhost.current_context() is main


def test_current_context_devnum_is_validated():
    n = len(gpuhost.gpus)
    with pytest.raises(gpuhost.InvalidDeviceError,
                       match=r"no CUDA device %d: %d devices? found" % (n, n)):
        gpuhost.current_context(n)
    with pytest.raises(TypeError, match="devnum must be an int"):
        gpuhost.current_context("0")
    assert gpuhost.current_context(None) is gpuhost.current_context()


def test_threads_have_their_own_current_context():
    results = []
    barrier = threading.Barrier(4)

    def worker(i):
        dev = gpuhost.gpus[i % len(gpuhost.gpus)]
        barrier.wait()
        with dev:
            barrier.wait()
            results.append(gpuhost.gpus.current is dev)
            gpuhost.current_context().synchronize()
        results.append(gpuhost.gpus.current is None)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results == [True] * 8


def test_require_context_decorator():
    @gpuhost.require_context
    def current():
        """doc"""
        return gpuhost.gpus.current

    assert current.__doc__ == "doc" and current.__name__ == "current"
    assert in_thread(current) is gpuhost.gpus[0]


def test_context_repr_and_no_direct_construction():
    ctx = gpuhost.current_context()
    assert repr(ctx) == "<CUDA context %#x of device %d>" % (ctx.handle, ctx.device.id)
    with pytest.raises(TypeError, match="cannot create 'gpuhost.Context' instances"):
        gpuhost.Context()


def test_contexts_take_weak_references():
    # numba's EMM plugins and memory pointers hold their context through weakref.proxy
    ctx = gpuhost.current_context()
    proxy = weakref.proxy(ctx)
    assert weakref.ref(ctx)() is ctx
    assert proxy.device is ctx.device and proxy.handle == ctx.handle
    assert proxy.get_memory_info().total == ctx.device.total_memory
    managers = weakref.WeakKeyDictionary()
    managers[ctx] = "a plugin"
    assert managers[gpuhost.current_context()] == "a plugin"
    # another thread, with the same device current there
    assert in_thread(lambda: managers[gpuhost.select_device(ctx.device.id)
                                      .get_primary_context()]) == "a plugin"


def test_retain_failure_leaves_nothing_behind(fake):
    code = (
        "import ctypes, os, gpuhost\n"
        "lib = ctypes.CDLL(os.environ['GPUHOST_CUDA_DRIVER'])\n"
        "lib.fakecuda_fail.argtypes = [ctypes.c_char_p, ctypes.c_long, ctypes.c_int, ctypes.c_long]\n"
        "lib.fakecuda_live.argtypes = [ctypes.c_char_p]\n"
        "gpuhost.is_available()\n"
        "lib.fakecuda_fail(b'cuDevicePrimaryCtxRetain', 1, 2, 1)\n"
        "try:\n"
        "    gpuhost.current_context()\n"
        "except MemoryError as e:\n"
        "    print(e.call)\n"
        "print(gpuhost.gpus.current, lib.fakecuda_live(b'contexts'))\n"
        "print(gpuhost.current_context().device.id, lib.fakecuda_live(b'contexts'))\n"
    )
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["cuDevicePrimaryCtxRetain", "None 0", "0 1"]


CLOSE = r"""
import threading, gpuhost
ctx = gpuhost.current_context()
assert ctx.handle
def other():
    gpuhost.current_context()
    gpuhost.close()            # not the main thread: pops, keeps the contexts
    return gpuhost.gpus.current
t = threading.Thread(target=lambda: print("thread", other())); t.start(); t.join()
print("held", ctx.handle is not None)
gpuhost.gpus[0].get_primary_context().push()  # two deep: close() pops both
gpuhost.close()
print("current", gpuhost.gpus.current, "held", ctx.handle)
again = gpuhost.current_context()
print("again", again is ctx, again.handle is not None)
ctx.get_memory_info()
"""


def test_close_pops_and_releases_in_the_main_thread():
    proc = run_python(CLOSE)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["thread None", "held True", "current None held None",
                                        "again True True"]


def test_close_releases_every_context_in_the_fake(fake):
    code = CLOSE + (
        "import ctypes, os\n"
        "lib = ctypes.CDLL(os.environ['GPUHOST_CUDA_DRIVER'])\n"
        "lib.fakecuda_live.argtypes = [ctypes.c_char_p]\n"
        "gpuhost.close()\n"
        "print('live', lib.fakecuda_live(b'contexts'))\n"
    )
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "live 0"


RESET = r"""
import gpuhost
dev = gpuhost.gpus[0]
ctx = gpuhost.current_context()
ctx.synchronize()
dev.reset()
print("current", gpuhost.gpus.current is dev, ctx.handle is None)
print("info", ctx.get_memory_info().total == dev.total_memory)
ctx.reset()
gpuhost.synchronize()
print("ok", gpuhost.gpus.current is dev)
with dev:
    dev.reset()  # inside the block: both places of the destroyed handle get the new one
print("after block", gpuhost.gpus.current is dev)  # what was current before the block
"""


def test_device_reset_puts_the_new_context_where_the_destroyed_one_was_current():
    # numba leaves the destroyed handle current, on which the next call fails; gpuhost's
    # stack keeps its depth with the device's new context in that place
    proc = run_python(RESET)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["current True False", "info True", "ok True",
                                        "after block True"]


# The fake driver's live-resource counters, from a fresh process.
FAKE_LIVE = r"""
import ctypes, os
_lib = ctypes.CDLL(os.environ["GPUHOST_CUDA_DRIVER"])
_lib.fakecuda_live.argtypes = [ctypes.c_char_p]
_lib.fakecuda_live.restype = ctypes.c_long
_lib.fakecuda_kernels(1)
def live(kind):
    return _lib.fakecuda_live(kind.encode())
def entry(name, *argtypes):  # a driver entry point of the fake's, as cuGetProcAddress gives it
    fn, found = ctypes.c_void_p(), ctypes.c_int()
    _lib.cuGetProcAddress_v2(name.encode(), ctypes.byref(fn), 13000, ctypes.c_uint64(0),
                             ctypes.byref(found))
    return ctypes.CFUNCTYPE(ctypes.c_int, *argtypes)(fn.value)
"""

PTX = (".version 8.0\n.target sm_75\n.address_size 64\n"
       ".visible .entry k(.param .u64 k_param_0)\n{\nret;\n}\n")

CONTEXT_RESET = FAKE_LIVE + "PTX = %r\n" % PTX + r"""
import numpy as np
import gpuhost
rng = np.random.default_rng()
host = rng.random(1000)
ctx = gpuhost.current_context()
handle = ctx.handle
kinds = ("contexts", "allocations", "host_allocations", "modules", "streams", "events")
base = {k: live(k) for k in kinds}
a = gpuhost.to_device(host)                     # a pool's block in use
b = ctx.memalloc(4096)                          # numba's memalloc
c = gpuhost.device_array(8192); del c           # a block the pool holds
viewed = gpuhost.pinned_array(16)               # host memory (NumPy may view it): kept
unviewed = ctx.memhostalloc(64)                 # ... even where nothing views it
m = gpuhost.Module(PTX)
k = m.get_function("k")
s = gpuhost.stream(); e = gpuhost.event(); e.record(s)
grown = {k_: live(k_) - base[k_] for k_ in kinds}
ctx.reset()
after = {k_: live(k_) - base[k_] for k_ in kinds}
print("grown", grown["allocations"] >= 2, grown["host_allocations"], grown["modules"])
print("after", after)
print("same context", ctx.handle == handle)
s.synchronize(); e.synchronize(); e.record(s); s.synchronize()
print("stream and event work", e.query())
viewed[:] = np.arange(16)
print("viewed pinned memory", viewed.sum())
for what, use in (("array", a.copy_to_host), ("kernel", lambda: k[1, 1](a)),
                  ("module", lambda: m.get_function("k"))):
    try:
        use()
    except gpuhost.CudaAPIError as err:
        print(what, err.name, "before Context.reset() freed" in str(err))
print("unloaded", m.unloaded)
del a, b, unviewed, m, k
import gc; gc.collect()
print("no double free", live("allocations") - base["allocations"],
      live("host_allocations") - base["host_allocations"], live("modules") - base["modules"])
fresh = gpuhost.to_device(host)
print("fresh", np.array_equal(fresh.copy_to_host(), host))
"""


def test_context_reset_frees_gpuhosts_memory_and_modules_and_keeps_the_context(fake):
    # numba's Context.reset(): what gpuhost made goes, the CUDA context (which CuPy, PyTorch
    # and JAX share) stays, and so do gpuhost's streams and events
    proc = run_python(CONTEXT_RESET)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "grown True 2 1",
        "after {'contexts': 0, 'allocations': 0, 'host_allocations': 2, 'modules': 0, "
        "'streams': 1, 'events': 1}",
        "same context True", "stream and event work True", "viewed pinned memory 120.0",
        "array CUDA_ERROR_INVALID_HANDLE True", "kernel CUDA_ERROR_INVALID_HANDLE True",
        "module CUDA_ERROR_INVALID_HANDLE True", "unloaded True", "no double free 0 1 0",
        "fresh True"]


RESET_WITH_IPC_AND_THREADS = FAKE_LIVE + "PTX = %r\n" % PTX + r"""
import pickle, threading
import numpy as np
import gpuhost
rng = np.random.default_rng()
host = rng.random(64)
base = gpuhost.to_device(host)
handle = pickle.loads(pickle.dumps(base.get_ipc_handle()))
opened = handle.open()  # the fake opens a handle in the process that made it
print("mapped", live("ipc_mappings"))
gpuhost.current_context().reset()
print("unmapped", live("ipc_mappings"))
for arr in (opened, base):
    try:
        arr.copy_to_host()
    except gpuhost.CudaAPIError as e:
        print("stale", e.name)
handle.close()  # closing what the reset closed is no second cuIpcCloseMemHandle
print("closed", live("ipc_mappings"))

# a reset in one thread while another allocates, copies and launches
k = gpuhost.Module(PTX).get_function("k")
errors, stop = [], threading.Event()
def work():
    kern = k
    while not stop.is_set():
        try:
            d = gpuhost.to_device(host)
            kern[1, 1](d)
            if not np.array_equal(d.copy_to_host(), host):
                errors.append("wrong data")
        except gpuhost.CudaAPIError as e:
            errors.append(e.name)
            kern = gpuhost.Module(PTX).get_function("k")  # the old one went with the reset
t = threading.Thread(target=work)
t.start()
for _ in range(20):
    gpuhost.current_context().reset()
stop.set()
t.join()
print("thread errors", sorted(set(errors)) in ([], ["CUDA_ERROR_INVALID_HANDLE"]))
"""


def test_a_reset_closes_ipc_mappings_and_a_thread_using_old_objects_gets_errors_only(fake):
    proc = run_python(RESET_WITH_IPC_AND_THREADS)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "mapped 1", "unmapped 0", "stale CUDA_ERROR_INVALID_HANDLE",
        "stale CUDA_ERROR_INVALID_HANDLE", "closed 0", "thread errors True"]


def test_context_and_device_reset_are_refused_while_a_gpuhost_stream_captures(device0, fake):
    s = gpuhost.stream()
    d = gpuhost.to_device(np.random.default_rng().random(8))
    s.begin_capture()
    try:
        for call, name in ((gpuhost.current_context().reset, "Context"),
                           (gpuhost.get_current_device().reset, "Device")):
            with pytest.raises(gpuhost.StreamCaptureError,
                               match=r"%s\.reset\(\) of device 0 while 1 gpuhost stream is "
                                     r"capturing a graph in its context: .* end_capture\(\) "
                                     r"first" % name):
                call()
    finally:
        s.end_capture()
    np.testing.assert_array_equal(d.copy_to_host(), d.copy_to_host())  # nothing was freed


DEVICE_RESET_WARNS = FAKE_LIVE + r"""
import ctypes, sys, types, warnings
import gpuhost
dev = gpuhost.get_current_device()               # C alone: gpuhost.devices not imported
retain = entry("cuDevicePrimaryCtxRetain", ctypes.c_void_p, ctypes.c_int)
release = entry("cuDevicePrimaryCtxRelease", ctypes.c_int)
other = ctypes.c_void_p()
retain(ctypes.byref(other), 0)                           # another library's hold
sys.modules["jax"] = types.ModuleType("jax")             # ... which the warning names
d = gpuhost.to_device([1.0, 2.0])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    dev.reset()
print([(w.category.__name__, "held by JAX" in str(w.message)) for w in caught],
      "gpuhost.devices" in sys.modules)
print("left alive", live("contexts"), live("allocations"))
d = gpuhost.to_device([1.0, 2.0])
with warnings.catch_warnings():
    warnings.simplefilter("error", gpuhost.DeviceResetWarning)
    try:
        dev.reset()
    except gpuhost.DeviceResetWarning as w:
        print("raised", "reset(force=True) destroys it anyway" in str(w))
print("not reset", live("contexts"), live("allocations"))
d = gpuhost.to_device([1.0, 2.0])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    dev.reset(force=True)
print("forced", [("reset(force=True) destroys it: their" in str(w.message)) for w in caught],
      live("contexts"))
retain(ctypes.byref(other), 0)   # the other library's hold, anew: gone with the forced reset
release(0)
gpuhost.get_current_device()
with warnings.catch_warnings():
    warnings.simplefilter("error")
    dev.reset()                                # gpuhost alone: no warning
print("alone", live("contexts"))
"""


def test_device_reset_warns_naming_who_else_holds_the_primary_context(fake):
    proc = run_python(DEVICE_RESET_WARNS)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "[('DeviceResetWarning', True)] False", "left alive 1 0", "raised True", "not reset 1 0",
        "forced [True] 1", "alone 1"]


def test_reset_of_a_device_not_current_leaves_the_stack_alone():
    code = (
        "import gpuhost\n"
        "d = gpuhost.gpus[0]\n"
        "d.get_primary_context()\n"
        "d.reset()\n"
        "print(gpuhost.gpus.current, d.get_primary_context().handle is not None)\n"
    )
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["None", "True"]


@pytest.mark.skipif(DRIVER != "fake", reason="fake driver: destroyed contexts are detectable")
def test_a_context_another_threads_reset_destroyed_is_replaced_by_the_new_one_when_used():
    code = (
        "import gpuhost, threading\n"
        "ctx = gpuhost.current_context()\n"
        "old = ctx.handle\n"
        "def other():\n"
        "    gpuhost.gpus[0].reset()\n"   # another thread destroys it under us
        "t = threading.Thread(target=other); t.start(); t.join()\n"
        "again = gpuhost.current_context()\n"   # its handle, still current here, stands for it
        "print(again is ctx, ctx.handle not in (None, old))\n"
        "print(gpuhost.to_device([1.0, 2.0]).copy_to_host().tolist())\n"
        "with gpuhost.gpus[0]:\n"
        "    gpuhost.gpus[0].reset()\n"
        "print(gpuhost.gpus.current is gpuhost.gpus[0])\n"
    )
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["True True", "[1.0, 2.0]", "True"]


@pytest.mark.resets_context
def test_objects_used_after_close_or_reset_name_what_ended_their_context(device0):
    # device 0: the device a thread with no context current gets again after close()
    host = np.random.default_rng().random(5)
    a, s = gpuhost.to_device(host), gpuhost.stream()
    gpuhost.close()
    with pytest.raises(gpuhost.CudaAPIError, match=r"(?s)CONTEXT_IS_DESTROYED.*made in device 0's "
                                                   r"context before gpuhost\.close\(\) ended it"):
        a.copy_to_host()
    with pytest.raises(gpuhost.CudaAPIError, match=r"before gpuhost\.close\(\) ended it"):
        s.synchronize()
    b, s = gpuhost.to_device(host), gpuhost.stream()
    gpuhost.current_context().reset()
    with pytest.raises(gpuhost.CudaAPIError, match=r"(?s)INVALID_HANDLE.*made in device 0's "
                                                   r"context before Context\.reset\(\) freed "
                                                   r"the memory and code gpuhost had made"):
        b.copy_to_host()
    s.synchronize()  # a stream outlives a Context.reset(), as numba's do
    np.testing.assert_array_equal(gpuhost.to_device(host).copy_to_host(), host)


def test_the_tests_that_reset_a_context_run_after_the_others(request):
    # conftest.py orders them last: on a real GPU a reset ends CuPy's and PyTorch's state in
    # this process, so no test of theirs may come after one
    flags = [item.get_closest_marker("resets_context") is not None
             for item in request.session.items]
    assert flags == sorted(flags)
