"""gpuhost.jit: Python kernels compiled by numba-cuda, launched by gpuhost (design decision
12, docs/development/architecture.md).

    import gpuhost as cuda

    @cuda.jit
    def axpy(r, a, x, y):
        i = cuda.grid(1)
        if i < r.size:
            r[i] = a * x[i] + y[i]

    axpy[blocks, threads](r, 2.0, x, y)

`jit` takes numba.cuda.jit's arguments and returns a Dispatcher: numba-cuda's own
dispatcher underneath (typing, compiling, caching, inspect_*, overloads, specialize), with
the launch taken over by gpuhost. A launch whose argument types were seen before is
resolved, packed and launched in C (csrc/jit/jit_launch.c); the first launch of new types,
host arrays (copied in and back, as numba does), debug kernels, extensions and pre-launch
callbacks come here, to `_slow_launch`, which still launches through gpuhost.

A `cache=True` kernel (and a device function) is made without numba-cuda, which is
imported when a launch needs it: the slow path first asks the kernel's disk records
(gpuhost/_jitrecords.py), so a fresh process launches a kernel compiled by an earlier one
without importing numba at all; numba compiles on a miss only, and its result is recorded.
"""
import collections
import functools
import threading
import weakref

import numpy as np

from . import _core, _jitargs, _numba

__all__ = ["DeviceFunction", "Dispatcher", "jit"]

_materializing = threading.RLock()
_retrying = threading.local()  # a launch the records registered, given back to C once


def jit(func_or_sig=None, device=False, inline="never", forceinline=False, link=(),
        debug=None, opt=None, lineinfo=False, cache=False, launch_bounds=None, lto=None,
        shared_memory_carveout=None, **kws):
    """numba.cuda.jit, launched by gpuhost.

    Parameters are numba-cuda's (0.30): ``func_or_sig`` a function, or a signature or list
    of signatures for eager compilation; ``device``, ``inline``, ``forceinline``, ``link``,
    ``debug``, ``opt``, ``lineinfo``, ``cache``, ``launch_bounds``, ``lto``,
    ``shared_memory_carveout``, and ``fastmath``, ``max_registers``, ``extensions``
    through ``kws``.

    With ``cache=True`` a kernel is compiled once for all processes: numba-cuda is
    imported only when a launch needs a compilation that gpuhost's disk records do not
    hold (docs/guide/jit.md says which kernels are recorded).  A device function
    (``device=True``, without signatures) is made without numba-cuda as well, and compiled
    by numba with the first kernel that calls it.

    Returns
    -------
    Dispatcher or DeviceFunction
        A kernel's dispatcher; a device function (``device=True``) is a DeviceFunction
        (numba's own dispatcher where it has signatures), called from kernels only.

    Raises
    ------
    ImportError
        numba-cuda is not installed, or is a version gpuhost does not support.

    Examples
    --------
    >>> @gpuhost.jit
    ... def double(a):
    ...     i = gpuhost.grid(1)
    ...     if i < a.size:
    ...         a[i] *= 2
    >>> double[1, 32](gpuhost.to_device(np.arange(32.0)))  # doctest: +SKIP
    """
    options = dict(device=device, inline=inline, forceinline=forceinline, link=link,
                   debug=debug, opt=opt, lineinfo=lineinfo, cache=cache,
                   launch_bounds=launch_bounds, lto=lto,
                   shared_memory_carveout=shared_memory_carveout, **kws)
    keyed = _lazy_options(func_or_sig, options)
    if keyed is not None:
        if func_or_sig is None:
            return lambda func: jit(func, **options)
        if callable(func_or_sig) and not isinstance(func_or_sig, (str, list)):
            if device:
                return DeviceFunction(func_or_sig, options)
            return Dispatcher._lazy(func_or_sig, options, keyed, None)
        sigs = [func_or_sig] if isinstance(func_or_sig, str) else list(func_or_sig)
        return lambda func: _eager(func, options, keyed, sigs, func_or_sig)
    cuda = _numba.load()
    # numba's own decorator, called now (its checks and warnings come at decoration, as
    # with numba); what it makes for a kernel is adopted as gpuhost's.
    made = cuda.jit(func_or_sig, **options)
    if callable(made) and not hasattr(made, "py_func"):
        if device:  # device functions are called from kernels only: numba's own
            return functools.wraps(made)(lambda func: _compiled_now(made, func))
        return functools.wraps(made)(lambda func: _adopted(_compiled_now(made, func)))
    return made if device else _adopted(made)


