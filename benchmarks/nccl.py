"""NCCL all-reduce: gpuhost.nccl next to raw C, CuPy's NcclCommunicator and PyTorch's
torch.distributed (NCCL backend), one process per GPU, in one run.

Rows (issue: NCCL): all_reduce of 256 MiB float32, bus bandwidth (GB/s: bytes x 2(n-1)/n
per second; with one rank there is no bus, and the row gives the algorithm bandwidth,
bytes per second, instead), in place (as PyTorch's all_reduce is), goal >= 0.98 x the better of CuPy and PyTorch; and the latency
of an 8-byte all_reduce (µs per call over a loop of calls, waited for at its end), goal
<= 1.05 x CuPy's.  Every rank runs the libraries in the same interleaved order, repetition
by repetition; the figures are rank 0's medians.  Raw C (benchmarks/raw/nccl_bench.c) calls
ncclAllReduce in a C loop on the same buffers.  On the GPU machine (two GPUs for the goals):
    NCCL_NVLS_ENABLE=0 python3 benchmarks/nccl.py [--nproc 2] [--json out.json]
"""
import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(HERE))  # the checkout
from _harness import cuda_home, table  # noqa: E402

BIG = 256 << 20
BIG_ITERS, SMALL_ITERS, REPEAT = 20, 2000, 7


def build_raw():
    out = os.path.join(tempfile.mkdtemp(), "libnccl_bench.so")
    home = cuda_home()
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-shared", "-fPIC", "-o", out,
                    os.path.join(HERE, "raw", "nccl_bench.c"), "-I",
                    os.path.join(os.path.dirname(HERE), "csrc"), "-I",
                    os.path.join(home, "include"), "-L", os.path.join(home, "lib64", "stubs"),
                    "-lcuda", "-ldl"], check=True)
    return out


def shared(store, name, rank, make):
    """make() on rank 0, published in the launcher's store; read by the other ranks."""
    path = os.path.join(store, name)
    if rank == 0:
        data = make()
        with open(path + ".tmp", "wb") as f:
            f.write(data)
        os.replace(path + ".tmp", path)
        return data
    while not os.path.exists(path):
        time.sleep(0.01)
    with open(path, "rb") as f:
        return f.read()


