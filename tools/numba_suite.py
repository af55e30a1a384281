"""Run numba-cuda's own host-API tests against gpuhost.

The installed numba-cuda's test modules (numba/cuda/tests/cudadrv/ and two of cudapy/)
are copied to a scratch folder with their imports rewritten, and nothing else:
``from numba import cuda`` becomes ``import gpuhost as cuda``, and a name taken from
``numba.cuda`` that gpuhost also offers is taken from gpuhost.  numba's test helpers
(numba.cuda.testing, numba.cuda.tests.support) stay numba's.

Tests that need what gpuhost deliberately does not have are marked not portable,
mechanically, from each test's source and what it calls in its module (its class's
setUp/tearDown, helper methods, module-level functions), each with the reason:
  - numba's compiler: ``cuda.jit`` and the other device-code names, ``vectorize``;
  - numba internals: a name imported from any numba module other than numba.cuda itself
    and the test helpers (``nvvm``, ``config``, ``types`` ...), and of numba's driver,
    devicearray and devices modules (``cuda.driver``, ``cuda.cudadrv.devicearray``,
    ``cuda.devices`` ...) the names gpuhost's namesakes lack (gpuhost.cudadrv.driver,
    gpuhost.cudadrv.devicearray, gpuhost.devices);
  - cuda.core / cuda.bindings, numba's other CUDA binding, and numba's raw driver binding
    (``driver.cuMemGetInfo()`` ...);
  - patching one of gpuhost's C types, which are immutable
    (``mock.patch.object(cuda.driver.Stream, ...)``).
The rest runs under pytest; every one is expected to pass.

With --unskip-317, the tests numba-cuda itself skips for its issue #317 (stream
callbacks, async_done) run too: that one decorator line is dropped.

    python3 tools/numba_suite.py [--out DIR] [--unskip-317] [--list] [-- pytest args]

Needs numba-cuda installed beside gpuhost (the GPU machine has it); nothing of numba's
is kept in this repository.
"""
import argparse
import ast
import json
import os
import re
import sys
import tempfile

from suite_port import CallGraphClassifier, alias_text, report, run_ported

MODULES = [
    "cudadrv/test_array_attr.py",
    "cudadrv/test_context_stack.py",
    "cudadrv/test_cuda_array_slicing.py",
    "cudadrv/test_cuda_auto_context.py",
    "cudadrv/test_cuda_devicerecord.py",
    "cudadrv/test_cuda_driver.py",
    "cudadrv/test_cuda_memory.py",
    "cudadrv/test_cuda_ndarray.py",
    "cudadrv/test_deallocations.py",
    "cudadrv/test_detect.py",
    "cudadrv/test_emm_plugins.py",
    "cudadrv/test_events.py",
    "cudadrv/test_host_alloc.py",
    "cudadrv/test_init.py",
    "cudadrv/test_inline_ptx.py",
    "cudadrv/test_is_fp16.py",
    "cudadrv/test_linkable_code.py",
    "cudadrv/test_linker.py",
    "cudadrv/test_managed_alloc.py",
    "cudadrv/test_module_callbacks.py",
    "cudadrv/test_nvjitlink.py",
    "cudadrv/test_nvrtc.py",
    "cudadrv/test_nvvm_driver.py",
    "cudadrv/test_pinned.py",
    "cudadrv/test_profiler.py",
    "cudadrv/test_reset_device.py",
    "cudadrv/test_runtime.py",
    "cudadrv/test_select_device.py",
    "cudadrv/test_streams.py",
    "cudapy/test_ipc.py",
    "cudapy/test_cuda_array_interface.py",
]

# Attributes of `cuda` that belong to numba's Python-to-PTX compiler (device code and
# what compiles it); gpuhost compiles CUDA C++ instead.
COMPILER_ATTRS = {
    "jit", "declare_device", "vectorize", "guvectorize", "reduce", "Reduce", "compile",
    "compile_ptx", "compile_ptx_for_current_device", "compile_for_current_device",
    "compile_all", "grid", "gridsize", "threadIdx", "blockIdx", "blockDim", "gridDim",
    "laneid", "warpsize", "local", "shared", "const", "atomic", "syncthreads",
    "syncwarp", "cg", "fp16", "libdevice", "random", "selp", "fma", "cbrt", "brev",
    "popc", "clz", "ffs", "threadfence", "activemask", "lanemask_lt", "shfl_sync",
    "all_sync", "any_sync", "eq_sync", "ballot_sync", "match_any_sync",
    "match_all_sync", "nanosleep", "dispatcher", "CUDADispatcher", "types",
    "typing", "float16", "float32", "float64", "int32", "int64", "void", "intp",
}
# Attributes of `cuda` that are numba's own modules (its driver binding, its simulator).
INTERNAL_ATTRS = {"core", "cudadrv", "cudaimpl", "simulator", "kernels", "np", "config",
                  "driver", "devices", "devicearray"}
