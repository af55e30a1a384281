"""Run numba-cuda's own kernel tests (numba/cuda/tests/cudapy/) against gpuhost.jit.

The installed numba-cuda's cudapy test modules, and the use-case modules beside them that
they import, are copied to a scratch folder with their import statements rewritten, and
nothing else:
  - ``from numba import cuda`` and ``import numba.cuda as cuda`` become
    ``import gpuhost as cuda`` (gpuhost has jit, and numba.cuda's kernel names: cuda.grid,
    cuda.shared, cuda.atomic, the types ...);
  - a name taken ``from numba.cuda`` that gpuhost also offers is taken from gpuhost;
  - a use-case or test module of cudapy (``from numba.cuda.tests.cudapy.X import ...``,
    ``from .X import ...``) is taken from its ported copy.
Every other import stays numba's: its test helpers (numba.cuda.testing,
numba.cuda.tests.support), its extension API (numba.cuda.extending, types, errors,
config), CPU numba.  A test that reaches ``numba.cuda.X`` by attribute (``import numba``)
is left as it is, and so uses numba's own launch.

Tests that need numba's internals are marked not portable, mechanically, from each test's
source and what it calls in its module (its class's set-up, tear-down and decorators,
helper methods, module functions and classes), each with the reason:
  - numba's driver: numba.cuda.cudadrv (driver, devices, nvvm, nvrtc, runtime, devicearray)
    and cuda.core, the binding it drives the GPU with (``cuda.cudadrv``, ``cuda.driver``);
  - numba's simulator: numba.cuda.simulator, tests that only run under it
    (``skip_unless_cudasim``);
  - numba's compiler and typing internals: numba.cuda.core (but its errors and config),
    numba.core, numba.cuda's compiler, codegen, descriptor, typing registries, ...;
  - inspection of the generated code: ``inspect_llvm``, ``inspect_asm``, ``inspect_sass``,
    ``inspect_lto_ptx``, ``inspect_types``, FileCheck, an overload's library/fndesc;
  - numba's private attributes (``f._compile_for_args``, ``overload._codelibrary`` ...),
    but those of numba's test helpers (ForeignArray's ``_arr``).
The rest runs under pytest.

    python3 tools/numba_kernel_suite.py [--out DIR] [--modules PAT,...] [--exclude PAT,...]
                                        [--shard I/N] [--list [--all]] [-- pytest args]

Needs numba-cuda installed beside gpuhost (the GPU machine has it); nothing of numba's
is kept in this repository.
"""
import argparse
import ast
import re
import fnmatch
import json
import os
import sys
import tempfile

import numba_suite
from suite_port import CallGraphClassifier, alias_text, report, run_ported

REPO = numba_suite.REPO
CUDAPY = "numba.cuda.tests.cudapy"

# Reasons (the part before ":" is what --list and the summary count by).
DRIVER = "numba's driver"
SIMULATOR = "numba's simulator"
COMPILER = "numba's compiler/typing internals"
INSPECTION = "inspection of the generated code"
PRIVATE = "numba's private attributes"

# Dotted names (a module, or a name in it) and what they are; the longest that a name
# starts with decides.  None: portable (numba's public API for kernels and for its tests).
NUMBA_NAMES = {
    "numba.cuda.cudadrv": DRIVER,
    "numba.cuda.devicearray": DRIVER,
    "numba.cuda.driver": DRIVER,
    "cuda.core": DRIVER,
    "numba.cuda.simulator": SIMULATOR,
    "numba.cuda.core": COMPILER,
    "numba.cuda.core.errors": None,
    "numba.cuda.core.config": None,
    "numba.core": COMPILER,
    "numba.core.errors": None,
    "numba.core.extending": None,
    "numba.cuda.compiler": COMPILER,
    "numba.cuda.codegen": COMPILER,
    "numba.cuda.descriptor": COMPILER,
    "numba.cuda.target": COMPILER,
    "numba.cuda.flags": COMPILER,
    "numba.cuda.cudaimpl": COMPILER,
    "numba.cuda.cudadecl": COMPILER,
    "numba.cuda.typeconv": COMPILER,
    "numba.cuda.typing.templates": COMPILER,  # (typing.signature and typeof are API)
    "numba.cuda.typing.context": COMPILER,
    "numba.core.typing.typeof": None,
    "numba.cuda.libdevicefuncs": COMPILER,
    "numba.cuda.deviceufunc": COMPILER,
    "numba.cuda.dispatcher": COMPILER,
    "numba.cuda.cext": COMPILER,
    "numba.cuda.lowering": COMPILER,
    "numba.cuda.kernels": COMPILER,  # numba's own kernels, launched by numba
}
# The import statement of code strings that tests run in a subprocess (test_print's use
# cases): an import too, rewritten as the module's own are.
CODE_IMPORT = re.compile(r"^(\s*)from numba import cuda\s*$", re.M)
# Attributes that inspect what numba generated (or hold its compiler's state).
INSPECTION_ATTRS = {"library", "fndesc", "typing_context", "target_context", "get_llvm_str",
                    "get_asm_str", "_handle_compile_result", "_type_annotation",
                    "_codelibrary"}
