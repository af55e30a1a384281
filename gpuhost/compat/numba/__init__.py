"""numba.cuda's host-side names over gpuhost: the driver modules numba programs reach
through ``cuda.cudadrv`` (gpuhost/compat/numba/_cudadrv/, at ``gpuhost.cudadrv``), the
External Memory Management plugin interface (`gpuhost.compat.numba.memory_manager`, also
``gpuhost.memory_manager``), numba's Context methods (attached to gpuhost's Context by
`_context`), ``cuda.descriptor``, and the hook that lets numba-cuda's own functions take
gpuhost Streams.

Each module only renames and adapts gpuhost's own layer.  What gpuhost.jit itself knows of
numba-cuda, the compiler it hands kernels to (design decision 12), is no face: it is
gpuhost/_numba.py, in the own layer, with the jit.
"""
