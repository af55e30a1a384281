"""NCCL collectives on gpuhost arrays and streams: one process per GPU (or one process
driving several), on one node or many.

    from gpuhost import nccl
    comm = nccl.Communicator.from_env()          # under gpuhost.launch, torchrun, srun, mpirun
    out = comm.all_reduce(d_x)                   # a new array: the sum over the ranks
    comm.all_reduce(d_x, d_x, op="max")          # in place

    uid = nccl.get_unique_id()                   # or by hand: on one rank, shared as you like
    comm = nccl.Communicator(world_size, uid, rank, timeout=60)

libnccl (``libnccl.so.2``) is loaded the first time one of these is used, never by
``import gpuhost``: GPUHOST_NCCL (a path), the nvidia-nccl-cu13 / -cu12 wheels, CUDA_HOME,
then the system's loader; NcclSupportError lists what was tried.

Buffers are gpuhost DeviceArrays, or any object exporting the CUDA array interface or
DLPack (CuPy, PyTorch, numba); the call's stream is ordered after the exporter's stream.
dtype and element count come from the arrays and are checked (same dtype, the counts the
collective needs, memory of the rank's device, contiguous) before NCCL is called.
Reductions take int8, uint8, int32, uint32, int64, uint64, float16, bfloat16, float32,
float64, and complex64/complex128 for "sum" and "avg"; the other collectives move any
dtype.  Operations are asynchronous on ``stream`` (None: the legacy default stream), like
kernel launches: the arrays must stay alive until the stream has run them.

A failed peer: NCCL's calls return at once and the work waits on the GPU, so a rank whose
peer died waits forever in ``stream.synchronize()``.  ``Communicator.wait(stream,
timeout)`` polls the stream and ``check_async_error()`` instead, and on a timeout or an
asynchronous error aborts the communicator (ncclCommAbort ends the operations in flight)
and raises; the rank can then exit or build a new communicator.  Creation is bounded the
same way: ``Communicator(..., timeout=T)`` creates it non-blockingly (ncclCommInitRankConfig
with blocking=0, polled) and aborts it with TimeoutError after T seconds; ``from_env``'s
rendezvous names the ranks that never came before NCCL is called.
"""
import contextlib
import inspect
import itertools
import os
import pickle
import time

import numpy as np

from . import _core
from .errors import NcclError, NcclSupportError

__all__ = [
    "Communicator",
    "NcclError",
    "NcclSupportError",
    "Registration",
    "device_array",
    "get_unique_id",
    "get_version",
    "group",
    "is_available",
    "library_path",
    "registration_available",
]

Registration = _core.NcclRegistration

OPS = ("sum", "prod", "max", "min", "avg")


def is_available():
    """Whether libnccl can be loaded (tried once per process).

    Never raises: use it to decide whether to use NCCL at all. Where it is False, the
    other functions raise `NcclSupportError`, whose message lists the paths tried.

    Returns
    -------
    bool

    Examples
    --------
    >>> from gpuhost import nccl
    >>> nccl.is_available()
    True
    """
    return _core.nccl_available()


def get_version():
    """The loaded libnccl's version code (ncclGetVersion).

    Returns
    -------
    int
        major * 10000 + minor * 100 + patch: 22809 for NCCL 2.28.9.

    Raises
    ------
    NcclSupportError
        libnccl could not be loaded.

    Examples
    --------
    >>> from gpuhost import nccl
    >>> nccl.get_version() >= 21800
    True
    """
    return _core.nccl_version()


def library_path():
    """The path of the libnccl that was loaded.

    Returns
    -------
    str
        The file gpuhost loaded (GPUHOST_NCCL, a wheel's, CUDA_HOME's or the loader's).

    Raises
    ------
    NcclSupportError
        libnccl could not be loaded.

    Examples
    --------
    >>> import os
    >>> from gpuhost import nccl
    >>> os.path.exists(nccl.library_path())
    True
    """
    return _core.nccl_library()


