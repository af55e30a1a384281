"""NCCL all-reduce: gpuhost.nccl next to raw C, CuPy's NcclCommunicator and PyTorch's
torch.distributed (NCCL backend), one process per GPU, in one run.

Rows (issue 43): all_reduce of 1 GiB and of 256 MiB float32, bus bandwidth (GB/s: bytes x
2(n-1)/n per second; with one rank the algorithm bandwidth instead), in place (as PyTorch's
all_reduce is), goal >= 0.99 x raw C; the latency of an 8-byte all_reduce (µs per call over a
loop of calls, waited for at its end), goal <= 1.05 x raw C.  "gpuhost (pointers)" is the
same call through comm._raw (CuPy's pointer API over gpuhost): gpuhost's own call cost
without resolving its arrays.  Every rank runs the libraries in the same interleaved order,
repetition by repetition; the figures are rank 0's medians.  Raw C
(benchmarks/raw/nccl_bench.c) calls ncclAllReduce in a C loop on the same buffers.

Layouts (--nodes): 1, the ranks on one node (python -m gpuhost.launch -n N); 2, the same N
ranks as two simulated nodes of N/2 GPUs each on this machine: two launchers (--nnodes 2),
each with its half of the GPUs (CUDA_VISIBLE_DEVICES) and its own NCCL_HOSTID, so that NCCL
treats them as two hosts and crosses between them on its socket transport over loopback
(NCCL_SOCKET_IFNAME=lo).  "--nodes 1,2" prints both, side by side.  Unique ids go from rank 0
to the others through gpuhost's communicator itself (a broadcast): no shared folder.
    NCCL_NVLS_ENABLE=0 python3 benchmarks/nccl.py --nproc 4 --nodes 1,2 [--repeat 7]
        [--json out.json]
"""
import argparse
import ctypes
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(HERE))  # the checkout
from _harness import cuda_home, table  # noqa: E402

SIZES = {"1 GiB": 1 << 30, "256 MiB": 256 << 20}
SMALL = 8  # bytes: 2 float32
ITERS = {"1 GiB": 10, "256 MiB": 20}
SMALL_ITERS, REPEAT = 2000, 7
WORKER = None  # the script the ranks run (this one)


def build_raw():
    out = os.path.join(tempfile.mkdtemp(), "libnccl_bench.so")
    home = cuda_home()
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-shared", "-fPIC", "-o", out,
                    os.path.join(HERE, "raw", "nccl_bench.c"), "-I",
                    os.path.join(os.path.dirname(HERE), "csrc"), "-I",
                    os.path.join(home, "include"), "-L", os.path.join(home, "lib64", "stubs"),
                    "-lcuda", "-ldl"], check=True)
    return out


def shared(comm, stream, make, size=128):
    """make() on rank 0 (bytes, at most `size`), given to every rank through a broadcast on
    gpuhost's communicator."""
    import numpy as np

    import gpuhost

    buf = np.zeros(size + 2, np.uint8)
    if comm.rank == 0:
        data = make()
        buf[0], buf[1] = len(data) // 256, len(data) % 256
        buf[2:2 + len(data)] = np.frombuffer(data, np.uint8)
    d = gpuhost.to_device(buf, stream=stream)
    comm.broadcast(d, root=0, stream=stream)
    out = d.copy_to_host(stream=stream)
    return out[2:2 + int(out[0]) * 256 + int(out[1])].tobytes()


def timed(step, n, sync):
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    sync()
    return (time.perf_counter() - t0) / n * 1e6


