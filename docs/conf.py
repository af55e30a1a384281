"""Sphinx configuration of gpuhost's documentation site.

    python3 -m pip install '.[docs]' && python3 -m sphinx -W -b html docs OUT

The reference is autodoc over the docstrings of the built package. The `docs` extra
installs gpuhost itself (its build also leaves the extension in the checkout) with Sphinx,
the theme and the extensions below. The checkout's gpuhost/ is documented where its
extension is built for this Python (that install, or `python3 setup.py build_ext
--inplace`); otherwise an installed gpuhost of the same version. Notebooks are rendered
with their stored outputs and never executed here (tools/run_notebooks.py executes them on
a GPU machine).
"""
import glob
import importlib.machinery
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _checkout_version():
    with open(os.path.join(ROOT, "gpuhost", "_version.py"), encoding="utf-8") as f:
        return re.search(r'__version__ = "([^"]+)"', f.read()).group(1)


def _import_gpuhost():
    """The gpuhost this site documents: the checkout's if built for this Python, else an
    installed one of the checkout's version; else stop, saying how to get one."""
    built = any(glob.glob(os.path.join(ROOT, "gpuhost", "_core" + suffix))
                for suffix in importlib.machinery.EXTENSION_SUFFIXES)
    here = {ROOT, "", os.getcwd()} if os.path.samefile(os.getcwd(), ROOT) else {ROOT}
    if built:
        sys.path.insert(0, ROOT)
    else:  # the unbuilt checkout would shadow an installed gpuhost: look past it
        sys.path[:] = [p for p in sys.path if p not in here]
    try:
        import gpuhost
    except ImportError as e:
        raise RuntimeError(
            "the documentation imports gpuhost, which is neither built in this checkout for "
            "this Python nor installed (%s). Install it with the documentation's tools: "
            "python3 -m pip install '.[docs]'" % e) from e
    if not built and gpuhost.__version__ != _checkout_version():
        raise RuntimeError(
            "this checkout is gpuhost %s but is not built, and the installed gpuhost (%s) is "
            "%s: build this one, python3 -m pip install '.[docs]'"
            % (_checkout_version(), os.path.dirname(gpuhost.__file__), gpuhost.__version__))
    return gpuhost


gpuhost = _import_gpuhost()

project = "gpuhost"
author = "the gpuhost developers"
copyright = "2026, the gpuhost developers"
version = release = gpuhost.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "myst_nb",
    "sphinx_design",
    "sphinx_copybutton",
]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
templates_path = ["_templates"]

# -- autodoc: docstrings are reStructuredText, numpydoc's sections (napoleon) ---------------
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "undoc-members": False}
autodoc_typehints = "none"  # the signatures carry the defaults; the docstrings the types
autosummary_generate = False  # the summary tables link to the entries on the same page
default_role = "code"  # `name` in a docstring is inline code, as gpuhost's docstrings write it
# napoleon's own handler is off (it would read the first "word: text" of any attribute's
# plain docstring as a type); _process_docstring below applies its numpydoc parser to the
# docstrings that have numpydoc sections.
napoleon_google_docstring = False
napoleon_numpy_docstring = False
napoleon_use_param = True
napoleon_use_rtype = False
napoleon_use_ivar = True
napoleon_custom_sections = [("Notes", "notes_style")]

# -- MyST and notebooks -------------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = "off"  # stored outputs, executed on a GPU by tools/run_notebooks.py
nb_merge_streams = True
suppress_warnings = ["myst.xref_missing"]

# -- HTML: pydata-sphinx-theme, as CuPy's and NumPy's sites -------------------------------
html_theme = "pydata_sphinx_theme"
html_title = "gpuhost %s" % release
html_static_path = ["_static"]
html_css_files = ["gpuhost.css"]
html_js_files = ["gpuhost.js"]  # code lines that wrap keep a hanging indent
html_favicon = "_static/favicon.svg"
html_show_sourcelink = False
html_theme_options = {
    "logo": {"text": "gpuhost"},
    "navbar_align": "left",
    "header_links_before_dropdown": 6,
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
    "pygments_light_style": "default",
    "pygments_dark_style": "monokai",
}
html_context = {"default_mode": "light"}
html_sidebars = {"index": [], "install": [], "quickstart": [], "performance": []}
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True


# -- docstrings written for help() --------------------------------------------------------
# gpuhost's docstrings are reStructuredText: numpydoc sections where a docstring has them,
# otherwise plain sentences. A few conventions of text written for help() are not valid
# reST and are adjusted here, in the rendered copy only: a line indented under the one
# before it (a continuation) joins it, and `*args` / `**kwargs` outside code are escaped.
_SECTION = re.compile(r"^(Parameters|Returns|Yields|Raises|Examples|Notes|See Also|Attributes|"
                      r"Methods|Warns|Other Parameters)$")