def registration_available():
    """Whether the loaded libnccl has user-buffer registration (NCCL 2.19 and later).

    `Communicator.register` and `device_array` need it (ncclCommRegister, ncclMemAlloc);
    where it is False they raise NcclSupportError.

    Returns
    -------
    bool

    Raises
    ------
    NcclSupportError
        libnccl could not be loaded.

    Examples
    --------
    >>> from gpuhost import nccl
    >>> nccl.registration_available()
    True
    """
    return all(_core.nccl_has_optional(name) for name in
               ("ncclCommRegister", "ncclCommDeregister", "ncclMemAlloc", "ncclMemFree"))


def device_array(shape, dtype=np.float64, device=None, order="C"):
    """A new, uninitialized device array in memory from NCCL's allocator (ncclMemAlloc).

    The memory NCCL can register for every transport (`Communicator.register`): use it for
    the buffers a program all-reduces again and again.  It is freed (ncclMemFree) when the
    array and its views are gone.  Needs NCCL 2.19 or later.

    Parameters
    ----------
    shape : int or tuple of int
        The array's shape.
    dtype : numpy dtype, optional
        The element type (default float64, as `gpuhost.device_array`'s).
    device : int or gpuhost.Device, optional
        Where; None: the current device.
    order : {"C", "F"}, optional
        Row-major (default) or column-major layout.

    Returns
    -------
    gpuhost.DeviceArray

    Raises
    ------
    NcclSupportError
        The loaded libnccl has no ncclMemAlloc (before NCCL 2.19).
    NcclError
        NCCL could not allocate it.
    ValueError
        The shape is empty (no bytes to allocate) or negative.

    Examples
    --------
    >>> from gpuhost import nccl
    >>> x = nccl.device_array((2, 3), np.float32)
    >>> x[:] = 1
    >>> x.copy_to_host()
    array([[1., 1., 1.],
           [1., 1., 1.]], dtype=float32)
    """
    shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(n) for n in shape)
    dt = np.dtype(dtype)
    if order not in ("C", "F"):
        raise ValueError("order must be 'C' or 'F', not %r" % (order,))
    if any(n < 0 for n in shape):
        raise ValueError("device_array(): negative dimension in shape %r" % (shape,))
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    if nbytes == 0:
        raise ValueError("device_array(): shape %r holds no bytes; NCCL allocates at least one"
                         % (shape,))
    strides, step = [0] * len(shape), dt.itemsize
    for axis in (reversed(range(len(shape))) if order == "C" else range(len(shape))):
        strides[axis] = step
        step *= shape[axis]
    mem = _core.nccl_mem_alloc(nbytes, device)
    return _core.make_array(mem, mem.ptr, shape, tuple(strides), dt,
                            context=mem.device.get_primary_context())


def get_unique_id():
    """128 new bytes naming a communicator (ncclGetUniqueId).

    One rank makes it and every rank passes the same bytes to `Communicator`; being
    bytes, it goes through MPI, a file, a socket or pickle as it is.

    Returns
    -------
    bytes
        128 bytes.

    Raises
    ------
    NcclSupportError
        libnccl could not be loaded.
    NcclError
        NCCL could not make one (e.g. no network interface to bootstrap over).

    Examples
    --------
    >>> from gpuhost import nccl
    >>> uid = nccl.get_unique_id()
    >>> type(uid), len(uid)
    (<class 'bytes'>, 128)
    """
    return _core.nccl_unique_id()


@contextlib.contextmanager
def group():
    """ncclGroupStart / ncclGroupEnd around the block: the calls in it are launched together.

    Needed where one process drives several ranks (each rank's call would otherwise wait
    for the others), and for sends and receives that must pair up; it also merges many
    small collectives into one launch. The calls in the block only queue; NCCL launches
    them at its end. The group is ended even when the block raises. Groups nest.

    Raises
    ------
    NcclError
        NCCL refused a call, at the end of the block.

    Examples
    --------
    One rank here; with ``Communicator.init_all(n)`` each rank's call goes in the group:

    >>> from gpuhost import nccl
    >>> comm = nccl.Communicator(1, nccl.get_unique_id(), 0)
    >>> a, b = gpuhost.to_device(np.ones(4)), gpuhost.to_device(np.arange(4.0))
    >>> with nccl.group():
    ...     ra = comm.all_reduce(a)
    ...     rb = comm.all_reduce(b, op="max")
    >>> rb.copy_to_host()
    array([0., 1., 2., 3.])
    >>> comm.destroy()
    """
    _core.nccl_group_start()
    try:
        yield
    finally:
        _core.nccl_group_end()


