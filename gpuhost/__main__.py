"""``python -m gpuhost``: the devices found, as numba.cuda.detect() prints them, and on a
machine with a GPU a short self-check of each device: its context and memory, then SAXPY
compiled with NVRTC, launched on a stream and compared with NumPy. ``--bench`` times the
key operations next to CuPy and numba-cuda; ``--help`` says so."""
import argparse
import sys

import numpy as np

import gpuhost

SAXPY = r"""
extern "C" __global__
void saxpy(float a, const float *x, const float *y, float *out, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = a * x[i] + y[i];
    }
}
"""


def saxpy_check():
    """SAXPY on the current device; what it found, as a phrase. Raises AssertionError if a
    value differs from NumPy's."""
    n = 1 << 20
    rng = np.random.default_rng()
    a = np.float32(rng.standard_normal())
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    # -fmad=false: no fused multiply-add, so the result matches NumPy's bit for bit
    try:
        module = gpuhost.Module(gpuhost.compile(SAXPY, options=("-fmad=false",)))
    except gpuhost.CudaAPIError as e:
        if e.name != "CUDA_ERROR_NOT_SUPPORTED":
            raise
        return "SAXPY not run: this driver cannot load modules (%s)" % e.name
    saxpy = module.get_function("saxpy")
    stream = gpuhost.stream()
    d_x, d_y = gpuhost.to_device(x, stream=stream), gpuhost.to_device(y, stream=stream)
    d_out = gpuhost.device_array(n, np.float32, stream=stream)
    saxpy[(n + 255) // 256, 256, stream](a, d_x, d_y, d_out, n)
    out = d_out.copy_to_host(stream=stream)
    stream.synchronize()
    bad = np.count_nonzero(out != a * x + y)
    assert bad == 0, "SAXPY: %d of %d values differ from NumPy's" % (bad, n)
    return "SAXPY exact"


def self_check(out):
    """Exercise the driver on every device; return the number of failures."""
    failures = 0
    for dev in gpuhost.list_devices():
        try:
            with dev:
                ctx = gpuhost.current_context()
                info = ctx.get_memory_info()
                ctx.synchronize()
                assert 0 < info.free <= info.total == dev.total_memory, info
                kernels = saxpy_check()
            print("self-check device %d: context %#x, %.1f of %.1f GiB free, %s: ok"
                  % (dev.id, ctx.handle, info.free / 2**30, info.total / 2**30, kernels), file=out)
        except Exception as e:  # report every failure, then go on to the next device
            failures += 1
            print("self-check device %d: FAILED: %s: %s" % (dev.id, type(e).__name__, e), file=out)
    return failures


def main(argv=None):
    """The command line: parse `argv` (sys.argv[1:] if None), print, return the exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m gpuhost",
        description="Show the CUDA devices gpuhost finds and, on a machine with a GPU, "
                    "self-check each (context, memory, an NVRTC-compiled SAXPY compared "
                    "with NumPy). Exits 1 if a check fails; a machine with no GPU is not "
                    "a failure.",
        epilog="Environment: GPUHOST_CUDA_DRIVER (path of libcuda), GPUHOST_NVRTC (path of "
               "libnvrtc), GPUHOST_CACHE_DIR (the kernel cache).")
    parser.add_argument("--bench", action="store_true",
                        help="instead, time kernel launch, event record, a small to_device "
                             "and 64 MiB pinned and pageable copies, next to CuPy and "
                             "numba-cuda where they import (a few seconds; needs a GPU)")
    parser.add_argument("--version", action="version",
                        version="gpuhost %s" % gpuhost.__version__)
    args = parser.parse_args(argv)
    out = sys.stdout
    if args.bench:
        if not gpuhost.is_available():
            gpuhost.detect(file=out)
            print("--bench needs a usable GPU", file=out)
            return 1
        from . import _bench

        return _bench.run(out)
    print("gpuhost %s" % gpuhost.__version__, file=out)
    try:
        print("NVRTC %d.%d: %s" % (gpuhost.runtime.get_version() + (gpuhost._core.nvrtc_library(),)),
              file=out)
    except gpuhost.NvrtcSupportError as e:
        print("NVRTC not found: %s" % e, file=out)
    if not gpuhost.detect(file=out):
        print("That is expected on a machine without an NVIDIA GPU: gpuhost imports and "
              "compiles kernels there, and gpuhost.is_available() is False. On a machine "
              "with one, the line above says what failed.", file=out)
        return 0  # no GPU here: nothing more to check, and that is not an error
    print("Driver: CUDA %d.%d, %s" % (gpuhost.driver_version() + (gpuhost._core.driver_library(),)),
          file=out)
    return 1 if self_check(out) else 0


if __name__ == "__main__":
    sys.exit(main())
