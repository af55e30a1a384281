"""gpuhost/_shadow_check.py: the package index's other "gpuhost" project (a GPU sharing
agent with a gpuhost/ package of its own) installed into the same folder makes `import
gpuhost` fail with what to do, not half work."""
import os
import shutil
import subprocess
import sys

import pytest

import gpuhost
from gpuhost import _shadow_check

# The other project's gpuhost/ as its 0.1.0 wheel lays it out (file: first line).
OTHER_PROJECT = {
    "__init__.py": "",
    "agent.py": "import typer\n",
    "api.py": "from fastapi import FastAPI\n",
    "cli.py": "import typer\n",
    "gpu.py": "import pynvml\n",
    "job_manager.py": "import subprocess\n",
    "state.py": "import json\n",
    "tunnel.py": "from pyngrok import ngrok\n",
    os.path.join("client", "__init__.py"): "from .client import *\n",
    os.path.join("client", "client.py"): "import requests\n",
}


def _write(folder, files):
    for name, text in files.items():
        path = os.path.join(folder, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


def test_no_name_of_ours_is_taken_for_the_other_projects():
    ours = os.listdir(os.path.dirname(gpuhost.__file__))
    assert _shadow_check.foreign_files() == []
    assert not set(ours).intersection(_shadow_check.FOREIGN)


def test_every_module_of_the_other_project_is_recognised(tmp_path):
    _write(str(tmp_path), OTHER_PROJECT)
    assert _shadow_check.foreign_files(str(tmp_path)) == [
        "agent.py", "api.py", "cli.py", "client", "gpu.py", "job_manager.py", "state.py",
        "tunnel.py"]


def test_one_leftover_file_of_the_other_project_is_enough(tmp_path):
    _write(str(tmp_path), {"tunnel.py": "x = 1\n", "devices.py": "y = 2\n"})
    with pytest.raises(ImportError) as info:
        _shadow_check.check(str(tmp_path))
    assert info.value.name == "gpuhost" and info.value.path == str(tmp_path)
    assert "%s holds files of another project besides this library's: tunnel.py are" % tmp_path \
        in str(info.value)


def test_import_gpuhost_fails_clearly_when_the_other_project_is_mixed_in(tmp_path):
    # ours installed over the other project: our __init__.py, its modules beside ours
    site = tmp_path / "site"
    shutil.copytree(os.path.dirname(gpuhost.__file__), str(site / "gpuhost"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    _write(str(site / "gpuhost"), {k: v for k, v in OTHER_PROJECT.items() if k != "__init__.py"})
    proc = subprocess.run([sys.executable, "-c", "import gpuhost"], cwd=str(tmp_path),
                          env=dict(os.environ, PYTHONPATH=str(site)), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()
    assert "ImportError: gpuhost: %s holds files of another project" % (site / "gpuhost") in \
        proc.stderr, proc.stderr
    assert "agent.py, api.py, cli.py, client, gpu.py, job_manager.py, state.py, tunnel.py are " \
        "the package index's 'gpuhost'" in proc.stderr
    assert last[-2:] == ["    python -m pip uninstall -y gpuhost gpuhost-cuda",
                         "    python -m pip install .    (in a clone of gpuhost-cuda, until it "
                         "is on the package index)"]


def _unbuilt_checkout(tmp_path, extra=()):
    """A copy of the package as a fresh clone has it: no _core built (plus `extra` files)."""
    pkg = tmp_path / "checkout" / "gpuhost"
    shutil.copytree(os.path.dirname(gpuhost.__file__), str(pkg),
                    ignore=shutil.ignore_patterns("__pycache__", "_core.*"))
    for name in extra:
        (pkg / name).write_bytes(b"")
    return pkg


def test_an_unbuilt_checkout_says_so_instead_of_a_circular_import(tmp_path):
    pkg = _unbuilt_checkout(tmp_path)
    proc = subprocess.run([sys.executable, "-c", "import gpuhost"], cwd=str(pkg.parent),
                          env=dict(os.environ, PYTHONPATH=""), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last == (
        "ImportError: gpuhost: the C extension gpuhost._core is not built in %s for this "
        "Python (%d.%d). This folder is a source checkout (Python imports it before an "
        "installed gpuhost when run from the checkout's root): build it with `python3 -m pip "
        "install .` (which also leaves the extension here), or in place with `python3 -m pip "
        "install 'setuptools>=77' numpy && python3 setup.py build_ext --inplace`; or run "
        "Python outside the checkout to import an installed gpuhost." % ((pkg,) + sys.version_info[:2]))
    # Python's own error is kept as the cause; its guess at why varies with the version
    # ("circular import" up to 3.13, "consider renaming" from 3.14)
    assert "ImportError: cannot import name '_core' from" in proc.stderr
    assert "The above exception was the direct cause of the following exception" in proc.stderr


def test_an_extension_built_for_another_python_is_named(tmp_path):
    other = "_core.cpython-29-x86_64-linux-gnu.so"
    pkg = _unbuilt_checkout(tmp_path, [other])
    with pytest.raises(ImportError) as info:
        _shadow_check.unbuilt(ImportError("cannot import name '_core'"), str(pkg))
    assert info.value.name == "gpuhost._core" and info.value.path == str(pkg)
    assert "for this Python (%d.%d) (%s there is built for another Python). " \
        % (sys.version_info[:2] + (other,)) in str(info.value)
    assert str(info.value.__cause__) == "cannot import name '_core'"


def test_a_built_extension_that_fails_to_load_keeps_its_own_error(tmp_path):
    import importlib.machinery

    pkg = _unbuilt_checkout(tmp_path, ["_core" + importlib.machinery.EXTENSION_SUFFIXES[0]])
    assert _shadow_check.unbuilt(ImportError("undefined symbol: cuFoo"), str(pkg)) is None
    assert _shadow_check.unbuilt(ImportError("x"), str(tmp_path / "missing")) is None
