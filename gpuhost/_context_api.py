"""numba's Context methods, for gpuhost's Context (csrc/context.c forwards to these).

numba users call them on ``cuda.current_context()``: allocation through the context's
memory manager (memalloc, memhostalloc, mempin, memallocmanaged, returning numba's
MemoryPointer family), IPC handles, streams and events, the manager itself, and loading
PTX with the occupancy queries of its kernels.
"""
import ctypes
import operator
import sys

from . import _core, _modules, memory_manager
from .errors import CudaDriverError


def memalloc(ctx, bytesize):
    """Allocate device memory from the context's memory manager.

    What ``ctx.memalloc(...)`` runs (csrc/context.c forwards to it), as numba's
    Context.memalloc.

    Parameters
    ----------
    ctx : gpuhost.Context
        The context (`Context.memalloc` passes itself).
    bytesize : int
        Bytes.

    Returns
    -------
    gpuhost.memory_manager.MemoryPointer

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> ctx.memalloc(256).size
    256
    """
    return memory_manager.context_memory_manager(ctx).memalloc(bytesize)


def memallocmanaged(ctx, bytesize, attach_global=True):
    """Allocate managed memory from the context's memory manager.

    What ``ctx.memallocmanaged(...)`` runs (csrc/context.c forwards to it), as numba's
    Context.memallocmanaged.

    Parameters
    ----------
    ctx : gpuhost.Context
        The context (`Context.memallocmanaged` passes itself).
    bytesize : int
        Bytes.
    attach_global : bool, optional
        False: attached to the host only.

    Returns
    -------
    gpuhost.memory_manager.OwnedPointer

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> ctx.memallocmanaged(256).size
    256
    """
    with ctx.device:
        return memory_manager.context_memory_manager(ctx).memallocmanaged(bytesize,
                                                                          attach_global)


def memhostalloc(ctx, bytesize, mapped=False, portable=False, wc=False):
    """Allocate page-locked host memory from the context's memory manager.

    What ``ctx.memhostalloc(...)`` runs (csrc/context.c forwards to it), as numba's
    Context.memhostalloc.

    Parameters
    ----------
    ctx : gpuhost.Context
        The context (`Context.memhostalloc` passes itself).
    bytesize : int
        Bytes.
    mapped, portable, wc : bool, optional
        cuMemHostAlloc's DEVICEMAP, PORTABLE and WRITECOMBINED flags.

    Returns
    -------
    gpuhost.memory_manager.PinnedMemory or gpuhost.memory_manager.MappedOwnedPointer

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> ctx.memhostalloc(64).size
    64
    """
    with ctx.device:
        return memory_manager.context_memory_manager(ctx).memhostalloc(bytesize, mapped,
                                                                       portable, wc)


def mempin(ctx, owner, pointer, size, mapped=False):
    """Page-lock existing host memory through the context's memory manager.

    What ``ctx.mempin(...)`` runs (csrc/context.c forwards to it), as numba's
    Context.mempin.

    Parameters
    ----------
    ctx : gpuhost.Context
        The context (`Context.mempin` passes itself).
    owner : object
        Kept alive while pinned.
    pointer : int
        The host address.
    size : int
        Bytes.
    mapped : bool, optional
        Also map it into the device.

    Returns
    -------
    gpuhost.memory_manager.PinnedMemory

    Raises
    ------
    gpuhost.CudaDriverError
        If `mapped` and the device cannot map host memory.

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> a = np.zeros(8)
    >>> ctx.mempin(a, a.ctypes.data, a.nbytes).size
    64
    """
    if mapped and not ctx.device.CAN_MAP_HOST_MEMORY:
        raise CudaDriverError("%s cannot map host memory" % ctx.device)
    with ctx.device:
        return memory_manager.context_memory_manager(ctx).mempin(owner, pointer, size, mapped)