# numba's modules that gpuhost has a namesake of, offering some of their names
# (numba.cuda.cudadrv.devices, also reached as cuda.devices or cuda.cudadrv.devices:
# gpuhost.devices has gpus, get_context and require_context; numba's driver and devicearray
# modules, gpuhost.cudadrv's): a use of a name the namesake offers is portable, of any
# other name numba internals.
PARTIAL_MODULES = {"numba.cuda.cudadrv.devices": "devices", "numba.cuda.cudadrv.driver": "driver",
                   "numba.cuda.cudadrv.devicearray": "devicearray"}
# Where each namesake is imported from, by a `from numba.cuda.cudadrv.<module> import X`.
NAMESAKE_MODULES = {"devices": "gpuhost.devices", "driver": "gpuhost.cudadrv.driver",
                    "devicearray": "gpuhost.cudadrv.devicearray"}
# Attributes of any object that belong to numba's typing of arrays for its compiler.
TYPING_ATTRS = {"_numba_type_"}
# numba modules whose names are test infrastructure, kept as they are.
TEST_HELPER_MODULES = ("numba.cuda.testing", "numba.cuda.tests")
# Modules of another binding of the driver: a test that needs them is not about gpuhost.
OTHER_BINDINGS = ("cuda.core", "cuda.bindings", "cuda")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIP_317 = re.compile(r"^\s*@unittest\.skip\([^)]*#317[^)]*\)\s*$")


def tests_root():
    import numba.cuda.tests as t

    return os.path.dirname(t.__file__)


def gpuhost_names():
    sys.path.insert(0, REPO)
    import gpuhost

    return {n for n in dir(gpuhost) if not n.startswith("_")}


def partial_module_names():
    """{gpuhost module name: the public names it offers} for PARTIAL_MODULES."""
    sys.path.insert(0, REPO)
    import gpuhost

    return {name: {n for n in dir(getattr(gpuhost, name)) if not n.startswith("_")}
            for name in PARTIAL_MODULES.values()}


def immutable_type_names():
    """{namesake: its names that are gpuhost's C types}: immutable, so a test that patches
    one (mock.patch.object(driver.Stream, ...)) patches numba's Python class, not these."""
    sys.path.insert(0, REPO)
    import gpuhost

    out = {}
    for name in PARTIAL_MODULES.values():
        module = getattr(gpuhost, name)
        out[name] = {n for n in dir(module) if not n.startswith("_")
                     and isinstance(getattr(module, n, None), type)
                     and getattr(module, n).__flags__ & (1 << 8)}  # Py_TPFLAGS_IMMUTABLETYPE
    return out


# numba's raw driver binding: driver.cuMemGetInfo() and the like (gpuhost calls the driver in C).
RAW_BINDING = re.compile(r"^cu[A-Z]")


