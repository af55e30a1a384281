"""numba's External Memory Management (EMM) plugin interface, for gpuhost.

An EMM plugin (RAPIDS' RMM, or one's own) is a class deriving from BaseCUDAMemoryManager
(or HostOnlyCUDAMemoryManager, which does the host side) whose ``memalloc(size)`` returns a
MemoryPointer with a finalizer.  Installed with ``set_memory_manager(cls)``, or by naming
its module in GPUHOST_CUDA_MEMORY_MANAGER (else numba's NUMBA_CUDA_MEMORY_MANAGER): the
module's ``_gpuhost_memory_manager`` (else ``_numba_memory_manager``) is the class.  From
then on device arrays (device_array, to_device, ...) take their memory from the plugin: one
instance per context, made (and ``initialize()``-d) at the context's first allocation, with
the context current whenever it is called.

Plugins written for numba work unchanged: they may derive from numba.cuda's classes and
return numba's MemoryPointer (its ``device_pointer_value`` is read), or from the ones here,
which have numba's names and behaviour.  ``defer_cleanup()`` enters the plugin's
``defer_cleanup()`` too; ``gpuhost.close()`` calls each instance's ``reset()``.

Differences from numba: ``set_memory_manager(None)`` goes back to gpuhost's own pools, and
setting a manager applies to the next allocation of every context (gpuhost's contexts are
the devices' primary contexts, made once).  MappedMemory takes the host address as the
device address (unified addressing, as on every 64-bit Linux system CUDA 12 supports).
"""
import importlib
import os
import threading

from ... import _arrays, _core
# The classes, in the modules of their subjects; this module installs a plugin.
from ._emm_ipc import IpcHandle, IpcMemHandle  # noqa: F401
from ._emm_plugins import (  # noqa: F401
    BaseCUDAMemoryManager,
    DefaultMemoryManager,
    GetIpcHandleMixin,
    HostOnlyCUDAMemoryManager,
    PendingDeallocs,
    _hold_releases,
)
from ._emm_pointers import (  # noqa: F401
    ArrayMemory,
    AutoFreePointer,
    DevicePointer,
    MappedMemory,
    MappedOwnedPointer,
    MemoryInfo,
    MemoryPointer,
    OwnedPointer,
    PinnedMemory,
    _SUPPORTED_EMM_INTERFACE_VERSION,
    _address,
    _device_pointer,
)

__all__ = [
    "AutoFreePointer", "BaseCUDAMemoryManager", "GetIpcHandleMixin",
    "HostOnlyCUDAMemoryManager", "IpcHandle", "MappedMemory", "MemoryInfo", "MemoryPointer",
    "OwnedPointer", "PinnedMemory", "get_memory_manager", "set_memory_manager",
    "DefaultMemoryManager", "PendingDeallocs",
]

# ---- installing a plugin ----

_plugin = None  # the plugin class, or None (gpuhost's pools)
_managers = {}  # Context -> the plugin's instance for it


def set_memory_manager(mm_plugin):
    """Install an External Memory Management plugin for device arrays (numba's).

    From then on `device_array`, `to_device` and the other array functions take their
    memory from the plugin: one instance per context, made (and ``initialize()``-d) at
    that context's first allocation. Arrays made before keep their memory. Setting
    GPUHOST_CUDA_MEMORY_MANAGER (or NUMBA_CUDA_MEMORY_MANAGER) to a module name does the
    same with the module's ``_gpuhost_memory_manager`` (or ``_numba_memory_manager``).

    Parameters
    ----------
    mm_plugin : type or None
        A subclass of `BaseCUDAMemoryManager` (numba's plugins, RMM's
        ``RMMNumbaManager``, work unchanged); None goes back to gpuhost's own pools.

    Raises
    ------
    RuntimeError
        The plugin's ``interface_version`` is not 1.

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
    >>> gpuhost.set_memory_manager(CountingManager)
    >>> d = gpuhost.to_device(np.arange(10.0))
    >>> e = gpuhost.device_array_like(d)
    >>> mm.get_memory_manager().count
    2
    >>> gpuhost.set_memory_manager(None)
    """
    global _plugin
    if mm_plugin is not None:
        version = mm_plugin(context=None).interface_version
        if version != _SUPPORTED_EMM_INTERFACE_VERSION:
            raise RuntimeError("EMM Plugin interface has version %d - version %d required"
                               % (version, _SUPPORTED_EMM_INTERFACE_VERSION))
    _managers.clear()  # arrays made so far keep their memory; new ones use the new plugin
    _plugin = mm_plugin
    _install_allocator()


def get_memory_manager(context=None):
    """The installed plugin's instance for a context, made on first use.

    Parameters
    ----------
    context : gpuhost.Context, optional
        By default the current context.

    Returns
    -------
    BaseCUDAMemoryManager or None
        None when no plugin is set (``Context.memory_manager`` is then gpuhost's
        `DefaultMemoryManager`).

    Examples
    --------
    >>> from gpuhost import memory_manager as mm
    >>> mm.get_memory_manager() is None        # no plugin set
    True
    """
    if _plugin is None:
        return None
    ctx = context if context is not None else _core.current_context()
    mgr = _managers.get(ctx)
    if mgr is None:
        with ctx.device:
            mgr = _plugin(context=ctx)
            mgr.initialize()
        _managers[ctx] = mgr
    return mgr


_defaults = {}  # Context -> its DefaultMemoryManager