class Communicator(_core.NcclCommunicator):
    __doc__ = _core.NcclCommunicator.__doc__ + """

Collectives: all_reduce, reduce, broadcast, all_gather, reduce_scatter, send, recv,
all_to_all; each returns its result array.  ``with Communicator(...) as comm:``
destroys it at the end of the block (aborts it when the block raises). It cannot be
pickled: share the unique id instead.

With a `timeout`, NCCL creates the communicator non-blockingly (ncclCommInitRankConfig with
blocking=0) while this polls ncclCommGetAsyncError; on an error or after `timeout` seconds
it is aborted (ncclCommAbort ends a creation under way) and the error raised, so a rank that
never comes cannot hang the others.  Once created it is turned into a blocking communicator
(ncclCommSplit into one of the same ranks, within the same timeout): a non-blocking
communicator runs each call through a thread of NCCL's, far slower for small collectives.
``blocking=False`` keeps it non-blocking and returns at once, still being created: use
`wait_ready` (or `check_async_error`, True meanwhile), or `abort`.

Parameters
----------
nranks : int
    How many ranks the communicator has.
unique_id : bytes
    128 bytes from `get_unique_id`, the same on every rank.
rank : int
    This rank, 0 to nranks - 1.
device : int or gpuhost.Device, optional
    The rank's device; None: the current device.
split_share : int, optional
    ncclConfig_t's splitShare: communicators split from this one share its resources.
blocking : bool, optional
    False: return at once a non-blocking communicator being created (see above).
timeout : float, optional
    Seconds the creation may take; None (the default): as long as NCCL takes.

Attributes
----------
rank, size : int
    This rank and the number of ranks.
device : gpuhost.Device
    The rank's device.
handle : int
    The ncclComm_t (0 once destroyed).
closed : bool
    Whether destroy() or abort() ended it.

Raises
------
NcclError
    ncclCommInitRank failed (e.g. the ranks disagree on nranks or unique_id).
NcclSupportError
    libnccl could not be loaded.
TimeoutError
    The creation did not end within `timeout` (the communicator was aborted).

Examples
--------
One process per GPU, started by ``python -m gpuhost.launch -n 2 script.py``:

>>> comm = nccl.Communicator.from_env()  # doctest: +SKIP
>>> out = comm.all_reduce(gpuhost.to_device(np.ones(4)))  # doctest: +SKIP

A one-rank communicator, made by hand:

>>> from gpuhost import nccl
>>> with nccl.Communicator(1, nccl.get_unique_id(), 0) as comm:
...     out = comm.all_reduce(gpuhost.to_device(np.arange(4.0)))
...     print(comm.rank, comm.size, out.copy_to_host())
0 1 [0. 1. 2. 3.]
>>> comm.closed
True

Bounded in time, and without waiting at all:

>>> comm = nccl.Communicator(1, nccl.get_unique_id(), 0, timeout=60)
>>> comm.destroy()
>>> comm = nccl.Communicator(1, nccl.get_unique_id(), 0, blocking=False)
>>> comm.wait_ready(timeout=60)
>>> comm.abort()
"""

    @classmethod
    def from_mpi(cls, comm, device=None):
        """A Communicator over the ranks of an mpi4py communicator.

        Rank 0 makes the unique id and broadcasts it over `comm`; every rank then joins.
        Called by every rank of `comm` at once.

        Parameters
        ----------
        comm : mpi4py.MPI.Comm
            Its ``Get_rank()``, ``Get_size()`` and ``bcast()`` are used.
        device : int or gpuhost.Device, optional
            This rank's device; None: the current device. With one process per GPU on a
            node, pick it first (e.g. ``gpuhost.select_device(local_rank)``).

        Returns
        -------
        Communicator
            Rank ``comm.Get_rank()`` of ``comm.Get_size()``.

        Examples
        --------
        Under ``mpirun -n 2 python script.py``:

        >>> from mpi4py import MPI  # doctest: +SKIP
        >>> from gpuhost import nccl
        >>> comm = nccl.Communicator.from_mpi(MPI.COMM_WORLD)  # doctest: +SKIP
        >>> out = comm.all_reduce(gpuhost.to_device(np.ones(4)))  # doctest: +SKIP
        """
        uid = comm.bcast(get_unique_id() if comm.Get_rank() == 0 else None, root=0)
        return cls(comm.Get_size(), uid, comm.Get_rank(), device)

    @classmethod
    def from_env(cls, timeout=300.0, device=None, blocking=True):
        """The Communicator of one rank of a job, from its launcher's environment.

        Reads where the process stands in its job (rank, world size, local rank, the
        master's address) from gpuhost's launcher (``python -m gpuhost.launch``), torchrun
        (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), Slurm's srun
        (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID; the master is the step's first node),
        Open MPI (OMPI_COMM_WORLD_*) or MPICH (PMI_RANK, PMI_SIZE, MPI_LOCALRANKID), checks
        it, then meets the other ranks at MASTER_ADDR:MASTER_PORT over TCP, where rank 0
        hands out NCCL's unique id: no shared folder, no MPI.  A rank that does not come
        within `timeout` is named in every other rank's TimeoutError, before NCCL is called.
        The communicator is then created within `timeout` too (non-blocking creation,
        aborted on timeout), on device LOCAL_RANK.

        Called once by every rank; a second call makes a second communicator of the same
        ranks (every rank must call it as often).

        Parameters
        ----------
        timeout : float, optional
            Seconds the rendezvous, then the creation, wait at most (default 300).
        device : int or gpuhost.Device, optional
            The rank's device; by default LOCAL_RANK (device 0 where the launcher gave each
            process one GPU through CUDA_VISIBLE_DEVICES).
        blocking : bool, optional
            False: a non-blocking communicator, whose calls NCCL runs on its own threads
            (see `Communicator`); by default it is made blocking once created, NCCL's fast
            path.

        Returns
        -------
        Communicator

        Raises
        ------
        RuntimeError
            No launcher's variables are set (the process was not started as a rank).
        ValueError
            They are malformed or disagree: a MASTER_ADDR that is no host name or address,
            a MASTER_PORT that is no port, RANK not below WORLD_SIZE, LOCAL_RANK past the
            GPUs this process sees, ranks that disagree on the world size or two processes
            with one rank.
        OSError
            Rank 0 cannot listen at MASTER_PORT (it is in use: errno EADDRINUSE).
        TimeoutError
            Ranks did not arrive within `timeout` (the message names them), or the
            creation did not end within it (the communicator is aborted).
        NcclError
            NCCL failed to create the communicator.

        Examples
        --------
        In a script started on each of two nodes by
        ``python -m gpuhost.launch --nnodes 2 --node-rank K --nproc-per-node 4
        --master-addr node0 --master-port 29500 train.py`` (or by torchrun, srun, mpirun):

        >>> from gpuhost import nccl
        >>> comm = nccl.Communicator.from_env(timeout=120)  # doctest: +SKIP
        >>> comm.rank, comm.size  # doctest: +SKIP
        (5, 8)
        """
        from . import _jobenv, _rendezvous  # on first use: sockets, JSON

        job = _jobenv.from_environ()
        if device is None:
            device = _local_device(job)
        if job.world_size == 1:
            uid = get_unique_id()
        else:
            uid = _rendezvous.exchange(job, float(timeout), get_unique_id, next(_sessions))
        return cls(job.world_size, uid, job.rank, device, timeout=timeout, blocking=blocking)

    def wait(self, stream=None, timeout=None, poll=0.001):
        """Wait for the work queued on a stream, checking NCCL's asynchronous errors meanwhile.

        Use it instead of ``stream.synchronize()`` after collectives: a peer that died
        cannot hang this rank forever. On an asynchronous error, or after `timeout`
        seconds, the communicator is aborted (abort(): the operations in flight end) and
        the error raised; the rank can then exit or build a new communicator.

        Parameters
        ----------
        stream : gpuhost.Stream, optional
            The stream the collectives were queued on (a gpuhost Stream, a stream handle,
            or any ``__cuda_stream__`` object); None: the legacy default stream.
        timeout : float, optional
            Seconds to wait at most; None: no limit.
        poll : float, optional
            Seconds between two checks.

        Raises
        ------
        NcclError
            NCCL reported an asynchronous error (the communicator is aborted).
        TimeoutError
            The work did not finish in `timeout` seconds (the communicator is aborted).

        Examples
        --------
        >>> from gpuhost import nccl
        >>> comm = nccl.Communicator(1, nccl.get_unique_id(), 0)
        >>> s = gpuhost.stream()
        >>> out = comm.all_reduce(gpuhost.to_device(np.ones(3), stream=s), stream=s)
        >>> comm.wait(s, timeout=30)
        >>> out.copy_to_host(stream=s)
        array([1., 1., 1.])
        >>> comm.destroy()
        """
        s = _core._as_stream(stream)
        deadline = None if timeout is None else time.monotonic() + timeout
        while not s.query():
            try:
                self.check_async_error()
            except NcclError:
                self.abort()
                raise
            if deadline is not None and time.monotonic() > deadline:
                self.abort()
                raise TimeoutError("the NCCL operations on the stream did not finish in %g s; "
                                   "the Communicator was aborted" % timeout)
            time.sleep(poll)
        try:
            self.check_async_error()
        except NcclError:
            self.abort()
            raise

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        """Destroy the communicator; abort it instead when the block raised (a peer may be
        gone, and destroy would wait for it)."""
        if exc_type is None:
            self.destroy()
        else:
            self.abort()

    def __reduce__(self):
        raise pickle.PicklingError("a Communicator cannot be pickled: share the unique id "
                                   "(get_unique_id()) and build one in each process")


