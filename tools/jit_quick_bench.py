import time, warnings, numpy as np
warnings.simplefilter("ignore")
if not hasattr(np, "row_stack"): np.row_stack = np.vstack
import gpuhost
from numba import cuda as ncuda
def body1(x): pass
def body8(a,b,c,d,e,f,g,h):
    i = 0
def t(fn, n=2000):
    fn(); fn()
    best = 1e9
    for _ in range(5):
        t0=time.perf_counter()
        for _ in range(n): fn()
        best=min(best,(time.perf_counter()-t0)/n*1e6)
    return best
g1 = gpuhost.jit(body1); g8 = gpuhost.jit(body8)
n1 = ncuda.jit(body1); n8 = ncuda.jit(body8)
s = gpuhost.stream(); ns = ncuda.stream()
ga = [gpuhost.device_array(64, np.float32) for _ in range(8)]
na = [ncuda.device_array(64, np.float32) for _ in range(8)]
for name, f in [("gpuhost 1 scalar", lambda: g1[1,32,s](1.5)), ("numba 1 scalar", lambda: n1[1,32,ns](1.5)),
                ("gpuhost 8 arrays", lambda: g8[1,32,s](*ga)), ("numba 8 arrays", lambda: n8[1,32,ns](*na)),
                ("numba 8 gpuhost arrays", lambda: n8[1,32,ns](*ga))]:
    print("%-24s %.2f us" % (name, t(f, 500 if 'numba' in name else 3000)))
    s.synchronize(); ns.synchronize()
print("entries", g8._jit_entries()[0][1:])
