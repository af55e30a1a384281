"""Start one process per GPU for an NCCL program, on one node or several:

    python -m gpuhost.launch -n 2 script.py [args...]
    python -m gpuhost.launch --nnodes 2 --node-rank 0 --nproc-per-node 4 \\
        --master-addr node0 --master-port 29500 script.py [args...]   # on node 0
    (the same with --node-rank 1 on node 1)

Each process runs ``script.py`` with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
GROUP_RANK (the node rank), MASTER_ADDR and MASTER_PORT in its environment, as torchrun
spells them; ``gpuhost.nccl.Communicator.from_env()`` builds the communicator from them.
The launcher of node 0 serves the rendezvous at the master address (the ranks meet there and
get rank 0's NCCL unique id; on one node, a free port of 127.0.0.1 by default); the other
nodes' launchers join it before starting their ranks.  When a process fails, the launcher
stops its others (SIGTERM, then SIGKILL after --grace seconds) and tells the other nodes'
launchers to stop theirs; every launcher then exits non-zero with the failure's status.
"""
import argparse
import os
import signal
import subprocess
import sys
import threading
import time
import types

from . import _jobenv, _rendezvous


def _parse(argv):
    ap = argparse.ArgumentParser(prog="python -m gpuhost.launch",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", "--nproc-per-node", "--nproc_per_node", "--nproc", dest="nproc",
                    type=int, default=None,
                    help="processes to start on this node (default: one per GPU)")
    ap.add_argument("--nnodes", type=int, default=1, help="nodes of the job (default 1)")
    ap.add_argument("--node-rank", "--node_rank", dest="node_rank", type=int, default=0,
                    help="this node's rank, 0 to nnodes-1 (default 0)")
    ap.add_argument("--master-addr", "--master_addr", dest="master_addr", default="127.0.0.1",
                    help="node 0's address, where the rendezvous is (default 127.0.0.1)")
    ap.add_argument("--master-port", "--master_port", dest="master_port", default=None,
                    help="its port (default: a free one on one node, 29500 on several)")
    ap.add_argument("--join-timeout", dest="join_timeout", type=float, default=300.0,
                    help="seconds the launchers wait for one another (default 300)")
    ap.add_argument("--grace", type=float, default=5.0,
                    help="seconds between SIGTERM and SIGKILL when stopping the others")
    ap.add_argument("script", help="the Python script each process runs")
    ap.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    return ap, ap.parse_args(argv)


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


def _status(code):
    """A process's exit code as the launcher's status: 128 + N for a death by signal N."""
    return code if code >= 0 else 128 - code


def _what(code):
    if code < 0:
        try:
            return "was killed by %s" % signal.Signals(-code).name
        except ValueError:
            return "was killed by signal %d" % -code
    return "exited with status %d" % code


def _say(text):
    sys.stderr.write("gpuhost.launch: %s\n" % text)
    sys.stderr.flush()


def _check(nproc, nnodes, node_rank, master_addr, master_port):
    if nproc < 1:
        raise ValueError("nproc must be at least 1, not %d" % nproc)
    if nnodes < 1:
        raise ValueError("nnodes must be at least 1, not %d" % nnodes)
    if not 0 <= node_rank < nnodes:
        raise ValueError("node_rank %d is not in 0 to %d (nnodes %d)" % (node_rank, nnodes - 1,
                                                                       nnodes))
    addr = _jobenv.check_host(master_addr, "master_addr")
    if master_port is None:
        port = 0 if nnodes == 1 else _jobenv.DEFAULT_PORT
    else:
        port = _jobenv.check_port(master_port, "master_port")
    return addr, port


