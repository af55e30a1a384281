"""Where the CUDA headers gpuhost builds against come from (setup.py and the fake driver's
tests/fakecuda/build.py both ask here). gpuhost links no CUDA library: it needs headers
only, and only at build time.

Search order, first hit wins for each header:
  1. a CUDA toolkit: $CUDA_HOME, $CUDA_PATH, the toolkit of the nvcc on PATH, /usr/local/cuda
     (a folder counts when its include/ holds cuda.h and cudaTypedefs.h);
  2. NVIDIA's pip wheels on sys.path, which pyproject.toml names as build requirements so
     that a machine with only a driver can build: CUDA 13's nvidia-cuda-runtime,
     nvidia-cuda-profiler-api, nvidia-cuda-nvrtc and nvidia-nvtx (nvidia/cu13/include),
     or CUDA 12's -cu12 ones (nvidia/cuda_runtime/include, nvidia/cuda_profiler_api/include,
     nvidia/cuda_nvrtc/include, nvidia/nvtx/include).
"""
import os
import shutil
import sys

# What csrc/ includes, and what the fake driver includes (it shares csrc/cuda_api.h).
EXTENSION_HEADERS = ("cuda.h", "cudaTypedefs.h", "cudaProfilerTypedefs.h", "cudaProfiler.h",
                     "nvrtc.h", "nvtx3/nvToolsExt.h")
FAKE_DRIVER_HEADERS = ("cuda.h", "cudaTypedefs.h", "cudaProfilerTypedefs.h", "cudaProfiler.h")
WHEEL_DIRS = ("cu13", "cuda_runtime", "cuda_profiler_api", "cuda_nvrtc", "nvtx")
DEFAULT_TOOLKIT = "/usr/local/cuda"


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


def include_dirs(headers=EXTENSION_HEADERS):
    """The include folders that hold every one of `headers`: the first toolkit found, then
    the wheels for whatever it lacks. Raises HeadersNotFound."""
    looked, dirs = [], []
    toolkit = None
    for inc, how in toolkit_candidates():
        looked.append("%s (%s)" % (inc, how))
        if all(os.path.isfile(os.path.join(inc, h)) for h in ("cuda.h", "cudaTypedefs.h")):
            toolkit = inc
            break
    wheels = wheel_candidates()
    looked += ["%s (%s)" % c for c in wheels]
    for header in headers:
        where = [d for d in ([toolkit] if toolkit else []) + [w for w, _ in wheels]
                 if os.path.isfile(os.path.join(d, header))]
        if not where:
            raise HeadersNotFound(
                "the CUDA header %s was not found. Looked in:\n  %s\nInstall a CUDA toolkit "
                "and set CUDA_HOME to its root, or install NVIDIA's header wheels: pip install "
                "'nvidia-cuda-runtime==13.*' 'nvidia-cuda-profiler-api==13.*' "
                "'nvidia-cuda-nvrtc==13.*' 'nvidia-nvtx==13.*'"
                % (header, "\n  ".join(looked) or "(nowhere)"))
        if where[0] not in dirs:
            dirs.append(where[0])
    return dirs


if __name__ == "__main__":
    print("\n".join(include_dirs()))
