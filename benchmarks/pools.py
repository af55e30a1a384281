"""Allocate + free of device memory: gpuhost's pools next to raw C (cuMemAllocAsync +
cuMemFreeAsync), CuPy's MemoryPool and cuda.core's device memory resource, one run.

Rows: 8 B, 1 MiB and 64 MiB allocated and freed at once, and a mixed-size trace (fixed
seed: allocations of 8 B to 64 MiB, log-uniform, into 64 slots, freed in a random order).
gpuhost is measured in its default ('cache') mode and, as a second row, in 'driver' mode
(the driver's stream-ordered pool, on a stream); the ANCHORS.md goal is the 1 MiB row:
at most 0.8 x CuPy.  A peer that is not installed shows '-'.
    python3 benchmarks/pools.py [--json out.json]
"""
import argparse
import ctypes
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout
from _harness import Native, interleaved, raw_c, table, timed_loop  # noqa: E402

import numpy as np  # noqa: E402

import gpuhost  # noqa: E402
from gpuhost import _core  # noqa: E402

MiB = 1 << 20
SIZES = [(8, "8 B", 4000), (MiB, "1 MiB", 4000), (64 * MiB, "64 MiB", 1000)]
SLOTS = 64


def make_trace(seed=20261122, nops=600):
    """(slots, sizes): op i allocates sizes[i] into slots[i] when the slot is empty, else
    frees it; frees of whatever is left close the trace, so every slot ends empty."""
    r = np.random.default_rng(seed)
    slots = [int(s) for s in r.integers(0, SLOTS, nops)]
    sizes = [int(s) for s in np.exp(r.uniform(np.log(8), np.log(64 * MiB), nops))]
    live = set()
    for s in slots:
        live.symmetric_difference_update({s})
    for s in sorted(live):
        slots.append(s)
        sizes.append(0)
    return slots, sizes


def trace_case(alloc, free=None):
    """A Native case running the trace `n` times with alloc(size) -> block and free(block)
    (None: dropping the block frees it); µs per allocate + free."""
    slots, sizes = make_trace()
    ops = list(zip(slots, sizes))
    n_allocs = len(slots) // 2  # every slot ends empty: as many frees as allocations

    def run(n):
        t0 = time.perf_counter()
        for _ in range(n):
            live = [None] * SLOTS
            for slot, size in ops:
                block = live[slot]
                if block is None:
                    live[slot] = alloc(size)
                else:
                    live[slot] = None
                    if free is not None:
                        free(block)
        return (time.perf_counter() - t0) / (n * n_allocs) * 1e6

    return Native(run)


def raw_trace(raw):
    slots, sizes = make_trace()
    c_slots = (ctypes.c_int * len(slots))(*slots)
    c_sizes = (ctypes.c_size_t * len(sizes))(*sizes)
    return Native(lambda n: raw.bench_alloc_trace(c_slots, c_sizes, len(slots), SLOTS, n))


def peers():
    """(cupy or None, (cuda.core memory resource, its stream) or None)."""
    try:
        import cupy

        cupy.cuda.Device(0).use()
    except Exception:  # noqa: BLE001 - not installed, or no device for it
        cupy = None
    core = None
    try:
        try:
            from cuda.core import Device
        except ImportError:
            from cuda.core.experimental import Device
        dev = Device(0)
        dev.set_current()
        stream = dev.create_stream()
        core = (dev.memory_resource, stream)
        core[0].allocate(8, stream=stream).close(stream)
    except Exception:  # noqa: BLE001
        core = None
    return cupy, core


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    args = parser.parse_args()
    raw = raw_c()
    cupy, core = peers()
    ctx = gpuhost.current_context()
    default = _core.default_pool(ctx)
    driver_pool = _core.Pool("device", "driver")
    stream = gpuhost.stream()
    if default.mode != "cache":
        print("note: GPUHOST_ALLOCATOR=%s: the default pool is in %s mode"
              % (default.mode, default.mode))
    cupy_pool = cupy.cuda.MemoryPool() if cupy is not None else None
    started = time.perf_counter()
    rows = []

    def rows_for(label, fig, driver_fig, goal):
        rows.append(("alloc+free %s" % label, fig) + goal)
        rows.append(("  gpuhost driver mode", {"raw C": fig.get("raw C"), "gpuhost": driver_fig},
                     "-", lambda o, r: None))

    for size, label, n in SIZES:
        scope = {"alloc": _core.device_alloc, "driver": driver_pool.allocate, "s": stream,
                 "size": size}
        cases = {"raw C": Native(raw.bench_alloc_async, size),
                 "gpuhost": timed_loop("alloc(size)", scope),
                 "driver": timed_loop("driver(size, s)", scope, sync=stream.synchronize)}
        if cupy_pool is not None:
            cases["CuPy"] = timed_loop("malloc(size)", {"malloc": cupy_pool.malloc,
                                                        "size": size})
        if core is not None:
            mr, cstream = core
            cases["cuda.core"] = timed_loop("mr.allocate(size, stream=cs).close(cs)",
                                            {"mr": mr, "cs": cstream, "size": size},
                                            sync=cstream.sync)
        fig = interleaved(cases, n)
        driver_fig = fig.pop("driver")
        cupy_fig = fig.get("CuPy")
        goal = ("<= 0.8 x CuPy", lambda o, r, c=cupy_fig: None if c is None else o <= 0.8 * c) \
            if size == MiB else ("-", lambda o, r: None)
        rows_for(label, fig, driver_fig, goal)

    cases = {"raw C": raw_trace(raw), "gpuhost": trace_case(_core.device_alloc),
             "driver": trace_case(lambda size: driver_pool.allocate(size, stream))}
    if cupy_pool is not None:
        cases["CuPy"] = trace_case(cupy_pool.malloc)
    if core is not None:
        mr, cstream = core
        cases["cuda.core"] = trace_case(lambda size: mr.allocate(size, stream=cstream),
                                        lambda buf: buf.close(cstream))
    fig = interleaved(cases, 3)
    driver_fig = fig.pop("driver")
    rows_for("mixed trace", fig, driver_fig, ("-", lambda o, r: None))
    stream.synchronize()

    record = table(rows, args.json)
    print("\ngpuhost (cache mode) / CuPy's pool, per allocate + free (below 1: faster):")
    for op, rec in record.items():
        if rec.get("CuPy") and rec.get("gpuhost") and not op.startswith(" "):
            print("  %-22s %.2f" % (op, rec["gpuhost"] / rec["CuPy"]))
    print("default pool after the run: %r" % default)
    default.free_all_blocks()
    driver_pool.free_all_blocks()
    if cupy_pool is not None:
        cupy_pool.free_all_blocks()
    print("(%.1f s)" % (time.perf_counter() - started))


if __name__ == "__main__":
    main()