def cases(raw_path):
    """{library: {size name: run(n) -> µs per call}} for this rank."""
    import numpy as np

    import gpuhost
    from gpuhost import nccl

    comm = nccl.Communicator.from_env(timeout=300)
    gpuhost.select_device(comm.device.id)
    s = gpuhost.stream(non_blocking=True)
    bufs = {name: gpuhost.to_device(np.ones(n // 4, np.float32), stream=s)
            for name, n in list(SIZES.items()) + [("8 B", SMALL)]}  # in place everywhere
    s.synchronize()
    out = {"gpuhost": {}, "gpuhost (pointers)": {}, "raw C": {}}
    ar, raw_call, handle = comm.all_reduce, comm._raw, s.handle
    for name, d in bufs.items():
        out["gpuhost"][name] = (lambda d=d: ar(d, d, stream=s), s.synchronize)
        out["gpuhost (pointers)"][name] = (
            lambda d=d: raw_call(0, d.ptr, d.ptr, d.size, 7, 0, 0, handle), s.synchronize)
    lib = ctypes.CDLL(raw_path)
    lib.nccl_bench_allreduce.restype = ctypes.c_double
    lib.nccl_bench_allreduce.argtypes = [ctypes.c_ulonglong, ctypes.c_ulonglong, ctypes.c_size_t,
                                         ctypes.c_int]
    uid = shared(comm, s, nccl.get_unique_id)
    rc = lib.nccl_bench_init(nccl.library_path().encode(), comm.size, comm.rank, uid)
    if rc != 0:
        raise RuntimeError("raw C NCCL benchmark could not start (step %d)" % rc)
    for name, d in bufs.items():
        out["raw C"][name] = ("raw", lambda n, d=d: lib.nccl_bench_allreduce(d.ptr, d.ptr, d.size,
                                                                            n))
    for peer, fn in (("CuPy", cupy_case), ("PyTorch", torch_case)):
        try:
            out[peer] = fn(comm, s)
        except ImportError:
            pass
    return comm, out


def cupy_case(comm, stream):
    import cupy
    from cupy.cuda import nccl as cn

    cupy.cuda.Device(comm.device.id).use()
    uid = shared(comm, stream, lambda: bytes(cn.get_unique_id()))  # CuPy's: 128 bytes
    cc = cn.NcclCommunicator(comm.size, uid, comm.rank)
    s = cupy.cuda.Stream(non_blocking=True)
    out = {}
    for name, n in list(SIZES.items()) + [("8 B", SMALL)]:
        buf = cupy.ones(n // 4, cupy.float32)
        out[name] = (lambda b=buf, c=n // 4: cc.allReduce(b.data.ptr, b.data.ptr, c,
                                                          cn.NCCL_FLOAT32, cn.NCCL_SUM, s.ptr),
                     s.synchronize)
    return out


def torch_case(comm, stream):
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(comm.device.id)
    addr = os.environ.get("MASTER_ADDR", "127.0.0.1")

    def free_port():
        with socket.socket() as sock:
            sock.bind((addr, 0))
            return str(sock.getsockname()[1]).encode()

    port = int(shared(comm, stream, free_port))
    dist.init_process_group("nccl", init_method="tcp://%s:%d" % (addr, port), rank=comm.rank,
                            world_size=comm.size, device_id=torch.device("cuda", comm.device.id))
    out = {}
    for name, n in list(SIZES.items()) + [("8 B", SMALL)]:
        t = torch.ones(n // 4, dtype=torch.float32, device="cuda")
        out[name] = (lambda t=t: dist.all_reduce(t), torch.cuda.synchronize)
    return out


def measure(entry, n):
    if entry[0] == "raw":
        return entry[1](n)
    step, sync = entry
    return timed(step, n, sync)


def worker(json_path, raw_path):
    import numpy as np

    import gpuhost

    repeat = int(os.environ.get("GPUHOST_NCCL_BENCH_REPEAT", REPEAT))
    comm, libs = cases(raw_path)
    names = list(SIZES) + ["8 B"]
    samples = {lib: {name: [] for name in names} for lib in libs}
    slowest = np.zeros(len(names))
    for lib, runs in libs.items():  # warm-up, every rank in the same order
        for i, name in enumerate(names):
            n = 2 if name != "8 B" else 100
            slowest[i] = max(slowest[i], measure(runs[name], n) * 1e-6)
    # each sample 0.25 s at most (a slow transport: the simulated nodes' sockets), the same
    # count on every rank: the slowest rank's timings decide
    with gpuhost.gpus[comm.device.id]:
        d = gpuhost.to_device(slowest)
        comm.all_reduce(d, d, op="max")
        slowest = d.copy_to_host()
    most = dict(ITERS, **{"8 B": SMALL_ITERS})
    iters = {name: max(1, min(most[name], int(0.25 / t))) for name, t in zip(names, slowest)}
    for _ in range(repeat):
        for lib, runs in libs.items():
            for name in names:
                samples[lib][name].append(measure(runs[name], iters[name]))
    if comm.rank == 0:
        with open(json_path, "w") as f:
            json.dump({"world": comm.size, "iters": iters, "figures": {
                lib: {name: statistics.median(v) for name, v in per.items()}
                for lib, per in samples.items()}}, f)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_layout(nproc, nodes, raw):
    """Run the workers as `nodes` simulated nodes; rank 0's figures, or None."""
    out = os.path.join(tempfile.mkdtemp(), "nccl.json")
    env = dict(os.environ, NCCL_NVLS_ENABLE=os.environ.get("NCCL_NVLS_ENABLE", "0"))
    env.pop("GPUHOST_STORE", None)
    args = [WORKER or os.path.abspath(__file__), "--worker", out, raw]
    if nodes == 1:
        procs = [subprocess.Popen([sys.executable, "-m", "gpuhost.launch", "-n", str(nproc)]
                                  + args, env=env)]
    else:
        per, port = nproc // nodes, str(free_port())
        procs = []
        for node in range(nodes):
            node_env = dict(env, NCCL_HOSTID="simnode%d" % node, NCCL_SOCKET_IFNAME="lo",
                            NCCL_IB_DISABLE="1",
                            CUDA_VISIBLE_DEVICES=",".join(str(node * per + k) for k in range(per)))
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "gpuhost.launch", "--nnodes", str(nodes), "--node-rank",
                 str(node), "-n", str(per), "--master-addr", "127.0.0.1", "--master-port", port]
                + args, env=node_env))
    codes = [p.wait() for p in procs]
    if any(codes):
        print("the NCCL benchmark's ranks failed (%d nodes: exit %s)" % (nodes, codes))
        return None
    with open(out) as f:
        return json.load(f)


