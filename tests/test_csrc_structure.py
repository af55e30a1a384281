"""The C sources' structure: dependencies one way, files of a readable size, no C path that
looks a Python function up by name.

csrc/ holds module.c, the module's init, and one folder per subsystem, the subsystems
standing on one another in floors (FLOORS): base (the module state, the driver's loader,
errors, the registered Python services), core (devices, contexts, streams, events), memory,
arrays (gpuhost's and other libraries'), launch, then graphs, jit and nccl.  A file includes
and calls only files of its own folder and of the floors below; module.c, on top, includes
every subsystem and nothing includes it.  A header named x_internal.h (pool_internal.h,
interop_internal.h) is private to its folder: no file of another folder includes it.  A
file includes a header of its own folder by name ("pool.h") and another folder's by its
path from csrc/ ("base/state.h").

The include graph of csrc/ is read from the sources: a file is named by its stem, so that
x.c and x.h (and x_docs.h, the docstrings x.c includes) are one node "x", and every
`#include "y.h"` in any of them is an edge x -> y.  A pair that includes each other's
header (a type and the file that extends it) is allowed; a circle of three or more is not
(`longer_cycles`, shared with the Python package's import graph).  state.h, the module
state, is the ground floor every file may include; module.c is the top floor.

The call graph is read the same way: an edge x -> y for each function defined (not static)
in y.c that x.c calls.  It is held to the same rule (no circle of three files or more), and
the loaders of the driver's and the libraries' tables (cuda_api.c, libload.c) call no other
file: errors.c raises what they report, not the other way round.

The fake driver (tests/fakecuda) is held to the same file size.
"""
import os
import re

import pytest

from test_import_graph import longer_cycles

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CSRC = os.path.join(ROOT, "csrc")
FAKE = os.path.join(ROOT, "tests", "fakecuda")
MAX_LINES = 1000
# The subsystems' folders, lowest first; those of one floor (a tuple) use none of each other.
FLOORS = ["base", "core", "memory", "arrays", "launch", ("graphs", "jit", "nccl")]


def _sources(folder, endings=(".c", ".h")):
    """The C files under folder, as paths relative to it ("memory/pool.c")."""
    found = []
    for dirpath, _, files in os.walk(folder):
        rel = os.path.relpath(dirpath, folder)
        found.extend(f if rel == "." else "%s/%s" % (rel, f) for f in files if f.endswith(endings))
    return sorted(found)


def _node(filename):
    stem = os.path.basename(filename).rsplit(".", 1)[0]
    return stem[:-len("_docs")] if stem.endswith("_docs") else stem


def _includes(path, text):
    """The csrc/-relative paths of the quoted includes of the file at csrc/-relative `path`:
    a bare name is in the file's own folder."""
    here = os.path.dirname(path)
    return [inc if "/" in inc else (os.path.join(here, inc) if here else inc)
            for inc in re.findall(r'^#include "([\w/]+\.h)"', text, re.M)]


def include_graph(folder=CSRC):
    """{node: set of nodes} of csrc/'s quoted includes, files named by their stem."""
    graph = {}
    for f in _sources(folder):
        with open(os.path.join(folder, f)) as fh:
            text = fh.read()
        targets = graph.setdefault(_node(f), set())
        for m in re.finditer(r'^#include "([\w/]+\.h)"', text, re.M):
            target = _node(m.group(1))
            if target != _node(f):
                targets.add(target)
    return graph


def test_the_include_graph_is_read_as_the_docstring_says():
    graph = include_graph()
    assert "module" not in set().union(*graph.values())  # nothing includes the top floor
    assert {"state", "context", "stream", "pool", "kernel"} <= graph["module"]
    assert graph["state"] <= {"cuda_api"}  # the ground floor includes only the driver's table
    assert "context_docs" not in graph and "context" in graph  # x_docs.h belongs to x


def test_no_include_cycle_longer_than_two():
    cycles = longer_cycles(include_graph())
    assert cycles == [], "include circles longer than two files: " + "; ".join(
        " -> ".join(c) for c in cycles)


