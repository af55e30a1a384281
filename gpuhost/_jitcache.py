"""gpuhost.jit's disk records: what a launch of a `cache=True` kernel needs, kept at compile
time, so that a fresh process launches it from C without importing numba-cuda.

Where (cache_dir): GPUHOST_CACHE_DIR/jit; else, where numba's caches are sent elsewhere,
NUMBA_CACHE_DIR/gpuhost-jit, beside numba's own folders; else $XDG_CACHE_HOME/gpuhost/jit,
else ~/.cache/gpuhost/jit.  Never in a __pycache__ folder, where numba-cuda keeps its own
index and data files (and its tests count them).

Each kernel has a folder (its identity: source file, qualified name, first line, options,
eager signatures, versions, numba's environment variables and the values its closure
captured), and in it one file per record, named after the sha256 of the function key
(function_key: the identity and the code: the source file's bytes, the code object, and the
same for every function the kernel calls, found through its globals and closure,
transitively) and of what the record is for:
  - an overload ("sig"): the code images for one compute capability (the linked cubin, and
    the PTX where the driver loads no cubin), the entry name, numba's parameter layout as a
    plan, cooperative, the shared-memory carveout, what was linked in;
  - a launch's argument types ("args": the C launcher's key, or for host arrays and
    In/Out hints the Python side's), naming the overload numba chose for them;
  - an eager kernel's signatures ("eager"), naming its overloads.
The driver's version is in every record's name; a record written by another gpuhost,
numba-cuda, Python or driver version is therefore never read.  Files use gpuhost's checked
format (gpuhost/_cache.py: magic, length, sha256 of the payload, JSON metadata, raw images:
no pickle, reading one runs no code), written to a temporary name and renamed into place, so
processes filling one folder at once leave whole files and read whole files; nothing is
locked.  A file that is not whole is removed and counts as a miss; a folder that cannot be
written leaves kernels unrecorded (counted in jit_cache_info()'s write_errors), never an
error.
"""
import collections
import hashlib
import json
import os
import sys
import types

from . import _cache
from ._version import __version__

FORMAT = 1
SUFFIX = ".jit"

# numba-cuda's environment variables that do not change what it compiles: every other
# NUMBA_* variable is part of each kernel's identity.
_ENV_IGNORED = frozenset((
    "NUMBA_CACHE_DIR", "NUMBA_DEBUG_CACHE", "NUMBA_CUDA_DRIVER", "NUMBA_CUDA_LOG_LEVEL",
    "NUMBA_CUDA_LOG_API_ARGS", "NUMBA_CUDA_LOG_SIZE", "NUMBA_CUDA_MEMORY_MANAGER",
    "NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "NUMBA_CUDA_WARN_ON_IMPLICIT_COPY",
    "NUMBA_DISABLE_PERFORMANCE_WARNINGS", "NUMBA_COLOR_SCHEME", "NUMBA_HIGHLIGHT_DUMPS",
    "NUMBA_CUDA_DEFAULT_PTX_CC_WARN", "NUMBA_NUM_THREADS", "NUMBA_THREADING_LAYER",
))

# This process's counts (jit_cache_info()).
_counts = {"hits": 0, "misses": 0, "writes": 0, "write_errors": 0}
_last_write_error = [None]


def cache_dir():
    """The folder gpuhost.jit's records go to (it may not exist yet)."""
    path = os.environ.get("GPUHOST_CACHE_DIR")
    if path:
        return os.path.join(os.path.abspath(os.path.expanduser(path)), "jit")
    path = os.environ.get("NUMBA_CACHE_DIR")
    if path:
        return os.path.join(os.path.abspath(os.path.expanduser(path)), "gpuhost-jit")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "gpuhost", "jit")


# ---- versions: what compiled the code, found without importing numba ----

_versions = None


def _dist_versions():
    """(numba-cuda's version, numba's version or None), read from their installed files as
    the import system would find them: numba-cuda's VERSION file, numba's dist-info name."""
    found = sys.modules.get("numba_cuda")
    cuda_version = getattr(found, "__version__", None)
    numba = sys.modules.get("numba")
    numba_version = getattr(numba, "__version__", None) if numba is not None else None
    for entry in sys.path:
        entry = entry or os.getcwd()
        if cuda_version is None:
            try:
                with open(os.path.join(entry, "numba_cuda", "VERSION")) as f:
                    cuda_version = f.read().strip()
            except OSError:
                pass
        if numba_version is None and os.path.isfile(os.path.join(entry, "numba", "__init__.py")):
            try:
                names = os.listdir(entry)
            except OSError:
                names = ()
            numba_version = next((n[6:-10] for n in names
                                  if n.startswith("numba-") and n.endswith(".dist-info")), "")
        if cuda_version is not None and numba_version is not None:
            break
    return cuda_version, numba_version


