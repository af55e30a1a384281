"""A `cache=True` kernel's disk records, as its gpuhost.jit Dispatcher reads and writes them.

A launch that C could not resolve comes to the Dispatcher's slow path, which asks here first:
the launch's argument types (record_key) name a record of the overload numba chose for them
in an earlier process; its code is loaded into the launch's context and the overload is
launched without numba (the C launcher takes every later launch of those types).  Where no
record answers, numba-cuda resolves the launch (compiling, or loading from its own cache)
and what it chose is written here for the next process (remember).  The files, their keys
and their folder are gpuhost/_jitcache.py's.
"""
import collections

import numpy as np

from . import _arghints, _core, _jitcache

# A driver that loads no cubin (or not this one): the PTX is loaded instead.
# CUDA_ERROR_INVALID_IMAGE, NO_BINARY_FOR_GPU, UNSUPPORTED_PTX_VERSION, NOT_SUPPORTED.
_NO_CUBIN = frozenset((200, 209, 222, 801))


def load_module(ctx, cubin, ptx):
    """(Module, kind) of code loaded in Context `ctx`: the cubin, else the PTX where the
    driver refuses the cubin (`ptx` bytes, or a callable making them).  Raises what the
    driver raised for the last image tried."""
    from .errors import CudaAPIError

    with ctx.device:
        if cubin:
            try:
                return _core.Module(cubin), "cubin"
            except CudaAPIError as e:
                if ptx is None or e.code not in _NO_CUBIN:
                    raise
        text = ptx() if callable(ptx) else ptx
        return _core.Module(text), "ptx"


def kernel_of(module, entry, carveout):
    """The Kernel `entry` of a loaded module, kept loaded by design (no leak for the leak
    check), its shared-memory carveout set (-1 or None: the driver's default)."""
    _core._live_kept(module)
    kernel = module.get_function(entry)
    if carveout is not None and carveout >= 0:
        kernel.preferred_shared_memory_carveout = carveout
    return kernel


def _layout(a):
    """numba's layout of a NumPy array (numpy_support.map_layout)."""
    flags = a.flags
    return "C" if flags.c_contiguous else "F" if flags.f_contiguous else "A"


def _host_key(value, disp):
    """The key of an argument C does not key: a host array (as numba types it: dtype, ndim,
    layout, read-only, aligned) or an In/Out/InOut hint around one; None for anything
    else."""
    hint = _arghints.hint_of(value)
    if hint is not None:
        inner = _host_key(hint[2], disp) or _c_key(hint[2], disp)
        if inner is None:
            return None
        return b"h%d%d" % (hint[0], hint[1]) + inner
    if type(value) is np.ndarray and not hasattr(value, "__cuda_array_interface__"):
        return ("H%r|%d|%s|%d|%d" % (value.dtype, value.ndim, _layout(value),
                                     not value.flags.writeable, value.flags.aligned)).encode()
    return None


def _c_key(value, disp):
    keyed = disp._jit_key((value,))
    if keyed is None or not keyed[2]:
        return None
    return b"c" + keyed[0][4:]  # less the argument count


def record_key(disp, args):
    """(record key, C key, keep) of a launch's arguments: the C launcher's key where it keys
    them all (C key and keep: what _jit_add takes), else the Python side's (host arrays,
    hints; C key None).  None where some argument has no key that means the same in
    another process (a dtype or scalar type keyed by its address, an object C leaves to
    numba)."""
    keyed = disp._jit_key(args)
    if keyed is not None:
        return (b"C" + keyed[0], keyed[0], keyed[1]) if keyed[2] else None
    parts = [b"P"]
    for a in args:
        part = _host_key(a, disp) or _c_key(a, disp)
        if part is None:
            return None
        parts.append(b"%d:" % len(part) + part)
    return b"".join(parts), None, None


class Found:
    """A record answered: the overload's facts (`meta`) and its Kernel in the context."""

    __slots__ = ("sig", "meta", "plan", "kernel")

    def __init__(self, sig, meta, kernel):
        self.sig, self.meta, self.kernel = sig, meta, kernel
        self.plan = bytes.fromhex(meta["plan"])