class ImportRewriter:
    """Rewrites one module's import statements; records which names are numba internals."""

    def __init__(self, offered, namesake_names=None):
        self.offered = offered
        self.namesake_names = namesake_names or {}  # namesake module -> the names it offers
        self.internal = {}  # name bound in the module -> why it is not portable
        self.partial = {}  # name bound in the module -> the PARTIAL_MODULES namesake it is

    def rewrite(self, source):
        tree = ast.parse(source)
        lines = source.splitlines(keepends=True)
        edits = []  # (first line, last line, replacement text)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                new = self._rewrite_node(node)
                if new is not None:
                    indent = re.match(r"\s*", lines[node.lineno - 1]).group(0)
                    edits.append((node.lineno, node.end_lineno, indent + new + "\n"))
        for first, last, text in sorted(edits, reverse=True):
            lines[first - 1:last] = [text]
        return "".join(lines), tree

    def _bind_internal(self, alias, why):
        self.internal[(alias.asname or alias.name).split(".")[0]] = why

    def _rewrite_node(self, node):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "numba" or alias.name.startswith("numba."):
                    self._bind_internal(alias, "numba internals (import %s)" % alias.name)
                elif alias.name.split(".")[0] == "cuda" and alias.name != "cuda":
                    self._bind_internal(alias, "another driver binding (%s)" % alias.name)
            return None
        mod = node.module or ""
        if mod == "numba":
            kept, new = [], []
            for alias in node.names:
                if alias.name == "cuda":
                    new.append("import gpuhost as %s" % (alias.asname or "cuda"))
                else:
                    kept.append(alias)
                    self._bind_internal(alias, "numba internals (numba.%s)" % alias.name)
            if not new:
                return None
            if kept:
                new.append("from numba import " + ", ".join(alias_text(a) for a in kept))
            return "; ".join(new)
        if mod == "numba.cuda":
            ours, theirs = [], []
            for alias in node.names:
                if alias.name in self.offered and alias.name not in COMPILER_ATTRS:
                    ours.append(alias)
                    if alias.name in NAMESAKE_MODULES:  # a module: its names are checked
                        self.partial[alias.asname or alias.name] = alias.name
                else:
                    theirs.append(alias)
                    why = ("numba's compiler (cuda.%s)" if alias.name in COMPILER_ATTRS
                           else "numba internals (numba.cuda.%s)") % alias.name
                    self._bind_internal(alias, why)
            if not ours:
                return None
            parts = ["from gpuhost import " + ", ".join(alias_text(a) for a in ours)]
            if theirs:
                parts.append("from numba.cuda import " + ", ".join(alias_text(a) for a in theirs))
            return "; ".join(parts)
        if mod.startswith("numba") and any(mod + "." + a.name in PARTIAL_MODULES
                                           for a in node.names):
            ours, theirs = [], []
            for alias in node.names:
                namesake = PARTIAL_MODULES.get(mod + "." + alias.name)
                if namesake is None:
                    theirs.append(alias)
                    self._bind_internal(alias, "numba internals (%s.%s)" % (mod, alias.name))
                else:
                    bound = alias.asname or alias.name
                    ours.append("from gpuhost import " + (
                        namesake if bound == namesake else "%s as %s" % (namesake, bound)))
                    self.partial[bound] = namesake
            if theirs:
                ours.append("from %s import %s" % (mod, ", ".join(alias_text(a)
                                                                for a in theirs)))
            return "; ".join(ours)
        if mod in PARTIAL_MODULES:  # from numba.cuda.cudadrv.driver import X, ...
            namesake = PARTIAL_MODULES[mod]
            ours, theirs = [], []
            for alias in node.names:
                (ours if alias.name in self.namesake_names.get(namesake, ()) else theirs
                 ).append(alias)
            for alias in theirs:
                self._bind_internal(alias, "numba internals (%s.%s, which gpuhost.%s lacks)"
                                    % (mod, alias.name, namesake))
            parts = ["from %s import %s" % (NAMESAKE_MODULES[namesake],
                                            ", ".join(alias_text(a) for a in ours))] if ours else []
            if theirs:
                parts.append("from %s import %s" % (mod, ", ".join(alias_text(a) for a in theirs)))
            return "; ".join(parts)
        if mod.startswith("numba") and not mod.startswith(TEST_HELPER_MODULES):
            for alias in node.names:
                self._bind_internal(alias, "numba internals (%s.%s)" % (mod, alias.name))
        elif mod.split(".")[0] == "cuda" and mod.startswith(OTHER_BINDINGS):
            for alias in node.names:
                self._bind_internal(alias, "another driver binding (%s.%s)" % (mod, alias.name))
        elif mod.startswith("llvmlite"):
            for alias in node.names:
                self._bind_internal(alias, "numba's compiler (llvmlite)")
        return None


