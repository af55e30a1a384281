"""An External Memory Management plugin written as one is for numba (RMM's shape): device
memory from a pool of its own, host memory left to the HostOnlyCUDAMemoryManager base, IPC
handles from GetIpcHandleMixin.  It records what gpuhost asks of it in EVENTS.

tests/test_pools.py installs it with set_memory_manager() and, in fresh interpreters,
through GPUHOST_CUDA_MEMORY_MANAGER / NUMBA_CUDA_MEMORY_MANAGER=emm_plugin."""
import contextlib
import ctypes

from gpuhost import _core
from gpuhost.memory_manager import (
    GetIpcHandleMixin,
    HostOnlyCUDAMemoryManager,
    MemoryInfo,
    MemoryPointer,
)

EVENTS = []  # ("initialize", device id) / ("memalloc", size) / ("free", size) / ("reset",)...


class RecordingManager(GetIpcHandleMixin, HostOnlyCUDAMemoryManager):
    """Every block is a cuMemAlloc of its own (a 'plain' gpuhost Pool), freed by the
    MemoryPointer's finalizer."""

    def initialize(self):
        EVENTS.append(("initialize", self.context.device.id))
        if getattr(self, "pool", None) is None:
            self.pool = _core.Pool("device", "plain")
            self.live = {}

    def memalloc(self, size):
        alloc = self.pool.allocate(size)
        ptr = alloc.ptr
        live = self.live
        live[ptr] = alloc
        EVENTS.append(("memalloc", size))

        def finalizer():
            EVENTS.append(("free", size))
            owned = live.pop(ptr, None)
            if owned is not None:
                owned.close()

        return MemoryPointer(self.context, ctypes.c_uint64(ptr), size, finalizer=finalizer)

    def get_memory_info(self):
        info = self.context.get_memory_info()
        return MemoryInfo(free=info.free, total=info.total)

    def reset(self):
        EVENTS.append(("reset",))
        super().reset()
        for alloc in list(getattr(self, "live", {}).values()):
            alloc.close()  # may be called before initialize(): guarded by getattr

    @contextlib.contextmanager
    def defer_cleanup(self):
        EVENTS.append(("defer_cleanup",))
        with super().defer_cleanup():
            yield

    @property
    def interface_version(self):
        return 1


_numba_memory_manager = RecordingManager