def get_ipc_handle(ctx, memory):
    """An IPC handle of device memory for another process.

    What ``ctx.get_ipc_handle(...)`` runs (csrc/context.c forwards to it), as numba's
    Context.get_ipc_handle.

    Parameters
    ----------
    ctx : gpuhost.Context
        The context (`Context.get_ipc_handle` passes itself).
    memory : gpuhost.memory_manager.MemoryPointer
        Memory of this context.

    Returns
    -------
    gpuhost.memory_manager.IpcHandle

    Raises
    ------
    OSError
        Where the OS has no CUDA IPC (not Linux).

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> ctx.get_ipc_handle(ctx.memalloc(128)).size
    128
    """
    if not sys.platform.startswith("linux"):
        raise OSError("OS does not support CUDA IPC")
    with ctx.device:
        return memory_manager.context_memory_manager(ctx).get_ipc_handle(memory)


def open_ipc_handle(ctx, handle, size):
    """Open another process's IPC memory handle in the context.

    What ``ctx.open_ipc_handle(...)`` runs (csrc/context.c forwards to it), as numba's
    Context.open_ipc_handle.

    Parameters
    ----------
    ctx : gpuhost.Context
        The context (`Context.open_ipc_handle` passes itself).
    handle : bytes
        The 64-byte cudaIpcMemHandle_t.
    size : int
        Bytes.

    Returns
    -------
    gpuhost.memory_manager.MemoryPointer

    Raises
    ------
    gpuhost.CudaAPIError
        If the driver refuses it.

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> ptr = ctx.open_ipc_handle(handle, 128)  # from another process  # doctest: +SKIP
    """
    return memory_manager.IpcHandle(None, handle, size).open(ctx)


def create_stream(ctx):
    """A new stream in the context.

    What ``ctx.create_stream(...)`` runs (csrc/context.c forwards to it), as numba's
    Context.create_stream.

    Parameters
    ----------
    ctx : gpuhost.Context
        The context (`Context.create_stream` passes itself).

    Returns
    -------
    gpuhost.Stream

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> ctx.create_stream().query()
    True
    """
    with ctx.device:
        return _core.stream()


def create_external_stream(ctx, ptr):
    """A Stream over a CUstream made elsewhere.

    What ``ctx.create_external_stream(...)`` runs (csrc/context.c forwards to it), as
    numba's Context.create_external_stream.

    Parameters
    ----------
    ctx : gpuhost.Context
        The context (`Context.create_external_stream` passes itself).
    ptr : int
        The CUstream handle; its owner keeps it alive.

    Returns
    -------
    gpuhost.Stream

    Raises
    ------
    TypeError
        If `ptr` is not an int.

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> s = ctx.create_stream()
    >>> ctx.create_external_stream(s.handle).handle == s.handle
    True
    """
    if not isinstance(ptr, int):
        raise TypeError("ptr for external stream must be an int")
    with ctx.device:
        return _core.external_stream(ptr)


def create_event(ctx, timing=True):
    """A new event in the context.

    What ``ctx.create_event(...)`` runs (csrc/context.c forwards to it), as numba's
    Context.create_event.

    Parameters
    ----------
    ctx : gpuhost.Context
        The context (`Context.create_event` passes itself).
    timing : bool, optional
        Whether it records timestamps (default True).

    Returns
    -------
    gpuhost.Event

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> ctx.create_event(timing=False).query()
    True
    """
    with ctx.device:
        return _core.event(timing=timing)


def get_default_stream(ctx):
    """The default stream (what stream=0 means).

    What ``ctx.get_default_stream(...)`` runs (csrc/context.c forwards to it), as numba's
    Context.get_default_stream.

    Parameters
    ----------
    ctx : gpuhost.Context
        The context (`Context.get_default_stream` passes itself).

    Returns
    -------
    gpuhost.Stream

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> ctx.get_default_stream()
    <Default CUDA stream on device 0>
    """
    return _core.default_stream()


def get_legacy_default_stream(ctx):
    """The legacy default stream.

    What ``ctx.get_legacy_default_stream(...)`` runs (csrc/context.c forwards to it), as
    numba's Context.get_legacy_default_stream.

    Parameters
    ----------
    ctx : gpuhost.Context
        The context (`Context.get_legacy_default_stream` passes itself).

    Returns
    -------
    gpuhost.Stream

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> ctx.get_legacy_default_stream()
    <Legacy default CUDA stream on device 0>
    """
    return _core.legacy_default_stream()


