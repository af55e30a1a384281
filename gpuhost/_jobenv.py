"""Where a process of a distributed job learns its place: its rank, the world size, its rank
on its node, and the master's address, from whichever launcher started it.

Read in this order (the first whose variables are set wins):

* ``RANK`` / ``WORLD_SIZE`` / ``LOCAL_RANK`` / ``MASTER_ADDR`` / ``MASTER_PORT``: gpuhost's
  launcher, torchrun (``TORCHELASTIC_RUN_ID`` tells it), or set by hand;
* Open MPI's ``OMPI_COMM_WORLD_RANK`` / ``_SIZE`` / ``_LOCAL_RANK`` / ``_LOCAL_SIZE``;
* MPICH's (Hydra's) ``PMI_RANK`` / ``PMI_SIZE`` / ``MPI_LOCALRANKID`` / ``MPI_LOCALNRANKS``;
* Slurm's ``SLURM_PROCID`` / ``SLURM_NTASKS`` / ``SLURM_LOCALID`` (``srun``), the master being
  the first host of ``SLURM_STEP_NODELIST`` (or ``SLURM_JOB_NODELIST``).

MPI and Slurm do not name a master port; ``MASTER_PORT`` does when set, else one is derived
from the job's id, the same on every rank.  Every value is checked here, before anything is
done with it: a malformed address or port, a rank outside the world, are ValueErrors naming
the variable.
"""
import ipaddress
import os
import re
import zlib
from typing import NamedTuple, Optional

__all__ = ["JobEnv", "from_environ", "check_host", "check_port", "first_slurm_host"]

DEFAULT_PORT = 29500  # torchrun's


class JobEnv(NamedTuple):
    """A process's place in its job (see the module's docstring)."""

    rank: int
    world_size: int
    local_rank: int
    local_world_size: Optional[int]
    master_addr: str
    master_port: int
    source: str  # "gpuhost.launch", "torchrun", "Open MPI", "MPICH", "Slurm", "environment"
    host: str  # who serves the rendezvous at master_addr:master_port: "launcher", "torch", "rank0"


_LABEL = re.compile(r"^(?!-)[A-Za-z0-9_-]{1,63}(?<!-)$")


def check_host(value, name="MASTER_ADDR"):
    """`value` as a host to connect to: an IPv4 or IPv6 address (brackets allowed) or a host
    name (RFC 1123 labels); ValueError naming `name` otherwise."""
    text = value.strip() if isinstance(value, str) else value
    if not isinstance(text, str) or not text:
        raise ValueError("%s=%r is empty: it must name the host of rank 0 (a host name or an "
                         "IP address)" % (name, value))
    bare = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    try:
        return str(ipaddress.ip_address(bare))
    except ValueError:
        pass
    if re.fullmatch(r"[0-9.]+", bare):
        raise ValueError("%s=%r is not a valid IPv4 address" % (name, value))
    if ":" in bare and re.fullmatch(r"[^:]+:\d+", bare):
        raise ValueError("%s=%r holds a port: give the host alone, and the port in MASTER_PORT"
                         % (name, value))
    if len(bare) > 253 or not all(_LABEL.match(label) for label in bare.rstrip(".").split(".")):
        raise ValueError("%s=%r is not a host name or an IP address" % (name, value))
    return bare


def check_port(value, name="MASTER_PORT"):
    """`value` (an int or its text) as a TCP port, 1 to 65535; ValueError naming `name`."""
    try:
        port = int(str(value).strip(), 10)
    except ValueError:
        raise ValueError("%s=%r is not a port number (1 to 65535)" % (name, value)) from None
    if not 1 <= port <= 65535:
        raise ValueError("%s=%r is not a port number (1 to 65535)" % (name, value))
    return port


def _int(env, name, minimum=0):
    text = env[name]
    try:
        value = int(text.strip(), 10)
    except ValueError:
        raise ValueError("%s=%r is not a whole number" % (name, text)) from None
    if value < minimum:
        raise ValueError("%s=%d: it must be at least %d" % (name, value, minimum))
    return value


def first_slurm_host(nodelist):
    """The first host of a Slurm host list ("gpu[01-04,07],big1" -> "gpu01")."""
    depth, end = 0, len(nodelist)
    for i, ch in enumerate(nodelist):  # the first item: up to a comma outside brackets
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            end = i
            break
    item = nodelist[:end].strip()
    m = re.fullmatch(r"([^\[]*)\[([^\]]+)\](.*)", item)
    if m is None:
        return item
    first = m.group(2).split(",")[0].split("-")[0]
    return m.group(1) + first + m.group(3)


def _derived_port(job_id):
    """A port from a job's id: the same on every rank of the job, 20000 to 39999."""
    return 20000 + zlib.crc32(job_id.encode()) % 20000


