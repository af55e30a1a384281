"""One rank of tests/test_nccl.py's multi-process runs: every collective against NumPy, on
gpuhost, CuPy and PyTorch buffers, each NCCL dtype, fresh random data.

Started by ``python -m gpuhost.launch -n N`` (on one node or several: ``--nnodes``), by
torchrun, or by ``mpirun -n N ... --mpi``.  Every rank draws its data from a seed rank 0
chose and broadcast (through NCCL), mixed with the rank, so each rank can compute every
other rank's contribution and check its result exactly: floating-point data are small whole
numbers, which every order of summing (multiplying, averaging over a power of two) keeps
exact; only an average over a number of ranks that is no power of two is compared within
NCCL's rounding.  Prints "rank<r>:ok" at the end (with "gpuhost_store:unset" where the
environment has no GPUHOST_STORE); with --mpi also whether mpi4py's Allreduce took gpuhost
arrays (CUDA-aware MPI) or why not.
"""
import ctypes
import os
import sys

import numpy as np

import gpuhost
from gpuhost import nccl

INTS = ["int8", "uint8", "int32", "uint32", "int64", "uint64"]
FLOATS = ["float16", "float32", "float64"]
OPS = ["sum", "prod", "max", "min", "avg"]


def data(seed, case, rank, dtype, shape, op="sum"):
    gen = np.random.default_rng([seed, case, rank])
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        lo = 0 if dt.kind == "u" else (-100 if dt.itemsize == 1 else -(2**20))
        hi = 100 if dt.itemsize == 1 else 2**20
        return gen.integers(lo, hi, size=shape).astype(dt)
    bound = 2 if op == "prod" else 64  # exact in any order, for up to 16 ranks
    return gen.integers(-bound, bound, size=shape, endpoint=True).astype(dt)


