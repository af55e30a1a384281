"""The module itself: import, reimport, signatures and docstrings, python -m gpuhost."""
import inspect
import sys

import pytest

import gpuhost
from conftest import REAL_GPU, run_python

PUBLIC_CALLABLES = [
    "close", "current_context", "detect", "driver_version", "get_current_device",
    "is_available", "list_devices", "require_context", "select_device", "synchronize",
]


def test_reimporting_core_gives_distinct_working_types():
    first = sys.modules.pop("gpuhost._core")
    try:
        import importlib

        second = importlib.import_module("gpuhost._core")
        assert second is not first
        assert second.Device is not first.Device
        assert second.Context is not first.Context
        assert second.MemoryInfo is not first.MemoryInfo
        here = first.current_context().device.id
        dev = second.get_device(here)
        assert type(dev) is second.Device and dev.name == first.get_device(here).name
        assert second.current_context().get_memory_info().total == dev.total_memory
    finally:
        sys.modules["gpuhost._core"] = first
        gpuhost._core = first  # the import set the package's attribute too: modules imported
        # later (from . import _core) must get the module every other object comes from


# What `import gpuhost` loads of gpuhost: the core, the modules that attach Python methods
# to its types or register the helpers it calls, and what those import.  Everything else
# (devices, kernels, nvtx, compiler, memory, numba's support, ...) is imported on first
# use; a module added here makes every `import gpuhost` slower (benchmarks/import_time.py).
IMPORTED_WITH_GPUHOST = [
    "gpuhost", "gpuhost._arrays", "gpuhost._code_images", "gpuhost._core", "gpuhost._ipc",
    "gpuhost._library_versions", "gpuhost._methods", "gpuhost._shadow_check",
    "gpuhost._streamtools", "gpuhost._version", "gpuhost.compat", "gpuhost.compat.numba",
    "gpuhost.compat.numba._context", "gpuhost.compat.numba._streams", "gpuhost.errors",
    "gpuhost.graphs", "gpuhost.runtime",
]


def _fresh(code):
    """`code`'s output, run in a fresh interpreter after `import numpy, gpuhost`."""
    proc = run_python("import sys, numpy, gpuhost\n" + code)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_import_gpuhost_loads_only_the_modules_its_types_need():
    out = _fresh("print(' '.join(sorted(m for m in sys.modules if m.startswith('gpuhost'))))\n"
                 "print('numba' in sys.modules)")
    loaded, numba = out.split("\n")[:2]
    assert loaded.split() == IMPORTED_WITH_GPUHOST
    assert numba == "False"


def test_every_name_in_all_resolves_in_a_fresh_interpreter():
    out = _fresh("names = set(dir(gpuhost))\n"
                 "missing = [n for n in gpuhost.__all__ if n not in names]\n"
                 "values = {n: getattr(gpuhost, n) for n in gpuhost.__all__}\n"
                 "ns = {}\n"
                 "exec('from gpuhost import *', ns)\n"
                 "assert all(ns[n] is values[n] for n in gpuhost.__all__)\n"
                 "print(missing, len(values))")
    assert out.split() == ["[]", str(len(gpuhost.__all__))]
    for name in gpuhost.__all__:
        assert getattr(gpuhost, name) is not None, name


@pytest.mark.parametrize("name, module", [
    ("gpus", "devices"), ("detect", "devices"), ("is_fp8_supported", "devices"),
    ("pinned_array", "_host_arrays"), ("mapped", "_host_arrays"),
    ("launch", "kernels"), ("SourceModule", "kernels"), ("RawKernel", "kernels"),
    ("Linker", "kernels"), ("compile_ptx", "compiler"), ("set_memory_manager",
                                                         "memory_manager")])
def test_names_imported_on_first_use_are_their_modules_own(name, module):
    out = _fresh("import importlib\n"
                 "mod = 'gpuhost.%s'\n"
                 "before = mod in sys.modules\n"
                 "value = getattr(gpuhost, %r)\n"
                 "print(before, value is getattr(importlib.import_module(mod), %r),\n"
                 "      getattr(gpuhost, mod[8:]) is sys.modules[mod], %r in dir(gpuhost))"
                 % (module, name, name, name))
    assert out.split() == ["False", "True", "True", "True"]


def test_submodules_import_by_name_and_as_attributes():
    import importlib

    for name in ("devices", "kernels", "nvtx", "runtime", "memory", "tools", "driver",
                 "devicearray", "cudadrv", "graphs", "errors"):
        assert name in dir(gpuhost), name
        module = getattr(gpuhost, name)
        assert module.__name__.startswith("gpuhost."), name
    for name in ("devices", "kernels", "nvtx", "runtime", "graphs", "errors"):
        assert importlib.import_module("gpuhost." + name) is getattr(gpuhost, name)
    assert gpuhost.Kernel is gpuhost.kernels.Kernel is gpuhost._core.Kernel
    assert gpuhost.Module is gpuhost.kernels.Module and gpuhost.gpus is gpuhost.devices.gpus