def versions():
    """What every key holds of the software that compiles: gpuhost's, numba-cuda's and
    numba's versions, Python's, NumPy's major version.  numba-cuda's is None when it is not
    installed."""
    global _versions
    if _versions is None:
        import numpy

        cuda_version, numba_version = _dist_versions()
        _versions = {"gpuhost": __version__, "numba-cuda": cuda_version, "numba": numba_version,
                     "python": "%s-%d.%d%s" % (sys.implementation.name, sys.version_info[0],
                                               sys.version_info[1],
                                               getattr(sys, "abiflags", "")),
                     "numpy": numpy.__version__.split(".")[0], "format": FORMAT}
    return _versions


def numba_environment():
    """numba-cuda's configuration that changes what it compiles: its NUMBA_* variables and a
    .numba_config.yaml in the current folder (numba reads both)."""
    env = sorted((k, v) for k, v in os.environ.items()
                 if k.startswith("NUMBA_") and k not in _ENV_IGNORED)
    try:
        with open(".numba_config.yaml", "rb") as f:
            env.append(("yaml", hashlib.sha256(f.read()).hexdigest()))
    except OSError:
        pass
    return env


# ---- what a kernel is: its identity and its code ----

class Unkeyable(Exception):
    """A kernel whose code or closure this module cannot key safely: it is not recorded."""


_file_hashes = {}  # path -> ((mtime_ns, size), sha256 of its bytes)


def _file_hash(path):
    """sha256 of a source file's bytes (remembered while its stamp stays), or of the lines
    linecache holds for a name that is no file (an IPython cell)."""
    try:
        st = os.stat(path)
    except OSError:
        import linecache

        lines = linecache.getlines(path)
        if not lines:
            raise Unkeyable("no source for %s" % path) from None
        return hashlib.sha256("".join(lines).encode("utf-8", "surrogatepass")).hexdigest()
    stamp = (st.st_mtime_ns, st.st_size)
    known = _file_hashes.get(path)
    if known is not None and known[0] == stamp:
        return known[1]
    try:
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
    except OSError as e:
        raise Unkeyable(str(e)) from None
    _file_hashes[path] = (stamp, digest)
    return digest


def is_notebook(path):
    """Whether `path` names an IPython cell (numba's rules for its cell cache)."""
    return path.startswith("<ipython-") or \
        os.path.basename(os.path.dirname(path)).startswith("ipykernel_")


def source_available(py_func):
    """Whether numba-cuda can cache `py_func`: its source is a file, a zip archive's member
    or an IPython cell (numba's cache locators); else numba raises at decoration."""
    path = py_func.__code__.co_filename
    return os.path.exists(path) or is_notebook(path) or ".zip" in path


def _const(value, out):
    if isinstance(value, types.CodeType):
        _code(value, out)
    elif isinstance(value, (tuple, list)):
        out.append(("(" if isinstance(value, tuple) else "[", len(value)))
        for v in value:
            _const(v, out)
    elif isinstance(value, frozenset):
        out.append(("frozenset", sorted(repr(v) for v in value)))
    else:
        out.append((type(value).__name__, repr(value)))


def _code(code, out):
    """A code object, as numba compiles it: bytecode, constants (nested code objects
    included), names; not its line numbers (the source file's bytes hold those)."""
    out.append(("code", code.co_name, code.co_code.hex(), code.co_argcount,
                code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags,
                code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars,
                getattr(code, "co_exceptiontable", b"").hex()))
    for c in code.co_consts:
        _const(c, out)


def _names(code):
    """The global names a code object and those nested in it may load."""
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _names(c)
    return names


def _python_function(value):
    """The Python function behind a callee: a function itself, gpuhost's or numba's
    dispatcher (its py_func, read from its own attributes, never computed)."""
    if isinstance(value, types.FunctionType):
        return value
    if isinstance(value, (type, types.ModuleType)):
        return None
    own = getattr(value, "__dict__", None)
    if isinstance(own, dict) and isinstance(own.get("py_func"), types.FunctionType):
        return own["py_func"]
    return None


_SIMPLE = (type(None), bool, int, float, complex, str, bytes)


