"""numba's External Memory Management plugin interface: the base classes a plugin derives
from (BaseCUDAMemoryManager, HostOnlyCUDAMemoryManager, GetIpcHandleMixin) and
gpuhost's own manager as numba's default one is seen (DefaultMemoryManager,
PendingDeallocs); re-exported by gpuhost.memory_manager.
"""
import contextlib
import ctypes
from abc import ABCMeta, abstractmethod

import numpy as np

from ... import _core
from ._emm_ipc import IpcHandle
from ._emm_pointers import (
    AutoFreePointer,
    DevicePointer,
    MappedMemory,
    PinnedMemory,
    _SUPPORTED_EMM_INTERFACE_VERSION,
    _address,
)


# ---- the plugin interface ----

class BaseCUDAMemoryManager(metaclass=ABCMeta):
    """Abstract base class of External Memory Management (EMM) plugins (numba's).

    A plugin implements every abstract method below; `HostOnlyCUDAMemoryManager` already
    does the host side. `set_memory_manager` installs the class; gpuhost then makes one
    instance per context (``self.context``), calls its `initialize` and takes device
    arrays' memory from its `memalloc`, with that context current.

    Parameters
    ----------
    context : gpuhost.Context
        Keyword only: the context the instance serves (None for the instance
        `set_memory_manager` makes to read `interface_version`).

    Raises
    ------
    RuntimeError
        No `context` keyword.

    Examples
    --------
    >>> from gpuhost import memory_manager as mm
    >>> mgr = gpuhost.current_context().memory_manager   # gpuhost's own is one
    >>> isinstance(mgr, mm.BaseCUDAMemoryManager), mgr.context is gpuhost.current_context()
    (True, True)
    """

    def __init__(self, *args, **kwargs):
        if "context" not in kwargs:
            raise RuntimeError("Memory manager requires a context")
        self.context = kwargs.pop("context")

    @abstractmethod
    def memalloc(self, size):
        """Allocate `size` bytes of device memory in the current context.

        Device arrays take their memory from here while the plugin is installed.

        Parameters
        ----------
        size : int
            Bytes to allocate.

        Returns
        -------
        MemoryPointer
            Its finalizer gives the memory back (numba's MemoryPointer works too; an
            `OwnedPointer` of one as well).

        Examples
        --------
        >>> mgr = gpuhost.current_context().memory_manager
        >>> p = mgr.memalloc(1024)
        >>> p.size, p.device_pointer_value != 0
        (1024, True)
        """

    @abstractmethod
    def memhostalloc(self, size, mapped, portable, wc):
        """Allocate page-locked (pinned) host memory.

        `HostOnlyCUDAMemoryManager` implements it with the driver.

        Parameters
        ----------
        size : int
            Bytes to allocate.
        mapped : bool
            Map the memory into the device's address space.
        portable : bool
            Pinned for every context, not only this one.
        wc : bool
            Write-combined.

        Returns
        -------
        MappedMemory or PinnedMemory
            A `MappedMemory` (or an `OwnedPointer` of one) when `mapped`, else a
            `PinnedMemory`.

        Examples
        --------
        >>> mgr = gpuhost.current_context().memory_manager
        >>> mgr.memhostalloc(4096, mapped=False, portable=False, wc=False).size
        4096
        """

    @abstractmethod
    def mempin(self, owner, pointer, size, mapped):
        """Page-lock `size` bytes of existing host memory at address `pointer`.

        `HostOnlyCUDAMemoryManager` implements it with the driver.

        Parameters
        ----------
        owner : object
            What owns the memory (a numpy array, say), kept alive with the result.
        pointer : int or ctypes.c_void_p
            The host address of the first byte.
        size : int
            Bytes to page-lock.
        mapped : bool
            Also map them into the device's address space.

        Returns
        -------
        MappedMemory or PinnedMemory
            A `MappedMemory` (or an `OwnedPointer` of one) when `mapped`, else a
            `PinnedMemory`.

        Examples
        --------
        >>> h = np.zeros(4096, np.uint8)
        >>> mgr = gpuhost.current_context().memory_manager
        >>> pin = mgr.mempin(h, h.ctypes.data, h.nbytes, mapped=False)
        >>> pin.size, pin.owned is h
        (4096, True)
        """

    @abstractmethod
    def initialize(self):
        """Prepare for allocations in the current context.

        gpuhost calls it once the instance is made, with its context current, before the
        first `memalloc`; it may be called more than once, so a second call must not
        undo the first one's work.

        Examples
        --------
        >>> mgr = gpuhost.current_context().memory_manager
        >>> mgr.initialize()
        >>> mgr.initialize()                     # again: nothing changes
        """

    @abstractmethod
    def get_ipc_handle(self, memory):
        """An IpcHandle to share `memory` with another process.

        `GetIpcHandleMixin` implements it with the driver.

        Parameters
        ----------
        memory : MemoryPointer
            Memory this plugin allocated.

        Returns
        -------
        IpcHandle

        Examples
        --------
        >>> mgr = gpuhost.current_context().memory_manager
        >>> h = mgr.get_ipc_handle(mgr.memalloc(1024))
        >>> type(h).__name__, h.size
        ('IpcHandle', 1024)
        """

    @abstractmethod
    def get_memory_info(self):
        """The free and total device memory, in bytes.

        ``Context.get_memory_info()`` asks it while the plugin manages the context.

        Returns
        -------
        MemoryInfo
            A named tuple (free, total).

        Raises
        ------
        RuntimeError or NotImplementedError
            A plugin that cannot tell.

        Examples
        --------
        >>> free, total = gpuhost.current_context().memory_manager.get_memory_info()
        >>> 0 <= free <= total
        True
        """

    @abstractmethod
    def reset(self):
        """Free everything this manager allocated in its context.

        ``Context.reset()`` and ``gpuhost.close()`` call it; memory still in use must not
        be used afterwards.

        Examples
        --------
        >>> from gpuhost import memory_manager as mm
        >>> mgr = mm.DefaultMemoryManager(context=gpuhost.current_context())
        >>> m = mgr.memalloc(1024)
        >>> mgr.reset()                          # m's memory goes back
        """

    @abstractmethod
    def defer_cleanup(self):
        """A context manager during which expensive cleanup is avoided.

        ``gpuhost.defer_cleanup()`` enters it too: memory freed inside the block is given
        back when the block ends.

        Returns
        -------
        context manager

        Examples
        --------
        >>> mgr = gpuhost.current_context().memory_manager
        >>> with mgr.defer_cleanup():
        ...     d = gpuhost.device_array(1024)
        ...     del d                            # released after the block
        """

    @property
    @abstractmethod
    def interface_version(self):
        """The EMM interface version the plugin implements, 1.

        `set_memory_manager` refuses a plugin with another version.

        Examples
        --------
        >>> gpuhost.current_context().memory_manager.interface_version
        1
        """


