"""CUDA graphs: gpuhost next to raw C and CuPy's Graph, one run.

Rows (issue: graphs): replaying a captured graph of 1000 empty kernels (per kernel, each
replay followed by a stream synchronize), launching a one-kernel graph (asynchronous), and
capturing plus instantiating a 100-kernel stream.  gpuhost's own per-launch cost of the
same kernel is measured in the same run: a replayed kernel must cost <= 0.25 x it.
PyTorch's torch.cuda.CUDAGraph captures the same empty kernel launched (by gpuhost) on its
capture stream, and replays it with g.replay(); cuda.core's GraphBuilder captures it
launched with cuda.core.launch.  Run on the GPU machine:
    python3 benchmarks/graphs.py [--json out.json]
"""
import argparse
import ctypes
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout
from _harness import Native, interleaved, raw_c, table, timed_loop  # noqa: E402
import time  # noqa: E402
from streams_events import peers  # noqa: E402

import numpy as np  # noqa: E402

import gpuhost  # noqa: E402

SOURCE = r"""
extern "C" __global__ void empty1(float *a) {}
extern "C" __global__ void empty8(float *a, float *b, float *c, float *d, int e, int f,
                                  float g, double h) {}
"""
BIG, SMALL_CAPTURE = 1000, 100
N_REPLAY, N_LAUNCH, N_CAPTURE = 20, 2000, 20


def each_timed(make):
    """A Native case timing make() alone, n times, each result dropped (the graph and its
    executable destroyed) outside the timed window, as the raw C loop does."""

    def loop(n):
        total = 0.0
        for _ in range(n):
            t0 = time.perf_counter()
            result = make()
            total += time.perf_counter() - t0
            del result
        return total / n * 1e6

    return Native(loop)


def ours():
    mod = gpuhost.Module(gpuhost.compile(SOURCE))
    k1 = mod.get_function("empty1")
    s = gpuhost.stream(non_blocking=True)
    buf = gpuhost.device_array(64, np.float32)

    def capture(n):
        s.begin_capture()
        for _ in range(n):
            k1[1, 1, s](buf)
        return s.end_capture()

    big = capture(BIG).instantiate()
    one = capture(1).instantiate()
    ns = dict(k1=k1, s=s, buf=buf, big=big, one=one)
    return dict(launch=timed_loop("k1[1, 1, s](buf)", ns, s.synchronize),
                replay=timed_loop("big.launch(s); s.synchronize()", ns),
                one=timed_loop("one.launch(s)", ns, s.synchronize),
                capture=each_timed(lambda: capture(SMALL_CAPTURE).instantiate()))


def cupy_cases(cp):
    s = cp.cuda.Stream(non_blocking=True)
    k1 = cp.RawKernel(SOURCE, "empty1")
    buf = cp.zeros(64, cp.float32)
    args = (buf,)

    def capture(n):
        with s:
            s.begin_capture()
            for _ in range(n):
                k1((1,), (1,), args)
            return s.end_capture()  # CuPy instantiates here

    big, one = capture(BIG), capture(1)
    ns = dict(s=s, big=big, one=one)
    return dict(replay=timed_loop("big.launch(s); s.synchronize()", ns),
                one=timed_loop("one.launch(s)", ns, s.synchronize),
                capture=each_timed(lambda: capture(SMALL_CAPTURE)))


def torch_cases():
    import torch

    mod = gpuhost.Module(gpuhost.compile(SOURCE))
    k1 = mod.get_function("empty1")
    buf = gpuhost.device_array(64, np.float32)
    ts = torch.cuda.Stream()

    def capture(n):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=ts):
            for _ in range(n):
                k1[1, 1, ts](buf)
        return g

    big, one = capture(BIG), capture(1)
    cs = torch.cuda.current_stream()
    ns = dict(big=big, one=one, cs=cs)
    return dict(replay=timed_loop("big.replay(); cs.synchronize()", ns),
                one=timed_loop("one.replay()", ns, cs.synchronize),
                capture=each_timed(lambda: capture(SMALL_CAPTURE)))


def cuda_core_cases(dev):
    import cuda.core as cc

    if not hasattr(cc, "Program"):
        from cuda.core import experimental as cc
    prog = cc.Program(SOURCE, code_type="c++",
                      options=cc.ProgramOptions(arch="sm_%d%d" % tuple(dev.compute_capability)))
    k1 = prog.compile("cubin").get_kernel("empty1")
    s = dev.create_stream()
    buf = dev.allocate(256, stream=s)
    cfg = cc.LaunchConfig(grid=1, block=1)

    def capture(n):
        gb = s.create_graph_builder()
        gb.begin_building()
        for _ in range(n):
            cc.launch(gb, cfg, k1, buf)
        gb.end_building()
        return gb.complete()

    big, one = capture(BIG), capture(1)
    ns = dict(big=big, one=one, s=s)
    return dict(replay=timed_loop("big.launch(s); s.sync()", ns),
                one=timed_loop("one.launch(s)", ns, s.sync),
                capture=each_timed(lambda: capture(SMALL_CAPTURE)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    args = parser.parse_args()

    raw = raw_c()
    res = raw.bench_graph_init(ctypes.c_char_p(bytes(gpuhost.compile(SOURCE))))
    if res != 0:
        raise RuntimeError("raw C graph benchmark could not start: CUresult %d" % res)
    libs = {"gpuhost": ours()}
    p = peers()
    makers = [("CuPy", lambda: cupy_cases(p["CuPy"])) if "CuPy" in p else None,
              ("cuda.core", lambda: cuda_core_cases(p["cuda.core"])) if "cuda.core" in p else None,
              ("PyTorch", torch_cases)]
    for name, make in filter(None, makers):
        try:
            libs[name] = make()
        except Exception as e:  # a peer that cannot capture is left out, said why
            print("%s left out: %s: %s" % (name, type(e).__name__, e))

    launch = interleaved({"gpuhost": libs["gpuhost"]["launch"]}, N_LAUNCH)["gpuhost"]
    print("gpuhost's own launch of the same empty kernel: %.3f us" % launch)
    rows = []
    cases = {"raw C": Native(raw.bench_graph_launch, BIG, 1)}
    cases.update((lib, c["replay"]) for lib, c in libs.items())
    replay = {lib: (t / BIG if t is not None else None)
              for lib, t in interleaved(cases, N_REPLAY).items()}
    rows.append(("graph replay, per kernel", replay,
                 "<= 0.25 x launch, 1.05 x raw",
                 lambda o, r: o <= 0.25 * launch and o <= 1.05 * r))
    cases = {"raw C": Native(raw.bench_graph_launch, 1, 0)}
    cases.update((lib, c["one"]) for lib, c in libs.items())
    rows.append(("graph launch, 1 kernel", interleaved(cases, N_LAUNCH),
                 "<= 1.10 x raw C", lambda o, r: o <= 1.10 * r))
    cases = {"raw C": Native(raw.bench_graph_capture, SMALL_CAPTURE)}
    cases.update((lib, c["capture"]) for lib, c in libs.items())
    rows.append(("capture+instantiate, 100", interleaved(cases, N_CAPTURE),
                 "<= 1.2 x raw C", lambda o, r: o <= 1.2 * r))
    table(rows, args.json)


if __name__ == "__main__":
    main()