def _value(value, out, seen, depth=0):
    """A value a closure captured, as numba freezes it: numbers, strings, tuples of them,
    NumPy scalars and arrays, dtypes, enums, modules and classes by name, functions and
    dispatchers by their code (transitively; with `seen` None, by their name alone).
    Anything else: Unkeyable."""
    import numpy

    if depth > 16:
        raise Unkeyable("a captured value nests too deep")
    fn = _python_function(value)
    if fn is not None:
        if seen is None:
            out.append(("function", getattr(fn, "__module__", None), fn.__qualname__))
        else:
            _function(fn, out, seen)
    elif isinstance(value, _SIMPLE):
        out.append((type(value).__name__, repr(value)))
    elif isinstance(value, tuple):
        out.append(("(", type(value).__qualname__, len(value)))
        for v in value:
            _value(v, out, seen, depth + 1)
    elif isinstance(value, types.ModuleType):
        out.append(("module", value.__name__))
    elif isinstance(value, type):
        out.append(("type", value.__module__, value.__qualname__))
    elif isinstance(value, numpy.ndarray):
        out.append(("ndarray", repr(value.dtype), value.shape,
                    hashlib.sha256(numpy.ascontiguousarray(value).tobytes()).hexdigest()))
    elif isinstance(value, (numpy.generic, numpy.dtype)):
        out.append((type(value).__name__, repr(value)))
    elif _is_enum(value):
        out.append(("enum", type(value).__module__, type(value).__qualname__, value.name,
                    repr(value.value)))
    else:
        raise Unkeyable("a captured %s" % type(value).__name__)


def _is_enum(value):
    enum = sys.modules.get("enum")
    return enum is not None and isinstance(value, enum.Enum)


def _function(fn, out, seen, files=True):
    """A function and, transitively, those it calls: where it is, its source file's bytes
    (not with `files` False), its code, what its closure captured; then each global it
    names that is a function or a dispatcher (a device function, a helper numba inlines).
    Other globals are frozen at compile time, as numba does (not part of the key)."""
    if id(fn) in seen:
        out.append(("again", fn.__qualname__))
        return
    seen.add(id(fn))
    code = fn.__code__
    out.append(("function", getattr(fn, "__module__", None), fn.__qualname__,
                code.co_firstlineno, _file_hash(code.co_filename) if files else None))
    _code(code, out)
    for contents in _captured(fn):
        callee = _python_function(contents)
        if contents is _EMPTY:
            out.append(("empty",))
        elif callee is not None:
            _function(callee, out, seen, files)
        elif files:
            _value(contents, out, seen)
        else:
            try:
                _value(contents, out, None)
            except Unkeyable:
                out.append(("opaque", type(contents).__qualname__))
    for name, callee in _global_callees(fn):
        out.append(("global", name))
        _function(callee, out, seen, files)


_EMPTY = object()  # an empty closure cell


def _captured(fn):
    """The values a function's closure captured, _EMPTY for an empty cell."""
    for cell in fn.__closure__ or ():
        try:
            yield cell.cell_contents
        except ValueError:
            yield _EMPTY


def _global_callees(fn):
    """(name, Python function) of each global a function names that is a function or a
    dispatcher."""
    scope = fn.__globals__
    for name in sorted(_names(fn.__code__)):
        callee = _python_function(scope.get(name))
        if callee is not None:
            yield name, callee


def callee_digest(py_func):
    """sha256 of the code of the functions `py_func` calls, transitively (their bytecode,
    constants and captured values; not their files), or None where it calls none: what
    numba's own cache key lacks (gpuhost/_numba.py adds it)."""
    out, seen = [], {id(py_func)}
    callees = [c for _, c in _global_callees(py_func)] + \
        [c for c in map(_python_function, _captured(py_func)) if c is not None]
    for callee in callees:
        if id(callee) not in seen:
            _function(callee, out, seen, files=False)
    return _digest(out) if out else None


def identity(py_func, options, sigs):
    """A kernel's identity, as JSON-able data: where it is (a notebook cell by its name's
    last part, which IPython derives from the cell's text), options, eager signatures,
    versions, numba's environment, what its closure captured.  Raises Unkeyable."""
    code = py_func.__code__
    path = code.co_filename
    place = os.path.basename(path) if is_notebook(path) else os.path.realpath(path)
    captured = []
    for contents in _captured(py_func):
        if contents is _EMPTY:
            captured.append(("empty",))
        else:
            _value(contents, captured, None)
    return [place, py_func.__qualname__, code.co_firstlineno, options, sigs, versions(),
            numba_environment(), captured]


