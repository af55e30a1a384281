"""NVRTC compilation: gpuhost next to raw C NVRTC, cuda.core and CuPy, and the kernel cache.

Rows (ANCHORS.md): compile of a tiny kernel to a cubin with the cache off, next to raw C
making the same NVRTC calls with the same options (and the peers, for the same target);
a cache hit in memory; a cache hit on disk (the memory cache emptied before each call,
as in a fresh process).  NVRTC needs no GPU, so this runs anywhere; without one the
target is gpuhost's default (see gpuhost.compiler), and the peers run where importable.
    python3 benchmarks/compile.py [--json out.json]
"""
import argparse
import ctypes
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout
from _harness import Call, Native, interleaved, raw_nvrtc, table  # noqa: E402

import gpuhost  # noqa: E402
from gpuhost import _core, compiler  # noqa: E402

SRC = r"""
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}
"""


def cupy_case(target):
    """A callable compiling SRC with CuPy's NVRTC path (no cache), or None."""
    try:
        from cupy.cuda import compiler as cupy_compiler

        def run():
            cupy_compiler.compile_using_nvrtc(SRC, (), target.split("_")[1])

        run()
        return run
    except Exception as e:  # CuPy absent, or a version whose internals differ
        print("CuPy: not measured (%s: %s)" % (type(e).__name__, e))
        return None


def cuda_core_case(target):
    """A callable compiling SRC to a cubin with cuda.core's Program, or None."""
    try:
        try:
            from cuda.core import Program, ProgramOptions
        except ImportError:
            from cuda.core.experimental import Program, ProgramOptions
        options = ProgramOptions(arch=target)

        def run():
            prog = Program(SRC, "c++", options=options)
            prog.compile("cubin")
            if hasattr(prog, "close"):
                prog.close()

        run()
        return run
    except Exception as e:
        print("cuda.core: not measured (%s: %s)" % (type(e).__name__, e))
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    args = parser.parse_args()

    os.environ["GPUHOST_CACHE_DIR"] = tempfile.mkdtemp(prefix="gpuhost-bench-cache-")
    os.environ["GPUHOST_DISABLE_CACHE"] = "1"
    code = gpuhost.compile(SRC)
    print("NVRTC %d.%d (%s), target %s, options: %s"
          % (gpuhost.runtime.get_version() + (_core.nvrtc_library(), code.target,
                                              " ".join(code.options))))
    raw = raw_nvrtc()
    opts = (ctypes.c_char_p * len(code.options))(*[o.encode() for o in code.options])
    raw_case = Native(raw.bench_nvrtc_compile, _core.nvrtc_library().encode(), SRC.encode(),
                      len(code.options), opts)
    if raw_case(1) < 0:
        raise RuntimeError("raw C NVRTC compilation failed")
    rows = []

    # cold compile: gpuhost with its cache off, next to raw C and the peers
    cases = {"raw C": raw_case, "gpuhost": Call(gpuhost.compile, SRC)}
    for name, make in (("CuPy", cupy_case), ("cuda.core", cuda_core_case)):
        fn = make(code.target)
        if fn is not None:
            cases[name] = fn
    fig = interleaved(cases, 5)
    rows.append(("NVRTC compile, tiny kernel", fig, "<= 1.05 x raw C", lambda o, r: o <= 1.05 * r))

    # cache hits: memory, then disk with the memory cache emptied before each call
    del os.environ["GPUHOST_DISABLE_CACHE"]
    assert gpuhost.compile(SRC) is gpuhost.compile(SRC)

    def disk_hit():
        compiler.clear_cache()
        gpuhost.compile(SRC)

    fig = interleaved({"gpuhost": Call(gpuhost.compile, SRC)}, 20000)
    rows.append(("cache hit, memory", fig, "<= 5 µs", lambda o, r: o <= 5.0))
    fig = interleaved({"gpuhost": disk_hit}, 500)
    rows.append(("cache hit, disk", fig, "<= 1000 µs", lambda o, r: o <= 1000.0))

    table(rows, args.json)
    compiler.clear_cache(disk=True)
    os.rmdir(os.environ["GPUHOST_CACHE_DIR"])


if __name__ == "__main__":
    main()
