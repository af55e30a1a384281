"""Sphinx configuration of gpuhost's API reference (python -m sphinx -W -b html docs OUT).

The reference is autodoc over the docstrings of the built package: build the extension
first (python3 setup.py build_ext --inplace), then run Sphinx from the checkout.
"""
import os
import sys

sys.path.insert(0, os.path.abspath(".."))

project = "gpuhost"
author = "the gpuhost developers"
copyright = "2026, the gpuhost developers"
extensions = ["sphinx.ext.autodoc", "myst_parser"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "undoc-members": False}
default_role = "code"  # `name` in a docstring is code, as gpuhost's docstrings write it
myst_heading_anchors = 3
html_theme = "alabaster"
suppress_warnings = ["myst.xref_missing"]  # README's links to files of the repository


def _plain_text(app, what, name, obj, options, lines):
    """gpuhost's docstrings are plain text, written for help() and IDEs, not
    reStructuredText: each is shown as written, in a literal block."""
    if lines:
        lines[:] = ["::", ""] + ["    " + line for line in lines] + [""]


def setup(app):
    app.connect("autodoc-process-docstring", _plain_text)
