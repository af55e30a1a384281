"""NCCL jobs past one machine: the environment each launcher gives its ranks (gpuhost.launch,
torchrun, Slurm, Open MPI, MPICH) and every malformed value in it, the ranks' rendezvous
(the ranks that did not come named, NCCL never called with one missing), the launcher over
two simulated nodes on this machine (different NCCL_HOSTID, no shared folder), and the
faults: a rank killed mid-loop, a rank never started, a rank raising in Python.

On the fake driver every rank is a process of this machine, over tests/fakecuda/fakenccl
(its ranks in several processes reach one another through the root that ncclGetUniqueId
starts; it tells the survivors when one dies).  On a GPU the same tests run on the real
NCCL, one process per GPU (the simulated nodes need four GPUs: two each).  Every process
this starts is waited for within a time limit, and killed if it is still there.
"""
import errno
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

import gpuhost
from gpuhost import _jobenv, _rendezvous
from conftest import DRIVER

nccl = pytest.importorskip("gpuhost.nccl")

if not (gpuhost.is_available() and nccl.is_available()):
    pytest.skip("no CUDA driver or no libnccl", allow_module_level=True)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, "tests", "scripts")
FAULTS = os.path.join(SCRIPTS, "nccl_faults.py")
RANKS = os.path.join(SCRIPTS, "nccl_ranks.py")
JOB_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR",
            "MASTER_PORT", "GPUHOST_LAUNCH", "GPUHOST_STORE", "TORCHELASTIC_RUN_ID",
            "TORCHELASTIC_USE_AGENT_STORE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
            "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "PMI_RANK", "PMI_SIZE",
            "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "SLURM_PROCID", "SLURM_NTASKS",
            "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE", "SLURM_STEP_NODELIST",
            "SLURM_JOB_NODELIST", "SLURM_JOB_ID", "SLURM_STEP_ID", "NCCL_HOSTID")