def test_longer_cycles_would_see_a_circle_through_the_headers(tmp_path):
    for name, includes in {"a.c": ["b.h"], "b.c": ["c.h"], "c.c": ["a.h"],
                           "a.h": [], "b.h": [], "c.h": []}.items():
        (tmp_path / name).write_text("".join('#include "%s"\n' % h for h in includes))
    assert longer_cycles(include_graph(str(tmp_path))) == [["a", "b", "c", "a"]]


def private_header_strangers(folder=CSRC):
    """{x_internal.h's path: the files of other folders that include it}, for every
    x_internal.h under folder (an empty list: only its own folder's files include it)."""
    includes = {}
    for f in _sources(folder):
        with open(os.path.join(folder, f)) as fh:
            includes[f] = _includes(f, fh.read())
    return {header: sorted(f for f, incs in includes.items()
                           if header in incs and os.path.dirname(f) != os.path.dirname(header))
            for header in includes if header.endswith("_internal.h")}


def test_a_private_header_is_included_by_its_own_folder_only():
    strangers = private_header_strangers()
    assert {"memory/pool_internal.h", "arrays/interop_internal.h"} <= set(strangers)
    assert {h: fs for h, fs in strangers.items() if fs} == {}


def test_private_header_strangers_would_see_another_folder_include_one(tmp_path):
    for d in ("memory", "core"):
        (tmp_path / d).mkdir()
    (tmp_path / "memory" / "pool_internal.h").write_text("")
    for name in ("memory/pool.c", "memory/staging.c", "core/stream.c", "module.c"):
        inc = "pool_internal.h" if name.startswith("memory/") else "memory/pool_internal.h"
        (tmp_path / name).write_text('#include "%s"\n' % inc)
    (tmp_path / "core" / "event.c").write_text('#include "pool_internal.h"\n')  # its own folder's
    assert private_header_strangers(str(tmp_path)) == {
        "memory/pool_internal.h": ["core/stream.c", "module.c"]}


def _floor(path):
    """The floor of the file at csrc/-relative `path`: its folder's index in FLOORS; module.c
    (no folder) is above them all."""
    folder = os.path.dirname(path)
    if not folder:
        return len(FLOORS)
    for i, names in enumerate(FLOORS):
        if folder in ((names,) if isinstance(names, str) else names):
            return i
    raise AssertionError("csrc/%s is in no subsystem of FLOORS" % folder)


def upward_edges(folder=CSRC):
    """["a.c -> b.h (includes)", "a.c -> b.c (calls f)", ...]: the includes and calls from a
    file to a file of another folder on the same floor or a higher one."""
    files = _sources(folder)
    where = {}  # node -> path of its .c (else of its .h)
    for f in files:
        if f.endswith(".c") or _node(f) not in where:
            where[_node(f)] = f
    found = []
    for f in files:
        with open(os.path.join(folder, f)) as fh:
            for inc in _includes(f, fh.read()):
                if os.path.dirname(inc) != os.path.dirname(f) and _floor(inc) >= _floor(f):
                    found.append("%s -> %s (includes)" % (f, inc))
    for a, edges in call_graph(folder).items():
        for b, fns in edges.items():
            pa, pb = where[a], where[b]
            if os.path.dirname(pa) != os.path.dirname(pb) and _floor(pb) >= _floor(pa):
                found.append("%s -> %s (calls %s)" % (pa, pb, ", ".join(sorted(fns))))
    return sorted(found)


def test_every_file_is_in_a_subsystem_folder_but_module_c():
    files = _sources(CSRC)
    assert [f for f in files if "/" not in f] == ["module.c"]
    assert {_floor(f) for f in files} == set(range(len(FLOORS) + 1))  # every floor is used


def test_includes_and_calls_run_down_the_floors_only():
    assert upward_edges() == []