def rows_of(result, nodes):
    world, figures = result["world"], result["figures"]
    factor = 2 * (world - 1) / world if world > 1 else 1.0
    what = "bus" if world > 1 else "algorithm"
    where = "%d ranks, %s" % (world, "1 node" if nodes == 1 else "%d sim. nodes" % nodes)
    rows = []
    for name, n in SIZES.items():
        bw = {lib: n / (per[name] * 1e-6) / 1e9 * factor for lib, per in figures.items()}
        rows.append(("all_reduce %s, %s GB/s (%s)" % (name, what, where), bw, ">= 0.99 x raw C",
                     lambda ours, raw: ours >= 0.99 * raw))
    lat = {lib: per["8 B"] for lib, per in figures.items()}
    rows.append(("all_reduce 8 B, µs (%s)" % where, lat, "<= 1.05 x raw C",
                 lambda ours, raw: ours <= 1.05 * raw))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nproc", type=int, default=None, help="processes, one per GPU (default: "
                    "every GPU, two at most)")
    ap.add_argument("--nodes", default="1", help="1, 2 (simulated nodes) or 1,2 (both)")
    ap.add_argument("--repeat", type=int, default=REPEAT, help="repetitions (default %d)" % REPEAT)
    ap.add_argument("--json")
    ap.add_argument("--worker", nargs=2, metavar=("JSON", "RAW"), help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.worker:
        return worker(*opts.worker)
    os.environ["GPUHOST_NCCL_BENCH_REPEAT"] = str(opts.repeat)
    import gpuhost

    n = opts.nproc or min(2, len(gpuhost.gpus))
    layouts = [int(x) for x in opts.nodes.split(",")]
    if any(n % nodes or n < nodes for nodes in layouts) or n > len(gpuhost.gpus):
        print("--nproc %d does not fit %s node(s) on %d GPUs" % (n, opts.nodes, len(gpuhost.gpus)))
        return 2
    raw = build_raw()
    rows = []
    for nodes in layouts:
        result = run_layout(n, nodes, raw)
        if result is None:
            return 1
        rows += rows_of(result, nodes)
    rows.sort(key=lambda r: (r[0].split(",")[0], r[0]))  # each size's layouts side by side
    table(rows, opts.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