_STARS = re.compile(r"(?<![\\*`\w])(\*{1,2})(?=\w)")
_TRAILING_UNDERSCORE = re.compile(r"(?<=\w)_(?=[\s.,;:)]|$)")  # CU_DEVICE_ATTRIBUTE_ is no link


def _code_spans(line):
    """Split `line` into (text, is_code) pieces at inline code (`...` and ``...``)."""
    return [(part, i % 2 == 1) for i, part in enumerate(re.split(r"(``.*?``|`[^`]*`)", line))]


def _escape(line):
    return "".join(part if code else _TRAILING_UNDERSCORE.sub(
        r"\\_", _STARS.sub(lambda m: "\\" + "\\".join(m.group(1)), part))
        for part, code in _code_spans(line))


def _indent(line):
    return len(line) - len(line.lstrip())


def _plain_to_rest(lines):
    out = []
    literal = None  # indentation of the paragraph that opened a literal block (::, >>>)
    for line in lines:
        stripped = line.strip()
        if literal is not None:
            if stripped and _indent(line) <= literal and not stripped.startswith(">>>"):
                literal = None
            else:
                out.append(line)
                continue
        if stripped.startswith(">>>") or stripped.startswith("$ "):
            if out and out[-1].strip() and not out[-1].rstrip().endswith("::") \
                    and not out[-1].strip().startswith(">>>"):
                out.append("")
            literal = _indent(line) - 1
            out.append(line)
            continue
        prev = out[-1] if out else ""
        if stripped and prev.strip() and _indent(line) > _indent(prev) \
                and not prev.rstrip().endswith("::") and not _SECTION.match(prev.strip()) \
                and not prev.strip().startswith("-") and not prev.strip().startswith("*"):
            out[-1] = prev.rstrip() + " " + _escape(stripped)
            continue
        if prev.rstrip().endswith("::") and stripped:
            literal = _indent(prev)
            out.append(line)
            continue
        out.append(_escape(line))
    return out


def _is_numpydoc(lines):
    return any(_SECTION.match(a.strip()) and b.strip() and set(b.strip()) == {"-"}
               for a, b in zip(lines, lines[1:]))


def _process_docstring(app, what, name, obj, options, lines):
    from sphinx.ext.napoleon import NumpyDocstring

    if not lines:
        return
    if _is_numpydoc(lines):
        lines[:] = NumpyDocstring(list(lines), app.config, app, what, name, obj, options).lines()
    else:
        lines[:] = _plain_to_rest(lines)


# -- viewcode: the source pages' [docs] links lead to where each object is indexed ----------
# viewcode (Sphinx 9) links every object of a module's source page under one module name,
# the one the first page that showed any of them used, :no-index: showings included:
# gpuhost.compat.cupy shows gpuhost.memory's names again (indexed on the pools page), so
# the source of gpuhost/memory.py linked to pools.html#gpuhost.compat.cupy.MemoryPool, an
# anchor no page has (199 such links).  Each link of a source page is pointed at the page
# and anchor that index the object under its module's name or a package's above it
# (gpuhost.set_memory_manager), and an object indexed under none gets no link.  The
# modules whose source viewcode could not read leave its index, which listed them with a
# link to no page.

_BACKLINK = re.compile(r'(<div class="viewcode-block" id="([^"]+)">\n)'
                       r'<a class="viewcode-back" href="[^"]*">([^<]*)</a>\n')


def _viewcode_backlinks(app, pagename, templatename, context, doctree):
    if not pagename.startswith("_modules/") or "body" not in context:
        return
    module = pagename[len("_modules/"):].replace("/", ".")
    prefixes = [module.rsplit(".", n)[0] for n in range(module.count(".") + 1)]
    objects = app.env.get_domain("py").objects

    def relink(match):
        name = match.group(2)
        for prefix in prefixes:
            entry = objects.get("%s.%s" % (prefix, name))
            if entry is not None:
                href = app.builder.get_relative_uri(pagename, entry.docname) + "#" + entry.node_id
                return '%s<a class="viewcode-back" href="%s">%s</a>\n' % (
                    match.group(1), href, match.group(3))
        return match.group(1)

    context["body"] = _BACKLINK.sub(relink, context["body"])


def _drop_sourceless_modules(app):
    modules = getattr(app.env, "_viewcode_modules", None) or {}
    for name in [name for name, entry in modules.items() if not entry]:
        del modules[name]
    return []


def setup(app):
    app.connect("autodoc-process-docstring", _process_docstring)
    app.connect("html-page-context", _viewcode_backlinks)
    app.connect("html-collect-pages", _drop_sourceless_modules, priority=400)  # viewcode's: 500