def _compiled_now(decorator, func):
    """numba's decorator of eager signatures applied: it compiles, for gpuhost's current
    device (numba's own where no driver loads: numba then says why it cannot)."""
    with _numba.compiling_for(_current_device()):
        return decorator(func)


def _current_device():
    """The Device of this thread's current context (made current as numba would), or None
    where there is no usable driver."""
    return _core.current_context().device if _core.is_available() else None


def _adopted(numba_dispatcher):
    if not _numba.is_numba_kernel_dispatcher(numba_dispatcher):
        return numba_dispatcher  # numba's simulator (NUMBA_ENABLE_CUDASIM): its own kernels
    return Dispatcher(_numba.adopt(numba_dispatcher))


# jit's options that gpuhost keys without numba, and their kinds.
_KEYED_OPTIONS = {"device": bool, "inline": str, "forceinline": bool, "debug": (bool, type(None)),
                  "opt": (bool, type(None)), "lineinfo": bool, "cache": bool,
                  "launch_bounds": (int, tuple, list, type(None)), "lto": (bool, type(None)),
                  "shared_memory_carveout": (int, str, type(None)), "fastmath": (bool, set,
                                                                                frozenset),
                  "max_registers": (int, type(None)), "link": (tuple, list),
                  "extensions": (tuple, list)}


def _lazy_options(func_or_sig, options):
    """The options as gpuhost's records key them (JSON-able), where jit makes its result
    without numba-cuda: a cache=True kernel or a device function without signatures, its
    options plain values; None where numba's own decorator is called now (a kernel without
    cache, debug kernels, link=, extensions, explicit lto=True, the simulator, signatures
    that are not strings, numba-cuda missing or of a version gpuhost does not support, a
    source numba cannot cache), so that what numba checks and says at decoration comes
    there, as with numba."""
    device = options["device"]
    if not (options["cache"] or device) or not set(options) <= set(_KEYED_OPTIONS):
        return None
    if any(not isinstance(v, _KEYED_OPTIONS[k]) for k, v in options.items()):
        return None
    if options["debug"] or (options["debug"] is None and _numba.environment_debug()) or \
            options["link"] or options.get("extensions") or options["lto"] or \
            options["inline"] not in ("never", "always") or _numba.simulator_enabled() or \
            not _numba.supported_installed():
        return None
    if isinstance(func_or_sig, (str, list)):
        if device or not all(isinstance(sig, str) for sig in
                             ([func_or_sig] if isinstance(func_or_sig, str) else func_or_sig)):
            return None
    elif func_or_sig is not None:
        from . import _jitcache

        if not callable(func_or_sig) or not hasattr(func_or_sig, "__code__") or \
                (not device and not _jitcache.source_available(func_or_sig)):
            return None
    _check_carveout(options["shared_memory_carveout"])
    keyed = {}
    for k, v in sorted(options.items()):
        if isinstance(v, (set, frozenset)):
            v = sorted(v)
        elif isinstance(v, tuple):
            v = list(v)
        keyed[k] = v
    return keyed


def _check_carveout(carveout):
    """numba-cuda 0.30's check of shared_memory_carveout, which it makes at decoration."""
    if carveout is None:
        return
    if isinstance(carveout, str):
        valid_strings = ["default", "maxl1", "maxshared"]
        if carveout.lower() not in valid_strings:
            raise ValueError("Invalid carveout value: %s. Must be -1 to 100 or one of %s"
                             % (carveout, valid_strings))
    elif not -1 <= carveout <= 100:
        raise ValueError("Carveout must be between -1 and 100")


def _eager(func, options, keyed, sigs, given):
    """An eager kernel (`@jit("void(float32[::1])", cache=True)`): compiled now, for the
    current device, as numba does, unless an earlier process recorded it for that device;
    then numba-cuda is not imported."""
    disp = Dispatcher._lazy(func, options, keyed, sigs, given)
    device = _current_device()
    if device is None or disp._rec is None or not disp._rec.eager_ready(device):
        disp._materialize()
        disp._record_eager(device)
    return disp


