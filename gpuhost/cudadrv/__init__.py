"""numba.cuda.cudadrv's names at the path numba programs reach (``cuda.cudadrv``): the
package gpuhost/compat/numba/_cudadrv/, which holds the code (and the docstring this module
shows); ``driver`` and ``devicearray`` are this package's thin modules over the face's,
``devices``, ``error`` and ``runtime`` gpuhost's own modules, importable by these names too.

The face's package is ``_cudadrv``, not ``cudadrv``: numba-cuda installs an import hook that
takes every module whose name contains "numba.cuda" for one of its own."""
import sys as _sys

from ..compat.numba import _cudadrv as _face
from ..compat.numba._cudadrv import __all__, devices, error, runtime  # noqa: F401
from . import devicearray, driver  # noqa: F401

__doc__ = _face.__doc__

for _name in ("devices", "error", "runtime"):
    _sys.modules.setdefault(__name__ + "." + _name, getattr(_face, _name))
del _name
