"""Host <-> device copies: gpuhost next to raw C, CuPy and numba-cuda, one run.

Rows (ANCHORS.md): to_device of 8 bytes (alloc + copy + wrap), copy_to_host of 8 bytes,
1 MiB and 256 MiB each way from pageable (numpy) and pinned memory.
    python3 benchmarks/transfers.py [--json out.json]
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout
from _harness import Call, Native, interleaved, raw_c, table  # noqa: E402

import numpy as np  # noqa: E402

import gpuhost  # noqa: E402

MiB = 1 << 20


def gbps(fn, nbytes, repeat=5):
    """Median GB/s of fn() (which must synchronize) over `repeat` runs, after a warm-up."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return nbytes / statistics.median(times) / 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    args = parser.parse_args()
    raw = raw_c()
    try:
        import cupy
    except ImportError:
        cupy = None
    try:
        from numba import cuda as ncuda

        ncuda.current_context()
    except Exception:  # numba-cuda missing or unusable here
        ncuda = None

    rows = []
    h8 = np.random.default_rng().random(1)  # 8 bytes
    cases = {"raw C": Native(raw.bench_copy, 8, 0, 1), "gpuhost": Call(gpuhost.to_device, h8)}
    if cupy is not None:
        cases["CuPy"] = Call(cupy.asarray, h8)
    if ncuda is not None:
        cases["numba-cuda"] = Call(ncuda.to_device, h8)
    fig = interleaved(cases, 2000)
    rows.append(("to_device 8 B", fig, "<= 1.3 x raw C copy", lambda o, r: o <= 1.3 * r))

    d8, out8 = gpuhost.to_device(h8), np.empty_like(h8)
    cases = {"raw C": Native(raw.bench_copy, 8, 0, 0), "gpuhost": Call(d8.copy_to_host, out8)}
    if cupy is not None:
        c8 = cupy.asarray(h8)
        cases["CuPy"] = lambda: c8.get(out=out8)
    if ncuda is not None:
        n8 = ncuda.to_device(h8)
        cases["numba-cuda"] = Call(n8.copy_to_host, out8)
    fig = interleaved(cases, 2000)
    rows.append(("copy_to_host 8 B", fig, "<= 1.3 x raw C", lambda o, r: o <= 1.3 * r))

    for size, label in ((MiB, "1MiB"), (256 * MiB, "256MiB")):
        for kind in ("pageable", "pinned"):
            n = size // 8
            host = gpuhost.pinned_array(n) if kind == "pinned" else np.empty(n)
            host[:] = np.random.default_rng().random(n)
            out = gpuhost.pinned_array(n) if kind == "pinned" else np.empty(n)
            out[:] = 1.0  # touched: no page faults timed
            dev = gpuhost.to_device(host)
            figs_h2d = {"gpuhost": gbps(lambda: dev.copy_to_device(host), size)}
            figs_d2h = {"gpuhost": gbps(lambda: dev.copy_to_host(out), size)}
            if cupy is not None:
                c = cupy.asarray(host)
                figs_h2d["CuPy"] = gbps(lambda: (c.set(host), cupy.cuda.runtime.deviceSynchronize()), size)
                figs_d2h["CuPy"] = gbps(lambda: c.get(out=out), size)
            if ncuda is not None:
                nd = ncuda.to_device(host)
                figs_h2d["numba-cuda"] = gbps(lambda: nd.copy_to_device(host), size)
                figs_d2h["numba-cuda"] = gbps(lambda: nd.copy_to_host(out), size)
            for direction, figs in (("htod", figs_h2d), ("dtoh", figs_d2h)):
                raw_us = statistics.median(raw.bench_copy(size, kind == "pinned",
                                                          direction == "htod", 1)
                                           for _ in range(5))
                figs["raw C"] = size / (raw_us * 1e-6) / 1e9
                goal = (0.98, ">= 0.98 x raw C") if kind == "pinned" else \
                    ((3.0, ">= 3 x raw C") if direction == "htod" else (2.5, ">= 2.5 x raw C"))
                rows.append(("%s %s %s (GB/s)" % (direction, label, kind), figs,
                             goal[1] if label == "256MiB" else "-",
                             (lambda k: (lambda o, r: o >= k * r))(goal[0])
                             if label == "256MiB" else (lambda o, r: None)))
            del dev, host, out
    table(rows, args.json)


if __name__ == "__main__":
    main()
