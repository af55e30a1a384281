"""numba's Context methods, for gpuhost's Context (csrc/context.c forwards to these).

numba users call them on ``cuda.current_context()``: allocation through the context's
memory manager (memalloc, memhostalloc, mempin, memallocmanaged, returning numba's
MemoryPointer family), IPC handles, streams and events, and the manager itself.
"""
import sys

from . import _core, memory_manager
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
