"""Run CuPy's own tests of cupy.cuda's host API against gpuhost.compat.cupy.

CuPy's test modules (tests/cupy_tests/cuda_tests/: test_device, test_stream, test_memory,
test_pinned_memory, test_nvtx, test_profile, test_nccl) are read from a CuPy source tree and copied
to a scratch folder with their imports rewritten, and nothing else:
  - ``from cupy import cuda`` becomes ``from gpuhost.compat import cupy as cuda``;
  - ``from cupy.cuda import X`` takes X from gpuhost.compat.cupy when it offers it;
  - ``import cupy`` / ``import cupy.cuda`` bind ``cupy`` to a module written beside the
    tests whose ``cuda`` is gpuhost.compat.cupy (and whose top-level names that
    gpuhost.compat.cupy also offers, such as get_default_memory_pool, are its); every
    other name is CuPy's own;
  - a ``mock.patch("cupy.cuda.<module>.<name>")`` target, an import by name, names the
    same object in gpuhost.compat.cupy.
CuPy's test helpers (cupy.testing's decorators, parameterize, assert_warns) stay CuPy's.

Tests that need what gpuhost deliberately does not have are marked not portable,
mechanically, from each test's source and what it calls in its module (its class's set-up,
tear-down and decorators, helper methods, module functions and classes), with the reason:
  - CuPy's ndarray: any top-level cupy name gpuhost.compat.cupy does not offer
    (cupy.arange, cupy.ndarray ...), cupy.testing's array helpers (shaped_random ...),
    names imported from CuPy's other modules (cupy._creation ...);
  - CuPy internals: a private name (``memory._Chunk``, ``pool._arena``) that
    gpuhost.compat.cupy does not offer.
The rest runs under pytest; every one is expected to pass or is listed in README.md.
``multi_gpu(n)`` tests are skipped past the machine's device count (CUPY_TEST_GPU_LIMIT).

    python3 tools/cupy_suite.py --cupy-source DIR [--out DIR] [--list] [-- pytest args]

DIR is a CuPy source tree (its tests/ are not installed with CuPy), e.g. the tag of the
installed version exported into the ignored folder .cupy-src/ (tools/cupy_suite.sh says
how). CuPy itself must be installed for its test helpers; nothing of CuPy's is kept in
this repository.
"""
import argparse
import ast
import json
import os
import re
import subprocess
import sys
import tempfile

from suite_port import CallGraphClassifier, alias_text, report, summarize

MODULES = ["test_device.py", "test_stream.py", "test_memory.py", "test_pinned_memory.py",
           "test_nvtx.py", "test_profile.py", "test_nccl.py"]
TESTS_DIR = os.path.join("tests", "cupy_tests", "cuda_tests")
# cupy.testing's helpers that are test infrastructure (markers, parameterization, warning
# checks); its other names make or compare CuPy arrays.
TESTING_HELPERS = {"multi_gpu", "slow", "parameterize", "product", "product_dict",
                   "assert_warns", "with_requires", "installed"}
# Private attributes of CuPy's objects that gpuhost.compat.cupy keeps, as CuPy's tests use
# them (instance attributes, which cannot be looked up on the modules).
PRIVATE_OFFERED = {"_foreign_stream_ref"}
PORT_MODULE = "_cupy_port"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)


def compat():
    """gpuhost.compat.cupy and its submodules, by the name CuPy's tests use for each."""
    import gpuhost.compat.cupy as c
    import gpuhost.compat.cupy.nccl  # noqa: F401  (a submodule imported on demand, as CuPy's)

    mods = {"cuda": c}
    for name in ("device", "driver", "memory", "nvtx", "nccl", "pinned_memory", "profiler",
                 "runtime", "stream"):
        mods[name] = getattr(c, name)
    return mods


