"""Everything gpuhost.jit knows of numba-cuda, in one place (design decision 12,
docs/development/architecture.md).

numba-cuda types and compiles Python kernels; gpuhost launches them. This module is
imported on first use, not with gpuhost (gpuhost/_numba_hook.py is); it imports
numba-cuda on first use too, checks that its version is one whose internals it was
written against, and holds every use of those internals: the
dispatcher subclass that tells gpuhost when its overloads change, the resolution of an
overload for a launch (numba's own typing, conversions and launch-configuration rules),
numba's parameter layout as a plan for the C launcher, and numba's types for gpuhost's
arrays. Nothing here launches.
"""
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
    return cuda


# ---- gpuhost Streams in numba-cuda's own functions (called by _numba_hook.py) ----

def accept_gpuhost_streams(driver):
    """Let numba-cuda's own functions take gpuhost Streams as they take numba's (its random
    states, vectorize kernels' stream=, its device arrays' copies): the two converters in
    numba's driver module through which every stream= argument of numba's passes gain a
    case for them.  Only for the numba-cuda versions this module knows, and only where
    those converters are there; every other stream goes to numba's own code."""
    if getattr(driver, "_gpuhost_streams", False):
        return
    handle, to_core = getattr(driver, "_stream_handle", None), getattr(driver, "_to_core_stream", None)
    core_stream = getattr(driver, "ExperimentalStream", None)
    version = installed_version()
    if handle is None or to_core is None or core_stream is None or version is None \
            or not SUPPORTED[0] <= _version_tuple(version)[:2] < SUPPORTED[1]:
        return

    def _stream_handle(stream):
        if isinstance(stream, _core.Stream):
            return int(stream.handle)
        return handle(stream)

    def _to_core_stream(stream):
        if isinstance(stream, _core.Stream):
            return core_stream.from_handle(int(stream.handle))
        return to_core(stream)

    driver._stream_handle = _stream_handle
    driver._to_core_stream = _to_core_stream
    driver._gpuhost_streams = True


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


# ---- numba.cuda's names, reachable through gpuhost ----

# What kernels use through the module (`cuda.grid`, `cuda.shared.array`, ...), and the
# names numba.cuda exports for kernels and their compilation that gpuhost has none of its
# own for: gpuhost's __getattr__ resolves them from numba.cuda on first use.
KERNEL_NAMES = frozenset("""
    Archive CUSource Cubin Dim3 Fatbin GridGroup In InOut KernelRuntimeError LTOIR
    LinkableCode Object Out PTXSource Reduce activemask all_sync any_sync atomic
    ballot_sync bfloat16 blockDim blockIdx brev cbrt clz compile_all
    compile_for_current_device const declare_device dim3 eq_sync ffs fma grid gridDim
    grid_group gridsize guvectorize laneid lanemask_lt ldca ldcg ldcs ldcv ldlu
    literal_unroll local match_all_sync match_any_sync nanosleep popc reduce selp shared
    shfl_down_sync shfl_sync shfl_up_sync shfl_xor_sync stcg stcs stwb stwt syncthreads
    syncthreads_and syncthreads_count syncthreads_or syncwarp threadIdx threadfence
    threadfence_block threadfence_system vectorize warpsize
    b1 bool_ boolean byte c16 c8 char complex128 complex64 double f4 f8 float32 float64
    i1 i2 i4 i8 int16 int32 int64 int8 int_ intc intp long_ longlong none optional short
    size_t ssize_t u1 u2 u4 u8 uchar uint uint16 uint32 uint64 uint8 uintc uintp ulong
    ulonglong ushort void
""".split())
# Vector types: float32x4, int16x2, ... and the CUDA C names (float4, uchar2, ...).
VECTOR_PREFIXES = ("float", "double", "int", "uint", "char", "uchar", "short", "ushort",
                   "long", "ulong", "longlong", "ulonglong")
KERNEL_MODULES = frozenset(("cg", "libdevice", "fp16", "bf16", "fp8", "random", "types",
                            "cache_hints"))


