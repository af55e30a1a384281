"""Reliability: a sticky error and recovery from it, threads, leaks at scale, interpreter
exit with live objects, fork.

The tests that need kernels or real memory figures are marked gpu; the others run on the
fake driver too.  Whatever could poison the process (a sticky error, fork, exit) runs in
a fresh interpreter (conftest.run_python).
"""
import gc
import os
import threading
import time

import numpy as np
import pytest

import gpuhost
from gpuhost import CudaAPIError, CudaDriverError
from gpuhost._core import _live_counts, default_pool  # bound now: a test re-imports _core
from conftest import DRIVER, FAKE_PATH, run_python

rng = np.random.default_rng()
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCALE = r"""
extern "C" __global__ void scale(const float *x, float *y, float a, float b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __fadd_rn(__fmul_rn(a, x[i]), b);  /* no FMA: as numpy rounds */
}
"""


def host_rss():
    """This process's resident set size in bytes (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def release_pool_blocks():
    """Give the blocks every context's default pool holds back to the driver."""
    for dev in gpuhost.gpus:
        ctx = dev.get_primary_context()
        if ctx.handle is not None:
            default_pool(ctx).free_all_blocks()


# ---- a sticky error: an illegal address, then recovery ----

STICKY = r"""
import gc, sys, warnings
import numpy as np
import gpuhost
from gpuhost import CudaAPIError

WILD = r'''
extern "C" __global__ void wild(float *p)
{
    p[((size_t)1 << 38) + threadIdx.x] = 1.0f;   /* 1 TiB past the array: unmapped */
}
'''
SCALE = %(scale)r
warnings.simplefilter("error")             # a cleanup warning fails the script
x = np.arange(256, dtype=np.float32)
d = gpuhost.to_device(x)
s = gpuhost.stream()
e = gpuhost.event()
wild = gpuhost.RawKernel(WILD, "wild")
good = gpuhost.RawKernel(SCALE, "scale")
good((1,), (256,), (d, d, np.float32(1), np.float32(0), np.int32(256)))
wild((1,), (32,), (d,), stream=s)
try:
    gpuhost.synchronize()
except CudaAPIError as exc:
    assert exc.name == "CUDA_ERROR_ILLEGAL_ADDRESS" and exc.code == 700, exc
    assert exc.call == "cuCtxSynchronize" and "illegal" in str(exc).lower(), exc
else:
    raise AssertionError("the wild write went unnoticed")

# Every later call that reaches the driver raises the same sticky error, never crashes.
later = {
    "synchronize": gpuhost.synchronize,
    "stream.synchronize": s.synchronize,
    "copy_to_host": d.copy_to_host,
    "to_device": lambda: gpuhost.to_device(np.ones(1000, np.float32)).copy_to_host(),
    "launch": lambda: (good((1,), (256,), (d, d, np.float32(2), np.float32(1),
                                           np.int32(256))), gpuhost.synchronize()),
    "event": lambda: (e.record(s), e.synchronize()),
}
for what, call in later.items():
    try:
        call()
    except CudaAPIError as exc:
        assert exc.name == "CUDA_ERROR_ILLEGAL_ADDRESS", (what, exc)
        assert str(exc).startswith(exc.call + " failed: [700] "), (what, exc)
    else:
        raise AssertionError("%%s worked in a context with a sticky error" %% what)
    print("sticky:", what)

# The driver documents that nothing brings the process back: a reset or close() gives the
# dead context up, and what follows either fails with the same sticky error (today's
# drivers) or, should a driver ever recover, must give exact results.
def fails_sticky(what, call):
    try:
        call()
    except CudaAPIError as exc:
        assert exc.name in ("CUDA_ERROR_ILLEGAL_ADDRESS",
                            "CUDA_ERROR_CONTEXT_IS_DESTROYED"), (what, exc)
        if exc.code == 700:
            assert "only a new process can use the GPU again" in str(exc), (what, exc)
        return True
    return False

fails_sticky("recover", lambda: %(recover)s)
stuck = [what for what, call in (
    ("copy_to_host", d.copy_to_host), ("stream", s.synchronize),
    ("event", lambda: e.record(s)),
    ("launch", lambda: good((1,), (256,), (d, d, np.float32(1), np.float32(0),
                                           np.int32(256)))))
    if fails_sticky(what, call)]
# ... what the dead context made frees quietly (warnings are errors here) ...
del d, s, e, good, wild
gc.collect()

# ... and new work either fails the same way or is exact.
h = np.random.default_rng().standard_normal(4096).astype(np.float32)
def new_work():
    a = gpuhost.to_device(h)
    out = gpuhost.device_array_like(a)
    scale = gpuhost.RawKernel(SCALE, "scale")
    stream = gpuhost.stream()
    scale((16,), (256,), (a, out, np.float32(3), np.float32(-1), np.int32(4096)),
          stream=stream)
    got = out.copy_to_host(stream=stream)
    stream.synchronize()
    assert np.array_equal(got, np.float32(3) * h + np.float32(-1)), "wrong result"
assert len(stuck) == 4, stuck   # nothing of the dead context works
if fails_sticky("new work", new_work):
    print("still sticky")
else:
    print("recovered")
"""