class DeviceFunction:
    """A device function (``@gpuhost.jit(device=True)``), made without numba-cuda.

    It is called from kernels only.  numba-cuda compiles it with the first kernel that
    calls it (numba's dispatcher is made then); a kernel launched from gpuhost's disk
    records never needs it.  Everything numba's dispatcher offers (``compile``,
    ``overloads``, ``inspect_llvm``, ...) is reached through it, importing numba-cuda then.

    Examples
    --------
    >>> @gpuhost.jit(device=True)
    ... def add(a, b):
    ...     return a + b
    >>> add
    <gpuhost.jit device function add>
    >>> add.__name__
    'add'
    """

    def __init__(self, py_func, options):
        self.py_func = py_func
        self._options = options
        self._lock = threading.Lock()
        functools.update_wrapper(self, py_func)

    def __repr__(self):
        return "<gpuhost.jit device function %s>" % self.py_func.__qualname__

    def __getattr__(self, name):
        if name.startswith("__") or name in ("py_func", "_options", "_lock"):
            raise AttributeError(name)
        return getattr(self._numba_dispatcher(), name)

    def _numba_dispatcher(self):
        made = self.__dict__.get("_made")
        if made is None:
            with self._lock:
                made = self.__dict__.get("_made")
                if made is None:
                    made = _numba.load().jit(self.py_func, **self._options)
                    self.__dict__["_made"] = made
        return made

    @property
    def _numba_type_(self):
        """numba's type of the function (numba's typeof asks for it when a kernel calls
        it): numba's dispatcher's, made now."""
        return self._numba_dispatcher()._numba_type_

    def __call__(self, *args, **kwargs):
        return self._numba_dispatcher()(*args, **kwargs)

    def __getitem__(self, config):
        # numba's answer to a device function launched as a kernel (its RuntimeError)
        return self._numba_dispatcher()[config]

    def __reduce__(self):
        return (DeviceFunction, (self.py_func, self._options))


# What a Python function has and numba's dispatcher passes on (inspection, numba's own
# branch pruning of calls to kernels' device functions).
_FUNCTION_DUNDERS = frozenset(("__defaults__", "__kwdefaults__", "__code__", "__globals__",
                               "__closure__"))


