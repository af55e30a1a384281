"""The >>> examples of gpuhost's docstrings run, and every public name has some.

Every public name of every public module (functions, classes, their methods, properties
and slots) must show an example.  Every docstring of the public API with an Examples
section (the modules' names, their classes' members, inherited ones included, C types' as
well as Python's) is run with doctest against the fake driver (tests/fakecuda: two
devices, its kernels mode on so that PTX loads and launches are recorded, the fake NCCL),
one test per docstring so that a failure names it.  An example that cannot run on the fake driver (a second process, a
real kernel's result) says so with ``# doctest: +SKIP``.  The examples' globals are
``gpuhost`` and ``np``; each docstring starts from fresh ones.

    python3 -m pytest -q tests/test_docstring_examples.py -k Stream.synchronize
"""
import doctest
import gc
import importlib
import importlib.metadata
import inspect
import os
import pkgutil
import re
import types

import numpy as np
import pytest

import gpuhost
from conftest import run_python

# Every public module: the package's own, the CuPy namespace and numba's driver modules.  autoinit and
# autoprimaryctx are left out: importing them pushes a context (they hold no function).
SIDE_EFFECT_MODULES = {"gpuhost.autoinit", "gpuhost.autoprimaryctx"}
MODULES = ["gpuhost"] + sorted(
    "gpuhost." + info.name for info in pkgutil.iter_modules(gpuhost.__path__)
    if not info.name.startswith("_") and "gpuhost." + info.name not in SIDE_EFFECT_MODULES
) + ["gpuhost.compat.cupy", "gpuhost.cudadrv.driver", "gpuhost.cudadrv.devicearray"]

# Builtin bases whose members Python documents (an exception's args, bytes' methods).
BUILTIN_OWNERS = {"builtins"}

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _public_names(module):
    names = getattr(module, "__all__", None)
    if names is None:  # every public name that is gpuhost's own (defined or re-exported)
        names = [n for n, v in vars(module).items() if not n.startswith("_")
                 and (getattr(v, "__module__", None) or "").startswith("gpuhost")]
    return [n for n in names if not isinstance(getattr(module, n, None), types.ModuleType)]


def _class_members(cls):
    """(name, object) of the attributes of `cls` and of its gpuhost bases, in the order
    dir() gives; staticmethod and classmethod unwrapped."""
    out = []
    for name in dir(cls):
        if name.startswith("__") and name != "__init__" and not _own_dunder(cls, name):
            continue
        owner = next((b for b in cls.__mro__ if name in vars(b)), None)
        if owner is None or owner.__module__ in BUILTIN_OWNERS:
            continue
        value = vars(owner)[name]
        if isinstance(value, (classmethod, staticmethod)):
            value = value.__func__
        out.append((name, value))
    return out


def _own_dunder(cls, name):
    """Whether a dunder of `cls` is gpuhost's (a documented protocol method such as
    __array__ or __dlpack__) rather than Python's."""
    owner = next((b for b in cls.__mro__ if name in vars(b)), None)
    return owner is not None and owner.__module__ not in BUILTIN_OWNERS \
        and name not in ("__dict__", "__weakref__", "__module__", "__doc__", "__slots__")


def _walk():
    """(qualified name, object, public) of every module, public name and class member;
    each object once, under the first name it is met by (public: a name whose docstring
    must show an example, every public name and member but the modules themselves)."""
    out, seen = [], set()

    def add(qual, obj, public):
        if id(obj) in seen or isinstance(obj, (int, float, str, bytes, tuple, list, dict,
                                                frozenset, set, type(None))):
            return
        seen.add(id(obj))
        out.append((qual, obj, public))

    for mname in MODULES:
        module = importlib.import_module(mname)
        add(mname, module, False)
        for name in _public_names(module):
            obj = getattr(module, name)
            qual = "%s.%s" % (mname, name)
            add(qual, obj, True)
            if inspect.isclass(obj):
                for attr, value in _class_members(obj):
                    add("%s.%s" % (qual, attr), value, not attr.startswith("_"))
    return out


def _doc(obj):
    doc = getattr(obj, "__doc__", None)
    if isinstance(obj, types.MemberDescriptorType):  # a __slots__ entry: its doc is there
        slots = vars(obj.__objclass__).get("__slots__")
        if isinstance(slots, dict):
            doc = slots.get(obj.__name__)
    return doc if isinstance(doc, str) else ""


WALK = _walk()
WITH_EXAMPLES = [(qual, _doc(obj)) for qual, obj, _ in WALK if ">>>" in _doc(obj)]


def test_the_walk_reaches_the_c_types_the_submodules_and_the_inherited_members():
    quals = {qual for qual, _ in WITH_EXAMPLES}
    for expected in ("gpuhost.Stream.synchronize", "gpuhost.DeviceArray.copy_to_host",
                     "gpuhost.DeviceArray.__array__", "gpuhost.Device.get_attribute",
                     "gpuhost.memory.MemoryPool.malloc", "gpuhost.nccl.Communicator",
                     "gpuhost.tools.DeviceData",
                     "gpuhost.nvtx.range_push", "gpuhost.memory_manager.DefaultMemoryManager"):
        assert expected in quals, expected
    assert len(WITH_EXAMPLES) > 400


def _has_numba_cuda():
    """Whether numba-cuda (gpuhost's jit extra) is installed, without importing it."""
    try:
        importlib.metadata.version("numba-cuda")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