def run(script, args=(), nproc=None, grace=5.0, nnodes=1, node_rank=0, master_addr="127.0.0.1",
        master_port=None, join_timeout=300.0):
    """Run a Python script in `nproc` processes on this node, one per GPU, as node
    `node_rank` of `nnodes`, and wait for them all.

    Process k runs ``python script args...`` with RANK=node_rank*nproc+k,
    WORLD_SIZE=nnodes*nproc, LOCAL_RANK=k, LOCAL_WORLD_SIZE=nproc, GROUP_RANK=node_rank,
    MASTER_ADDR and MASTER_PORT added to this process's environment; the processes share
    this one's standard streams.  Node 0's launcher serves the rendezvous at
    master_addr:master_port (the ranks' `Communicator.from_env()` meets there) and waits
    for the other nodes' launchers (`join_timeout` seconds at most) before starting its
    processes; theirs connect to it first.  When one process fails, anywhere, every
    launcher stops its processes: SIGTERM, then SIGKILL after `grace` seconds; Ctrl-C
    stops them all the same way.

    Parameters
    ----------
    script : str
        The path of the Python script each process runs.
    args : sequence of str, optional
        Its command-line arguments.
    nproc : int, optional
        How many processes on this node; by default the number of GPUs.
    grace : float, optional
        Seconds between SIGTERM and SIGKILL when stopping the others; default 5.
    nnodes : int, optional
        How many nodes (launchers) the job has; default 1.
    node_rank : int, optional
        This node's rank, 0 to nnodes - 1; default 0.
    master_addr : str, optional
        Node 0's address as the others reach it; default 127.0.0.1.
    master_port : int, optional
        The rendezvous's port; by default a free one (one node) or 29500 (several).
    join_timeout : float, optional
        Seconds the launchers wait for one another; default 300.

    Returns
    -------
    int
        0 when all succeeded (on every node), else the first failure's exit status (128 +
        the signal number for a process killed by a signal; 130 after Ctrl-C).

    Raises
    ------
    ValueError
        A count below 1, a node rank outside the nodes, a malformed address or port.
    OSError
        Node 0 cannot listen at master_addr:master_port (the port is in use).
    TimeoutError
        The other nodes' launchers did not join within `join_timeout`.
    RuntimeError
        Node 0's launcher refused this one (another node already has its rank, or
        another --nnodes).

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
    addr, port = _check(nproc, nnodes, node_rank, master_addr, master_port)
    server = agent = None
    try:
        if node_rank == 0:
            server = _rendezvous.Server(addr, port, "the node-0 launcher")
            port = server.port
            missing = server.wait_nodes(nnodes, join_timeout) if nnodes > 1 else []
            if missing:
                raise TimeoutError("the launchers of node%s %s did not join within %g s "
                                   "(the rendezvous at %s:%d)" % (
                                       "s" if len(missing) > 1 else "",
                                       ", ".join(str(n) for n in missing), join_timeout,
                                       addr, port))
        else:
            agent = _rendezvous.Agent(addr, port, node_rank, nnodes, join_timeout)
        return _supervise(script, list(args), nproc, grace, nnodes, node_rank, addr, port,
                          server, agent)
    finally:
        if agent is not None:
            agent.close()
        if server is not None:
            server.close()


def _start(script, args, nproc, nnodes, node_rank, addr, port):
    procs = []
    for local in range(nproc):
        env = dict(os.environ, RANK=str(node_rank * nproc + local),
                   WORLD_SIZE=str(nnodes * nproc), LOCAL_RANK=str(local),
                   LOCAL_WORLD_SIZE=str(nproc), GROUP_RANK=str(node_rank),
                   GROUP_WORLD_SIZE=str(nnodes), MASTER_ADDR=addr, MASTER_PORT=str(port),
                   GPUHOST_LAUNCH="1")
        procs.append(subprocess.Popen([sys.executable, script] + args, env=env))
    return procs


class _Exits:
    """The order in which this node's processes end: a thread waits for each and notes it as
    it ends, so that the failure reported is the first one, not the lowest rank's (when a
    rank is killed, the others on its node fail a moment later, their collectives broken;
    torchrun too reports the first)."""

    def __init__(self, procs):
        self._lock = threading.Lock()
        self._ended = []  # (local rank, exit code), in the order they ended
        for k, p in enumerate(procs):
            threading.Thread(target=self._wait, args=(k, p), daemon=True,
                             name="gpuhost.launch rank %d" % k).start()

    def _wait(self, k, p):
        code = p.wait()
        with self._lock:
            self._ended.append((k, code))

    def first_failure(self):
        """(local rank, exit code) of the first process that failed, or None."""
        with self._lock:
            return next(((k, c) for k, c in self._ended if c != 0), None)

    def all_done(self, n):
        with self._lock:
            return len(self._ended) == n and all(c == 0 for _, c in self._ended)


def _supervise(script, args, nproc, grace, nnodes, node_rank, addr, port, server, agent):
    """Start this node's processes and watch them (and the other nodes) until the end."""
    procs = _start(script, args, nproc, nnodes, node_rank, addr, port)
    exits = _Exits(procs)
    events = server.events if server is not None else agent.events if agent is not None else None
    pending = set(range(1, nnodes)) if server is not None else set()  # nodes not yet done
    local_done = False
    try:
        while True:
            failed = exits.first_failure()
            if failed is not None:
                k, code = failed
                why = "rank %d (node %d, local rank %d, pid %d) %s" % (
                    node_rank * nproc + k, node_rank, k, procs[k].pid, _what(code))
                _say("%s; stopping the others" % why)
                if server is not None:
                    server.stop_nodes(why, _status(code))
                elif agent is not None:
                    agent.report("failed", _status(code), why)
                _stop(procs, grace)
                return _status(code)
            if not local_done and exits.all_done(len(procs)):
                local_done = True
                if agent is not None:
                    agent.report("done")
                    return 0
            if local_done and not pending:
                return 0
            while events is not None and not events.empty():
                kind, *rest = events.get_nowait()
                if server is not None:
                    node, code, why = rest
                    if kind == "done":
                        pending.discard(node)
                        continue
                    if kind == "lost" and node not in pending:
                        continue
                else:
                    node, (code, why) = 0, rest
                _say("node %d: %s; stopping this node's ranks" % (node, why))
                if server is not None:
                    server.stop_nodes("node %d: %s" % (node, why), code)
                _stop(procs, grace)
                return code or 1
            time.sleep(0.05)
    except KeyboardInterrupt:
        if server is not None:
            server.stop_nodes("node %d was interrupted" % node_rank, 130)
        elif agent is not None:
            agent.report("failed", 130, "node %d was interrupted" % node_rank)
        _stop(procs, grace)
        return 130


