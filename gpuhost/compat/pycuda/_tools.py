"""pycuda's tools over gpuhost's primary contexts: choosing the default device and making
its context current, per-context memoization, device data and occupancy, and the
``mark_cuda_test`` decorator.  Re-exported by ``gpuhost.compat.pycuda.tools`` (and
``gpuhost.tools``).  The default device and context are gpuhost's own
(gpuhost/_default_context.py, which gpuhost's pytest plugin uses too), re-exported here.

Differences from pycuda:

- contexts are the devices' primary contexts (the ones CuPy, PyTorch and numba share),
  never new ones: ``make_default_context()`` pushes the chosen device's primary context
  and returns it, and ``ctx.pop()`` undoes that as in pycuda;
- ``DeviceData`` reads every limit the driver reports (warps and blocks per
  multiprocessor, registers and shared memory per multiprocessor, the memory the driver
  reserves per block) where pycuda hard-codes values of 2010-era GPUs, and
  ``OccupancyRecord`` follows the allocation rules of CUDA's occupancy calculator, so
  that it agrees with ``Kernel.max_active_blocks_per_multiprocessor``.
"""
import atexit
import functools
import gc
import operator
import sys
import threading
import warnings

from ..._core import Device, current_context
from ..._default_context import (  # noqa: F401  (the default context is gpuhost's own)
    _configured_device,
    clear_context_caches,
    make_default_context,
    memo_caches as _memo_caches,
)
from ...devices import gpus

__all__ = [
    "DeviceData",
    "OccupancyRecord",
    "clear_context_caches",
    "context_dependent_memoize",
    "get_default_device",
    "make_default_context",
    "mark_cuda_test",
]


def get_default_device(default=0):
    """The Device CUDA_DEVICE or ``~/.cuda-device`` names, else device `default`.

    Deprecated, as in pycuda: use `make_default_context`.

    Parameters
    ----------
    default : int, optional
        The device number when neither names one; default 0.

    Returns
    -------
    Device

    Raises
    ------
    ValueError
        CUDA_DEVICE or the file holds something that is not a device number.
    InvalidDeviceError
        CUDA_DEVICE, the file or `default` names a device that does not exist.

    Warns
    -----
    DeprecationWarning
        Always.

    Examples
    --------
    >>> import warnings
    >>> from gpuhost import tools
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", DeprecationWarning)
    ...     dev = tools.get_default_device()
    >>> dev.id                                 # without CUDA_DEVICE or ~/.cuda-device
    0
    """
    warnings.warn("get_default_device() is deprecated; use make_default_context() instead",
                  DeprecationWarning, stacklevel=2)
    count = len(gpus)
    chosen = _configured_device(count)
    return gpus[default if chosen is None else chosen]


# ---- the context gpuhost.autoinit and gpuhost.autoprimaryctx make ----

_auto_lock = threading.Lock()
_auto_context = None


def _autoinit():
    """The context of gpuhost.autoinit / gpuhost.autoprimaryctx: made (and an exit
    handler registered) on the first import of either, shared by both."""
    global _auto_context
    with _auto_lock:
        if _auto_context is None:
            _auto_context = make_default_context()
            atexit.register(_autoinit_finish)
        return _auto_context


def _autoinit_finish():
    """At exit: pop the autoinit context if it is still on top of this thread's stack,
    and clear the context caches.  Never raises: a failure is a RuntimeWarning."""
    global _auto_context
    ctx, _auto_context = _auto_context, None
    for name in ("gpuhost.autoinit", "gpuhost.autoprimaryctx", "gpuhost.compat.pycuda.autoinit",
                 "gpuhost.compat.pycuda.autoprimaryctx"):
        module = sys.modules.get(name)
        if module is not None:
            module.context = None
    if ctx is None:
        return
    try:
        clear_context_caches()
        if ctx.handle is not None and gpus.current is ctx.device:
            ctx.pop()
    except Exception as e:  # noqa: BLE001 - cleanup at exit warns, never raises
        warnings.warn("gpuhost.autoinit: could not pop the context at exit: %s" % e,
                      RuntimeWarning)


# ---- memoization per context (the caches are gpuhost._default_context's) ----

