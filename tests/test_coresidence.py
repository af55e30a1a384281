"""gpuhost in one process with PyTorch, CuPy and JAX: every gpuhost call with a process-wide
effect leaves their state as it was (docs/guide/beside.md).

Each call runs in a fresh process where torch and CuPy (and JAX where it imports) hold live
state on the device gpuhost shares with them: tensors, their cuBLAS handles, blocks their
allocators cache.  After the call each library computes again and its results are compared
exactly with NumPy's or with its own from before, and the process must exit with 0: a crash
in their finalizers at exit fails the test as surely as a wrong number.  The processes run
side by side (one device holds them all), started together when the first test asks.

Real GPU only: on the fake driver the other libraries cannot run.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.gpu

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# What every process does first: the other libraries' state, and how it is checked again.
PRELUDE = r'''
import json, os, subprocess, sys, threading, warnings
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
import numpy as np
rng = np.random.default_rng()
host = rng.random(4096).astype(np.float32)
import torch
import cupy
try:
    import jax
    import jax.numpy as jnp
except ImportError:
    jax = None
t = torch.from_numpy(host).cuda()
tm = torch.from_numpy(rng.random((64, 64)).astype(np.float32)).cuda()
t_mm = (tm @ tm).cpu().numpy()                       # a cuBLAS handle of torch's
torch.empty(8 << 20, device="cuda")                  # a block torch's allocator caches
c = cupy.asarray(host)
cm = cupy.asarray(rng.random((64, 64)).astype(np.float32))
c_mm = cupy.asnumpy(cm @ cm)                         # a cuBLAS handle of CuPy's
cupy.empty(8 << 20, cupy.uint8)                      # a block CuPy's pool caches
if jax is not None:
    j = jax.device_put(host)
    np.asarray(j * 2)
torch.cuda.synchronize()
cupy.cuda.runtime.deviceSynchronize()
import gpuhost
TWICE = 'extern "C" __global__ void twice(float *a, int n) {' \
        ' int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] *= 2; }'


def others_exact():
    """Each library computes again: exact against NumPy, or against its own result from before."""
    got = {
        "torch": bool(np.array_equal((t * 2).cpu().numpy(), host * 2)),
        "torch_mm": bool(np.array_equal((tm @ tm).cpu().numpy(), t_mm)),
        "torch_new": bool(np.array_equal((torch.from_numpy(host).cuda() + t).cpu().numpy(),
                                         host + host)),
        "cupy": bool(np.array_equal(cupy.asnumpy(c * 2), host * 2)),
        "cupy_mm": bool(np.array_equal(cupy.asnumpy(cm @ cm), c_mm)),
        "cupy_new": bool(np.array_equal(cupy.asnumpy(cupy.asarray(host) + c), host + host)),
    }
    if jax is not None:
        got["jax"] = bool(np.array_equal(np.asarray(j * 2), host * 2))
    return got


def report(**extra):
    print("RESULT " + json.dumps(dict(others_exact(), **extra)), flush=True)
'''

CALLS = {}


def call(name):
    def register(body):
        CALLS[name] = textwrap.dedent(body)
        return body
    return register


call("context_reset")('''
    d = gpuhost.to_device(host)
    view = gpuhost.as_cuda_array(t)              # a gpuhost view of a torch tensor
    k = gpuhost.SourceModule(TWICE).get_function("twice")
    k[16, 256](d, host.size)
    gpuhost.current_context().reset()            # gpuhost's memory and code go, not theirs
    errors = []
    for use in (d.copy_to_host, lambda: k[16, 256](gpuhost.to_device(host), host.size),
                lambda: gpuhost.SourceModule(TWICE).get_function("twice")[16, 256](view, 4096)):
        try:
            use()
            errors.append("no error")
        except gpuhost.CudaAPIError as e:
            errors.append(e.name)
    k2 = gpuhost.SourceModule(TWICE).get_function("twice")
    out = torch.from_numpy(host).cuda()          # a tensor passed itself: read anew
    k2[16, 256](out, host.size)
    gpuhost.synchronize()
    report(errors=errors, launched=bool(np.array_equal(out.cpu().numpy(), host * 2)))
''')

call("device_reset")('''
    d = gpuhost.to_device(host)
    s = gpuhost.stream()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gpuhost.get_current_device().reset()     # they hold the context: it is left to them
    said = [str(w.message) for w in caught if issubclass(w.category, gpuhost.DeviceResetWarning)]
    s.synchronize()                               # the same context: gpuhost's stream goes on
    names = ["PyTorch", "CuPy"] + (["JAX"] if jax is not None else [])
    fresh = gpuhost.to_device(host)
    report(warned=len(said), named=bool(said) and all(n in said[0] for n in names),
           fresh=bool(np.array_equal(fresh.copy_to_host(), host)))
''')

call("close")('''
    d = gpuhost.to_device(host)
    k = gpuhost.SourceModule(TWICE).get_function("twice")
    gpuhost.close()
    fresh = gpuhost.to_device(host)
    k = gpuhost.SourceModule(TWICE).get_function("twice")
    k[16, 256](fresh, host.size)
    report(fresh=bool(np.array_equal(fresh.copy_to_host(), host * 2)))
''')

call("select_and_stack")('''
    gpuhost.select_device(0)
    with gpuhost.gpus[0]:
        d = gpuhost.to_device(host)
    ctx = gpuhost.current_context()
    ctx.push()
    e = gpuhost.to_device(host)
    ctx.pop()
    report(ok=bool(np.array_equal(d.copy_to_host() + e.copy_to_host(), host + host)))
''')

call("kernel_attributes_and_profiler")('''
    k = gpuhost.SourceModule(TWICE).get_function("twice")
    k.preferred_shared_memory_carveout = 50       # a gpuhost kernel's own: no one else's
    k.max_dynamic_shared_size_bytes = 64 << 10
    gpuhost.profile_start()
    d = gpuhost.to_device(host)
    k[16, 256](d, host.size)
    gpuhost.profile_stop()
    report(ok=bool(np.array_equal(d.copy_to_host(), host * 2)))
''')

call("pools")('''
    import gpuhost.memory as ghmem
    arrays = [gpuhost.device_array(int(n), np.uint8) for n in rng.integers(1, 4 << 20, 64)]
    del arrays
    pool = ghmem.MemoryPool()
    blocks = [pool.malloc(1 << 20) for _ in range(8)]
    del blocks
    pool.free_all_blocks()
    ghmem.get_default_memory_pool().free_all_blocks()
    gpuhost._core._release_pool_blocks()
    d = gpuhost.to_device(host)
    report(ok=bool(np.array_equal(d.copy_to_host(), host)))
''')

call("capture_beside_other_threads")('''
    # gpuhost captures in this thread (its default mode) while torch and CuPy, in threads of
    # their own, allocate sizes their caches never held and compute: none of it is refused.
    # (Work on the legacy default stream waits for every blocking stream, which CUDA refuses
    # while one captures, whoever captures: the capture is on a non-blocking stream, and torch
    # and CuPy work on streams of their own, as beside their own captures.)
    done, results = threading.Event(), {}
    def torch_work():
        try:
            with torch.cuda.stream(torch.cuda.Stream()):  # not the legacy stream: see below
                for n in (3 << 20, 5 << 20, 7 << 20):
                    x = torch.full((n,), 1.5, device="cuda")
                    results.setdefault("torch", []).append(float(x.sum().item()) == 1.5 * n)
        except Exception as e:
            results["torch_error"] = repr(e)
    def cupy_work():
        try:
            with cupy.cuda.Stream(non_blocking=True):
                for n in (3 << 20, 9 << 20):
                    x = cupy.full((n,), 2, cupy.int32)
                    results.setdefault("cupy", []).append(int(x.sum()) == 2 * n)
        except Exception as e:
            results["cupy_error"] = repr(e)
    d = gpuhost.to_device(host)
    k = gpuhost.SourceModule(TWICE).get_function("twice")
    s = gpuhost.stream(non_blocking=True)
    with gpuhost.graph_capture(s) as cap:
        workers = [threading.Thread(target=torch_work), threading.Thread(target=cupy_work)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(120)
        k[16, 256, s](d, host.size)
    exe = cap.graph.instantiate()
    exe.launch(s)
    exe.launch(s)
    s.synchronize()
    report(threads=results, replayed=bool(np.array_equal(d.copy_to_host(), host * 4)))
''')

call("default_stream")('''
    k = gpuhost.SourceModule(TWICE).get_function("twice")
    d = gpuhost.to_device(host)                 # gpuhost on the legacy default stream
    y = t * 3                                   # torch on its current stream, meanwhile
    k[16, 256](d, host.size)
    z = c * 3
    gpuhost.synchronize()
    report(ok=bool(np.array_equal(d.copy_to_host(), host * 2)),
           torch_meanwhile=bool(np.array_equal(y.cpu().numpy(), host * 3)),
           cupy_meanwhile=bool(np.array_equal(cupy.asnumpy(z), host * 3)))
''')

call("ipc")('''
    # another process exports a gpuhost array; this one opens it beside torch and CuPy, then
    # resets its context with the mapping open, then closes the handle
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    import pickle, base64
    handle = pickle.loads(base64.b64decode(child.stdout.readline()))
    with handle as opened:
        read = opened.copy_to_host()
        gpuhost.current_context().reset()        # the mapping is closed with gpuhost's state
        try:
            opened.copy_to_host()
            after = "no error"
        except gpuhost.CudaAPIError as e:
            after = e.name
    child.stdin.write("done\\n")
    child.stdin.close()
    child.wait(60)
    report(read=bool(np.array_equal(read, np.arange(4096, dtype=np.float32))), after=after,
           child=child.returncode)
''')

CHILD = r'''
import base64, pickle, sys
import numpy as np
import gpuhost
d = gpuhost.to_device(np.arange(4096, dtype=np.float32))
print(base64.b64encode(pickle.dumps(d.get_ipc_handle())).decode(), flush=True)
sys.stdin.readline()
'''

PLUGIN_TESTS = r'''
import numpy as np
import torch

torch.zeros(1, device="cuda")  # torch's CUDA begins before the tests
kept = []


def test_torch_grows_its_cache(gpuhost_leak_check):
    # torch's caching allocator takes 256 MiB and keeps it: not gpuhost's leak
    kept.append(torch.empty(64 << 20, device="cuda"))
    import gpuhost
    d = gpuhost.to_device(np.arange(16.0))
    assert d.copy_to_host()[3] == 3.0


def test_a_gpuhost_leak_is_still_found(gpuhost_leak_check):
    import gpuhost
    kept.append(gpuhost.to_device(np.arange(16.0)))
'''

call("pytest_plugin")('''
    # the plugin's own session beside torch, two workers on the one device
    import tempfile
    folder = tempfile.mkdtemp()
    with open(os.path.join(folder, "test_beside.py"), "w") as f:
        f.write(PLUGIN_TESTS)
    import importlib.metadata
    installed = any(ep.name == "gpuhost" for ep in importlib.metadata.entry_points(group="pytest11"))
    plugin = [] if installed else ["-p", "gpuhost.pytest_plugin"]  # loaded once either way
    proc = subprocess.run([sys.executable, "-m", "pytest", *plugin, "-q",
                           "-rA", "-p", "no:cacheprovider", "--rootdir", folder, folder],
                          capture_output=True, text=True, timeout=300, cwd=folder)
    lines = proc.stdout.splitlines()
    report(summary=lines[-1] if lines else proc.stderr[-300:],
           torch_ok="PASSED test_beside.py::test_torch_grows_its_cache" in proc.stdout,
           leak_found="FAILED test_beside.py::test_a_gpuhost_leak_is_still_found" in proc.stdout
           and "gpuhost objects made during the test are still alive" in proc.stdout)
''')

# What each call's process must report beside the other libraries' checks.
EXPECTED = {
    "context_reset": {"errors": ["CUDA_ERROR_INVALID_HANDLE"] * 3, "launched": True},
    "device_reset": {"warned": 1, "named": True, "fresh": True},
    "close": {"fresh": True},
    "select_and_stack": {"ok": True},
    "kernel_attributes_and_profiler": {"ok": True},
    "pools": {"ok": True},
    "capture_beside_other_threads": {"threads": {"torch": [True] * 3, "cupy": [True] * 2},
                                     "replayed": True},
    "default_stream": {"ok": True, "torch_meanwhile": True, "cupy_meanwhile": True},
    "ipc": {"read": True, "after": "CUDA_ERROR_INVALID_HANDLE", "child": 0},
}


def _script(name):
    return "\n".join([PRELUDE, "CHILD = %r" % CHILD, "PLUGIN_TESTS = %r" % PLUGIN_TESTS,
                      CALLS[name]])


def _env(allocator=None):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               XLA_PYTHON_CLIENT_PREALLOCATE="false", PYTHONFAULTHANDLER="1")
    env.pop("CUDA_DEVICE", None)
    if allocator is not None:
        env["GPUHOST_ALLOCATOR"] = allocator
    return env


RUNS = [(name, None) for name in CALLS] + [("pools", "driver"), ("context_reset", "driver")]


@pytest.fixture(scope="module")
def outcomes():
    """Every call's process, started together: {(name, allocator): (exit code, stdout, stderr)}."""
    procs = {}
    for name, allocator in RUNS:
        procs[name, allocator] = subprocess.Popen(
            [sys.executable, "-c", _script(name)], env=_env(allocator), cwd=ROOT,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    done = {}
    for key, proc in procs.items():
        try:
            out, err = proc.communicate(timeout=400)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        done[key] = (proc.returncode, out, err)
    return done


def _result(outcome):
    code, out, err = outcome
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    assert code == 0 and lines, "exit code %s\nstdout:\n%s\nstderr:\n%s" % (code, out, err[-4000:])
    return json.loads(lines[-1][len("RESULT "):])


@pytest.mark.parametrize("name, allocator", RUNS, ids=["%s%s" % (n, "-" + a if a else "")
                                                         for n, a in RUNS])
def test_a_call_leaves_torch_cupy_and_jax_exact_and_the_process_exits_0(outcomes, name, allocator):
    got = _result(outcomes[name, allocator])
    for lib in ("torch", "torch_mm", "torch_new", "cupy", "cupy_mm", "cupy_new", "jax"):
        if lib in got:
            assert got.pop(lib) is True, (name, lib, got)
    if name == "pytest_plugin":
        assert got["torch_ok"] and got["leak_found"], got
        assert "1 failed, 1 passed" in got["summary"], got
        return
    assert got == EXPECTED[name]