class ImportRewriter:
    """Rewrites one module's imports; records the names bound to what stays CuPy's."""

    def __init__(self, mods):
        self.mods = mods
        self.aliases = {}  # name bound in the module -> gpuhost.compat.cupy module it means
        self.internal = {}  # name bound in the module -> why a test using it is not portable
        self.testing = set()  # names bound to cupy.testing

    def rewrite(self, source):
        tree = ast.parse(source)
        lines = source.splitlines(keepends=True)
        edits = []
        for node in ast.walk(tree):
            new = None
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                new = self._rewrite_node(node)
            if new is not None:
                indent = re.match(r"\s*", lines[node.lineno - 1]).group(0)
                edits.append((node.lineno, node.end_lineno, indent + new + "\n"))
        for first, last, text in sorted(edits, reverse=True):
            lines[first - 1:last] = [text]
        text = "".join(lines)
        # mock.patch("cupy.cuda.profiler.start"): the import by name, to the same object
        text = re.sub(r"""(patch(?:\.object)?\(\s*)(['"])cupy\.cuda\.""",
                      r"\1\2gpuhost.compat.cupy.", text)
        return text, tree

    def _rewrite_node(self, node):
        if isinstance(node, ast.Import):
            out, changed = [], False
            for alias in node.names:
                if alias.name in ("cupy", "cupy.cuda") and alias.asname is None:
                    out.append("import %s as cupy" % PORT_MODULE)
                    self.aliases["cupy"] = "cupy"
                    changed = True
                elif alias.name.split(".")[0] == "cupy":
                    self.internal[(alias.asname or alias.name).split(".")[0]] = \
                        "CuPy's ndarray (import %s)" % alias.name
                    out.append("import " + alias_text(alias))
                else:
                    out.append("import " + alias_text(alias))
            return "; ".join(out) if changed else None
        mod = node.module or ""
        if mod == "cupy":
            ours, theirs = [], []
            for alias in node.names:
                bound = alias.asname or alias.name
                if alias.name == "cuda":
                    ours.append("from gpuhost.compat import cupy as %s" % bound)
                    self.aliases[bound] = "cuda"
                else:
                    theirs.append(alias)
                    if alias.name == "testing":
                        self.testing.add(bound)
                    else:
                        self.internal[bound] = "CuPy's ndarray (cupy.%s)" % alias.name
            if not ours:
                return None
            if theirs:
                ours.append("from cupy import " + ", ".join(alias_text(a) for a in theirs))
            return "; ".join(ours)
        if mod == "cupy.cuda":
            ours, theirs = [], []
            for alias in node.names:
                bound = alias.asname or alias.name
                if alias.name in self.mods or hasattr(self.mods["cuda"], alias.name):
                    ours.append(alias)
                    if alias.name in self.mods:
                        self.aliases[bound] = alias.name
                else:
                    theirs.append(alias)
                    self.internal[bound] = "not in gpuhost.compat.cupy (cupy.cuda.%s)" % alias.name
            parts = []
            if ours:
                parts.append("from gpuhost.compat.cupy import " +
                             ", ".join(alias_text(a) for a in ours))
            if theirs:
                parts.append("from cupy.cuda import " + ", ".join(alias_text(a) for a in theirs))
            return "; ".join(parts)
        if mod.startswith("cupy"):
            for alias in node.names:
                self.internal[alias.asname or alias.name] = \
                    "CuPy's ndarray (%s.%s)" % (mod, alias.name)
        return None


def _chain(node):
    """['cupy', 'cuda', 'memory', '_Chunk'] for cupy.cuda.memory._Chunk, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id] + parts[::-1]
    return None


class Classifier(CallGraphClassifier):
    """Decides, per test, whether it needs CuPy's ndarray or CuPy internals."""

    def __init__(self, tree, rewriter, mods):
        super().__init__(tree)
        self.rw, self.mods = rewriter, mods

    def _resolve(self, chain):
        """The reason a name chain rooted at a cupy alias is not portable, or None."""
        root = self.rw.aliases[chain[0]]
        rest = chain[1:]
        if root == "cupy":
            if not rest:
                return None
            if rest[0] != "cuda":
                if hasattr(self.mods["cuda"], rest[0]):
                    return None  # a top-level name gpuhost.compat.cupy offers
                return "CuPy's ndarray (cupy.%s)" % rest[0]
            rest = rest[1:]
            obj = self.mods["cuda"]
        else:
            obj = self.mods[root]
        shown = ".".join(chain)
        for name in rest:
            if not hasattr(obj, name):
                if name.startswith("_") and not name.startswith("__"):
                    return "CuPy internals (%s)" % shown
                return None  # a public name gpuhost lacks: the test runs, and fails
            obj = getattr(obj, name)
        return None

    def _direct(self, node):
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id in self.rw.internal:
                return "%s: %s" % (self.rw.internal[sub.id], sub.id)
            if not isinstance(sub, ast.Attribute):
                continue
            chain = _chain(sub)
            if chain and chain[0] in self.rw.testing and len(chain) > 1 and \
                    chain[1] not in TESTING_HELPERS:
                return "CuPy's ndarray (testing.%s)" % chain[1]
            if chain and chain[0] in self.rw.aliases:
                why = self._resolve(chain)
                if why:
                    return why
            attr = sub.attr
            if (attr.startswith("_") and not attr.startswith("__") and
                    attr not in PRIVATE_OFFERED and
                    not (isinstance(sub.value, ast.Name) and sub.value.id in ("self", "cls"))
                    and not (chain and chain[0] in self.rw.aliases)):
                return "CuPy internals (.%s)" % attr
        return None


