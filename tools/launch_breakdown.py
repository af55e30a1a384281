"""Where a launch's time goes: the parts of `k[grid, block, s](*args)` timed apart (GPU)."""
import sys
import timeit

import numpy as np

sys.path.insert(0, ".")
import gpuhost  # noqa: E402

SOURCE = r"""
extern "C" __global__ void empty1(float *a) {}
extern "C" __global__ void empty8(float *a, float *b, float *c, float *d, int e, int f,
                                  float g, double h) {}
extern "C" __global__ void ptr8(float *a, float *b, float *c, float *d, float *e, float *f,
                                float *g, float *h) {}
"""
mod = gpuhost.Module(gpuhost.compile(SOURCE))
s = gpuhost.stream()
k1, k8, p8 = (mod.get_function(n) for n in ("empty1", "empty8", "ptr8"))
buf = gpuhost.device_array(64, np.float32)
cfg1, cfg8, cfgp = k1[1, 1, s], k8[1, 1, s], p8[1, 1, s]
host8 = np.arange(1.0)
ns = dict(globals())
stmts = [
    ("k1[1, 1, s](buf)", "k1[1, 1, s](buf)"),
    ("k1[1,1,s] (getitem only)", "k1[1, 1, s]"),
    ("cfg1(buf)", "cfg1(buf)"),
    ("k8[1,1,s](...)", "k8[1, 1, s](buf, buf, buf, buf, 1, 2, 3.0, 4.0)"),
    ("cfg8(...)", "cfg8(buf, buf, buf, buf, 1, 2, 3.0, 4.0)"),
    ("cfgp(8 x buf)", "cfgp(buf, buf, buf, buf, buf, buf, buf, buf)"),
    ("s.synchronize()", "s.synchronize()"),
    ("to_device(8 B)", "gpuhost.to_device(host8)"),
    ("device_array(1)", "gpuhost.device_array(1)"),
    ("copy_to_device(8 B)", "buf[:2].copy_to_device(host8.view(np.float32))"),
]
for label, stmt in stmts:
    n = 20000
    best = min(timeit.repeat(stmt, number=n, repeat=7, globals=ns)) / n * 1e6
    s.synchronize()
    print("%-28s %7.3f us" % (label, best))
