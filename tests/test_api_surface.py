"""The public surface for people and tools: every public callable of every public module
(the names in its __all__, and the methods of public classes, C types included) has a
signature inspect.signature can read and a docstring; the package ships its type stubs."""
import importlib
import inspect
import os
import pkgutil
import types

import pytest

import gpuhost

# Modules whose import has a side effect (pushing a context) that a walk must not cause;
# both hold two names, context and device, and no callable.
SIDE_EFFECT_MODULES = {"gpuhost.autoinit", "gpuhost.autoprimaryctx"}
# Modules whose public names need not carry docstrings (checked for signatures only).
DOCS_ELSEWHERE = set()
# Methods every class has from object or type, documented by Python itself.
INHERITED = set(dir(object)) | {"__weakref__", "__dict__", "__module__", "__slotnames__"}
# Dunders whose signatures are Python's own protocol, checked only for being readable.
DUNDER_CHECKED = {"__init__", "__call__", "__enter__", "__exit__", "__getitem__", "__setitem__",
                  "__len__", "__iter__", "__dlpack__", "__dlpack_device__", "__array__",
                  "__getattr__"}


def public_modules():
    names = ["gpuhost"]
    for info in pkgutil.iter_modules(gpuhost.__path__):
        name = "gpuhost." + info.name
        if not info.name.startswith("_") and name not in SIDE_EFFECT_MODULES:
            names.append(name)
    return names + ["gpuhost.cudadrv.driver", "gpuhost.cudadrv.devicearray"]


def public_names(module):
    names = getattr(module, "__all__", None)
    if names is None:  # every public name that is gpuhost's own (defined or re-exported)
        names = [n for n, v in vars(module).items() if not n.startswith("_")
                 and (getattr(v, "__module__", None) or "").startswith("gpuhost")]
    return [n for n in names if not isinstance(getattr(module, n), types.ModuleType)]


def members(module_name):
    """(qualified name, object, kind) of every public callable and attribute to check."""
    module = importlib.import_module(module_name)
    out = []
    for name in public_names(module):
        obj = getattr(module, name)
        qual = "%s.%s" % (module_name, name)
        if not callable(obj):
            continue
        out.append((qual, obj, "dunder" if module_name in DOCS_ELSEWHERE else "callable"))
        if not isinstance(obj, type):
            continue
        for base in obj.__mro__:
            if base is object or base.__module__ == "builtins":
                continue
            for attr, value in vars(base).items():
                if attr in INHERITED and attr not in DUNDER_CHECKED:
                    continue
                if attr.startswith("_") and not attr.startswith("_repr_") \
                        and attr not in DUNDER_CHECKED:
                    continue
                where = "%s.%s" % (qual, attr)
                if isinstance(value, (staticmethod, classmethod)):
                    value = value.__func__
                if isinstance(value, (property, types.GetSetDescriptorType,
                                      types.MemberDescriptorType)):
                    if module_name not in DOCS_ELSEWHERE:
                        out.append((where, value, "attribute"))
                elif callable(value) and not isinstance(value, type):
                    kind = "dunder" if attr.startswith("__") else "method"
                    if module_name in DOCS_ELSEWHERE:
                        kind = "dunder"  # signature only
                    out.append((where, value, kind))
    return out


ALL = [m for name in public_modules() for m in members(name)]


def test_the_walk_covers_the_c_types_and_the_submodules():
    quals = {qual for qual, _, _ in ALL}
    for expected in ("gpuhost.Device.get_attribute", "gpuhost.Device._repr_html_",
                     "gpuhost.DeviceArray.copy_to_host", "gpuhost.Event.elapsed_time",
                     "gpuhost.Stream.synchronize", "gpuhost.Kernel.configure",
                     "gpuhost.tools.DeviceData", "gpuhost.nvtx.range_push",
                     "gpuhost.compiler.compile_ptx", "gpuhost.summary",
                     "gpuhost.DeviceArray.shape", "gpuhost.memory.MemoryPool.malloc"):
        assert expected in quals, expected
    assert len(ALL) > 300


@pytest.mark.parametrize("qual, obj, kind", [m for m in ALL if m[2] != "attribute"],
                         ids=lambda v: v if isinstance(v, str) and "." in v else "")
def test_public_callable_has_a_signature(qual, obj, kind):
    sig = inspect.signature(obj)
    assert isinstance(sig, inspect.Signature), qual


@pytest.mark.parametrize("qual, obj, kind", [m for m in ALL if m[2] in ("callable", "method",
                                                                         "attribute")],
                         ids=lambda v: v if isinstance(v, str) and "." in v else "")
def test_public_name_has_a_docstring(qual, obj, kind):
    doc = inspect.getdoc(obj) if kind != "attribute" else _attribute_doc(qual, obj)
    assert doc and doc.strip(), "%s has no docstring" % qual
    # a C text signature alone is not a docstring
    assert not doc.strip().endswith("--"), qual


def _attribute_doc(qual, obj):
    if isinstance(obj, types.MemberDescriptorType):  # a __slots__ entry: its doc is there
        owner = obj.__objclass__
        slots = vars(owner).get("__slots__")
        return slots.get(obj.__name__) if isinstance(slots, dict) else obj.__doc__
    return obj.__doc__


def test_c_methods_signatures_name_their_parameters():
    sig = inspect.signature(gpuhost.Event.record)
    assert list(sig.parameters) == ["self", "stream"]
    assert sig.parameters["stream"].default == 0
    sig = inspect.signature(gpuhost.Device._repr_pretty_)
    assert list(sig.parameters) == ["self", "p", "cycle"]
    assert inspect.signature(gpuhost.DeviceArray.copy_to_host).parameters["ary"].default is None


def test_exceptions_take_numba_arguments():
    assert str(inspect.signature(gpuhost.CudaSupportError)) == "(*args, **kwargs)"
    assert str(inspect.signature(gpuhost.CudaDriverError)) == "(*args)"
    err = gpuhost.InvalidDeviceError("no device 7")
    assert isinstance(err, IndexError) and err.args == ("no device 7",)
    assert gpuhost.CudaSupportError("x", name="y").name == "y"


def test_slot_attributes_are_documented():
    assert _attribute_doc("", gpuhost.IpcArrayHandle.offset).startswith("Bytes from the start")
    assert inspect.getdoc(gpuhost.IpcEventHandle.handle).startswith(
        "The driver's IPC event handle, bytes.")
    assert gpuhost.nvtx.range("x").message == "x"


def test_type_stubs_are_shipped_and_list_the_displays():
    here = os.path.dirname(gpuhost.__file__)
    assert os.path.exists(os.path.join(here, "py.typed"))
    stub = open(os.path.join(here, "_core.pyi")).read()
    assert stub.count("def _repr_html_(self) -> str: ...") >= 4
    # the checkout's, beside tests/ (the package may be a copy elsewhere, as in CI's
    # sanitizer step)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    pyproject = open(os.path.join(root, "pyproject.toml")).read()
    assert 'gpuhost = ["py.typed", "*.pyi"]' in pyproject


def test_stub_methods_exist_on_the_c_types():
    """Every method a class in _core.pyi declares exists on the type (no stale stubs)."""
    import ast

    import gpuhost._core as core

    tree = ast.parse(open(os.path.join(os.path.dirname(gpuhost.__file__), "_core.pyi")).read())
    checked = 0
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and hasattr(core, node.name):
            cls = getattr(core, node.name)
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name != "__getattr__":
                    assert hasattr(cls, item.name), "%s.%s" % (node.name, item.name)
                    checked += 1
    assert checked > 50
