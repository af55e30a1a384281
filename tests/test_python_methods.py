"""The methods of gpuhost's C types that are written in Python are attached to the types
once, at import (gpuhost/_methods.py): ``Context.create_stream`` is the Python function
itself, named as a method, with the C method's documentation; no C method forwards to
Python by module name per call."""
import inspect

import numpy as np
import pytest

import gpuhost
from conftest import run_python
from gpuhost import _arrays, _core, _ipc, _methods, _streamtools, graphs
from gpuhost.compat.numba import _context as _context_api

CONTEXT_METHODS = [
    "memalloc", "memallocmanaged", "memhostalloc", "mempin", "get_ipc_handle",
    "open_ipc_handle", "create_stream", "create_external_stream", "create_event",
    "get_default_stream", "get_legacy_default_stream", "get_per_thread_default_stream",
    "prepare_for_use", "defer_cleanup", "create_module_ptx", "unload_module",
    "get_active_blocks_per_multiprocessor", "get_max_potential_block_size",
]

# (type, method name, the function of its defining module)
METHODS = (
    [(_core.Context, name, getattr(_context_api, name)) for name in CONTEXT_METHODS]
    + [(_core.DeviceArray, name, getattr(_arrays, name))
       for name in ("reshape", "ravel", "view", "transpose", "split")]
    + [(_core.DeviceArray, "get_ipc_handle", _ipc.get_ipc_handle),
       (_core.Stream, "async_done", _streamtools.async_done),
       (_core.Stream, "auto_synchronize", _streamtools.auto_synchronize),
       (_core.Graph, "add_memcpy", graphs._add_memcpy),
       (_core.Graph, "add_memset", graphs._add_memset)]
)
# (type, attribute name, getter, setter)
ATTRIBUTES = [
    (_core.Context, "memory_manager", _context_api.get_memory_manager,
     _context_api.set_memory_manager),
    (_core.Context, "deallocations", _context_api.get_deallocations, None),
]


def _ids(entries):
    return ["%s.%s" % (entry[0].__name__, entry[1]) for entry in entries]


@pytest.mark.parametrize("cls, name, fn", METHODS, ids=_ids(METHODS))
def test_the_functions_are_named_and_documented_as_methods(cls, name, fn):
    assert inspect.isfunction(fn)
    assert fn.__name__ == name and fn.__qualname__ == "%s.%s" % (cls.__name__, name)
    assert list(inspect.signature(fn).parameters)[0] == "self"
    doc = inspect.getdoc(fn)
    assert doc and "Examples\n--------\n>>> " in doc, "no example in %s's docstring" % name


@pytest.mark.parametrize("cls, name, fget, fset", ATTRIBUTES, ids=_ids(ATTRIBUTES))
def test_the_attribute_functions_are_named_and_documented(cls, name, fget, fset):
    for fn in (fget, fset):
        if fn is not None:
            assert fn.__qualname__ == "%s.%s" % (cls.__name__, name)
    assert "Examples\n--------\n>>> " in inspect.getdoc(fget)


def test_the_types_hold_the_python_functions():
    for cls, name, fn in METHODS:
        assert cls.__dict__[name] is fn, "%s.%s is not the Python function" % (cls.__name__, name)
        assert inspect.isfunction(cls.__dict__[name])
    for cls, name, fget, fset in ATTRIBUTES:
        prop = cls.__dict__[name]
        assert isinstance(prop, property) and prop.fget is fget and prop.fset is fset
        assert prop.__doc__ == fget.__doc__


def test_the_methods_work_through_the_types():
    ctx = gpuhost.current_context()
    assert isinstance(ctx.create_stream(), gpuhost.Stream)
    assert ctx.memalloc(256).size == 256
    assert ctx.memory_manager is ctx.memory_manager
    with pytest.raises(AttributeError, match="cannot be deleted"):
        del ctx.memory_manager
    d = gpuhost.device_array((2, 3), "f4")
    assert d.reshape(3, 2).shape == (3, 2) and d.T.shape == (3, 2)
    with gpuhost.stream().auto_synchronize() as s:
        assert isinstance(s, gpuhost.Stream)


def test_the_types_stay_immutable_to_users():
    for cls in {cls for cls, _, _ in METHODS}:
        with pytest.raises(TypeError, match="immutable"):
            cls.create_stream = None


def test_every_core_type_refuses_new_attributes():
    """Every type _core builds from a PyType_Spec is immutable (Py_TPFLAGS_IMMUTABLETYPE,
    which test_csrc_lint checks in the sources), base types Python subclasses included;
    the subclasses themselves stay open."""
    types = [t for t in vars(_core).values() if isinstance(t, type)
             and t.__module__ == "gpuhost._core" and not issubclass(t, BaseException)]
    assert {"NcclCommunicator", "NcclRegistration", "NcclMemory", "JitDispatcher"} <= \
        {t.__name__ for t in types}
    for t in types:
        with pytest.raises(TypeError, match="immutable"):
            t.probe = None
    import gpuhost.nccl

    gpuhost.nccl.Communicator.probe = 1  # a Python subclass of NcclCommunicator
    del gpuhost.nccl.Communicator.probe


def test_attach_takes_only_gpuhost_types():
    with pytest.raises(TypeError, match="takes a type of gpuhost._core, not int"):
        _methods._attach(int, "x", 1)
    with pytest.raises(TypeError, match="takes a type of gpuhost._core, not numpy.ndarray"):
        _methods._attach(np.ndarray, "x", 1)
    assert not hasattr(int, "x") and not hasattr(np.ndarray, "x")


def test_the_public_core_module_has_no_attach():
    """Only gpuhost/_methods.py holds the function that writes into the types' dicts: the
    extension module's own name for it is gone once gpuhost is imported, and stays gone
    after every lazily imported module has loaded."""
    assert not hasattr(gpuhost._core, "_attach") and "_attach" not in dir(gpuhost._core)
    script = (
        "import gpuhost, importlib, pkgutil\n"
        "assert not hasattr(gpuhost._core, '_attach')\n"
        "for info in pkgutil.walk_packages(gpuhost.__path__, 'gpuhost.'):\n"
        "    if info.name not in ('gpuhost.autoinit', 'gpuhost.autoprimaryctx',\n"
        "                         'gpuhost.__main__', 'gpuhost.launch'):\n"
        "        importlib.import_module(info.name)\n"
        "for name in gpuhost.__all__:\n"
        "    getattr(gpuhost, name)\n"
        "assert not hasattr(gpuhost._core, '_attach'), 'back after the lazy imports'\n"
        "print('ok')\n")
    proc = run_python(script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