def get_per_thread_default_stream(ctx):
    """The calling thread's per-thread default stream.

    What ``ctx.get_per_thread_default_stream(...)`` runs (csrc/context.c forwards to it), as
    numba's Context.get_per_thread_default_stream.

    Parameters
    ----------
    ctx : gpuhost.Context
        The context (`Context.get_per_thread_default_stream` passes itself).

    Returns
    -------
    gpuhost.Stream

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> ctx.get_per_thread_default_stream()
    <Per-thread default CUDA stream on device 0>
    """
    return _core.per_thread_default_stream()


def prepare_for_use(ctx):
    """Initialize the context's memory manager.

    What ``ctx.prepare_for_use(...)`` runs (csrc/context.c forwards to it), as numba's
    Context.prepare_for_use.

    Parameters
    ----------
    ctx : gpuhost.Context
        The context (`Context.prepare_for_use` passes itself).

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> ctx.prepare_for_use()
    """
    with ctx.device:
        memory_manager.context_memory_manager(ctx).initialize()


def defer_cleanup(ctx):
    """A context manager holding releases of memory until it ends.

    What ``ctx.defer_cleanup(...)`` runs (csrc/context.c forwards to it), as numba's
    Context.defer_cleanup.

    Parameters
    ----------
    ctx : gpuhost.Context
        The context (`Context.defer_cleanup` passes itself).

    Returns
    -------
    context manager

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> with ctx.defer_cleanup():
    ...     del_me = ctx.memalloc(64)
    """
    return memory_manager.context_memory_manager(ctx).defer_cleanup()


def get_memory_manager(ctx):
    """The context's memory manager (its ``memory_manager``).

    What ``ctx.get_memory_manager(...)`` runs (csrc/context.c forwards to it), as numba's
    Context.get_memory_manager.

    Parameters
    ----------
    ctx : gpuhost.Context
        The context (`Context.get_memory_manager` passes itself).

    Returns
    -------
    gpuhost.memory_manager.BaseCUDAMemoryManager

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> ctx.memory_manager is ctx.memory_manager
    True
    """
    return memory_manager.context_memory_manager(ctx)


def set_memory_manager(ctx, manager):
    """Give the context another memory manager.

    What ``ctx.set_memory_manager(...)`` runs (csrc/context.c forwards to it), as numba's
    Context.set_memory_manager.

    Parameters
    ----------
    ctx : gpuhost.Context
        The context (`Context.set_memory_manager` passes itself).
    manager : gpuhost.memory_manager.BaseCUDAMemoryManager
        An instance.

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> ctx.memory_manager = ctx.memory_manager  # doctest: +SKIP
    """
    memory_manager.set_context_memory_manager(ctx, manager)


def get_deallocations(ctx):
    """The context's pending deallocations (numba's ``deallocations``).

    What ``ctx.get_deallocations(...)`` runs (csrc/context.c forwards to it), as numba's
    Context.get_deallocations.

    Parameters
    ----------
    ctx : gpuhost.Context
        The context (`Context.get_deallocations` passes itself).

    Returns
    -------
    gpuhost.memory_manager.PendingDeallocs

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> type(ctx.deallocations).__name__
    'PendingDeallocs'
    """
    mgr = memory_manager.context_memory_manager(ctx)
    deallocs = getattr(mgr, "deallocations", None)
    return deallocs if deallocs is not None else memory_manager.PendingDeallocs(ctx)


# ---- modules and occupancy ----
#
# numba's create_module_ptx() returns a weak proxy of a module that the context keeps until
# unload_module(); gpuhost's Module is a plain object that its kernels keep alive, so the
# context keeps no table of them (a Module holds its Context, and a table would be a cycle).

def create_module_ptx(ctx, ptx):
    """Load PTX text into the context.

    What ``ctx.create_module_ptx(...)`` runs (csrc/context.c forwards to it), as numba's
    Context.create_module_ptx.

    Parameters
    ----------
    ctx : gpuhost.Context
        The context (`Context.create_module_ptx` passes itself).
    ptx : str or bytes
        PTX text.

    Returns
    -------
    gpuhost.Module

    Raises
    ------
    TypeError
        For neither str nor bytes.
    ValueError
        For a cubin or fatbin.

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> m = ctx.create_module_ptx(ptx)  # doctest: +SKIP
    """
    if isinstance(ptx, str):
        ptx = ptx.encode("utf-8")
    elif isinstance(ptx, (bytes, bytearray, memoryview)):
        ptx = bytes(ptx)
    else:
        raise TypeError("create_module_ptx() takes PTX text (str or bytes), not %s"
                        % type(ptx).__name__)
    if ptx.startswith((_modules._ELF_MAGIC, _modules._FATBIN_MAGIC)):
        raise ValueError("create_module_ptx() takes PTX text; these bytes are a cubin or a "
                         "fatbin: load them with gpuhost.Module()")
    with ctx.device:
        return _core.Module(ptx)


