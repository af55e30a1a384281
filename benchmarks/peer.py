"""Copies between two GPUs: gpuhost next to raw C (cuMemcpyPeer) and CuPy, one run.

256 MiB from device 0 to device 1 and back, synchronous, each figure the median GB/s of 5
copies (each followed by synchronizing both devices' contexts), the libraries interleaved
copy by copy.  Measured twice: as the driver stages a copy between devices whose contexts
have no peer access, then with peer access enabled both ways (where the devices have a
peer path; the primary contexts are shared, so the setting holds for all three).
    python3 benchmarks/peer.py [--size-mib 256] [--json out.json]
Prints a skip and exits 0 on a machine with fewer than two GPUs.
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout
from _harness import raw_c, table  # noqa: E402

import numpy as np  # noqa: E402

import gpuhost  # noqa: E402

MiB = 1 << 20
REPEAT = 5


def sync_both(ctxs):
    for ctx in ctxs:
        ctx.synchronize()


def measure(cases, nbytes, ctxs):
    """{label: median GB/s}: each case copies once; every label runs once per repetition
    (after one warm-up each), both contexts synchronized inside the timed window."""
    for fn in cases.values():
        fn()
        sync_both(ctxs)
    times = {label: [] for label in cases}
    for _ in range(REPEAT):
        for label, fn in cases.items():
            if label == "raw C":
                times[label].append(fn())  # timed by C itself, seconds
                continue
            t0 = time.perf_counter()
            fn()
            sync_both(ctxs)
            times[label].append(time.perf_counter() - t0)
    return {label: nbytes / statistics.median(v) / 1e9 for label, v in times.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=256)
    parser.add_argument("--json")
    args = parser.parse_args()
    count = len(gpuhost.gpus) if gpuhost.is_available() else 0
    if count < 2:
        print("peer.py: skipped: copies between GPUs need 2 devices, %d found" % count)
        return
    nbytes = args.size_mib * MiB
    try:
        raw = raw_c()
    except Exception as e:  # no C compiler or no libcuda here: said, and left out
        print("raw C left out: %s" % e)
        raw = None
    try:
        import cupy
    except ImportError:
        cupy = None
        print("CuPy left out: not importable")

    d0, d1 = gpuhost.gpus[0], gpuhost.gpus[1]
    ctxs = (d0.get_primary_context(), d1.get_primary_context())
    host = np.random.default_rng().integers(0, 2**63, nbytes // 8, dtype=np.int64)
    arrays = {}
    for dev in (d0, d1):  # device 1's starts zeroed: the first copy fills it
        with dev:
            arrays[dev.id] = gpuhost.to_device(host if dev.id == 0 else np.zeros_like(host))
    cp = {}
    if cupy is not None:
        for i in (0, 1):
            with cupy.cuda.Device(i):
                cp[i] = cupy.asarray(host if i == 0 else np.zeros_like(host))

    def cases(src, dst):
        c = {"gpuhost": lambda: arrays[dst].copy_to_device(arrays[src])}
        if raw is not None:
            c["raw C"] = lambda: raw.bench_peer_copy(nbytes, src, dst, 1) * 1e-6
        if cupy is not None:
            c["CuPy"] = lambda: cupy.cuda.runtime.memcpyPeer(cp[dst].data.ptr, dst,
                                                              cp[src].data.ptr, src, nbytes)
        return c

    peer_path = d0.can_access_peer(d1) and d1.can_access_peer(d0)
    print("devices: %s | %s; peer path: %s" % (d0.name, d1.name, "yes" if peer_path else "no"))
    rows = []
    modes = [("staged", False)] + ([("peer access", True)] if peer_path else [])
    for mode, enable in modes:
        for ctx, other in ((ctxs[0], d1), (ctxs[1], d0)):
            (ctx.enable_peer_access if enable else ctx.disable_peer_access)(other)
        for src, dst in ((0, 1), (1, 0)):
            figs = measure(cases(src, dst), nbytes, ctxs)
            figs.setdefault("raw C", None)  # left out: the goal is not judged
            rows.append(("%d->%d %dMiB %s (GB/s)" % (src, dst, args.size_mib, mode), figs,
                         ">= 0.98 x raw C", lambda o, r: o >= 0.98 * r))
    for ctx, other in ((ctxs[0], d1), (ctxs[1], d0)):
        ctx.disable_peer_access(other)
    for i in (0, 1):  # the copies were exact
        assert np.array_equal(arrays[i].copy_to_host(), host)
        if cupy is not None:
            assert np.array_equal(cp[i].get(), host)
    table(rows, args.json)


if __name__ == "__main__":
    main()
