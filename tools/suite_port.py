"""What tools/numba_suite.py and tools/cupy_suite.py share: the mechanical decision, per
test, of whether a peer's test can run on gpuhost (a walk of what the test calls in its
module), and the per-module counts from pytest's JUnit report."""
import ast
import os

# Methods of a test class that run around every test.
SETUP_NAMES = ("setUp", "tearDown", "setUpClass", "tearDownClass", "setup_method",
               "teardown_method", "setup_class", "teardown_class")


class CallGraphClassifier:
    """Decides, per test, whether it is portable: a test is not if `_direct` (a subclass's)
    finds a reason in the test, in its class's set-up/tear-down and decorators, or in
    anything of its module they call (helper methods, module functions and classes)."""

    def __init__(self, tree):
        self.functions = {}  # module-level function name -> node (also under if/try)
        self.classes = {}
        todo = list(tree.body)
        while todo:
            node = todo.pop(0)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                todo.extend(ast.iter_child_nodes(node))
        self.module_level = [n for n in tree.body
                             if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                   ast.ClassDef, ast.Import, ast.ImportFrom))]

    def _calls(self, node, cls):
        """Module functions, classes and methods of `cls` that `node` refers to."""
        out = []
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id in self.functions:
                out.append(self.functions[sub.id])
            elif isinstance(sub, ast.Name) and sub.id in self.classes:
                out.append(self.classes[sub.id])
            elif (isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name)
                  and sub.value.id in ("self", "cls") and cls is not None):
                for m in self._methods(cls):
                    if m.name == sub.attr:
                        out.append(m)
        return out

    def _methods(self, cls):
        seen, out = set(), []
        for c in self._mro(cls):
            for n in c.body:
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name not in seen:
                    seen.add(n.name)
                    out.append(n)
        return out

    def _mro(self, cls):
        out = [cls]
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in self.classes:
                out.extend(self._mro(self.classes[base.id]))
        return out

    def reason(self, test, cls):
        """Why `test` (a method of `cls`, or a module function) is not portable, or None."""
        roots = [test]
        if cls is not None:
            roots += [m for m in self._methods(cls) if m.name in SETUP_NAMES]
            roots += [d for c in self._mro(cls) for d in c.decorator_list]
        seen, todo = set(), list(roots)
        while todo:
            node = todo.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            why = self._direct(node)
            if why:
                return why
            todo.extend(self._calls(node, cls))
        return None

    def _direct(self, node):
        """The first reason found in `node` itself (not what it calls), or None."""
        raise NotImplementedError

    def tests(self):
        """(class name or None, test name, reason or None) for every test in the module."""
        for name, fn in self.functions.items():
            if name.startswith("test"):
                yield None, name, self.reason(fn, None)
        for cname, cls in self.classes.items():
            if not cname.startswith("Test") and not any(
                    isinstance(b, ast.Name) and "TestCase" in b.id for b in cls.bases):
                continue
            for m in self._methods(cls):
                if m.name.startswith("test"):
                    yield cname, m.name, self.reason(m, cls)



def alias_text(alias):
    """`name` or `name as asname` for an import alias."""
    return alias.name + (" as " + alias.asname if alias.asname else "")


def report(not_portable, list_all):
    """Print the not-portable tests' count by reason (and, with `list_all`, each one)."""
    by_reason = {}
    for key, why in sorted(not_portable.items()):
        by_reason.setdefault(why.split(":")[0], []).append(key)
    print("not portable: %d tests" % len(not_portable))
    for why, keys in sorted(by_reason.items()):
        print("  %-60s %d" % (why, len(keys)))
    if list_all:
        for key, why in sorted(not_portable.items()):
            print("%s  -- %s" % (key, why))


def summarize(junit, not_portable):
    """Print per-module counts: passed, failed, skipped (by the peer's own conditions), not
    portable (`not_portable`: "module.py::Test.name" keys, one per not-portable test)."""
    import xml.etree.ElementTree as ET

    if not os.path.exists(junit):
        return
    counts = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        mod = case.get("classname", "").split(".")[0] + ".py"
        c = counts.setdefault(mod, {"passed": 0, "failed": 0, "skipped": 0})
        if case.find("failure") is not None or case.find("error") is not None:
            c["failed"] += 1
        elif case.find("skipped") is not None:
            c["skipped"] += 1
        else:
            c["passed"] += 1
    for key in not_portable:
        mod = key.split("::")[0]
        counts.setdefault(mod, {"passed": 0, "failed": 0, "skipped": 0})
        counts[mod]["not portable"] = counts[mod].get("not portable", 0) + 1
    print("\n%-36s %7s %7s %8s %13s" % ("module", "passed", "failed", "skipped", "not portable"))
    for mod in sorted(counts):
        c = counts[mod]
        print("%-36s %7d %7d %8d %13d" % (mod, c["passed"], c["failed"], c["skipped"],
                                          c.get("not portable", 0)))


def run_ported(folder, targets, pytest_args, not_portable, path_first=()):
    """pytest over the ported tests in `folder` (the checkout's gpuhost first on the path,
    then `path_first`), its junit report summarized per module; pytest's exit status."""
    import subprocess
    import sys

    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [repo, *path_first] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                               if p]))
    junit = os.path.join(folder, "junit.xml")
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
           "--rootdir", folder, "-c", os.devnull, "-rfE", "--continue-on-collection-errors",
           "-W", "ignore::DeprecationWarning", "--junitxml", junit] + list(targets) + list(
               pytest_args)
    print("+ " + " ".join(cmd), flush=True)
    rc = subprocess.call(cmd, cwd=folder, env=env)
    summarize(junit, not_portable)
    return rc