INSPECTION_PREFIXES = ("inspect_", "assertFileCheck")
# numba.cuda.testing's decorators for tests that run under the simulator only.
SIMULATOR_ONLY = {"skip_unless_cudasim"}
# Skip conditions (unittest's, pytest's).
SKIP_CONDITIONS = {"skipIf", "skipUnless", "skipif"}
# Classes whose subclasses pytest collects as tests, by their name.
TEST_BASES = ("TestCase",)


def tests_root():
    """numba-cuda's tests/ folder (its cudapy/ and data/)."""
    return numba_suite.tests_root()


def numba_reason(dotted):
    """What `dotted` (numba.cuda.core.ir, cuda.core.X ...) is: a reason, or None."""
    best = None
    for prefix in NUMBA_NAMES:
        if (dotted == prefix or dotted.startswith(prefix if prefix.endswith(".") else prefix + ".")
                ) and (best is None or len(prefix) > len(best)):
            best = prefix
    return NUMBA_NAMES[best] if best is not None else None


def helper_private_attrs():
    """Private attributes that numba's test helpers (numba.cuda.testing) set on their
    objects: a test's use of them is its helpers', not numba's internals."""
    import numba.cuda.testing as t

    with open(t.__file__) as f:
        tree = ast.parse(f.read())
    return {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
            and n.attr.startswith("_") and not n.attr.startswith("__")
            and isinstance(n.ctx, ast.Store)}


class Offered:
    """Whether gpuhost offers a name of numba.cuda (its own, jit, or numba.cuda's kernel
    names, which its module __getattr__ resolves from numba.cuda)."""

    def __init__(self):
        sys.path.insert(0, REPO)
        import gpuhost

        self.gpuhost = gpuhost
        self.cache = {}

    def __contains__(self, name):
        if name.startswith("_"):
            return False
        if name not in self.cache:
            try:
                self.cache[name] = hasattr(self.gpuhost, name)
            except ImportError:
                self.cache[name] = False
        return self.cache[name]


