"""numba-cuda's own functions take gpuhost Streams, whenever numba-cuda is imported.

The one piece of gpuhost's numba support loaded with gpuhost: a finder that notices
numba's driver module being imported (gpuhost never imports numba itself) and only then
imports gpuhost/_numba.py, which holds everything else gpuhost knows of numba-cuda.
"""
import sys

_DRIVER = "numba.cuda.cudadrv.driver"


def _accept_gpuhost_streams(driver):
    from . import _numba

    _numba.accept_gpuhost_streams(driver)


class _DriverLoader:
    """Runs numba's driver module, then lets it take gpuhost Streams."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        _accept_gpuhost_streams(module)


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
    Streams (_numba.accept_gpuhost_streams)."""
    if _DRIVER in sys.modules:
        _accept_gpuhost_streams(sys.modules[_DRIVER])
    elif not any(isinstance(f, _DriverHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _DriverHook())
