"""The cost of `import gpuhost` beyond numpy (goal: <= 25 ms on the H200).

Each sample is a fresh interpreter: it imports numpy, then gpuhost, timing both with
perf_counter; the figure is the median over the samples.  Peers (cupy, numba.cuda,
cuda.core) are measured the same way when installed.

The samples read compiled bytecode, as an installed package does (pip compiles it): they
run without PYTHONDONTWRITEBYTECODE and with their own pycache prefix, which the first,
unmeasured sample fills.  A tree whose modules were compiled from source on every sample
measured the compiler, 10-30 ms of it, which no installed gpuhost pays.

    python3 benchmarks/import_time.py [--repeat 15] [--only gpuhost,cupy] [--json out.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

SNIPPET = r"""
import time
t0 = time.perf_counter()
import numpy
t1 = time.perf_counter()
import {module}
t2 = time.perf_counter()
print(t1 - t0, t2 - t1)
"""

MODULES = {"gpuhost": "gpuhost", "cupy": "cupy", "numba-cuda": "numba.cuda",
           "cuda.core": "cuda.core"}


def sample(module, cache):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    proc = subprocess.run([sys.executable, "-X", "pycache_prefix=" + cache, "-c",
                           SNIPPET.format(module=module)],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        return None
    numpy_s, module_s = map(float, proc.stdout.split())
    return numpy_s * 1e3, module_s * 1e3


def measure(module, repeat, cache):
    runs = [sample(module, cache) for _ in range(repeat)]
    if any(r is None for r in runs):
        return None
    return {"numpy_ms": statistics.median(r[0] for r in runs),
            "beyond_numpy_ms": statistics.median(r[1] for r in runs)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--only", help="these of %s, comma-separated (gpuhost always)"
                        % ", ".join(MODULES))
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    wanted = set(MODULES) if args.only is None else set(args.only.split(",")) | {"gpuhost"}
    unknown = wanted - set(MODULES)
    if unknown:
        parser.error("--only: unknown %s" % ", ".join(sorted(unknown)))
    results = {}
    with tempfile.TemporaryDirectory(prefix="import_time_pycache.") as cache:
        for label, module in MODULES.items():
            if label not in wanted:
                continue
            sample(module, cache)  # fills the bytecode cache, warms the file system's
            results[label] = measure(module, args.repeat, cache)
    print("%-12s %14s %18s" % ("module", "numpy (ms)", "beyond numpy (ms)"))
    for label, r in results.items():
        if r is None:
            print("%-12s %14s %18s" % (label, "-", "not installed"))
        else:
            print("%-12s %14.1f %18.1f" % (label, r["numpy_ms"], r["beyond_numpy_ms"]))
    ours = results["gpuhost"]["beyond_numpy_ms"]
    print("gpuhost import beyond numpy: %.1f ms (goal <= 25 ms): %s"
          % (ours, "met" if ours <= 25 else "NOT met"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