class ImportRewriter(numba_suite.ImportRewriter):
    """numba_suite's rewriting of a module's import statements, for kernel tests: gpuhost
    takes numba.cuda's place wherever it offers the name (its kernel names included); the
    names bound to numba's internals are recorded with their reason."""

    def __init__(self, offered, ported):
        super().__init__(offered)
        self.ported = ported  # names of the cudapy modules copied beside the tests
        self.gpuhost_aliases = set()  # names bound to gpuhost
        self.public = set()  # names also bound to something portable

    def rewrite(self, source):
        ported, tree = super().rewrite(source)
        # the module's own imports are rewritten by now: what is left is in code strings
        ported = CODE_IMPORT.sub(r"\1import gpuhost as cuda", ported)
        # A name bound to an internal in one branch (the simulator's vector_types) and to
        # numba's public one in the other is the public one on the GPU.
        for name in self.public:
            self.internal.pop(name, None)
        return ported, tree

    def _bind(self, alias, dotted):
        why = numba_reason(dotted)
        name = (alias.asname or alias.name).split(".")[0]
        if why:
            self.internal[name] = "%s: %s" % (why, dotted)
        else:
            self.public.add(name)

    def _gpuhost(self, alias_name):
        self.gpuhost_aliases.add(alias_name)
        return "import gpuhost as %s" % alias_name

    def _rewrite_node(self, node):
        new = self._rewrite(node)
        if new is not None:
            # As many lines as the statement had: line numbers (in debug info, line info,
            # error messages the tests check) stay the source's.
            new += "\n" * (node.end_lineno - node.lineno)
        return new

    def _rewrite(self, node):
        if isinstance(node, ast.Import):
            out, changed = [], False
            for alias in node.names:
                if alias.name == "numba.cuda" and alias.asname:
                    out.append(self._gpuhost(alias.asname))
                    changed = True
                    continue
                if alias.name.startswith("numba.") or alias.name.startswith("cuda."):
                    self._bind(alias, alias.name)
                out.append("import " + alias_text(alias))
            return "; ".join(out) if changed else None
        mod = node.module or ""
        if node.level:  # from .X import ...: the ported copy
            if node.level == 1 and mod.split(".")[0] in self.ported:
                return "from %s import %s" % (mod, ", ".join(alias_text(a) for a in node.names))
            return None
        if mod == CUDAPY:  # from numba.cuda.tests.cudapy import X (a module)
            if all(a.name in self.ported for a in node.names):
                return "; ".join("import " + alias_text(a) for a in node.names)
            return None
        if mod.startswith(CUDAPY + "."):
            if mod[len(CUDAPY) + 1:] in self.ported:
                return "from %s import %s" % (mod[len(CUDAPY) + 1:],
                                              ", ".join(alias_text(a) for a in node.names))
            return None
        if mod == "numba":
            ours, theirs = [], []
            for alias in node.names:
                if alias.name == "cuda":
                    ours.append(self._gpuhost(alias.asname or "cuda"))
                else:
                    theirs.append(alias)
                    self._bind(alias, "numba." + alias.name)
            if not ours:
                return None
            if theirs:
                ours.append("from numba import " + ", ".join(alias_text(a) for a in theirs))
            return "; ".join(ours)
        if mod == "numba.cuda":
            ours, theirs = [], []
            for alias in node.names:
                if alias.name in self.offered:
                    ours.append(alias)
                    self.public.add(alias.asname or alias.name)
                else:
                    theirs.append(alias)
                    self._bind(alias, "numba.cuda." + alias.name)
            if not ours:
                return None
            parts = ["from gpuhost import " + ", ".join(alias_text(a) for a in ours)]
            if theirs:
                parts.append("from numba.cuda import " + ", ".join(alias_text(a) for a in theirs))
            return "; ".join(parts)
        if mod.startswith("numba.") or mod.startswith("cuda."):
            for alias in node.names:
                self._bind(alias, mod + "." + alias.name)
        return None


class Classifier(CallGraphClassifier):
    """Decides, per test, whether it needs numba's internals."""

    def __init__(self, tree, rewriter, offered, helper_private):
        super().__init__(tree)
        self.internal = rewriter.internal
        self.gpuhost_aliases = rewriter.gpuhost_aliases
        self.offered = offered
        self.helper_private = helper_private
        # Private attributes the module sets itself (on its own objects).
        self.own_private = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                            and isinstance(n.ctx, ast.Store)}
        self.own_private |= {n.name for n in ast.walk(tree)
                             if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}

    def _direct(self, node):
        for sub in _walk(node):
            patched = _patched_c_type(sub, self.gpuhost_aliases)
            if patched:
                return "%s: patches %s, a gpuhost C type (immutable)" % (DRIVER, patched)
            if isinstance(sub, ast.Name):
                if sub.id in self.internal:
                    return "%s (%s)" % (self.internal[sub.id], sub.id)
                if sub.id in SIMULATOR_ONLY:
                    return "%s: runs under it only (%s)" % (SIMULATOR, sub.id)
            if not isinstance(sub, ast.Attribute):
                continue
            attr = sub.attr
            if attr in INSPECTION_ATTRS or attr.startswith(INSPECTION_PREFIXES):
                return "%s: .%s" % (INSPECTION, attr)
            if numba_suite.RAW_BINDING.match(attr):
                return "%s: numba's raw binding (.%s)" % (DRIVER, attr)
            chain = _dotted(sub)
            if chain and chain.split(".")[0] in self.gpuhost_aliases:
                first = chain.split(".")[1]
                if first not in self.offered:
                    why = numba_reason("numba.cuda." + first) or COMPILER
                    return "%s: cuda.%s" % (why, first)
                missing = _gpuhost_lacks(chain.split(".")[1:])
                if missing:
                    return "%s: cuda.%s, which gpuhost lacks" % (
                        numba_reason("numba.cuda." + first) or DRIVER, missing)
            if chain and chain.startswith("numba.cuda."):
                why = numba_reason(chain)
                if why:
                    return "%s: %s" % (why, chain)
            if (attr.startswith("_") and not attr.startswith("__")
                    and not (isinstance(sub.value, ast.Name) and sub.value.id in ("self", "cls"))
                    and attr not in self.helper_private and attr not in self.own_private):
                return "%s: .%s" % (PRIVATE, attr)
        return None

    def _is_test_class(self, cls):
        if cls.name.startswith("Test"):
            return True
        for c in self._mro(cls):
            for b in c.bases:
                name = b.id if isinstance(b, ast.Name) else getattr(b, "attr", "")
                if name.endswith(TEST_BASES):
                    return True
        return False

    def tests(self):
        for name, fn in self.functions.items():
            if name.startswith("test"):
                yield None, name, self.reason(fn, None)
        for cname, cls in self.classes.items():
            if self._is_test_class(cls):
                for m in self._methods(cls):
                    if m.name.startswith("test"):
                        yield cname, m.name, self.reason(m, cls)


