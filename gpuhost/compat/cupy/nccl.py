"""cupy.cuda.nccl's names over gpuhost.nccl: pointers, counts and NCCL's type and
operation codes as ints, as CuPy takes them.

    from gpuhost.compat.cupy import nccl
    comm = nccl.NcclCommunicator(n, nccl.get_unique_id(), rank)
    comm.allReduce(x.data.ptr, y.data.ptr, x.size, nccl.NCCL_FLOAT32, nccl.NCCL_SUM,
                   stream.ptr)

``available`` says whether libnccl can be loaded (importing this module tries once).
NcclError is gpuhost.errors.NcclError, which CuPy's constructor form ``NcclError(status)``
also makes.  The communicator's device is the current device, as CuPy's is.
"""
from ... import _core
from ...errors import NcclError
from ...nccl import Communicator as _Communicator
from .device import get_device_id

NCCL_SUM, NCCL_PROD, NCCL_MAX, NCCL_MIN, NCCL_AVG = 0, 1, 2, 3, 4
NCCL_INT8 = NCCL_CHAR = 0
NCCL_UINT8 = 1
NCCL_INT32 = NCCL_INT = 2
NCCL_UINT32 = 3
NCCL_INT64 = 4
NCCL_UINT64 = 5
NCCL_FLOAT16 = NCCL_HALF = 6
NCCL_FLOAT32 = NCCL_FLOAT = 7
NCCL_FLOAT64 = NCCL_DOUBLE = 8
NCCL_BFLOAT16 = 9

available = _core.nccl_available()

_ALLREDUCE, _REDUCE, _BROADCAST, _ALLGATHER, _REDUCESCATTER, _SEND, _RECV = range(7)


def get_build_version():
    """NCCL's version code, as ``cupy.cuda.nccl.get_build_version``.

    gpuhost is not built against NCCL (it declares the few types it uses itself), so
    this is the loaded library's, as `get_version`.

    Returns
    -------
    int
        22809 for NCCL 2.28.9.

    Examples
    --------
    >>> from gpuhost.compat.cupy import nccl
    >>> nccl.get_build_version() == nccl.get_version()
    True
    """
    return _core.nccl_version()


def get_version():
    """The loaded libnccl's version code (ncclGetVersion).

    Returns
    -------
    int
        22809 for NCCL 2.28.9.

    Raises
    ------
    NcclSupportError
        libnccl could not be loaded.

    Examples
    --------
    >>> from gpuhost.compat.cupy import nccl
    >>> nccl.get_version() >= 21800
    True
    """
    return _core.nccl_version()


def get_unique_id():
    """A new NCCL unique id: 128 bytes (CuPy 14's form), for `NcclCommunicator`.

    Returns
    -------
    bytes

    Examples
    --------
    >>> from gpuhost.compat.cupy import nccl
    >>> len(nccl.get_unique_id())
    128
    """
    return _core.nccl_unique_id()


def groupStart():
    """Start an NCCL group (ncclGroupStart): the calls until `groupEnd` launch together.

    Needed where one process drives several ranks.

    Examples
    --------
    >>> from gpuhost.compat.cupy import nccl
    >>> nccl.groupStart()
    >>> nccl.groupEnd()
    """
    _core.nccl_group_start()


def groupEnd():
    """End the NCCL group `groupStart` began (ncclGroupEnd), launching its calls.

    Raises
    ------
    NcclError
        NCCL refused a call of the group.

    Examples
    --------
    >>> from gpuhost.compat.cupy import nccl
    >>> comms = nccl.NcclCommunicator.initAll(1)
    >>> nccl.groupStart()
    >>> for c in comms:
    ...     c.check_async_error()
    >>> nccl.groupEnd()
    """
    _core.nccl_group_end()


class NcclConfig:
    """ncclConfig_t's split_share, the one field CuPy exposes.

    Parameters
    ----------
    split_share : int, optional
        1: communicators split from this one share its resources.

    Examples
    --------
    >>> from gpuhost.compat.cupy import nccl
    >>> nccl.NcclConfig(split_share=1).split_share
    1
    """

    def __init__(self, split_share=0):
        self._split_share = int(split_share)

    @property
    def split_share(self):
        return self._split_share


