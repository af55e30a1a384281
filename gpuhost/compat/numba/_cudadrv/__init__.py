"""numba.cuda.cudadrv's names, over gpuhost: what numba programs reach through
``cuda.cudadrv`` (numba's EMM plugin examples build ``cuda.cudadrv.driver.AutoFreePointer``,
``isinstance(x, cuda.cudadrv.devicearray.DeviceNDArray)`` is a common check).

    import gpuhost as cuda
    cuda.cudadrv.driver.AutoFreePointer(ctx, ptr, size, finalizer=finalizer)
    isinstance(cuda.to_device(a), cuda.cudadrv.devicearray.DeviceNDArray)   # True

Its modules, as numba's:

- `gpuhost.cudadrv.driver` (also ``gpuhost.driver``): the driver's objects as gpuhost's
  (Context, Device, Stream, Event, the memory pointers and managers of
  `gpuhost.memory_manager`), its errors, and its functions on device memory (``host_to_device``,
  ``device_pointer``, ``memory_size_from_info`` ...), with ``driver``, numba's driver object;
- `gpuhost.cudadrv.devicearray` (also ``gpuhost.devicearray``): the array classes as
  gpuhost's arrays answer them, and ``auto_device``, ``from_array_like`` ...;
- ``devices``, ``error``, ``runtime``: gpuhost's `gpuhost.devices`, `gpuhost.errors` and
  ``gpuhost.runtime``, under numba's names (``import gpuhost.cudadrv.devices`` works too).

numba's compiler-side modules (nvvm, nvrtc's bindings, libs) are numba-cuda's own.

Examples
--------
>>> d = gpuhost.to_device(np.arange(4.0))
>>> isinstance(d, gpuhost.cudadrv.devicearray.DeviceNDArray)
True
>>> gpuhost.cudadrv.driver.Stream is gpuhost.Stream
True
"""
import sys as _sys

from .... import _library_versions as runtime
from .... import devices
from .... import errors as error
from . import devicearray, driver

__all__ = ["devicearray", "devices", "driver", "error", "runtime"]

# numba's modules of these names are importable: so are gpuhost's, under them.
for _name, _module in (("devices", devices), ("error", error), ("runtime", runtime)):
    _sys.modules.setdefault(__name__ + "." + _name, _module)
del _name, _module