def _gpuhost_lacks(path):
    """The dotted path under gpuhost (``cudadrv.driver.Stream``) up to its first name that
    gpuhost's module of that name lacks, where that is a module of gpuhost's; None if
    every step resolves, or leaves gpuhost's modules (a method of a gpuhost object)."""
    import types

    import gpuhost

    obj = gpuhost
    for i, name in enumerate(path):
        if not isinstance(obj, types.ModuleType):
            return None
        try:
            obj = getattr(obj, name)
        except (AttributeError, ImportError):
            return ".".join(path[:i + 1])
    return None


def _patched_c_type(node, gpuhost_aliases):
    """``X.Y`` when `node` is ``patch.object(cuda.X.Y, ...)`` and gpuhost's X.Y is one of its
    C types (immutable: numba's Python class is patchable, these are not); else None."""
    import types

    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "object" and node.args):
        return None
    chain = _dotted(node.args[0])
    if not chain or chain.split(".")[0] not in gpuhost_aliases:
        return None
    import gpuhost

    obj = gpuhost
    for name in chain.split(".")[1:]:
        if not isinstance(obj, (types.ModuleType, type)):
            return None
        obj = getattr(obj, name, None)
    if isinstance(obj, type) and obj.__flags__ & (1 << 8):  # Py_TPFLAGS_IMMUTABLETYPE
        return ".".join(chain.split(".")[1:])
    return None


def _walk(node):
    """ast.walk, but not into a skip condition (``unittest.skipIf(...)``): what decides
    whether a test runs is not what it runs."""
    todo = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Call) and (_dotted(n.func) or "").split(".")[-1] in SKIP_CONDITIONS:
            continue
        yield n
        todo.extend(ast.iter_child_nodes(n))


