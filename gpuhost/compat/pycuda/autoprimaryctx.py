"""Importing this module makes the default device's primary context current, as
``import pycuda.autoprimaryctx`` does; ``context`` and ``device`` as in pycuda.

gpuhost only uses primary contexts, so this is gpuhost.autoinit under pycuda's other
name: both share one context, pushed once (see gpuhost.autoinit).
"""
from ._tools import _autoinit

context = _autoinit()
device = context.device
