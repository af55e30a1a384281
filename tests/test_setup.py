"""setup.py run directly (`python3 setup.py build_ext --inplace`, the development build)."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("version", ["65.5.0", "76.1.0"])
def test_an_old_setuptools_is_refused_saying_which_is_needed(tmp_path, version):
    # A Python whose setuptools is older than 77 (3.11's venv brings 65): the build stops
    # at once, naming the version it found and the command that installs a newer one,
    # instead of setuptools' "project.license must be valid exactly by one definition".
    fake = tmp_path / "setuptools"
    fake.mkdir()
    (fake / "__init__.py").write_text("__version__ = %r\n" % version)
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "setup.py"), "build_ext",
                           "--inplace"], cwd=str(tmp_path), capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(tmp_path)), timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        "gpuhost: building needs setuptools 77 or newer, and this Python (%s) has setuptools "
        "%s: python3 -m pip install 'setuptools>=77'" % (sys.executable, version))
    assert proc.stdout == ""
