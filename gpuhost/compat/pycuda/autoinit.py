"""Importing this module makes a context current, as ``import pycuda.autoinit`` does:

    import gpuhost.autoinit
    print(gpuhost.autoinit.device.name)

``context`` is the default device's context (make_default_context(): CUDA_DEVICE, else
``~/.cuda-device``, else the first usable device), pushed on the importing thread's
context stack; ``device`` is its Device.  At exit it is popped and the context caches
are cleared.

Unlike pycuda, whose autoinit creates a new context that only pycuda sees, gpuhost uses
the device's *primary* context, the one CuPy, PyTorch and numba share; so
``gpuhost.autoinit`` and ``gpuhost.autoprimaryctx`` are the same thing, and importing
both makes one context current, once.
"""
from ._tools import _autoinit

context = _autoinit()
device = context.device