HAS_NUMBA_CUDA = _has_numba_cuda()


# The examples that free gpuhost's state in the process (Context.reset) run after the other
# tests of the process (conftest.py says why); those that reset a device (Device.reset,
# numba's driver.reset) run in a process of their own: the suite never resets a device of
# its own process, whose context other libraries share.
CONTEXT_RESETS = re.compile(r">>> .*\bctx\.reset\(\)")
DEVICE_RESETS = re.compile(r">>> .*\b(?:dev|driver\.driver)\.reset\(")

# One docstring's examples in a fresh process, as test_docstring_examples_run runs them.
IN_A_PROCESS = r"""
import ctypes, doctest, os, sys
sys.path.insert(0, %(tests)r)
ctypes.CDLL(os.environ["GPUHOST_CUDA_DRIVER"]).fakecuda_kernels(1)
import numpy as np
import gpuhost
import test_docstring_examples as t
doc = dict(t.WITH_EXAMPLES)[%(qual)r]
test = doctest.DocTestParser().get_doctest(doc, {"gpuhost": gpuhost, "np": np}, %(qual)r, None, 0)
results = doctest.DocTestRunner(optionflags=t.FLAGS, verbose=False).run(test)
print("attempted", results.attempted, "failed", results.failed)
"""


def _skip_unrunnable(qual, test):
    if all(example.options.get(doctest.SKIP) for example in test.examples):
        pytest.skip("every example of %s is marked +SKIP (it needs a real GPU, another "
                    "process, IPython or the like)" % qual)
    if not HAS_NUMBA_CUDA and any(re.search(r"\bjit\b", example.source)
                                  for example in test.examples):
        pytest.skip("the examples of %s compile a Python kernel: they need numba-cuda "
                    "(gpuhost's jit extra), which is not installed" % qual)


@pytest.mark.parametrize("qual, doc", [
    pytest.param(q, d, marks=[pytest.mark.resets_context] if CONTEXT_RESETS.search(d) else [],
                 id=q)
    for q, d in WITH_EXAMPLES if not DEVICE_RESETS.search(d)])
def test_docstring_examples_run(qual, doc, fake_kernels, monkeypatch):
    test = doctest.DocTestParser().get_doctest(doc, {"gpuhost": gpuhost, "np": np}, qual,
                                               None, 0)
    _skip_unrunnable(qual, test)
    report = []
    runner = doctest.DocTestRunner(optionflags=FLAGS, verbose=False)
    # The examples start where a user's session does, on device 0 (under pytest-xdist,
    # gpuhost's pytest plugin makes worker gw<k> start on device k and sets CUDA_DEVICE).
    monkeypatch.delenv("CUDA_DEVICE", raising=False)
    device = gpuhost.get_current_device().id
    gpuhost.select_device(0)
    try:
        results = runner.run(test, out=report.append)
    finally:
        gc.collect()  # what the examples made goes now, not during the next docstring's
        gpuhost.select_device(device)  # also current again after an example of close()
    assert results.failed == 0, "%s: %d of %d examples failed\n%s" % (
        qual, results.failed, results.attempted, "".join(report))


@pytest.mark.parametrize("qual, doc", [pytest.param(q, d, id=q) for q, d in WITH_EXAMPLES
                                       if DEVICE_RESETS.search(d)])
def test_docstring_examples_that_reset_a_device_run_in_a_process_of_their_own(qual, doc, fake):
    test = doctest.DocTestParser().get_doctest(doc, {}, qual, None, 0)
    _skip_unrunnable(qual, test)
    here = os.path.dirname(os.path.abspath(__file__))
    proc = run_python(IN_A_PROCESS % {"tests": here, "qual": qual}, env={"CUDA_DEVICE": None})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "attempted %d failed 0" % len(test.examples), \
        proc.stdout


def test_every_public_name_shows_an_example():
    lacking = [qual for qual, obj, public in WALK if public and ">>>" not in _doc(obj)]
    assert lacking == [], "public names without an Examples section:\n" + "\n".join(lacking)


_SECTIONS = re.compile(r"^(Parameters|Returns|Raises|Examples|Notes|See Also)\n-{3,}$", re.M)
_CODE = re.compile(r"``.+?``|`.+?`")


def _is_attribute(obj):
    """Whether the docs render `obj` as an attribute (a property, a C getset or slot, a
    module's data) rather than as a function, class or module."""
    if isinstance(obj, (property, types.GetSetDescriptorType, types.MemberDescriptorType)):
        return True
    return not (callable(obj) or isinstance(obj, types.ModuleType))


def test_no_attribute_docstring_opens_with_a_colon():
    """The documentation reads an attribute's numpydoc docstring as napoleon does, taking
    the text before a colon on its first line for the attribute's type: such a first line
    would render as a type, not as the sentence it is."""
    bad = []
    for qual, obj, _ in WALK:
        doc = inspect.cleandoc(_doc(obj))
        if _is_attribute(obj) and _SECTIONS.search(doc):
            first = _CODE.sub("", doc.split("\n")[0])
            if re.search(r"(?<!:):(?!:)", first):
                bad.append("%s: %s" % (qual, doc.split("\n")[0]))
    assert bad == [], "reword these first lines without a colon:\n" + "\n".join(bad)
