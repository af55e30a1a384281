"""docs/reference: every public name of gpuhost is documented there exactly once.

Read from the .rst files' autodoc directives, without building the site: autofunction,
autoclass, autoexception and autodata name one object each; automodule documents what
autodoc would with this site's options (conf.py: members on, undocumented members off):
the names of its `:members:` list, else its `__all__` (or, without one, the names it
defines itself), less `:exclude-members:`, and none with `:no-members:`. A module's data
counts only with a ``#:`` comment, as autodoc needs one to show it. A name is missing
when no directive renders it; it is there twice when two directives without `:no-index:`
render it (an entry with `:no-index:` is a deliberate second rendering, as compat.cupy's
re-exports of gpuhost.memory). Names are matched by object (a class documented as
``gpuhost.Stream`` covers ``gpuhost.compat.cupy``'s use of the same class), numbers and
strings by module and name.
"""
import glob
import importlib
import inspect
import os
import re
import sys
import types

import pytest

pytest.importorskip("sphinx.pycode")  # ModuleAnalyzer: the `#:` comments autodoc reads

from sphinx.pycode import ModuleAnalyzer  # noqa: E402

import gpuhost  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE = os.path.join(ROOT, "docs", "reference")
# The modules whose public names must be in the reference, besides gpuhost's own.
MODULES = ["gpuhost.compat.cupy", "gpuhost.memory", "gpuhost.tools", "gpuhost.nccl",
           "gpuhost.nvtx"]

DIRECTIVE = re.compile(r"^\.\. (auto(?:function|class|exception|data|module|method|attribute)):: "
                       r"+(\S+)\s*$")
OPTION = re.compile(r"^\s+:([\w-]+):\s*(.*)$")


def directives(path):
    """(file, line, directive, target, {option: value}) of each autodoc directive in `path`;
    an option's value continues on the lines indented under it."""
    out = []
    lines = open(path, encoding="utf-8").read().splitlines()
    i = 0
    while i < len(lines):
        m = DIRECTIVE.match(lines[i])
        i += 1
        if not m:
            continue
        options, last = {}, None
        while i < len(lines) and lines[i].startswith(" ") and lines[i].strip():
            opt = OPTION.match(lines[i])
            if opt:
                last = opt.group(1)
                options[last] = opt.group(2).strip()
            elif last is not None:  # a continuation of the option before
                options[last] += " " + lines[i].strip()
            i += 1
        out.append((os.path.basename(path), i, m.group(1), m.group(2), options))
    return out


def top_level(name):
    """gpuhost.<name>. Importing the submodule gpuhost.launch (the launcher, which
    nccl.rst documents) rebinds the attribute `launch`, the kernel launch function, to the
    module: a name that gpuhost's own modules export as a non-module is taken from there."""
    obj = getattr(gpuhost, name)
    if isinstance(obj, types.ModuleType):
        for module in list(sys.modules.values()):
            if getattr(module, "__name__", "").startswith("gpuhost.") \
                    and name in getattr(module, "__all__", ()) \
                    and not isinstance(getattr(module, name, None), types.ModuleType):
                return getattr(module, name)
    return obj


