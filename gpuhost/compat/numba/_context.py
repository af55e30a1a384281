"""numba's Context methods, written in Python and attached to gpuhost's Context here.

numba users call them on ``cuda.current_context()``: allocation through the context's
memory manager (memalloc, memhostalloc, mempin, memallocmanaged, returning numba's
MemoryPointer family), IPC handles, streams and events, the manager itself
(``memory_manager``, ``deallocations``), and loading PTX with the occupancy queries of
its kernels. gpuhost.memory_manager is imported on first use, not with gpuhost.
"""
import ctypes
import operator
import sys

from ... import _code_images, _core, _methods
from ...errors import CudaDriverError


def _manager(ctx):
    """The memory manager `ctx` allocates through (an EMM plugin's, or gpuhost's own)."""
    from . import memory_manager

    return memory_manager.context_memory_manager(ctx)


@_methods.method(_core.Context)
def memalloc(self, bytesize):
    """Allocate device memory from the context's memory manager, as numba's.

    Parameters
    ----------
    bytesize : int
        Bytes to allocate.

    Returns
    -------
    MemoryPointer
        device_pointer, device_ctypes_pointer, view(), memset(), free(); the memory is
        freed when the last reference dies.

    Examples
    --------
    >>> m = gpuhost.current_context().memalloc(1024)
    >>> m.size
    1024
    """
    return _manager(self).memalloc(bytesize)


@_methods.method(_core.Context)
def memallocmanaged(self, bytesize, attach_global=True):
    """Allocate managed (unified) memory from the context's memory manager, as numba's.

    cuMemAllocManaged: one address valid on the host and the devices; the driver migrates
    the pages where they are used.

    Parameters
    ----------
    bytesize : int
        Bytes to allocate.
    attach_global : bool, optional
        True (the default): any stream on any device may access it
        (CU_MEM_ATTACH_GLOBAL); False: only the host, until attached to a stream.

    Returns
    -------
    gpuhost.memory_manager.OwnedPointer
        A MemoryPointer (device_pointer, size, view(), ...); the memory is freed when the
        last reference dies.

    Raises
    ------
    gpuhost.CudaAPIError
        If the device has no managed memory or not that much free.

    Examples
    --------
    >>> m = gpuhost.current_context().memallocmanaged(1024)
    >>> m.size
    1024
    """
    with self.device:
        return _manager(self).memallocmanaged(bytesize, attach_global)


@_methods.method(_core.Context)
def memhostalloc(self, bytesize, mapped=False, portable=False, wc=False):
    """Allocate page-locked host memory from the context's memory manager, as numba's.

    cuMemHostAlloc. Copies from and to page-locked memory are faster than from pageable
    memory and can overlap other work.

    Parameters
    ----------
    bytesize : int
        Bytes to allocate.
    mapped : bool, optional
        Also map it into the device's address space (CU_MEMHOSTALLOC_DEVICEMAP), so kernels
        can read and write it directly.
    portable : bool, optional
        Page-locked for every context, not only this one (CU_MEMHOSTALLOC_PORTABLE).
    wc : bool, optional
        Write-combined: faster for the device to read, slow for the host to read.

    Returns
    -------
    gpuhost.memory_manager.PinnedMemory or gpuhost.memory_manager.MappedOwnedPointer
        A MappedOwnedPointer (with a device address) if `mapped`, else a PinnedMemory;
        both have host_pointer and size, as numba's (numba's pinned_array wraps them).

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> h = ctx.memhostalloc(64)
    >>> h.size, h.host_pointer != 0
    (64, True)
    >>> ctx.memhostalloc(64, mapped=True).device_pointer.value != 0
    True
    """
    with self.device:
        return _manager(self).memhostalloc(bytesize, mapped, portable, wc)


@_methods.method(_core.Context)
def mempin(self, owner, pointer, size, mapped=False):
    """Page-lock existing host memory, as numba's (cuMemHostRegister).

    The memory stays page-locked until the returned object dies; `owner` is kept alive until
    then.

    Parameters
    ----------
    owner : object
        What owns the memory (a NumPy array, say).
    pointer : int
        Its host address.
    size : int
        Bytes.
    mapped : bool, optional
        Also map it into the device's address space.

    Returns
    -------
    gpuhost.memory_manager.PinnedMemory
        Or a mapped pointer with a device address, if `mapped`.

    Raises
    ------
    gpuhost.CudaDriverError
        If `mapped` and the device cannot map host memory.
    gpuhost.CudaAPIError
        If the driver refuses (such as memory registered already).

    Examples
    --------
    >>> a = np.zeros(16)
    >>> p = gpuhost.current_context().mempin(a, a.ctypes.data, a.nbytes)
    >>> p.size
    128
    """
    if mapped and not self.device.CAN_MAP_HOST_MEMORY:
        raise CudaDriverError("%s cannot map host memory" % self.device)
    with self.device:
        return _manager(self).mempin(owner, pointer, size, mapped)


