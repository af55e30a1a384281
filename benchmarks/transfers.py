"""Host <-> device copies: gpuhost next to raw C, CuPy and numba-cuda, one run.

Rows (ANCHORS.md): to_device of 8 bytes (alloc + copy + wrap), copy_to_host of 8 bytes;
1, 4, 64, 256 MiB and 1 GiB each way from pageable (numpy) and pinned memory.  For each
size the libraries, both directions and both kinds of host memory are interleaved
repetition by repetition (each figure the median of REPEAT single transfers), so that a
disturbed host moves every column together.  Goals: pinned >= 0.98 x raw C; pageable from
64 MiB up >= 0.85 x gpuhost's own pinned figure of the same run; pageable at 1 and 4 MiB
no slower than the driver's own pageable copy (raw C).
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
SIZES = ((MiB, "1MiB"), (4 * MiB, "4MiB"), (64 * MiB, "64MiB"), (256 * MiB, "256MiB"),
         (1024 * MiB, "1GiB"))
PEER_MAX = 256 * MiB  # the peers are measured up to this size
REPEAT = 7


def size_rows(raw, size, label, cupy, ncuda):
    """The four rows (htod/dtoh x pageable/pinned) of one size, every case interleaved."""
    n = size // 8
    rng = np.random.default_rng()
    cases = {}  # (kind, direction, lib) -> fn() that copies once and synchronizes, or
    #             a Native-like raw C call returning seconds
    keep = []
    for kind in ("pageable", "pinned"):
        host = gpuhost.pinned_array(n) if kind == "pinned" else np.empty(n)
        host[:] = rng.random(n)
        out = gpuhost.pinned_array(n) if kind == "pinned" else np.empty(n)
        out[:] = 1.0  # touched: no page faults timed
        dev = gpuhost.to_device(host)
        keep += [host, out, dev]
        cases[kind, "htod", "gpuhost"] = (lambda d, h: lambda: d.copy_to_device(h))(dev, host)
        cases[kind, "dtoh", "gpuhost"] = (lambda d, o: lambda: d.copy_to_host(o))(dev, out)
        for direction in ("htod", "dtoh"):
            cases[kind, direction, "raw C"] = (
                lambda k, dr: Native(lambda: raw.bench_copy(size, k == "pinned", dr == "htod",
                                                            1) * 1e-6))(kind, direction)
        if cupy is not None:
            c = cupy.asarray(host)
            keep.append(c)
            cases[kind, "htod", "CuPy"] = (lambda c_, h: lambda: (
                c_.set(h), cupy.cuda.runtime.deviceSynchronize()))(c, host)
            cases[kind, "dtoh", "CuPy"] = (lambda c_, o: lambda: c_.get(out=o))(c, out)
        if ncuda is not None:
            nd = ncuda.to_device(host)
            keep.append(nd)
            cases[kind, "htod", "numba-cuda"] = (lambda d, h: lambda: d.copy_to_device(h))(nd, host)
            cases[kind, "dtoh", "numba-cuda"] = (lambda d, o: lambda: d.copy_to_host(o))(nd, out)
    seconds = {key: [] for key in cases}
    for fn in cases.values():  # warm-up
        fn() if not isinstance(fn, Native) else fn.fn()
    for _ in range(REPEAT):
        for key, fn in cases.items():
            if isinstance(fn, Native):
                seconds[key].append(fn.fn())
            else:
                t0 = time.perf_counter()
                fn()
                seconds[key].append(time.perf_counter() - t0)
    gb = {key: size / statistics.median(v) / 1e9 for key, v in seconds.items()}
    rows = []
    for direction in ("htod", "dtoh"):
        pinned = gb["pinned", direction, "gpuhost"]
        for kind in ("pageable", "pinned"):
            figs = {lib: gb[k, d, lib] for (k, d, lib) in gb if k == kind and d == direction}
            if kind == "pinned":
                goal = (">= 0.98 x raw C", lambda o, r: o >= 0.98 * r) if size >= 64 * MiB \
                    else ("-", lambda o, r: None)
            elif size >= 64 * MiB:
                goal = (">= 0.85 x pinned (%.1f)" % pinned,
                        (lambda p: lambda o, r: o >= 0.85 * p)(pinned))
            else:
                goal = (">= raw C (driver)", lambda o, r: o >= r)
            rows.append(("%s %s %s (GB/s)" % (direction, label, kind), figs, goal[0], goal[1]))
    del keep
    return rows


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

    for size, label in SIZES:
        rows += size_rows(raw, size, label, cupy if size <= PEER_MAX else None,
                          ncuda if size <= PEER_MAX else None)
    table(rows, args.json)


if __name__ == "__main__":
    main()
