"""Loading libnvrtc at run time: version, search order, and a missing library."""
import os

import gpuhost
from gpuhost import _libpaths
from conftest import run_python


def test_runtime_get_version_is_nvrtcs_version():
    major, minor = gpuhost.runtime.get_version()
    assert isinstance(major, int) and isinstance(minor, int)
    assert major >= 12
    assert os.path.basename(gpuhost._core.nvrtc_library()).startswith("libnvrtc")


def test_missing_nvrtc_raises_support_error_listing_what_was_tried():
    code = (
        "import gpuhost\n"
        "try:\n"
        "    gpuhost.runtime.get_version()\n"
        "except gpuhost.NvrtcSupportError as e:\n"
        "    assert isinstance(e, ImportError) and isinstance(e, gpuhost.NvrtcError)\n"
        "    print(e)\n"
    )
    proc = run_python(code, {"GPUHOST_NVRTC": "/nonexistent/libnvrtc.so.13"})
    assert proc.returncode == 0, proc.stderr
    assert "libnvrtc was not found. Tried:" in proc.stdout
    assert "/nonexistent/libnvrtc.so.13: " in proc.stdout
    assert "Set GPUHOST_NVRTC" in proc.stdout


def test_explicit_variable_is_the_only_candidate(monkeypatch):
    monkeypatch.setenv("GPUHOST_NVRTC", "/opt/x/libnvrtc.so")
    assert _libpaths.nvrtc_candidates(13) == ["/opt/x/libnvrtc.so"]


def test_search_order_toolkit_then_wheel_then_loader(monkeypatch, tmp_path):
    home = tmp_path / "cuda"
    (home / "lib64").mkdir(parents=True)
    (home / "lib64" / "libnvrtc.so.13").write_bytes(b"")
    wheel = tmp_path / "site" / "nvidia" / "cu13" / "lib"
    wheel.mkdir(parents=True)
    (wheel / "libnvrtc.so.13").write_bytes(b"")
    monkeypatch.delenv("GPUHOST_NVRTC", raising=False)
    monkeypatch.setenv("CUDA_HOME", str(home))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    got = _libpaths.nvrtc_candidates(13)
    assert got[0] == str(home / "lib64" / "libnvrtc.so.13")
    assert str(wheel / "libnvrtc.so.13") in got
    assert got.index(str(wheel / "libnvrtc.so.13")) > 0
    assert got[-2:] == ["libnvrtc.so.13", "libnvrtc.so.12"]


def test_a_library_without_nvrtc_symbols_is_refused():
    proc = run_python(
        "import gpuhost\n"
        "try:\n"
        "    gpuhost.runtime.get_version()\n"
        "except gpuhost.NvrtcSupportError as e:\n"
        "    print(e)\n",
        {"GPUHOST_NVRTC": "libm.so.6"})
    assert proc.returncode == 0, proc.stderr
    assert "libm.so.6: has no nvrtcVersion" in proc.stdout