# ---- helpers ----

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env(**extra):
    """This process's environment without any job's variables, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in JOB_VARS}
    env.update(PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               NCCL_NVLS_ENABLE="0", PYTHONUNBUFFERED="1")
    env.update({k: str(v) for k, v in extra.items()})
    return env


class Procs:
    """Processes of one test, their output read on threads; every one is killed at the end
    if it is still there."""

    def __init__(self):
        self.procs = []

    def start(self, argv, env):
        p = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
        p.out, p.err = [], []
        for stream, sink in ((p.stdout, p.out), (p.stderr, p.err)):
            threading.Thread(target=lambda s=stream, k=sink: k.extend(iter(s.readline, "")),
                             daemon=True).start()
        self.procs.append(p)
        return p

    def launcher(self, args, **env):
        return self.start([sys.executable, "-m", "gpuhost.launch"] + args, clean_env(**env))

    def rank(self, script_args, **env):
        return self.start([sys.executable] + script_args, clean_env(**env))

    def wait_for(self, pattern, count, timeout):
        """Until `count` lines of all outputs match `pattern`; those lines."""
        deadline = time.monotonic() + timeout
        while True:
            lines = [line for p in self.procs for line in p.out if re.search(pattern, line)]
            if len(lines) >= count:
                return lines
            if time.monotonic() > deadline or all(p.poll() is not None for p in self.procs):
                raise AssertionError("only %d of %d lines matching %r in %g s:\n%s" % (
                    len(lines), count, pattern, timeout, self.output()))
            time.sleep(0.05)

    def finish(self, timeout):
        """Wait for every process (`timeout` seconds for them all); their exit codes."""
        deadline = time.monotonic() + timeout
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise AssertionError("a process was still running after %g s:\n%s"
                                     % (timeout, self.output())) from None
        time.sleep(0.1)  # the reader threads drain the pipes
        return [p.returncode for p in self.procs]

    def output(self):
        return "\n".join("--- %s\n%s%s" % (" ".join(p.args[1:4]), "".join(p.out), "".join(p.err))
                         for p in self.procs)

    def kill_all(self):
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


@pytest.fixture
def procs():
    ps = Procs()
    yield ps
    ps.kill_all()


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie child of a launcher that was killed is gone for good
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def devices(n):
    """The environment giving a process n devices: on the fake driver, as many fake ones."""
    return {"FAKECUDA_DEVICES": str(max(n, 2))} if DRIVER == "fake" else {}


def ranks_env(rank, world, port, **extra):
    """torchrun's variables for one rank of a one-node job (no TORCHELASTIC_USE_AGENT_STORE:
    rank 0 hosts the rendezvous)."""
    return dict(RANK=rank, WORLD_SIZE=world, LOCAL_RANK=rank, LOCAL_WORLD_SIZE=world,
                MASTER_ADDR="127.0.0.1", MASTER_PORT=port, TORCHELASTIC_RUN_ID="test",
                **devices(world), **extra)


def need_processes(n):
    """One GPU per process on a real machine (the fake has as many devices as asked)."""
    if DRIVER == "real" and len(gpuhost.gpus) < n:
        pytest.skip("needs %d GPUs, %d found" % (n, len(gpuhost.gpus)))


# ---- the environment of each launcher ----

def test_torchruns_and_gpuhost_launchs_variables():
    env = {"RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4",
           "MASTER_ADDR": "node0.cluster", "MASTER_PORT": "29400", "TORCHELASTIC_RUN_ID": "x"}
    assert _jobenv.from_environ(env) == _jobenv.JobEnv(5, 8, 1, 4, "node0.cluster", 29400,
                                                       "torchrun", "rank0")
    assert _jobenv.from_environ(dict(env, TORCHELASTIC_USE_AGENT_STORE="True")).host == "torch"
    mine = dict(env, GPUHOST_LAUNCH="1")
    del mine["TORCHELASTIC_RUN_ID"]
    assert _jobenv.from_environ(mine)[-2:] == ("gpuhost.launch", "launcher")
    by_hand = {"RANK": "0", "WORLD_SIZE": "1"}  # one rank needs no master
    assert _jobenv.from_environ(by_hand) == _jobenv.JobEnv(0, 1, 0, None, "127.0.0.1", 29500,
                                                           "environment", "rank0")


def test_slurms_variables_name_the_first_node_and_a_port_of_the_job():
    env = {"SLURM_PROCID": "6", "SLURM_NTASKS": "8", "SLURM_LOCALID": "2",
           "SLURM_NTASKS_PER_NODE": "4", "SLURM_STEP_NODELIST": "gpu[07-08],big1",
           "SLURM_JOB_ID": "123456", "SLURM_STEP_ID": "0"}
    job = _jobenv.from_environ(env)
    assert job[:5] == (6, 8, 2, 4, "gpu07") and job[-2:] == ("Slurm", "rank0")
    others = [_jobenv.from_environ(dict(env, SLURM_PROCID=str(r), SLURM_LOCALID=str(r % 4)))
              for r in range(8)]
    assert {o.master_port for o in others} == {job.master_port}  # the same on every rank
    assert 20000 <= job.master_port < 40000
    assert _jobenv.from_environ(dict(env, SLURM_JOB_ID="123457")).master_port != job.master_port
    assert _jobenv.from_environ(dict(env, MASTER_ADDR="10.1.2.3", MASTER_PORT="1234"))[4:6] == \
        ("10.1.2.3", 1234)


@pytest.mark.parametrize("nodelist, first", [("node01", "node01"), ("node[1-3]", "node1"),
                                             ("a[009-011,20],b", "a009"), ("x-y[2],z[1-2]", "x-y2"),
                                             ("rack[1-2]-gpu5", "rack1-gpu5")])
def test_the_first_host_of_a_slurm_host_list(nodelist, first):
    assert _jobenv.first_slurm_host(nodelist) == first


def test_open_mpis_and_mpichs_variables():
    ompi = {"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4",
            "OMPI_COMM_WORLD_LOCAL_RANK": "3", "OMPI_COMM_WORLD_LOCAL_SIZE": "4",
            "PMIX_NAMESPACE": "prterun-host-1234@1"}
    job = _jobenv.from_environ(ompi)
    assert job[:5] == (3, 4, 3, 4, "127.0.0.1") and job[-2:] == ("Open MPI", "rank0")
    assert 20000 <= job.master_port < 40000
    mpich = {"PMI_RANK": "1", "PMI_SIZE": "2", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2"}
    assert _jobenv.from_environ(mpich) == _jobenv.JobEnv(1, 2, 1, 2, "127.0.0.1", 29500, "MPICH",
                                                         "rank0")
    # several nodes: MPI does not say where rank 0 runs
    with pytest.raises(ValueError, match="MASTER_ADDR is not set: with ranks on several nodes, "
                                         "Open MPI does not say where rank 0 runs"):
        _jobenv.from_environ(dict(ompi, OMPI_COMM_WORLD_LOCAL_SIZE="2",
                                  OMPI_COMM_WORLD_LOCAL_RANK="1"))
    assert _jobenv.from_environ(dict(ompi, OMPI_COMM_WORLD_LOCAL_SIZE="2",
                                     OMPI_COMM_WORLD_LOCAL_RANK="1",
                                     MASTER_ADDR="n0")).master_addr == "n0"


def test_the_first_launchers_variables_win():
    """mpirun inside a Slurm allocation sets both; torchrun's win over MPI's."""
    env = {"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2", "SLURM_PROCID": "0",
           "SLURM_NTASKS": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}
    assert _jobenv.from_environ(env).source == "Open MPI"
    env.update(RANK="0", WORLD_SIZE="1")
    assert _jobenv.from_environ(env).source == "environment"


@pytest.mark.parametrize("changes, message", [
    ({"MASTER_ADDR": "no such host!"},
     "MASTER_ADDR='no such host!' is not a host name or an IP address"),
    ({"MASTER_ADDR": "10.0.0.300"}, "MASTER_ADDR='10.0.0.300' is not a valid IPv4 address"),
    ({"MASTER_ADDR": "node0:29500"},
     "MASTER_ADDR='node0:29500' holds a port: give the host alone, and the port in MASTER_PORT"),
    ({"MASTER_ADDR": "-node"}, "MASTER_ADDR='-node' is not a host name or an IP address"),
    ({"MASTER_PORT": "29x"}, "MASTER_PORT='29x' is not a port number (1 to 65535)"),
    ({"MASTER_PORT": "0"}, "MASTER_PORT='0' is not a port number (1 to 65535)"),
    ({"MASTER_PORT": "65536"}, "MASTER_PORT='65536' is not a port number (1 to 65535)"),
    ({"RANK": "4"}, "RANK=4 and WORLD_SIZE=4 disagree: ranks go from 0 to 3"),
    ({"RANK": "-1"}, "RANK=-1: it must be at least 0"),
    ({"RANK": "one"}, "RANK='one' is not a whole number"),
    ({"WORLD_SIZE": "0"}, "WORLD_SIZE=0: it must be at least 1"),
    ({"LOCAL_RANK": "2"}, "LOCAL_RANK=2 and LOCAL_WORLD_SIZE=2 disagree: local ranks go from "
                          "0 to 1"),
    ({"LOCAL_WORLD_SIZE": "8"}, "LOCAL_WORLD_SIZE=8 is more than WORLD_SIZE=4"),
])
def test_malformed_variables_are_clear_errors_naming_them(changes, message):
    env = {"RANK": "1", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2",
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}
    with pytest.raises(ValueError, match=re.escape(message)):
        _jobenv.from_environ(dict(env, **changes))


def test_addresses_that_are_good():
    assert [_jobenv.check_host(h) for h in ("127.0.0.1", "[::1]", "fe80::1", "node-7.cluster",
                                             " n0 ", "localhost")] == \
        ["127.0.0.1", "::1", "fe80::1", "node-7.cluster", "n0", "localhost"]
    assert _jobenv.check_port(" 80 ") == 80


def test_from_env_checks_everything_before_nccl_is_called(monkeypatch):
    """Each bad input is refused before the rendezvous, before NCCL (no unique id made, no
    communicator begun)."""
    made, began = [], []
    monkeypatch.setattr(nccl, "get_unique_id", lambda: made.append(1))
    monkeypatch.setattr(nccl.Communicator, "__new__", lambda *a, **k: began.append(1))
    for k in JOB_VARS:
        monkeypatch.delenv(k, raising=False)
    n = len(gpuhost.gpus)
    monkeypatch.setenv("RANK", str(n))
    monkeypatch.setenv("WORLD_SIZE", str(n + 1))
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(free_port()))
    with pytest.raises(ValueError, match=re.escape(
            "LOCAL_RANK=%d (from the environment), but this process sees %d GPU%s (devices 0 to %d"
            % (n, n, "" if n == 1 else "s", n - 1))):
        nccl.Communicator.from_env(timeout=5)
    monkeypatch.setenv("RANK", "0")
    for var, value, message in [
            ("MASTER_PORT", "http", "MASTER_PORT='http' is not a port number"),
            ("MASTER_ADDR", "node 0", "MASTER_ADDR='node 0' is not a host name or an IP address"),
            ("WORLD_SIZE", "0", "WORLD_SIZE=0: it must be at least 1")]:
        monkeypatch.setenv(var, value)
        with pytest.raises(ValueError, match=re.escape(message)):
            nccl.Communicator.from_env(timeout=5)
    assert made == [] and began == []


def test_one_gpu_per_process_is_device_0_whatever_the_local_rank():
    from conftest import run_python

    if DRIVER != "fake":
        pytest.skip("needs the fake driver's device count")
    proc = run_python("from gpuhost import nccl\n"
                      "c = nccl.Communicator.from_env(timeout=30)\n"
                      "print(c.device.id, c.rank, c.size)\n",
                      env=dict(clean_env(RANK=0, WORLD_SIZE=1, LOCAL_RANK=3),
                               FAKECUDA_DEVICES="1", CUDA_VISIBLE_DEVICES="3"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0", "0", "1"]


def test_a_port_in_use_is_refused_by_rank_0_and_by_the_launcher(monkeypatch, procs):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        job = _jobenv.JobEnv(0, 2, 0, 2, "127.0.0.1", port, "environment", "rank0")
        made = []
        with pytest.raises(OSError, match=re.escape(
                "rank 0 cannot listen on 127.0.0.1:%d for the rendezvous: the port is in use"
                % port)) as info:
            _rendezvous.exchange(job, 5, lambda: made.append(1) or b"x" * 128, 0)
        assert info.value.errno == errno.EADDRINUSE and made == []  # NCCL not called
        p = procs.launcher(["-n", "1", "--master-port", str(port), FAULTS, "create", "5"])
        assert procs.finish(60) == [1]
        assert ("the node-0 launcher cannot listen on 127.0.0.1:%d for the rendezvous: the port "
                "is in use" % port) in "".join(p.err)
    finally:
        taken.close()


@pytest.mark.parametrize("args, message", [
    (["--nnodes", "0"], "nnodes must be at least 1, not 0"),
    (["--nnodes", "2", "--node-rank", "2"], "node_rank 2 is not in 0 to 1 (nnodes 2)"),
    (["--master-addr", "bad host"], "master_addr='bad host' is not a host name or an IP address"),
    (["--master-port", "99999"], "master_port='99999' is not a port number (1 to 65535)"),
    (["-n", "0"], "nproc must be at least 1, not 0"),
])
def test_the_launcher_refuses_bad_arguments(procs, args, message):
    p = procs.launcher(args + [FAULTS, "create", "1"])
    assert procs.finish(60) == [2]
    assert message in "".join(p.err)


# ---- the rendezvous ----

def run_ranks(jobs, timeout, make_uid=lambda: os.urandom(128)):
    """_rendezvous.exchange for each job in a thread: [(uid or None, error or None)]."""
    out = [None] * len(jobs)

    def one(i, job):
        try:
            out[i] = (_rendezvous.exchange(job, timeout, make_uid, 0), None)
        except Exception as e:  # reported to the test
            out[i] = (None, e)

    threads = [threading.Thread(target=one, args=(i, j)) for i, j in enumerate(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 30)
    assert all(r is not None for r in out), "a rank hangs"
    return out


def job(rank, world, port, host="rank0"):
    return _jobenv.JobEnv(rank, world, rank, world, "127.0.0.1", port, "environment", host)


def test_every_rank_gets_rank_0s_unique_id():
    port = free_port()
    results = run_ranks([job(r, 4, port) for r in (3, 1, 0, 2)], 30)
    assert [e for _, e in results] == [None] * 4
    assert len({uid for uid, _ in results}) == 1 and len(results[0][0]) == 128


def test_missing_ranks_are_named_by_every_rank_that_came():
    port = free_port()
    t0 = time.monotonic()
    results = run_ranks([job(0, 4, port), job(2, 4, port)], 0.5)
    assert 0.5 <= time.monotonic() - t0 < 10
    for (uid, e), rank in zip(results, (0, 2)):
        assert isinstance(e, TimeoutError), e
        assert str(e) == ("rank %d of 4: ranks 1, 3 did not arrive at the rendezvous at "
                          "127.0.0.1:%d within 0.5 s (ranks 0, 2 did); NCCL was not called"
                          % (rank, port))


def test_a_rank_0_that_never_comes_is_named():
    port = free_port()
    [(uid, e)] = run_ranks([job(1, 2, port)], 0.3)
    assert isinstance(e, TimeoutError)
    assert str(e).startswith("rank 1 of 2: nothing answered at the rendezvous at 127.0.0.1:%d "
                             "within 0.3 s (rank 0 hosts it" % port)


def test_ranks_that_disagree_are_refused_everywhere():
    port = free_port()
    results = run_ranks([job(0, 3, port), _jobenv.JobEnv(1, 2, 1, 2, "127.0.0.1", port, "x",
                                                         "rank0")], 10)
    for _, e in results:
        assert isinstance(e, ValueError), e
        assert "the ranks disagree on the world size: rank 0 has WORLD_SIZE 3, rank 1 has 2" \
            in str(e)
    port = free_port()
    results = run_ranks([job(0, 3, port), job(1, 3, port), job(1, 3, port)], 10)
    for _, e in results:
        assert isinstance(e, ValueError), e
        assert re.search(r"two processes say they are rank 1 \(pid \d+ on \S+, pid \d+ on \S+\)",
                         str(e))


class FakeStore:
    """The part of a torch.distributed Store the rendezvous uses, over a dict."""

    def __init__(self):
        self.data, self.lock = {}, threading.Lock()

    def set(self, key, value):
        with self.lock:
            self.data[key] = value.encode() if isinstance(value, str) else value

    def get(self, key):
        with self.lock:
            return self.data[key]

    def check(self, keys):
        with self.lock:
            return all(k in self.data for k in keys)


def store_ranks(ranks, world, timeout, store):
    out = [None] * len(ranks)

    def one(i, r):
        try:
            out[i] = (_rendezvous.exchange(job(r, world, 1, "torch"), timeout,
                                           lambda: os.urandom(128), 0, store=store), None)
        except Exception as e:  # reported to the test
            out[i] = (None, e)

    threads = [threading.Thread(target=one, args=(i, r)) for i, r in enumerate(ranks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 30)
    return out


def test_under_torchruns_agent_store_the_store_carries_the_rendezvous():
    results = store_ranks([2, 0, 1], 3, 30, FakeStore())
    assert [e for _, e in results] == [None] * 3 and len({u for u, _ in results}) == 1
    results = store_ranks([0, 2], 3, 0.3, FakeStore())
    for (_, e), r in zip(results, (0, 2)):
        assert isinstance(e, TimeoutError)
        assert str(e) == ("rank %d of 3: rank 1 did not arrive at the rendezvous (torchrun's "
                          "store at 127.0.0.1:1) within 0.3 s; NCCL was not called" % r)


# ---- processes: two simulated nodes, and the faults ----

def two_nodes(procs, script_args, nproc=2, **extra):
    """Two launchers (--nnodes 2) on this machine, nproc ranks each, NCCL_HOSTID node0 and
    node1 (NCCL sees two hosts, and crosses between them on its socket transport over
    loopback), no GPUHOST_STORE anywhere."""
    port = free_port()
    for node in (0, 1):
        gpus = {}
        if DRIVER == "real":  # each simulated node its own GPUs, as a real node has
            gpus = {"CUDA_VISIBLE_DEVICES": ",".join(str(node * nproc + k)
                                                     for k in range(nproc))}
        procs.launcher(["--nnodes", "2", "--node-rank", str(node), "-n", str(nproc),
                        "--master-addr", "127.0.0.1", "--master-port", str(port), "--grace", "2",
                        "--join-timeout", "60"] + script_args,
                       NCCL_HOSTID="node%d" % node, NCCL_SOCKET_IFNAME="lo", **gpus, **extra)
    return port


def test_two_simulated_nodes_run_every_collective_exactly(procs):
    need_processes(4)
    two_nodes(procs, [RANKS])
    assert procs.finish(300) == [0, 0], procs.output()
    out = procs.output()
    assert sorted(re.findall(r"rank\d+:\S+", out)) == ["rank%d:ok" % r for r in range(4)], out
    assert out.count("gpuhost_store:unset") == 4


def test_a_rank_killed_mid_loop_stops_both_launchers_and_leaves_no_process(procs):
    need_processes(4)
    two_nodes(procs, [FAULTS, "loop", "10"])
    ready = procs.wait_for(r"^rank \d ready pid \d+", 4, 120)
    pids = {int(m[0]): int(m[1]) for m in (re.findall(r"rank (\d) ready pid (\d+)", line)[0]
                                           for line in ready)}
    procs.wait_for(r"^rank \d first ok", 4, 60)
    t0 = time.monotonic()
    os.kill(pids[1], signal.SIGKILL)
    codes = procs.finish(40)
    assert time.monotonic() - t0 < 40
    assert codes[0] == 128 + signal.SIGKILL and codes[1] != 0, procs.output()
    err0, err1 = ("".join(p.err) for p in procs.procs)
    assert "rank 1 (node 0, local rank 1, pid %d) was killed by SIGKILL; stopping the others" \
        % pids[1] in err0
    # Node 1 names the first failure it sees: node 0's notice, or one of its own ranks (2 or
    # 3), whose collectives fail as soon as rank 1 is gone (any of these may come first).
    heard = "node 0: rank 1 (node 0, local rank 1, pid %d) was killed by SIGKILL; stopping " \
            "this node's ranks" % pids[1]
    own = any(re.search(r"rank %d \(node 1, local rank %d, pid %d\) exited with status \d+; "
                        r"stopping the others" % (r, r - 2, pids[r]), err1) for r in (2, 3))
    assert heard in err1 or own, err1
    time.sleep(0.5)
    assert [r for r, pid in pids.items() if alive(pid)] == []


@pytest.mark.parametrize("killed", [1, 0])
def test_every_other_rank_raises_within_its_wait_timeout_when_one_is_killed(procs, killed):
    """No launcher to stop them: each survivor's wait() must raise, never hang (rank 0 also
    hosts the fake NCCL's root: its death is seen as well)."""
    need_processes(3)
    port, wait_timeout = free_port(), 5
    for r in range(3):
        procs.rank([FAULTS, "loop", str(wait_timeout)], **ranks_env(r, 3, port))
    procs.wait_for(r"^rank \d first ok", 3, 120)
    pid = procs.procs[killed].pid
    os.kill(pid, signal.SIGKILL)
    codes = procs.finish(wait_timeout + 30)
    out = procs.output()
    survivors = [r for r in range(3) if r != killed]
    assert [codes[r] for r in survivors] == [3, 3], out
    for r in survivors:
        m = re.search(r"rank %d raised (NcclError|TimeoutError) after ([\d.]+) s: (.*)" % r, out)
        assert m, out
        assert float(m.group(2)) < wait_timeout + 5
        assert "the Communicator was aborted" in m.group(3) or "REMOTE_ERROR" in m.group(3)


