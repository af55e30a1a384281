"""Cold start: a fresh process imports a library, launches one kernel and reads its result.

The kernel is SAXPY over 65,536 float32 (a = 2, so the result is exact and checked), every
cache warm: ms from the end of NumPy's import to the result on the host, the median over
--repeat fresh processes, the libraries interleaved sample by sample, one unmeasured
process first to fill the caches.  Rows:
  - a `@jit(cache=True)` kernel: gpuhost.jit (from its disk records, numba-cuda not
    imported: each sample says so), numba-cuda, numba-cuda-mlir where installed; goals: at
    most 1.2 x gpuhost's NVRTC row of the same run, at least 4 x faster than numba-cuda;
  - the same kernel in CUDA C++: gpuhost.SourceModule (NVRTC, gpuhost's disk cache) and
    CuPy's RawKernel (its cache) where installed; the floor: the CUDA context itself;
  - the first compile (a cache miss): each sample a new folder and empty caches, numba
    imported before the clock starts, the first launch and result timed; gpuhost.jit next
    to numba-cuda's own first call, goal at most 1.05 x;
  - the import alone, ms beyond NumPy, printed (goal for gpuhost: 25 ms; its table row is
    benchmarks/import_time.py's).
Processes read compiled bytecode, as an installed package does (their own pycache prefix,
filled by the first process).  Needs a GPU: without one it says so and measures nothing.

    python3 benchmarks/coldstart.py [--repeat 5] [--json out.json] [--markdown rows.md]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
N = 65536

CUDA_SOURCE = r"""
extern "C" __global__ void saxpy(float *r, float a, const float *x, const float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        r[i] = a * x[i] + y[i];
    }
}
"""

# A Python kernel's module, imported by the samples: `{module}` is the library's cuda module.
JIT_MODULE = """
{module}

@cuda.jit(cache=True)
def saxpy(r, a, x, y):
    i = cuda.grid(1)
    if i < r.size:
        r[i] = a * x[i] + y[i]
"""

JIT_IMPORTS = {"gpuhost.jit": "import gpuhost as cuda", "numba-cuda": "from numba import cuda",
               "numba-cuda-mlir": "import numba_cuda_mlir.cuda as cuda"}

# One sample: the times, whether the result was right, whether numba was imported.
SAMPLE = r"""
import time
t0 = time.perf_counter()
import numpy as np
if not hasattr(np, "row_stack"):  # numba-cuda 0.30 calls it; NumPy 2.5 removed it
    np.row_stack = np.vstack
t1 = time.perf_counter()
{imports}
t2 = time.perf_counter()
{work}
t3 = time.perf_counter()
import json, sys
print("__SAMPLE__" + json.dumps({{"import": (t2 - t1) * 1e3, "first": (t3 - t1) * 1e3,
                                  "call": globals().get("first_call"), "ok": bool(ok),
                                  "numba": "numba" in sys.modules}}))
