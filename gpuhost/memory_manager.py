"""numba's External Memory Management plugin interface, at the path its users import: the
names of `gpuhost.compat.numba.memory_manager`, which holds the code (and the docstring
this module shows)."""
from .compat.numba import memory_manager as _face
from .compat.numba.memory_manager import *  # noqa: F401,F403
from .compat.numba.memory_manager import __all__  # noqa: F401

__doc__ = _face.__doc__


def __getattr__(name):
    """The face's other names (private ones too, for the code and tests that reach them)."""
    try:
        return getattr(_face, name)
    except AttributeError as error:  # said of this module, the one the caller named
        message = str(error).replace(repr(_face.__name__), repr(__name__), 1)
        raise AttributeError(message, name=name, obj=None) from None


def __dir__():
    return dir(_face)
