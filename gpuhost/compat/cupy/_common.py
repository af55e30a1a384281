"""What gpuhost.memory's modules share: CuPy's OutOfMemoryError, the pools' allocation unit,
and the tables a pool's statistics are shown in (HTML and IPython's pretty printer).
"""
from ... import _core
from ...errors import CudaOutOfMemoryError

_allocation_unit_size = 512  # the pools' smallest size class, CuPy's allocation unit


class OutOfMemoryError(CudaOutOfMemoryError):
    """A pool or allocator ran out of memory (CuPy's exception).

    Raised by `MemoryPool.malloc`, `MemoryAsyncPool.malloc` and `PinnedMemoryPool.malloc`
    when a request would take the pool past its limit or the device (or host) has no
    memory left; the message is CuPy's. It is also a `CudaOutOfMemoryError` and a
    `MemoryError`, so ``except MemoryError`` catches it. When the driver refused the
    memory, the driver's own report, with the device's free and total memory, is its
    ``__cause__``.

    Parameters
    ----------
    size : int
        The bytes asked for.
    total : int
        The bytes the pool had allocated so far (-1: not known, left out of the message).
    limit : int, optional
        The pool's limit in bytes; 0 (the default) for none.

    Examples
    --------
    >>> from gpuhost import memory
    >>> pool = memory.MemoryPool()
    >>> pool.set_limit(size=4096)
    >>> try:
    ...     pool.malloc(8192)
    ... except memory.OutOfMemoryError as e:
    ...     print(e)
    Out of memory allocating 8,192 bytes (allocated so far: 0 bytes, limit set to: 4,096 bytes).
    >>> issubclass(memory.OutOfMemoryError, MemoryError)
    True
    """

    def __init__(self, size, total, limit=0):
        self._size, self._total, self._limit = size, total, limit
        if limit == 0:
            msg = "Out of memory allocating {:,} bytes".format(size)
            if total != -1:
                msg += " (allocated so far: {:,} bytes).".format(total)
        else:
            msg = ("Out of memory allocating {:,} bytes (allocated so far: {:,} bytes, limit "
                   "set to: {:,} bytes).".format(size, total, limit))
        super().__init__(2, "CUDA_ERROR_OUT_OF_MEMORY", msg, "")
        self.args = (msg,)

    def __str__(self):
        return self.msg

    def __reduce__(self):
        return (type(self), (self._size, self._total, self._limit))


def _pools_display(title, pools):
    """(caption, header, rows) of a table with one row per device's Pool in `pools`."""
    rows = []
    for pool in pools:
        dev = pool.context.device
        rows.append(("%d (%s)" % (dev.id, dev.name), _core.format_bytes(pool.used_bytes),
                     pool.n_used_blocks, _core.format_bytes(pool.free_bytes),
                     pool.n_free_blocks, _core.format_bytes(pool.limit) if pool.limit else "none"))
    return title, ("device", "in use", "blocks in use", "held", "blocks held", "limit"), rows


def _pools_pretty_rows(pools):
    """(label, value) rows, one per device's Pool in `pools`, for _repr_pretty_."""
    _title, header, rows = _pools_display(None, pools)
    return [("device " + row[0], ", ".join("%s: %s" % (h, v) for h, v in zip(header[1:], row[1:])))
            for row in rows]
