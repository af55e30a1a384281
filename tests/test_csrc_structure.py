"""The C sources' structure: dependencies one way, files of a readable size, no C path that
looks a Python function up by name.

csrc/ holds module.c, the module's init, and one folder per subsystem, the subsystems
standing on one another in floors (FLOORS): base (the module state, the driver's loader,
errors, the registered Python services), core (devices, contexts, streams, events), memory,
arrays (gpuhost's and other libraries'), launch, then graphs, jit and nccl.  A file includes
and calls only files of its own folder and of the floors below; module.c, on top, includes
every subsystem and nothing includes it.

Each folder X declares what it has in two headers: X/X.h, its public header, what the
floors above use of it, and X/X_internal.h, its private one, what only its own files share
(it includes X.h).  Every .c file of X includes X_internal.h first; a file of another folder
includes X/X.h and no other header of X.  Besides those two a folder holds only data
headers: the docstrings of one .c file (x_docs.h), a table generated from cuda.h
(TABLES), or a foreign library's table of entry points (ABI: the driver's, NVRTC's,
NCCL's), which the loader, the build's ABI checks and the fake driver include alone.  The
ground floor's public header, base/base.h, gathers PARTS, each standing on the one before:
the module state (state.h), then errors.h and live.h, whose inline fast paths (gh_check,
gh_live_add) call their .c file's slow paths; errors.c and live.c include their part first,
not base_internal.h, so that nothing below base.h includes it.  A file
includes a header of its own folder by name ("core_internal.h") and another folder's by its
path from csrc/ ("base/base.h").

The include graph of csrc/ is read from the sources: a node for each file, x_docs.h folded
into the x.c that includes it, an edge for each `#include "y.h"`.  It has no circle at all.

The call graph has a node for each .c file: an edge x -> y for each function defined (not
static) in y.c that x.c calls.  Two files that call each other (a type and the file that
extends it) are allowed; a circle of three or more is not (`longer_cycles`, shared with the
Python package's import graph).  The loaders of the driver's and the libraries' tables
(cuda_api.c, libload.c) call no other file: errors.c raises what they report, not the other
way round.

The fake driver (tests/fakecuda) is held to the same file size.
"""
import os
import re

import pytest

from test_import_graph import longer_cycles, strongly_connected_components

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CSRC = os.path.join(ROOT, "csrc")
FAKE = os.path.join(ROOT, "tests", "fakecuda")
MAX_LINES = 1000
# The subsystems' folders, lowest first; those of one floor (a tuple) use none of each other.
FLOORS = ["base", "core", "memory", "arrays", "launch", ("graphs", "jit", "nccl")]
# A folder's headers that declare nothing of its own: foreign libraries' tables of entry
# points, and tables generated from cuda.h (tools/gen_cuda_enums.py).
ABI = {"base/cuda_api.h", "launch/nvrtc_api.h", "nccl/nccl_api.h"}
TABLES = {"base/cuda_errors.h", "core/cuda_attrs.h"}
# The parts of base/base.h: the module state, and the two files with inline fast paths.
PARTS = {"base/state.h", "base/errors.h", "base/live.h"}


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


def _folded(path):
    """x_docs.h is part of the x.c beside it."""
    return path[:-len("_docs.h")] + ".c" if path.endswith("_docs.h") else path


def include_graph(folder=CSRC):
    """{file: set of files} of csrc/'s quoted includes, csrc/-relative paths, each x_docs.h
    folded into its x.c."""
    graph = {}
    for f in _sources(folder):
        with open(os.path.join(folder, f)) as fh:
            text = fh.read()
        targets = graph.setdefault(_folded(f), set())
        targets.update(_folded(inc) for inc in _includes(f, text) if _folded(inc) != _folded(f))
    return graph


def include_circles(graph):
    """The strongly connected components of more than one file, each sorted: [] when the
    graph has no circle (include_graph leaves out a file's include of itself)."""
    return sorted(sorted(c) for c in strongly_connected_components(graph) if len(c) > 1)


def test_the_include_graph_is_read_as_the_docstring_says():
    graph = include_graph()
    assert "module.c" not in set().union(*graph.values())  # nothing includes the top floor
    assert {"base/base.h", "core/core.h", "memory/memory.h", "launch/launch.h"} <= graph["module.c"]
    assert graph["base/base.h"] == PARTS  # the ground floor gathers its parts
    assert graph["base/state.h"] == {"base/cuda_api.h"}  # its ground: the driver's table
    assert graph["base/errors.c"] == {"base/errors.h"}
    assert graph["core/core_internal.h"] == {"core/core.h"}
    assert "core/context_docs.h" not in graph and "core/context.c" in graph


def test_no_include_circle():
    assert include_circles(include_graph()) == []


