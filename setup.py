"""Build gpuhost._core from csrc/ (module.c and the subsystems' folders below it).

The extension needs CUDA's headers (cuda.h, cudaTypedefs.h, the profiler's, NVTX; from a
toolkit or NVIDIA's pip wheels: cuda_headers.py) and NumPy's, and links against neither
libcuda nor libnvrtc: both are loaded at run time, and NVRTC is declared by csrc/launch/nvrtc_api.h.
Both sets of headers are looked up only when the extension is built, so an sdist needs
neither. Extra compiler flags come from GPUHOST_CFLAGS (CI adds -Werror, sanitizers), extra
linker flags from GPUHOST_LDFLAGS.
"""
import glob
import os
import shlex
import shutil
import sys

import setuptools

# pyproject.toml's license is an SPDX expression (PEP 639), which setuptools reads from 77 on;
# an older one stops with "project.license must be valid exactly by one definition". pip's
# builds fetch a new enough one; `python3 setup.py build_ext --inplace` runs with this one.
if int(setuptools.__version__.split(".")[0]) < 77:
    sys.exit("gpuhost: building needs setuptools 77 or newer, and this Python (%s) has "
             "setuptools %s: python3 -m pip install 'setuptools>=77'"
             % (sys.executable, setuptools.__version__))

from setuptools import Extension, setup  # noqa: E402
from setuptools.command.build_ext import build_ext  # noqa: E402


def cuda_include_dirs():
    """The folders holding the CUDA headers (cuda_headers.py says where it looks), or exit
    naming every place looked."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import cuda_headers

    try:
        return cuda_headers.include_dirs()
    except cuda_headers.HeadersNotFound as e:
        sys.exit("gpuhost: %s" % e)


WARNINGS = ["-Wall", "-Wextra", "-Wshadow", "-Wstrict-prototypes", "-Wmissing-prototypes"]

ext = Extension(
    "gpuhost._core",
    sources=sorted(glob.glob("csrc/*.c") + glob.glob("csrc/*/*.c")),
    depends=sorted(glob.glob("csrc/*/*.h")),
    # includes name a subsystem's folder ("base/base.h"); NumPy's and CUDA's: BuildExt
    include_dirs=["csrc"],
    define_macros=[
        ("NPY_NO_DEPRECATED_API", "NPY_1_23_API_VERSION"),
        ("NPY_TARGET_VERSION", "NPY_1_23_API_VERSION"),
    ],
    extra_compile_args=["-std=c11", "-fvisibility=hidden"] + WARNINGS
    + shlex.split(os.environ.get("GPUHOST_CFLAGS", "")),
    extra_link_args=shlex.split(os.environ.get("GPUHOST_LDFLAGS", "")),
    libraries=["dl", "pthread"],
)

class BuildExt(build_ext):
    """Build with NumPy's and CUDA's headers, then also leave a copy of the extension in the
    checkout's gpuhost/.

    `python -m gpuhost` and `python -m pytest` run from the checkout's root import the
    checkout's gpuhost/ (the current directory comes first on sys.path), so the freshly
    built extension must be there too.  GPUHOST_NO_INPLACE_COPY=1 turns this off.
    """

    def run(self):
        import numpy  # a build requirement of wheels only (cuda_headers.py's backend)

        includes = [numpy.get_include()] + cuda_include_dirs()
        for e in self.extensions:
            e.include_dirs += [d for d in includes if d not in e.include_dirs]
        super().run()
        if self.inplace or os.environ.get("GPUHOST_NO_INPLACE_COPY"):
            return
        here = os.path.dirname(os.path.abspath(__file__))
        for e in self.extensions:
            built = self.get_ext_fullpath(e.name)
            target = os.path.join(here, *e.name.split(".")[:-1], os.path.basename(built))
            if os.path.isdir(os.path.dirname(target)) and os.access(os.path.dirname(target), os.W_OK):
                tmp = target + ".tmp"
                shutil.copyfile(built, tmp)
                os.replace(tmp, target)


setup(ext_modules=[ext], cmdclass={"build_ext": BuildExt})
