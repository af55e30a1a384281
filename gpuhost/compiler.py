"""Compiling CUDA C++ with NVRTC, in numba.cuda's spirit, and the kernel cache.

    ptx = gpuhost.compile_ptx(source, cc=(8, 0))            # PTX for compute_80
    cubin = gpuhost.compile(source, "cubin", lineinfo=True)  # for the current device

numba's compile_ptx takes a Python function; these take CUDA C++ source.  The result is
a CompiledCode: the output as bytes, with the log, the lowered names and (for a cubin)
the PTX alongside.

The target, when no `cc` is given: the current device's compute capability (device 0's
when no context is current) if a GPU is usable; else GPUHOST_DEFAULT_PTX_CC, then numba's
NUMBA_CUDA_DEFAULT_PTX_CC ("8.0" style); else the oldest architecture this NVRTC supports
(7.5 for CUDA 13).

Results are cached in memory (per process) and on disk (gpuhost._cache: GPUHOST_CACHE_DIR,
default ~/.cache/gpuhost); GPUHOST_DISABLE_CACHE=1 turns both off.  The key is the source,
the full option list, the output, the target and the NVRTC version; on disk also
gpuhost's version and the contents of the files the source includes from the current
directory or `include_dirs` (the toolkit's headers are covered by the NVRTC version).
"""
import functools
import os
import re
import warnings
from collections.abc import Mapping

from . import _cache, _core, _libpaths
from .errors import NvrtcError, NvrtcWarning

__all__ = ["CompiledCode", "compile", "compile_ptx", "compile_ptx_for_current_device",
           "clear_cache"]

OUTPUTS = ("ptx", "cubin", "ltoir")
PROGRAM_NAME = "kernel.cu"  # the file name NVRTC's log refers to



def _env_reader():
    """getenv(name) -> str or None.  CPython's os.environ keeps the environment in
    `_data`, encoded; reading it directly costs 40 ns where os.environ.get costs ~0.5 µs
    (two conversions), and the memory-cache hit reads three variables within its 5 µs."""
    env = os.environ
    try:
        data, encodekey, decodevalue = env._data, env.encodekey, env.decodevalue
    except AttributeError:  # another os.environ: the public way
        return env.get

    keys = {}

    def getenv(name):
        key = keys.get(name)
        if key is None:
            key = keys[name] = encodekey(name)
        value = data.get(key)
        return None if value is None else decodevalue(value)

    return getenv


_getenv = _env_reader()
_MEMORY_LIMIT = 4096  # entries kept in memory; the oldest go first