def test_upward_edges_would_see_a_lower_floor_use_a_higher_one(tmp_path):
    for d in ("base", "memory", "graphs", "jit"):
        (tmp_path / d).mkdir()
    (tmp_path / "base" / "errors.c").write_text(
        '#include "memory/pool.h"\nint\ngh_raise(void)\n{\n    return gh_pool_free();\n}\n')
    (tmp_path / "memory" / "pool.h").write_text('#include "base/errors.h"\n')
    (tmp_path / "memory" / "pool.c").write_text(
        "int\ngh_pool_free(void)\n{\n    return gh_raise();\n}\n")
    (tmp_path / "graphs" / "graph.c").write_text('#include "jit/jit.h"\n')
    (tmp_path / "jit" / "jit.h").write_text("")
    (tmp_path / "module.c").write_text('#include "graphs/graph.h"\n')
    assert upward_edges(str(tmp_path)) == [
        "base/errors.c -> memory/pool.c (calls gh_pool_free)",
        "base/errors.c -> memory/pool.h (includes)",
        "graphs/graph.c -> jit/jit.h (includes)"]


def _code(text):
    """C text without comments and string literals (line numbers kept)."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)


def call_graph(folder=CSRC):
    """{node: {node: set of functions}}: which files' non-static functions each file calls.
    A definition is the project's style: the name at a line's start, its body's brace
    after the parameters."""
    texts = {}
    for f in _sources(folder, (".c",)):
        with open(os.path.join(folder, f)) as fh:
            texts[f] = _code(fh.read())
    defined = {}
    for f, text in texts.items():
        for m in re.finditer(r"^(\w+)\s*\([^;{]*?\)\s*\{", text, re.M | re.S):
            if not re.search(r"^static\b[^;{}]*\Z", text[:m.start()].rsplit("\n", 2)[-2] + "\n",
                             re.M):
                defined[m.group(1)] = _node(f)
    graph = {}
    for f, text in texts.items():
        here = graph.setdefault(_node(f), {})
        for m in re.finditer(r"\b(\w+)\s*\(", text):
            there = defined.get(m.group(1))
            if there is not None and there != _node(f):
                here.setdefault(there, set()).add(m.group(1))
    return graph


def test_no_call_circle_longer_than_two():
    graph = call_graph()
    assert graph["module"] and "module" not in set().union(*graph.values())
    assert "gh_raise" in graph["nccl_api"]["errors"]  # the graph sees calls between files
    cycles = longer_cycles({n: set(edges) for n, edges in graph.items()})
    assert cycles == [], "call circles longer than two files: " + "; ".join(
        " -> ".join(c) for c in cycles)


def test_the_loaders_call_no_other_file():
    graph = call_graph()
    assert {n: graph[n] for n in ("cuda_api", "libload") if graph[n]} == {}


def test_call_graph_would_see_a_circle_through_three_files(tmp_path):
    # a.c's f_x is its own (b.c's is static), a call in a comment or a string is none
    (tmp_path / "a.c").write_text("int\nf_a(void)\n{\n    f_x();\n    return f_b(); /* f_c() */\n}\n")
    (tmp_path / "b.c").write_text("int\nf_b(void)\n{\n    return f_c();\n}\n"
                                  "static int\nf_x(void)\n{\n    return 0;\n}\n")
    (tmp_path / "c.c").write_text('int\nf_c(void)\n{\n    puts("f_x()");\n    return f_a();\n}\n')
    graph = call_graph(str(tmp_path))
    assert graph == {"a": {"b": {"f_b"}}, "b": {"c": {"f_c"}}, "c": {"a": {"f_a"}}}
    assert longer_cycles({n: set(e) for n, e in graph.items()}) == [["a", "b", "c", "a"]]


@pytest.mark.parametrize("folder", [CSRC, FAKE], ids=["csrc", "fakecuda"])
def test_no_c_file_over_a_thousand_lines(folder):
    sizes = {}
    for f in _sources(folder):
        with open(os.path.join(folder, f)) as fh:
            sizes[f] = sum(1 for _ in fh)
    assert {f: n for f, n in sizes.items() if n > MAX_LINES} == {}


def test_no_c_code_looks_gpuhost_python_up_by_name():
    """The C core calls gpuhost's Python side only through functions it registered once
    (state.h's GH_HELPER_LIST, services.c), never by importing one of gpuhost's modules and
    looking a name up, with one exception off every hot path: libload.c asks
    gpuhost._libpaths where a library is when it first loads it.  The exception classes
    errors.c raises are registered too (_set_exceptions), by gpuhost.errors."""
    importers = {}
    for f in _sources(CSRC):
        with open(os.path.join(CSRC, f)) as fh:
            text = fh.read()
        assert "gh_call_python" not in text, f
        if re.search(r'PyImport_\w+\("gpuhost', text):
            importers[f] = True
    assert sorted(importers) == ["base/libload.c"]


def test_every_helper_the_c_core_calls_is_registered():
    import gpuhost  # noqa: F401  (registers them)
    import gpuhost.dispatcher  # noqa: F401  (imports numba-cuda only on first use)
    import gpuhost.memory_manager  # noqa: F401
    import gpuhost.nccl  # noqa: F401
    from gpuhost import _core

    with open(os.path.join(CSRC, "base", "state.h")) as fh:
        names = re.findall(r'X\(\w+, "(\w+)"\)', fh.read())
    assert len(names) >= 10
    unregistered = [n for n in names if not _core._helper_registered(n)]
    assert unregistered == []


def test_set_helpers_refuses_unknown_names_and_non_callables():
    from gpuhost import _core

    with pytest.raises(TypeError, match="no helper is called 'nope'"):
        _core._set_helpers(nope=print)
    with pytest.raises(TypeError, match="is not callable"):
        _core._set_helpers(gc_collect=3)
    with pytest.raises(TypeError, match="keyword arguments only"):
        _core._set_helpers(print)


def test_the_architecture_map_names_every_file_and_no_missing_one():
    """docs/development/architecture.md's map (README links it) matches the tree: every C
    file and every module of the package is named there, and every csrc/ or gpuhost/ path
    it names exists."""
    with open(os.path.join(ROOT, "docs", "development", "architecture.md")) as fh:
        page = fh.read()
    block = page[page.index("## The code, file by file"):]
    named = set(re.findall(r"[\w./*-]+\.(?:c|h|py|pyi)\b", block))
    words = set(re.findall(r"[\w.*-]+", block))
    for path in _sources(CSRC):
        f = os.path.basename(path)
        assert f in named or f in words or (f.endswith("_docs.h") and "*_docs.h" in block), \
            "csrc/%s is not on the map" % path
        if "/" in path:  # under its folder's heading
            heading = re.search(r"^  %s/ +\S" % re.escape(os.path.dirname(path)), block, re.M)
            assert heading, "csrc/%s/ has no heading on the map" % os.path.dirname(path)
    import gpuhost

    package = os.path.dirname(os.path.abspath(gpuhost.__file__))  # the installed one, too
    for dirpath, _, files in os.walk(package):
        rel = os.path.relpath(dirpath, package)
        for f in files:
            if f.endswith(".py"):
                path = f if rel == "." else "%s/%s" % (rel, f)
                assert path in block or (rel != "." and f == "__init__.py"), \
                    "gpuhost/%s is not on the map" % path
    present = set()
    for top, prefix in ((ROOT, ""), (package, "gpuhost")):
        for dirpath, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("build", "__pycache__")]
            rel = os.path.join(prefix, os.path.relpath(dirpath, top))
            present.update(files)
            present.update(os.path.join(rel, f) for f in files)
    for f in sorted(named - {"cuda.h", "nvrtc.h", "nccl.h"}):  # CUDA's own headers
        if "*" in f:
            continue
        tails = {p for p in present if p == f or p.endswith("/" + f)}
        assert tails, "the map names %s, which is gone" % f


def test_plan_layout_and_helper_registered_refuse_bad_input():
    from gpuhost import _core

    with pytest.raises(TypeError, match="plan_layout\\(\\) takes a DeviceArray, not list"):
        _core.plan_layout([1, 2])
    with pytest.raises(ValueError, match="no helper is called 'nope'"):
        _core._helper_registered("nope")