class Dispatcher(_core.JitDispatcher):
    """A kernel compiled by numba-cuda and launched by gpuhost: what `gpuhost.jit` returns.

    ``kernel[griddim, blockdim, stream, sharedmem](*args)`` compiles the kernel for the
    arguments' types (once per set of types, cached on disk) and launches it; the launch
    itself is gpuhost's, in C. Device arrays (gpuhost's, or any CUDA array interface or
    DLPack exporter) go as they are; NumPy arrays are copied to the device and back, as
    numba does. Everything else (``overloads``, ``inspect_types``, ``inspect_asm``,
    ``definitions``, ...) is numba's dispatcher's. It pickles.

    Parameters
    ----------
    numba_dispatcher : numba.cuda.dispatcher.CUDADispatcher
        The numba dispatcher that compiles (`gpuhost.jit` makes it).

    Raises
    ------
    ValueError
        Called without a launch configuration (``kernel(*args)``).
    gpuhost.CudaAPIError
        A launch whose dimensions the driver refuses (a block past the kernel's
        ``launch_bounds`` or its registers' limit, past the device's limits, too much
        dynamic shared memory): ``CUDA_ERROR_INVALID_VALUE``, saying why, raised as numba's
        launch raises it (also cuda.core's ``CUDAError``, which numba-cuda 0.30 raises), with
        nothing launched.

    Examples
    --------
    >>> @gpuhost.jit
    ... def scale(x, a):
    ...     i = gpuhost.grid(1)
    ...     if i < x.size:
    ...         x[i] *= a
    >>> scale
    <gpuhost.jit Dispatcher of scale>
    >>> d = gpuhost.to_device(np.arange(4, dtype=np.float32))
    >>> scale[1, 32](d, np.float32(2))  # doctest: +SKIP
    >>> d.copy_to_host()  # doctest: +SKIP
    array([0., 2., 4., 6.], dtype=float32)
    """

    def __init__(self, numba_dispatcher):
        super().__init__()
        self._setup(numba_dispatcher.py_func)
        self._set_numba(numba_dispatcher)

    @classmethod
    def _lazy(cls, py_func, options, keyed, sigs, given=None):
        """A dispatcher made without numba-cuda: numba's is made when first needed
        (_materialize), from `options` (jit's) and `given` (the eager signatures as given);
        `keyed` (the options as records key them) and `sigs` key its disk records."""
        from ._jitrecords import Records

        self = cls.__new__(cls)
        _core.JitDispatcher.__init__(self)
        self._setup(py_func)
        self._options, self._given = options, given
        self._eager_specialized = isinstance(given, str)  # numba: one signature specializes
        if options["cache"]:
            self._rec = Records(py_func, keyed, sigs)
        return self

    def _setup(self, py_func):
        self.py_func = py_func
        self._loaded = {}  # (id(overload), Context) -> (overload, Kernel, (cubin, ptx))
        self._rec = None   # the disk records of a cache=True kernel made lazily
        functools.update_wrapper(self, py_func)

    def _set_numba(self, numba_dispatcher):
        if isinstance(numba_dispatcher, _numba.dispatcher_class()):
            numba_dispatcher._gpuhost_owner = weakref.ref(self)
        self.__dict__["_numba"] = numba_dispatcher

    def _materialize(self):
        """numba's dispatcher, made now if it was not (numba-cuda imported then; an eager
        kernel's signatures compiled then, for gpuhost's current device)."""
        made = self.__dict__.get("_numba")
        if made is not None:
            return made
        with _materializing:
            made = self.__dict__.get("_numba")
            if made is None:
                cuda = _numba.load()
                if self._given is None:
                    made = cuda.jit(self.py_func, **self._options)
                else:
                    made = _compiled_now(cuda.jit(self._given, **self._options), self.py_func)
                made = _numba.adopt(made)
                self._set_numba(made)
        return made

    def __getattr__(self, name):
        if name == "_numba":
            return self._materialize()
        if (name.startswith("__") and name not in _FUNCTION_DUNDERS) or name in (
                "_loaded", "_rec", "_options", "_given", "_eager_specialized", "py_func"):
            raise AttributeError(name)
        return getattr(self._numba, name)

    def __repr__(self):
        return "<gpuhost.jit Dispatcher of %s>" % getattr(self.py_func, "__qualname__", "?")

    def __call__(self, *args, **kwargs):
        raise ValueError(_numba.missing_launch_config_msg())

    @property
    def _numba_type_(self):
        return self._numba._numba_type_

    @property
    def stats(self):
        """numba's compilation statistics, a named tuple of cache_path, cache_hits and
        cache_misses.

        The two counts are Counters by signature: this dispatcher's loads from a disk
        cache, and its compilations.  A launch taken from gpuhost's disk records is a cache
        hit of its signature (numba-cuda is imported to read its own counters).

        Examples
        --------
        >>> @gpuhost.jit
        ... def k(a):
        ...     pass
        >>> k.stats.cache_hits
        Counter()
        """
        theirs = self._numba.stats
        if self._rec is None or not self._rec.hits:
            return theirs
        seen = {str(sig) for sig in theirs.cache_hits} | {str(sig) for sig in
                                                         theirs.cache_misses}
        hits = collections.Counter(theirs.cache_hits)
        for sig, n in self._rec.hits.items():
            if sig not in seen:  # a signature numba loaded too is counted once, as numba does
                hits[sig] += n
        return type(theirs)(cache_path=theirs.cache_path, cache_hits=hits,
                            cache_misses=theirs.cache_misses)

    def recompile(self):
        """Compile every signature afresh (numba's recompile), and forget this kernel's
        disk records.

        The next launch of any argument types compiles (a global whose value changed is
        frozen anew, as numba freezes it), in this process and in the next ones.

        Examples
        --------
        >>> @gpuhost.jit
        ... def k(a):
        ...     pass
        >>> k.recompile()  # nothing compiled yet: nothing to compile again
        >>> k.stats.cache_misses
        Counter()
        """
        if self._rec is not None:
            self._rec.drop()
        self._jit_clear()
        self._loaded.clear()
        with _numba.compiling_for(_current_device()):
            self._numba.recompile()

    @property
    def specialized(self):
        """Whether this dispatcher was made by `specialize` (compiled for one set of types).

        A specialized dispatcher launches only with arguments of those types and compiles no
        more.

        Examples
        --------
        >>> @gpuhost.jit
        ... def scale(x, a):
        ...     i = gpuhost.grid(1)
        ...     if i < x.size:
        ...         x[i] *= a
        >>> scale.specialized
        False
        >>> d = gpuhost.device_array(4, np.float32)
        >>> scale.specialize(d, np.float32(2)).specialized  # doctest: +SKIP
        True
        """
        made = self.__dict__.get("_numba")
        if made is None:
            return getattr(self, "_eager_specialized", False)
        return made.specialized

    def configure(self, griddim, blockdim, stream=0, sharedmem=0):
        """A launch configuration, as ``self[griddim, blockdim, stream, sharedmem]``.

        Calling the result with the kernel's arguments launches it. numba's low-occupancy
        warning (NumbaPerformanceWarning for a small grid) is given here, as numba gives it.

        Parameters
        ----------
        griddim : int or tuple of int
            Blocks in the grid, (x, y, z).
        blockdim : int or tuple of int
            Threads per block, (x, y, z).
        stream : gpuhost.Stream or int, optional
            The stream to launch on; 0 (the default): the default stream.
        sharedmem : int, optional
            Bytes of dynamic shared memory per block.

        Returns
        -------
        gpuhost._core.JitLaunch
            Its ``griddim``, ``blockdim``, ``stream`` and ``sharedmem`` are the configuration.

        Examples
        --------
        >>> @gpuhost.jit
        ... def scale(x, a):
        ...     i = gpuhost.grid(1)
        ...     if i < x.size:
        ...         x[i] *= a
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # the low-occupancy warning of a small grid
        ...     launch = scale.configure(4, 128)
        >>> launch.griddim, launch.blockdim
        ((4, 1, 1), (128, 1, 1))
        >>> launch(gpuhost.device_array(512, np.float32), np.float32(2))  # doctest: +SKIP
        """
        return self[griddim, blockdim, stream, sharedmem]

    def specialize(self, *args):
        """A Dispatcher compiled for exactly the types of `args` (numba's specialize).

        The same one comes back for the same types. Launching it skips the lookup of the
        overload for the arguments' types.

        Parameters
        ----------
        *args
            Example arguments (or their numba types), as the kernel would be launched with.

        Returns
        -------
        gpuhost.dispatcher.Dispatcher
            Its `specialized` is True.

        Examples
        --------
        >>> @gpuhost.jit
        ... def scale(x, a):
        ...     i = gpuhost.grid(1)
        ...     if i < x.size:
        ...         x[i] *= a
        >>> d = gpuhost.device_array(4, np.float32)
        >>> fast = scale.specialize(d, np.float32(2))  # doctest: +SKIP
        >>> fast is scale.specialize(d, np.float32(2))  # doctest: +SKIP
        True
        >>> fast[1, 32](d, np.float32(2))  # doctest: +SKIP
        """
        with _numba.compiling_for(_current_device()):
            nd = self._numba.specialize(*args)
        ours = self.__dict__.setdefault("_specializations", {})
        if id(nd) not in ours:
            ours[id(nd)] = (nd, Dispatcher(nd))
        return ours[id(nd)][1]

    def __reduce__(self):
        return (_unpickle_dispatcher, (_numba.pickle_dispatcher(self._numba),))

    def mark_launch_config_sensitive(self):
        """Mark the compilation under way for this kernel's launch as depending on the
        launch configuration (numba-cuda 0.30's).

        Called while a launch compiles (by a numba rewrite, or a replaced
        ``_compile_for_args``), when ``numba.cuda.launchconfig.current_launch_config()`` is
        the configured launch (its ``dispatcher`` this one): the kernel compiled is then
        marked ``launch_config_sensitive`` and a launch with other dimensions compiles its
        own.

        Raises
        ------
        RuntimeError
            No launch compiles in this thread (numba's "No launch config set for this
            thread"), or another dispatcher's does.

        Examples
        --------
        >>> @gpuhost.jit
        ... def k(a):
        ...     pass
        >>> k.mark_launch_config_sensitive()
        Traceback (most recent call last):
            ...
        RuntimeError: No launch config set for this thread
        """
        _numba.mark_launch_config_sensitive(self)

    def _configured(self, launch):
        """A launch configuration made: numba's low-occupancy warning, as numba gives it
        when it configures a launch."""
        _numba.occupancy_warning(launch.griddim)

    def forall(self, ntasks, tpb=0, stream=0, sharedmem=0):
        """A 1-D launch of `ntasks` threads (numba's forall).

        The grid is ``ceil(ntasks / tpb)`` blocks; calling the result with the kernel's
        arguments launches it. The kernel must check its index against `ntasks`.

        Parameters
        ----------
        ntasks : int
            Threads wanted, at least 0.
        tpb : int, optional
            Threads per block; 0 (the default): the block size that maximizes occupancy
            (cuOccupancyMaxPotentialBlockSize), found on the first launch.
        stream : gpuhost.Stream or int, optional
            The stream to launch on; 0: the default stream.
        sharedmem : int, optional
            Bytes of dynamic shared memory per block.

        Returns
        -------
        callable
            ``f(*args)`` launches the kernel.

        Raises
        ------
        ValueError
            For a negative `ntasks`.

        Examples
        --------
        >>> @gpuhost.jit
        ... def scale(x, a):
        ...     i = gpuhost.grid(1)
        ...     if i < x.size:
        ...         x[i] *= a
        >>> d = gpuhost.to_device(np.arange(1000, dtype=np.float32))
        >>> scale.forall(d.size)(d, np.float32(2))  # doctest: +SKIP
        >>> scale.forall(-1)
        Traceback (most recent call last):
            ...
        ValueError: Can't create ForAll with negative task count: -1
        """
        if ntasks < 0:
            raise ValueError("Can't create ForAll with negative task count: %s" % ntasks)
        return _ForAll(self, ntasks, tpb, stream, sharedmem)

    # ---- the launch, where C did not do it all ----

    def _slow_launch(self, launch, args):
        rec, rkey = self._rec, None
        if rec is not None and not launch.pre_launch_callbacks:
            if getattr(_retrying, "launch", None) is launch:
                _retrying.launch = None  # C did not take the launch it was given: why not
                self._refused(launch, args)
            else:
                done, rkey = self._recorded_launch(launch, args, rec)
                if done:
                    return
        self._numba_launch(launch, args, rkey)

    def _recorded_launch(self, launch, args, rec):
        """Launch from the kernel's disk records, without numba: (True, key), or (False,
        the arguments' record key or None) where the records do not answer (numba then
        resolves the launch, and its result is recorded under that key)."""
        keyed = rec.keys() and _record_key(self, args)
        if not keyed:
            return False, None
        rkey, ckey, keep = keyed
        ctx = _core._jit_context(launch.stream)  # the context C launches in, as C picks it
        found = rec.find(rkey, ctx)
        if found is None:
            rec.miss(rkey)
            return False, rkey
        if ckey is None:
            return self._python_launch(launch, args, found, ctx), rkey
        try:  # C launches it, now and from now on
            added = self._jit_add(ckey, keep, found.plan, len(args), found, found.kernel,
                                  found.meta["cooperative"], None)
        except ValueError:  # a plan that is not the kernel's parameters: compiled anew
            rec.forget()
            return False, rkey
        if not added:  # C's table is full: this launch from here
            return self._python_launch(launch, args, found, ctx), rkey
        _retrying.launch = launch
        try:
            launch(*args)
        finally:
            _retrying.launch = None
        return True, rkey

    def _python_launch(self, launch, args, found, ctx):
        """A recorded overload launched with host arrays or hints (copied in and back as
        numba does), packed in C by the record's plan; False where the plan does not take
        the arguments (numba's rules then decide)."""
        retr = []
        views = tuple(_jitargs.device_view(ctx, retr, a, None, launch.stream)
                      if _jitargs.needs_view(a) else a for a in args)
        kernel = found.kernel
        blob = self._jit_pack(found.plan, views, kernel)
        if blob is None:
            return False
        params = [blob[off:off + size] for off, size, _ in kernel.param_info]
        self._launch_kernel(launch, kernel, found.meta["entry"], found.meta["cooperative"],
                            params)
        for writeback in retr:
            writeback()
        return True

    def _refused(self, launch, args):
        """C did not launch what the records registered: dimensions the driver refuses are
        raised here, as numba's launch raises them; anything else is left to numba's
        rules."""
        keyed = self._jit_key(args)
        for key, _, found, _ in self._jit_entries():
            if keyed is not None and key == keyed[0] and hasattr(found, "kernel"):
                self._launch_kernel(launch, found.kernel, found.meta["entry"],
                                    found.meta["cooperative"], None)

    def _numba_launch(self, launch, args, rkey=None):
        # numba types every argument (other libraries' arrays too, as csrc/jit/jit_args.c keys
        # them); what it compiles is registered for C's launches (_remember) and, for a
        # cache=True kernel, recorded on disk (under `rkey`, the arguments' record key)
        ctx = _core._jit_context(launch.stream)
        overload, disp = _numba.resolve(self._numba, launch, args, ctx.device)
        for callback in launch.pre_launch_callbacks:
            callback(overload, launch)
        kernel = self._kernel_for(overload, ctx)
        name, cooperative, debug, _ = _numba.overload_facts(overload)
        extensions = disp.targetoptions.get("extensions") or []
        if not debug and not extensions:
            self._remember(launch, args, overload, disp, kernel, cooperative)
            if self._rec is not None:
                self._record(rkey, overload, disp, ctx)
        if debug:
            _reset_debug_flags(kernel, name, launch.stream)
        retr = []
        params = _numba.pack(overload.argument_types, args, launch.stream, extensions,
                             functools.partial(_jitargs.device_view, ctx, retr), retr)
        self._launch_kernel(launch, kernel, name, cooperative, params)
        if debug:
            _raise_debug_exception(overload, kernel, name, launch.stream)
        for writeback in retr:
            writeback()

    def _launch_kernel(self, launch, kernel, name, cooperative, params):
        """Launch `kernel` with `params` (None: only check the dimensions)."""
        try:
            config = kernel.configure(launch.griddim, launch.blockdim,
                                      _jitargs.stream_arg(launch.stream), launch.sharedmem,
                                      cooperative=cooperative)
        except ValueError as e:  # dimensions the driver refuses: numba's launch error
            raise _numba.launch_error(str(e).replace(
                repr(name), repr(getattr(self.py_func, "__qualname__", name)))) from None
        if params is not None:
            config(*params)

    def _kernel_for(self, overload, ctx):
        """The gpuhost Kernel of `overload` in context `ctx`, loaded there once."""
        from ._jitrecords import kernel_of, load_module

        key = (id(overload), ctx)
        hit = self._loaded.get(key)
        if hit is not None and _core._jit_usable(hit[1]):
            return hit[1]
        name, _, _, carveout = _numba.overload_facts(overload)
        device = ctx.device
        cubin = _numba.cubin_for(overload, device)
        ptx = []  # made only where the driver refuses the cubin (the test double's)
        module, kind = load_module(ctx, cubin,
                                   lambda: ptx.append(_numba.ptx_for(overload, device)) or ptx[0])
        kernel = kernel_of(module, name, carveout)
        self._loaded[key] = (overload, kernel, (cubin if kind == "cubin" else b"",
                                                ptx[0] if ptx else None))
        return kernel

    def _remember(self, launch, args, overload, disp, kernel, cooperative):
        """Let C launch such arguments from now on, where it can key and pack them."""
        keyed = self._jit_key(args)
        plan = _numba.plan(overload.argument_types)
        if keyed is None or plan is None:
            return
        lcs = launch if disp._launch_config_sensitive else None
        self._jit_add(keyed[0], keyed[1], plan, len(args), overload, kernel, cooperative, lcs)

    def _record(self, rkey, overload, disp, ctx):
        """Write what numba chose for arguments of record key `rkey` (None: the overload
        alone), and the code loaded in `ctx`, to the kernel's records."""
        meta = _numba.record_of(overload, disp)
        if meta is not None:
            self._rec.remember(rkey, meta, self._loaded[(id(overload), ctx)][2], ctx.device)

    def _record_eager(self, device):
        """Record an eager kernel's overloads, compiled for `device` (numba's, just now)."""
        if self._rec is None or self._rec.keys() is None:
            return
        made = self._numba
        ctx = _core.current_context()
        recorded = []
        for overload in made.overloads.values():
            meta = _numba.record_of(overload, made)
            if meta is None:
                return
            self._kernel_for(overload, ctx)
            recorded.append((meta, self._loaded[(id(overload), ctx)][2]))
        self._rec.remember_eager(recorded, device)

    def _kernel_for_args(self, args):
        """The Kernel a launch with `args` launches in the current context: from the
        records, else numba's (compiled now if need be, and recorded)."""
        ctx = _core.current_context()
        keyed = self._rec.keys() and _record_key(self, args) if self._rec is not None else None
        if keyed:
            found = self._rec.find(keyed[0], ctx)
            if found is not None:
                return found.kernel
        if self.specialized:
            return self._kernel_for(next(iter(self._numba.overloads.values())), ctx)
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numba's occupancy warning: never launched
            launch = self[1, 1]
        overload, disp = _numba.resolve(self._numba, launch, args, ctx.device)
        kernel = self._kernel_for(overload, ctx)
        if keyed:
            self._record(keyed[0], overload, disp, ctx)
        return kernel


