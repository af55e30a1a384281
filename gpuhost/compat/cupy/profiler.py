"""cupy.cuda.profiler's names: start() and stop() switch the profiler's collection
(cuProfilerStart / cuProfilerStop); initialize() is gone since CUDA 12, as in CuPy."""
from ... import _core

__all__ = ["cudaCSV", "cudaKeyValuePair", "initialize", "start", "stop"]

cudaKeyValuePair = 0
cudaCSV = 1


def initialize(config_file, output_file, output_mode):
    """The legacy profiler's set-up (cudaProfilerInitialize), removed in CUDA 12.

    gpuhost needs CUDA 12 or newer, so this always raises, as CuPy does there.

    Parameters
    ----------
    config_file, output_file : str
        Ignored.
    output_mode : int
        Ignored (`cudaKeyValuePair` or `cudaCSV`).

    Raises
    ------
    RuntimeError
        Always.

    Examples
    --------
    >>> from gpuhost.compat.cupy import profiler
    >>> profiler.initialize("config.txt", "out.csv", profiler.cudaCSV)
    Traceback (most recent call last):
    ...
    RuntimeError: cudaProfilerInitialize no longer available in CUDA 12+
    """
    raise RuntimeError("cudaProfilerInitialize no longer available in CUDA 12+")


def start():
    """Start collecting profiling data (cuProfilerStart).

    Only an attached profiler (Nsight Systems with ``--capture-range=cudaProfilerApi``)
    sees it; without one it does nothing. `stop` ends the collection.

    Examples
    --------
    >>> from gpuhost.compat.cupy import profiler
    >>> profiler.start()
    >>> d = gpuhost.to_device(np.arange(4))
    >>> profiler.stop()
    """
    _core.profile_start()


def stop():
    """Stop collecting profiling data (cuProfilerStop), after `start`.

    Examples
    --------
    >>> from gpuhost.compat.cupy import profiler
    >>> profiler.start()
    >>> profiler.stop()
    """
    _core.profile_stop()
