"""Methods of gpuhost's C types that are written in Python, attached to the types once.

The module defining such a method attaches it when it is imported (gpuhost's __init__
imports each of them), as pycuda attaches its Python methods to its C++ types:

    @_methods.method(_core.Context)
    def create_stream(self):
        ...

The function stays a function of its module; on the type it is the method, named as one
(``Context.create_stream.__qualname__ == "Context.create_stream"``).  The types stay
immutable to everyone else: the C core's ``_attach``, which writes into a type's dict, is
taken out of ``gpuhost._core`` when this module is first imported (gpuhost's __init__
does so right after loading the core) and kept here, so that no public module reaches it
and every attachment goes through this module.
"""
from . import _core

# Taken, not copied: after this line nothing but this module can change a type of _core.
_attach = vars(_core).pop("_attach")


def method(cls, name=None):
    """Decorator: attach the function to `cls` as the method `name` (by default the
    function's own name), with that ``__name__`` and ``__qualname__``; the function is
    returned."""

    def attach(fn):
        fn.__name__ = name or fn.__name__
        fn.__qualname__ = "%s.%s" % (cls.__name__, fn.__name__)
        _set(cls, fn.__name__, fn)
        return fn

    return attach


def attribute(cls, name, fget, fset=None, fdel=None):
    """Attach ``property(fget, fset, fdel)`` to `cls` as `name` (its doc is fget's)."""
    for fn in (fget, fset, fdel):
        if fn is not None:
            fn.__qualname__ = "%s.%s" % (cls.__name__, name)
    _set(cls, name, property(fget, fset, fdel))


def _set(cls, name, value):
    _attach(cls, name, value)
