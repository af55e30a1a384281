"""All-reduce with NCCL across GPUs: each rank adds its own random vector into everyone's.

Run it one process per GPU:
    python -m gpuhost.launch -n 2 examples/allreduce.py
    mpirun -n 2 python examples/allreduce.py
or as one process driving every GPU (no launcher):
    python examples/allreduce.py
"""
import os
import sys

import numpy as np

import gpuhost
from gpuhost import nccl

N = 1 << 20


def data(rank):
    return np.random.default_rng(1000 + rank).random(N, dtype=np.float32)


def check(rank, size, got):
    expected = sum(data(r).astype(np.float64) for r in range(size))
    ok = np.allclose(got, expected, rtol=1e-5, atol=0)
    line = "rank %d of %d: all_reduce of %d floats %s\n" % (rank, size, N, "ok" if ok else "FAILED")
    sys.stdout.write(line)  # one write: ranks sharing a pipe do not interleave their lines
    sys.stdout.flush()
    return ok


def one_process_per_gpu():
    if "RANK" in os.environ:  # python -m gpuhost.launch
        comm = nccl.Communicator.from_env()
    else:  # mpirun
        from mpi4py import MPI

        local = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", MPI.COMM_WORLD.Get_rank()))
        gpuhost.select_device(local % len(gpuhost.gpus))
        comm = nccl.Communicator.from_mpi(MPI.COMM_WORLD)
    with comm, gpuhost.gpus[comm.device.id]:
        stream = gpuhost.stream()
        d = gpuhost.to_device(data(comm.rank), stream=stream)
        out = comm.all_reduce(d, stream=stream)
        comm.wait(stream, timeout=120)  # a dead peer aborts instead of hanging
        return check(comm.rank, comm.size, out.copy_to_host())


def one_process_all_gpus():
    comms = nccl.Communicator.init_all(len(gpuhost.gpus))
    arrays = []
    for comm in comms:
        with gpuhost.gpus[comm.device.id]:
            arrays.append(gpuhost.to_device(data(comm.rank)))
    with nccl.group():  # one thread, several ranks: their calls go in one group
        outs = [comm.all_reduce(a) for comm, a in zip(comms, arrays)]
    ok = True
    for comm, out in zip(comms, outs):
        with gpuhost.gpus[comm.device.id]:
            ok &= check(comm.rank, comm.size, out.copy_to_host())
        comm.destroy()
    return ok


def usable():
    """False, saying why in one line, where there is no GPU or no libnccl to run on."""
    if not gpuhost.is_available():
        reason = (gpuhost.cuda_error() or "gpuhost.is_available() is False").split(". ")[0]
        print("allreduce.py: no usable CUDA device (%s), so nothing was run" % reason)
        return False
    if not nccl.is_available():
        print("allreduce.py: libnccl was not found (pip install nvidia-nccl-cu13, or set "
              "GPUHOST_NCCL), so nothing was run")
        return False
    return True


if __name__ == "__main__":
    if not usable():
        raise SystemExit(0)
    mpi = "OMPI_COMM_WORLD_RANK" in os.environ or "PMI_RANK" in os.environ
    ok = one_process_per_gpu() if ("RANK" in os.environ or mpi) else one_process_all_gpus()
    raise SystemExit(0 if ok else 1)