def context_dependent_memoize(func):
    """Decorator: cache a function's result per current context and per arguments
    (pycuda's).

    For results that belong to a context, such as a loaded Module: each context gets its
    own. The arguments must be hashable. `clear_context_caches` empties every such cache;
    call it after ``Context.reset()`` or ``gpuhost.close()``, whose contexts come back as
    the same Context objects. The decorated function's ``clear_cache()`` empties its own.

    Parameters
    ----------
    func : callable
        The function to cache.

    Returns
    -------
    callable
        The caching function.

    Examples
    --------
    >>> from gpuhost import tools
    >>> @tools.context_dependent_memoize
    ... def scratch(n):
    ...     print("allocating")
    ...     return gpuhost.device_array(n)
    >>> with gpuhost.gpus[0]:
    ...     a = scratch(100)
    ...     b = scratch(100)
    allocating
    >>> a is b
    True
    """
    cache = {}
    _memo_caches.append(cache)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        key = (args, frozenset(kwargs.items())) if kwargs else args
        per_context = cache.setdefault(current_context(), {})
        try:
            return per_context[key]
        except KeyError:
            pass
        result = func(*args, **kwargs)
        per_context[key] = result
        return result

    wrapper.clear_cache = cache.clear
    return wrapper



# ---- device data and occupancy ----