def main(argv=None):
    """The entry point of ``python -m gpuhost.launch``, which runs a script in N processes.

    ``python -m gpuhost.launch [-n N] [--nnodes M --node-rank K --master-addr A
    --master-port P] [--grace S] [--join-timeout T] script.py [args ...]`` parses its
    arguments here (torchrun's spellings; ``--nproc-per-node`` is ``-n``) and runs the
    script with `run`; the module exits with the status this returns.  The arguments after
    the script, options included, are the script's.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after ``python -m gpuhost.launch``; by default ``sys.argv[1:]``.

    Returns
    -------
    int
        `run`'s status: 0 when every process succeeded; 1 when the launcher itself could
        not go on (a port in use, a node that did not join), with the reason on stderr.

    Raises
    ------
    SystemExit
        Bad arguments (argparse prints the usage and the reason), or ``--help``.

    Examples
    --------
    In a shell, two processes, each running ``train.py --epochs 3``::

        $ python -m gpuhost.launch -n 2 train.py --epochs 3

    Two nodes of four GPUs (node 0 is reached as node0)::

        node0$ python -m gpuhost.launch --nnodes 2 --node-rank 0 -n 4 \\
                   --master-addr node0 --master-port 29500 train.py
        node1$ python -m gpuhost.launch --nnodes 2 --node-rank 1 -n 4 \\
                   --master-addr node0 --master-port 29500 train.py

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
    ap, opts = _parse(sys.argv[1:] if argv is None else argv)
    try:
        return run(opts.script, opts.args, opts.nproc, opts.grace, opts.nnodes, opts.node_rank,
                   opts.master_addr, opts.master_port, opts.join_timeout)
    except ValueError as e:
        ap.error(str(e))
    except (OSError, RuntimeError) as e:  # TimeoutError is an OSError
        _say(str(e))
        return 1


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
