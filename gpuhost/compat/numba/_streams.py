"""numba-cuda's own functions take gpuhost Streams, whenever numba-cuda is imported.

The one piece of gpuhost's numba support loaded with gpuhost: a finder that notices
numba's driver module being imported (gpuhost never imports numba itself) and only then
teaches that module gpuhost's Streams (accept_gpuhost_streams), for the numba-cuda
versions gpuhost/_numba.py knows.
"""
import sys

from ... import _core

_DRIVER = "numba.cuda.cudadrv.driver"


def accept_gpuhost_streams(driver):
    """Let numba-cuda's own functions take gpuhost Streams as they take numba's (its random
    states, vectorize kernels' stream=, its device arrays' copies): the two converters in
    numba's driver module through which every stream= argument of numba's passes gain a
    case for them.  Only for the numba-cuda versions gpuhost/_numba.py knows, and only where
    those converters are there; every other stream goes to numba's own code."""
    if getattr(driver, "_gpuhost_streams", False):
        return
    handle, to_core = getattr(driver, "_stream_handle", None), getattr(driver, "_to_core_stream", None)
    core_stream = getattr(driver, "ExperimentalStream", None)
    from ... import _numba  # the numba-cuda versions gpuhost.jit knows

    version = _numba.installed_version()
    known = version is not None and \
        _numba.SUPPORTED[0] <= _numba._version_tuple(version)[:2] < _numba.SUPPORTED[1]
    if handle is None or to_core is None or core_stream is None or not known:
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


class _DriverLoader:
    """Runs numba's driver module, then lets it take gpuhost Streams."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        accept_gpuhost_streams(module)


class _DriverHook:
    """A finder that only notices numba's driver module being imported (so that gpuhost
    never imports numba itself): its loader then adds gpuhost Streams."""

    def find_spec(self, name, path=None, target=None):
        if name != _DRIVER:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _DriverLoader(spec.loader)
                return spec
        return None


def watch_for_numba():
    """At gpuhost's import: numba's driver, imported already or later, takes gpuhost
    Streams (accept_gpuhost_streams)."""
    if _DRIVER in sys.modules:
        accept_gpuhost_streams(sys.modules[_DRIVER])
    elif not any(isinstance(f, _DriverHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _DriverHook())
