"""Everything gpuhost.jit knows of numba-cuda, in one place (design decision 12,
docs/development/architecture.md).

numba-cuda types and compiles Python kernels; gpuhost launches them. This module is
imported on first use, not with gpuhost (gpuhost/compat/numba/_streams.py is); it imports
numba-cuda on first use too, checks that its version is one whose internals it was
written against, and holds every use of those internals: the
dispatcher subclass that tells gpuhost when its overloads change, the resolution of an
overload for a launch (numba's own typing, conversions and launch-configuration rules),
numba's parameter layout as a plan for the C launcher, numba's types for gpuhost's
arrays, numba's compilations aimed at gpuhost's device (compiling_for), and what gpuhost.jit's
disk records keep of a compiled overload (record_of). Nothing here launches.

What a launch asks of numba-cuda's configuration and warnings (occupancy_warning,
performance_warning, missing_launch_config_msg) is answered without importing it where it is
not imported yet: a launch from gpuhost.jit's disk records runs with no numba at all.
"""
import os
import sys
import threading

import numpy as np

from . import _core

# numba-cuda versions whose internals this module was written and tested against.
SUPPORTED = ((0, 30), (0, 31))  # >= 0.30, < 0.31
SUPPORTED_TEXT = "numba-cuda >=0.30,<0.31"
INSTALL_HINT = "pip install 'numba-cuda>=0.30,<0.31' (gpuhost's 'jit' extra)"

_lock = threading.Lock()
_loaded = None


