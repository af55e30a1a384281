"""Where the CUDA headers gpuhost builds against come from (setup.py and the fake driver's
tests/fakecuda/build.py both ask here), and the build backend that fetches NVIDIA's header
wheels only when they are needed. gpuhost links no CUDA library: it needs headers only, and
only at build time; NVRTC it declares itself (csrc/launch/nvrtc_api.h).

Search order, first hit wins for each header:
  1. a CUDA toolkit: $CUDA_HOME, $CUDA_PATH, the toolkit of the nvcc on PATH, /usr/local/cuda
     (a folder counts when its include/ holds cuda.h and cudaTypedefs.h);
  2. NVIDIA's pip wheels on sys.path: CUDA 13's nvidia-cuda-runtime,
     nvidia-cuda-profiler-api and nvidia-nvtx (nvidia/cu13/include), or CUDA 12's -cu12 ones
     (nvidia/cuda_runtime/include, nvidia/cuda_profiler_api/include, nvidia/nvtx/include).

pyproject.toml names this module as the build backend: setuptools' own, except that a
wheel's build requirements are NumPy and, for the headers no toolkit here holds, the
wheels that hold them (build_requirements()). A build with a toolkit fetches nothing of CUDA.
"""
import os
import shutil
import sys

# What csrc/ includes, and what the fake driver includes (it shares csrc/base/cuda_api.h).
EXTENSION_HEADERS = ("cuda.h", "cudaTypedefs.h", "cudaProfilerTypedefs.h", "cudaProfiler.h",
                     "nvtx3/nvToolsExt.h")
FAKE_DRIVER_HEADERS = ("cuda.h", "cudaTypedefs.h", "cudaProfilerTypedefs.h", "cudaProfiler.h")
WHEEL_DIRS = ("cu13", "cuda_runtime", "cuda_profiler_api", "nvtx")
DEFAULT_TOOLKIT = "/usr/local/cuda"
# The CUDA 13 wheel that holds each header (the runtime's wheel has cuda.h too).
HEADER_WHEELS = {
    "cuda.h": "nvidia-cuda-runtime>=13,<14",
    "cudaTypedefs.h": "nvidia-cuda-runtime>=13,<14",
    "cudaProfilerTypedefs.h": "nvidia-cuda-runtime>=13,<14",
    "cudaProfiler.h": "nvidia-cuda-profiler-api>=13,<14",
    "nvtx3/nvToolsExt.h": "nvidia-nvtx>=13,<14",
}


class HeadersNotFound(RuntimeError):
    """A header was found nowhere; the message lists every place looked."""


def toolkit_candidates():
    """(include folder, how it was found) of each toolkit to try, in order."""
    out = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            out.append((os.path.join(os.environ[var], "include"), "$" + var))
    nvcc = shutil.which("nvcc")
    if nvcc:
        root = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
        out.append((os.path.join(root, "include"), "nvcc on PATH"))
    out.append((os.path.join(DEFAULT_TOOLKIT, "include"), "default toolkit"))
    return out


def wheel_candidates(paths=None):
    """(include folder, how it was found) of NVIDIA's header wheels installed on `paths`
    (default: sys.path)."""
    out = []
    for p in sys.path if paths is None else paths:
        for sub in WHEEL_DIRS:
            inc = os.path.join(p or ".", "nvidia", sub, "include")
            if os.path.isdir(inc) and inc not in [c[0] for c in out]:
                out.append((inc, "pip wheel (%s)" % sub))
    return out


def _locate(headers):
    """({header: the first include folder holding it, or None}, [every place looked])."""
    looked = []
    toolkit = None
    for inc, how in toolkit_candidates():
        looked.append("%s (%s)" % (inc, how))
        if all(os.path.isfile(os.path.join(inc, h)) for h in ("cuda.h", "cudaTypedefs.h")):
            toolkit = inc
            break
    wheels = wheel_candidates()
    looked += ["%s (%s)" % c for c in wheels]
    found = {}
    for header in headers:
        where = [d for d in ([toolkit] if toolkit else []) + [w for w, _ in wheels]
                 if os.path.isfile(os.path.join(d, header))]
        found[header] = where[0] if where else None
    return found, looked


def include_dirs(headers=EXTENSION_HEADERS):
    """The include folders that hold every one of `headers`: the first toolkit found, then
    the wheels for whatever it lacks. Raises HeadersNotFound."""
    found, looked = _locate(headers)
    dirs = []
    for header, where in found.items():
        if where is None:
            raise HeadersNotFound(
                "the CUDA header %s was not found. Looked in:\n  %s\nInstall a CUDA toolkit "
                "and set CUDA_HOME to its root, or install NVIDIA's header wheels: pip install "
                "'nvidia-cuda-runtime==13.*' 'nvidia-cuda-profiler-api==13.*' 'nvidia-nvtx==13.*'"
                % (header, "\n  ".join(looked) or "(nowhere)"))
        if where not in dirs:
            dirs.append(where)
    return dirs


def build_requirements():
    """What building the extension needs installed besides setuptools: NumPy, and NVIDIA's
    header wheels for just the headers found nowhere here (none where a toolkit is)."""
    found, _ = _locate(EXTENSION_HEADERS)
    wheels = sorted({HEADER_WHEELS[h] for h, where in found.items() if where is None})
    return ["numpy>=2.0"] + wheels


# ---- the PEP 517 build backend (pyproject.toml: build-backend = "cuda_headers") ----

def get_requires_for_build_wheel(config_settings=None):
    from setuptools import build_meta

    return build_meta.get_requires_for_build_wheel(config_settings) + build_requirements()


def get_requires_for_build_editable(config_settings=None):
    from setuptools import build_meta

    return build_meta.get_requires_for_build_editable(config_settings) + build_requirements()


_SETUPTOOLS_HOOKS = ("build_wheel", "build_sdist", "build_editable", "get_requires_for_build_sdist",
                     "prepare_metadata_for_build_wheel", "prepare_metadata_for_build_editable")


def __getattr__(name):
    """Every other hook is setuptools' (imported only by a build: the fake driver's build
    imports this module where setuptools may be absent)."""
    if name in _SETUPTOOLS_HOOKS:
        from setuptools import build_meta

        return getattr(build_meta, name)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


if __name__ == "__main__":
    print("\n".join(include_dirs()))
