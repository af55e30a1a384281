"""gpuhost's modules stand on floors, and import each other without circles longer than two.

The floors (docs/development/architecture.md, "The code, file by file", and decision 13):
gpuhost's own layer below (devices, memory, arrays, streams, kernels, jit, graphs, NCCL,
the pytest plugin); above it the faces that give other libraries' names, each a folder of
gpuhost/compat/ with the public paths that re-export it (gpuhost.memory is CuPy's,
gpuhost.memory_manager numba's, gpuhost.tools pycuda's ...); on top the package itself,
which may import every floor to re-export names.  No module of the own layer imports a
face; a face imports the own layer or the package's public names, never another face; no
module is longer than 1,000 lines.

The import graph is read from the sources with `ast`: every import statement is an edge,
at module level and inside functions alike (`import gpuhost.x`, `from . import x`, `from .x
import y`, relative or absolute). `from P import n` is an edge to the module P.n where n is
a submodule, else to P; a module's own package is not an edge of its own (Python imports it
before any submodule, so counting it would make every module a circle with its package).
The nodes are gpuhost's modules, its C extension `_core` included.

A pair of modules importing each other (the package and a submodule, say) is allowed: one
of them reads the other's names only once both are loaded. A circle through three or more
modules is not: no module on it can be understood, or loaded, without all the others.
`longer_cycles` is written for any directed graph ({node: set of nodes}), not only this
one.
"""
import ast
import importlib.machinery
import os

import gpuhost

PACKAGE_DIR = os.path.dirname(os.path.abspath(gpuhost.__file__))