def unload_module(ctx, module):
    """Unload a module loaded in the context.

    What ``ctx.unload_module(...)`` runs (csrc/context.c forwards to it), as numba's
    Context.unload_module.

    Parameters
    ----------
    ctx : gpuhost.Context
        The context (`Context.unload_module` passes itself).
    module : gpuhost.Module
        From create_module_ptx().

    Raises
    ------
    TypeError
        If `module` is not a Module.
    ValueError
        If it was loaded elsewhere.

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> ctx.unload_module(3)
    Traceback (most recent call last):
        ...
    TypeError: unload_module() takes a Module (create_module_ptx()), not int
    """
    if not isinstance(module, _core.Module):
        raise TypeError("unload_module() takes a Module (create_module_ptx()), not %s"
                        % type(module).__name__)
    if module.context is not ctx:
        raise ValueError("the module was loaded in %r, not in %r" % (module.context, ctx))
    module.unload()


# cuOccupancy*WithFlags' flags (CUoccupancy_flags): CU_OCCUPANCY_DEFAULT is the plain call.
_OCCUPANCY_DEFAULT = 0
_OCCUPANCY_DISABLE_CACHING_OVERRIDE = 1


def _check_flags(flags, method):
    """numba's `flags` for an occupancy query: None or 0 (CU_OCCUPANCY_DEFAULT) is the
    plain query, the only one gpuhost makes."""
    if flags is None or (isinstance(flags, int) and flags == _OCCUPANCY_DEFAULT):
        return
    if isinstance(flags, int) and flags == _OCCUPANCY_DISABLE_CACHING_OVERRIDE:
        raise NotImplementedError(
            "%s(): flags=CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE needs the driver's *WithFlags "
            "occupancy entry points, which gpuhost does not call; pass flags=None" % method)
    raise ValueError("%s(): flags is a CUoccupancy_flags value (0 or 1) or None, not %r"
                     % (method, flags))


def _occupancy_kernel(ctx, func, method):
    """`func` checked for an occupancy query in `ctx`: a Kernel of a module loaded there."""
    if not isinstance(func, _core.Kernel):
        raise TypeError("%s() takes a Kernel (Module.get_function()), not %s"
                        % (method, type(func).__name__))
    if func.module.context is not ctx:
        raise ValueError("%s(): kernel %r was loaded in %r, not in %r"
                         % (method, func.name, func.module.context, ctx))
    return func


def get_active_blocks_per_multiprocessor(ctx, func, blocksize, memsize, flags=None):
    """How many blocks of a kernel fit on one multiprocessor.

    What ``ctx.get_active_blocks_per_multiprocessor(...)`` runs (csrc/context.c forwards to
    it), as numba's Context.get_active_blocks_per_multiprocessor.

    Parameters
    ----------
    ctx : gpuhost.Context
        The context (`Context.get_active_blocks_per_multiprocessor` passes itself).
    func : gpuhost.Kernel
        A kernel of this context.
    blocksize : int
        Threads per block.
    memsize : int
        Dynamic shared memory per block.
    flags : None or 0, optional

    Returns
    -------
    int

    Raises
    ------
    TypeError
        If `func` is not a Kernel.
    ValueError
        Another context's kernel, or bad `flags`.
    NotImplementedError
        For CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE.

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> ctx.get_active_blocks_per_multiprocessor(k, 128, 0)  # doctest: +SKIP
    """
    _check_flags(flags, "get_active_blocks_per_multiprocessor")
    kernel = _occupancy_kernel(ctx, func, "get_active_blocks_per_multiprocessor")
    with ctx.device:
        return kernel.max_active_blocks_per_multiprocessor(blocksize, memsize)


