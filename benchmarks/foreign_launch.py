"""Other libraries' arrays as kernel arguments and in assignments: gpuhost next to raw C,
numba-cuda, numba-cuda-mlir (where installed) and CuPy's RawKernel, one run.

Rows, µs per asynchronous launch (one block of 32 threads, batches synchronized outside the
timed window):
- a numba kernel of 8 1-D float32 arrays launched with each library's own arrays, with 8
  PyTorch tensors and with 8 CuPy arrays; goals: torch <= 1.25 x and CuPy <= 1.5 x gpuhost's
  launch with its own arrays, both >= 10 x faster than numba-cuda's launch of the same
  arguments.  Raw C launches the same cubin with the same parameter bytes (numba's layout).
- a CUDA C++ kernel of 8 pointers (NVRTC) launched with gpuhost arrays, CuPy arrays and torch
  tensors; goals: CuPy's arrays <= 0.9 x CuPy's RawKernel launching them, torch <= 1.25 x
  gpuhost's own arrays.
- numba kernels of 16 and 256 float32 scalars (eager signatures, np.float32 arguments, as
  numba-cuda-mlir's own launch benchmark has them); goal: faster than numba-cuda-mlir.
- torch tensors whose stream is not the launch's: the cost of ordering (informational).
- d[a:b] = h next to d[a:b].copy_to_device(h), and d[:] = 0 next to a memset in C; goals
  <= 1.2 x.
The launches go on the stream the arrays' library has current (torch's and CuPy's current
stream set to gpuhost's), as a library's user launches, so no ordering is needed there.
Run on the GPU machine:
    python3 benchmarks/foreign_launch.py [--json out.json]
"""
import argparse
import ctypes
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout
from _harness import Native, interleaved, raw_c, table, timed_loop  # noqa: E402
from jit_launch import fresh_function, raw_case  # noqa: E402

import numpy as np  # noqa: E402

import gpuhost  # noqa: E402

N = 256
PARAMS8 = ", ".join("a%d" % i for i in range(8))
STMT8 = "k[1, 32, s](%s)" % PARAMS8
NVRTC = r"""extern "C" __global__ void k8(float *a0, float *a1, float *a2, float *a3,
                                          float *a4, float *a5, float *a6, float *a7) {}"""


def arrays(make):
    return {"a%d" % i: make() for i in range(8)}


def peers():
    """What is installed of torch, CuPy, numba-cuda and numba-cuda-mlir (None for each
    missing one, with why)."""
    out = {}
    if not hasattr(np, "row_stack"):  # numba-cuda 0.30 calls it; NumPy 2.5 removed it
        np.row_stack = np.vstack
    os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")
    for name, mod in (("torch", "torch"), ("cupy", "cupy"), ("numba", "numba.cuda"),
                      ("mlir", "numba_cuda_mlir.cuda")):
        try:
            out[name] = __import__(mod, fromlist=["x"])
        except Exception as e:  # noqa: BLE001  (any failure leaves that peer out)
            print("%s left out: %s" % (name, e))
            out[name] = None
    return out