class HostOnlyCUDAMemoryManager(BaseCUDAMemoryManager):
    """Base class of plugins that manage device memory only (numba's).

    gpuhost does the host side: `memhostalloc`, `mempin` and `memallocmanaged`, and the
    `reset` and `defer_cleanup` that go with them, which a plugin overriding them must
    call through ``super()``. A plugin adds `memalloc`, `initialize`,
    `get_memory_info`, ``get_ipc_handle`` (`GetIpcHandleMixin` has one) and
    `interface_version`.

    Examples
    --------
    >>> from gpuhost import memory, memory_manager as mm
    >>> class CountingManager(mm.GetIpcHandleMixin, mm.HostOnlyCUDAMemoryManager):
    ...     def initialize(self):
    ...         self.count = 0
    ...     def memalloc(self, size):
    ...         mem = memory.Memory(size)          # or RMM, or any allocator
    ...         self.count += 1
    ...         return mm.MemoryPointer(self.context, mem.ptr, size,
    ...                                 finalizer=lambda: mem)  # frees `mem` with it
    ...     def get_memory_info(self):
    ...         return self.context.get_memory_info()
    ...     @property
    ...     def interface_version(self):
    ...         return 1
    >>> mm.set_memory_manager(CountingManager)
    >>> d = gpuhost.device_array(1000)
    >>> mm.get_memory_manager().count
    1
    >>> mm.set_memory_manager(None)        # back to gpuhost's pools
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # key -> the MappedMemory / managed AutoFreePointer of a live allocation: kept
        # here (as numba does) while the OwnedPointers handed out refer to it weakly
        self.allocations = {}

    def _finalizer(self, alloc):
        """(key, the finalizer that releases gpuhost Allocation `alloc`)."""
        key = id(alloc)
        allocations = self.allocations

        def finalizer():
            allocations.pop(key, None)
            try:
                alloc.close()
            except BufferError:
                pass  # numpy arrays still view it: it goes when they do
        return key, finalizer

    def _owned(self, alloc, cls, pointer, size, owner=None):
        """A `cls` (MappedMemory or AutoFreePointer) over `alloc`, kept in allocations;
        its OwnedPointer."""
        key, finalizer = self._finalizer(alloc)
        mem = cls(self.context, pointer, size, owner=owner, finalizer=finalizer)
        self.allocations[key] = mem
        return mem.own()

    def memhostalloc(self, size, mapped=False, portable=False, wc=False):
        """Page-locked host memory (cuMemHostAlloc), freed when the last reference dies.

        Parameters
        ----------
        size : int
            Bytes to allocate.
        mapped : bool, optional
            Map it into the device's address space.
        portable : bool, optional
            Pinned for every context.
        wc : bool, optional
            Write-combined: fast for the host to write and the device to read, slow
            for the host to read.

        Returns
        -------
        OwnedPointer or PinnedMemory
            An OwnedPointer of a `MappedMemory` if `mapped`, else a `PinnedMemory`.

        Examples
        --------
        >>> mgr = gpuhost.current_context().memory_manager
        >>> type(mgr.memhostalloc(4096)).__name__
        'PinnedMemory'
        >>> mgr.memhostalloc(4096, mapped=True).size
        4096
        """
        alloc = _core.mem_alloc(size, "mapped" if mapped else "pinned", portable=portable,
                                wc=wc)
        pointer = ctypes.c_void_p(alloc.host_ptr)
        if mapped:
            return self._owned(alloc, MappedMemory, pointer, size)
        return PinnedMemory(self.context, pointer, size, finalizer=self._finalizer(alloc)[1])

    def mempin(self, owner, pointer, size, mapped=False):
        """Page-lock existing host memory (cuMemHostRegister) until the last reference
        dies.

        Parameters
        ----------
        owner : object
            What owns the memory (a numpy array, say); kept as the result's ``owned``.
        pointer : int or ctypes.c_void_p
            The host address of the first byte.
        size : int
            Bytes to page-lock.
        mapped : bool, optional
            Also map them into the device's address space.

        Returns
        -------
        OwnedPointer or PinnedMemory
            An OwnedPointer of a `MappedMemory` if `mapped`, else a `PinnedMemory`.

        Examples
        --------
        >>> h = np.zeros(1 << 16, np.uint8)
        >>> mgr = gpuhost.current_context().memory_manager
        >>> mgr.mempin(h, h.ctypes.data, h.nbytes, mapped=True).size
        65536
        """
        address = _address(pointer)
        buffer = (ctypes.c_byte * size).from_address(address)
        alloc = _core.mem_register(buffer, mapped=mapped)
        if mapped:
            return self._owned(alloc, MappedMemory, ctypes.c_void_p(address), size, owner)
        return PinnedMemory(self.context, ctypes.c_void_p(address), size, owner=owner,
                            finalizer=self._finalizer(alloc)[1])

    def memallocmanaged(self, size, attach_global=True):
        """Managed (unified) memory (cuMemAllocManaged), freed when the last reference
        dies.

        Parameters
        ----------
        size : int
            Bytes to allocate.
        attach_global : bool, optional
            Reachable from every stream (the default), else attached to the host until a
            stream claims it.

        Returns
        -------
        OwnedPointer

        Examples
        --------
        >>> mgr = gpuhost.current_context().memory_manager
        >>> mgr.memallocmanaged(4096).size
        4096
        """
        alloc = _core.mem_alloc(size, "managed", attach_global=attach_global)
        return self._owned(alloc, AutoFreePointer, DevicePointer(alloc.ptr), size)

    def reset(self):
        """Free the mapped and managed memory allocated through this manager.

        Pinned memory that is not mapped goes when its PinnedMemory dies. A plugin
        that overrides it calls it through ``super().reset()``.

        Examples
        --------
        >>> from gpuhost import memory_manager as mm
        >>> mgr = mm.DefaultMemoryManager(context=gpuhost.current_context())
        >>> m = mgr.memhostalloc(4096, mapped=True)
        >>> len(mgr.allocations)
        1
        >>> mgr.reset()                          # m's memory is gone
        >>> len(mgr.allocations)
        0
        """
        for mem in list(self.allocations.values()):
            mem.free()
        self.allocations.clear()

    def defer_cleanup(self):
        """A context manager holding the release of memory until the block ends.

        Memory freed inside the block (pinned memory unpinned, device memory given back
        to the driver) is released when the outermost such block ends; blocks nest. A
        plugin that overrides it enters it through ``super().defer_cleanup()``.

        Returns
        -------
        context manager

        Examples
        --------
        >>> mgr = gpuhost.current_context().memory_manager
        >>> with mgr.defer_cleanup():
        ...     mgr.deallocations.is_disabled
        True
        >>> mgr.deallocations.is_disabled
        False
        """
        return _hold_releases()


@contextlib.contextmanager
def _hold_releases():
    """gpuhost's defer_cleanup() hold, for the managers' defer_cleanup() and disable()."""
    _core._defer_cleanup_enter()
    try:
        yield
    finally:
        _core._defer_cleanup_exit()


class GetIpcHandleMixin:
    """A plugin's ``get_ipc_handle`` done by the driver (numba's mixin).

    Put it before the base class (``class M(GetIpcHandleMixin,
    HostOnlyCUDAMemoryManager)``) for a plugin whose memory the driver can export: the
    allocation's base address comes from cuMemGetAddressRange, the handle from
    cuIpcGetMemHandle.

    Examples
    --------
    >>> mgr = gpuhost.current_context().memory_manager   # gpuhost's own uses it
    >>> h = mgr.get_ipc_handle(mgr.memalloc(1024))
    >>> type(h).__name__, h.size
    ('IpcHandle', 1024)
    """

    def get_ipc_handle(self, memory):
        """An IpcHandle for `memory`, with the memory's offset in its allocation.

        Parameters
        ----------
        memory : MemoryPointer
            Memory of this plugin's context.

        Returns
        -------
        IpcHandle

        Raises
        ------
        CudaAPIError
            The driver cannot export the memory (managed memory, say).

        Examples
        --------
        >>> mgr = gpuhost.current_context().memory_manager
        >>> p = mgr.memalloc(1024)
        >>> h = mgr.get_ipc_handle(p)
        >>> h.size, h.offset >= 0, len(h.handle)
        (1024, True, 64)
        """
        ptr = _address(memory.device_pointer if hasattr(memory, "device_pointer")
                       else memory.ptr)
        probe = _core.make_array(memory, ptr, (memory.size,), (1,), np.uint8)
        handle, offset, size = _core.ipc_get_handle(probe)
        source_info = self.context.device.uuid if self.context is not None else None
        return IpcHandle(memory, handle, memory.size, source_info, offset=offset)


# ---- gpuhost's own manager, as numba's default one is seen ----

class PendingDeallocs:
    """numba's pending-deallocation queue of a context, over gpuhost's freeing scheme.

    gpuhost gives freed device memory back to the context's default pool, which holds it
    for reuse instead of returning it to the driver; those held blocks are what numba
    calls pending deallocations.  ``len()`` counts them, ``clear()`` returns them to the
    driver (cuMemFree), except inside ``defer_cleanup()`` / ``disable()``, where nothing
    is released until the outermost block ends.  The pool flushes itself when an
    allocation finds the device out of memory, as numba's queue does.

    Parameters
    ----------
    context : gpuhost.Context
        The context whose default pool it reads.

    Examples
    --------
    >>> dealloc = gpuhost.current_context().memory_manager.deallocations
    >>> d = gpuhost.device_array(1 << 20)
    >>> del d                                  # held by the pool, not freed
    >>> len(dealloc) >= 1
    True
    >>> dealloc.clear()                        # back to the driver
    >>> len(dealloc)
    0
    """

    def __init__(self, context):
        self._context = context

    def _pool(self):
        return _core.default_pool(self._context)

    def __len__(self):
        return self._pool().n_free_blocks

    @property
    def _size(self):
        """Bytes held (numba's name)."""
        return self._pool().free_bytes

    @property
    def memory_capacity(self):
        """The device's total memory, in bytes.

        Examples
        --------
        >>> ctx = gpuhost.current_context()
        >>> ctx.deallocations.memory_capacity == ctx.device.total_memory
        True
        """
        return self._context.device.total_memory

    @property
    def is_disabled(self):
        """Whether a ``defer_cleanup()`` or ``disable()`` block is active.

        Examples
        --------
        >>> dealloc = gpuhost.current_context().deallocations
        >>> with gpuhost.defer_cleanup():
        ...     dealloc.is_disabled
        True
        >>> dealloc.is_disabled
        False
        """
        return _core._defer_cleanup_depth() > 0

    def clear(self):
        """Return the held blocks to the driver (cuMemFree), unless disabled.

        Examples
        --------
        >>> dealloc = gpuhost.current_context().deallocations
        >>> d = gpuhost.device_array(1 << 20)
        >>> del d                                # held by the pool
        >>> dealloc.clear()
        >>> len(dealloc)
        0
        """
        if not self.is_disabled:
            with self._context.device:
                self._pool().free_all_blocks()

    def disable(self):
        """A context manager holding every release until the block ends (blocks nest).

        Inside it `clear` returns nothing to the driver; it is what
        ``defer_cleanup()`` enters.

        Returns
        -------
        context manager

        Examples
        --------
        >>> dealloc = gpuhost.current_context().deallocations
        >>> with dealloc.disable():
        ...     d = gpuhost.device_array(1 << 20)
        ...     del d
        ...     dealloc.clear()                  # held: nothing is freed yet
        ...     len(dealloc) >= 1
        True
        >>> dealloc.clear()
        >>> len(dealloc)
        0
        """
        return _hold_releases()

    def __repr__(self):
        return "<PendingDeallocs of %r: %d blocks, %d bytes>" % (self._context, len(self),
                                                               self._size)


class DefaultMemoryManager(GetIpcHandleMixin, HostOnlyCUDAMemoryManager):
    """The memory manager a context has while no EMM plugin is set (numba's
    NumbaCUDAMemoryManager).

    ``Context.memory_manager`` is one of these unless a plugin is set: device memory
    comes from gpuhost's default pool, host memory as `HostOnlyCUDAMemoryManager` does,
    and ``deallocations`` is a `PendingDeallocs` over the pool. Assigning one to
    ``Context.memory_manager`` gives the context back to gpuhost's pool.

    Parameters
    ----------
    context : gpuhost.Context
        Keyword only: the context it serves.

    Examples
    --------
    >>> mgr = gpuhost.current_context().memory_manager
    >>> type(mgr).__name__, mgr.interface_version
    ('DefaultMemoryManager', 1)
    >>> p = mgr.memalloc(1024)
    >>> p.size, p.device_pointer_value != 0
    (1024, True)
    >>> mgr.get_memory_info().total == gpuhost.gpus[0].total_memory
    True
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.deallocations = PendingDeallocs(self.context) if self.context is not None else None

    def initialize(self):
        """Nothing to prepare (the pool is made on first use).

        Examples
        --------
        >>> gpuhost.current_context().memory_manager.initialize()
        """

    def memalloc(self, size):
        """`size` bytes of device memory from the context's default pool.

        Parameters
        ----------
        size : int
            Bytes to allocate.

        Returns
        -------
        OwnedPointer
            Of an `AutoFreePointer`; the memory goes back to the pool when the last
            reference dies.

        Examples
        --------
        >>> mgr = gpuhost.current_context().memory_manager
        >>> p = mgr.memalloc(1024)
        >>> type(p).__name__, p.size
        ('OwnedPointer', 1024)
        """
        with self.context.device:
            alloc = _core.device_alloc(size)
        return self._owned(alloc, AutoFreePointer, DevicePointer(alloc.ptr), size)

    def get_memory_info(self):
        """The free and total device memory in bytes, as ``Context.get_memory_info()``.

        Returns
        -------
        MemoryInfo
            A named tuple (free, total).

        Examples
        --------
        >>> mgr = gpuhost.current_context().memory_manager
        >>> mgr.get_memory_info().total == gpuhost.current_context().device.total_memory
        True
        """
        return self.context.get_memory_info()

    def reset(self):
        """Free what this manager allocated, and return the pool's held blocks.

        Examples
        --------
        >>> from gpuhost import memory_manager as mm
        >>> mgr = mm.DefaultMemoryManager(context=gpuhost.current_context())
        >>> d = gpuhost.device_array(1 << 20)
        >>> del d                                # held by the pool
        >>> mgr.reset()
        >>> len(mgr.deallocations)
        0
        """
        super().reset()
        if self.deallocations is not None:
            self.deallocations.clear()

    @property
    def interface_version(self):
        """The EMM interface version implemented, 1.

        Examples
        --------
        >>> gpuhost.current_context().memory_manager.interface_version
        1
        """
        return _SUPPORTED_EMM_INTERFACE_VERSION