def test_include_circles_would_see_a_circle_through_the_headers(tmp_path):
    for name, includes in {"a.c": ["a.h"], "a.h": ["b.h"], "b.h": ["c.h"], "c.h": ["a.h"],
                           "d.c": ["a.h", "d_docs.h"], "d_docs.h": ["d.c"]}.items():
        (tmp_path / name).write_text("".join('#include "%s"\n' % h for h in includes))
    assert include_circles(include_graph(str(tmp_path))) == [["a.h", "b.h", "c.h"]]


def header_layout(folder=CSRC):
    """["X/y.h: ...", ...]: a folder without its X.h or X_internal.h, a header of a folder
    that is none of the kinds the module docstring names, and a .c file that does not
    include its folder's X_internal.h first (but the loader and the ABI checks, which
    include a foreign library's table alone, and the files of base.h's PARTS, which include
    their part first)."""
    files = _sources(folder)
    found = []
    for x in sorted({os.path.dirname(f) for f in files} - {""}):
        for h in ("%s/%s.h" % (x, x), "%s/%s_internal.h" % (x, x)):
            if h not in files:
                found.append("%s: missing" % h)
    for f in files:
        x, name = os.path.dirname(f), os.path.basename(f)
        if not x:
            continue
        if f.endswith(".h") and name not in (x + ".h", x + "_internal.h") \
                and not name.endswith("_docs.h") and f not in ABI | TABLES | PARTS:
            found.append("%s: neither %s.h, %s_internal.h nor a data header" % (f, x, x))
        if f.endswith(".c"):
            with open(os.path.join(folder, f)) as fh:
                incs = _includes(f, fh.read())
            if incs and set(incs) <= ABI | TABLES:
                continue
            part = f[:-2] + ".h"
            first = part if part in PARTS else "%s/%s_internal.h" % (x, x)
            if not incs or incs[0] != first:
                found.append("%s: does not include %s first" % (f, os.path.basename(first)))
    return found


def test_each_folder_has_one_public_and_one_private_header():
    assert header_layout() == []


def test_header_layout_would_see_a_stray_header_and_a_missing_one(tmp_path):
    for d in ("base", "core", "nccl"):
        (tmp_path / d).mkdir()
    for name, text in {"base/base.h": '#include "state.h"\n#include "errors.h"\n',
                       "base/base_internal.h": '#include "base.h"\n', "base/state.h": "",
                       "base/errors.h": '#include "state.h"\n',
                       "base/errors.c": '#include "base_internal.h"\n',
                       "core/core.h": "", "core/core_internal.h": '#include "core.h"\n',
                       "core/stream.h": "", "core/stream_docs.h": "",
                       "core/stream.c": '#include "core_internal.h"\n#include "stream_docs.h"\n',
                       "core/event.c": '#include "core.h"\n#include "core_internal.h"\n',
                       "nccl/nccl.h": "", "nccl/nccl_api.h": "",
                       "nccl/nccl_abi_check.c": '#include "nccl_api.h"\n',
                       "module.c": '#include "core/core.h"\n'}.items():
        (tmp_path / name).write_text(text)
    assert header_layout(str(tmp_path)) == [
        "nccl/nccl_internal.h: missing",
        "base/errors.c: does not include errors.h first",
        "core/event.c: does not include core_internal.h first",
        "core/stream.h: neither core.h, core_internal.h nor a data header"]


def stranger_includes(folder=CSRC):
    """["a.c -> X/y.h", ...]: a file including a header of another folder X that is not X's
    public header X/X.h."""
    found = []
    for f in _sources(folder):
        with open(os.path.join(folder, f)) as fh:
            for inc in _includes(f, fh.read()):
                x = os.path.dirname(inc)
                if x != os.path.dirname(f) and inc != "%s/%s.h" % (x, x):
                    found.append("%s -> %s" % (f, inc))
    return found


def test_another_folder_includes_only_a_folders_public_header():
    assert stranger_includes() == []


def test_stranger_includes_would_see_a_private_header_used_from_outside(tmp_path):
    for d in ("memory", "core"):
        (tmp_path / d).mkdir()
    for name, inc in {"memory/pool.c": "memory_internal.h", "memory/memory.h": "core/core.h",
                      "core/stream.c": "memory/memory_internal.h",
                      "core/event.c": "core_internal.h", "module.c": "memory/pool.h"}.items():
        (tmp_path / name).write_text('#include "%s"\n' % inc)
    assert stranger_includes(str(tmp_path)) == [
        "core/stream.c -> memory/memory_internal.h", "module.c -> memory/pool.h"]


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
    (base/state.h's GH_HELPER_LIST, services.c), never by importing one of gpuhost's modules and
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
