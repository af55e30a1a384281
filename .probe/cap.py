import time, gpuhost, numpy as np, ctypes, sys
sys.path.insert(0, "benchmarks")
from _harness import raw_c
SOURCE = 'extern "C" __global__ void empty1(float *a) {}\n'
raw = raw_c(); raw.bench_graph_init(ctypes.c_char_p(bytes(gpuhost.compile(SOURCE))))
k1 = gpuhost.Module(gpuhost.compile(SOURCE)).get_function("empty1")
s = gpuhost.stream(non_blocking=True); buf = gpuhost.device_array(64, np.float32)
cfg = k1[1, 1, s]
def t(f, n=200):
    best = 1e9
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n): f()
        best = min(best, (time.perf_counter() - t0) / n * 1e6)
    return best
def cap_only():
    s.begin_capture()
    for _ in range(100): k1[1, 1, s](buf)
    return s.end_capture()
def cap_cfg():
    s.begin_capture()
    for _ in range(100): cfg(buf)
    return s.end_capture()
g = cap_only()
print("raw capture+inst 100: %.1f" % min(raw.bench_graph_capture(100, 50) for _ in range(5)))
print("gpuhost begin+100+end: %.1f" % t(cap_only, 50))
print("gpuhost begin+100 cfg+end: %.1f" % t(cap_cfg, 50))
print("gpuhost instantiate: %.1f" % t(lambda: g.instantiate(), 200))
print("gpuhost cap+inst: %.1f" % t(lambda: cap_only().instantiate(), 50))
print("gpuhost async launch: %.3f" % (t(lambda: k1[1, 1, s](buf), 2000)))
s.synchronize()
print("raw async launch: %.3f" % min(raw.bench_launch(1, 0, 2000) for _ in range(5)) if hasattr(raw, "bench_launch") else "")