def _round_up(value, multiple):
    return -(-value // multiple) * multiple


class DeviceData:
    """A device's limits for kernel tuning and occupancy, as pycuda's DeviceData, with
    every value read from the device (the current context's when `dev` is None; a
    Device or a device number otherwise).

    pycuda's names keep pycuda's meaning: ``max_threads`` (threads per block),
    ``warp_size``, ``warps_per_mp`` and ``thread_blocks_per_mp`` (resident per
    multiprocessor), ``registers`` and ``shared_memory`` (per block, without opt-in),
    ``smem_granularity`` (shared memory banks), ``smem_alloc_granularity`` (the unit
    shared memory is given to a block in).  Added: ``registers_per_mp``,
    ``shared_memory_per_mp``, ``shared_memory_per_block_optin``,
    ``reserved_shared_memory`` (what the driver keeps per block, cc 8.0+),
    ``register_allocation_granularity`` (registers per warp are rounded up to it),
    ``warp_allocation_granularity`` (the multiprocessor's sub-partitions, over which
    registers are split), ``max_registers_per_thread``, ``multiprocessor_count`` and
    ``compute_capability``.

    Parameters
    ----------
    dev : gpuhost.Device or int, optional
        The device, or its number; by default the current context's device.

    Raises
    ------
    TypeError
        `dev` is neither.

    Examples
    --------
    >>> from gpuhost import tools
    >>> dd = tools.DeviceData(0)
    >>> dd.warp_size, dd.max_threads
    (32, 1024)
    >>> dd.coalesce(100), dd.align_bytes(4)
    (128, 128)
    """

    register_allocation_unit = "warp"
    register_allocation_granularity = 256
    max_registers_per_thread = 255
    # Shared memory has 32 banks of 4 bytes on every device since compute capability 2.0;
    # no attribute reports it.
    smem_granularity = 32

    def __init__(self, dev=None):
        if dev is None:
            dev = current_context().device
        elif isinstance(dev, int) and not isinstance(dev, bool):
            dev = gpus[dev]
        elif not isinstance(dev, Device):
            raise TypeError("DeviceData() takes a Device, a device number or None, not %s"
                            % type(dev).__name__)
        attr = dev.get_attribute
        self.device = dev
        self.compute_capability = dev.compute_capability
        self.multiprocessor_count = attr("MULTIPROCESSOR_COUNT")
        self.max_threads = attr("MAX_THREADS_PER_BLOCK")
        self.warp_size = attr("WARP_SIZE")
        self.warps_per_mp = attr("MAX_THREADS_PER_MULTIPROCESSOR") // self.warp_size
        self.thread_blocks_per_mp = attr("MAX_BLOCKS_PER_MULTIPROCESSOR")
        self.registers = attr("MAX_REGISTERS_PER_BLOCK")
        self.registers_per_mp = attr("MAX_REGISTERS_PER_MULTIPROCESSOR")
        self.shared_memory = attr("MAX_SHARED_MEMORY_PER_BLOCK")
        self.shared_memory_per_block_optin = attr("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN")
        self.shared_memory_per_mp = attr("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR")
        self.reserved_shared_memory = attr("RESERVED_SHARED_MEMORY_PER_BLOCK")
        major, minor = self.compute_capability
        # CUDA's occupancy calculator (cuda_occupancy.h): shared memory is allocated in
        # 256-byte units before Ampere, 128-byte units since; registers are split over 4
        # sub-partitions of the multiprocessor (2 on GP100, cc 6.0).
        self.smem_alloc_granularity = 128 if major >= 8 else 256
        self.warp_allocation_granularity = 2 if (major, minor) == (6, 0) else 4

    def align_bytes(self, word_size=4):
        """The alignment in bytes at which a warp's loads of `word_size`-byte words
        coalesce: a warp's worth of words, at most a 128-byte cache line.

        pycuda gives half a warp's, the rule of compute capability 1.x.

        Parameters
        ----------
        word_size : {1, 2, 4, 8, 16}, optional
            Bytes per word; default 4.

        Returns
        -------
        int

        Raises
        ------
        ValueError
            Another `word_size`.

        Examples
        --------
        >>> from gpuhost import tools
        >>> dd = tools.DeviceData(0)
        >>> dd.align_bytes(1), dd.align_bytes(8)
        (32, 128)
        """
        if word_size not in (1, 2, 4, 8, 16):
            raise ValueError("no alignment possible for fetches of size %r (the sizes are "
                             "1, 2, 4, 8 and 16 bytes)" % (word_size,))
        return min(self.warp_size * word_size, 128)

    def align(self, bytes, word_size=4):  # noqa: A002 - pycuda's parameter name
        """A byte count rounded up to the coalescing alignment, ``align_bytes(word_size)``.

        For the pitch of a row, say, so that each row starts where a warp's loads
        coalesce.

        Parameters
        ----------
        bytes : int
            The byte count.
        word_size : {1, 2, 4, 8, 16}, optional
            Bytes per word the kernel loads; default 4.

        Returns
        -------
        int

        Raises
        ------
        ValueError
            Another `word_size`.

        Examples
        --------
        >>> from gpuhost import tools
        >>> dd = tools.DeviceData(0)
        >>> dd.align(100), dd.align(200), dd.align(100, word_size=1)
        (128, 256, 128)
        """
        return _round_up(bytes, self.align_bytes(word_size))

    def align_words(self, word_size):
        """The coalescing alignment in words of `word_size` bytes.

        ``align_bytes(word_size) // word_size``: how many such words a warp's aligned
        loads cover.

        Parameters
        ----------
        word_size : {1, 2, 4, 8, 16}
            Bytes per word.

        Returns
        -------
        int

        Raises
        ------
        ValueError
            Another `word_size`.

        Examples
        --------
        >>> from gpuhost import tools
        >>> dd = tools.DeviceData(0)
        >>> dd.align_words(1), dd.align_words(4), dd.align_words(8)
        (32, 32, 16)
        """
        return self.align_bytes(word_size) // word_size

    def align_dtype(self, elements, dtype_size):
        """An element count rounded up to a whole number of aligned words of `dtype_size` bytes.

        The row length, in elements, that keeps each row of a 2D array aligned
        (``align_words(dtype_size)`` elements at a time).

        Parameters
        ----------
        elements : int
            The element count.
        dtype_size : {1, 2, 4, 8, 16}
            Bytes per element.

        Returns
        -------
        int

        Raises
        ------
        ValueError
            Another `dtype_size`.

        Examples
        --------
        >>> from gpuhost import tools
        >>> dd = tools.DeviceData(0)
        >>> dd.align_dtype(100, 4), dd.align_dtype(10, 8)
        (128, 16)
        """
        return _round_up(elements, self.align_words(dtype_size))

    def coalesce(self, thread_count):
        """A thread count rounded up to a whole number of warps.

        Parameters
        ----------
        thread_count : int
            The number of threads.

        Returns
        -------
        int

        Examples
        --------
        >>> from gpuhost import tools
        >>> dd = tools.DeviceData(0)
        >>> dd.coalesce(1), dd.coalesce(33), dd.coalesce(64)
        (32, 64, 64)
        """
        return _round_up(thread_count, self.warp_size)

    @staticmethod
    def make_valid_tex_channel_count(size):
        """The smallest texture channel count (1, 2 or 4) that holds `size` channels.

        Parameters
        ----------
        size : int
            The channels wanted.

        Returns
        -------
        int

        Raises
        ------
        ValueError
            `size` is more than 4.

        Examples
        --------
        >>> from gpuhost import tools
        >>> [tools.DeviceData.make_valid_tex_channel_count(n) for n in (1, 2, 3, 4)]
        [1, 2, 4, 4]
        """
        for valid in (1, 2, 4):
            if size <= valid:
                return valid
        raise ValueError("could not enlarge argument to valid channel count: a texture "
                         "has 1, 2 or 4 channels, not %r" % (size,))

    def __repr__(self):
        return "<DeviceData of device %d (%s), cc %d.%d>" % (
            (self.device.id, self.device.name) + tuple(self.compute_capability))


class OccupancyRecord:
    """How many blocks of `threads` threads, each using `shared_mem` bytes of shared
    memory (static and dynamic together) and `registers` registers per thread, fit on one
    multiprocessor of `devdata`'s device, by the rules of CUDA's occupancy calculator.

    Attributes, as in pycuda: ``tb_per_mp`` (resident blocks per multiprocessor),
    ``limited_by`` ("device": blocks per multiprocessor, "warps", "regs" or "smem"; on a
    tie the alphabetically first, as pycuda), ``tb_per_mp_limits`` (every limit as
    ``(blocks, name)``), ``warps_per_mp`` and ``occupancy`` (resident warps over the
    most a multiprocessor holds).  A block above the device's per-block limits raises
    ValueError.  Blocks using more than ``devdata.shared_memory`` bytes need
    ``kernel.max_dynamic_shared_size_bytes`` raised (opt-in), which this assumes.

    Parameters
    ----------
    devdata : DeviceData
        The device.
    threads : int
        Threads per block.
    shared_mem : int, optional
        Bytes of shared memory per block; default 0.
    registers : int, optional
        Registers per thread; default 0.

    Raises
    ------
    ValueError
        The block does not fit on a multiprocessor: too many threads, registers or
        bytes of shared memory.

    Examples
    --------
    >>> from gpuhost import tools
    >>> dd = tools.DeviceData(0)
    >>> occ = tools.OccupancyRecord(dd, threads=256, registers=32)
    >>> occ.tb_per_mp, occ.limited_by, occ.occupancy   # on an H100
    (8, 'regs', 1.0)
    >>> tools.OccupancyRecord(dd, 128, shared_mem=48 * 1024).limited_by
    'smem'
    """

    def __init__(self, devdata, threads, shared_mem=0, registers=0):
        threads = operator.index(threads)
        shared_mem = operator.index(shared_mem)
        registers = operator.index(registers)
        if threads < 1:
            raise ValueError("threads per block must be at least 1, not %d" % threads)
        if shared_mem < 0 or registers < 0:
            raise ValueError("shared_mem and registers cannot be negative (%d, %d)"
                             % (shared_mem, registers))
        if threads > devdata.max_threads:
            raise ValueError("too many threads: %d per block, the device allows %d"
                             % (threads, devdata.max_threads))
        if registers > devdata.max_registers_per_thread:
            raise ValueError("too many registers: %d per thread, the device allows %d"
                             % (registers, devdata.max_registers_per_thread))
        warps = -(-threads // devdata.warp_size)
        regs_per_warp = _round_up(registers * devdata.warp_size,
                                  devdata.register_allocation_granularity)
        parts = devdata.warp_allocation_granularity
        # Registers are split evenly over the sub-partitions, each holding whole warps.
        regs_limit = ((devdata.registers_per_mp // parts // regs_per_warp) * parts // warps
                      if regs_per_warp else None)
        if regs_per_warp * warps > devdata.registers or regs_limit == 0:
            raise ValueError("too many registers: %d threads of %d registers do not fit in "
                             "one multiprocessor (%d registers per block, %d per "
                             "multiprocessor)" % (threads, registers, devdata.registers,
                                                  devdata.registers_per_mp))
        smem = _round_up(shared_mem + devdata.reserved_shared_memory,
                         devdata.smem_alloc_granularity)
        smem_max = devdata.shared_memory_per_block_optin + devdata.reserved_shared_memory
        if smem > smem_max:
            raise ValueError("too much smem: %d bytes per block, the device allows %d"
                             % (shared_mem, devdata.shared_memory_per_block_optin))
        self.tb_per_mp_limits = [(devdata.thread_blocks_per_mp, "device"),
                                 (devdata.warps_per_mp // warps, "warps")]
        if regs_limit is not None:
            self.tb_per_mp_limits.append((regs_limit, "regs"))
        if smem:
            self.tb_per_mp_limits.append((devdata.shared_memory_per_mp // smem, "smem"))
        self.tb_per_mp, self.limited_by = min(self.tb_per_mp_limits)
        self.warps_per_mp = self.tb_per_mp * warps
        self.occupancy = self.warps_per_mp / devdata.warps_per_mp

    def __repr__(self):
        return "<OccupancyRecord: %d blocks per multiprocessor (%s), occupancy %.3f>" % (
            self.tb_per_mp, self.limited_by, self.occupancy)


# ---- tests ----

def mark_cuda_test(func):
    """Decorator for a test (pycuda's): run it with a context current, then clean up.

    The test runs with `make_default_context`'s context current; afterwards the context
    is popped, the context caches cleared (`clear_context_caches`) and garbage
    collected. With pytest installed the test is also marked ``cuda``, which gpuhost's
    pytest plugin skips where CUDA is not usable.

    Parameters
    ----------
    func : callable
        The test function.

    Returns
    -------
    callable

    Examples
    --------
    >>> from gpuhost import tools
    >>> @tools.mark_cuda_test
    ... def test_roundtrip():
    ...     a = np.arange(10.0)
    ...     assert (gpuhost.to_device(a).copy_to_host() == a).all()
    >>> test_roundtrip()
    """

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        ctx = make_default_context()
        try:
            return func(*args, **kwargs)
        finally:
            try:
                ctx.pop()
            finally:
                clear_context_caches()
                gc.collect()

    try:
        import pytest
    except ImportError:
        return wrapper
    return pytest.mark.cuda(wrapper)