# The C type's docstring opens with its text signature ("Communicator(...)\n--\n\n"), which
# inspect reads, but which help() and the documentation would show as text: the signature
# is kept as __signature__, and __doc__ goes on without it.
Communicator.__signature__ = inspect.signature(Communicator)
Communicator.__doc__ = Communicator.__doc__.partition("\n--\n\n")[2]


_sessions = itertools.count()  # this process's from_env() calls: the n-th of every rank meet


def _local_device(job):
    """The device of a rank: LOCAL_RANK, checked against the GPUs this process sees."""
    count = _core.device_count()
    if job.local_rank < count:
        return job.local_rank
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if count == 1 and visible is not None and len(visible.split(",")) == 1:
        return 0  # the launcher gave each process its GPU
    raise ValueError("LOCAL_RANK=%d (from %s), but this process sees %d GPU%s (devices 0 to %d"
                     "%s): start at most %d processes per node, or give each process its GPU "
                     "with CUDA_VISIBLE_DEVICES" % (
                         job.local_rank, "the environment" if job.source == "environment"
                         else job.source, count, "" if count == 1 else "s",
                         count - 1, ", CUDA_VISIBLE_DEVICES=%s" % visible if visible else "",
                         count))


# ---- helpers the C extension calls (csrc/nccl/nccl_comm.c) ----

def _empty(shape, like, device, stream):
    """A new array of `like`'s dtype on `device`, for a result."""
    from . import _arrays

    with _core.get_device(device):
        return _arrays.device_array(shape, like.dtype, stream=stream or 0)


# The Communicator's collectives call these (csrc/nccl/nccl_collectives.c): registered once.
_core._set_helpers(nccl_empty=_empty)