PORT = '''"""Written by gpuhost's tools/cupy_suite.py: what ``import cupy`` gives a ported test.
``cupy.cuda`` is gpuhost.compat.cupy, and so are CuPy's top-level names it also offers;
every other name is CuPy's own (its test helpers, and the tests marked not portable)."""
import cupy as _cupy
from gpuhost.compat import cupy as cuda


def __getattr__(name):
    if hasattr(cuda, name) and not name.startswith("_"):
        return getattr(cuda, name)
    return getattr(_cupy, name)
'''

CONFTEST = '''"""Written by gpuhost's tools/cupy_suite.py: CuPy's markers, and the not-portable tests
deselected with their reasons (recorded in not_portable_items.json)."""
import json
import os

HERE = os.path.dirname(__file__)
_NOT_PORTABLE = json.load(open(os.path.join(HERE, "not_portable.json")))


def pytest_configure(config):
    for mark in ("multi_gpu", "slow", "thread_unsafe"):
        config.addinivalue_line("markers", mark + ": CuPy's marker")


def _key(item):
    mod = os.path.basename(item.nodeid.split("::", 1)[0])
    name = getattr(item, "originalname", None) or item.name
    cls = getattr(item, "cls", None)
    if cls is None:
        return "%s::%s" % (mod, name)
    return "%s::%s.%s" % (mod, cls.__name__.split("_param_")[0], name)


def pytest_collection_modifyitems(config, items):
    keep, drop, record = [], [], {}
    for item in items:
        why = _NOT_PORTABLE.get(_key(item))
        if why is None:
            keep.append(item)
        else:
            drop.append(item)
            record[item.nodeid] = why
    items[:] = keep
    config.hook.pytest_deselected(items=drop)
    with open(os.path.join(HERE, "not_portable_items.json"), "w") as f:
        json.dump(record, f, indent=1, sort_keys=True)
'''


def port(source, out):
    """Write the ported modules to `out`; return the not-portable table."""
    mods = compat()
    not_portable = {}
    for name in MODULES:
        path = os.path.join(source, TESTS_DIR, name)
        if not os.path.exists(path):
            print("absent in this CuPy source: %s" % name)
            continue
        with open(path) as f:
            text = f.read()
        rw = ImportRewriter(mods)
        ported, tree = rw.rewrite(text)
        for cname, tname, why in Classifier(tree, rw, mods).tests():
            if why:
                key = "%s::%s" % (name, tname if cname is None else cname + "." + tname)
                not_portable[key] = why
        with open(os.path.join(out, name), "w") as f:
            f.write(ported)
    for name, text in (("not_portable.json", json.dumps(not_portable, indent=1,
                                                         sort_keys=True)),
                       ("conftest.py", CONFTEST), (PORT_MODULE + ".py", PORT)):
        with open(os.path.join(out, name), "w") as f:
            f.write(text)
    return not_portable


def device_count():
    import gpuhost

    try:
        return gpuhost._core.device_count()
    except Exception:
        return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cupy-source", required=True,
                    help="a CuPy source tree (with tests/cupy_tests/cuda_tests)")
    ap.add_argument("--out", help="folder for the ported modules (default: a temporary one)")
    ap.add_argument("--list", action="store_true", help="list the not-portable tests and stop")
    ap.add_argument("pytest_args", nargs="*")
    args = ap.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="cupy-suite-")
    os.makedirs(out, exist_ok=True)
    not_portable = port(os.path.abspath(args.cupy_source), out)
    report(not_portable, args.list)
    if args.list:
        return 0
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [REPO, out] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    env.setdefault("CUPY_TEST_GPU_LIMIT", str(device_count()))
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
           "--rootdir", out, "-c", os.devnull, "-rfE", "--continue-on-collection-errors",
           "--junitxml", os.path.join(out, "junit.xml"), out] + args.pytest_args
    print("+ " + " ".join(cmd), flush=True)
    rc = subprocess.call(cmd, cwd=out, env=env)
    items = os.path.join(out, "not_portable_items.json")
    dropped = json.load(open(items)) if os.path.exists(items) else {}
    summarize(os.path.join(out, "junit.xml"),
              [os.path.basename(k.split("::")[0]) + "::" for k in dropped])
    return rc


if __name__ == "__main__":
    sys.exit(main())
