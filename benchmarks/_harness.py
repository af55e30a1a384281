"""Shared by the benchmarks: timing loops as ANCHORS.md prescribes, the raw C floor,
and the table printed at the end.

Each figure is the median of REPEAT repetitions of a loop of N calls (µs per call),
after a warm-up loop; libraries are interleaved repetition by repetition.
"""
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

REPEAT = 7
HERE = os.path.dirname(os.path.abspath(__file__))


def per_call_us(fn, n, sync=None):
    """µs per call of fn() over a loop of n; sync() (if given) runs outside the window."""
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t = (time.perf_counter() - t0) / n * 1e6
    if sync is not None:
        sync()
    return t


def interleaved(cases, n, sync_of=None):
    """{label: median µs}: cases is {label: fn}; every label runs once per repetition."""
    sync_of = sync_of or {}
    for label, fn in cases.items():  # warm-up
        per_call_us(fn, n, sync_of.get(label))
    samples = {label: [] for label in cases}
    for _ in range(REPEAT):
        for label, fn in cases.items():
            samples[label].append(per_call_us(fn, n, sync_of.get(label)))
    return {label: statistics.median(v) for label, v in samples.items()}


def cuda_home():
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            return os.environ[var]
    nvcc = shutil.which("nvcc")
    if nvcc:
        return os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    return "/usr/local/cuda"


def raw_c():
    """Build and run benchmarks/raw/driver_bench.c; its figures as a dict (µs)."""
    home = cuda_home()
    out = os.path.join(tempfile.mkdtemp(), "driver_bench")
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-o", out,
                    os.path.join(HERE, "raw", "driver_bench.c"), "-I", os.path.join(home, "include"),
                    "-L", os.path.join(home, "lib64", "stubs"), "-lcuda"], check=True)
    proc = subprocess.run([out], check=True, capture_output=True, text=True)
    return json.loads(proc.stdout)


def table(rows, json_path=None):
    """rows: [(operation, {library: µs or None}, goal_text, goal_fn(gpuhost, raw) -> bool)]."""
    libs = ["raw C", "gpuhost", "cuda.core", "CuPy", "numba-cuda"]
    print("\n%-28s" % "operation (µs per call)" + "".join("%11s" % l for l in libs)
          + "  %-10s %-24s %s" % ("ours/raw", "goal", "met"))
    record = {}
    for op, figures, goal_text, goal in rows:
        cells = "".join("%11s" % ("%.3f" % figures[l] if figures.get(l) is not None else "-")
                        for l in libs)
        ours, raw = figures.get("gpuhost"), figures.get("raw C")
        ratio = ours / raw if ours and raw else None
        met = goal(ours, raw) if ours is not None and raw is not None else None
        print("%-28s%s  %-10s %-24s %s" % (op, cells, "%.2f" % ratio if ratio else "-", goal_text,
                                             {True: "met", False: "NOT met", None: "-"}[met]))
        record[op] = dict(figures, goal=goal_text, met=met, ratio_to_raw=ratio)
    if json_path:
        with open(json_path, "w") as f:
            json.dump(record, f, indent=2)
    return record
