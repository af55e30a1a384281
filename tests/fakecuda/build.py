"""Build libfakecuda.so, the test double of libcuda, libfakenccl.so.2, the test double of
libnccl (tests/fakecuda/fakenccl/), and libfakenvml.so.1, of libnvidia-ml (fakenvml/), when
they are out of date.

build() is what tests/conftest.py calls (it builds all three, and returns the fake driver's
path; nccl_path() and nvml_path() name the others; nccl_218_path() builds a fourth, the fake
NCCL playing 2.18); `python3 tests/fakecuda/build.py [OUT_DIR]` builds and prints the
library's path.  The C compiler is $CC (default cc); $FAKECUDA_CFLAGS adds
flags (sanitizers); $FAKECUDA_BUILD_DIR moves the default output folder (a sanitizer
build beside the plain one).  The library is rebuilt when a source (tests/fakecuda/*.c, *.h,
csrc/base/cuda_api.h, csrc/base/cuda_errors.h) is newer than it or the compile command
changed; it is written under a temporary name and renamed into place, so concurrent test
processes never load a half-written file.
"""
import glob
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CSRC = os.path.join(ROOT, "csrc")
LIB_NAME = "libfakecuda.so"
NCCL_NAME = "libfakenccl.so.2"
NCCL_218_NAME = "libfakenccl-2.18.so.2"  # the same, playing NCCL 2.18 (no registration)
NCCL_SOURCES = sorted(glob.glob(os.path.join(HERE, "fakenccl", "*.c")))
NVML_NAME = "libfakenvml.so.1"  # the test double of libnvidia-ml (tests/fakecuda/fakenvml/)
NVML_SOURCES = [os.path.join(HERE, "fakenvml", "fakenvml.c")]
DLPACK_SOURCES = [os.path.join(HERE, "fakedlpack", "fakedlpack.c")]

# Frame pointers: fakecuda_take_fault_site() walks the library's own frames to its caller.
CFLAGS = ["-std=c11", "-O1", "-g", "-fPIC", "-shared", "-pthread", "-fvisibility=hidden",
          "-fno-omit-frame-pointer"]
WARNINGS = ["-Wall", "-Wextra", "-Wshadow", "-Wstrict-prototypes", "-Wmissing-prototypes",
            # an fk_ function whose type differs from its PFN_ type is an error, not a warning
            "-Werror=incompatible-pointer-types"]


class BuildError(RuntimeError):
    """The fake driver could not be built; the message says why."""


def cuda_include_dirs():
    """The folders holding the headers the fake includes, found as the extension's are
    (cuda_headers.py: a toolkit, else NVIDIA's pip wheels). Raises BuildError naming every
    place looked."""
    spec = importlib.util.spec_from_file_location("cuda_headers", os.path.join(ROOT, "cuda_headers.py"))
    cuda_headers = importlib.util.module_from_spec(spec)  # not on sys.path: a test run
    spec.loader.exec_module(cuda_headers)  # from an installed wheel must not import the checkout
    try:
        return cuda_headers.include_dirs(cuda_headers.FAKE_DRIVER_HEADERS)
    except cuda_headers.HeadersNotFound as e:
        raise BuildError("fakecuda: %s" % e) from None


def sources():
    """The C files compiled into the library."""
    return sorted(glob.glob(os.path.join(HERE, "*.c")))


def dependencies():
    """Every file whose change makes the library out of date."""
    return (sources() + sorted(glob.glob(os.path.join(HERE, "*.h")))
            + [os.path.join(CSRC, "base", "cuda_api.h"),
               os.path.join(CSRC, "base", "cuda_errors.h")])


def nccl_dependencies():
    """Every file whose change makes libfakenccl out of date."""
    return (NCCL_SOURCES + sorted(glob.glob(os.path.join(HERE, "fakenccl", "*.h")))
            + [os.path.join(CSRC, "nccl", "nccl_api.h")])


def compile_command(output, srcs=None, defines=()):
    """The compiler's argv writing the library (default: the fake driver) to `output`."""
    cc = shlex.split(os.environ.get("CC") or "cc")
    extra = shlex.split(os.environ.get("FAKECUDA_CFLAGS", ""))
    if srcs == DLPACK_SOURCES:  # a Python extension module: this interpreter's headers
        includes = ["-I", sysconfig.get_paths()["include"]]
        return (cc + CFLAGS + WARNINGS + includes + extra + srcs + ["-o", output])
    includes = [arg for d in cuda_include_dirs() for arg in ("-I", d)]
    return (cc + CFLAGS + WARNINGS + ["-I", CSRC, "-I", HERE] + includes
            + extra + list(defines) + (srcs or sources()) + ["-o", output, "-lm"])