def _b2d_callable(b2d_func):
    """numba's b2d_func as a Python callable, or None for none (0 or None: the dynamic
    shared memory is `memsize` whatever the block size)."""
    is_int = isinstance(b2d_func, int) and not isinstance(b2d_func, bool)
    if b2d_func is None or (is_int and b2d_func == 0):
        return None
    if callable(b2d_func):
        return b2d_func
    if is_int and b2d_func > 0:
        # the address of a C function size_t (*)(int blockSize), as the driver takes it
        return ctypes.CFUNCTYPE(ctypes.c_size_t, ctypes.c_int)(b2d_func)
    raise TypeError("b2d_func is a function of the block size giving the dynamic shared "
                    "memory in bytes, the address of a C one, or 0; not %r" % (b2d_func,))


def _dynamic_smem(smem_of, block):
    """smem_of(block), checked to be a size in bytes."""
    value = smem_of(block)
    try:
        smem = operator.index(value)
    except TypeError:
        smem = -1
    if isinstance(value, bool) or smem < 0:
        raise ValueError("b2d_func(%d) gave %r; it must give the dynamic shared memory in "
                         "bytes, an int >= 0" % (block, value))
    return smem


def _best_block_size(active_blocks, smem_of, limit, warp_size, threads_per_sm, sm_count):
    """(min_grid_size, block_size) by the rule of cuOccupancyMaxPotentialBlockSize (as
    cuda_runtime.h's cudaOccupancyMaxPotentialBlockSizeVariableSMem writes it): try block
    sizes from `limit` down in steps of a warp, keep the first with the most resident
    threads, and stop once a multiprocessor is full. `active_blocks(block, smem)` is the
    driver's answer for one size; `smem_of(block)` the dynamic shared memory it uses."""
    best_block = best_blocks = best_threads = 0
    aligned = -(-limit // warp_size) * warp_size
    for size in range(aligned, 0, -warp_size):
        block = min(limit, size)
        blocks = active_blocks(block, _dynamic_smem(smem_of, block))
        if block * blocks > best_threads:
            best_block, best_blocks, best_threads = block, blocks, block * blocks
        if best_threads == threads_per_sm:
            break
    return best_blocks * sm_count, best_block


def get_max_potential_block_size(ctx, func, b2d_func, memsize, blocksizelimit, flags=None):
    """The block size that keeps most threads of a kernel resident.

    What ``ctx.get_max_potential_block_size(...)`` runs (csrc/context.c forwards to it), as
    numba's Context.get_max_potential_block_size.

    Parameters
    ----------
    ctx : gpuhost.Context
        The context (`Context.get_max_potential_block_size` passes itself).
    func : gpuhost.Kernel
        A kernel of this context.
    b2d_func : callable, int or None
        Dynamic shared memory per block size (or a C function's address;
        0 or None: `memsize`).
    memsize : int
        Dynamic shared memory per block.
    blocksizelimit : int
        The largest block size; 0: none.
    flags : None or 0, optional

    Returns
    -------
    tuple of int
        (min_grid_size, block_size).

    Raises
    ------
    TypeError, ValueError, NotImplementedError
        As get_active_blocks_per_multiprocessor.

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> grid, block = ctx.get_max_potential_block_size(k, None, 0, 0)  # doctest: +SKIP
    """
    _check_flags(flags, "get_max_potential_block_size")
    smem_of = _b2d_callable(b2d_func)
    kernel = _occupancy_kernel(ctx, func, "get_max_potential_block_size")
    with ctx.device:
        if smem_of is None:
            return kernel.max_potential_block_size(memsize, blocksizelimit)
        blocksizelimit = operator.index(blocksizelimit)
        if blocksizelimit < 0:
            raise ValueError("blocksizelimit must not be negative (0: no limit), not %d"
                             % blocksizelimit)
        dev = ctx.device
        limit = min(dev.MAX_THREADS_PER_BLOCK, kernel.max_threads_per_block)
        if blocksizelimit:
            limit = min(limit, blocksizelimit)
        return _best_block_size(kernel.max_active_blocks_per_multiprocessor, smem_of, limit,
                               dev.WARP_SIZE, dev.MAX_THREADS_PER_MULTIPROCESSOR,
                               dev.MULTIPROCESSOR_COUNT)
