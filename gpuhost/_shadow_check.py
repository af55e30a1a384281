"""Refuses the import when the index's other "gpuhost" project shares this package's folder.

The package index's `gpuhost` (0.1.0, a self-hosted GPU sharing agent) is another project,
which ships a top-level gpuhost/ package too; this library is installed as gpuhost-cuda.
Installed into one site-packages, the two mix their files in one folder and each overwrites
the other's __init__.py, so that neither works. gpuhost/__init__.py imports this module
before anything else: with the other project's files beside ours, `import gpuhost` raises
ImportError saying what happened and how to repair it, instead of half working. (Where the
other project's __init__.py was installed last, or its gpuhost/ comes earlier on sys.path,
Python never runs ours: README says not to install both.)
"""
import os

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
            "    python -m pip install gpuhost-cuda"
            % (folder, ", ".join(found)), name="gpuhost", path=folder)


check()