class Records:
    """One kernel's records: its keys (made on first use; a kernel that cannot be keyed
    has none and always goes to numba), what this process read of them, its counts."""

    def __init__(self, py_func, options, sigs):
        self.py_func, self.options, self.sigs = py_func, options, sigs
        self._keys = None  # _jitcache.Kernel, or False: not keyable
        self.aliases = {}  # (record key, cc) -> overload signature
        self.metas = {}    # (signature, cc) -> the overload record's fields, images aside
        self.images = {}   # (signature, cc) -> (cubin, ptx)
        self.kernels = {}  # (signature, Context) -> Kernel
        self.hits = collections.Counter()  # signature -> 1, once launched from a record
        self.missed = set()
        self.counted = set()  # (signature, cc) counted as hits
        self.pruned = False

    def keys(self):
        """The kernel's _jitcache.Kernel, or None where it cannot be keyed."""
        if self._keys is None:
            try:
                self._keys = _jitcache.Kernel(self.py_func, self.options, self.sigs)
            except _jitcache.Unkeyable:
                self._keys = False
        return self._keys or None

    def forget(self):
        """Drop what this process read (the dispatcher recompiles, or numba's overloads
        were reset)."""
        self.aliases.clear()
        self.metas.clear()
        self.images.clear()
        self.kernels.clear()

    def drop(self):
        """Remove the kernel's records on disk and in memory (recompile())."""
        self.forget()
        keys = self.keys()
        if keys is not None:
            keys.drop()

    # ---- reading ----

    def find(self, rkey, ctx):
        """The overload an earlier process recorded for these argument types, loaded in
        `ctx`; None where no whole record answers (or its code does not load)."""
        keys = self.keys()
        if keys is None:
            return None
        device = ctx.device
        cc = device.compute_capability
        sig = self.aliases.get((rkey, cc))
        if sig is None:
            alias = keys.load(keys.name(cc, _driver(), "args", rkey))
            if alias is None or alias.get("kind") != "alias":
                return None
            sig = alias["sig"]
        kernel = self._kernel(sig, ctx)
        if kernel is None:
            return None
        self.aliases[(rkey, cc)] = sig
        self._hit(sig, cc)
        return Found(sig, self.metas[(sig, cc)], kernel)

    def _hit(self, sig, cc):
        """Count a record read: once per compute capability in jit_cache_info(), once per
        signature in the dispatcher's stats (numba compiles a signature once for all)."""
        if (sig, cc) not in self.counted:
            self.counted.add((sig, cc))
            _jitcache.counted("hits")
            if sig not in self.hits:
                self.hits[sig] += 1

    def _kernel(self, sig, ctx):
        kernel = self.kernels.get((sig, ctx))
        if kernel is not None and _core._jit_usable(kernel):
            return kernel
        cc = ctx.device.compute_capability
        meta = self.metas.get((sig, cc))
        if meta is None:
            keys = self.keys()
            rec = keys.load(keys.name(cc, _driver(), "sig", sig))
            if rec is None or rec.get("kind") != "overload" or rec.get("sig") != sig:
                return None
            self.images[(sig, cc)] = (rec.pop("code"), rec.pop("ptx"))
            meta = self.metas[(sig, cc)] = rec
        from .errors import CudaAPIError

        cubin, ptx = self.images[(sig, cc)]
        try:
            module, _ = load_module(ctx, cubin, ptx)
            kernel = kernel_of(module, meta["entry"], meta["carveout"])
        except (CudaAPIError, ValueError, KeyError, TypeError):
            self.metas.pop((sig, cc), None)  # code that does not load: compiled anew
            self.images.pop((sig, cc), None)
            return None
        self.kernels[(sig, ctx)] = kernel
        return kernel

    def eager_ready(self, device):
        """Whether an earlier process recorded all of an eager kernel's overloads for
        `device` (then numba need not compile them now)."""
        keys = self.keys()
        if keys is None:
            return False
        cc = device.compute_capability
        rec = keys.load(keys.name(cc, _driver(), "eager", ""))
        if rec is None or rec.get("kind") != "eager":
            return False
        for sig in rec["sigs"]:  # numba counts an eager signature's cache hit too
            self._hit(sig, cc)
        return True

    # ---- writing ----

    def miss(self, rkey):
        if rkey not in self.missed:
            self.missed.add(rkey)
            _jitcache.counted("misses")

    def remember(self, rkey, meta, images, device):
        """Record that launches with these argument types (`rkey`) launch the overload
        `meta` describes (gpuhost/_numba.py's record_of), whose code for `device` is
        `images` (cubin, PTX or None); the overload first, then the name leading to it."""
        keys = self.keys()
        if keys is None or meta is None:
            return
        cc = device.compute_capability
        sig = meta["sig"]
        if not self._store_overload(keys, cc, meta, images):
            return
        if rkey is not None and self.aliases.get((rkey, cc)) != sig:
            if keys.store(keys.name(cc, _driver(), "args", rkey), {"kind": "alias", "sig": sig}):
                self.aliases[(rkey, cc)] = sig

    def _store_overload(self, keys, cc, meta, images):
        sig = meta["sig"]
        known = self.images.get((sig, cc))
        if known is not None and (known[1] is not None or images[1] is None):
            return True  # written (or read) already, with the images this driver needs
        if not self.pruned:  # records of an earlier version of this code: unreadable now
            keys.prune()
            self.pruned = True
        if not keys.store(keys.name(cc, _driver(), "sig", sig), dict(meta, kind="overload"),
                          images[0] or b"", images[1]):
            return False
        self.metas[(sig, cc)] = dict(meta, kind="overload")
        self.images[(sig, cc)] = images
        self.counted.add((sig, cc))  # numba compiled it here: its later launches are no hits
        return True

    def remember_eager(self, metas_images, device):
        """Record an eager kernel's overloads ([(meta, images)], in its signatures' order)
        and the list of them; nothing where one of them cannot be recorded."""
        keys = self.keys()
        if keys is None or not metas_images or any(m is None for m, _ in metas_images):
            return
        cc = device.compute_capability
        for meta, images in metas_images:
            if not self._store_overload(keys, cc, meta, images):
                return
        keys.store(keys.name(cc, _driver(), "eager", ""),
                   {"kind": "eager", "sigs": [m["sig"] for m, _ in metas_images]})


_driver_version = None


def _driver():
    global _driver_version
    if _driver_version is None:
        _driver_version = _core.driver_version()
    return _driver_version