def resolve(target):
    """The object a directive's dotted target names (module, then attributes)."""
    parts = target.split(".")
    if len(parts) == 2 and parts[0] == "gpuhost":
        return top_level(parts[1])
    for n in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:n]))
        except ImportError:
            continue
        for attr in parts[n:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(target)


def names_list(value):
    return [n for n in re.split(r"[\s,]+", value or "") if n]


def has_doc_comment(module, name):
    try:
        attr_docs = ModuleAnalyzer.for_module(module.__name__).find_attr_docs()
    except Exception:
        return False
    return ("", name) in attr_docs


def own_public_names(module):
    """What automodule :members: documents of `module`: its __all__, or without one the
    public names it defines itself (imported ones are left out, as autodoc does)."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, v in vars(module).items() if not n.startswith("_")
                 and getattr(v, "__module__", None) == module.__name__]
    return list(names)


def key(module, name, obj):
    """Identity of a documented thing: the object itself, but a module by its name and a
    number or string by the module and name (two modules' equal ints are not one entry)."""
    if isinstance(obj, types.ModuleType):
        return ("module", obj.__name__)
    if isinstance(obj, (int, float, complex, str, bytes, tuple, frozenset, type(None))):
        return ("data", module.__name__, name)
    return ("object", id(obj))


def documented():
    """({key: [where it is indexed, ...]}, keys of everything rendered, names of the modules
    with an automodule directive)."""
    entries, rendered, modules = {}, set(), set()
    for path in sorted(glob.glob(os.path.join(REFERENCE, "*.rst"))):
        for fname, line, kind, target, options in directives(path):
            where = "%s:%d %s %s" % (fname, line, kind, target)
            indexed = "no-index" not in options and "noindex" not in options
            if kind == "automodule":
                module = importlib.import_module(target)
                modules.add(target)
                if "no-members" in options:
                    continue
                names = names_list(options.get("members")) or own_public_names(module)
                excluded = set(names_list(options.get("exclude-members")))
                for name in names:
                    if name in excluded:
                        continue
                    obj = getattr(module, name)
                    if isinstance(obj, types.ModuleType):
                        continue  # autodoc documents no module as a member
                    if not (inspect.isclass(obj) or inspect.isroutine(obj)) \
                            and not has_doc_comment(module, name) \
                            and name not in names_list(options.get("members")):
                        continue  # undocumented data: autodoc leaves it out
                    rendered.add(key(module, name, obj))
                    if indexed:
                        entries.setdefault(key(module, name, obj), []).append(
                            "%s (member %s)" % (where, name))
            else:
                obj = resolve(target)
                module_name, _, name = target.rpartition(".")
                k = key(importlib.import_module(module_name), name, obj)
                rendered.add(k)
                if indexed:
                    entries.setdefault(k, []).append(where)
    return entries, rendered, modules


def public(module):
    names = set(getattr(module, "__all__", ()))
    names |= {n for n in dir(module) if not n.startswith("_")}
    if module is not gpuhost:  # a submodule's imports (numpy as np ...) are not its names
        names = set(own_public_names(module)) | {
            n for n in names if n in getattr(module, "__all__", ())
            or inspect.getmodule(getattr(module, n, None)) is not None
            and inspect.getmodule(getattr(module, n)).__name__.startswith("gpuhost")}
    return sorted(names)


def required():
    """(qualified name, key, module) of each public name the reference must hold."""
    out, seen = [], set()

    def walk(module):
        if module.__name__ in seen:
            return
        seen.add(module.__name__)
        for name in public(module):
            obj = top_level(name) if module is gpuhost else getattr(module, name)
            if isinstance(obj, types.ModuleType):
                if obj.__name__.startswith("gpuhost."):
                    out.append(("%s.%s" % (module.__name__, name), ("module", obj.__name__),
                                obj))
                continue
            out.append(("%s.%s" % (module.__name__, name), key(module, name, obj), None))

    walk(gpuhost)
    for name in MODULES:
        walk(importlib.import_module(name))
    return out


def test_reference_pages_have_autodoc_directives():
    pages = glob.glob(os.path.join(REFERENCE, "*.rst"))
    assert pages
    assert all(directives(p) for p in pages), "a reference page without autodoc directives"


def test_every_public_name_is_documented_once():
    entries, rendered, modules = documented()
    missing, twice = [], []

    def check(qual, k, module):
        if k[0] == "module":
            if k[1] in modules:
                return
            # A module without its own page section is covered by its names' entries.
            for name in own_public_names(module):
                obj = getattr(module, name)
                if not isinstance(obj, types.ModuleType):
                    check("%s.%s" % (k[1], name), key(module, name, obj), None)
            return
        if k not in rendered:
            missing.append(qual)

    for qual, k, module in required():
        check(qual, k, module)
    for k, where in entries.items():
        if len(where) > 1:
            twice.append("; ".join(where))
    assert not missing, "public names missing from docs/reference/*.rst: %s" % sorted(set(missing))
    assert not twice, "names documented more than once in docs/reference/*.rst:\n%s" \
        % "\n".join(sorted(twice))
