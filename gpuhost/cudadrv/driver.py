"""numba.cuda.cudadrv.driver's names, at the path its users import: the names of
`gpuhost.compat.numba._cudadrv.driver`, which holds the code (and the docstring this
module shows)."""
from ..compat.numba._cudadrv import driver as _face
from ..compat.numba._cudadrv.driver import __all__  # noqa: F401

__doc__ = _face.__doc__
# The face's public names it holds now; those it makes on first use, and its private ones,
# come through __getattr__ (so that this module is as lazy as the face).
globals().update({_name: getattr(_face, _name) for _name in __all__ if _name in vars(_face)})


def __getattr__(name):
    """The face's other names (private ones too, for the code and tests that reach them)."""
    try:
        return getattr(_face, name)
    except AttributeError as error:  # said of this module, the one the caller named
        message = str(error).replace(repr(_face.__name__), repr(__name__), 1)
        raise AttributeError(message, name=name, obj=None) from None


def __dir__():
    return dir(_face)