def expect(arrays, op):
    out = arrays[0].copy()
    with np.errstate(over="ignore"):
        for a in arrays[1:]:
            out = {"sum": lambda: out + a, "prod": lambda: out * a, "avg": lambda: out + a,
                   "max": lambda: np.maximum(out, a), "min": lambda: np.minimum(out, a)}[op]()
            out = out.astype(arrays[0].dtype)
    if op == "avg" and out.dtype.kind in "iu":
        n = len(arrays)
        out = np.array([abs(int(t)) // n * (1 if t >= 0 else -1) for t in out.ravel()],
                       dtype=object).astype(out.dtype).reshape(out.shape)
    elif op == "avg":
        out = sum(a.astype(np.float64) for a in arrays) / len(arrays)
    return out


def same(got, want, dtype, exact=True):
    got = np.asarray(got)
    if exact or np.dtype(dtype).kind in "iu":
        return np.array_equal(got, np.asarray(want).astype(got.dtype))
    tol = {"float16": 2e-3, "float32": 1e-5}.get(np.dtype(dtype).name, 1e-12)
    return np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


def make_comm(use_mpi):
    if not use_mpi:
        return nccl.Communicator.from_env(), None
    from mpi4py import MPI

    local = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", MPI.COMM_WORLD.Get_rank()))
    gpuhost.select_device(local % len(gpuhost.gpus))
    return nccl.Communicator.from_mpi(MPI.COMM_WORLD, device=local % len(gpuhost.gpus)), MPI


def shared_seed(comm, stream):
    mine = np.random.default_rng().integers(0, 2**62, size=1, dtype=np.int64)
    d = gpuhost.to_device(mine, stream=stream)
    comm.broadcast(d, root=0, stream=stream)
    return int(d.copy_to_host(stream=stream)[0])


def check_collectives(comm, stream, seed, wrap, label, failures, skip=()):
    """Every collective on buffers made by wrap(numpy array) (gpuhost, CuPy or PyTorch),
    for each dtype but those in `skip`."""
    n, r, case = comm.size, comm.rank, 0

    def fail(what):
        failures.append("%s %s" % (label, what))

    for dtype in INTS + FLOATS:
        if dtype in skip:
            continue
        for op in OPS:
            case += 1
            xs = [data(seed, case, k, dtype, (5, 33), op) for k in range(n)]
            got = comm.all_reduce(wrap(xs[r]), op=op, stream=stream)
            stream.synchronize()
            exact = op != "avg" or n & (n - 1) == 0  # x / 3 rounds (NCCL: times 1/3)
            if not same(to_host(got), expect(xs, op), dtype, exact):
                fail("all_reduce %s %s" % (dtype, op))
    for dtype in ["int32", "float64"]:
        case += 1
        xs = [data(seed, case, k, dtype, 64 * n) for k in range(n)]
        root = n - 1
        red = comm.reduce(wrap(xs[r]), root=root, op="max", stream=stream)
        buf = wrap(xs[r].copy())
        comm.broadcast(buf, root=root, stream=stream)
        gathered = comm.all_gather(wrap(xs[r]), stream=stream)
        scattered = comm.reduce_scatter(wrap(xs[r]), op="sum", stream=stream)
        exchanged = comm.all_to_all(wrap(xs[r]), stream=stream)
        recv = wrap(np.zeros_like(xs[r]))
        with nccl.group():
            comm.send(wrap(xs[r]), (r + 1) % n, stream=stream)
            comm.recv(recv, (r - 1) % n, stream=stream)
        stream.synchronize()
        total, block = expect(xs, "sum"), 64
        checks = {
            "reduce": r != root or same(to_host(red), expect(xs, "max"), dtype),
            "broadcast": same(to_host(buf), xs[root], dtype),
            "all_gather": same(to_host(gathered), np.stack(xs), dtype),
            "reduce_scatter": same(to_host(scattered), total[r * block:(r + 1) * block], dtype),
            "all_to_all": same(to_host(exchanged),
                               np.concatenate([x[r * block:(r + 1) * block] for x in xs]), dtype),
            "send/recv": same(to_host(recv), xs[(r - 1) % n], dtype),
        }
        failures.extend("%s %s %s" % (label, k, dtype) for k, v in checks.items() if not v)


def check_graph_and_registration(comm, stream, seed, failures):
    """all_reduce captured into a graph and replayed on fresh data; then on a buffer from
    NCCL's allocator registered with the communicator, where the loaded NCCL has them."""
    n, r = comm.size, comm.rank
    send = gpuhost.device_array(1000, np.float32)
    recv = gpuhost.device_array(1000, np.float32)
    stream.synchronize()
    stream.begin_capture()
    comm.all_reduce(send, recv, stream=stream)
    replay = stream.end_capture().instantiate()
    for rep in range(2):
        xs = [data(seed, 1000 + rep, k, "float32", 1000) for k in range(n)]
        send.copy_to_device(xs[r], stream=stream)
        replay.launch(stream)
        comm.wait(stream, timeout=120)
        if not same(recv.copy_to_host(stream=stream), expect(xs, "sum"), "float32"):
            failures.append("graph replay %d" % rep)
    if not nccl.registration_available():
        say("registration: skipped (NCCL %d has none)" % nccl.get_version())
        return
    buf = nccl.device_array(4096, np.float32)
    xs = [data(seed, 2000, k, "float32", 4096) for k in range(n)]
    buf.copy_to_device(xs[r], stream=stream)
    with comm.register(buf):
        comm.all_reduce(buf, buf, stream=stream)
        comm.wait(stream, timeout=120)
    if not same(buf.copy_to_host(stream=stream), expect(xs, "sum"), "float32"):
        failures.append("registered all_reduce")


def to_host(a):
    if hasattr(a, "copy_to_host"):
        return a.copy_to_host()
    if hasattr(a, "get"):
        return a.get()
    return a.cpu().numpy()


def peers(comm, stream):
    """CuPy and PyTorch buffers, where installed, as wrap functions."""
    out = []
    try:
        import cupy

        out.append(("cupy", lambda x: cupy.asarray(x), ()))
    except ImportError:
        pass
    try:
        import torch

        dev = torch.device("cuda", comm.device.id)
        wrap = lambda x: torch.from_numpy(np.ascontiguousarray(x)).to(dev)  # noqa: E731
        out.append(("torch", wrap, ("uint32", "uint64")))  # torch's own support is partial
    except ImportError:
        pass
    return out


def cuda_aware_mpi(MPI, comm_rank, size):
    """mpi4py's Allreduce straight on gpuhost arrays, where the MPI build is CUDA-aware."""
    try:
        query = ctypes.CDLL(None).MPIX_Query_cuda_support
    except AttributeError:
        return "skipped: this MPI has no MPIX_Query_cuda_support"
    if query() != 1:
        return "skipped: the MPI build is not CUDA-aware (MPIX_Query_cuda_support() is 0)"
    x = np.arange(1000, dtype=np.float64) + comm_rank
    d_send, d_recv = gpuhost.to_device(x), gpuhost.device_array(1000, np.float64)
    MPI.COMM_WORLD.Allreduce(d_send, d_recv)
    want = sum(np.arange(1000, dtype=np.float64) + k for k in range(size))
    return "ok" if np.array_equal(d_recv.copy_to_host(), want) else "FAILED"


def say(line):
    """One write per line: the ranks share the launcher's pipe, and a pipe keeps a small
    write whole, where print's separate writes of text and newline could interleave."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main():
    use_mpi = "--mpi" in sys.argv
    comm, MPI = make_comm(use_mpi)
    failures = []
    with gpuhost.gpus[comm.device.id]:
        stream = gpuhost.stream()
        seed = shared_seed(comm, stream)
        check_collectives(comm, stream, seed, lambda x: gpuhost.to_device(x, stream=stream),
                          "gpuhost", failures)
        check_graph_and_registration(comm, stream, seed, failures)
        for name, wrap, skip in peers(comm, stream):
            check_collectives(comm, stream, seed + 1, wrap, name, failures, skip)
        comm.wait(stream, timeout=120)
        if MPI is not None:
            say("cuda-aware mpi: %s" % cuda_aware_mpi(MPI, comm.rank, comm.size))
    comm.destroy()
    if "GPUHOST_STORE" not in os.environ:
        say("gpuhost_store:unset")
    say("rank%d:%s" % (comm.rank, "ok" if not failures else "FAILED " + "; ".join(failures)))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
