"""Drop-in layers for host code written against another CUDA library's names, over
gpuhost's own types.

    from gpuhost.compat import cupy as cuda    # in place of `from cupy import cuda`

Each layer is a thin adapter: the work is done by gpuhost's C types.
"""