class CompiledCode(bytes):
    """The output of one NVRTC compilation, as bytes, with what NVRTC said about it.

    The bytes are PTX text, a cubin ELF image, or LTO IR; `Module` loads the first two.
    Made by `compile` and `compile_ptx`; picklable.

    Attributes
    ----------
    output : str
        "ptx", "cubin" or "ltoir".
    target : str
        The architecture: "compute_80", "sm_90", ...
    cc : tuple of int
        (major, minor) of the target.
    ptx : str or None
        The PTX, also for a cubin; None for LTO IR.
    log : str
        NVRTC's log, warnings included; "" when silent.
    lowered_names : dict
        {name expression: mangled name}, for the `name_expressions` asked for.
    name_expressions : tuple of str
    options : tuple of str
        The full NVRTC option list used.

    Examples
    --------
    >>> code = gpuhost.compile_ptx('extern "C" __global__ void k(int *p) { *p = 1; }',
    ...                            cc=(8, 0))
    >>> code.output, code.target, code.cc
    ('ptx', 'compute_80', (8, 0))
    >>> code.ptx.startswith("//")
    True
    """

    def __new__(cls, data, output, target, *, ptx=None, log="", lowered_names=None,
                name_expressions=(), options=()):
        self = bytes.__new__(cls, data)
        self.output = output
        self.target = target
        number = int(re.sub(r"\D", "", target))
        self.cc = (number // 10, number % 10)
        self.ptx = ptx
        self.log = log
        self.lowered_names = dict(lowered_names or {})
        self.name_expressions = tuple(name_expressions)
        self.options = tuple(options)
        return self

    def __reduce__(self):
        d = self.__dict__
        return (_rebuild, (bytes(self), d["output"], d["target"], d["ptx"], d["log"],
                           d["lowered_names"], d["name_expressions"], d["options"]))

    def __repr__(self):
        return "<CompiledCode %s for %s, %d bytes>" % (self.output, self.target, len(self))


def _rebuild(data, output, target, ptx, log, lowered_names, name_expressions, options):
    return CompiledCode(data, output, target, ptx=ptx, log=log, lowered_names=lowered_names,
                        name_expressions=name_expressions, options=options)


# -- public entry points ---------------------------------------------------------------



def _numba_for_python_functions(func):
    """numba.cuda's compile functions take a Python function where gpuhost's take CUDA C++:
    given one, the call goes to numba-cuda (returning what numba returns)."""
    name = func.__name__

    @functools.wraps(func)
    def wrapper(source, *args, **kwargs):
        if callable(source) and not isinstance(source, (str, bytes)):
            from . import _numba

            return getattr(_numba.load(), name)(source, *args, **kwargs)
        return func(source, *args, **kwargs)

    return wrapper  # the docstrings say so themselves, before their sections


@_numba_for_python_functions
def compile(source, output="cubin", *, cc=None, debug=False, lineinfo=False, fastmath=False,
            opt=True, std=None, defines=None, include_dirs=(), options=(),
            name_expressions=()):
    """Compile CUDA C++ `source` with NVRTC.

    The result is cached in memory and on disk (see `gpuhost.compiler`). The toolkit's
    include directory is searched last, so ``<cuda_fp16.h>`` and ``<cuda/std/...>``
    work. NVRTC's warnings are kept in ``.log`` and issued as an `NvrtcWarning` (not
    again for a cached result). Given a Python function instead of source (numba.cuda's
    form, ``compile(pyfunc, sig, ...)``), numba-cuda compiles it and its result is
    returned.

    Parameters
    ----------
    source : str
        CUDA C++ source. Kernels meant to be found by name need ``extern "C"``.
    output : {"cubin", "ptx", "ltoir"}, optional
        A cubin (default), PTX, or LTO IR for nvJitLink.
    cc : tuple of int or str, optional
        Target compute capability, ``(8, 0)``, ``"8.0"`` or ``"9.0a"``; by default the
        current device's (see `gpuhost.compiler`). PTX for a newer cc than NVRTC knows is
        made for the newest it knows; a cubin or LTO IR needs a cc NVRTC supports.
    debug : bool, optional
        ``-G``: device debug information, no optimization.
    lineinfo : bool, optional
        ``-lineinfo``: source lines for profilers.
    fastmath : bool, optional
        ``--use_fast_math``.
    opt : bool, optional
        False turns NVVM's and ptxas's optimizations off.
    std : str or int, optional
        The C++ dialect, ``"c++17"`` or ``17``.
    defines : dict or iterable, optional
        ``{"NAME": value or None}``, or an iterable of ``"NAME"``, ``"NAME=VALUE"`` and
        ``(name, value)``.
    include_dirs : iterable of str, optional
        Directories searched by ``#include``.
    options : iterable of str, optional
        Further NVRTC options, passed as they are.
    name_expressions : iterable of str, optional
        C++ names (``"kernel<float>"``) whose mangled names are wanted, in
        `CompiledCode.lowered_names`.

    Returns
    -------
    CompiledCode
        The output as bytes.

    Raises
    ------
    NvrtcError
        Compilation failed; the message holds the log and the offending source lines.
    NvrtcSupportError
        libnvrtc was not found.
    ValueError
        A cubin or LTO IR for a cc NVRTC does not support, or another bad argument.

    Examples
    --------
    >>> src = r'''
    ... template <typename T>
    ... __global__ void fill(T *x, T v, int n) {
    ...     int i = blockIdx.x * blockDim.x + threadIdx.x;
    ...     if (i < n) x[i] = v;
    ... }'''
    >>> code = gpuhost.compile(src, "ptx", cc=(8, 0), std=17,
    ...                        name_expressions=["fill<float>"])
    >>> code.lowered_names["fill<float>"]
    '_Z4fillIfEvPT_S0_i'
    >>> cubin = gpuhost.compile(src, cc=(9, 0), lineinfo=True)   # doctest: +SKIP
    """
    return _compile(source, output, cc, debug, lineinfo, fastmath, opt, std, defines,
                    include_dirs, options, name_expressions)


@_numba_for_python_functions
def compile_ptx(source, *, cc=None, debug=False, lineinfo=False, fastmath=False, opt=True,
                std=None, defines=None, include_dirs=(), options=(), name_expressions=()):
    """Compile CUDA C++ `source` to PTX: `compile` with ``output="ptx"``.

    The keywords are `compile`'s. Given a Python function instead of source (numba.cuda's
    form, ``compile_ptx(pyfunc, sig, ...)``), numba-cuda compiles it and its result is
    returned.

    Returns
    -------
    CompiledCode
        The PTX text as bytes, also as str in ``.ptx``.

    Raises
    ------
    NvrtcError
        Compilation failed; the message holds the log and the offending source lines.
    NvrtcSupportError
        libnvrtc was not found.

    Examples
    --------
    >>> ptx = gpuhost.compile_ptx('extern "C" __global__ void k(float *x) { x[0] = 1; }',
    ...                           cc="8.0")
    >>> ".entry k" in ptx.ptx
    True
    >>> kernel = gpuhost.Module(ptx).get_function("k")
    """
    return _compile(source, "ptx", cc, debug, lineinfo, fastmath, opt, std, defines,
                    include_dirs, options, name_expressions)


@_numba_for_python_functions
def compile_ptx_for_current_device(source, *, debug=False, lineinfo=False, fastmath=False,
                                   opt=True, std=None, defines=None, include_dirs=(),
                                   options=(), name_expressions=()):
    """`compile_ptx` for the compute capability of the current device.

    Device 0's when no context is current. The keywords are `compile`'s. Given a Python
    function instead of source (numba.cuda's form), numba-cuda compiles it.

    Returns
    -------
    CompiledCode
        PTX for the device's architecture.

    Raises
    ------
    CudaSupportError
        No usable GPU.
    NvrtcError
        Compilation failed.

    Examples
    --------
    >>> ptx = gpuhost.compile_ptx_for_current_device(
    ...     'extern "C" __global__ void k(int *p) { *p = 0; }')
    >>> ptx.cc == gpuhost.get_current_device().compute_capability
    True
    """
    dev = _core.current_device() or _core.get_device(0)
    return _compile(source, "ptx", dev.compute_capability, debug, lineinfo, fastmath, opt,
                    std, defines, include_dirs, options, name_expressions)


def clear_cache(memory=True, disk=False):
    """Forget compiled kernels kept in memory and, with `disk`, those on disk.

    Parameters
    ----------
    memory : bool, optional
        Clear this process's memory cache (default True).
    disk : bool, optional
        Remove the files of the disk cache (``GPUHOST_CACHE_DIR`` or its default).

    Examples
    --------
    >>> from gpuhost import compiler
    >>> compiler.clear_cache()
    """
    if memory:
        _fast.clear()
        _by_key.clear()
    if disk:
        _cache.clear()


# -- the memory cache, and the fast path to it ------------------------------------------

_fast = {}    # the arguments as given (cc resolved) -> (CompiledCode, deps)
_by_key = {}  # (source, options, output, target, name expressions, NVRTC version) -> same

_ENV = object()     # marks a default cc taken from an environment variable
_OLDEST = object()  # the default cc when nothing says otherwise
_gpu_usable = None  # decided once: the driver's loading is


def _compile(source, output, cc, *flags):
    if cc is None:
        cc = _default_cc()
    if _getenv("GPUHOST_DISABLE_CACHE") not in (None, "", "0"):
        return _compile_slow(source, output, cc, flags, None, False)
    fast = (source, output, cc) + flags
    try:
        entry = _fast.get(fast)
    except TypeError:  # a list or a dict among the arguments
        fast = _freeze(fast)
        entry = _fast.get(fast) if fast is not None else None
    if entry is not None and (not entry[1] or _cache.deps_fresh(entry[1])):
        return entry[0]
    return _compile_slow(source, output, cc, flags, fast, True)


def _freeze(args):
    """`args` with lists made tuples and dicts tuples of their items (both mean the same
    to compile() in either form), or None if that is still unhashable."""
    out = []
    for x in args:
        t = type(x)
        if t is list:
            x = tuple(x)
        elif t is dict:
            x = tuple(x.items())
        out.append(x)
    args = tuple(out)
    try:
        hash(args)
    except TypeError:
        return None
    return args


def _default_cc():
    global _gpu_usable
    if _gpu_usable is None:
        try:
            _gpu_usable = bool(_core.is_available())
        except Exception:  # the documented fallback applies whatever went wrong
            _gpu_usable = False
    if _gpu_usable:
        try:
            dev = _core.current_device() or _core.get_device(0)
            return dev.compute_capability
        except Exception:
            pass
    for var in ("GPUHOST_DEFAULT_PTX_CC", "NUMBA_CUDA_DEFAULT_PTX_CC"):
        value = _getenv(var)
        if value:
            return (_ENV, var, value)
    return _OLDEST


def _remember(table, key, entry):
    if len(table) >= _MEMORY_LIMIT:
        try:
            del table[next(iter(table))]
        except (KeyError, RuntimeError, StopIteration):  # another thread got there first
            pass
    table[key] = entry


# -- the slow path: arguments to options, the disk cache, NVRTC --------------------------


def _compile_slow(source, output, cc, flags, fast, use_cache):
    debug, lineinfo, fastmath, opt, std, defines, include_dirs, options, exprs = flags
    if not isinstance(source, str):
        raise TypeError("source must be a str of CUDA C++, not %s" % type(source).__name__)
    if output not in OUTPUTS:
        raise ValueError("output must be 'ptx', 'cubin' or 'ltoir', not %r" % (output,))
    target = _target(cc, output)
    opts, dirs = _options(target, output, debug, lineinfo, fastmath, opt, std, defines,
                          include_dirs, options)
    exprs = _strings(exprs, "name_expressions")
    key = (source, opts, output, target, exprs, _nvrtc_version())
    if not use_cache:
        return _run_nvrtc(source, opts, output, target, exprs)
    entry = _by_key.get(key)
    if entry is not None and (not entry[1] or _cache.deps_fresh(entry[1])):
        if fast is not None:
            _remember(_fast, fast, entry)
        return entry[0]
    deps, hashes = _cache.scan_includes(source, dirs)
    directory = _cache.cache_dir()
    digest = _cache.digest([_gpuhost_version(), key[5], output, target, opts, exprs, source],
                           hashes)
    fields = _cache.load(directory, digest)
    if fields is not None:
        code = _from_fields(fields)
    else:
        code = _run_nvrtc(source, opts, output, target, exprs)
        _cache.store(directory, digest, _to_fields(code))
    entry = (code, deps)
    _remember(_by_key, key, entry)
    if fast is not None:
        _remember(_fast, fast, entry)
    return code


_CC_TEXT = re.compile(r"\s*(\d+)\.(\d)([af]?)\s*\Z")


def _parse_cc(cc):
    """(arch number, suffix) for a cc argument or default: 80, "" for (8, 0) or "8.0"."""
    if cc is _OLDEST:
        return _supported_archs()[0], ""
    if type(cc) is tuple and len(cc) == 3 and cc[0] is _ENV:
        m = _CC_TEXT.match(cc[2])
        if m is None:
            raise ValueError("%s=%r is not a compute capability such as '8.0'" % cc[1:])
        return int(m[1]) * 10 + int(m[2]), m[3]
    if isinstance(cc, str):
        m = _CC_TEXT.match(cc)
        if m is None:
            raise ValueError("cc must be (major, minor) or a string such as '8.0' or '9.0a', "
                             "not %r" % cc)
        return int(m[1]) * 10 + int(m[2]), m[3]
    if isinstance(cc, (tuple, list)) and len(cc) == 2 and \
            all(isinstance(x, int) and not isinstance(x, bool) for x in cc):
        if cc[0] < 1 or not 0 <= cc[1] <= 9:
            raise ValueError("cc %r is not a compute capability" % (tuple(cc),))
        return cc[0] * 10 + cc[1], ""
    raise TypeError("cc must be a (major, minor) tuple or a string such as '8.0', not %r"
                    % (cc,))


def _target(cc, output):
    """The -arch value: compute_XY for PTX, sm_XY for a cubin or LTO IR."""
    number, suffix = _parse_cc(cc)
    archs = _supported_archs()
    if output == "ptx":
        if number not in archs:
            older = [a for a in archs if a <= number]
            if not older:
                raise ValueError("NVRTC %d.%d cannot compile for compute capability %d.%d: the "
                                 "oldest it supports is %d.%d"
                                 % (_nvrtc_version() + divmod(number, 10) + divmod(archs[0], 10)))
            number, suffix = older[-1], ""  # PTX runs on newer devices: the driver JITs it
        return "compute_%d%s" % (number, suffix)
    if number not in archs:
        raise ValueError("NVRTC %d.%d cannot make %s for compute capability %d.%d; it supports "
                         "%s. Compile to PTX (output='ptx') for a device it does not know."
                         % (_nvrtc_version() + ("a cubin" if output == "cubin" else "LTO IR",)
                            + divmod(number, 10)
                            + (", ".join("%d.%d" % divmod(a, 10) for a in archs),)))
    return "sm_%d%s" % (number, suffix)


def _options(target, output, debug, lineinfo, fastmath, opt, std, defines, include_dirs,
             options):
    """(the NVRTC option tuple, the user's include directories made absolute)."""
    opts = ["-arch=" + target]
    if output == "ltoir":
        opts.append("-dlto")
    if debug:
        opts.append("-G")
    if lineinfo:
        opts.append("-lineinfo")
    if fastmath:
        opts.append("--use_fast_math")
    if not opt:
        if not debug:  # -G turns NVVM's optimizer off itself, and NVVM refuses a second -opt
            opts += ["-Xnvvm", "-opt=0"]
        opts += ["-Xptxas", "-O0"]
    if std is not None:
        opts.append("-std=" + _std(std))
    opts += _defines(defines)
    dirs = tuple(os.path.abspath(p) for p in _paths(include_dirs))
    opts += ["-I" + d for d in dirs]
    user = _strings(options, "options")
    for o in user:
        if o.startswith(("-arch", "--gpu-architecture")):
            raise ValueError("give the target as cc=..., not %r in options" % o)
    opts += user
    opts += ["-I" + d for d in _toolkit_include_dirs()]
    return tuple(opts), dirs


def _strings(value, what):
    """A tuple of str from a str (one item) or an iterable of str."""
    if isinstance(value, str):
        return (value,)
    try:
        items = tuple(value)
    except TypeError:
        raise TypeError("%s must be a str or an iterable of str, not %s"
                        % (what, type(value).__name__)) from None
    for item in items:
        if not isinstance(item, str):
            raise TypeError("%s must hold str, not %s (%r)" % (what, type(item).__name__, item))
    return items


def _paths(value):
    if isinstance(value, (str, os.PathLike)):
        value = (value,)
    try:
        items = [os.fspath(p) for p in value]
    except TypeError:
        raise TypeError("include_dirs must be a path or an iterable of paths (str or "
                        "os.PathLike), not %r" % (value,)) from None
    for p in items:
        if not isinstance(p, str):
            raise TypeError("include_dirs must hold str paths, not %r" % (p,))
    return items


def _std(std):
    if isinstance(std, int) and not isinstance(std, bool):
        return "c++%d" % std
    if isinstance(std, str) and std:
        return std if std.startswith(("c++", "gnu++")) else "c++" + std
    raise TypeError("std must be a str such as 'c++17' (or 17), not %r" % (std,))


def _defines(defines):
    if defines is None:
        return []
    if isinstance(defines, Mapping):
        items = list(defines.items())
    elif isinstance(defines, str):
        items = [defines]
    else:
        try:
            items = list(defines)
        except TypeError:
            raise TypeError("defines must be a dict or an iterable of 'NAME', 'NAME=VALUE' "
                            "or (name, value), not %s" % type(defines).__name__) from None
    out = []
    for item in items:
        if isinstance(item, str):
            name, value = item.partition("=")[0], None
            text = item
        elif isinstance(item, tuple) and len(item) == 2:
            name, value = item
            text = None
        else:
            raise TypeError("defines must hold 'NAME', 'NAME=VALUE' or (name, value), not %r"
                            % (item,))
        if not isinstance(name, str) or not name or name[0] == "-" or name != name.strip():
            raise ValueError("%r is not a macro name to define" % (name,))
        if text is None:
            if isinstance(value, bool):
                value = int(value)
            text = name if value is None else "%s=%s" % (name, value)
        out.append("-D" + text)
    return out


_state = {}  # NVRTC's version, its architectures, the toolkit's include dirs: found once


def _nvrtc_version():
    v = _state.get("version")
    if v is None:
        v = _state["version"] = tuple(_core.nvrtc_version())
    return v


def _supported_archs():
    v = _state.get("archs")
    if v is None:
        v = _state["archs"] = tuple(sorted(_core.nvrtc_supported_archs()))
    return v


def _toolkit_include_dirs():
    v = _state.get("includes")
    if v is None:
        v = _state["includes"] = tuple(_libpaths.cuda_include_dirs(_core.nvrtc_library()))
    return v


def _gpuhost_version():
    from ._version import __version__

    return __version__


def _run_nvrtc(source, opts, output, target, exprs):
    """Compile for real; warn about a non-empty log; return a CompiledCode."""
    wanted = {"ptx": ("ptx",), "cubin": ("ptx", "cubin"), "ltoir": ("ltoir",)}[output]
    try:
        outs, log, lowered = _core.nvrtc_compile(source, PROGRAM_NAME, opts, exprs, wanted)
    except NvrtcError as e:
        if not e.log:
            raise
        raise NvrtcError(_failure_message(e, source, target), code=e.code, name=e.name,
                         log=e.log) from None
    data = outs[output]
    if data is None:
        raise NvrtcError("NVRTC produced no %s for %s with options %s"
                         % (output, target, " ".join(opts)), log=log)
    ptx = outs.get("ptx")
    code = CompiledCode(data, output, target, log=log, lowered_names=lowered,
                        name_expressions=exprs, options=opts,
                        ptx=ptx.decode("utf-8", "replace") if ptx is not None else None)
    if log.strip():
        warnings.warn(NvrtcWarning("NVRTC warnings compiling %s for %s:\n%s"
                                   % (PROGRAM_NAME, target, log.rstrip())), stacklevel=5)
    return code


_LOG_ERROR = re.compile(r"^(.*)\((\d+)\): (?:catastrophic )?error", re.M)
_CONTEXT = 2  # source lines shown around each line in error


def _failure_message(e, source, target):
    """NVRTC's log, then the source lines it complains about, numbered, with context."""
    head = "NVRTC could not compile %s for %s (%s):\n%s" % (PROGRAM_NAME, target, e.name,
                                                           e.log.rstrip())
    bad = sorted({int(n) for f, n in _LOG_ERROR.findall(e.log) if f == PROGRAM_NAME})
    lines = source.splitlines()
    bad = [n for n in bad if 1 <= n <= len(lines)]
    if not bad:
        return head
    shown = sorted({k for n in bad for k in range(n - _CONTEXT, n + _CONTEXT + 1)
                    if 1 <= k <= len(lines)})
    width = len(str(shown[-1]))
    out = [head, "", "%s, the lines in error marked '>':" % PROGRAM_NAME]
    for i, k in enumerate(shown):
        if i and k != shown[i - 1] + 1:
            out.append("  %s ..." % (" " * width))
        out.append("%s %*d | %s" % (">" if k in bad else " ", width, k, lines[k - 1]))
    return "\n".join(out)


# -- CompiledCode <-> the disk cache's fields ----------------------------------------------


def _to_fields(code):
    ptx = code.ptx.encode("utf-8") if code.ptx is not None and code.output != "ptx" else None
    return {"code": bytes(code), "ptx": ptx, "output": code.output, "target": code.target,
            "log": code.log, "lowered_names": code.lowered_names,
            "name_expressions": list(code.name_expressions), "options": list(code.options)}


def _from_fields(f):
    ptx = f["code"] if f["output"] == "ptx" else f["ptx"]
    return CompiledCode(f["code"], f["output"], f["target"], log=f["log"],
                        lowered_names=f["lowered_names"],
                        name_expressions=f["name_expressions"], options=f["options"],
                        ptx=ptx.decode("utf-8", "replace") if ptx is not None else None)
