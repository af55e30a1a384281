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
    """Run a Python script in `nproc` processes, one per GPU, and wait for them all.

    Process k runs ``python script args...`` with RANK=k, WORLD_SIZE=nproc,
    LOCAL_RANK=k, LOCAL_WORLD_SIZE=nproc and GPUHOST_STORE (a temporary folder, removed
    at the end) added to this process's environment; the processes share this one's
    standard streams. When one fails, the others get SIGTERM, then SIGKILL after `grace`
    seconds; Ctrl-C stops them all the same way.

    Parameters
    ----------
    script : str
        The path of the Python script each process runs.
    args : sequence of str, optional
        Its command-line arguments.
    nproc : int, optional
        How many processes; by default the number of GPUs.
    grace : float, optional
        Seconds between SIGTERM and SIGKILL when stopping the others; default 5.

    Returns
    -------
    int
        0 when all succeeded, else the first failure's exit status (128 + the signal
        number for a process killed by a signal; 130 after Ctrl-C).

    Raises
    ------
    ValueError
        `nproc` is less than 1.

    Examples
    --------
    >>> import os, shutil, tempfile
    >>> from gpuhost.launch import run
    >>> folder = tempfile.mkdtemp()
    >>> script = os.path.join(folder, "job.py")
    >>> with open(script, "w") as f:
    ...     _ = f.write("import os, sys\\n"
    ...                 "name = os.environ['RANK'] + '-of-' + os.environ['WORLD_SIZE']\\n"
    ...                 "open(os.path.join(sys.argv[1], name), 'w').close()\\n")
    >>> run(script, [folder], nproc=2)
    0
    >>> sorted(os.listdir(folder))
    ['0-of-2', '1-of-2', 'job.py']
    >>> with open(script, "w") as f:   # rank 1 fails: its status is the launcher's
    ...     _ = f.write("import os, sys; sys.exit(3 if os.environ['RANK'] == '1' else 0)\\n")
    >>> run(script, nproc=2)
    3
    >>> shutil.rmtree(folder)
    """
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
    """The entry point of ``python -m gpuhost.launch``, which runs a script in N processes.

    ``python -m gpuhost.launch [-n N] [--grace S] script.py [args ...]`` parses its
    arguments here and runs the script with `run`; the module exits with the status
    this returns. ``-n``/``--nproc`` is the number of processes (default one per GPU),
    ``--grace`` the seconds between SIGTERM and SIGKILL (default 5); the arguments after
    the script, options included, are the script's.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after ``python -m gpuhost.launch``; by default ``sys.argv[1:]``.

    Returns
    -------
    int
        `run`'s status: 0 when every process succeeded.

    Raises
    ------
    SystemExit
        Bad arguments (argparse prints the usage), or ``--help``.

    Examples
    --------
    In a shell, two processes, each running ``train.py --epochs 3``::

        $ python -m gpuhost.launch -n 2 train.py --epochs 3

    The same from Python:

    >>> import os, shutil, tempfile
    >>> from gpuhost.launch import main
    >>> folder = tempfile.mkdtemp()
    >>> script = os.path.join(folder, "train.py")
    >>> with open(script, "w") as f:
    ...     _ = f.write("import os, sys\\n"
    ...                 "assert sys.argv[1:] == ['--epochs', '3']\\n"
    ...                 "open(os.path.join(os.path.dirname(__file__), os.environ['RANK']), "
    ...                 "'w').close()\\n")
    >>> main(["-n", "2", script, "--epochs", "3"])
    0
    >>> sorted(os.listdir(folder))
    ['0', '1', 'train.py']
    >>> shutil.rmtree(folder)
    """
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