def _dotted(node):
    """`a.b.c` for an attribute chain of names, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id] + parts[::-1])


CONFTEST = '''# Written by gpuhost's tools/numba_kernel_suite.py.
# numba-cuda 0.30 registers np.row_stack at import, which NumPy 2.5 removed; its test
# helpers may import numba.cuda before gpuhost.jit (which aliases it) does.
import numpy as _np

if not hasattr(_np, "row_stack"):
    _np.row_stack = _np.vstack
''' + numba_suite.CONFTEST


def port(out, include=(), exclude=(), shard=None):
    """Write the ported modules to `out`/cudapy; return (the not-portable table, the
    modules chosen to run, {module: portable test count}, the portable tests that reach
    numba.cuda by attribute)."""
    root = tests_root()
    src_dir = os.path.join(root, "cudapy")
    dest = os.path.join(out, "cudapy")
    os.makedirs(dest, exist_ok=True)
    # A test finds numba's data files beside its folder (tests/data).
    data = os.path.join(out, "data")
    if not os.path.lexists(data):
        os.symlink(os.path.join(root, "data"), data)
    names = sorted(n for n in os.listdir(src_dir) if n.endswith(".py") and n != "__init__.py")
    ported_names = {n[:-3] for n in names}
    tests = [n for n in names if n.startswith("test_")]
    chosen = _choose(tests, include, exclude, shard, src_dir)
    offered = Offered()
    helper_private = helper_private_attrs()
    not_portable, by_attribute, portable = {}, {}, {}
    for name in names:
        with open(os.path.join(src_dir, name)) as f:
            source = f.read()
        rewriter = ImportRewriter(offered, ported_names)
        ported, tree = rewriter.rewrite(source)
        with open(os.path.join(dest, name), "w") as f:
            f.write(ported)
        if name not in chosen:
            continue
        classifier = Classifier(tree, rewriter, offered, helper_private)
        portable[name] = 0
        for cname, tname, why in classifier.tests():
            key = "%s::%s" % (name, tname if cname is None else cname + "." + tname)
            if why:
                not_portable[key] = why
                continue
            portable[name] += 1
            if _reaches_numba_cuda(classifier, tname, cname):
                by_attribute[key] = True
    # Other files beside the tests (jitlink.ptx ...).
    for name in os.listdir(src_dir):
        if not name.endswith((".py", ".pyc")) and name != "__pycache__":
            path = os.path.join(dest, name)
            if not os.path.lexists(path):
                os.symlink(os.path.join(src_dir, name), path)
    with open(os.path.join(dest, "not_portable.json"), "w") as f:
        json.dump(not_portable, f, indent=1, sort_keys=True)
    with open(os.path.join(dest, "conftest.py"), "w") as f:
        f.write(CONFTEST)
    return not_portable, chosen, portable, sorted(by_attribute)


def _reaches_numba_cuda(classifier, tname, cname):
    cls = classifier.classes.get(cname) if cname else None
    test = ([m for m in classifier._methods(cls) if m.name == tname][0] if cls
            else classifier.functions[tname])
    return any(isinstance(n, ast.Attribute) and (_dotted(n) or "").startswith("numba.cuda.")
               for n in ast.walk(test))


def _choose(tests, include, exclude, shard, src_dir):
    def match(m, pats):
        return any(fnmatch.fnmatch(m, p) or fnmatch.fnmatch(m, p + ".py") for p in pats)

    chosen = [m for m in tests if (not include or match(m, include)) and not match(m, exclude)]
    if shard:
        i, n = (int(x) for x in shard.split("/"))
        if not 1 <= i <= n:
            raise SystemExit("--shard I/N needs 1 <= I <= N")
        bins = [[0, []] for _ in range(n)]
        sizes = {m: os.path.getsize(os.path.join(src_dir, m)) for m in chosen}
        for m in sorted(chosen, key=lambda m: (-sizes[m], m)):
            b = min(bins, key=lambda b: b[0])
            b[0] += sizes[m]
            b[1].append(m)
        chosen = sorted(bins[i - 1][1])
    return chosen


def list_modules(chosen, portable, not_portable):
    """Per module: its portable and not-portable test counts (tests as written: a unittest
    class's inherited tests counted in each class), and the reasons."""
    print("%-40s %8s %12s  %s" % ("module", "portable", "not portable", "reasons"))
    for mod in chosen:
        reasons = {}
        for key, why in not_portable.items():
            if key.split("::")[0] == mod:
                reasons[why.split(":")[0]] = reasons.get(why.split(":")[0], 0) + 1
        print("%-40s %8d %12d  %s" % (mod, portable[mod], sum(reasons.values()),
                                      ", ".join("%s %d" % r for r in sorted(reasons.items()))))
    print("%-40s %8d %12d\n" % ("total (%d modules)" % len(chosen), sum(portable.values()),
                                len(not_portable)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="scratch folder (default: a temporary one); the ported "
                    "modules go to its cudapy/")
    ap.add_argument("--modules", default="", help="comma-separated fnmatch patterns of the "
                    "test modules to run (test_atomics, 'test_array*' ...); default: all")
    ap.add_argument("--exclude", default="", help="comma-separated patterns of modules not to run")
    ap.add_argument("--shard", help="I/N: run the I-th of N parts of the chosen modules")
    ap.add_argument("--list", action="store_true",
                    help="print the per-module counts and the not-portable reasons, and stop")
    ap.add_argument("--all", action="store_true", help="with --list: every not-portable test")
    ap.add_argument("pytest_args", nargs="*")
    args = ap.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="numba-kernel-suite-")
    include = [p for p in args.modules.split(",") if p]
    exclude = [p for p in args.exclude.split(",") if p]
    not_portable, chosen, portable, by_attribute = port(out, include, exclude, args.shard)
    if args.list:
        list_modules(chosen, portable, not_portable)
    report(not_portable, args.list and args.all)
    if by_attribute:
        print("portable, but reaching numba.cuda by attribute (numba's own launch): %d tests"
              % len(by_attribute))
        for key in by_attribute:
            print("  " + key)
    if args.list:
        return 0
    dest = os.path.join(out, "cudapy")
    return run_ported(dest, chosen, args.pytest_args, not_portable)



if __name__ == "__main__":
    sys.exit(main())