def _unpickle_dispatcher(data):
    return Dispatcher(_numba.adopt(_numba.unpickle_dispatcher(data)))


def _launch_of(dispatcher, griddim, blockdim, stream, sharedmem):
    """dispatcher[griddim, blockdim, stream, sharedmem]: a JitLaunch unpickled."""
    return dispatcher[griddim, blockdim, stream, sharedmem]


class _ForAll:
    """numba's ForAll: a 1-D launch sized from the task count."""

    def __init__(self, dispatcher, ntasks, tpb, stream, sharedmem):
        self.dispatcher, self.ntasks, self.thread_per_block = dispatcher, ntasks, tpb
        self.stream, self.sharedmem = stream, sharedmem

    def __call__(self, *args):
        if self.ntasks == 0:
            return None
        d = self.dispatcher
        if not d.specialized and d._rec is None:  # numba's: a specialization for the types
            d = d.specialize(*args)
        tpb = self.thread_per_block
        if tpb == 0:  # (a cache=True kernel launches from its records, as any launch)
            kernel = d._kernel_for_args(args)
            _, tpb = kernel.max_potential_block_size(self.sharedmem, 1024)
        blocks = (self.ntasks + tpb - 1) // tpb
        return d[blocks, tpb, self.stream, self.sharedmem](*args)


# ---- arguments ----

def _record_key(disp, args):
    from ._jitrecords import record_key

    return record_key(disp, args)


# ---- debug kernels: numba's error flags ----

def _flag(kernel, symbol):
    return kernel.module.get_global(symbol, np.int32, (1,))


def _reset_debug_flags(kernel, name, stream):
    _flag(kernel, name + "__errcode__").copy_to_device(np.zeros(1, np.int32),
                                                       stream=_jitargs.stream_arg(stream) or 0)


def _raise_debug_exception(overload, kernel, name, stream):
    def read(symbol):
        return int(_flag(kernel, symbol).copy_to_host(stream=_jitargs.stream_arg(stream) or 0)[0])

    code = read(name + "__errcode__")
    if code == 0:
        return
    tid = [read("%s__tid%s__" % (name, i)) for i in "zyx"]
    ctaid = [read("%s__ctaid%s__" % (name, i)) for i in "zyx"]
    raise _numba.debug_exception(overload, code, tid, ctaid)


# A configured launch's __reduce__ names this (csrc/jit/jit_launch.c): registered once.
_core._set_helpers(jit_launch_of=_launch_of)
