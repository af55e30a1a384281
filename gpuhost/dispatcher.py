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
"""
import functools
import weakref

import numpy as np

from . import _core, _numba

__all__ = ["Dispatcher", "jit"]


def jit(func_or_sig=None, device=False, inline="never", forceinline=False, link=(),
        debug=None, opt=None, lineinfo=False, cache=False, launch_bounds=None, lto=None,
        shared_memory_carveout=None, **kws):
    """numba.cuda.jit, launched by gpuhost.

    Parameters are numba-cuda's (0.30): ``func_or_sig`` a function, or a signature or list
    of signatures for eager compilation; ``device``, ``inline``, ``forceinline``, ``link``,
    ``debug``, ``opt``, ``lineinfo``, ``cache``, ``launch_bounds``, ``lto``,
    ``shared_memory_carveout``, and ``fastmath``, ``max_registers``, ``extensions``
    through ``kws``.

    Returns
    -------
    Dispatcher
        for a kernel; a device function (``device=True``) is numba's own dispatcher, as
        only kernels are launched from the host.

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
    cuda = _numba.load()
    options = dict(device=device, inline=inline, forceinline=forceinline, link=link,
                   debug=debug, opt=opt, lineinfo=lineinfo, cache=cache,
                   launch_bounds=launch_bounds, lto=lto,
                   shared_memory_carveout=shared_memory_carveout, **kws)
    # numba's own decorator, called now (its checks and warnings come at decoration, as
    # with numba); what it makes for a kernel is adopted as gpuhost's.
    made = cuda.jit(func_or_sig, **options)
    if device:
        return made  # device functions are called from kernels only: numba's own
    if callable(made) and not hasattr(made, "py_func"):
        return functools.wraps(made)(lambda func: _adopted(made(func)))
    return _adopted(made)


def _adopted(numba_dispatcher):
    if not _numba.is_numba_kernel_dispatcher(numba_dispatcher):
        return numba_dispatcher  # numba's simulator (NUMBA_ENABLE_CUDASIM): its own kernels
    return Dispatcher(_numba.adopt(numba_dispatcher))


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
        self._numba = numba_dispatcher
        self._loaded = {}  # (id(overload), Context) -> (overload, Kernel)
        if isinstance(numba_dispatcher, _numba.dispatcher_class()):
            numba_dispatcher._gpuhost_owner = weakref.ref(self)
        functools.update_wrapper(self, numba_dispatcher.py_func)

    def __getattr__(self, name):
        if (name.startswith("__") and name not in _FUNCTION_DUNDERS) or name in ("_numba",
                                                                                "_loaded"):
            raise AttributeError(name)
        return getattr(self._numba, name)

    def __repr__(self):
        return "<gpuhost.jit Dispatcher of %s>" % getattr(self._numba.py_func, "__qualname__", "?")

    def __call__(self, *args, **kwargs):
        raise ValueError(_numba.missing_launch_config_msg())

    @property
    def _numba_type_(self):
        return self._numba._numba_type_

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
        return self._numba.specialized

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
        # numba types every argument (other libraries' arrays too, as csrc/jit/jit_args.c keys
        # them); what it compiles is registered for C's launches (_remember)
        overload, disp = _numba.resolve(self._numba, launch, args)
        for callback in launch.pre_launch_callbacks:
            callback(overload, launch)
        ctx = _launch_context(launch.stream)
        kernel = self._kernel_for(overload, ctx)
        name, cooperative, debug, _ = _numba.overload_facts(overload)
        extensions = disp.targetoptions.get("extensions") or []
        if not debug and not extensions:
            self._remember(launch, args, overload, disp, kernel, cooperative)
        if debug:
            _reset_debug_flags(kernel, name, launch.stream)
        retr = []
        params = _numba.pack(overload.argument_types, args, launch.stream, extensions,
                             functools.partial(_device_view, ctx, retr), retr)
        try:
            config = kernel.configure(launch.griddim, launch.blockdim, _stream(launch.stream),
                                      launch.sharedmem, cooperative=cooperative)
        except ValueError as e:  # dimensions the driver refuses: numba's launch error
            raise _numba.launch_error(str(e).replace(
                repr(name), repr(getattr(self._numba.py_func, "__qualname__", name)))) from None
        config(*params)
        if debug:
            _raise_debug_exception(overload, kernel, name, launch.stream)
        for writeback in retr:
            writeback()

    def _kernel_for(self, overload, ctx):
        """The gpuhost Kernel of `overload` in context `ctx`, loaded there once."""
        key = (id(overload), ctx)
        hit = self._loaded.get(key)
        if hit is not None and _core._jit_usable(hit[1]):
            return hit[1]
        name, _, _, carveout = _numba.overload_facts(overload)
        with ctx.device:  # loaded in ctx, whichever context is current
            module = _core.Module(_numba.cubin_for(overload, ctx.device))
        _core._live_kept(module)  # cached by design: no leak for the leak check
        kernel = module.get_function(name)
        if carveout is not None and carveout >= 0:  # -1: the driver's default
            kernel.preferred_shared_memory_carveout = carveout
        self._loaded[key] = (overload, kernel)
        return kernel

    def _remember(self, launch, args, overload, disp, kernel, cooperative):
        """Let C launch such arguments from now on, where it can key and pack them."""
        keyed = self._jit_key(args)
        plan = _numba.plan(overload.argument_types)
        if keyed is None or plan is None:
            return
        lcs = launch if disp._launch_config_sensitive else None
        self._jit_add(keyed[0], keyed[1], plan, len(args), overload, kernel, cooperative, lcs)


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
        d = self.dispatcher if self.dispatcher.specialized else self.dispatcher.specialize(*args)
        tpb = self.thread_per_block
        if tpb == 0:
            overload = next(iter(d.overloads.values()))
            kernel = d._kernel_for(overload, _core.current_context())
            _, tpb = kernel.max_potential_block_size(self.sharedmem, 1024)
        blocks = (self.ntasks + tpb - 1) // tpb
        return d[blocks, tpb, self.stream, self.sharedmem](*args)