def _digest(data):
    text = json.dumps(data, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class Kernel:
    """The records of one kernel: its folder, its function key, this process's view."""

    def __init__(self, py_func, options, sigs):
        """Raises Unkeyable where the kernel cannot be keyed."""
        ident = identity(py_func, options, sigs)
        code = []
        _function(py_func, code, set())
        self.folder = os.path.join(cache_dir(), _digest(ident)[:32])
        self.fkey = _digest([ident, code])
        self.prefix = self.fkey[:16] + "-"

    def name(self, cc, driver, kind, what):
        """The file name (without suffix) of the record of `kind` for `what`, compute
        capability `cc` and driver version `driver`."""
        h = hashlib.sha256()
        for part in (self.fkey, "%d.%d" % tuple(cc), str(driver), kind):
            h.update(part.encode() + b"\0")
        h.update(what if isinstance(what, bytes) else what.encode("utf-8", "surrogatepass"))
        return self.prefix + h.hexdigest()[:40]

    def load(self, name):
        """The record named `name`, or None (absent, unreadable or not whole)."""
        return _cache.load(self.folder, name, SUFFIX)

    def store(self, name, meta, code=b"", ptx=None):
        """Write a record; False where the folder cannot be written (counted, not raised)."""
        fields = dict(meta, code=code, ptx=ptx)
        error = _cache.store(self.folder, name, fields, SUFFIX, quiet=True)
        if error is not None:
            _counts["write_errors"] += 1
            _last_write_error[0] = "%s: %s" % (self.folder, error)
            return False
        _counts["writes"] += 1
        return True

    def prune(self):
        """Remove this kernel's records of other code (an earlier version of its source,
        or of a function it calls): they can no longer be read."""
        try:
            names = os.listdir(self.folder)
        except OSError:
            return
        for name in names:
            if name.endswith(SUFFIX) and not name.startswith(self.prefix):
                try:
                    os.unlink(os.path.join(self.folder, name))
                except OSError:
                    pass

    def drop(self):
        """Remove every record of this kernel (its recompile()); how many were removed."""
        return _cache.clear(self.folder, SUFFIX)


def counted(what):
    _counts[what] += 1


CacheInfo = collections.namedtuple("CacheInfo", (
    "path", "kernels", "files", "bytes", "hits", "misses", "writes", "write_errors",
    "last_write_error"))
CacheInfo.__doc__ = "What gpuhost.jit's disk records hold, and what this process did with them."


def jit_cache_info():
    """What gpuhost.jit's disk records hold, and what this process did with them.

    Returns
    -------
    CacheInfo
        A named tuple: ``path`` (the folder: GPUHOST_CACHE_DIR/jit, NUMBA_CACHE_DIR/gpuhost-jit
        or ~/.cache/gpuhost/jit), ``kernels`` (how many kernels have records there),
        ``files`` and ``bytes`` (the records), then this process's counts: ``hits``
        (overloads launched from a record, numba not needed), ``misses`` (launches of
        ``cache=True`` kernels that numba resolved: compiled, or loaded from numba's own
        cache), ``writes``, ``write_errors`` (records that could not be written: a folder
        that is read-only, full or a file) and ``last_write_error``.

    Examples
    --------
    >>> info = gpuhost.jit_cache_info()
    >>> info.path.endswith("jit")
    True
    >>> info.files >= info.kernels >= 0
    True
    """
    root = cache_dir()
    kernels = files = size = 0
    try:
        folders = os.listdir(root)
    except OSError:
        folders = []
    for folder in folders:
        try:
            names = os.listdir(os.path.join(root, folder))
        except OSError:
            continue
        counted_folder = False
        for name in names:
            if not name.endswith(SUFFIX):
                continue
            try:
                size += os.stat(os.path.join(root, folder, name)).st_size
            except OSError:
                continue
            files += 1
            if not counted_folder:
                kernels += 1
                counted_folder = True
    return CacheInfo(root, kernels, files, size, _counts["hits"], _counts["misses"],
                     _counts["writes"], _counts["write_errors"], _last_write_error[0])


def clear_jit_cache():
    """Remove every gpuhost.jit disk record (and leftover temporary file).

    numba-cuda's own cache files (``__pycache__/*.nbi``, ``*.nbc``) are left alone, so a
    kernel's next launch in a fresh process may still load from numba's cache (and is
    recorded again).

    Returns
    -------
    int
        How many files were removed.

    Examples
    --------
    >>> removed = gpuhost.clear_jit_cache()
    >>> gpuhost.jit_cache_info().files
    0
    """
    root = cache_dir()
    removed = 0
    try:
        folders = os.listdir(root)
    except OSError:
        return 0
    for folder in folders:
        path = os.path.join(root, folder)
        if os.path.isdir(path):
            removed += _cache.clear(path, SUFFIX)
            try:
                os.rmdir(path)
            except OSError:
                pass
    return removed
