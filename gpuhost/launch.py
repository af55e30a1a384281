"""Start one process per GPU for an NCCL program:

    python -m gpuhost.launch -n 2 script.py [args...]

Each process runs ``script.py`` with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE and
GPUHOST_STORE (a folder the launcher owns, where rank 0 leaves the NCCL unique id) in its
environment; ``gpuhost.nccl.Communicator.from_env()`` builds the communicator from them.
-n defaults to the number of GPUs.  One node only: across nodes, use mpirun and
``Communicator.from_mpi()``.  When a process fails, the others are stopped (SIGTERM, then
SIGKILL after --grace seconds) and the launcher exits with the failed one's status.
"""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
import types


def _parse(argv):
    ap = argparse.ArgumentParser(prog="python -m gpuhost.launch", description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", "--nproc", type=int, default=None,
                    help="processes to start (default: one per GPU)")
    ap.add_argument("--grace", type=float, default=5.0,
                    help="seconds between SIGTERM and SIGKILL when stopping the others")
    ap.add_argument("script", help="the Python script each process runs")
    ap.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    return ap.parse_args(argv)


def _stop(procs, grace):
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for p in procs:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def run(script, args=(), nproc=None, grace=5.0):
    """Run `script` in `nproc` processes; 0 when all succeeded, else the first failure's
    exit status (128 + the signal number for a process killed by a signal)."""
    if nproc is None:
        from . import _core

        nproc = _core.device_count()
    if nproc < 1:
        raise ValueError("nproc must be at least 1, not %d" % nproc)
    with tempfile.TemporaryDirectory(prefix="gpuhost-launch-") as store:
        procs = []
        for rank in range(nproc):
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(nproc), LOCAL_RANK=str(rank),
                       LOCAL_WORLD_SIZE=str(nproc), GPUHOST_STORE=store)
            procs.append(subprocess.Popen([sys.executable, script] + list(args), env=env))
        try:
            while True:
                codes = [p.poll() for p in procs]
                failed = [c for c in codes if c not in (None, 0)]
                if failed:
                    _stop(procs, grace)
                    return failed[0] if failed[0] > 0 else 128 - failed[0]
                if all(c == 0 for c in codes):
                    return 0
                time.sleep(0.05)
        except KeyboardInterrupt:
            _stop(procs, grace)
            return 130


def main(argv=None):
    """python -m gpuhost.launch [-n N] [--grace S] script.py args...: run the script in N
    processes and return run()'s status."""
    opts = _parse(sys.argv[1:] if argv is None else argv)
    return run(opts.script, opts.args, opts.nproc, opts.grace)


class _LaunchModule(types.ModuleType):
    """``gpuhost.launch`` names both this module and gpuhost's kernel launch function
    (``gpuhost.launch(kernel, grid, block, *args)``); importing the module sets it as the
    package's attribute in the function's place, so the module launches kernels when
    called."""

    def __call__(self, kernel, grid, block, *args, **kwargs):
        from .kernels import launch

        return launch(kernel, grid, block, *args, **kwargs)


_LaunchModule.__call__.__doc__ = "Launch `kernel` (gpuhost.kernels.launch; see its docs)."
sys.modules[__name__].__class__ = _LaunchModule

if __name__ == "__main__":
    sys.exit(main())
