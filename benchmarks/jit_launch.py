"""gpuhost.jit's launch: numba-compiled kernels launched by gpuhost next to numba-cuda's own
launch and raw C launching the same cubin with the same parameter bytes, one run.

Rows: launches of empty kernels with no argument, 1 scalar (a Python float), 8 1-D
float32 arrays, and 3 2-D float32 arrays + 2 scalars (a float and an int), each async
(batches, synchronized outside the timed window) on a stream, written as a numba user
writes them (`k[1, 32, s](a, b, ...)`); goals: <= 1.10 x raw C and >= 5 x faster than
numba-cuda.  And the first call: decorating a fresh kernel to the end of its first launch
and synchronize (compile + load), in ms; goal <= 1.05 x numba-cuda's.
numba's low-occupancy warning (a grid under 128 blocks) is switched off in numba's config,
so numba's launch is measured as it is for a large grid.  Run on the GPU machine:
    python3 benchmarks/jit_launch.py [--json out.json]
"""
import argparse
import ctypes
import os
import statistics
import struct
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout
from _harness import Native, interleaved, raw_c, table, timed_loop  # noqa: E402

import numpy as np  # noqa: E402

import gpuhost  # noqa: E402

N_ASYNC, FIRST_CALLS = 256, 3
# (row, the kernel's parameters, the launch's arguments as written in the statement)
CASES = [
    ("jit launch, no argument", "", ""),
    ("jit launch, 1 scalar", "alpha", "2.0"),
    ("jit launch, 8 1-D arrays", "a0, a1, a2, a3, a4, a5, a6, a7",
     "a0, a1, a2, a3, a4, a5, a6, a7"),
    ("jit launch, 3 2-D + 2 scalars", "x, y, z, alpha, n", "x, y, z, 2.0, 3"),
]
# The first-call row's kernel: case (d)'s parameters, with a body to compile.
FIRST_BODY = """\
    i, j = cuda.grid(2)
    if i < x.shape[0] and j < x.shape[1]:
        x[i, j] = alpha * y[i, j] + n * z[i, j]
"""
_fresh = [0]


def fresh_function(params, body, cuda):
    """A new Python function (unique name, own code object) whose module `cuda` is `cuda`,
    so no cache of numba's knows it."""
    _fresh[0] += 1
    name = "kernel_%d" % _fresh[0]
    scope = {"cuda": cuda, "__name__": "jit_launch_fresh"}
    exec(compile("def %s(%s):\n%s" % (name, params, body), "<%s>" % name, "exec"), scope)
    return scope[name]


def namespace(to_device, stream):
    """The launch statements' names: 1-D and 2-D float32 device arrays and the stream."""
    ns = {"a%d" % i: to_device(np.zeros(1024, np.float32)) for i in range(8)}
    ns.update({name: to_device(np.zeros((32, 32), np.float32)) for name in "xyz"})
    ns["s"] = stream
    return ns


def statement(args):
    return "k[1, 32, s](%s)" % args


def param_bytes(args):
    """numba's parameters for `args` (gpuhost arrays, Python floats and ints), one bytes
    object each: an array is meminfo, parent, nitems, itemsize, data, shape, strides (bytes),
    8 bytes each; a float is a float64, an int an int64."""
    out = []
    for a in args:
        if isinstance(a, float):
            out.append(struct.pack("<d", a))
        elif isinstance(a, int):
            out.append(struct.pack("<q", a))
        else:
            fields = (0, 0, a.size, a.dtype.itemsize, a.ptr) + tuple(a.shape) + tuple(a.strides)
            out.extend(struct.pack("<q", v) for v in fields)
    return out


