"""docs/conf.py documents the checkout's gpuhost where its extension is built, else an
installed gpuhost of the same version, and otherwise stops saying how to get one (a fresh
clone's docs build failed with an ImportError blaming a circular import)."""
import importlib.machinery
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
# what conf.py settles on, printed after it ran
REPORT = "import gpuhost, sys; print(gpuhost.__file__)"


def _checkout(tmp_path, version="0.1.0", built=False):
    """A checkout with docs/conf.py and a gpuhost/ that says `version`, built or not."""
    checkout = tmp_path / "checkout"
    (checkout / "docs").mkdir(parents=True)
    (checkout / "gpuhost").mkdir()
    shutil.copy(os.path.join(ROOT, "docs", "conf.py"), str(checkout / "docs" / "conf.py"))
    (checkout / "gpuhost" / "_version.py").write_text('__version__ = "%s"\n' % version)
    (checkout / "gpuhost" / "__init__.py").write_text("from ._version import __version__\n")
    if built:  # what conf.py looks for: the extension's file, for this Python
        (checkout / "gpuhost" / ("_core" + SUFFIX)).write_bytes(b"")
    return checkout


def _installed(tmp_path, version):
    """A gpuhost installed elsewhere (a folder on PYTHONPATH) at `version`."""
    site = tmp_path / "site"
    (site / "gpuhost").mkdir(parents=True)
    (site / "gpuhost" / "__init__.py").write_text('__version__ = "%s"\n' % version)
    return site


def _conf(checkout, site=None):
    """Run conf.py as Sphinx does, from the checkout's root; (status, stdout, stderr).

    Without `site`, no gpuhost is installed: Python starts without its site-packages
    (-S), where the venv running this suite may well have installed one."""
    code = ("import runpy, sys; runpy.run_path('docs/conf.py'); " + REPORT)
    env = dict(os.environ, PYTHONPATH=str(site) if site else "")
    isolate = [] if site else ["-S"]
    proc = subprocess.run([sys.executable] + isolate + ["-c", code], cwd=str(checkout),
                          env=env, capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout.strip(), proc.stderr.strip()


def test_a_built_checkout_is_documented(tmp_path):
    checkout = _checkout(tmp_path, built=True)
    status, out, err = _conf(checkout, _installed(tmp_path, "0.0.9"))
    assert status == 0, err
    assert out == str(checkout / "gpuhost" / "__init__.py")


def test_an_unbuilt_checkout_documents_the_installed_gpuhost_of_its_version(tmp_path):
    site = _installed(tmp_path, "0.1.0")
    status, out, err = _conf(_checkout(tmp_path), site)
    assert status == 0, err
    assert out == str(site / "gpuhost" / "__init__.py")


def test_an_unbuilt_checkout_refuses_an_installed_gpuhost_of_another_version(tmp_path):
    site = _installed(tmp_path, "0.0.9")
    status, _, err = _conf(_checkout(tmp_path), site)
    assert status == 1
    assert err.splitlines()[-1] == (
        "RuntimeError: this checkout is gpuhost 0.1.0 but is not built, and the installed "
        "gpuhost (%s) is 0.0.9: build this one, python3 -m pip install '.[docs]'"
        % (site / "gpuhost"))


def test_with_neither_it_says_how_to_get_one(tmp_path):
    status, _, err = _conf(_checkout(tmp_path))
    assert status == 1
    last = err.splitlines()[-1]
    assert last.startswith(
        "RuntimeError: the documentation imports gpuhost, which is neither built in this "
        "checkout for this Python nor installed (No module named 'gpuhost'). Install it with "
        "the documentation's tools: python3 -m pip install '.[docs]'"), last