def jit_rows(p, raw, s, torch_stream):
    """The numba kernel of 8 arrays: each library's own arrays, torch's, CuPy's."""
    rows, cases = [], {}
    torch, cupy, ncuda, mlir = p["torch"], p["cupy"], p["numba"], p["mlir"]
    own = dict(arrays(lambda: gpuhost.device_array(1024, np.float32)), s=s)
    own["k"] = gpuhost.jit(fresh_function(PARAMS8, "    pass\n", gpuhost))
    exec(STMT8, own)
    s.synchronize()
    launch = {"gpuhost": (own, s.synchronize)}
    if ncuda is not None:
        ns = dict(arrays(lambda: ncuda.device_array(1024, np.float32)), s=ncuda.stream())
        ns["k"] = ncuda.jit(fresh_function(PARAMS8, "    pass\n", ncuda))
        launch["numba-cuda"] = (ns, ns["s"].synchronize)
    if mlir is not None:
        ns = dict(arrays(lambda: mlir.device_array(1024, np.float32)), s=mlir.stream())
        ns["k"] = mlir.jit(fresh_function(PARAMS8, "    pass\n", mlir))
        launch["numba-cuda-mlir"] = (ns, ns["s"].synchronize)
    for lib, (ns, sync) in launch.items():
        exec(STMT8, ns)
        sync()
        cases[lib] = timed_loop(STMT8, ns, sync)
    rawk = raw_case(raw, own["k"], tuple(own["a%d" % i] for i in range(8)))
    own_row = interleaved({"raw C": rawk, **cases}, N)
    rows.append(("jit, 8 own arrays", own_row, "-", lambda o, r: True))

    for label, make, libs in (
            ("torch", (lambda: torch.zeros(1024, device="cuda")) if torch else None,
             ("gpuhost", "numba-cuda")),
            ("CuPy", (lambda: cupy.zeros(1024, np.float32)) if cupy else None,
             ("gpuhost", "numba-cuda", "numba-cuda-mlir"))):
        if make is None:
            continue
        cases = {"raw C": rawk}
        for lib in libs:
            if lib not in launch:
                continue
            ns = dict(launch[lib][0], **arrays(make))
            exec(STMT8, ns)  # compile for these arguments, outside the timing
            launch[lib][1]()
            cases[lib] = timed_loop(STMT8, ns, launch[lib][1])
        figures = interleaved(cases, N)
        limit = 1.25 if label == "torch" else 1.5
        rows.append(("jit, 8 %s arguments" % label, figures,
                     "<= %.2f x own, 10 x numba" % limit,
                     lambda o, r, ref=own_row["gpuhost"], nb=figures.get("numba-cuda"), lim=limit:
                     o <= lim * ref and (nb is None or nb >= 10 * o)))
    return rows, own


def nvrtc_rows(p, raw, s):
    torch, cupy = p["torch"], p["cupy"]
    image = gpuhost.compile(NVRTC)
    k = gpuhost.Module(image).get_function("k8")
    own = dict(arrays(lambda: gpuhost.device_array(1024, np.float32)), k=k, s=s)
    stmt = "k[1, 32, s](%s)" % PARAMS8
    blob = b"".join(int(own["a%d" % i].ptr).to_bytes(8, "little") for i in range(8))
    which = raw.bench_jit_load(bytes(image), b"k8", blob, len(blob),
                               (ctypes.c_size_t * 8)(*range(0, 64, 8)), 8)
    rawk = Native(raw.bench_jit_launch, which, 1, 32)
    cases = {"raw C": rawk, "gpuhost": timed_loop(stmt, own, s.synchronize)}
    rows = []
    if cupy is not None:
        ck = cupy.RawKernel(NVRTC, "k8")
        cns = dict(arrays(lambda: cupy.zeros(1024, np.float32)), ck=ck)
        cstmt = "ck((1,), (32,), (%s,))" % PARAMS8
        exec(cstmt, cns)
        cases["CuPy"] = timed_loop(cstmt, cns, s.synchronize)
    own_row = interleaved(cases, N)
    rows.append(("NVRTC, 8 own arrays", own_row, "-", lambda o, r: True))
    for label, make in (("CuPy", (lambda: cupy.zeros(1024, np.float32)) if cupy else None),
                        ("torch", (lambda: torch.zeros(1024, device="cuda")) if torch else None)):
        if make is None:
            continue
        ns = dict(own, **arrays(make))
        exec(stmt, ns)
        c = {"raw C": rawk, "gpuhost": timed_loop(stmt, ns, s.synchronize)}
        if label == "CuPy":
            c["CuPy"] = cases["CuPy"]
        figures = interleaved(c, N)
        if label == "CuPy":
            rows.append(("NVRTC, 8 CuPy arguments", figures, "<= 0.9 x CuPy RawKernel",
                         lambda o, r, cp=figures["CuPy"]: o <= 0.9 * cp))
        else:
            rows.append(("NVRTC, 8 torch arguments", figures, "<= 1.25 x own",
                         lambda o, r, ref=own_row["gpuhost"]: o <= 1.25 * ref))
    return rows