def raw_case(raw, k, args):
    """Load gpuhost's kernel `k` (launched once) into raw C with `args`' parameter bytes: a
    Native case of bench_jit_launch."""
    from gpuhost import _numba

    ((_, ctx), (overload, kernel, _images)), = k._loaded.items()
    params = param_bytes(args)
    sizes = [len(p) for p in params]
    if [info[1] for info in kernel.param_info] != sizes:
        raise RuntimeError("%s: parameter sizes %s, the kernel's %s" % (
            overload.entry_name, sizes, [info[1] for info in kernel.param_info]))
    blob = b"".join(params)
    pack = getattr(k, "_jit_pack", None)  # gpuhost's own bytes for these arguments, if it tells
    try:
        theirs = pack and pack(_numba.plan(overload.argument_types), tuple(args), kernel)
    except (TypeError, ValueError):
        theirs = None
    if theirs and theirs != blob:
        print("note: %s: these parameter bytes differ from gpuhost's" % overload.entry_name)
    offsets = [sum(sizes[:i]) for i in range(len(sizes))]
    which = raw.bench_jit_load(bytes(_numba.cubin_for(overload, ctx.device)),
                               overload.entry_name.encode(), blob, len(blob),
                               (ctypes.c_size_t * len(offsets))(*offsets), len(offsets))
    if which < 0:
        raise RuntimeError("raw C could not load %s: CUresult %d" % (overload.entry_name, -which))
    return Native(raw.bench_jit_launch, which, 1, 32)


def first_call_ms(jit, cuda, ns):
    """ms from decorating a fresh kernel to the end of its first launch + synchronize."""
    f = fresh_function(CASES[3][1], FIRST_BODY, cuda)
    s = ns["s"]
    t0 = time.perf_counter()
    k = jit(f)
    k[1, 32, s](ns["x"], ns["y"], ns["z"], 2.0, 3)
    s.synchronize()
    return (time.perf_counter() - t0) * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    args = parser.parse_args()

    os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")  # read at numba's import
    if not hasattr(np, "row_stack"):  # numba-cuda 0.30 calls it; NumPy 2.5 removed it
        np.row_stack = np.vstack
    try:
        from numba import cuda as ncuda
        from numba.cuda.core.errors import NumbaPerformanceWarning
    except ImportError as e:
        print("jit_launch left out: numba-cuda does not import: %s" % e)
        table([], args.json)
        return
    warnings.simplefilter("ignore", NumbaPerformanceWarning)

    raw = raw_c()

    libs = {  # name: (jit, the kernels' `cuda` module, namespace of the launch statements)
        "gpuhost": (gpuhost.jit, gpuhost, namespace(gpuhost.to_device, gpuhost.stream())),
        "numba-cuda": (ncuda.jit, ncuda, namespace(ncuda.to_device, ncuda.stream())),
    }
    rows = []
    for op, params, argtext in CASES:
        cases, spaces = {}, {}
        for lib, (jit, cuda, ns) in libs.items():
            ns = spaces[lib] = dict(ns, k=jit(fresh_function(params, "    pass\n", cuda)))
            exec(statement(argtext), ns)  # compile and load, outside the timing
            ns["s"].synchronize()
            cases[lib] = timed_loop(statement(argtext), ns, ns["s"].synchronize)
        ours = spaces["gpuhost"]
        cases = {"raw C": raw_case(raw, ours["k"], eval("(%s,)" % argtext, ours) if argtext
                                   else ()), **cases}
        figures = interleaved(cases, N_ASYNC)
        rows.append((op, figures, "<= 1.10 x raw C, 5 x numba",
                     lambda o, r, nb=figures["numba-cuda"]: o <= 1.10 * r and nb >= 5 * o))

    samples = {lib: [] for lib in libs}
    for rep in range(FIRST_CALLS + 1):  # the first round warms up each library
        for lib, (jit, cuda, ns) in libs.items():
            ms = first_call_ms(jit, cuda, ns)
            if rep:
                samples[lib].append(ms)
    figures = {lib: statistics.median(v) for lib, v in samples.items()}
    rows.append(("jit first call, ms", figures, "<= 1.05 x numba-cuda",
                 lambda o, r, nb=figures["numba-cuda"]: o <= 1.05 * nb))
    table(rows, args.json)
    print("\nnumba-cuda's time / gpuhost's:")
    for op, figures, _, _ in rows:
        print("  %-30s %.2f" % (op, figures["numba-cuda"] / figures["gpuhost"]))


if __name__ == "__main__":
    main()
