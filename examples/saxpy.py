"""SAXPY: out = a * x + y, compiled with NVRTC and launched with numba's syntax.

    python examples/saxpy.py

Prints the result's checksum and exits 1 if any value differs from NumPy's.
"""
import sys

import numpy as np

import gpuhost as cuda

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


def main():
    if not cuda.is_available():  # no GPU or no driver: nothing to show, and not a failure
        reason = (cuda.cuda_error() or "gpuhost.is_available() is False").split(". ")[0]
        print("saxpy.py: no usable CUDA device (%s), so nothing was run" % reason)
        return 0
    # -fmad=false: no fused multiply-add, so the GPU rounds as NumPy does, bit for bit
    ptx = cuda.compile_ptx_for_current_device(SAXPY, options=("-fmad=false",))
    saxpy = cuda.Module(ptx).get_function("saxpy")

    n = 1 << 24
    rng = np.random.default_rng(2026)
    a = np.float32(2.5)
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)

    stream = cuda.stream()
    d_x = cuda.to_device(x, stream=stream)
    d_y = cuda.to_device(y, stream=stream)
    d_out = cuda.device_array_like(d_x, stream=stream)
    threads = 256
    saxpy[(n + threads - 1) // threads, threads, stream](a, d_x, d_y, d_out, n)
    out = d_out.copy_to_host(stream=stream)
    stream.synchronize()

    expected = a * x + y
    bad = np.count_nonzero(out != expected)
    print("saxpy: %d elements on %s, sum %.6e" % (n, cuda.get_current_device().name,
                                                  float(out.sum(dtype=np.float64))))
    if bad:
        print("FAILED: %d values differ from NumPy's" % bad)
        return 1
    print("ok: every value equals NumPy's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
