"""Host code written against cupy.cuda: allocator, pool, pointers, streams, the current
stream, callbacks, events, NVTX and the profiler. Run as

    python tests/scripts/cupy_host_script.py cupy       # with `from cupy import cuda`
    python tests/scripts/cupy_host_script.py gpuhost    # with gpuhost.compat.cupy

It prints only what must be the same under both (no pointers, no timings), so the two
outputs can be compared line by line (tests/test_compat_cupy.py does, on a GPU).
"""
import os
import sys

import numpy as np

WHICH = sys.argv[1] if len(sys.argv) > 1 else "gpuhost"
if WHICH == "cupy":
    from cupy import cuda
elif WHICH == "gpuhost":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
        __file__)))))
    from gpuhost.compat import cupy as cuda
else:
    sys.exit("usage: cupy_host_script.py cupy|gpuhost")

rng = np.random.default_rng(20240611)
N = 1 << 20


def show(*args):
    print(*args, flush=True)


def handle_line(name, get):
    try:
        h = get()
    except Exception as e:  # no usable library: both print the same where both lack it
        return "%s: unavailable (%s)" % (name, type(e).__name__)
    return "%s: %s %s %s" % (name, type(h).__name__, h != 0, h == get())


# ---- devices ----
dev = cuda.Device()
show("device:", dev.id, int(dev), repr(dev))
show("compute capability:", dev.compute_capability, type(dev.compute_capability).__name__)
with cuda.Device(0) as entered:
    show("in with:", cuda.Device().id, entered == dev)
show("after with:", cuda.Device().id)
dev.use()
dev.synchronize()
free, total = dev.mem_info
show("mem_info:", total > 0, 0 < free <= total)
show("equality:", cuda.Device(0) == cuda.Device(0), cuda.Device(0) != cuda.Device(0))
show(handle_line("cublas", lambda: cuda.Device(0).cublas_handle))
show(handle_line("cusolver", lambda: cuda.Device(0).cusolver_handle))

# ---- allocator, pool, pointers ----
previous = cuda.get_allocator()
pool = cuda.MemoryPool()
cuda.set_allocator(pool.malloc)
show("allocator is the pool's:", cuda.get_allocator() == pool.malloc)
p = cuda.alloc(N)
show("pointer:", type(p).__name__, p.device_id)
show("pool: used", pool.used_bytes(), "free", pool.free_bytes(), "blocks", pool.n_free_blocks())
host = rng.integers(0, 256, N, dtype=np.uint8)
out = np.zeros_like(host)
p.copy_from_host(host.ctypes.data, N)
p.copy_to_host(out.ctypes.data, N)
show("copy round trip:", bool((out == host).all()))
q = p + 4096
q.copy_to_host(out.ctypes.data, 1024)
show("offset copy:", bool((out[:1024] == host[4096:5120]).all()))
p.memset(7, 512)
p.copy_to_host(out.ctypes.data, 1024)
show("memset:", bool((out[:512] == 7).all()), bool((out[512:1024] == host[512:1024]).all()))
del p, q
show("freed: used", pool.used_bytes(), "free", pool.free_bytes(), "blocks", pool.n_free_blocks())
p = cuda.alloc(N)
show("reused: used", pool.used_bytes(), "blocks", pool.n_free_blocks())
del p
pool.free_all_blocks()
show("free_all_blocks: total", pool.total_bytes(), "blocks", pool.n_free_blocks())
cuda.set_allocator(None)
plain = cuda.alloc(4096)
show("no pool:", type(plain).__name__, pool.total_bytes())
del plain
cuda.set_allocator(previous)

# ---- streams and the current stream ----
null = cuda.Stream.null
show("null stream:", null.ptr, cuda.Stream(null=True) == null, null.done)
s = cuda.Stream(non_blocking=True)
show("stream:", s.ptr != 0, s.is_non_blocking, s == s, s != null, s.done)
show("blocking stream:", cuda.Stream().is_non_blocking)
show("current is null:", cuda.get_current_stream() == null)
with s as entered:
    show("in with:", entered == s, cuda.get_current_stream() == s)
    t = cuda.Stream()
    with t:
        show("nested:", cuda.get_current_stream() == t)
    show("back:", cuda.get_current_stream() == s)
show("after with:", cuda.get_current_stream() == null)
s.use()
show("use:", cuda.get_current_stream() == s)
null.use()
show("use null:", cuda.get_current_stream() == null)

p = cuda.alloc(N)
back = np.zeros_like(host)
p.copy_from_host_async(host.ctypes.data, N, s)
p.copy_to_host_async(back.ctypes.data, N, s)
s.synchronize()
show("async round trip:", bool((back == host).all()), s.done)

calls = []
s.add_callback(lambda stream, status, arg: calls.append((stream == s, status, arg)), "payload")
s.launch_host_func(lambda arg: calls.append(arg), "host func")
s.synchronize()
show("callbacks:", calls)

# ---- events ----
start, end = cuda.Event(), cuda.Event()
start.record(s)
p.memset_async(3, N, s)
end.record(s)
end.synchronize()
ms = cuda.get_elapsed_time(start, end)
show("elapsed:", type(ms).__name__, ms >= 0, start.done, end.done)
ev = s.record()
show("stream.record:", type(ev).__name__)
other = cuda.Stream()
other.wait_event(ev)
other.synchronize()
p.copy_to_host(back.ctypes.data, N)
show("after wait:", bool((back == 3).all()))
with s:
    current = cuda.Event()
    current.record()
current.synchronize()
show("recorded on the current stream:", current.done)
blocking = cuda.Event(block=True)
blocking.record(s)
blocking.synchronize()
show("blocking event:", blocking.done)
try:
    cuda.Event(interprocess=True)
    show("interprocess with timing: allowed")
except ValueError as e:
    show("interprocess with timing:", type(e).__name__, e)
cuda.Event(disable_timing=True, interprocess=True)
untimed = cuda.Event(disable_timing=True)
untimed.record(s)
untimed.synchronize()
try:
    cuda.get_elapsed_time(untimed, end)
    show("timing an untimed event: allowed")
except Exception:
    show("timing an untimed event: refused")
del p

# ---- NVTX and the profiler ----
cuda.nvtx.Mark("mark")
cuda.nvtx.Mark("mark with color", 2)
cuda.nvtx.MarkC("markc", 0xFF00FF00)
cuda.nvtx.RangePush("range")
cuda.nvtx.RangePushC("rangec", 0xFFFF0000)
cuda.nvtx.RangePop()
cuda.nvtx.RangePop()
show("nvtx: ok")
with cuda.profile():
    cuda.Stream.null.synchronize()
cuda.profiler.start()
cuda.profiler.stop()
# CUDA 12 removed the legacy profiler's set-up: CuPy first raised RuntimeError from it,
# newer CuPy has no initialize at all; either way it cannot be used.
try:
    cuda.profiler.initialize("config", "output", cuda.profiler.cudaCSV)
    show("profiler.initialize: allowed")
except (RuntimeError, AttributeError):
    show("profiler.initialize: unavailable")
show("done")
