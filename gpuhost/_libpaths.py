"""Where gpuhost looks for libnvrtc (design decision 1, in docs/development) and libnccl.

Order: GPUHOST_NVRTC (a file path; when set, the only one tried), then CUDA_HOME and
CUDA_PATH, /usr/local/cuda, the pip wheels (nvidia-cuda-nvrtc), then the loader's default.
The C loader (csrc/launch/nvrtc_api.c) calls nvrtc_candidates() once and tries each path in turn.
"""
import os
import sys


def _toolkit_dirs():
    roots = [os.environ.get(var) for var in ("CUDA_HOME", "CUDA_PATH")]
    roots.append("/usr/local/cuda")
    return [os.path.join(r, sub) for r in roots if r for sub in ("lib64", "lib")]


def _wheel_dirs(major):
    subdirs = [os.path.join("nvidia", "cu%d" % major, "lib"), os.path.join("nvidia", "cuda_nvrtc", "lib")]
    return [os.path.join(p, sub) for p in sys.path if p for sub in subdirs]


def nvrtc_candidates(major):
    """The libnvrtc paths to try, in order, for headers of CUDA `major`."""
    explicit = os.environ.get("GPUHOST_NVRTC")
    if explicit:
        return [explicit]
    names = ["libnvrtc.so.%d" % major, "libnvrtc.so.%d" % (major - 1)]
    out = []
    for d in _toolkit_dirs() + _wheel_dirs(major):
        for name in names:
            path = os.path.join(d, name)
            if path not in out and os.path.exists(path):
                out.append(path)
    out.extend(names)  # the dynamic loader's own search (LD_LIBRARY_PATH, ldconfig)
    return out


def nccl_candidates(major):
    """The libnccl paths to try, in order: GPUHOST_NCCL (a file path; when set, the only one
    tried), the nvidia-nccl-cu13 / -cu12 wheels on sys.path, CUDA_HOME / CUDA_PATH and
    /usr/local/cuda, then the loader's default (LD_LIBRARY_PATH, ldconfig)."""
    explicit = os.environ.get("GPUHOST_NCCL")
    if explicit:
        return [explicit]
    name = "libnccl.so.%d" % major
    wheels = [os.path.join(p, "nvidia", sub, "lib") for p in sys.path if p
              for sub in ("nccl", "cu13", "cu12")]
    out, seen = [], set()
    for d in wheels + _toolkit_dirs():
        path = os.path.join(d, name)
        if os.path.exists(path) and os.path.realpath(path) not in seen:
            seen.add(os.path.realpath(path))
            out.append(path)
    out.append(name)
    return out


def cuda_include_dirs(nvrtc_path=None):
    """The CUDA headers NVRTC programs include (cuda_fp16.h, cuda/std/...): [include] and,
    where it exists, [include/cccl] of one toolkit; [] when none is found.

    NVRTC 13 has no built-in search path for them.  The toolkit next to the loaded libnvrtc
    (`nvrtc_path`) comes first, so headers and compiler match; then CUDA_HOME, CUDA_PATH,
    /usr/local/cuda and the pip wheels, as for the library.
    """
    roots = []
    if nvrtc_path and os.path.isabs(nvrtc_path):
        roots.append(os.path.dirname(os.path.dirname(os.path.realpath(nvrtc_path))))
    roots += [os.path.dirname(d) for d in _toolkit_dirs()]
    major = None
    if nvrtc_path:
        suffix = os.path.basename(nvrtc_path).rpartition(".so.")[2]
        major = int(suffix) if suffix.isdigit() else None
    wheels = ["cu%d" % major] if major else []
    roots += [os.path.join(p, "nvidia", sub) for p in sys.path if p
              for sub in wheels + ["cuda_runtime", "cuda_nvrtc"]]
    for root in roots:
        inc = os.path.join(root, "include")
        if os.path.isfile(os.path.join(inc, "cuda_fp16.h")):
            cccl = os.path.join(inc, "cccl")
            return [inc, cccl] if os.path.isdir(cccl) else [inc]
    return []