@_methods.method(_core.Context)
def get_ipc_handle(self, memory):
    """An IPC handle of device memory, for another process to open (cuIpcGetMemHandle).

    Parameters
    ----------
    memory : gpuhost.memory_manager.MemoryPointer
        Memory allocated in this context (memalloc(), or a device array's gpu_data).

    Returns
    -------
    gpuhost.memory_manager.IpcHandle
        Picklable; the other process opens it with its open() or with open_ipc_handle().

    Raises
    ------
    OSError
        Where the OS has no CUDA IPC (only Linux has).
    gpuhost.CudaAPIError
        If the driver refuses (such as memory from a pool without IPC).

    Examples
    --------
    >>> import pickle
    >>> ctx = gpuhost.current_context()
    >>> h = ctx.get_ipc_handle(ctx.memalloc(256))
    >>> h.size
    256
    >>> data = pickle.dumps(h)  # send to another process
    """
    if not sys.platform.startswith("linux"):
        raise OSError("OS does not support CUDA IPC")
    with self.device:
        return _manager(self).get_ipc_handle(memory)


@_methods.method(_core.Context)
def open_ipc_handle(self, handle, size):
    """Open another process's IPC memory handle (cuIpcOpenMemHandle), as numba's.

    The memory is mapped into this context until the returned pointer dies. A process cannot
    open its own handles.

    Parameters
    ----------
    handle : bytes
        The 64-byte cudaIpcMemHandle_t (an IpcHandle's ``handle``).
    size : int
        Bytes of the memory.

    Returns
    -------
    gpuhost.memory_manager.MemoryPointer

    Raises
    ------
    gpuhost.CudaAPIError
        If the driver refuses the handle.

    Examples
    --------
    >>> ipc = pickle.loads(data)  # from get_ipc_handle() in another process  # doctest: +SKIP
    >>> ctx = gpuhost.current_context()
    >>> ptr = ctx.open_ipc_handle(ipc.handle, ipc.size)  # doctest: +SKIP
    """
    from .memory_manager import IpcHandle

    return IpcHandle(None, handle, size).open(self)


@_methods.method(_core.Context)
def create_stream(self):
    """A new stream in this context, as numba's.

    As gpuhost.stream(): blocking (it synchronizes with the legacy default stream), default
    priority.

    Returns
    -------
    gpuhost.Stream

    Examples
    --------
    >>> s = gpuhost.current_context().create_stream()
    >>> s.query()
    True
    """
    with self.device:
        return _core.stream()


@_methods.method(_core.Context)
def create_external_stream(self, ptr):
    """A Stream over a CUstream made elsewhere (by CuPy, PyTorch, ...), as numba's.

    gpuhost does not own it: the caller keeps it alive while the Stream is used.

    Parameters
    ----------
    ptr : int
        The CUstream handle.

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
    >>> owned = ctx.create_stream()
    >>> ext = ctx.create_external_stream(owned.handle)
    >>> ext.handle == owned.handle
    True
    """
    if not isinstance(ptr, int):
        raise TypeError("ptr for external stream must be an int")
    with self.device:
        return _core.external_stream(ptr)


@_methods.method(_core.Context)
def create_event(self, timing=True):
    """A new event in this context, as numba's.

    Parameters
    ----------
    timing : bool, optional
        True (the default): it records timestamps for elapsed_time(); False is cheaper.

    Returns
    -------
    gpuhost.Event

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> e = ctx.create_event()
    >>> e.record(ctx.create_stream())
    >>> e.synchronize()
    >>> e.query()
    True
    """
    with self.device:
        return _core.event(timing=timing)


@_methods.method(_core.Context)
def get_default_stream(self):
    """The default stream, as numba's: what stream=0 means.

    The legacy default stream, or the per-thread one where numba's
    CUDA_PER_THREAD_DEFAULT_STREAM setting is on (as gpuhost.default_stream()).

    Returns
    -------
    gpuhost.Stream

    Examples
    --------
    >>> gpuhost.current_context().get_default_stream()
    <Default CUDA stream on device 0>
    """
    return _core.default_stream()


