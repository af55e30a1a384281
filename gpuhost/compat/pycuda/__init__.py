"""pycuda's names over gpuhost: ``pycuda.tools`` (`gpuhost.compat.pycuda.tools`, also
``gpuhost.tools``), ``pycuda.autoinit`` and ``pycuda.autoprimaryctx``
(`gpuhost.compat.pycuda.autoinit`, also ``gpuhost.autoinit``; importing either makes a
context current).

Each module only renames and adapts gpuhost's own layer: the default device and context
are gpuhost/_default_context.py's, the pools gpuhost's C pools.
"""
