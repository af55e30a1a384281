"""Kernel launch: gpuhost next to raw C, cuda.core, CuPy and numba-cuda, one run.

Rows (ANCHORS.md): an empty kernel's launch, async (batches, synchronized outside the
timed window) and followed by a stream synchronize, with 1 and with 8 arguments (four
pointers, two ints, a float, a double).  Run on the GPU machine:
    python3 benchmarks/launch.py [--json out.json]
"""
import argparse
import ctypes
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout
from _harness import Native, interleaved, raw_c, table, timed_loop  # noqa: E402
from streams_events import peers  # noqa: E402

import numpy as np  # noqa: E402

import gpuhost  # noqa: E402

SOURCE = r"""
extern "C" __global__ void empty1(float *a) {}
extern "C" __global__ void empty8(float *a, float *b, float *c, float *d, int e, int f,
                                  float g, double h) {}
"""
N_ASYNC, N_SYNC = 256, 200


ARGS8 = "(np.int32(1), np.int32(2), np.float32(3), np.float64(4))"


def ours():
    """Launch statements as a numba user writes them: the configuration inline."""
    mod = gpuhost.Module(gpuhost.compile(SOURCE))
    s = gpuhost.stream()
    ns = dict(k1=mod.get_function("empty1"), k8=mod.get_function("empty8"), s=s,
              buf=gpuhost.device_array(64, np.float32))
    return ("k1[1, 1, s](buf)", "k8[1, 1, s](buf, buf, buf, buf, 1, 2, 3.0, 4.0)", ns,
            s.synchronize)


def cupy_cases(cp):
    s = cp.cuda.Stream()
    s.use()  # CuPy launches on its current stream
    buf = cp.zeros(64, cp.float32)
    ns = dict(k1=cp.RawKernel(SOURCE, "empty1"), k8=cp.RawKernel(SOURCE, "empty8"), buf=buf,
              a8=(buf, buf, buf, buf) + eval(ARGS8))
    return "k1((1,), (1,), (buf,))", "k8((1,), (1,), a8)", ns, s.synchronize


def numba_cases(ncuda):
    if not hasattr(np, "row_stack"):  # numba-cuda 0.30 calls it; NumPy 2.5 removed it
        np.row_stack = np.vstack

    @ncuda.jit
    def empty1(a):
        pass

    @ncuda.jit
    def empty8(a, b, c, d, e, f, g, h):
        pass

    s = ncuda.stream()
    ns = dict(k1=empty1, k8=empty8, s=s, buf=ncuda.device_array(64, np.float32), np=np)
    buf = ns["buf"]
    empty1[1, 1, s](buf)  # compile now, so a failure leaves numba out here
    empty8[1, 1, s](buf, buf, buf, buf, np.int32(1), np.int32(2), np.float32(3), np.float64(4))
    s.synchronize()
    return ("k1[1, 1, s](buf)",
            "k8[1, 1, s](buf, buf, buf, buf, np.int32(1), np.int32(2), np.float32(3), "
            "np.float64(4))", ns, s.synchronize)


def cuda_core_cases(dev):
    import cuda.core as cc

    if not hasattr(cc, "Program"):
        from cuda.core import experimental as cc
    prog = cc.Program(SOURCE, code_type="c++",
                      options=cc.ProgramOptions(arch="sm_%d%d" % tuple(dev.compute_capability)))
    mod = prog.compile("cubin")
    s = dev.create_stream()
    buf = dev.allocate(256, stream=s)
    ns = dict(launch=cc.launch, cfg=cc.LaunchConfig(grid=1, block=1), k1=mod.get_kernel("empty1"),
              k8=mod.get_kernel("empty8"), s=s, buf=buf, a8=(buf, buf, buf, buf) + eval(ARGS8))
    return "launch(s, cfg, k1, buf)", "launch(s, cfg, k8, *a8)", ns, s.sync


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    args = parser.parse_args()

    raw = raw_c()
    cubin = bytes(gpuhost.compile(SOURCE))
    res = raw.bench_launch_init(ctypes.c_char_p(cubin))
    if res != 0:
        raise RuntimeError("raw C launch benchmark could not start: CUresult %d" % res)
    libs = {"gpuhost": ours()}
    p = peers()
    for name, make in (("CuPy", cupy_cases), ("numba-cuda", numba_cases),
                       ("cuda.core", cuda_core_cases)):
        if name in p:
            try:
                libs[name] = make(p[name])
            except Exception as e:  # a peer that cannot build the kernels is left out, said why
                print("%s left out: %s: %s" % (name, type(e).__name__, e))

    rows = []
    for nargs, which in ((1, 0), (8, 1)):
        label = "%d arg%s" % (nargs, "s" if nargs > 1 else "")
        cases = {"raw C": Native(raw.bench_launch, nargs, 0)}
        for lib, (s1, s8, ns, sync) in libs.items():
            cases[lib] = timed_loop((s1, s8)[which], ns, sync)
        rows.append(("launch, async, " + label, interleaved(cases, N_ASYNC),
                     "<= 1.10 x raw C", lambda o, r: o <= 1.10 * r))
        cases = {"raw C": Native(raw.bench_launch, nargs, 1)}
        for lib, (s1, s8, ns, sync) in libs.items():
            ns = dict(ns, _sync_after=sync)
            cases[lib] = timed_loop((s1, s8)[which] + "; _sync_after()", ns)
        rows.append(("launch + sync, " + label, interleaved(cases, N_SYNC),
                     "<= 1.05 x raw C", lambda o, r: o <= 1.05 * r))
    table(rows, args.json)


if __name__ == "__main__":
    main()