@pytest.mark.gpu
@pytest.mark.parametrize("recover", ["gpuhost.gpus[0].reset()", "gpuhost.close()"])
def test_an_illegal_address_is_sticky_and_every_later_call_fails_cleanly(recover):
    proc = run_python(STICKY % {"scale": SCALE, "recover": recover}, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("sticky:") == 6, proc.stdout
    assert proc.stdout.endswith(("still sticky\n", "recovered\n")), proc.stdout
    assert "Warning" not in proc.stderr, proc.stderr


# ---- threads ----

THREADS = 12
ITERATIONS = 40


def test_threads_allocate_copy_record_synchronize_and_launch_on_their_own_streams():
    """12 threads at once, each on its own stream: allocate, copy both ways, record and
    wait for events, synchronize, and (on a GPU) launch; every result checked."""
    launch = DRIVER == "real"
    kernel = gpuhost.RawKernel(SCALE, "scale") if launch else None
    ctx = gpuhost.current_context()
    barrier = threading.Barrier(THREADS)
    counts = {"allocations": 0, "copies": 0, "events": 0, "synchronizes": 0, "launches": 0}
    lock = threading.Lock()
    errors = []

    def worker(k):
        local = dict.fromkeys(counts, 0)
        try:
            ctx.push()
            try:
                s = gpuhost.stream()
                done = gpuhost.event()
                barrier.wait(timeout=30)
                for i in range(ITERATIONS):
                    n = int(rng.integers(1, 5000))
                    h = rng.standard_normal(n).astype(np.float32)
                    d = gpuhost.to_device(h, stream=s)
                    y = gpuhost.device_array(n, np.float32, stream=s)
                    local["allocations"] += 2
                    if launch:
                        a, b = np.float32(k + 1), np.float32(i)
                        kernel(((n + 255) // 256,), (256,), (d, y, a, b, np.int32(n)),
                               stream=s)
                        expect = a * h + b
                        local["launches"] += 1
                    else:
                        y.copy_to_device(d, stream=s)
                        expect = h
                    done.record(s)
                    local["events"] += 1
                    out = y.copy_to_host(stream=s)
                    local["copies"] += 3
                    if i % 2:
                        done.synchronize()
                        s.synchronize()
                    else:
                        s.synchronize()
                    local["synchronizes"] += 1
                    if not np.array_equal(out, expect):
                        raise AssertionError("thread %d iteration %d: wrong result" % (k, i))
                    del d, y
            finally:
                ctx.pop()
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append("thread %d: %r" % (k, e))
        with lock:
            for key, value in local.items():
                counts[key] += value

    threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(THREADS)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "threads still running: a deadlock"
    assert not errors, errors
    print("thread stress: %d threads x %d iterations in %.2f s: %s"
          % (THREADS, ITERATIONS, time.monotonic() - started, counts))
    assert counts["allocations"] == THREADS * ITERATIONS * 2
    assert counts["synchronizes"] == counts["events"] == THREADS * ITERATIONS
    assert counts["launches"] == (THREADS * ITERATIONS if launch else 0)


# ---- leaks at scale ----

@pytest.mark.no_sanitizer("ASan's quarantine keeps freed memory: RSS grows by design")
def test_many_to_device_copy_to_host_free_cycles_leave_memory_at_its_baseline():
    """100,000 cycles: the device memory this process holds (the default pool's bytes in use
    and held, once its blocks are released; the live Allocations) and host RSS end where
    they started.  Not the device's free memory: other processes (pytest-xdist's workers)
    take and give back theirs meanwhile."""
    cycles = 100_000
    ctx = gpuhost.current_context()
    pool = default_pool(ctx)
    h = rng.integers(-2**31, 2**31, 64, dtype=np.int32)

    def cycle(n):
        for i in range(n):
            d = gpuhost.to_device(h)
            out = d.copy_to_host()
            del d
            if out[i % 64] != h[i % 64]:
                raise AssertionError("cycle %d: wrong value" % i)

    def measure():
        gc.collect()
        release_pool_blocks()
        held = (pool.used_bytes, pool.free_bytes, _live_counts()["Allocation"])
        return held, host_rss()

    cycle(2000)  # warm: the pool's size class, numpy's and Python's free lists
    held_before, rss_before = measure()
    started = time.monotonic()
    cycle(cycles)
    elapsed = time.monotonic() - started
    held_after, rss_after = measure()
    assert np.array_equal(gpuhost.to_device(h).copy_to_host(), h)
    print("leak cycles: %d in %.1f s; pool used, held, live Allocations %s -> %s; host RSS "
          "%d -> %d bytes" % (cycles, elapsed, held_before, held_after, rss_before, rss_after))
    assert held_after == held_before
    assert rss_after - rss_before < 8 << 20, (rss_before, rss_after)


# ---- interpreter exit with live objects ----

EXIT = r"""
import threading, time, ctypes, os
import numpy as np
import gpuhost, gpuhost.memory as mem
from gpuhost.tools import DeviceMemoryPool, PageLockedMemoryPool

s = gpuhost.stream()
other = gpuhost.stream(non_blocking=True)
arrays = [gpuhost.to_device(np.arange(1000) * i, stream=s) for i in range(10)]
big = gpuhost.to_device(np.ones(3 << 20, np.float32))    # a staged copy: the ring's threads
e = gpuhost.event()
e.record(s)
other.wait_event(e)
ran = []
def slow(stream, status, arg):
    time.sleep(0.05)
    ran.append(arg)
if %(gate)s:
    fake = ctypes.CDLL(os.environ["GPUHOST_CUDA_DRIVER"])
    fake.fakecuda_gate_close()                             # the callbacks never run
for i in range(5):
    s.add_callback(slow, i)
pool = mem.MemoryPool()
p = pool.malloc(1 << 20)
q = mem.malloc_async(4096, stream=other)
dpool = DeviceMemoryPool()
block = dpool.allocate(5000)
hpool = PageLockedMemoryPool()
hbuf = hpool.allocate((64,), np.float32)
pinned = gpuhost.pinned_array(100)
mapped = gpuhost.mapped_array(100)
view = arrays[3][10:20]
cycle = [arrays[0], s]
cycle.append(cycle)                                        # only the cycle collector frees it
waiting = threading.Thread(target=lambda: s.synchronize(), daemon=True)
waiting.start()                                            # a thread blocked in the driver
gpuhost.current_context().push()                           # left pushed
print("exiting", flush=True)
"""


@pytest.mark.parametrize("gate", [False, pytest.param(True, marks=pytest.mark.fake)],
                         ids=["callbacks-running", "callbacks-held"])
def test_the_interpreter_exits_cleanly_with_live_objects_and_pending_callbacks(gate):
    if gate and DRIVER != "fake":
        pytest.skip("holding callbacks back needs the fake driver")
    started = time.monotonic()
    proc = run_python(EXIT % {"gate": gate}, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == "exiting\n", proc.stdout
    for bad in ("Fatal Python error", "Segmentation", "Aborted", "Traceback", "Warning"):
        assert bad not in proc.stderr, proc.stderr
    assert time.monotonic() - started < 30


# ---- fork ----

FORK = r"""
import os, sys, time, warnings
import numpy as np
# the driver's own threads make Python 3.12 warn at fork(): what this test is about
warnings.filterwarnings("ignore", "This process .* is multi-threaded", DeprecationWarning)
import gpuhost
from gpuhost import CudaDriverError

d = gpuhost.to_device(np.arange(10))
s = gpuhost.stream()
e = gpuhost.event()
big = gpuhost.to_device(np.ones(2 << 20, np.float32))
pid = os.fork()
if pid == 0:
    calls = {
        "to_device": lambda: gpuhost.to_device(np.arange(5)),
        "device_array": lambda: gpuhost.device_array(5),
        "copy_to_host": d.copy_to_host,
        "staged copy_to_host": big.copy_to_host,
        "stream": gpuhost.stream,
        "synchronize": s.synchronize,
        "event.record": e.record,
        "current_context": gpuhost.current_context,
    }
    for what, call in calls.items():
        try:
            call()
        except CudaDriverError as exc:
            assert "fork" in str(exc) and "spawn" in str(exc), (what, exc)
            print("child:", what, type(exc).__name__, flush=True)
        else:
            print("child: %%s worked" %% what, flush=True)
    # the child ends as a script does: finalization frees what it inherited
else:
    deadline = time.monotonic() + %(timeout)d
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            print("parent: the child hung")
            sys.exit(1)
        time.sleep(0.01)
    print("parent: child status", status)
    assert np.array_equal(d.copy_to_host(), np.arange(10))   # the parent is unharmed
    print("parent: ok")
"""


def test_a_child_forked_after_cuda_use_gets_a_clear_error_not_a_hang():
    proc = run_python(FORK % {"timeout": 30}, timeout=90)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    child = [line for line in lines if line.startswith("child:")]
    assert len(child) == 8 and all("worked" not in line for line in child), proc.stdout
    assert lines[-2:] == ["parent: child status 0", "parent: ok"], proc.stdout
    assert "Traceback" not in proc.stderr and "Warning" not in proc.stderr, proc.stderr


def test_a_child_forked_before_cuda_use_can_use_it():
    code = r"""
import os, numpy as np
import gpuhost
pid = os.fork()
if pid == 0:
    ok = np.array_equal(gpuhost.to_device(np.arange(7)).copy_to_host(), np.arange(7))
    os._exit(0 if ok else 3)
_, status = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(status))
print("parent", np.array_equal(gpuhost.to_device(np.arange(4)).copy_to_host(), np.arange(4)))
"""
    proc = run_python(code, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "child 0\nparent True\n", proc.stdout + proc.stderr