def context_plugin(context):
    """The EMM plugin instance that manages `context` (set_memory_manager's, or one assigned
    to ``Context.memory_manager``), or None where gpuhost's own manager does."""
    mgr = _managers.get(context)
    if mgr is None and _plugin is not None:
        mgr = get_memory_manager(context)
    return mgr


def context_memory_manager(context):
    """Context.memory_manager: the manager `context` allocates through (an EMM plugin's
    instance, or gpuhost's DefaultMemoryManager)."""
    mgr = _managers.get(context)
    if mgr is None and _plugin is not None:
        mgr = get_memory_manager(context)
    if mgr is None:
        mgr = _defaults.get(context)
        if mgr is None:
            mgr = _defaults[context] = DefaultMemoryManager(context=context)
    return mgr


def set_context_memory_manager(context, manager):
    """Context.memory_manager = manager: `context`'s device arrays allocate through
    `manager` (initialize()-d now) from here on; a DefaultMemoryManager gives the context
    back to gpuhost's pool (or to the plugin set_memory_manager() installed)."""
    if isinstance(manager, DefaultMemoryManager):
        _managers.pop(context, None)
        _defaults[context] = manager
    else:
        for name in ("memalloc", "initialize", "get_memory_info", "reset"):
            if not callable(getattr(manager, name, None)):
                raise TypeError("a memory manager needs a %s() method; %s has none"
                                % (name, type(manager).__name__))
        with context.device:
            manager.initialize()
        _managers[context] = manager
    _install_allocator()


def _install_allocator():
    """Route device arrays through _allocate while any plugin is in use, else back to the
    C fast path (unless set_allocator() installed another allocator)."""
    in_use = _plugin is not None or bool(_managers)
    if in_use:
        _core.set_array_allocator(_allocate)
        _arrays.set_manager_defer(_defer)
    elif _core.array_allocator() is _allocate:
        _core.set_array_allocator(None)
        _arrays.set_manager_defer(None)


def _context_reset(context):
    """Context.reset(): the manager's reset(), as numba's does (its memory goes)."""
    mgr = _managers.get(context)
    if mgr is None and _plugin is not None:
        mgr = get_memory_manager(context)
    if mgr is None:
        mgr = _defaults.get(context)
    if mgr is not None:
        mgr.reset()


_asking = threading.local()  # contexts whose plugin is answering get_memory_info()


def _plugin_memory_info(context):
    """Context.get_memory_info() while a plugin manages `context`: the plugin's answer
    (numba asks its memory manager); None otherwise, and while that plugin is itself
    asking the context (then the driver answers)."""
    mgr = _managers.get(context)
    if mgr is None and _plugin is not None:
        mgr = get_memory_manager(context)
    asking = getattr(_asking, "contexts", None)
    if asking is None:
        asking = _asking.contexts = set()
    if mgr is None or context in asking:
        return None
    asking.add(context)
    try:
        return mgr.get_memory_info()
    finally:
        asking.discard(context)


def _allocate(nbytes, stream):
    """device_array()'s allocator while a plugin is in use: (owner, address)."""
    ctx = _core.current_context()
    mem = _managers.get(ctx)
    if mem is None and _plugin is None:  # another context has a plugin; this one does not
        alloc = _core.device_alloc(nbytes, stream)
        return alloc, alloc.ptr
    mem = mem if mem is not None else get_memory_manager(ctx)
    ptr = mem.memalloc(nbytes)
    value = getattr(ptr, "device_pointer_value", None)
    if value is None:
        value = _address(getattr(ptr, "device_pointer", None) or getattr(ptr, "ptr", None))
    return ptr, value or 0


def _defer():
    mgr = _managers.get(_core.current_context())
    return mgr.defer_cleanup() if mgr is not None else None


def _close_managers():
    """reset() every instance and forget them (gpuhost.close(), a new plugin)."""
    managers = list(_managers.values())
    _managers.clear()
    for mgr in managers:
        mgr.reset()


def _ensure_memory_manager():
    """Install the plugin GPUHOST_CUDA_MEMORY_MANAGER (else NUMBA_CUDA_MEMORY_MANAGER)
    names; RuntimeError if it cannot be used."""
    name = os.environ.get("GPUHOST_CUDA_MEMORY_MANAGER") or \
        os.environ.get("NUMBA_CUDA_MEMORY_MANAGER", "default")
    if name in ("", "default"):
        set_memory_manager(None)
        return
    try:
        module = importlib.import_module(name)
        plugin = getattr(module, "_gpuhost_memory_manager", None)
        if plugin is None:
            plugin = module._numba_memory_manager
        set_memory_manager(plugin)
    except Exception as e:
        raise RuntimeError("Failed to use memory manager from %s: %s" % (name, e)) from e


# Context.reset() and get_memory_info() ask an EMM plugin through these (csrc/core/context.c),
# registered when this module is imported (no plugin can be in use before).
_core._set_helpers(plugin_context_reset=_context_reset, plugin_memory_info=_plugin_memory_info)


# The classes answer to gpuhost.memory_manager, the path numba programs import them from
# (their reprs and pickles name it); they are defined in this folder's _emm_*.py modules.
for _name in __all__:
    _value = globals()[_name]
    if isinstance(_value, type) and _value.__module__.startswith(__package__ + "._emm"):
        _value.__module__ = "gpuhost.memory_manager"
del _name, _value
