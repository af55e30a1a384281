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
    return memory_manager.context_memory_manager(ctx).memalloc(bytesize)


def memallocmanaged(ctx, bytesize, attach_global=True):
    with ctx.device:
        return memory_manager.context_memory_manager(ctx).memallocmanaged(bytesize,
                                                                          attach_global)


def memhostalloc(ctx, bytesize, mapped=False, portable=False, wc=False):
    with ctx.device:
        return memory_manager.context_memory_manager(ctx).memhostalloc(bytesize, mapped,
                                                                       portable, wc)


def mempin(ctx, owner, pointer, size, mapped=False):
    if mapped and not ctx.device.CAN_MAP_HOST_MEMORY:
        raise CudaDriverError("%s cannot map host memory" % ctx.device)
    with ctx.device:
        return memory_manager.context_memory_manager(ctx).mempin(owner, pointer, size, mapped)


def get_ipc_handle(ctx, memory):
    if not sys.platform.startswith("linux"):
        raise OSError("OS does not support CUDA IPC")
    with ctx.device:
        return memory_manager.context_memory_manager(ctx).get_ipc_handle(memory)


def open_ipc_handle(ctx, handle, size):
    return memory_manager.IpcHandle(None, handle, size).open(ctx)


def create_stream(ctx):
    with ctx.device:
        return _core.stream()


def create_external_stream(ctx, ptr):
    if not isinstance(ptr, int):
        raise TypeError("ptr for external stream must be an int")
    with ctx.device:
        return _core.external_stream(ptr)


def create_event(ctx, timing=True):
    with ctx.device:
        return _core.event(timing=timing)


def get_default_stream(ctx):
    return _core.default_stream()


def get_legacy_default_stream(ctx):
    return _core.legacy_default_stream()


def get_per_thread_default_stream(ctx):
    return _core.per_thread_default_stream()


def prepare_for_use(ctx):
    with ctx.device:
        memory_manager.context_memory_manager(ctx).initialize()


def defer_cleanup(ctx):
    return memory_manager.context_memory_manager(ctx).defer_cleanup()


def get_memory_manager(ctx):
    return memory_manager.context_memory_manager(ctx)


def set_memory_manager(ctx, manager):
    memory_manager.set_context_memory_manager(ctx, manager)


def get_deallocations(ctx):
    mgr = memory_manager.context_memory_manager(ctx)
    deallocs = getattr(mgr, "deallocations", None)
    return deallocs if deallocs is not None else memory_manager.PendingDeallocs(ctx)


# ---- modules and occupancy ----
#
# numba's create_module_ptx() returns a weak proxy of a module that the context keeps until
# unload_module(); gpuhost's Module is a plain object that its kernels keep alive, so the
# context keeps no table of them (a Module holds its Context, and a table would be a cycle).

def create_module_ptx(ctx, ptx):
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