@_methods.method(_core.Context)
def get_legacy_default_stream(self):
    """The legacy default stream (CU_STREAM_LEGACY), as numba's.

    It synchronizes with every blocking stream of the context.

    Returns
    -------
    gpuhost.Stream

    Examples
    --------
    >>> gpuhost.current_context().get_legacy_default_stream()
    <Legacy default CUDA stream on device 0>
    """
    return _core.legacy_default_stream()


@_methods.method(_core.Context)
def get_per_thread_default_stream(self):
    """The calling thread's per-thread default stream (CU_STREAM_PER_THREAD), as numba's.

    Returns
    -------
    gpuhost.Stream

    Examples
    --------
    >>> gpuhost.current_context().get_per_thread_default_stream()
    <Per-thread default CUDA stream on device 0>
    """
    return _core.per_thread_default_stream()


@_methods.method(_core.Context)
def prepare_for_use(self):
    """Initialize the context's memory manager, as numba does on every push.

    Calls the manager's initialize(); a manager set with set_memory_manager() is
    initialized here before its first allocation. Calling it again is harmless.

    Examples
    --------
    >>> gpuhost.current_context().prepare_for_use()
    """
    with self.device:
        _manager(self).initialize()


@_methods.method(_core.Context)
def defer_cleanup(self):
    """A context manager that holds releases of memory until it ends, as numba's.

    Memory whose last reference dies inside the block is freed when the block ends (the
    memory manager's defer_cleanup()): for code that must not synchronize, as freeing can.

    Returns
    -------
    context manager

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> with ctx.defer_cleanup():
    ...     m = ctx.memalloc(1024)
    ...     del m  # freed when the block ends
    """
    return _manager(self).defer_cleanup()


def get_memory_manager(self):
    """The context's memory manager (numba's EMM interface).

    An EMM plugin's instance, or gpuhost's DefaultMemoryManager. Assigning a plugin
    instance makes this context's device arrays allocate through it.

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> ctx.memory_manager
    <gpuhost.memory_manager.DefaultMemoryManager object at 0x...>
    >>> ctx.memory_manager.interface_version
    1
    """
    return _manager(self)


def set_memory_manager(self, manager):
    """``Context.memory_manager = manager``: the context's device arrays allocate through
    `manager` from now on (initialize()-d here)."""
    from . import memory_manager

    memory_manager.set_context_memory_manager(self, manager)


def _delete_memory_manager(self):
    raise AttributeError("memory_manager cannot be deleted")


def get_deallocations(self):
    """numba's pending-deallocation queue, the freed blocks the default pool holds.

    It has len() (the blocks) and clear() (give them back to the driver).

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> d = gpuhost.device_array(1 << 20, np.uint8)
    >>> del d  # its block goes back to the pool
    >>> len(ctx.deallocations) > 0
    True
    >>> ctx.deallocations.clear()
    >>> len(ctx.deallocations)
    0
    """
    mgr = _manager(self)
    deallocs = getattr(mgr, "deallocations", None)
    if deallocs is not None:
        return deallocs
    from .memory_manager import PendingDeallocs

    return PendingDeallocs(self)


_methods.attribute(_core.Context, "memory_manager", get_memory_manager, set_memory_manager,
                   _delete_memory_manager)
_methods.attribute(_core.Context, "deallocations", get_deallocations)


# ---- modules and occupancy ----
#
# numba's create_module_ptx() returns a weak proxy of a module that the context keeps until
# unload_module(); gpuhost's Module is a plain object that its kernels keep alive, so the
# context keeps no table of them (a Module holds its Context, and a table would be a cycle).

@_methods.method(_core.Context)
def create_module_ptx(self, ptx):
    """Load PTX into this context, as numba's.

    Parameters
    ----------
    ptx : str or bytes
        PTX text. gpuhost.Module() loads cubins and fatbins.

    Returns
    -------
    Module
        Its get_function(name) gives a Kernel.

    Raises
    ------
    TypeError
        If `ptx` is neither str nor bytes.
    ValueError
        For a cubin or fatbin.
    CudaAPIError
        If the driver refuses the PTX.

    Examples
    --------
    >>> src = 'extern "C" __global__ void k(float *x) { x[threadIdx.x] = 1; }'
    >>> ptx = gpuhost.compile_ptx_for_current_device(src)  # doctest: +SKIP
    >>> k = gpuhost.current_context().create_module_ptx(ptx).get_function('k')  # doctest: +SKIP
    """
    if isinstance(ptx, str):
        ptx = ptx.encode("utf-8")
    elif isinstance(ptx, (bytes, bytearray, memoryview)):
        ptx = bytes(ptx)
    else:
        raise TypeError("create_module_ptx() takes PTX text (str or bytes), not %s"
                        % type(ptx).__name__)
    if ptx.startswith((_code_images.ELF_MAGIC, _code_images.FATBIN_MAGIC)):
        raise ValueError("create_module_ptx() takes PTX text; these bytes are a cubin or a "
                         "fatbin: load them with gpuhost.Module()")
    with self.device:
        return _core.Module(ptx)