def strongly_connected_components(graph):
    """The strongly connected components of `graph` ({node: iterable of nodes}), as lists
    (Tarjan's algorithm, iterative: no recursion limit)."""
    index, low, on_stack, stack, components = {}, {}, set(), [], []
    counter = 0
    nodes = set(graph) | {w for targets in graph.values() for w in targets}
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, successors = work[-1]
            w = next(successors, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                components.append(sorted(component))
    return components


def _shortest_path(graph, start, goal, allowed):
    """The shortest path start -> goal (a list of nodes) through `allowed` nodes, or None."""
    previous, frontier = {start: None}, [start]
    while frontier:
        following = []
        for v in frontier:
            for w in sorted(graph.get(v, ())):
                if w in allowed and w not in previous:
                    previous[w] = v
                    if w == goal:
                        path = [w]
                        while previous[path[-1]] is not None:
                            path.append(previous[path[-1]])
                        return path[::-1]
                    following.append(w)
        frontier = following
    return None


def longer_cycles(graph):
    """One elementary cycle longer than two, [a, b, ..., a], for each strongly connected
    component of `graph` ({node: iterable of nodes}) that has one; [] if none has.

    A component of two nodes holds only the cycle a -> b -> a. A larger one holds no longer
    cycle only if every edge in it goes both ways and its undirected graph is a tree: a
    one-way edge a -> b closes a cycle of three or more with the path back from b to a; an
    undirected circle is a directed one in both directions."""
    cycles = []
    for component in strongly_connected_components(graph):
        if len(component) <= 2:
            continue
        members = set(component)
        edges = {(v, w) for v in component for w in graph.get(v, ()) if w in members and w != v}
        one_way = sorted((v, w) for v, w in edges if (w, v) not in edges)
        if one_way:
            v, w = one_way[0]
            cycles.append([v] + _shortest_path(graph, w, v, members))
            continue
        # every edge two-way: a tree has n - 1 undirected edges; else find an undirected circle
        if len(edges) // 2 == len(component) - 1:
            continue
        parent, order = {component[0]: None}, [component[0]]
        for v in order:
            for w in sorted(graph.get(v, ())):
                if w not in members or w == parent[v]:
                    continue
                if w in parent:  # a second way to w: the circle through their common root
                    up_v, up_w = [v], [w]
                    while up_v[-1] is not None:
                        up_v.append(parent[up_v[-1]])
                    while up_w[-1] is not None:
                        up_w.append(parent[up_w[-1]])
                    common = next(n for n in up_v if n in up_w)
                    left = up_v[:up_v.index(common) + 1]
                    right = up_w[:up_w.index(common)]
                    cycles.append(left[::-1] + right + [common])
                    break
                parent[w] = v
                order.append(w)
            else:
                continue
            break
    return cycles


def module_names(package_dir=PACKAGE_DIR, package="gpuhost"):
    """{module name: path of its Python source, or None for an extension module}."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES) + (".pyi",)
    root = os.path.dirname(package_dir)
    names = {}
    for folder, dirs, files in os.walk(package_dir):
        dirs[:] = [d for d in dirs if d.isidentifier()]
        for f in files:
            path = os.path.join(folder, f)
            dotted = os.path.relpath(folder, root).replace(os.sep, ".")
            if f.endswith(".py"):
                stem = f[:-3]
                names[dotted if stem == "__init__" else dotted + "." + stem] = path
            elif f.endswith(suffixes):
                names.setdefault(dotted + "." + f.split(".")[0], None)
    return names


def import_graph(package_dir=PACKAGE_DIR, package="gpuhost"):
    """{module: {modules of the package it imports}} (see the module's docstring)."""
    modules = module_names(package_dir, package)
    graph = {name: set() for name in modules}
    for name, path in modules.items():
        if path is None:
            continue
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        is_package = os.path.basename(path) == "__init__.py"
        here = name if is_package else name.rpartition(".")[0]
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here.split(".")[:len(here.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module
                for alias in node.names:
                    sub = source + "." + alias.name
                    targets.append(sub if sub in modules else source)
            for target in targets:
                while target not in modules and "." in target:
                    target = target.rpartition(".")[0]  # import a.b.c where c is no module
                if target in modules and target != name:
                    graph[name].add(target)
    return graph


def test_the_graph_sees_every_kind_of_import():
    graph = import_graph()
    assert "gpuhost._core" in graph  # the extension module is a node
    assert "gpuhost._core" in graph["gpuhost"]  # from . import _core
    assert "gpuhost.errors" in graph["gpuhost.devices"]  # from .errors import ...
    assert "gpuhost" in graph["gpuhost.pytest_plugin"]  # import gpuhost, inside functions
    assert "gpuhost.compat.cupy.device" in graph["gpuhost.compat.cupy"]  # from . import device
    assert "gpuhost" not in graph["gpuhost.devices"]  # from . import _core: not the package


def test_longer_cycles_finds_what_it_should():
    assert longer_cycles({"a": {"b"}, "b": {"a"}}) == []
    # a star of two-way edges (the package and its submodules) is no longer cycle
    assert longer_cycles({"p": {"a", "b", "c"}, "a": {"p"}, "b": {"p"}, "c": {"p"}}) == []
    # a one-way edge inside: a -> b -> p -> a
    assert longer_cycles({"p": {"a", "b"}, "a": {"p", "b"}, "b": {"p"}}) == [["a", "b", "p", "a"]]
    # two-way edges around a triangle
    cycles = longer_cycles({"a": {"b", "c"}, "b": {"a", "c"}, "c": {"a", "b"}})
    assert len(cycles) == 1 and len(cycles[0]) == 4 and cycles[0][0] == cycles[0][-1]
    assert set(cycles[0]) == {"a", "b", "c"}
    assert longer_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]


# The faces: their folders of compat/ and the public paths that re-export them.
FACES = {
    "cupy": ("gpuhost.compat.cupy", "gpuhost.memory"),
    "numba": ("gpuhost.compat.numba", "gpuhost.memory_manager", "gpuhost.cudadrv",
              "gpuhost.descriptor"),
    "pycuda": ("gpuhost.compat.pycuda", "gpuhost.tools", "gpuhost.autoinit",
               "gpuhost.autoprimaryctx"),
}
# The top floor: the package (which re-exports names of every floor) and `python -m gpuhost`.
TOP = ("gpuhost", "gpuhost.__main__")
LONGEST_FILE = 1000  # lines


def floor(module):
    """"top", a face's name, "compat" (the folder's own package, which imports nothing) or
    "own"."""
    if module in TOP:
        return "top"
    for face, roots in FACES.items():
        if any(module == root or module.startswith(root + ".") for root in roots):
            return face
    if module == "gpuhost.compat":
        return "compat"
    return "own"


def floor_violations(graph):
    """(module, imported, why) for every edge of `graph` the floors do not allow."""
    out = []
    for module, targets in sorted(graph.items()):
        here = floor(module)
        for target in sorted(targets):
            there = floor(target)
            if here == "top" or there == here or there == "own" or target == "gpuhost":
                continue
            if here == "own":
                out.append((module, target, "gpuhost's own layer imports the %s face" % there))
            else:
                out.append((module, target, "the %s face imports %s" % (here, there)))
    return out


def test_floors_sort_the_modules_as_the_architecture_page_maps_them():
    assert floor("gpuhost") == "top"
    assert floor("gpuhost.dispatcher") == floor("gpuhost._jitcache") == "own"
    assert floor("gpuhost._numba") == "own"  # gpuhost.jit's compiler, numba-cuda (decision 12)
    assert floor("gpuhost.pytest_plugin") == floor("gpuhost._default_context") == "own"
    assert floor("gpuhost.memory") == floor("gpuhost.compat.cupy._pools") == "cupy"
    assert floor("gpuhost.memory_manager") == floor("gpuhost.cudadrv") == "numba"
    assert floor("gpuhost.compat.numba._cudadrv.driver") == "numba"
    assert floor("gpuhost.tools") == floor("gpuhost.compat.pycuda._tools") == "pycuda"
    assert floor("gpuhost.memory_managerx") == "own"  # a prefix is no folder
    graph = {"gpuhost.devices": {"gpuhost.tools"}, "gpuhost.tools": {"gpuhost.memory"},
             "gpuhost.memory": {"gpuhost.devices", "gpuhost"}, "gpuhost": {"gpuhost.tools"}}
    assert floor_violations(graph) == [
        ("gpuhost.devices", "gpuhost.tools", "gpuhost's own layer imports the pycuda face"),
        ("gpuhost.tools", "gpuhost.memory", "the pycuda face imports cupy")]


def test_the_own_layer_imports_no_face_and_no_face_another():
    bad = floor_violations(import_graph())
    assert not bad, "imports across the floors: " + "; ".join(
        "%s -> %s (%s)" % v for v in bad)


def test_no_python_file_is_longer_than_a_thousand_lines():
    long = []
    for name, path in sorted(module_names().items()):
        if path is not None:
            with open(path, encoding="utf-8") as f:
                lines = sum(1 for _ in f)
            if lines > LONGEST_FILE:
                long.append("%s (%d lines)" % (os.path.relpath(path, PACKAGE_DIR), lines))
    assert not long, "Python files over %d lines: %s" % (LONGEST_FILE, ", ".join(long))


def test_no_import_cycle_longer_than_two():
    cycles = longer_cycles(import_graph())
    assert not cycles, "import cycles longer than two: " + "; ".join(
        " -> ".join(cycle) for cycle in cycles)