"""

DATA = """
n = %d
rng = np.random.default_rng(7)
hx, hy = rng.random(n).astype(np.float32), rng.random(n).astype(np.float32)
""" % N

JIT_WORK = DATA + """
sys_path = __import__("sys").path
sys_path.insert(0, {folder!r})
from {name} import saxpy
x, y, r = cuda.to_device(hx), cuda.to_device(hy), cuda.device_array(n, np.float32)
saxpy[n // 256, 256](r, np.float32(2), x, y)
ok = np.array_equal(r.copy_to_host(), np.float32(2) * hx + hy)
"""

NVRTC_WORK = DATA + """
saxpy = cuda.SourceModule({source!r}).get_function("saxpy")
x, y, r = cuda.to_device(hx), cuda.to_device(hy), cuda.device_array(n, np.float32)
saxpy[n // 256, 256](r, np.float32(2), x, y, np.int32(n))
ok = np.array_equal(r.copy_to_host(), np.float32(2) * hx + hy)
"""

CUPY_WORK = DATA + """
saxpy = cp.RawKernel({source!r}, "saxpy")
x, y, r = cp.asarray(hx), cp.asarray(hy), cp.empty(n, np.float32)
saxpy((n // 256,), (256,), (r, np.float32(2), x, y, np.int32(n)))
ok = np.array_equal(cp.asnumpy(r), np.float32(2) * hx + hy)
"""

# The first compile: numba imported and the kernel module imported before the clock starts.
MISS_WORK = DATA + """
import numba.cuda
sys_path = __import__("sys").path
sys_path.insert(0, {folder!r})
from {name} import saxpy
x, y, r = cuda.to_device(hx), cuda.to_device(hy), cuda.device_array(n, np.float32)
cuda.synchronize()
t_call = time.perf_counter()
saxpy[n // 256, 256](r, np.float32(2), x, y)
ok = np.array_equal(r.copy_to_host(), np.float32(2) * hx + hy)
first_call = (time.perf_counter() - t_call) * 1e3
"""


def installed(module):
    return subprocess.run([sys.executable, "-c", "import " + module],
                          capture_output=True).returncode == 0


class Case:
    """One library's way to the first result: the code of a sample and its folder."""

    def __init__(self, label, imports, work, scratch, env=None):
        self.label, self.imports, self.work = label, imports, work
        self.scratch, self.env = scratch, env or {}
        self.samples = []

    def run(self, pycache):
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(self.env)
        env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
        code = SAMPLE.format(imports=self.imports, work=self.work)
        proc = subprocess.run([sys.executable, "-X", "pycache_prefix=" + pycache, "-c", code],
                              capture_output=True, text=True, env=env, cwd=self.scratch)
        line = [ln for ln in proc.stdout.splitlines() if ln.startswith("__SAMPLE__")]
        if proc.returncode != 0 or not line:
            raise RuntimeError("%s: the sample failed (exit %d): %s" % (
                self.label, proc.returncode, proc.stderr.strip().splitlines()[-1:]))
        sample = json.loads(line[0][len("__SAMPLE__"):])
        if not sample["ok"]:
            raise RuntimeError("%s: the kernel's result is wrong" % self.label)
        return sample


def jit_module(label, folder):
    """The kernel's module for library `label`, written into `folder`: its name."""
    os.makedirs(folder, exist_ok=True)
    name = "saxpy_" + label.replace("-", "_").replace(".", "_")
    with open(os.path.join(folder, name + ".py"), "w") as f:
        f.write(JIT_MODULE.format(module=JIT_IMPORTS[label]))
    return name


def jit_case(label, scratch, caches):
    folder = os.path.join(scratch, "kernels")
    work = JIT_WORK.format(folder=folder, name=jit_module(label, folder))
    return Case(label, JIT_IMPORTS[label], work, scratch, caches)


def hit_cases(scratch):
    """The warm-cache cases installed here, in the table's order."""
    caches = {"GPUHOST_CACHE_DIR": os.path.join(scratch, "gpuhost-cache"),
              "CUPY_CACHE_DIR": os.path.join(scratch, "cupy-cache")}
    cases = [jit_case("gpuhost.jit", scratch, caches),
             Case("gpuhost NVRTC", "import gpuhost as cuda",
                  NVRTC_WORK.format(source=CUDA_SOURCE), scratch, caches)]
    if installed("numba.cuda"):
        cases.append(jit_case("numba-cuda", scratch, caches))
    if installed("numba_cuda_mlir.cuda"):
        cases.append(jit_case("numba-cuda-mlir", scratch, caches))
    if installed("cupy"):
        cases.append(Case("CuPy", "import cupy as cp", CUPY_WORK.format(source=CUDA_SOURCE),
                          scratch, caches))
    return cases


def miss_sample(label, scratch, pycache, index):
    """One first compile in a fresh process, ms: a new folder for the module (numba's cache
    beside it) and a new gpuhost cache, so nothing is cached."""
    folder = os.path.join(scratch, "miss_%d" % index)
    work = MISS_WORK.format(folder=folder, name=jit_module(label, folder))
    case = Case(label, JIT_IMPORTS[label], work, scratch,
                {"GPUHOST_CACHE_DIR": os.path.join(folder, "gpuhost-cache")})
    return case.run(pycache)["call"]


def median(values):
    return statistics.median(values) if values else None


def measure(repeat):
    with tempfile.TemporaryDirectory(prefix="coldstart.") as scratch:
        pycache = os.path.join(scratch, "pycache")
        cases = []
        for case in hit_cases(scratch):  # fills the caches and the bytecode; not measured
            try:
                case.run(pycache)
            except RuntimeError as e:
                if case.label.startswith("gpuhost"):
                    raise
                print("left out: %s" % e)
                continue
            cases.append(case)
        for _ in range(repeat):
            for case in cases:
                case.samples.append(case.run(pycache))
        misses = {label: [] for label in ("gpuhost.jit", "numba-cuda")
                  if any(c.label == label for c in cases)}
        for i in range(repeat):
            for label in misses:
                misses[label].append(miss_sample(label, scratch, pycache, i))
    hits = {c.label: {"first": median([s["first"] for s in c.samples]),
                      "import": median([s["import"] for s in c.samples]),
                      "numba_imported": sum(s["numba"] for s in c.samples)} for c in cases}
    return hits, {label: median(v) for label, v in misses.items()}


def rows(hits, misses):
    """The table's rows, as benchmarks/all.py's areas give them: {operation: record}."""
    first = {label: h["first"] for label, h in hits.items()}
    ours, nvrtc, numba = first.get("gpuhost.jit"), first.get("gpuhost NVRTC"), \
        first.get("numba-cuda")
    met = None  # not judged where a figure the goal names is missing (numba-cuda's too)
    if ours and nvrtc and numba:
        met = ours <= 1.2 * nvrtc and numba >= 4 * ours and \
            hits["gpuhost.jit"]["numba_imported"] == 0
    out = {"cold start, cached `@jit` kernel, ms to first result": {
        "gpuhost": ours, "numba-cuda": numba, "numba-cuda-mlir": first.get("numba-cuda-mlir"),
        "goal": "<= 1.2x gpuhost NVRTC, >= 4x faster than numba-cuda", "met": met}}
    out["cold start, CUDA C++ kernel from the cache, ms to first result"] = {
        "gpuhost": nvrtc, "CuPy": first.get("CuPy"), "goal": "-", "met": None}
    if misses:
        ours_miss, numba_miss = misses.get("gpuhost.jit"), misses.get("numba-cuda")
        out["first `@jit` compile + launch, ms"] = {
            "gpuhost": ours_miss, "numba-cuda": numba_miss, "goal": "<= 1.05x numba-cuda",
            "met": None if not (ours_miss and numba_miss) else ours_miss <= 1.05 * numba_miss}
    return out


def cell(value):
    return "-" if value is None else "%.1f" % value


def report(hits, misses, table):
    print("%-18s %14s %22s %16s" % ("path", "import (ms)", "import to result (ms)",
                                    "numba imported"))
    for label, h in hits.items():
        print("%-18s %14s %22s %16s" % (label, cell(h["import"]), cell(h["first"]),
                                        "%d samples" % h["numba_imported"]
                                        if h["numba_imported"] else "no"))
    first = {label: h["first"] for label, h in hits.items()}
    ours = first["gpuhost.jit"]
    print("\ngpuhost.jit hit / gpuhost NVRTC: %.2fx (goal <= 1.2x)"
          % (ours / first["gpuhost NVRTC"]))
    for peer in ("numba-cuda", "numba-cuda-mlir", "CuPy"):
        if first.get(peer):
            print("%s / gpuhost.jit hit: %.2fx%s" % (peer, first[peer] / ours,
                                                     " (goal >= 4x)" if peer == "numba-cuda"
                                                     else ""))
    if misses.get("gpuhost.jit") and misses.get("numba-cuda"):
        print("first compile: gpuhost.jit %.1f ms, numba-cuda %.1f ms: %.3fx (goal <= 1.05x)"
              % (misses["gpuhost.jit"], misses["numba-cuda"],
                 misses["gpuhost.jit"] / misses["numba-cuda"]))
    ours_import = hits["gpuhost.jit"]["import"]
    print("import gpuhost: %.1f ms beyond NumPy (goal <= 25 ms: %s)"
          % (ours_import, "met" if ours_import <= 25 else "NOT met"))
    for op, rec in table.items():
        if rec.get("met") is not None:
            print("%s: %s" % (op, "met" if rec["met"] else "NOT met"))
        elif rec.get("goal", "-") != "-":
            print("%s: not judged (a figure its goal names was not measured)" % op)


def markdown(table):
    """README's speed-table rows (its columns: raw C, gpuhost, cuda.core, CuPy, numba-cuda,
    numba-cuda-mlir)."""
    lines = []
    for op, rec in table.items():
        cells = [cell(rec.get(lib)) for lib in ("raw C", "gpuhost", "cuda.core", "CuPy",
                                                 "numba-cuda", "numba-cuda-mlir")]
        lines.append("| %s | %s |" % (op, " | ".join(cells)))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="fresh processes per row")
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--markdown", help="write README's speed-table rows to this file")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    sys.path.insert(0, ROOT)
    try:
        import gpuhost
    except Exception as e:  # another Python's build, none at all: said, not a traceback
        sys.exit("coldstart.py: gpuhost does not import with %s (%s: %s): nothing measured"
                 % (sys.executable, type(e).__name__, e))
    if not gpuhost.is_available() or "fakecuda" in os.environ.get("GPUHOST_CUDA_DRIVER", ""):
        sys.exit("coldstart.py measures on a GPU, and there is none it can use here (%s): "
                 "nothing measured; python3 -m gpuhost says what gpuhost finds"
                 % ("the fake driver runs no kernels" if gpuhost.is_available()
                    else "gpuhost.is_available() is False"))
    try:
        hits, misses = measure(args.repeat)
    except RuntimeError as e:
        sys.exit("coldstart.py: %s" % e)
    table = rows(hits, misses)
    report(hits, misses, table)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(table, f, indent=2)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(table) + "\n")


if __name__ == "__main__":
    main()
