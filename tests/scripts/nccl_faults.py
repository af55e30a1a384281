"""One rank of tests/test_nccl_multinode.py's fault runs: it joins through
Communicator.from_env(), then does what its mode says, and reports on stdout one line at a
time (one write each: the ranks share their launcher's pipe).

    nccl_faults.py loop SECONDS     all_reduce in a loop, each waited for with
                                    comm.wait(stream, timeout=SECONDS), until stopped or
                                    until it raises ("rank R raised TYPE after T s: ...")
    nccl_faults.py raise RANK       rank RANK raises RuntimeError in Python once every rank
                                    did one all_reduce; the others loop as above (60 s)
    nccl_faults.py create SECONDS   from_env(timeout=SECONDS) only: "rank R created" or
                                    "rank R raised TYPE after T s: ..."

Every rank first says "rank R ready pid P" (after from_env, in the loop modes), and exits
3 after raising.
"""
import os
import sys
import time

import numpy as np

import gpuhost
from gpuhost import nccl


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def rank_of_env():
    return int(os.environ.get("RANK", os.environ.get("SLURM_PROCID", "-1")))


def raised(rank, e, since):
    say("rank %d raised %s after %.2f s: %s" % (rank, type(e).__name__, time.monotonic() - since,
                                                  str(e).replace("\n", " ")))
    return 3


def loop(comm, wait_timeout, fail_rank=None):
    with gpuhost.gpus[comm.device.id]:
        s = gpuhost.stream()
        x = gpuhost.to_device(np.full(64, comm.rank + 1, np.float32), stream=s)
        want = np.full(64, comm.size * (comm.size + 1) // 2, np.float32)
        say("rank %d ready pid %d" % (comm.rank, os.getpid()))
        n = 0
        while True:
            since = time.monotonic()
            try:
                out = comm.all_reduce(x, stream=s)
                comm.wait(s, timeout=wait_timeout)
            except (nccl.NcclError, TimeoutError) as e:
                return raised(comm.rank, e, since)
            n += 1
            if n == 1:
                if not np.array_equal(out.copy_to_host(stream=s), want):
                    say("rank %d: wrong result" % comm.rank)
                    return 4
                say("rank %d first ok" % comm.rank)
                if comm.rank == fail_rank:
                    raise RuntimeError("rank %d fails on purpose" % comm.rank)
            time.sleep(0.01)


def main():
    mode, arg = sys.argv[1], float(sys.argv[2])
    since = time.monotonic()
    timeout = arg if mode == "create" else 60.0
    try:
        comm = nccl.Communicator.from_env(timeout=timeout)
    except (TimeoutError, ValueError, OSError, nccl.NcclError) as e:
        return raised(rank_of_env(), e, since)
    if mode == "create":
        say("rank %d created" % comm.rank)
        comm.destroy()
        return 0
    if mode == "loop":
        return loop(comm, arg)
    return loop(comm, 60.0, fail_rank=int(arg))


if __name__ == "__main__":
    sys.exit(main())
