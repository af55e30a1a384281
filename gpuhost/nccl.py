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
    """Whether libnccl can be loaded (tried once per process)."""
    return _core.nccl_available()


def get_version():
    """The loaded libnccl's version code (22809 for 2.28.9)."""
    return _core.nccl_version()


def library_path():
    """The path of the libnccl that was loaded."""
    return _core.nccl_library()


def get_unique_id():
    """128 new bytes naming a communicator (ncclGetUniqueId).  One rank makes it and every
    rank passes the same bytes to Communicator(); it pickles as bytes."""
    return _core.nccl_unique_id()


@contextlib.contextmanager
def group():
    """ncclGroupStart / ncclGroupEnd around the block: the calls in it are launched together
    at its end (one process driving several ranks, or sends and receives that must pair).
    The group is ended even when the block raises."""
    _core.nccl_group_start()
    try:
        yield
    finally:
        _core.nccl_group_end()


class Communicator(_core.NcclCommunicator):
    __doc__ = _core.NcclCommunicator.__doc__ + """

    Collectives: all_reduce, reduce, broadcast, all_gather, reduce_scatter, send, recv,
    all_to_all; each returns its result array.  ``with Communicator(...) as comm:``
    destroys it at the end of the block."""

    @classmethod
    def from_mpi(cls, comm, device=None):
        """A Communicator over the ranks of mpi4py communicator `comm`: rank 0 makes the
        unique id and broadcasts it.  ``device`` defaults to the current device; with one
        process per GPU on a node, pick it first (e.g. ``gpuhost.select_device(local_rank)``)."""
        uid = comm.bcast(get_unique_id() if comm.Get_rank() == 0 else None, root=0)
        return cls(comm.Get_size(), uid, comm.Get_rank(), device)

    @classmethod
    def from_env(cls, timeout=60.0):
        """The Communicator of a process started by ``python -m gpuhost.launch``: RANK,
        WORLD_SIZE and LOCAL_RANK from the environment, the rank on device LOCAL_RANK, the
        unique id made by rank 0 and read by the others from the launcher's store
        (GPUHOST_STORE, a folder), waiting up to `timeout` seconds for it."""
        try:
            rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
            store = os.environ["GPUHOST_STORE"]
        except KeyError as e:
            raise RuntimeError("%s is not set: start the processes with python -m "
                               "gpuhost.launch -n N script.py (or use from_mpi())" % e) from None
        local = int(os.environ.get("LOCAL_RANK", rank))
        return cls(world, _exchange_id(store, rank, timeout), rank, local)

    def wait(self, stream=None, timeout=None, poll=0.001):
        """Wait for the work queued on `stream` (None: the legacy default stream), checking
        NCCL's asynchronous errors meanwhile.  On an asynchronous error, or after `timeout`
        seconds, abort() the communicator and raise NcclError or TimeoutError; a peer that
        died cannot hang this rank forever."""
        from ._modules import _stream_handle

        s = stream if isinstance(stream, _core.Stream) else (
            _core.legacy_default_stream() if _stream_handle(stream) in (0, 1)
            else _core.external_stream(_stream_handle(stream)))
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

def _foreign_array(obj, stream, call, what):
    """A DeviceArray over a buffer argument that is not one, with `stream` ordered after
    the exporter's stream."""
    from ._arrays import as_cuda_array, from_dlpack
    from ._modules import _order_after

    if isinstance(obj, np.ndarray) and not hasattr(obj, "__cuda_array_interface__"):
        raise TypeError("%s(): %s is a host (numpy) array; NCCL needs device memory: copy it "
                        "with gpuhost.to_device() first" % (call, what))
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        info = _core._pointer_info(cai["data"][0]) if cai["data"][0] else None
        if info is not None and info[0] >= 0:  # viewed in the memory's own device's context
            with _core.get_device(info[0]):
                arr = as_cuda_array(obj, sync=False)
        else:
            arr = as_cuda_array(obj, sync=False)
        producer = cai.get("stream") if cai.get("version", 0) >= 3 else None
        if producer is not None:
            _order_after(producer, stream)
        return arr
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        return from_dlpack(obj)
    raise TypeError("%s(): %s must be a device array (a gpuhost DeviceArray, or an object "
                    "exporting __cuda_array_interface__ or DLPack), not %s"
                    % (call, what, type(obj).__name__))


def _empty(shape, like, device, stream):
    """A new array of `like`'s dtype on `device`, for a result."""
    from . import _arrays

    with _core.get_device(device):
        return _arrays.device_array(shape, like.dtype, stream=stream or 0)