class Classifier(CallGraphClassifier):
    """Decides, per test, whether it needs numba's compiler or internals."""

    def __init__(self, tree, internal, partial, partial_names, immutable=None):
        super().__init__(tree)
        self.internal = internal
        self.partial = partial  # name bound in the module -> gpuhost namesake module
        self.partial_names = partial_names  # gpuhost namesake module -> names it offers
        self.immutable = immutable or {}  # namesake -> its names that are gpuhost C types

    def _namesake(self, node):
        """The gpuhost namesake module `node` (a Name, cuda.<module> or
        cuda.cudadrv.<module>) stands for, or None."""
        if isinstance(node, ast.Name):
            return self.partial.get(node.id)
        if isinstance(node, ast.Attribute) and node.attr in self.partial_names and (
                _is_cuda(node.value) or (isinstance(node.value, ast.Attribute)
                                         and node.value.attr == "cudadrv"
                                         and _is_cuda(node.value.value))):
            return node.attr
        return None

    def _direct(self, node):
        """The first reason found in `node` itself (not what it calls), or None."""
        offered = set()  # ids of namesake references used for a name the namesake offers
        for sub in ast.walk(node):  # breadth first: an attribute before what it is of
            if isinstance(sub, ast.Attribute) and RAW_BINDING.match(sub.attr):
                return "numba's raw driver binding (.%s)" % sub.attr
            if (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute)
                    and sub.func.attr == "object" and sub.args
                    and isinstance(sub.args[0], ast.Attribute)
                    and self._namesake(sub.args[0].value)
                    and sub.args[0].attr in self.immutable.get(
                        self._namesake(sub.args[0].value), ())):
                return "patches %s.%s, a gpuhost C type (immutable)" % (
                    self._namesake(sub.args[0].value), sub.args[0].attr)
            if isinstance(sub, ast.Attribute) and self._namesake(sub.value):
                namesake = self._namesake(sub.value)
                if sub.attr not in self.partial_names[namesake]:
                    return "numba internals (%s.%s, which gpuhost.%s lacks)" % (
                        namesake, sub.attr, namesake)
                offered.add(id(sub.value))
                offered.add(id(getattr(sub.value, "value", None)))  # cuda.cudadrv, there
            if id(sub) in offered:
                continue
            if isinstance(sub, ast.Name) and sub.id in self.partial:
                return "numba internals (%s)" % sub.id  # the module itself, passed on
            if isinstance(sub, ast.Attribute) and sub.attr in TYPING_ATTRS:
                return "numba's typing (.%s)" % sub.attr
            if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name):
                if sub.value.id == "cuda" and sub.attr in COMPILER_ATTRS:
                    return "numba's compiler (cuda.%s)" % sub.attr
                if sub.value.id == "cuda" and sub.attr in INTERNAL_ATTRS:
                    return "numba internals (cuda.%s)" % sub.attr
            if isinstance(sub, ast.Name) and sub.id in self.internal:
                return "%s: %s" % (self.internal[sub.id], sub.id)
        return None


def _is_cuda(node):
    return isinstance(node, ast.Name) and node.id == "cuda"


CONFTEST = '''"""Written by gpuhost's tools/numba_suite.py: the fixture numba's CUDATestCase asks for,
and the not-portable tests deselected with their reasons."""
import json
import os

import pytest

_NOT_PORTABLE = json.load(open(os.path.join(os.path.dirname(__file__), "not_portable.json")))


@pytest.fixture(scope="class")
def initialize_from_pytest_config(request):
    request.cls._dump_failed_filechecks = False


def pytest_collection_modifyitems(config, items):
    keep, drop = [], []
    for item in items:
        key = item.nodeid.split("::", 1)[-1].replace("::", ".")
        mod = os.path.basename(item.nodeid.split("::", 1)[0])
        (drop if (mod + "::" + key) in _NOT_PORTABLE else keep).append(item)
    items[:] = keep
    config.hook.pytest_deselected(items=drop)
'''


def port(out, unskip_317):
    """Write the ported modules to `out`; return the not-portable table."""
    root = tests_root()
    offered = gpuhost_names()
    partial_names = partial_module_names()
    immutable = immutable_type_names()
    not_portable = {}
    for rel in MODULES:
        src_path = os.path.join(root, rel)
        if not os.path.exists(src_path):
            print("absent in this numba-cuda: %s" % rel)
            continue
        with open(src_path) as f:
            source = f.read()
        if unskip_317:
            source = "".join(l for l in source.splitlines(keepends=True) if not SKIP_317.match(l))
        rewriter = ImportRewriter(offered, partial_names)
        ported, tree = rewriter.rewrite(source)
        name = os.path.basename(rel)
        classifier = Classifier(tree, rewriter.internal, rewriter.partial, partial_names,
                                immutable)
        for cname, tname, why in classifier.tests():
            if why:
                key = "%s::%s" % (name, tname if cname is None else cname + "." + tname)
                not_portable[key] = why
        with open(os.path.join(out, name), "w") as f:
            f.write(ported)
    with open(os.path.join(out, "not_portable.json"), "w") as f:
        json.dump(not_portable, f, indent=1, sort_keys=True)
    with open(os.path.join(out, "conftest.py"), "w") as f:
        f.write(CONFTEST)
    return not_portable


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="folder for the ported modules (default: a temporary one)")
    ap.add_argument("--unskip-317", action="store_true",
                    help="also run the tests numba-cuda skips for its issue #317")
    ap.add_argument("--list", action="store_true", help="list the not-portable tests and stop")
    ap.add_argument("pytest_args", nargs="*")
    args = ap.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="numba-suite-")
    os.makedirs(out, exist_ok=True)
    not_portable = port(out, args.unskip_317)
    report(not_portable, args.list)
    if args.list:
        return 0
    return run_ported(out, [out], args.pytest_args, not_portable)


if __name__ == "__main__":
    sys.exit(main())