@pytest.mark.parametrize("name", PUBLIC_CALLABLES)
def test_public_callables_have_signatures_and_docs(name):
    fn = getattr(gpuhost, name)
    inspect.signature(fn)
    assert fn.__doc__ and fn.__doc__.strip()


def test_c_methods_have_text_signatures():
    for cls in (gpuhost.Device, gpuhost.Context):
        for name, member in vars(cls).items():
            if callable(member) and not name.startswith("_"):
                inspect.signature(member)
                assert member.__doc__, (cls, name)


def test_types_are_final_and_named_in_the_package():
    assert gpuhost.Device.__module__ == "gpuhost"
    assert gpuhost.Context.__module__ == "gpuhost"
    with pytest.raises(TypeError):
        class Sub(gpuhost.Device):
            pass


def test_python_dash_m_prints_devices_and_self_checks():
    proc = run_python("import runpy; runpy.run_module('gpuhost', run_name='__main__')")
    assert proc.returncode in (0, None) or proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "Found %d CUDA device" % len(gpuhost.gpus) in out
    assert "self-check device 0: context 0x" in out and ": ok" in out
    assert "FAILED" not in out


def test_python_dash_m_without_a_driver_says_so_and_exits_0():
    proc = run_python("import runpy; runpy.run_module('gpuhost', run_name='__main__')",
                      {"GPUHOST_CUDA_DRIVER": "/nonexistent/libcuda.so.1"})
    assert proc.returncode == 0, proc.stderr
    assert "CUDA driver not usable: no CUDA driver library was found" in proc.stdout


def test_detect_lists_every_device(capsys):
    assert gpuhost.detect() is True
    out = capsys.readouterr().out
    assert out.startswith("Found %d CUDA device" % len(gpuhost.gpus))
    for dev in gpuhost.gpus:
        assert dev.uuid in out and "id %d    %20s %40s" % (dev.id, dev.name, "[SUPPORTED]") in out
    assert "%d/%d devices are supported" % (len(gpuhost.gpus), len(gpuhost.gpus)) in out


def test_fake_driver_is_never_a_fallback():
    """Without GPUHOST_CUDA_DRIVER, gpuhost looks for the real driver only."""
    proc = run_python("import gpuhost; print(gpuhost.is_available())",
                      {"GPUHOST_CUDA_DRIVER": None, "NUMBA_CUDA_DRIVER": None})
    assert proc.stdout.strip() == ("True" if REAL_GPU else "False")


def test_type_stubs_name_every_public_name_of_the_core():
    import os

    import gpuhost._core as core

    stub = open(os.path.join(os.path.dirname(gpuhost.__file__), "_core.pyi")).read()
    for name in dir(core):
        if not name.startswith("__"):
            assert ("def %s(" % name) in stub or ("class %s" % name) in stub or \
                ("%s:" % name) in stub, name


def test_the_wheel_lists_every_package_folder():
    """pyproject.toml names gpuhost's packages one by one: a folder left out (a face of
    compat/, say) would be missing from the installed package."""
    import os
    import tomllib

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "pyproject.toml"), "rb") as f:
        listed = tomllib.load(f)["tool"]["setuptools"]["packages"]
    package_dir = os.path.dirname(gpuhost.__file__)
    folders = sorted(
        os.path.relpath(folder, os.path.dirname(package_dir)).replace(os.sep, ".")
        for folder, dirs, files in os.walk(package_dir)
        if "__init__.py" in files and "__pycache__" not in folder)
    assert sorted(listed) == folders


def test_the_jit_asks_the_c_launcher_where_a_launch_goes():
    """_core._jit_context is the C launcher's choice of context, which gpuhost.jit's Python
    side asks rather than restates: a gpuhost stream's own context, else the current one
    (device 0's primary context made current where none is, as numba does)."""
    jit_context = gpuhost._core._jit_context
    here = gpuhost.current_context()
    own = gpuhost.stream()
    for stream in (0, None, gpuhost.default_stream(), gpuhost.legacy_default_stream(),
                   gpuhost.per_thread_default_stream(), gpuhost.external_stream(own.handle)):
        assert jit_context(stream) is here, stream
    assert jit_context(own) is own.context is here
    if len(gpuhost.gpus) > 1:
        other = 1 if here.device.id == 0 else 0
        with gpuhost.gpus[other]:
            assert jit_context(own) is here  # the stream's, not the current one
            assert jit_context(0) is gpuhost.current_context() is not here
    out = _fresh("c = gpuhost._core._jit_context(0)\n"
                 "print(c.device.id, c is gpuhost.current_context())")
    assert out.split() == ["0", "True"]