def cases(rank, world, store, raw_path):
    """{library: (big(n) -> µs per call, small(n) -> µs per call)} for this rank."""
    import numpy as np

    import gpuhost
    from gpuhost import nccl

    comm = nccl.Communicator.from_env()
    gpuhost.select_device(comm.device.id)
    out = {}
    s = gpuhost.stream(non_blocking=True)
    # in place everywhere, as PyTorch's all_reduce is
    big_send = big_recv = gpuhost.to_device(np.ones(BIG // 4, np.float32))
    small_send = small_recv = gpuhost.to_device(np.ones(2, np.float32))

    def loop_of(send, recv):
        ar = comm.all_reduce

        def run(n):
            t0 = time.perf_counter()
            for _ in range(n):
                ar(send, recv, stream=s)
            s.synchronize()
            return (time.perf_counter() - t0) / n * 1e6
        return run

    out["gpuhost"] = (loop_of(big_send, big_recv), loop_of(small_send, small_recv))

    lib = ctypes.CDLL(raw_path)
    lib.nccl_bench_allreduce.restype = ctypes.c_double
    lib.nccl_bench_allreduce.argtypes = [ctypes.c_ulonglong, ctypes.c_ulonglong, ctypes.c_size_t,
                                         ctypes.c_int]
    uid = shared(store, "raw_uid", rank, nccl.get_unique_id)
    rc = lib.nccl_bench_init(nccl.library_path().encode(), world, rank, uid)
    if rc != 0:
        raise RuntimeError("raw C NCCL benchmark could not start (step %d)" % rc)
    out["raw C"] = (lambda n: lib.nccl_bench_allreduce(big_send.ptr, big_recv.ptr, BIG // 4, n),
                    lambda n: lib.nccl_bench_allreduce(small_send.ptr, small_recv.ptr, 2, n))
    try:
        out["CuPy"] = cupy_case(rank, world, store, comm.device.id)
    except ImportError:
        pass
    try:
        out["PyTorch"] = torch_case(rank, world, store, comm.device.id)
    except ImportError:
        pass
    return out


def cupy_case(rank, world, store, device):
    import cupy
    from cupy.cuda import nccl as cn

    cupy.cuda.Device(device).use()
    uid = shared(store, "cupy_uid", rank, cn.get_unique_id)
    comm = cn.NcclCommunicator(world, uid, rank)
    s = cupy.cuda.Stream(non_blocking=True)
    big_send = big_recv = cupy.ones(BIG // 4, cupy.float32)
    small_send = small_recv = cupy.ones(2, cupy.float32)

    def loop_of(send, recv, count):
        ar, sp, rp, ptr = comm.allReduce, send.data.ptr, recv.data.ptr, s.ptr

        def run(n):
            t0 = time.perf_counter()
            for _ in range(n):
                ar(sp, rp, count, cn.NCCL_FLOAT32, cn.NCCL_SUM, ptr)
            s.synchronize()
            return (time.perf_counter() - t0) / n * 1e6
        return run

    return loop_of(big_send, big_recv, BIG // 4), loop_of(small_send, small_recv, 2)


def torch_case(rank, world, store, device):
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(device)
    dist.init_process_group("nccl", init_method="file://" + os.path.join(store, "torch"),
                            rank=rank, world_size=world, device_id=torch.device("cuda", device))
    big = torch.ones(BIG // 4, dtype=torch.float32, device="cuda")
    small = torch.ones(2, dtype=torch.float32, device="cuda")

    def loop_of(t):
        ar = dist.all_reduce

        def run(n):
            t0 = time.perf_counter()
            for _ in range(n):
                ar(t)
            torch.cuda.synchronize()
            return (time.perf_counter() - t0) / n * 1e6
        return run

    return loop_of(big), loop_of(small)


def worker(json_path, raw_path):
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    libs = cases(rank, world, os.environ["GPUHOST_STORE"], raw_path)
    samples = {lib: ([], []) for lib in libs}
    for lib, (big, small) in libs.items():  # warm-up, every rank in the same order
        big(2)
        small(100)
    for _ in range(REPEAT):
        for lib, (big, small) in libs.items():
            samples[lib][0].append(big(BIG_ITERS))
            samples[lib][1].append(small(SMALL_ITERS))
    if rank == 0:
        with open(json_path, "w") as f:
            json.dump({"world": world, "figures": {
                lib: [statistics.median(b), statistics.median(s)]
                for lib, (b, s) in samples.items()}}, f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nproc", type=int, default=None, help="processes (default: one per GPU, "
                    "two at most)")
    ap.add_argument("--json")
    ap.add_argument("--worker", nargs=2, metavar=("JSON", "RAW"), help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.worker:
        return worker(*opts.worker)
    import gpuhost
    from gpuhost.launch import run

    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    n = opts.nproc or min(2, len(gpuhost.gpus))
    out = os.path.join(tempfile.mkdtemp(), "nccl.json")
    rc = run(os.path.abspath(__file__), ["--worker", out, build_raw()], n)
    if rc != 0:
        print("the NCCL benchmark's ranks failed (exit %d)" % rc)
        return 1
    with open(out) as f:
        result = json.load(f)
    world, figures = result["world"], result["figures"]
    factor = 2 * (world - 1) / world if world > 1 else 1.0
    what = "bus" if world > 1 else "algorithm (1 rank)"
    bw = {lib: BIG / (b * 1e-6) / 1e9 * factor for lib, (b, _) in figures.items()}
    lat = {lib: s for lib, (_, s) in figures.items()}
    best_peer_bw = max([bw[p] for p in ("CuPy", "PyTorch") if p in bw] or [0])
    rows = [
        ("all_reduce 256 MiB, %s GB/s (%d ranks)" % (what, world), bw,
         ">= 0.98 x best of CuPy, PyTorch", lambda ours, raw: ours >= 0.98 * best_peer_bw),
        ("all_reduce 8 B, µs (%d ranks)" % world, lat, "<= 1.05 x CuPy",
         lambda ours, raw: "CuPy" not in lat or ours <= 1.05 * lat["CuPy"]),
    ]
    table(rows, opts.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