def _version_tuple(text):
    parts = []
    for piece in text.split(".")[:3]:
        digits = "".join(c for c in piece if c.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def installed_version():
    """numba-cuda's version string, or None when it is not installed."""
    from importlib import metadata

    try:
        return metadata.version("numba-cuda")
    except metadata.PackageNotFoundError:
        return None


def supported_installed():
    """Whether a numba-cuda of a supported version is installed, found without importing
    it (or importlib.metadata)."""
    from . import _jitcache

    version = _jitcache.versions()["numba-cuda"]
    return version is not None and SUPPORTED[0] <= _version_tuple(version)[:2] < SUPPORTED[1]


def load():
    """numba.cuda, imported and checked once; ImportError saying what to install."""
    global _loaded
    if _loaded is not None:
        return _loaded
    with _lock:
        if _loaded is None:
            _loaded = _import_checked()
    return _loaded


def _import_checked():
    version = installed_version()
    if version is None:
        raise ImportError("gpuhost.jit compiles Python kernels with numba-cuda, which is not "
                          "installed: %s" % INSTALL_HINT)
    v = _version_tuple(version)[:2]
    if not SUPPORTED[0] <= v < SUPPORTED[1]:
        raise ImportError("gpuhost.jit supports %s; numba-cuda %s is installed"
                          % (SUPPORTED_TEXT, version))
    if not hasattr(np, "row_stack"):
        # numba-cuda 0.30 registers an implementation for np.row_stack at import, a name
        # NumPy 2.5 removed (it was np.vstack's alias); without it numba.cuda cannot import.
        np.row_stack = np.vstack
    from numba import cuda

    _register_typeof(cuda)
    _aim_compilations()
    return cuda


# ---- numba's compilations aimed at gpuhost's device ----

def compiling_for(device):
    """A context manager: while it lasts, numba-cuda's compilations in this thread are for
    `device` (a gpuhost Device; None: numba's own current device), as gpuhost launches
    them.

    numba asks its own driver for the current device's compute capability when it compiles
    a kernel or device function and when it keys its cache, and loads each kernel it
    compiles into its own context (its _Kernel.bind). Here the compute capability is
    `device`'s and bind only generates the code (the cubin, as numba's bind forces it, so
    that numba's own cache keeps it): gpuhost loads the code itself, so compiling needs
    neither numba's driver nor numba's context (nor a GPU: numba-cuda compiles for a given
    compute capability without one)."""
    return _Aim(device)


class _Aim:
    def __init__(self, device):
        self.device, self.prev = device, None

    def __enter__(self):
        self.prev = getattr(_tls, "target", None)
        if self.device is not None:
            _tls.target = self.device
        return self.device

    def __exit__(self, *exc):
        _tls.target = self.prev
        return False


def _arch(device):
    """numba's (major, minor, suffix) for a device: the "a" features from 9.0 up."""
    cc = tuple(device.compute_capability)
    return (cc[0], cc[1], "a" if cc >= (9, 0) else "")


def _aim_compilations():
    """Installs compiling_for's redirections once, into numba-cuda 0.30's dispatcher and
    codegen modules: each asks compiling_for's device first and otherwise does what numba
    did."""
    from numba.cuda import codegen
    from numba.cuda import dispatcher as nd

    if getattr(nd, "_gpuhost_aimed", False):
        return
    numba_device = nd.get_current_device

    def get_current_device():
        target = getattr(_tls, "target", None)
        return target if target is not None else numba_device()

    library = codegen.CUDACodeLibrary
    numba_ensure_cc = library._ensure_cc

    def _ensure_cc(self, cc):
        target = getattr(_tls, "target", None)
        if cc is None and target is not None:
            return _arch(target)
        return numba_ensure_cc(self, cc)

    numba_magic = codegen.JITCUDACodegen.magic_tuple

    def magic_tuple(self):
        target = getattr(_tls, "target", None)
        if target is None:
            return numba_magic(self)
        from numba.cuda.cudadrv import runtime

        return (runtime.runtime.get_version(), tuple(target.compute_capability))

    numba_bind = nd._Kernel.bind

    def bind(self):
        target = getattr(_tls, "target", None)
        if target is None:
            return numba_bind(self)
        lib = self._codelibrary
        try:
            lib.get_cubin(cc=_arch(target))
        except Exception:
            # no linker here (neither nvJitLink nor a driver that links): a kernel that
            # needs nothing linked is loaded from its PTX (code_images), else numba's error
            if lib._linking_files or lib.needs_cudadevrt:
                raise
            lib.get_asm_str(cc=_arch(target))
        return None

    nd.get_current_device = get_current_device
    library._ensure_cc = _ensure_cc
    codegen.JITCUDACodegen.magic_tuple = magic_tuple
    nd._Kernel.bind = bind
    nd._gpuhost_aimed = True


def _register_typeof(cuda):
    """numba's type for a gpuhost DeviceArray, from gpuhost's own layout rule (the one the
    C launcher keys on), instead of a DLPack export per typing."""
    from numba.cuda import types
    from numba.cuda.np import numpy_support
    from numba.cuda.typing.typeof import typeof_impl

    @typeof_impl.register(_core.DeviceArray)
    def _typeof_devicearray(val, c):
        layout, readonly = _core._jit_layout(val)
        return types.Array(numpy_support.from_dtype(val.dtype), val.ndim, layout,
                           readonly=readonly)


# ---- the dispatcher ----

_dispatcher_class = None


def dispatcher_class():
    """numba's CUDADispatcher, telling its gpuhost Dispatcher when its overloads change."""
    global _dispatcher_class
    if _dispatcher_class is None:
        from numba.cuda.dispatcher import CUDADispatcher

        class GpuhostNumbaDispatcher(CUDADispatcher):
            _gpuhost_owner = None

            def _compile_for_args(self, *args, **kws):
                # numba's C dispatcher compiles a launch through _compile_for_args, and
                # numba programs (and numba's tests) replace it on the dispatcher they
                # hold, which is gpuhost's: its replacement runs, once (calling what it
                # replaced brings it back here).
                owner = self._gpuhost_owner() if self._gpuhost_owner else None
                replaced = owner.__dict__.get("_compile_for_args") if owner is not None \
                    else None
                if replaced is None or getattr(_tls, "in_replaced", False):
                    return super()._compile_for_args(*args, **kws)
                _tls.in_replaced = True
                try:
                    return replaced(*args, **kws)
                finally:
                    _tls.in_replaced = False

            def mark_launch_config_sensitive(self):
                owner = self._gpuhost_owner() if self._gpuhost_owner else None
                mark_launch_config_sensitive(owner if owner is not None else self)

            def add_overload(self, kernel, argtypes):
                super().add_overload(kernel, argtypes)
                owner = self._gpuhost_owner() if self._gpuhost_owner else None
                if owner is not None:
                    owner._jit_clear()

            def _reset_overloads(self):
                super()._reset_overloads()
                owner = self._gpuhost_owner() if self._gpuhost_owner else None
                if owner is not None:
                    owner._jit_clear()

        _dispatcher_class = GpuhostNumbaDispatcher
    return _dispatcher_class


def is_numba_kernel_dispatcher(obj):
    from numba.cuda.dispatcher import CUDADispatcher

    return isinstance(obj, CUDADispatcher)


def adopt(numba_disp):
    """numba's kernel dispatcher as gpuhost's subclass (same layout, one behaviour more:
    telling its gpuhost Dispatcher when its overloads change), its disk cache made safe."""
    numba_disp.__class__ = dispatcher_class()
    _adopt_cache(numba_disp)
    return numba_disp


def _adopt_cache(numba_disp):
    """numba-cuda's own disk cache (`cache=True`), as gpuhost's records need it:
      - keyed by the code of the functions the kernel calls too (numba keys the kernel's
        own code and its source file's stamp only, so an edited device function in another
        file would load a stale caller from it); a kernel that calls none keeps numba's own
        key, which numba-cuda alone reads and writes alike;
      - without its failures: an index or data file that does not unpickle is a miss (the
        kernel is compiled and the file written again), and a folder that cannot be written
        (full, read-only, a file) leaves the kernel uncached instead of failing its launch,
        as gpuhost's own records do."""
    from numba.cuda.dispatcher import CUDACache

    cache = getattr(numba_disp, "_cache", None)
    if not isinstance(cache, CUDACache) or getattr(cache, "_gpuhost_guarded", False):
        return
    numba_load, numba_save = cache.load_overload, cache.save_overload
    numba_index_key = cache._index_key
    callees = []

    def _index_key(sig, codegen):
        key = numba_index_key(sig, codegen)
        if not callees:
            from . import _jitcache

            try:
                callees.append(_jitcache.callee_digest(numba_disp.py_func))
            except Exception:  # code gpuhost cannot read: numba's own key, as without it
                callees.append(None)
        return key if callees[0] is None else key + (("gpuhost callees", callees[0]),)

    def load_overload(sig, target_context):
        try:
            return numba_load(sig, target_context)
        except Exception:  # a torn, corrupt or foreign pickle: numba's own cache misses
            return None

    def save_overload(sig, data):
        try:
            numba_save(sig, data)
        except OSError:
            pass

    cache.load_overload, cache.save_overload = load_overload, save_overload
    cache._index_key = _index_key
    cache._gpuhost_guarded = True
    _share_index_with_cpu_numba(cache)


def _share_index_with_cpu_numba(cache):
    """numba's CPU target and numba-cuda keep one index file (``.nbi``) for a function
    cached by both, as numba-cuda's caching intends; but numba 0.68 stamps the source file
    by its content's hash where numba-cuda 0.30 stamps it by mtime and size, so each target
    finds the other's index stale and writes it anew without the other's entries (with
    numba-cuda alone too). Where CPU numba would stamp this very index file otherwise, the
    CUDA cache takes the CPU's stamp, and both targets keep their entries. Only where numba
    (the CPU target) is importable; otherwise, or if anything is unexpected, numba-cuda's
    own stamp stays."""
    try:
        from numba.core import caching as cpu_caching

        cpu = cpu_caching.FunctionCache(cache._py_func)
        ours, theirs = cache._cache_file, cpu._cache_file
        if (theirs._index_path == ours._index_path and theirs._version == ours._version
                and theirs._source_stamp != ours._source_stamp):
            ours._source_stamp = theirs._source_stamp
    except Exception:  # no CPU numba, another numba's internals, an uncachable function
        pass


def resolve(numba_disp, launch, args, device):
    """(overload, dispatcher) that numba would launch for `args` under `launch`'s
    dimensions: the launch-configuration specialization numba picks, numba's own typing and
    conversions, compiling when numba would (for `device`, the launch's: compiling_for).
    Runs no pre-launch callback.

    gpuhost's configured launch (`launch`, a JitLaunch) is numba's launch configuration
    here, as numba-cuda 0.30 shows it while a launch compiles: current for the thread
    (``numba.cuda.launchconfig.current_launch_config()``), its ``dispatcher`` the gpuhost
    Dispatcher launched, its ``args`` this thread's launch arguments."""
    from numba.cuda.cext import _dispatcher
    from numba.cuda.dispatcher import _LAUNCH_CONFIG_KW

    prev = _dispatcher.swap_current_launch_args(args)
    try:
        with compiling_for(device):
            disp = numba_disp._select_launch_config_dispatcher(launch)
            if disp.specialized:
                overload = next(iter(disp.overloads.values()))
                _check_specialized(disp, overload, args)
            else:
                overload = _dispatcher.Dispatcher._cuda_call(disp, *args,
                                                             **{_LAUNCH_CONFIG_KW: launch})
            disp._update_launch_config_sensitivity(overload, launch)
    finally:
        _dispatcher.swap_current_launch_args(prev)
        _marks().pop(id(launch), None)
    return overload, disp


def _check_specialized(disp, overload, args):
    """The arguments of a launch of a specialized dispatcher (one eager signature given as a
    string, or numba's specialize()) checked against its one overload. numba-cuda 0.30
    launches that overload without looking (a float64 array passed for ``float32[::1]`` is
    read as float32, silently wrong); gpuhost refuses what numba's dispatcher would refuse
    for the same signature given in a list: numba's TypeError, in numba's words."""
    formals = overload.signature.args
    actuals = [disp.typeof_pyval(a) for a in args]
    if len(actuals) == len(formals) and all(
            disp.typingctx.can_convert(a, f) is not None for a, f in zip(actuals, formals)):
        return
    raise TypeError("No matching definition for argument type(s) %s"
                    % ", ".join(str(a) for a in actuals))


# ---- numba-cuda 0.30's launch configuration, as gpuhost's configured launch shows it ----

_tls = threading.local()


def _marks():
    """{id(JitLaunch): True} of the launches whose compilation under way in this thread
    was marked launch-configuration sensitive (numba keeps the flag on its configuration
    object; a JitLaunch is shared by threads, so here it is the thread's, and dropped when
    the compilation ends)."""
    marks = getattr(_tls, "marks", None)
    if marks is None:
        marks = _tls.marks = {}
    return marks


def _launch_args(launch):
    """The arguments of the launch under way in this thread (None outside one).

    numba's ``_LaunchConfiguration.args``: a launch configuration is shared by the threads
    that launch it, each sees its own arguments while its launch compiles.

    Examples
    --------
    >>> @gpuhost.jit
    ... def k(a):
    ...     pass
    >>> k[1, 1].args is None
    True
    """
    from numba.cuda.cext import _dispatcher

    return _dispatcher.get_current_launch_args()


def _get_lcs_mark(launch):
    return _marks().get(id(launch))


def _set_lcs_mark(launch, value):
    _marks()[id(launch)] = value


def _is_lcs(launch):
    """Whether the compilation under way for this launch was marked launch-configuration
    sensitive (numba's compiler asks, to record it in the kernel's metadata)."""
    return bool(_marks().get(id(launch)))


def mark_launch_config_sensitive(dispatcher):
    """Mark the compilation under way for `dispatcher`'s launch as depending on the launch
    configuration (numba-cuda 0.30's ``mark_launch_config_sensitive``): RuntimeError when no
    launch compiles in this thread, or when it is another dispatcher's."""
    from numba.cuda import launchconfig

    cfg = launchconfig.ensure_current_launch_config()
    if cfg.dispatcher is not dispatcher and getattr(dispatcher, "_numba", None) is not cfg.dispatcher:
        raise RuntimeError("mark_launch_config_sensitive() must be called on the active "
                           "launch configuration's dispatcher")
    cfg._kernel_launch_config_sensitive = True


def _attach_launch_config():
    from . import _methods

    _methods.attribute(_core.JitLaunch, "args", _launch_args)
    _methods.attribute(_core.JitLaunch, "_kernel_launch_config_sensitive", _get_lcs_mark,
                       _set_lcs_mark)
    _methods.method(_core.JitLaunch, "_is_kernel_launch_config_sensitive")(_is_lcs)


_attach_launch_config()


def pickle_dispatcher(numba_disp):
    """numba's dispatcher pickled as numba pickles it (its function by value), as numba's
    own class: gpuhost's subclass is made anew on unpickling."""
    import pickle

    from numba.cuda.dispatcher import CUDADispatcher

    cls = numba_disp.__class__
    numba_disp.__class__ = CUDADispatcher
    try:
        return pickle.dumps(numba_disp)
    finally:
        numba_disp.__class__ = cls


def unpickle_dispatcher(data):
    import pickle

    load()
    return pickle.loads(data)


# ---- the error of a launch the driver refuses ----

_launch_error_class = None


def launch_error_class():
    """The class of a gpuhost.jit launch whose dimensions the driver refuses: gpuhost's
    CudaAPIError, and cuda.core's CUDAError, which numba-cuda 0.30 raises for such a launch
    (cuda.core launches its kernels, and numba programs catch it); CudaAPIError alone where
    cuda.core cannot be imported."""
    global _launch_error_class
    if _launch_error_class is None:
        from .errors import CudaAPIError

        try:
            from cuda.core._utils.cuda_utils import CUDAError
            bases = (CudaAPIError, CUDAError)
        except ImportError:
            bases = (CudaAPIError,)
        _launch_error_class = type("JitLaunchError", bases, {
            "__module__": __name__,
            "__doc__": launch_error_class.__doc__,
            "__reduce__": lambda self: (launch_error, (self.msg,)),
        })
    return _launch_error_class


def launch_error(msg):
    """CUDA_ERROR_INVALID_VALUE, as the driver refuses a launch's dimensions, saying why
    (`msg`), of `launch_error_class`."""
    return launch_error_class()(1, "CUDA_ERROR_INVALID_VALUE", msg)


def __getattr__(name):
    if name == "JitLaunchError":  # the class, by the name it pickles under
        return launch_error_class()
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


def _config(name, variable, default):
    """numba-cuda's configuration value `name`: its config module's where numba-cuda is
    imported (a program may have changed it there), else read from the environment
    `variable` as numba-cuda reads it (an int; `default` when unset or not a number)."""
    config = sys.modules.get("numba.cuda.core.config")
    if config is not None:
        return getattr(config, name)
    try:
        return int(os.environ.get(variable) or default)
    except ValueError:
        return default


class NumbaPerformanceWarning(Warning):
    """numba's performance warning where numba-cuda is not imported (a launch from
    gpuhost.jit's disk records): numba-cuda's own NumbaPerformanceWarning wherever it is."""


def _performance_warning_class():
    errors = sys.modules.get("numba.cuda.core.errors")
    return NumbaPerformanceWarning if errors is None else errors.NumbaPerformanceWarning


def _performance_warnings(flag, variable):
    return _config(flag, variable, 1) and not _config("DISABLE_PERFORMANCE_WARNINGS",
                                                      "NUMBA_DISABLE_PERFORMANCE_WARNINGS", 0)


def occupancy_warning(griddim):
    """numba's NumbaPerformanceWarning for a grid of fewer than 128 blocks."""
    import warnings

    size = griddim[0] * griddim[1] * griddim[2]
    if size < 128 and _performance_warnings("CUDA_LOW_OCCUPANCY_WARNINGS",
                                            "NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS"):
        warnings.warn(_performance_warning_class()(
            "Grid size %d will likely result in GPU under-utilization due to low "
            "occupancy." % size), stacklevel=3)


def cubin_for(overload, device):
    """The linked cubin of a compiled overload for `device`, as numba links it."""
    cubin = overload._codelibrary.get_cubin(cc=_arch(device))
    return getattr(cubin, "code", cubin)  # numba-cuda 0.30: a cuda.core ObjectCode


def ptx_for(overload, device):
    """The PTX of a compiled overload for `device` (nothing linked in), as bytes."""
    return overload._codelibrary.get_asm_str(cc=_arch(device)).encode()


def record_of(overload, disp):
    """What gpuhost.jit's disk records keep of a compiled overload, to launch it in another
    process without numba (gpuhost/_jitcache.py), as a dict of JSON values; None where
    nothing is kept and numba's own rules (and its own cache) take every launch: arguments
    of a type the Python side alone packs (no plan), debug kernels (raising their exceptions
    needs numba's tables), a dispatcher with extensions (they convert each launch's
    arguments), and launch-configuration-sensitive kernels (compiled per launch
    configuration)."""
    argtypes = tuple(overload.argument_types)
    layout = plan(argtypes)
    options = disp.targetoptions
    if layout is None or overload.debug or options.get("extensions") or \
            getattr(overload, "launch_config_sensitive", False) or \
            disp._launch_config_sensitive:
        return None
    name, cooperative, _, carveout = overload_facts(overload)
    lib = overload._codelibrary
    links = sorted(os.path.basename(str(getattr(f, "name", f))) for f in lib._linking_files)
    if lib.needs_cudadevrt:
        links.append("cudadevrt")
    return {"sig": str(argtypes), "entry": name, "plan": layout.hex(), "nargs": len(argtypes),
            "cooperative": cooperative, "carveout": carveout, "links": links,
            "launch_bounds": options.get("launch_bounds"),
            "lineinfo": bool(options.get("lineinfo"))}


def overload_facts(overload):
    """(entry name, cooperative, debug, shared-memory carveout or None) of an overload."""
    return (overload.entry_name, bool(overload.cooperative), bool(overload.debug),
            getattr(overload, "shared_memory_carveout", None))


def debug_exception(overload, code, tid, ctaid):
    """The exception a debug kernel reported (numba's class and message form)."""
    import os

    exccls, exc_args, loc = overload.call_helper.get_exception(code)
    locinfo = ""
    if loc is not None:
        sym, filepath, lineno = loc
        locinfo = "In function %r, file %s, line %s, " % (sym, os.path.abspath(filepath), lineno)
    prefix = "%stid=%s ctaid=%s" % (locinfo, tid, ctaid)
    if exc_args:
        exc_args = ("%s: %s" % (prefix, exc_args[0]),) + tuple(exc_args[1:])
    else:
        exc_args = (prefix,)
    return exccls(*exc_args)


# ---- numba's parameter layout ----

def plan(argtypes):
    """The C launcher's plan for numba types `argtypes` (see csrc/jit/jit_launch.c), or None
    where a type is packed by the Python side only (records, datetimes, enums, ...)."""
    from numba.cuda import types

    out = bytearray()

    def one(ty):
        if isinstance(ty, types.Array):
            out.extend((ord("A"), ty.ndim))
        elif isinstance(ty, types.CPointer):
            out.extend((ord("p"), 0))
        elif isinstance(ty, types.Boolean):
            out.extend((ord("b"), 0))
        elif isinstance(ty, types.Integer):
            out.extend((ord("i"), ty.bitwidth // 8, 1 if ty.signed else 0))
        elif isinstance(ty, types.Float):
            out.extend((ord("f"), ty.bitwidth // 8))
        elif isinstance(ty, types.Complex):
            out.extend((ord("c"), ty.bitwidth // 8))
        elif isinstance(ty, types.BaseTuple) and len(ty) < 256:
            out.extend((ord("t"), len(ty)))
            for t in ty:
                if not one(t):
                    return False
        else:
            return False
        return True

    for ty in argtypes:
        if not one(ty):
            return None
    return bytes(out)


def pack(argtypes, args, stream, extensions, device_view, retr):
    """numba's parameters for `args`, one bytes object per kernel parameter, by numba's
    rules (its _Kernel._prepare_args): the dispatcher's extensions first (last to first),
    arrays as meminfo, parent, nitems, itemsize, data, shape, strides, scalars through
    ctypes as numba converts them, records by a device copy, tuples flattened.
    `device_view(value, kind, stream)` gives a DeviceArray for an array argument and
    takes care of copying back what it copied in."""
    import ctypes

    from numba.cuda import types

    q = ctypes.c_int64
    params = []

    def one(ty, val):
        for ext in reversed(extensions):
            ty, val = ext.prepare_args(ty, val, stream=stream, retr=retr)
        if isinstance(ty, types.Array):
            dev = device_view(val, ty, stream)
            params.extend(bytes(q(v)) for v in (0, 0, dev.size, dev.dtype.itemsize, dev.ptr))
            params.extend(bytes(q(v)) for v in dev.shape)
            params.extend(bytes(q(v)) for v in dev.strides)
        elif isinstance(ty, types.CPointer):
            params.append(bytes(ctypes.c_uint64(val)))
        elif isinstance(ty, types.Boolean):
            params.append(bytes(ctypes.c_bool(val)))
        elif isinstance(ty, types.Integer):
            params.append(bytes(getattr(ctypes, "c_%s" % ty)(val)))
        elif ty == types.float16:
            params.append(np.float16(val).view(np.uint16).tobytes())
        elif ty == types.float32:
            params.append(bytes(ctypes.c_float(val)))
        elif ty == types.float64:
            params.append(bytes(ctypes.c_double(val)))
        elif ty == types.complex64:
            params.extend((bytes(ctypes.c_float(val.real)), bytes(ctypes.c_float(val.imag))))
        elif ty == types.complex128:
            params.extend((bytes(ctypes.c_double(val.real)), bytes(ctypes.c_double(val.imag))))
        elif isinstance(ty, (types.NPDatetime, types.NPTimedelta)):
            params.append(bytes(ctypes.c_int64(val.view(np.int64))))
        elif isinstance(ty, types.Record):
            params.append(bytes(q(device_view(val, ty, stream).ptr)))
        elif isinstance(ty, types.BaseTuple):
            assert len(ty) == len(val)
            for t, v in zip(ty, val):
                one(t, v)
        elif isinstance(ty, types.EnumMember):
            one(ty.dtype, val.value)
        else:
            raise NotImplementedError(ty, val)

    for ty, val in zip(argtypes, args):
        one(ty, val)
    return params


def performance_warning(msg):
    """numba's warning of a host array copied to the device and back, said at the user's
    line (the first frame outside gpuhost)."""
    import warnings

    if _performance_warnings("CUDA_WARN_ON_IMPLICIT_COPY", "NUMBA_CUDA_WARN_ON_IMPLICIT_COPY"):
        here = os.path.dirname(os.path.abspath(__file__)) + os.sep
        frame, level = sys._getframe(1), 2
        while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(here):
            frame, level = frame.f_back, level + 1
        warnings.warn(_performance_warning_class()(msg), stacklevel=level)


# numba-cuda 0.30's message (numba.cuda.errors.missing_launch_config_msg), for a kernel
# called without a launch configuration where numba-cuda is not imported.
_MISSING_LAUNCH_CONFIG = """
Kernel launch configuration was not specified. Use the syntax:

kernel_function[blockspergrid, threadsperblock](arg0, arg1, ..., argn)

See https://numba.readthedocs.io/en/stable/cuda/kernels.html#kernel-invocation for help.

"""


def missing_launch_config_msg():
    errors = sys.modules.get("numba.cuda.errors")
    return _MISSING_LAUNCH_CONFIG if errors is None else errors.missing_launch_config_msg


def environment_debug():
    """Whether numba-cuda compiles kernels with debug=None as debug ones
    (NUMBA_CUDA_DEBUGINFO), read as numba-cuda reads it."""
    return bool(_config("CUDA_DEBUGINFO_DEFAULT", "NUMBA_CUDA_DEBUGINFO", 0))


def simulator_enabled():
    """Whether numba-cuda runs kernels in its simulator (NUMBA_ENABLE_CUDASIM)."""
    return bool(_config("ENABLE_CUDASIM", "NUMBA_ENABLE_CUDASIM", 0))
