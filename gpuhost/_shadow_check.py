"""Refuses the import when the index's other "gpuhost" project shares this package's folder,
and says what to do when the folder is a source checkout whose C extension was never built.

The package index's `gpuhost` (0.1.0, a self-hosted GPU sharing agent) is another project,
which ships a top-level gpuhost/ package too; this library is installed as gpuhost-cuda.
Installed into one site-packages, the two mix their files in one folder and each overwrites
the other's __init__.py, so that neither works. gpuhost/__init__.py imports this module
before anything else: with the other project's files beside ours, `import gpuhost` raises
ImportError saying what happened and how to repair it, instead of half working. (Where the
other project's __init__.py was installed last, or its gpuhost/ comes earlier on sys.path,
Python never runs ours: README says not to install both.)

Imported from a clone of the repository that was never built (Python imports the clone's
gpuhost/ first when run from its root), `from . import _core` would fail with Python's guess
of a circular import; gpuhost/__init__.py calls unbuilt() then, which says that the
extension is missing and how to build it.
"""
import importlib.machinery
import os
import sys

# What the other project's gpuhost/ holds (its 0.1.0) and this package never has:
# tests/test_shadow_check.py keeps our names out of this list.
FOREIGN = ("agent.py", "api.py", "cli.py", "client", "gpu.py", "job_manager.py", "state.py",
           "tunnel.py")

FOLDER = os.path.dirname(os.path.abspath(__file__))


def foreign_files(folder=FOLDER):
    """The names in `folder` that belong to the other project, sorted."""
    try:
        return sorted(set(os.listdir(folder)).intersection(FOREIGN))
    except OSError:
        return []


def check(folder=FOLDER):
    """Raise ImportError if `folder` holds any of the other project's files."""
    found = foreign_files(folder)
    if found:
        raise ImportError(
            "gpuhost: %s holds files of another project besides this library's: %s are the "
            "package index's 'gpuhost' (a GPU sharing agent, installed with `pip install "
            "gpuhost`), which has the same import name. The two overwrite each other's files, "
            "so neither works. This library is the distribution gpuhost-cuda: remove both and "
            "install it again with\n"
            "    python -m pip uninstall -y gpuhost gpuhost-cuda\n"
            "    python -m pip install .    (in a clone of gpuhost-cuda, until it is on the "
            "package index)"
            % (folder, ", ".join(found)), name="gpuhost", path=folder)


def unbuilt(error, folder=FOLDER):
    """Raise an ImportError saying how to build the extension if `folder` holds no
    gpuhost._core for this Python; return (leaving `error` to be raised) otherwise."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    suffixes = importlib.machinery.EXTENSION_SUFFIXES
    if any("_core" + suffix in names for suffix in suffixes):
        return  # it is there and failed to load: the original error says why
    others = sorted(n for n in names if n.startswith("_core.") and n.endswith((".so", ".pyd")))
    found = (" (%s there %s built for another Python)"
             % (", ".join(others), "is" if len(others) == 1 else "are")) if others else ""
    raise ImportError(
        "gpuhost: the C extension gpuhost._core is not built in %s for this Python (%s)%s. "
        "This folder is a source checkout (Python imports it before an installed gpuhost "
        "when run from the checkout's root): build it with `python3 -m pip install .` (which also leaves the extension here), or in "
        "place with `python3 -m pip install 'setuptools>=77' numpy && python3 setup.py "
        "build_ext --inplace`; or run Python outside the checkout to import an installed "
        "gpuhost." % (folder, "%d.%d" % sys.version_info[:2], found),
        name="gpuhost._core", path=folder) from error


check()
