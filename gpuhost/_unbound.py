"""CuPy's module functions are Cython builtins, which never bind as methods: CuPy's own
tests keep ``memory.malloc_managed`` as a class attribute (``testing.parameterize``) and call
``self.allocator(size)``, which a Python function would turn into
``malloc_managed(self, size)``. `unbound` gives a Python function that behaviour.
"""
import functools


class Unbound:
    """The base of the callables `unbound` makes: each is the only instance of a class
    of its own whose ``__call__`` is the function itself (a staticmethod, so a call costs
    no Python frame more). Read as a class attribute it stays itself, the same object, as
    a builtin does: its ``__get__`` returns it unbound (which also makes it a routine to
    `inspect`, and a function to the documentation)."""

    def __get__(self, instance, owner=None):
        return self

    def __repr__(self):
        return "<built-in function %s>" % self.__name__

    def __reduce__(self):
        return self.__qualname__  # pickled by reference, as a module-level function


def unbound(fn):
    """`fn`, as a callable that does not bind as a method (see the module's docstring).

    Its name, qualified name, module, docstring and signature are `fn`'s
    (``__wrapped__`` is `fn`), and it pickles by reference.
    """
    cls = type(fn.__name__, (Unbound,), {"__call__": staticmethod(fn), "__doc__": fn.__doc__,
                                         "__module__": fn.__module__})
    return functools.update_wrapper(cls(), fn)