@_methods.method(_core.Context)
def unload_module(self, module):
    """Unload a module loaded in this context (Module.unload()), as numba's.

    Its kernels cannot be launched afterwards.

    Parameters
    ----------
    module : gpuhost.Module
        From create_module_ptx() (or gpuhost.Module()) in this context.

    Raises
    ------
    TypeError
        If `module` is not a Module.
    ValueError
        If it was loaded in another context.

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> ctx.unload_module(ctx.create_module_ptx(ptx))  # doctest: +SKIP
    >>> ctx.unload_module("not a module")
    Traceback (most recent call last):
        ...
    TypeError: unload_module() takes a Module (create_module_ptx()), not str
    """
    if not isinstance(module, _core.Module):
        raise TypeError("unload_module() takes a Module (create_module_ptx()), not %s"
                        % type(module).__name__)
    if module.context is not self:
        raise ValueError("the module was loaded in %r, not in %r" % (module.context, self))
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


@_methods.method(_core.Context)
def get_active_blocks_per_multiprocessor(self, func, blocksize, memsize, flags=None):
    """numba's occupancy query: how many blocks fit on one multiprocessor.

    Kernel.max_active_blocks_per_multiprocessor() asks the same of a kernel.

    Parameters
    ----------
    func : Kernel
        A kernel loaded in this context.
    blocksize : int
        Threads per block.
    memsize : int
        Bytes of dynamic shared memory per block.
    flags : None or 0, optional
        CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE is not supported.

    Returns
    -------
    int

    Raises
    ------
    TypeError
        If `func` is not a Kernel.
    ValueError
        If `func` belongs to another context, or for unknown `flags`.
    NotImplementedError
        For CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE.

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> blocks = ctx.get_active_blocks_per_multiprocessor(k, 256, 0)  # doctest: +SKIP
    >>> ctx.get_active_blocks_per_multiprocessor('k', 256, 0)
    Traceback (most recent call last):
        ...
    TypeError: get_active_blocks_per_multiprocessor() takes a Kernel (Module.get_function()), not str
    """
    _check_flags(flags, "get_active_blocks_per_multiprocessor")
    kernel = _occupancy_kernel(self, func, "get_active_blocks_per_multiprocessor")
    with self.device:
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


@_methods.method(_core.Context)
def get_max_potential_block_size(self, func, b2d_func, memsize, blocksizelimit, flags=None):
    """numba's launch configurator: the block size that keeps most threads resident.

    Parameters
    ----------
    func : Kernel
        A kernel loaded in this context.
    b2d_func : callable, int or None
        The dynamic shared memory of a block size: a callable, or the address of a C
        function size_t (*)(int). 0 or None: `memsize` bytes at every size.
    memsize : int
        Bytes of dynamic shared memory per block, when `b2d_func` is None.
    blocksizelimit : int
        The largest block size to consider; 0: no limit.
    flags : None or 0, optional
        As for get_active_blocks_per_multiprocessor().

    Returns
    -------
    tuple of int
        (min_grid_size, block_size): the block size, and the smallest grid that fills
        the device with it.

    Examples
    --------
    >>> ctx = gpuhost.current_context()
    >>> grid, block = ctx.get_max_potential_block_size(k, None, 0, 0)  # doctest: +SKIP
    """
    _check_flags(flags, "get_max_potential_block_size")
    smem_of = _b2d_callable(b2d_func)
    kernel = _occupancy_kernel(self, func, "get_max_potential_block_size")
    with self.device:
        if smem_of is None:
            return kernel.max_potential_block_size(memsize, blocksizelimit)
        blocksizelimit = operator.index(blocksizelimit)
        if blocksizelimit < 0:
            raise ValueError("blocksizelimit must not be negative (0: no limit), not %d"
                             % blocksizelimit)
        dev = self.device
        limit = min(dev.MAX_THREADS_PER_BLOCK, kernel.max_threads_per_block)
        if blocksizelimit:
            limit = min(limit, blocksizelimit)
        return _best_block_size(kernel.max_active_blocks_per_multiprocessor, smem_of, limit,
                               dev.WARP_SIZE, dev.MAX_THREADS_PER_MULTIPROCESSOR,
                               dev.MULTIPROCESSOR_COUNT)