def is_kernel_name(name):
    if name in KERNEL_NAMES or name in KERNEL_MODULES:
        return True
    stem = name.rstrip("1234")
    if stem != name and stem.rstrip("x") in VECTOR_PREFIXES + ("float32", "float64", "int8",
                                                              "int16", "int32", "int64",
                                                              "uint8", "uint16", "uint32",
                                                              "uint64"):
        return True
    return False


def kernel_name(name):
    """numba.cuda's `name` (a submodule imported if need be)."""
    cuda = load()
    if name in KERNEL_MODULES and not hasattr(cuda, name):
        from importlib import import_module

        return import_module("numba.cuda." + name)
    return getattr(cuda, name)


def module_type():
    """numba's type for numba.cuda's module: gpuhost answers to typeof as numba.cuda does,
    so a kernel that calls its module `cuda` compiles the same either way."""
    cuda = load()
    from numba.cuda import types

    return types.Module(cuda)


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
    telling its gpuhost Dispatcher when its overloads change)."""
    numba_disp.__class__ = dispatcher_class()
    return numba_disp


def resolve(numba_disp, launch, args):
    """(overload, dispatcher) that numba would launch for `args` under `launch`'s
    dimensions: the launch-configuration specialization numba picks, numba's own typing and
    conversions, compiling when numba would. Runs no pre-launch callback.

    gpuhost's configured launch (`launch`, a JitLaunch) is numba's launch configuration
    here, as numba-cuda 0.30 shows it while a launch compiles: current for the thread
    (``numba.cuda.launchconfig.current_launch_config()``), its ``dispatcher`` the gpuhost
    Dispatcher launched, its ``args`` this thread's launch arguments."""
    from numba.cuda.cext import _dispatcher
    from numba.cuda.dispatcher import _LAUNCH_CONFIG_KW

    prev = _dispatcher.swap_current_launch_args(args)
    try:
        disp = numba_disp._select_launch_config_dispatcher(launch)
        if disp.specialized:
            overload = next(iter(disp.overloads.values()))
        else:
            overload = _dispatcher.Dispatcher._cuda_call(disp, *args,
                                                         **{_LAUNCH_CONFIG_KW: launch})
        disp._update_launch_config_sensitivity(overload, launch)
    finally:
        _dispatcher.swap_current_launch_args(prev)
        _marks().pop(id(launch), None)
    return overload, disp


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


def occupancy_warning(griddim):
    """numba's NumbaPerformanceWarning for a grid of fewer than 128 blocks."""
    import warnings

    from numba.cuda.core import config
    from numba.cuda.core.errors import NumbaPerformanceWarning

    if config.CUDA_LOW_OCCUPANCY_WARNINGS and not config.DISABLE_PERFORMANCE_WARNINGS:
        size = griddim[0] * griddim[1] * griddim[2]
        if size < 128:
            warnings.warn(NumbaPerformanceWarning(
                "Grid size %d will likely result in GPU under-utilization due to low "
                "occupancy." % size), stacklevel=3)


def cubin_for(overload, device):
    """The linked cubin of a compiled overload for `device`, as numba links it."""
    cc = device.compute_capability
    cc = (cc[0], cc[1], "a" if cc >= (9, 0) else "")
    cubin = overload._codelibrary.get_cubin(cc=cc)
    return getattr(cubin, "code", cubin)  # numba-cuda 0.30: a cuda.core ObjectCode


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


def arg_hint_classes():
    """numba.cuda's In, Out, InOut and their base ArgHint."""
    from numba.cuda.args import ArgHint, In, InOut, Out

    return ArgHint, In, Out, InOut


def performance_warning(msg):
    import warnings

    from numba.cuda.core import config
    from numba.cuda.core.errors import NumbaPerformanceWarning

    if config.CUDA_WARN_ON_IMPLICIT_COPY and not config.DISABLE_PERFORMANCE_WARNINGS:
        warnings.warn(NumbaPerformanceWarning(msg), stacklevel=4)


def missing_launch_config_msg():
    from numba.cuda.errors import missing_launch_config_msg

    return missing_launch_config_msg
