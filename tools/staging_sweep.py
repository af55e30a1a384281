"""Pageable 256 MiB copies through the staging ring at several thread counts, one
process per count (the count is read once): python3 tools/staging_sweep.py 4 8 12 16"""
import os
import subprocess
import sys

CHILD = r"""
import time, numpy as np, gpuhost
n = 256 << 20
host = np.random.default_rng().integers(0, 256, n, dtype=np.uint8)
dev = gpuhost.device_array(n, np.uint8)
out = np.empty_like(host)
dev.copy_to_device(host); dev.copy_to_host(out)
best_h = best_d = 0
for _ in range(7):
    t = time.perf_counter(); dev.copy_to_device(host); best_h = max(best_h, n / (time.perf_counter() - t) / 1e9)
    t = time.perf_counter(); dev.copy_to_host(out); best_d = max(best_d, n / (time.perf_counter() - t) / 1e9)
assert (out == host).all()
print("threads %s: htod %.1f GB/s, dtoh %.1f GB/s" % (__import__('os').environ.get('GPUHOST_COPY_THREADS'), best_h, best_d))
"""
for count in sys.argv[1:] or ["4", "8", "12", "16"]:
    subprocess.run([sys.executable, "-c", CHILD], env=dict(os.environ, GPUHOST_COPY_THREADS=count))