# ---- arguments ----

def _launch_context(stream):
    """The Context a launch goes to, as the C launcher picks it: a gpuhost stream's own
    (not a default or foreign one), else the current context."""
    if isinstance(stream, _core.Stream) and not stream.external and int(stream.handle) > 2:
        return stream.context
    return _core.current_context()


def _stream(stream):
    return None if (isinstance(stream, int) and stream == 0) else stream


def _device_view(ctx, retr, value, ty, stream):
    """A DeviceArray for an array (or record) argument of numba type `ty`: device arrays as
    they are; host arrays copied in and, after the launch, back (numba's default, and its
    In / Out / InOut hints)."""
    from ._arrays import to_device

    ArgHint, In, Out, InOut = _numba.arg_hint_classes()
    hint = InOut
    if isinstance(value, ArgHint):
        hint, value = type(value), value.value
    if isinstance(value, np.ndarray) and hasattr(value, "__cuda_array_interface__"):
        from ._arrays import as_cuda_array

        return as_cuda_array(value)  # mapped or managed memory: the device reaches it
    if not isinstance(value, (np.ndarray, np.void)):
        # a device array: gpuhost's, or another library's read in C (the launch's stream
        # ordered after its exporter's); a dtype NumPy lacks (bfloat16) travels as bytes
        dev = _core._foreign_array(value, _stream(stream), void_ok=True, host_ok=True)
        if dev is None and hasattr(value, "__dlpack__"):
            raise TypeError("%s is in host memory, not device memory; move it to the GPU "
                            "first" % type(value).__name__)
        if dev is not None:
            if dev.context is not ctx:
                raise ValueError("a device array of device %d was passed to a kernel launched "
                                 "on device %d" % (dev.context.device.id, ctx.device.id))
            return dev
    host = value
    if isinstance(value, np.void):
        host = np.array(value, dtype=value.dtype)  # a record: copied in as an array of one
    host = np.asanyarray(host)
    copy_in = hint is not Out
    if copy_in and hint is InOut and isinstance(value, np.ndarray):
        _numba.performance_warning("Host array used in CUDA kernel will incur copy overhead "
                                   "to/from device.")
    stream = _stream(stream) or 0
    dev = to_device(host, stream=stream) if copy_in else _empty_like(host, stream)
    if hint is not In:
        retr.append(functools.partial(_copy_back, dev, value, host, stream))
    return dev


def _empty_like(host, stream):
    from ._arrays import device_array

    return device_array(host.shape, host.dtype, stream=stream)


def _copy_back(dev, value, host, stream):
    if isinstance(value, np.void):
        got = dev.copy_to_host(stream=stream)[()]
        for name in value.dtype.names or ():  # a record scalar is a view: field by field
            value[name] = got[name]
    elif isinstance(value, np.ndarray) and value.flags.writeable:
        dev.copy_to_host(value, stream=stream)


# ---- debug kernels: numba's error flags ----

def _flag(kernel, symbol):
    return kernel.module.get_global(symbol, np.int32, (1,))


def _reset_debug_flags(kernel, name, stream):
    _flag(kernel, name + "__errcode__").copy_to_device(np.zeros(1, np.int32),
                                                       stream=_stream(stream) or 0)


def _raise_debug_exception(overload, kernel, name, stream):
    def read(symbol):
        return int(_flag(kernel, symbol).copy_to_host(stream=_stream(stream) or 0)[0])

    code = read(name + "__errcode__")
    if code == 0:
        return
    tid = [read("%s__tid%s__" % (name, i)) for i in "zyx"]
    ctaid = [read("%s__ctaid%s__" % (name, i)) for i in "zyx"]
    raise _numba.debug_exception(overload, code, tid, ctaid)


# A configured launch's __reduce__ names this (csrc/jit/jit_launch.c): registered once.
_core._set_helpers(jit_launch_of=_launch_of)
