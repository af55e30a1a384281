"""cuda_headers.py: where the build finds the CUDA headers (a toolkit first, then NVIDIA's
pip wheels), and which header wheels a build must fetch, checked over folders made here."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import cuda_headers  # noqa: E402


def _tree(root, headers):
    for h in headers:
        path = os.path.join(root, h)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "w").close()


@pytest.fixture
def clean(monkeypatch, tmp_path):
    """No toolkit and no wheels but what a test makes under tmp_path."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setattr(cuda_headers, "DEFAULT_TOOLKIT", str(tmp_path / "none"))
    monkeypatch.setattr(sys, "path", [str(tmp_path / "site")])
    return tmp_path


def test_a_toolkit_wins_and_the_wheels_fill_what_it_lacks(clean, monkeypatch):
    toolkit = clean / "cuda" / "include"
    _tree(toolkit, ("cuda.h", "cudaTypedefs.h", "cudaProfilerTypedefs.h", "cudaProfiler.h"))
    wheel = clean / "site" / "nvidia" / "cu13" / "include"
    _tree(wheel, cuda_headers.EXTENSION_HEADERS)
    monkeypatch.setenv("CUDA_HOME", str(clean / "cuda"))
    assert cuda_headers.include_dirs() == [str(toolkit), str(wheel)]
    assert cuda_headers.include_dirs(cuda_headers.FAKE_DRIVER_HEADERS) == [str(toolkit)]


def test_the_wheels_alone_are_enough(clean):
    wheel = clean / "site" / "nvidia" / "cu13" / "include"
    _tree(wheel, cuda_headers.EXTENSION_HEADERS)
    assert cuda_headers.include_dirs() == [str(wheel)]


def test_cuda_12_wheels_spread_over_three_folders(clean):
    site = clean / "site" / "nvidia"
    _tree(site / "cuda_runtime" / "include", ("cuda.h", "cudaTypedefs.h", "cudaProfilerTypedefs.h"))
    _tree(site / "cuda_profiler_api" / "include", ("cudaProfiler.h",))
    _tree(site / "nvtx" / "include", ("nvtx3/nvToolsExt.h",))
    assert cuda_headers.include_dirs() == [
        str(site / d / "include") for d in ("cuda_runtime", "cuda_profiler_api", "nvtx")]


def test_nvrtc_h_is_not_needed(clean):
    # csrc/launch/nvrtc_api.h declares what gpuhost calls of NVRTC: no 58 MB wheel for one header
    assert "nvrtc.h" not in cuda_headers.EXTENSION_HEADERS
    assert not any("nvrtc" in w for w in cuda_headers.HEADER_WHEELS.values())


def test_nothing_found_names_every_place_looked(clean, monkeypatch):
    monkeypatch.setenv("CUDA_PATH", str(clean / "cp"))
    _tree(clean / "site" / "nvidia" / "cu13" / "include", ("cuda.h",))
    with pytest.raises(cuda_headers.HeadersNotFound) as info:
        cuda_headers.include_dirs()
    msg = str(info.value)
    assert msg.startswith("the CUDA header cudaTypedefs.h was not found. Looked in:")
    for place in (str(clean / "cp" / "include") + " ($CUDA_PATH)",
                  str(clean / "none" / "include") + " (default toolkit)",
                  str(clean / "site" / "nvidia" / "cu13" / "include") + " (pip wheel (cu13))"):
        assert place in msg
    assert "pip install 'nvidia-cuda-runtime==13.*'" in msg


def test_a_toolkit_without_cudatypedefs_is_passed_over(clean, monkeypatch):
    _tree(clean / "old" / "include", ("cuda.h",))
    wheel = clean / "site" / "nvidia" / "cu13" / "include"
    _tree(wheel, cuda_headers.EXTENSION_HEADERS)
    monkeypatch.setenv("CUDA_HOME", str(clean / "old"))
    assert cuda_headers.include_dirs() == [str(wheel)]


def test_a_build_with_a_toolkit_fetches_nothing_of_cuda(clean, monkeypatch):
    _tree(clean / "cuda" / "include", cuda_headers.EXTENSION_HEADERS)
    monkeypatch.setenv("CUDA_HOME", str(clean / "cuda"))
    assert cuda_headers.build_requirements() == ["numpy>=2.0"]


def test_a_build_without_headers_fetches_the_three_header_wheels(clean):
    assert cuda_headers.build_requirements() == [
        "numpy>=2.0", "nvidia-cuda-profiler-api>=13,<14", "nvidia-cuda-runtime>=13,<14",
        "nvidia-nvtx>=13,<14"]


def test_a_toolkit_without_nvtx_fetches_only_the_nvtx_wheel(clean, monkeypatch):
    _tree(clean / "cuda" / "include", ("cuda.h", "cudaTypedefs.h", "cudaProfilerTypedefs.h",
                                       "cudaProfiler.h"))
    monkeypatch.setenv("CUDA_HOME", str(clean / "cuda"))
    assert cuda_headers.build_requirements() == ["numpy>=2.0", "nvidia-nvtx>=13,<14"]


def test_the_backend_adds_the_requirements_to_setuptools(monkeypatch):
    build_meta = pytest.importorskip("setuptools.build_meta")
    monkeypatch.setattr(build_meta, "get_requires_for_build_wheel", lambda cs=None: ["wheel"])
    assert cuda_headers.get_requires_for_build_wheel() == (
        ["wheel"] + cuda_headers.build_requirements())
    assert cuda_headers.build_sdist is build_meta.build_sdist
    with pytest.raises(AttributeError):
        cuda_headers.no_such_hook
