"""Pageable copies through the staging ring under several configurations, one process per
configuration (each is read once), next to the pinned bandwidth of the same process:
    python3 tools/staging_sweep.py 12:8:4:1 16:16:4:1 12:8:4:0
A configuration is THREADS:CHUNK_MB:SLOTS:STREAM_STORES (GPUHOST_COPY_THREADS,
GPUHOST_STAGE_CHUNK_MB, GPUHOST_STAGE_SLOTS, GPUHOST_STAGE_NT).  Each figure is the
median of 7 transfers of 64 MiB, 256 MiB and 1 GiB."""
import os
import subprocess
import sys

CHILD = r"""
import os, statistics, time, numpy as np, gpuhost
def gbps(fn, n):
    fn()
    t = []
    for _ in range(7):
        t0 = time.perf_counter(); fn(); t.append(time.perf_counter() - t0)
    return n / statistics.median(t) / 1e9
cells = []
for n in (64 << 20, 256 << 20, 1 << 30):
    host = np.random.default_rng().integers(0, 256, n, dtype=np.uint8)
    out = np.empty_like(host); out[:] = 1
    pin = gpuhost.pinned_array(n, np.uint8); pin[:] = host
    dev = gpuhost.device_array(n, np.uint8)
    h = gbps(lambda: dev.copy_to_device(host), n); d = gbps(lambda: dev.copy_to_host(out), n)
    ph = gbps(lambda: dev.copy_to_device(pin), n); pd = gbps(lambda: dev.copy_to_host(pin), n)
    dev.copy_to_device(host); dev.copy_to_host(out)
    assert (out == host).all()
    cells.append("%4dMiB htod %5.1f (%.2f) dtoh %5.1f (%.2f)" % (n >> 20, h, h / ph, d, d / pd))
print(os.environ["SPEC"].ljust(12), " | ".join(cells), flush=True)
"""

for spec in sys.argv[1:] or ["12:8:4:1", "12:8:4:0"]:
    threads, chunk, slots, nt = spec.split(":")
    env = dict(os.environ, SPEC=spec, GPUHOST_COPY_THREADS=threads, GPUHOST_STAGE_CHUNK_MB=chunk,
               GPUHOST_STAGE_SLOTS=slots, GPUHOST_STAGE_NT=nt)
    subprocess.run([sys.executable, "-c", CHILD], env=env)
