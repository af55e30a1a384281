"""The on-disk kernel cache of gpuhost.compiler: one file per compilation.  The file format
and its atomic writes serve gpuhost.jit's records too (gpuhost/_jitcache.py), under their own
suffix and folder.

Where: GPUHOST_CACHE_DIR, else $XDG_CACHE_HOME/gpuhost, else ~/.cache/gpuhost.
GPUHOST_DISABLE_CACHE=1 turns caching off (compiler.py checks it).

A file is named after the sha256 of everything that decides NVRTC's output (see
digest()) and holds a header (magic, format version, payload length, sha256 of the
payload) before the payload, so a truncated or corrupt file is detected: it is then
ignored, deleted (best effort) and the kernel compiled again.  Files are written to a
temporary name in the same directory and renamed into place (os.replace, atomic), so
processes that write the same entry at once leave one whole file and readers never see
a partial one.  The payload is JSON metadata followed by the raw outputs: no pickle, so
reading a cache file never runs code.
"""
import hashlib
import json
import os
import re
import struct
import warnings

MAGIC = b"GHNVRTC\0"
FORMAT = 1
SUFFIX = ".nvrtc"
_HEADER = struct.Struct("<8sIIQ32s")  # magic, format, reserved (0), payload length, sha256
_META_LEN = struct.Struct("<I")

_warned_dirs = set()


def cache_dir():
    """The directory cache files go to (it may not exist yet)."""
    path = os.environ.get("GPUHOST_CACHE_DIR")
    if path:
        return os.path.abspath(os.path.expanduser(path))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "gpuhost")


# -- what a source includes ------------------------------------------------------------

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)


def scan_includes(source, include_dirs):
    """The files `source` includes that are the user's to change, transitively:
    "quoted" names looked up in the including file's directory (the current directory
    for the source itself, as NVRTC does), then both kinds in `include_dirs`.  The
    toolkit's headers are not scanned: they change only with the toolkit, whose NVRTC
    version is part of every key.

    Returns (deps, hashes): deps is ((path, mtime_ns, size), ...), with (None, cwd, 0)
    first when a name resolved in the current directory; hashes is [[path, sha256], ...].
    """
    if "include" not in source:
        return (), []
    deps, hashes, seen = [], [], set()
    cwd_used = False
    todo = [(source, None)]
    while todo:
        text, here = todo.pop()
        for quote, name in _INCLUDE.findall(text):
            dirs = list(include_dirs)
            if quote == '"':
                dirs.insert(0, here if here is not None else os.getcwd())
            for d in dirs:
                path = os.path.normpath(os.path.join(d, name))
                if not os.path.isfile(path):
                    continue
                cwd_used = cwd_used or (quote == '"' and here is None and d == dirs[0])
                if path not in seen:
                    seen.add(path)
                    try:
                        with open(path, "rb") as f:
                            st = os.fstat(f.fileno())
                            content = f.read()
                    except OSError:
                        break  # NVRTC will say it cannot open it
                    deps.append((path, st.st_mtime_ns, st.st_size))
                    hashes.append([path, hashlib.sha256(content).hexdigest()])
                    todo.append((content.decode("utf-8", "replace"), os.path.dirname(path)))
                break
    if cwd_used:
        deps.insert(0, (None, os.getcwd(), 0))
    return tuple(deps), hashes


def deps_fresh(deps):
    """Whether the files of scan_includes() are as they were (same mtime and size)."""
    for path, mtime, size in deps:
        try:
            if path is None:
                if os.getcwd() != mtime:
                    return False
                continue
            st = os.stat(path)
        except OSError:
            return False
        if st.st_mtime_ns != mtime or st.st_size != size:
            return False
    return True


# -- files -----------------------------------------------------------------------------


def digest(parts, include_hashes):
    """The file name's hash: sha256 of `parts` (a JSON-able list: format, gpuhost and
    NVRTC versions, output, target, options, name expressions, source) and of the
    contents of the included files."""
    text = json.dumps([FORMAT, parts, include_hashes], separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _encode(key, fields):
    """A whole cache file for `fields` (a dict: code and ptx as bytes, the rest JSON)."""
    code, ptx = fields["code"], fields["ptx"]
    meta = {k: v for k, v in fields.items() if k not in ("code", "ptx")}
    meta.update(key=key, code_len=len(code), ptx_len=-1 if ptx is None else len(ptx))
    blob = json.dumps(meta, separators=(",", ":")).encode("utf-8", "surrogatepass")
    payload = b"".join([_META_LEN.pack(len(blob)), blob, code, ptx or b""])
    header = _HEADER.pack(MAGIC, FORMAT, 0, len(payload), hashlib.sha256(payload).digest())
    return header + payload


def _decode(data, key):
    """The fields of a cache file's bytes, or None if it is not whole and ours."""
    if len(data) < _HEADER.size:
        return None
    magic, fmt, _, length, sha = _HEADER.unpack_from(data)
    payload = memoryview(data)[_HEADER.size:]
    if magic != MAGIC or fmt != FORMAT or length != len(payload) or \
            hashlib.sha256(payload).digest() != sha:
        return None
    try:
        (n,) = _META_LEN.unpack_from(payload)
        meta = json.loads(bytes(payload[4:4 + n]).decode("utf-8", "surrogatepass"))
        code_len, ptx_len = meta.pop("code_len"), meta.pop("ptx_len")
        rest = payload[4 + n:]
        if meta.pop("key") != key or code_len + max(ptx_len, 0) != len(rest):
            return None
    except (ValueError, KeyError, TypeError, struct.error):
        return None
    meta["code"] = bytes(rest[:code_len])
    meta["ptx"] = None if ptx_len < 0 else bytes(rest[code_len:])
    return meta


def load(directory, key, suffix=SUFFIX):
    """The fields stored under `key`, or None.  A file that is not whole is removed."""
    path = os.path.join(directory, key + suffix)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:  # absent, or unreadable: a miss either way
        return None
    fields = _decode(data, key)
    if fields is None:
        try:
            os.unlink(path)
        except OSError:
            pass
    return fields


def store(directory, key, fields, suffix=SUFFIX, quiet=False):
    """Write `fields` under `key` atomically; never raises for an unwritable directory
    (it warns once per directory, or with `quiet` not at all, and the kernel just is not
    cached).  Returns None when written, else the OSError."""
    import tempfile  # here: the module and what it imports cost a cache that only reads

    data = _encode(key, fields)
    tmp = None
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix="." + key[:16] + "-", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, os.path.join(directory, key + suffix))
        tmp = None
    except OSError as e:
        if quiet:
            return e
        if directory not in _warned_dirs:
            _warned_dirs.add(directory)
            warnings.warn("gpuhost: cannot write the kernel cache in %s (%s); compiled kernels "
                          "are not cached on disk. Set GPUHOST_CACHE_DIR to a writable "
                          "directory, or GPUHOST_DISABLE_CACHE=1." % (directory, e),
                          RuntimeWarning, stacklevel=5)
        return e
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return None


def clear(directory=None, suffix=SUFFIX):
    """Remove every cache file (and leftover temporary file) from `directory` (default:
    cache_dir()); returns how many were removed."""
    directory = directory or cache_dir()
    removed = 0
    try:
        names = os.listdir(directory)
    except OSError:
        return 0
    for name in names:
        if name.endswith(suffix) or (name.startswith(".") and name.endswith(".tmp")):
            try:
                os.unlink(os.path.join(directory, name))
                removed += 1
            except OSError:
                pass
    return removed