def test_a_rank_that_never_starts_times_out_the_others_naming_it(procs):
    """Ranks 0 and 2 of 3 come (within the timeout of each other: the rendezvous's clock
    starts at the first); rank 1 never does."""
    need_processes(3)
    port = free_port()
    for r in (0, 2):
        procs.rank([FAULTS, "create", "8"], **ranks_env(r, 3, port))
    assert procs.finish(90) == [3, 3], procs.output()
    out = procs.output()
    for r in (0, 2):
        m = re.search(r"rank %d raised TimeoutError after ([\d.]+) s: (.*)" % r, out)
        assert m, out
        assert float(m.group(1)) < 30
        assert m.group(2) == ("rank %d of 3: rank 1 did not arrive at the rendezvous at "
                              "127.0.0.1:%d within 8 s (ranks 0, 2 did); NCCL was not called"
                              % (r, port))


def test_a_rank_0_that_never_starts_times_out_the_others_naming_it(procs):
    need_processes(2)
    port = free_port()
    procs.rank([FAULTS, "create", "2"], **ranks_env(1, 2, port))
    assert procs.finish(60) == [3], procs.output()
    assert re.search(r"rank 1 raised TimeoutError after [\d.]+ s: rank 1 of 2: nothing answered "
                     r"at the rendezvous at 127\.0\.0\.1:%d within 2 s \(rank 0 hosts it" % port,
                     procs.output())


