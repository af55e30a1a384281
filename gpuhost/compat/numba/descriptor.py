"""numba.cuda.descriptor's names (``cuda.descriptor``): the CUDA target that `gpuhost.jit`
compiles Python kernels for.

gpuhost has no compiler of its own: `gpuhost.jit` hands kernels to numba-cuda (design
decision 12), so the target a numba program reaches here, to type or lower with numba's
extension API (``cuda.descriptor.cuda_target.typing_context``), is numba-cuda's own:
``cuda_target``, ``CUDATarget`` and ``CUDATargetOptions`` are numba-cuda's objects,
resolved on first use (numba-cuda is imported then, with gpuhost.jit's version check),
as gpuhost's kernel names (``gpuhost.grid``, ``gpuhost.shared``) are.

Examples
--------
>>> from gpuhost import descriptor
>>> import numba.cuda.descriptor                     # doctest: +SKIP
>>> descriptor.cuda_target is numba.cuda.descriptor.cuda_target   # doctest: +SKIP
True
"""
# numba-cuda's names, resolved by __getattr__; none is gpuhost's, so none is in __all__
# (numba-cuda documents them).
_NAMES = ("CUDATarget", "CUDATargetOptions", "cuda_target")
__all__ = []


def __getattr__(name):
    if name not in _NAMES:
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    from ... import _numba

    _numba.load()  # numba-cuda, checked; ImportError saying what to install
    from importlib import import_module

    # not cached here: each use asks _numba.load() (itself cached), so that gpuhost.descriptor,
    # the public path, answers as this module does
    return getattr(import_module("numba.cuda.descriptor"), name)


def __dir__():
    return sorted(set(globals()) | set(_NAMES))
