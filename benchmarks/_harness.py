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


class Call:
    """fn(*args), timed without a wrapping lambda (whose own call would be counted)."""

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args


def per_call_us(fn, n, sync=None):
    """µs per call of fn() (or of a Call) over a loop of n; sync() runs outside the window."""
    if isinstance(fn, Call) and len(fn.args) == 1:
        f, a = fn.fn, fn.args[0]
        t0 = time.perf_counter()
        for _ in range(n):
            f(a)
    else:
        f = fn.fn if isinstance(fn, Call) else fn
        assert not isinstance(fn, Call) or not fn.args, "Call takes at most one argument"
        t0 = time.perf_counter()
        for _ in range(n):
            f()
    t = (time.perf_counter() - t0) / n * 1e6
    if sync is not None:
        sync()
    return t


class Native:
    """A case timed by C itself: fn(n) runs its own loop and returns µs per call."""

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __call__(self, n):
        return self.fn(*self.args, n)


def timed_loop(stmt, namespace, sync=None):
    """A Native case that runs the statement `stmt` (e.g. "k[1, 1, s](buf)") n times in a
    compiled loop, as a user's loop would, with no wrapping function call counted; then
    sync() outside the timed window."""
    code = ("def _loop(n):\n"
            "    t0 = _perf_counter()\n"
            "    for _ in range(n):\n"
            "        %s\n"
            "    t = (_perf_counter() - t0) / n * 1e6\n"
            "    if _sync is not None:\n"
            "        _sync()\n"
            "    return t\n" % stmt)
    scope = dict(namespace, _perf_counter=time.perf_counter, _sync=sync)
    exec(code, scope)
    return Native(scope["_loop"])


def _sample(fn, n, sync):
    return fn(n) if isinstance(fn, Native) else per_call_us(fn, n, sync)


def interleaved(cases, n, sync_of=None):
    """{label: median µs}: cases is {label: fn or Native}; every label runs once per
    repetition, so all are measured at the same moments."""
    sync_of = sync_of or {}
    for label, fn in cases.items():  # warm-up
        _sample(fn, n, sync_of.get(label))
    samples = {label: [] for label in cases}
    for _ in range(REPEAT):
        for label, fn in cases.items():
            samples[label].append(_sample(fn, n, sync_of.get(label)))
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
    """benchmarks/raw/driver_bench.c built as a shared library and loaded, initialized."""
    import ctypes

    home = cuda_home()
    out = os.path.join(tempfile.mkdtemp(), "libdriver_bench.so")
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-shared", "-fPIC", "-o", out,
                    os.path.join(HERE, "raw", "driver_bench.c"),
                    os.path.join(HERE, "raw", "launch_bench.c"),
                    os.path.join(HERE, "raw", "graph_bench.c"), "-I", os.path.join(home, "include"),
                    "-L", os.path.join(home, "lib64", "stubs"), "-lcuda", "-ldl"], check=True)
    lib = ctypes.CDLL(out)
    for name in ("bench_event_record", "bench_stream_sync", "bench_stream_create",
                 "bench_event_create"):
        getattr(lib, name).restype = ctypes.c_double
        getattr(lib, name).argtypes = [ctypes.c_int]
    lib.bench_launch_init.argtypes = [ctypes.c_char_p]
    lib.bench_graph_init.argtypes = [ctypes.c_char_p]
    lib.bench_graph_capture.restype = ctypes.c_double
    lib.bench_graph_capture.argtypes = [ctypes.c_int, ctypes.c_int]
    lib.bench_graph_launch.restype = ctypes.c_double
    lib.bench_graph_launch.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    lib.bench_launch.restype = ctypes.c_double
    lib.bench_launch.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    lib.bench_copy.restype = ctypes.c_double
    lib.bench_copy.argtypes = [ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    lib.bench_alloc_async.restype = ctypes.c_double
    lib.bench_alloc_async.argtypes = [ctypes.c_size_t, ctypes.c_int]
    lib.bench_alloc_trace.restype = ctypes.c_double
    lib.bench_alloc_trace.argtypes = [ctypes.POINTER(ctypes.c_int),
                                      ctypes.POINTER(ctypes.c_size_t), ctypes.c_int,
                                      ctypes.c_int, ctypes.c_int]
    lib.bench_jit_load.restype = ctypes.c_int
    lib.bench_jit_load.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                   ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t), ctypes.c_int]
    lib.bench_jit_launch.restype = ctypes.c_double
    lib.bench_jit_launch.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint, ctypes.c_int]
    lib.bench_memset.restype = ctypes.c_double
    lib.bench_memset.argtypes = [ctypes.c_size_t, ctypes.c_int]
    lib.bench_peer_copy.restype = ctypes.c_double
    lib.bench_peer_copy.argtypes = [ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    res = lib.bench_init()
    if res != 0:
        raise RuntimeError("raw C benchmark could not start: CUresult %d" % res)
    return lib


def raw_nvrtc():
    """driver_bench.c's NVRTC part alone (-DBENCH_NVRTC_ONLY): needs no libcuda, so it
    runs on a machine without a GPU.  bench_nvrtc_compile(libpath, source, nopts,
    options, n) returns µs per compilation (negative on failure)."""
    import ctypes

    out = os.path.join(tempfile.mkdtemp(), "libnvrtc_bench.so")
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-shared", "-fPIC", "-DBENCH_NVRTC_ONLY",
                    "-o", out, os.path.join(HERE, "raw", "driver_bench.c"), "-I",
                    os.path.join(cuda_home(), "include"), "-ldl"], check=True)
    lib = ctypes.CDLL(out)
    lib.bench_nvrtc_compile.restype = ctypes.c_double
    lib.bench_nvrtc_compile.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                                        ctypes.POINTER(ctypes.c_char_p), ctypes.c_int]
    return lib


def table(rows, json_path=None):
    """rows: [(operation, {library: µs or None}, goal_text, goal_fn(gpuhost, raw) -> bool)].
    A row with no "raw C" entry at all has an absolute goal: goal_fn gets raw=None."""
    libs = ["raw C", "gpuhost", "cuda.core", "CuPy", "numba-cuda"]
    for _, figures, _, _ in rows:  # other peers a benchmark measured (PyTorch), after these
        libs += [lib for lib in figures if lib not in libs]
    print("\n%-28s" % "operation (µs per call)" + "".join("%11s" % l for l in libs)
          + "  %-10s %-24s %s" % ("ours/raw", "goal", "met"))
    record = {}
    for op, figures, goal_text, goal in rows:
        cells = "".join("%11s" % ("%.3f" % figures[l] if figures.get(l) is not None else "-")
                        for l in libs)
        ours, raw = figures.get("gpuhost"), figures.get("raw C")
        ratio = ours / raw if ours and raw else None
        absolute = "raw C" not in figures
        met = goal(ours, raw) if ours is not None and (raw is not None or absolute) else None
        print("%-28s%s  %-10s %-24s %s" % (op, cells, "%.2f" % ratio if ratio else "-", goal_text,
                                             {True: "met", False: "NOT met", None: "-"}[met]))
        record[op] = dict(figures, goal=goal_text, met=met, ratio_to_raw=ratio)
    if json_path:
        with open(json_path, "w") as f:
            json.dump(record, f, indent=2)
    return record