def test_a_node_whose_launcher_never_starts_fails_node_0s_launcher(procs):
    port = free_port()
    p = procs.launcher(["--nnodes", "2", "--node-rank", "0", "-n", "1", "--master-port",
                        str(port), "--join-timeout", "1", FAULTS, "create", "5"])
    assert procs.finish(60) == [1]
    assert "the launchers of node 1 did not join within 1 s (the rendezvous at 127.0.0.1:%d)" \
        % port in "".join(p.err)
    assert "ready" not in procs.output() and "created" not in procs.output()


def test_a_node_whose_node_0_never_starts_fails_its_launcher(procs):
    port = free_port()
    p = procs.launcher(["--nnodes", "2", "--node-rank", "1", "-n", "1", "--master-port",
                        str(port), "--join-timeout", "1", FAULTS, "create", "5"])
    assert procs.finish(60) == [1]
    assert "node 0's launcher (the rendezvous at 127.0.0.1:%d) did not answer within 1 s" \
        % port in "".join(p.err)


def test_a_rank_raising_in_python_stops_every_node(procs):
    need_processes(4)
    two_nodes(procs, [FAULTS, "raise", "2"])
    codes = procs.finish(90)
    out = procs.output()
    assert codes == [1, 1], out
    assert "RuntimeError: rank 2 fails on purpose" in out
    assert re.search(r"rank 2 \(node 1, local rank 0, pid \d+\) exited with status 1; stopping "
                     r"the others", out)
    assert re.search(r"node 1: rank 2 \(node 1, local rank 0, pid \d+\) exited with status 1; "
                     r"stopping this node's ranks", out)
    pids = [int(p) for p in re.findall(r"ready pid (\d+)", out)]
    assert len(pids) == 4
    time.sleep(0.5)
    assert [pid for pid in pids if alive(pid)] == []


