"""cupy.cuda.profiler's names: start() and stop() switch the profiler's collection
(cuProfilerStart / cuProfilerStop); initialize() is gone since CUDA 12, as in CuPy."""
from ... import _core

__all__ = ["cudaCSV", "cudaKeyValuePair", "initialize", "start", "stop"]

cudaKeyValuePair = 0
cudaCSV = 1


def initialize(config_file, output_file, output_mode):
    """The legacy profiler's set-up, removed in CUDA 12 (which gpuhost needs): always
    raises RuntimeError, as CuPy does on CUDA 12 and newer."""
    raise RuntimeError("cudaProfilerInitialize no longer available in CUDA 12+")


def start():
    """Start collecting profiling data (an attached profiler's)."""
    _core.profile_start()


def stop():
    """Stop collecting profiling data."""
    _core.profile_stop()