def _up_to_date(lib, stamp, command, deps):
    try:
        built = os.stat(lib).st_mtime
        with open(stamp) as f:
            same_command = f.read() == command
    except OSError:
        return False
    return same_command and all(os.stat(dep).st_mtime <= built for dep in deps)


def _temp_name(path):
    """A name next to `path` no other process uses, for a file to rename onto it."""
    return os.path.join(os.path.dirname(path), ".%s.%d.%s.tmp"
                        % (os.path.basename(path), os.getpid(), uuid.uuid4().hex[:8]))


def _write_atomically(path, text):
    tmp = _temp_name(path)
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _out_dir(out_dir):
    return os.path.abspath(out_dir or os.environ.get("FAKECUDA_BUILD_DIR")
                           or os.path.join(HERE, "build"))


def nccl_path(out_dir=None):
    """Where build() puts libfakenccl.so.2."""
    return os.path.join(_out_dir(out_dir), NCCL_NAME)


def nvml_path(out_dir=None):
    """Where build() puts libfakenvml.so.1."""
    return os.path.join(_out_dir(out_dir), NVML_NAME)


def fakedlpack_module(out_dir=None):
    """The module _fakedlpack (tests/fakecuda/fakedlpack/: a producer of DLPack's C exchange
    API), built for this interpreter when out of date, imported from its file."""
    import importlib.machinery

    lib = os.path.join(_out_dir(out_dir), "_fakedlpack" + sysconfig.get_config_var("EXT_SUFFIX"))
    _build_one(lib, DLPACK_SOURCES, DLPACK_SOURCES)
    if "_fakedlpack" in sys.modules:
        return sys.modules["_fakedlpack"]
    loader = importlib.machinery.ExtensionFileLoader("_fakedlpack", lib)
    spec = importlib.util.spec_from_file_location("_fakedlpack", lib, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    sys.modules["_fakedlpack"] = module
    return module


def nccl_218_path(out_dir=None):
    """libfakenccl playing NCCL 2.18 (no ncclCommRegister, ncclMemAlloc), built when first
    asked for (the suite's tests of a libnccl without them)."""
    lib = os.path.join(_out_dir(out_dir), NCCL_218_NAME)
    return _build_one(lib, NCCL_SOURCES, nccl_dependencies(), ["-DFAKENCCL_VERSION=21806"])


def build(out_dir=None):
    """Compile the three libraries into out_dir (default $FAKECUDA_BUILD_DIR, else
    tests/fakecuda/build/) unless they are up to date; return the fake driver's absolute
    path.  Raises BuildError if one cannot be built."""
    out_dir = _out_dir(out_dir)
    _build_one(nccl_path(out_dir), NCCL_SOURCES, nccl_dependencies())
    _build_one(nvml_path(out_dir), NVML_SOURCES, NVML_SOURCES)
    return _build_one(os.path.join(out_dir, LIB_NAME), sources(), dependencies())


def _build_one(lib, srcs, deps, defines=()):
    stamp = lib + ".cmd"  # the command the library was built with
    command = shlex.join(compile_command(lib, srcs, defines))
    if _up_to_date(lib, stamp, command, deps):
        return lib
    os.makedirs(os.path.dirname(lib), exist_ok=True)
    tmp = _temp_name(lib)
    try:
        argv = compile_command(tmp, srcs, defines)
        try:
            proc = subprocess.run(argv, capture_output=True, text=True)
        except FileNotFoundError:
            raise BuildError("fakecuda: C compiler %r not found; set CC" % argv[0]) from None
        if proc.returncode != 0:
            raise BuildError("fakecuda: compiling failed:\n%s\n%s"
                             % (shlex.join(argv), proc.stderr))
        if proc.stderr:
            sys.stderr.write(proc.stderr)  # warnings: the build should have none
        os.replace(tmp, lib)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    _write_atomically(stamp, command)
    return lib


if __name__ == "__main__":
    try:
        print(build(sys.argv[1] if len(sys.argv) > 1 else None))
    except BuildError as e:
        sys.exit(str(e))