@pytest.mark.parametrize("style", ["torchrun", "Slurm", "Open MPI", "MPICH"])
def test_from_env_under_each_launchers_variables(procs, style):
    """Two ranks started as each launcher would (its variables only), no gpuhost launcher:
    rank 0 hosts the rendezvous."""
    need_processes(2)
    port = free_port()
    for r in range(2):
        env = {"torchrun": ranks_env(r, 2, port),
               "Slurm": dict(SLURM_PROCID=r, SLURM_NTASKS=2, SLURM_LOCALID=r,
                             SLURM_STEP_NODELIST="localhost", SLURM_JOB_ID=1, MASTER_PORT=port),
               "Open MPI": dict(OMPI_COMM_WORLD_RANK=r, OMPI_COMM_WORLD_SIZE=2,
                                OMPI_COMM_WORLD_LOCAL_RANK=r, OMPI_COMM_WORLD_LOCAL_SIZE=2,
                                MASTER_PORT=port),
               "MPICH": dict(PMI_RANK=r, PMI_SIZE=2, MPI_LOCALRANKID=r, MPI_LOCALNRANKS=2,
                             MASTER_PORT=port)}[style]
        procs.rank([FAULTS, "create", "60"], **env)
    assert procs.finish(120) == [0, 0], procs.output()
    assert sorted(re.findall(r"rank \d created", procs.output())) == ["rank 0 created",
                                                                     "rank 1 created"]


@pytest.mark.gpu
def test_torchrun_starts_every_collective_with_its_own_store(procs):
    """torchrun (its agent holds MASTER_PORT: the rendezvous goes through torch's store)."""
    pytest.importorskip("torch.distributed.run")
    n = len(gpuhost.gpus)
    procs.start([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(n),
                 "--master-port", str(free_port()), RANKS], clean_env())
    assert procs.finish(600) == [0], procs.output()
    assert sorted(re.findall(r"rank\d+:\S+", procs.output())) == \
        sorted("rank%d:ok" % r for r in range(n)), procs.output()