def _as_bytes_id(commId):
    if not isinstance(commId, bytes):
        raise TypeError("Argument 'commId' has incorrect type (expected bytes, got %s)"
                        % type(commId).__name__)
    if len(commId) != 128:
        raise ValueError(f"commId length {len(commId)} != 128.")
    return commId


class NcclCommunicator:
    """One rank of an NCCL communicator on the current device, as CuPy's.

    Buffers are device addresses (ints), counts are elements, datatypes and operations
    NCCL's codes (``NCCL_FLOAT32``, ``NCCL_SUM``), streams handles (``stream.ptr``), as
    in ``cupy.cuda.nccl``. `_gpuhost()` gives the `gpuhost.nccl.Communicator` it wraps.

    Parameters
    ----------
    ndev : int
        How many ranks.
    commId : bytes
        128 bytes from `get_unique_id`, the same on every rank.
    rank : int
        This rank.
    config : NcclConfig, optional

    Raises
    ------
    TypeError, ValueError
        `commId` is not 128 bytes, or `config` not an NcclConfig.
    NcclError
        NCCL could not make the communicator.

    Examples
    --------
    >>> from gpuhost.compat.cupy import nccl
    >>> comm = nccl.NcclCommunicator(1, nccl.get_unique_id(), 0)
    >>> x = gpuhost.to_device(np.arange(4, dtype=np.float32))
    >>> y = gpuhost.device_array(4, np.float32)
    >>> comm.allReduce(x.device_ctypes_pointer.value, y.device_ctypes_pointer.value, 4,
    ...                nccl.NCCL_FLOAT32, nccl.NCCL_SUM, 0)
    >>> y.copy_to_host()
    array([0., 1., 2., 3.], dtype=float32)
    >>> comm.rank_id(), comm.size()
    (0, 1)
    >>> comm.destroy()
    """

    __slots__ = ("_comm",)

    def __init__(self, ndev, commId, rank, config=None):
        if not isinstance(config, (NcclConfig, type(None))):
            raise TypeError("config must be an NcclConfig or None")
        self._comm = _Communicator(ndev, _as_bytes_id(commId), rank, get_device_id(),
                                   split_share=None if config is None else config.split_share)

    @classmethod
    def _wrap(cls, comm):
        self = cls.__new__(cls)
        self._comm = comm
        return self

    def _gpuhost(self):
        """The gpuhost.nccl.Communicator this wraps."""
        return self._comm

    @property
    def comm(self):
        """The ncclComm_t as an int (0 once destroyed).

        Examples
        --------
        >>> from gpuhost.compat.cupy import nccl
        >>> comm = nccl.NcclCommunicator(1, nccl.get_unique_id(), 0)
        >>> comm.comm != 0
        True
        >>> comm.destroy()
        >>> comm.comm
        0
        """
        return self._comm.handle

    @staticmethod
    def initAll(devices):
        """One communicator per device, all in this process (ncclCommInitAll).

        Parameters
        ----------
        devices : int or list of int
            A count (devices 0 to n - 1) or the devices; rank i is on the i-th.

        Returns
        -------
        list of NcclCommunicator

        Raises
        ------
        ValueError
            `devices` is neither an int nor a list.

        Examples
        --------
        >>> from gpuhost.compat.cupy import nccl
        >>> comms = nccl.NcclCommunicator.initAll([0])
        >>> [c.device_id() for c in comms]
        [0]
        """
        if not isinstance(devices, (int, list)) or isinstance(devices, bool):
            raise ValueError("\"devices\" should be an int or a list of int.")
        return [NcclCommunicator._wrap(c) for c in _Communicator.init_all(devices)]

    def destroy(self):
        """Free the communicator once its queued work has finished (ncclCommDestroy).

        Every rank calls it. A second call does nothing; collectives afterwards raise
        ValueError, and `comm` is 0.

        Raises
        ------
        gpuhost.errors.NcclError
            NCCL reported an error while finishing.

        Examples
        --------
        >>> from gpuhost.compat.cupy import nccl
        >>> comm = nccl.NcclCommunicator(1, nccl.get_unique_id(), 0)
        >>> comm.destroy()
        >>> comm.comm
        0
        >>> comm.destroy()  # again: nothing
        """
        self._comm.destroy()

    def abort(self):
        """Free the communicator at once, dropping its queued work (ncclCommAbort).

        For recovery after an error (such as a rank that died): unlike `destroy` it does not
        wait for the other ranks. Collectives afterwards raise ValueError.

        Examples
        --------
        >>> from gpuhost.compat.cupy import nccl
        >>> comm = nccl.NcclCommunicator(1, nccl.get_unique_id(), 0)
        >>> comm.abort()
        >>> comm.comm
        0
        """
        self._comm.abort()

    def device_id(self):
        """The id of the device this rank runs on (the device current when it was made).

        Returns
        -------
        int

        Examples
        --------
        >>> from gpuhost.compat.cupy import nccl
        >>> comm = nccl.NcclCommunicator(1, nccl.get_unique_id(), 0)
        >>> comm.device_id()
        0
        """
        return self._comm.device.id

    def rank_id(self):
        """This rank's number in the communicator, 0 to ``size() - 1``.

        Returns
        -------
        int

        Examples
        --------
        >>> from gpuhost.compat.cupy import nccl
        >>> comm = nccl.NcclCommunicator(1, nccl.get_unique_id(), 0)
        >>> comm.rank_id()
        0
        """
        return self._comm.rank

    def size(self):
        """The number of ranks in the communicator.

        Returns
        -------
        int

        Examples
        --------
        >>> from gpuhost.compat.cupy import nccl
        >>> comm = nccl.NcclCommunicator(1, nccl.get_unique_id(), 0)
        >>> comm.size()
        1
        """
        return self._comm.size

    def check_async_error(self):
        """Raise NcclError if NCCL reported an asynchronous error (ncclCommGetAsyncError).

        Raises
        ------
        NcclError
            The asynchronous error.

        Examples
        --------
        >>> from gpuhost.compat.cupy import nccl
        >>> comm = nccl.NcclCommunicator(1, nccl.get_unique_id(), 0)
        >>> comm.check_async_error()
        """
        self._comm.check_async_error()

    def commSplit(self, color, key, config=None):
        """Split the communicator by color (ncclCommSplit); called by every rank.

        Parameters
        ----------
        color : int
            Ranks of equal color form one new communicator; -1: this rank joins none.
        key : int
            Orders the ranks in the new communicator.
        config : NcclConfig, optional

        Returns
        -------
        NcclCommunicator or None
            None for color -1.

        Examples
        --------
        >>> from gpuhost.compat.cupy import nccl
        >>> comm = nccl.NcclCommunicator(1, nccl.get_unique_id(), 0)
        >>> sub = comm.commSplit(0, 0)
        >>> sub.size()
        1
        """
        new = self._comm.split(color, key,
                               split_share=None if config is None else config.split_share)
        return None if new is None else NcclCommunicator._wrap(new)

    def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream):
        """Reduce a buffer over all ranks; every rank gets the result (ncclAllReduce).

        Queued on `stream`; every rank calls it with the same count, datatype and operation.

        Parameters
        ----------
        sendbuf : int
            The device address of this rank's `count` elements.
        recvbuf : int
            Where the `count` reduced elements go (may be `sendbuf`: in place).
        count : int
            Elements.
        datatype : int
            NCCL's type code (``NCCL_FLOAT32`` ...).
        op : int
            NCCL's operation code (``NCCL_SUM``, ``NCCL_PROD``, ``NCCL_MAX``, ``NCCL_MIN``,
            ``NCCL_AVG``).
        stream : int
            The stream handle to queue on (``stream.ptr``; 0: the legacy default stream).

        Raises
        ------
        gpuhost.errors.NcclError
            NCCL refused the call (a bad datatype, operation, root or NULL buffer; the message
            has NCCL's reason) or reported an error.
        ValueError
            The communicator was destroyed or aborted, or `stream` is not a live stream's
            handle.

        Examples
        --------
        >>> from gpuhost.compat.cupy import nccl
        >>> comm = nccl.NcclCommunicator(1, nccl.get_unique_id(), 0)
        >>> x = gpuhost.to_device(np.arange(4, dtype=np.float32))
        >>> y = gpuhost.device_array(4, np.float32)
        >>> px, py = x.device_ctypes_pointer.value, y.device_ctypes_pointer.value
        >>> comm.allReduce(px, py, 4, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, 0)
        >>> y.copy_to_host()  # one rank: the sum is its own data
        array([0., 1., 2., 3.], dtype=float32)
        >>> comm.allReduce(px, py, 4, 99, nccl.NCCL_SUM, 0)
        Traceback (most recent call last):
            ...
        gpuhost.errors.NcclError: ncclAllReduce failed: NCCL_ERROR_INVALID_ARGUMENT: ...
        """
        self._comm._raw(_ALLREDUCE, sendbuf, recvbuf, count, datatype, op, 0, stream)

    def reduce(self, sendbuf, recvbuf, count, datatype, op, root, stream):
        """Reduce a buffer over all ranks into the root's (ncclReduce).

        Parameters
        ----------
        sendbuf : int
            The device address of this rank's `count` elements.
        recvbuf : int
            Where the result goes, on the root (ignored on the other ranks).
        count : int
            Elements.
        datatype : int
            NCCL's type code (``NCCL_FLOAT32`` ...).
        op : int
            NCCL's operation code (``NCCL_SUM``, ``NCCL_PROD``, ``NCCL_MAX``, ``NCCL_MIN``,
            ``NCCL_AVG``).
        root : int
            The rank that receives the result.
        stream : int
            The stream handle to queue on (``stream.ptr``; 0: the legacy default stream).

        Raises
        ------
        gpuhost.errors.NcclError
            NCCL refused the call (a bad datatype, operation, root or NULL buffer; the message
            has NCCL's reason) or reported an error.
        ValueError
            The communicator was destroyed or aborted, or `stream` is not a live stream's
            handle.

        Examples
        --------
        >>> from gpuhost.compat.cupy import nccl
        >>> comm = nccl.NcclCommunicator(1, nccl.get_unique_id(), 0)
        >>> x = gpuhost.to_device(np.arange(4, dtype=np.float32))
        >>> y = gpuhost.device_array(4, np.float32)
        >>> px, py = x.device_ctypes_pointer.value, y.device_ctypes_pointer.value
        >>> comm.reduce(px, py, 4, nccl.NCCL_FLOAT32, nccl.NCCL_MAX, 0, 0)
        >>> y.copy_to_host()
        array([0., 1., 2., 3.], dtype=float32)
        """
        self._comm._raw(_REDUCE, sendbuf, recvbuf, count, datatype, op, root, stream)

    def broadcast(self, sendbuff, recvbuff, count, datatype, root, stream):
        """Copy the root's buffer to every rank (ncclBroadcast).

        Parameters
        ----------
        sendbuff : int
            The device address of the root's `count` elements (ignored on the other ranks).
        recvbuff : int
            Where each rank receives them (may be `sendbuff` on the root).
        count : int
            Elements.
        datatype : int
            NCCL's type code (``NCCL_FLOAT32`` ...).
        root : int
            The rank that sends.
        stream : int
            The stream handle to queue on (``stream.ptr``; 0: the legacy default stream).

        Raises
        ------
        gpuhost.errors.NcclError
            NCCL refused the call (a bad datatype, operation, root or NULL buffer; the message
            has NCCL's reason) or reported an error.
        ValueError
            The communicator was destroyed or aborted, or `stream` is not a live stream's
            handle.

        Examples
        --------
        >>> from gpuhost.compat.cupy import nccl
        >>> comm = nccl.NcclCommunicator(1, nccl.get_unique_id(), 0)
        >>> x = gpuhost.to_device(np.arange(4, dtype=np.float32))
        >>> y = gpuhost.device_array(4, np.float32)
        >>> px, py = x.device_ctypes_pointer.value, y.device_ctypes_pointer.value
        >>> comm.broadcast(px, py, 4, nccl.NCCL_FLOAT32, 0, 0)
        >>> y.copy_to_host()
        array([0., 1., 2., 3.], dtype=float32)
        """
        self._comm._raw(_BROADCAST, sendbuff, recvbuff, count, datatype, 0, root, stream)

    def bcast(self, buff, count, datatype, root, stream):
        """Broadcast in place: the root's buffer overwrites every rank's (ncclBcast).

        Parameters
        ----------
        buff : int
            The device address of `count` elements: sent on the root, received on the others.
        count : int
            Elements.
        datatype : int
            NCCL's type code (``NCCL_FLOAT32`` ...).
        root : int
            The rank that sends.
        stream : int
            The stream handle to queue on (``stream.ptr``; 0: the legacy default stream).

        Raises
        ------
        gpuhost.errors.NcclError
            NCCL refused the call (a bad datatype, operation, root or NULL buffer; the message
            has NCCL's reason) or reported an error.
        ValueError
            The communicator was destroyed or aborted, or `stream` is not a live stream's
            handle.

        Examples
        --------
        >>> from gpuhost.compat.cupy import nccl
        >>> comm = nccl.NcclCommunicator(1, nccl.get_unique_id(), 0)
        >>> x = gpuhost.to_device(np.arange(4, dtype=np.float32))
        >>> y = gpuhost.device_array(4, np.float32)
        >>> px, py = x.device_ctypes_pointer.value, y.device_ctypes_pointer.value
        >>> comm.bcast(px, 4, nccl.NCCL_FLOAT32, 0, 0)
        >>> x.copy_to_host()
        array([0., 1., 2., 3.], dtype=float32)
        """
        self._comm._raw(_BROADCAST, buff, buff, count, datatype, 0, root, stream)

    def reduceScatter(self, sendbuf, recvbuf, recvcount, datatype, op, stream):
        """Reduce over all ranks and give each rank one block of the result (ncclReduceScatter).

        Rank i receives elements ``i * recvcount`` to ``(i + 1) * recvcount`` of the reduction.

        Parameters
        ----------
        sendbuf : int
            The device address of this rank's ``size() * recvcount`` elements.
        recvbuf : int
            Where this rank's `recvcount` elements go.
        recvcount : int
            Elements each rank receives.
        datatype : int
            NCCL's type code (``NCCL_FLOAT32`` ...).
        op : int
            NCCL's operation code (``NCCL_SUM``, ``NCCL_PROD``, ``NCCL_MAX``, ``NCCL_MIN``,
            ``NCCL_AVG``).
        stream : int
            The stream handle to queue on (``stream.ptr``; 0: the legacy default stream).

        Raises
        ------
        gpuhost.errors.NcclError
            NCCL refused the call (a bad datatype, operation, root or NULL buffer; the message
            has NCCL's reason) or reported an error.
        ValueError
            The communicator was destroyed or aborted, or `stream` is not a live stream's
            handle.

        Examples
        --------
        >>> from gpuhost.compat.cupy import nccl
        >>> comm = nccl.NcclCommunicator(1, nccl.get_unique_id(), 0)
        >>> x = gpuhost.to_device(np.arange(4, dtype=np.float32))
        >>> y = gpuhost.device_array(4, np.float32)
        >>> px, py = x.device_ctypes_pointer.value, y.device_ctypes_pointer.value
        >>> comm.reduceScatter(px, py, 4, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, 0)
        >>> y.copy_to_host()
        array([0., 1., 2., 3.], dtype=float32)
        """
        self._comm._raw(_REDUCESCATTER, sendbuf, recvbuf, recvcount, datatype, op, 0, stream)

    def allGather(self, sendbuf, recvbuf, count, datatype, stream):
        """Gather every rank's buffer, in rank order, on every rank (ncclAllGather).

        Parameters
        ----------
        sendbuf : int
            The device address of this rank's `count` elements.
        recvbuf : int
            Where the ``size() * count`` gathered elements go; rank i's at ``i * count``.
        count : int
            Elements each rank sends.
        datatype : int
            NCCL's type code (``NCCL_FLOAT32`` ...).
        stream : int
            The stream handle to queue on (``stream.ptr``; 0: the legacy default stream).

        Raises
        ------
        gpuhost.errors.NcclError
            NCCL refused the call (a bad datatype, operation, root or NULL buffer; the message
            has NCCL's reason) or reported an error.
        ValueError
            The communicator was destroyed or aborted, or `stream` is not a live stream's
            handle.

        Examples
        --------
        >>> from gpuhost.compat.cupy import nccl
        >>> comm = nccl.NcclCommunicator(1, nccl.get_unique_id(), 0)
        >>> x = gpuhost.to_device(np.arange(4, dtype=np.float32))
        >>> y = gpuhost.device_array(4, np.float32)
        >>> px, py = x.device_ctypes_pointer.value, y.device_ctypes_pointer.value
        >>> comm.allGather(px, py, 4, nccl.NCCL_FLOAT32, 0)
        >>> y.copy_to_host()
        array([0., 1., 2., 3.], dtype=float32)
        """
        self._comm._raw(_ALLGATHER, sendbuf, recvbuf, count, datatype, 0, 0, stream)

    def send(self, sendbuf, count, datatype, peer, stream):
        """Send a buffer to one rank (ncclSend); that rank calls `recv`.

        Pair sends and receives between `groupStart` and `groupEnd` (a rank sending to itself
        must), else the two ranks may wait for each other.

        Parameters
        ----------
        sendbuf : int
            The device address of `count` elements.
        count : int
            Elements.
        datatype : int
            NCCL's type code (``NCCL_FLOAT32`` ...).
        peer : int
            The receiving rank.
        stream : int
            The stream handle to queue on (``stream.ptr``; 0: the legacy default stream).

        Raises
        ------
        gpuhost.errors.NcclError
            NCCL refused the call (a bad datatype, operation, root or NULL buffer; the message
            has NCCL's reason) or reported an error.
        ValueError
            The communicator was destroyed or aborted, or `stream` is not a live stream's
            handle.

        Examples
        --------
        >>> from gpuhost.compat.cupy import nccl
        >>> comm = nccl.NcclCommunicator(1, nccl.get_unique_id(), 0)
        >>> x = gpuhost.to_device(np.arange(4, dtype=np.float32))
        >>> y = gpuhost.device_array(4, np.float32)
        >>> px, py = x.device_ctypes_pointer.value, y.device_ctypes_pointer.value
        >>> nccl.groupStart()
        >>> comm.send(px, 4, nccl.NCCL_FLOAT32, 0, 0)
        >>> comm.recv(py, 4, nccl.NCCL_FLOAT32, 0, 0)
        >>> nccl.groupEnd()
        >>> y.copy_to_host()
        array([0., 1., 2., 3.], dtype=float32)
        """
        self._comm._raw(_SEND, sendbuf, 0, count, datatype, 0, peer, stream)

    def recv(self, recvbuf, count, datatype, peer, stream):
        """Receive a buffer from one rank (ncclRecv); that rank calls `send`.

        Parameters
        ----------
        recvbuf : int
            The device address where `count` elements go.
        count : int
            Elements.
        datatype : int
            NCCL's type code (``NCCL_FLOAT32`` ...).
        peer : int
            The sending rank.
        stream : int
            The stream handle to queue on (``stream.ptr``; 0: the legacy default stream).

        Raises
        ------
        gpuhost.errors.NcclError
            NCCL refused the call (a bad datatype, operation, root or NULL buffer; the message
            has NCCL's reason) or reported an error.
        ValueError
            The communicator was destroyed or aborted, or `stream` is not a live stream's
            handle.

        Examples
        --------
        >>> from gpuhost.compat.cupy import nccl
        >>> comm = nccl.NcclCommunicator(1, nccl.get_unique_id(), 0)
        >>> x = gpuhost.to_device(np.arange(4, dtype=np.float32))
        >>> y = gpuhost.device_array(4, np.float32)
        >>> px, py = x.device_ctypes_pointer.value, y.device_ctypes_pointer.value
        >>> nccl.groupStart()
        >>> comm.send(px, 4, nccl.NCCL_FLOAT32, 0, 0)
        >>> comm.recv(py, 4, nccl.NCCL_FLOAT32, 0, 0)
        >>> nccl.groupEnd()
        >>> y.copy_to_host()
        array([0., 1., 2., 3.], dtype=float32)
        """
        self._comm._raw(_RECV, 0, recvbuf, count, datatype, 0, peer, stream)
