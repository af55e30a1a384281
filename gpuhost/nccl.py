"""NCCL collectives on gpuhost arrays and streams: one process per GPU (or one process
driving several), on one node or many.

    from gpuhost import nccl
    uid = nccl.get_unique_id()                   # on one rank; share it (MPI, a file, TCP)
    comm = nccl.Communicator(world_size, uid, rank)
    out = comm.all_reduce(d_x)                   # a new array: the sum over the ranks
    comm.all_reduce(d_x, d_x, op="max")          # in place

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
and raises; the rank can then exit or build a new communicator.
"""
import contextlib
import inspect
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
    "get_unique_id",
    "get_version",
    "group",
    "is_available",
    "library_path",
]

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
destroys it at the end of the block. It cannot be pickled: share the unique id instead.

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
    def from_env(cls, timeout=60.0):
        """The Communicator of a process started by ``python -m gpuhost.launch``.

        RANK, WORLD_SIZE and LOCAL_RANK come from the environment and the rank is on
        device LOCAL_RANK (RANK when it is unset). Rank 0 makes the unique id and writes
        it into the launcher's store (GPUHOST_STORE, a folder); the others read it from
        there.

        Parameters
        ----------
        timeout : float, optional
            How many seconds a rank other than 0 waits for the unique id.

        Returns
        -------
        Communicator

        Raises
        ------
        RuntimeError
            RANK, WORLD_SIZE or GPUHOST_STORE is not set (not started by the launcher).
        TimeoutError
            Rank 0 did not publish the unique id within `timeout`.

        Examples
        --------
        In a script started by ``python -m gpuhost.launch -n 2 script.py``:

        >>> from gpuhost import nccl
        >>> comm = nccl.Communicator.from_env()  # doctest: +SKIP
        >>> comm.rank, comm.size  # doctest: +SKIP
        (0, 2)
        """
        try:
            rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
            store = os.environ["GPUHOST_STORE"]
        except KeyError as e:
            raise RuntimeError("%s is not set: start the processes with python -m "
                               "gpuhost.launch -n N script.py (or use from_mpi())" % e) from None
        local = int(os.environ.get("LOCAL_RANK", rank))
        return cls(world, _exchange_id(store, rank, timeout), rank, local)

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
        self.check_async_error()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()

    def __reduce__(self):
        raise pickle.PicklingError("a Communicator cannot be pickled: share the unique id "
                                   "(get_unique_id()) and build one in each process")


# The C type's docstring opens with its text signature ("Communicator(...)\n--\n\n"), which
# inspect reads, but which help() and the documentation would show as text: the signature
# is kept as __signature__, and __doc__ goes on without it.
Communicator.__signature__ = inspect.signature(Communicator)
Communicator.__doc__ = Communicator.__doc__.partition("\n--\n\n")[2]


def _exchange_id(store, rank, timeout):
    """Rank 0 writes a new unique id into folder `store` (atomically: a rename); every other
    rank reads it, polling until it appears."""
    path = os.path.join(store, "nccl_unique_id")
    if rank == 0:
        uid = get_unique_id()
        tmp = "%s.%d.tmp" % (path, os.getpid())
        with open(tmp, "wb") as f:
            f.write(uid)
        os.replace(tmp, path)
        return uid
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise TimeoutError("rank %d: rank 0 did not publish the NCCL unique id in %s within "
                               "%g s" % (rank, store, timeout))
        time.sleep(0.01)
    with open(path, "rb") as f:
        return f.read()


# ---- helpers the C extension calls (csrc/nccl_comm.c) ----

def _empty(shape, like, device, stream):
    """A new array of `like`'s dtype on `device`, for a result."""
    from . import _arrays

    with _core.get_device(device):
        return _arrays.device_array(shape, like.dtype, stream=stream or 0)


# The Communicator's collectives call these (csrc/nccl_collectives.c): registered once.
_core._set_helpers(nccl_empty=_empty)