def scalar_rows(p, raw, s):
    rows = []
    for n in (16, 256):
        params = ", ".join("a%d" % i for i in range(n))
        sig = "void(%s)" % ", ".join(["float32"] * n)
        args = {"args": tuple(np.float32(i) for i in range(n))}
        stmt = "k[1, 32, s](*args)"  # as numba-cuda-mlir's own launch benchmark calls it
        cases, first = {}, None
        for lib, mod, stream in (("gpuhost", gpuhost, s),
                                 ("numba-cuda", p["numba"], None),
                                 ("numba-cuda-mlir", p["mlir"], None)):
            if mod is None:
                continue
            st = stream or mod.stream()
            ns = dict(args, s=st, k=mod.jit(sig)(fresh_function(params, "    pass\n", mod)))
            exec(stmt, ns)
            st.synchronize()
            first = first or ns
            cases[lib] = timed_loop(stmt, ns, st.synchronize)
        cases = {"raw C": raw_scalars(raw, first["k"], list(args["args"])), **cases}
        figures = interleaved(cases, N)
        rows.append(("jit, %d float32 scalars" % n, figures, "< numba-cuda-mlir",
                     lambda o, r, m=figures.get("numba-cuda-mlir"): m is None or o < m))
    return rows


def raw_scalars(raw, k, values):
    """Raw C launching gpuhost's kernel `k` (launched once) with float32 `values`."""
    from gpuhost import _numba

    ((_, ctx), (overload, kernel, _images)), = k._loaded.items()
    blob = b"".join(np.float32(v).tobytes() for v in values)
    n = len(values)
    which = raw.bench_jit_load(bytes(_numba.cubin_for(overload, ctx.device)),
                               overload.entry_name.encode(), blob, len(blob),
                               (ctypes.c_size_t * n)(*range(0, 4 * n, 4)), n)
    if which < 0:
        raise RuntimeError("raw C could not load %s: CUresult %d" % (overload.entry_name, -which))
    return Native(raw.bench_jit_launch, which, 1, 32)


def ordering_row(p, own, s):
    """torch tensors made on another stream than the launch's: one record and one wait."""
    torch = p["torch"]
    if torch is None:
        return []
    other = torch.cuda.Stream()
    with torch.cuda.stream(other):
        ns = dict(own, **arrays(lambda: torch.zeros(1024, device="cuda")))
        exec(STMT8, ns)
        s.synchronize()
        figures = interleaved({"gpuhost": timed_loop(STMT8, ns, s.synchronize)}, N)
    return [("jit, 8 torch, other stream", figures, "(ordered: informational)",
             lambda o, r: True)]


def assignment_rows(raw):
    rows = []
    d = gpuhost.device_array(1 << 18, np.float32)  # 1 MiB
    h = np.random.default_rng().standard_normal(1024).astype(np.float32)
    ns = dict(d=d, h=h)
    figures = interleaved({"gpuhost": timed_loop("d[1024:2048] = h", ns),
                           "copy_to_device": timed_loop("d[1024:2048].copy_to_device(h)", ns)},
                          N)
    rows.append(("d[a:b] = h (4 KiB)", figures, "<= 1.2 x copy_to_device",
                 lambda o, r, ref=figures["copy_to_device"]: o <= 1.2 * ref))
    figures = interleaved({"gpuhost": timed_loop("d[:] = 0", ns),
                           "raw C": Native(raw.bench_memset, 1 << 20)}, N)
    rows.append(("d[:] = 0 (1 MiB)", figures, "<= 1.2 x a memset", lambda o, r: o <= 1.2 * r))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    p = peers()
    raw = raw_c()
    s = gpuhost.stream()
    # torch's and CuPy's current streams: gpuhost's, so their arrays need no ordering
    torch_stream = p["torch"].cuda.ExternalStream(int(s.handle)) if p["torch"] else None
    if p["cupy"] is not None:
        p["cupy"].cuda.ExternalStream(int(s.handle)).use()
    rows = []
    if torch_stream is not None:
        with p["torch"].cuda.stream(torch_stream):
            jr, own = jit_rows(p, raw, s, torch_stream)
            rows += jr + nvrtc_rows(p, raw, s)
    else:
        jr, own = jit_rows(p, raw, s, None)
        rows += jr + nvrtc_rows(p, raw, s)
    rows += scalar_rows(p, raw, s) + ordering_row(p, own, s) + assignment_rows(raw)
    table(rows, args.json)


if __name__ == "__main__":
    main()