def _master(env, single_node, source, job_id):
    """(MASTER_ADDR, MASTER_PORT) for a job started by `source`."""
    if env.get("MASTER_ADDR"):
        addr = check_host(env["MASTER_ADDR"])
    elif source == "Slurm" and (env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST")):
        nodes = env.get("SLURM_STEP_NODELIST") or env["SLURM_JOB_NODELIST"]
        addr = check_host(first_slurm_host(nodes), "the first host of SLURM_STEP_NODELIST")
    elif single_node:
        addr = "127.0.0.1"
    else:
        raise ValueError("MASTER_ADDR is not set: with ranks on several nodes, %s does not say "
                         "where rank 0 runs; set MASTER_ADDR to its host (and MASTER_PORT to a "
                         "free port there)" % source)
    if env.get("MASTER_PORT"):
        port = check_port(env["MASTER_PORT"])
    elif job_id:
        port = _derived_port(job_id)
    else:
        port = DEFAULT_PORT
    return addr, port


def _place(env, rank_var, size_var, local_var, local_size_var):
    rank, world = _int(env, rank_var), _int(env, size_var, 1)
    if rank >= world:
        raise ValueError("%s=%d and %s=%d disagree: ranks go from 0 to %d"
                         % (rank_var, rank, size_var, world, world - 1))
    local = _int(env, local_var) if env.get(local_var) else None
    local_size = _int(env, local_size_var, 1) if env.get(local_size_var) else None
    if local is not None and local_size is not None and local >= local_size:
        raise ValueError("%s=%d and %s=%d disagree: local ranks go from 0 to %d"
                         % (local_var, local, local_size_var, local_size, local_size - 1))
    if local_size is not None and local_size > world:
        raise ValueError("%s=%d is more than %s=%d" % (local_size_var, local_size, size_var,
                                                       world))
    return rank, world, local, local_size


def from_environ(environ=None):
    """The JobEnv of this process (`environ`: os.environ by default).

    Raises
    ------
    RuntimeError
        No launcher's variables are set.
    ValueError
        One is malformed, or they disagree (the message names them).
    """
    env = os.environ if environ is None else environ
    if env.get("RANK") is not None and env.get("WORLD_SIZE") is not None:
        rank, world, local, local_size = _place(env, "RANK", "WORLD_SIZE", "LOCAL_RANK",
                                                "LOCAL_WORLD_SIZE")
        source = ("gpuhost.launch" if env.get("GPUHOST_LAUNCH") == "1"
                  else "torchrun" if env.get("TORCHELASTIC_RUN_ID") else "environment")
        host = ("launcher" if source == "gpuhost.launch"
                else "torch" if env.get("TORCHELASTIC_USE_AGENT_STORE") == "True" else "rank0")
        job_id = None
    elif env.get("OMPI_COMM_WORLD_RANK") is not None and env.get("OMPI_COMM_WORLD_SIZE"):
        rank, world, local, local_size = _place(env, "OMPI_COMM_WORLD_RANK",
                                                "OMPI_COMM_WORLD_SIZE",
                                                "OMPI_COMM_WORLD_LOCAL_RANK",
                                                "OMPI_COMM_WORLD_LOCAL_SIZE")
        source, host = "Open MPI", "rank0"
        job_id = env.get("PMIX_NAMESPACE") or env.get("OMPI_MCA_ess_base_jobid")
    elif env.get("PMI_RANK") is not None and env.get("PMI_SIZE"):
        rank, world, local, local_size = _place(env, "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID",
                                                "MPI_LOCALNRANKS")
        source, host = "MPICH", "rank0"
        job_id = env.get("PMI_KVSNAME") or env.get("PMIX_NAMESPACE")
    elif env.get("SLURM_PROCID") is not None and env.get("SLURM_NTASKS"):
        rank, world, local, local_size = _place(env, "SLURM_PROCID", "SLURM_NTASKS",
                                                "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE")
        source, host = "Slurm", "rank0"
        job_id = env.get("SLURM_JOB_ID") and "%s.%s" % (env["SLURM_JOB_ID"],
                                                        env.get("SLURM_STEP_ID", "0"))
    else:
        raise RuntimeError(
            "this process was not started as one rank of a job: none of RANK and WORLD_SIZE "
            "(gpuhost.launch, torchrun), OMPI_COMM_WORLD_RANK (Open MPI), PMI_RANK (MPICH) or "
            "SLURM_PROCID (srun) is set.  Start the processes with python -m gpuhost.launch -n N "
            "script.py (or torchrun, srun, mpirun), or use Communicator.from_mpi()")
    if local is None:
        local = rank if local_size in (None, world) else rank % local_size
    single_node = world == 1 or local_size == world
    addr, port = _master(env, single_node, source, job_id)
    return JobEnv(rank, world, local, local_size, addr, port, source, host)
