"""Timing with CUDA events: a host-to-device copy, a kernel and a device-to-host copy,
each between two events recorded on the same stream, read with elapsed_time().

    python examples/event_timing.py

Events measure time on the GPU, so the figures leave out Python's own overhead. Exits 1
if the kernel's result is wrong or a timing is not positive.
"""
import sys

import numpy as np

import gpuhost as cuda

SCALE = r"""
extern "C" __global__
void scale(double *x, double factor, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        x[i] *= factor;
    }
}
"""


def main():
    if not cuda.is_available():  # no GPU or no driver: nothing to show, and not a failure
        reason = (cuda.cuda_error() or "gpuhost.is_available() is False").split(". ")[0]
        print("event_timing.py: no usable CUDA device (%s), so nothing was run" % reason)
        return 0
    scale = cuda.Module(cuda.compile(SCALE)).get_function("scale")
    n = 1 << 23  # 64 MiB of float64
    host = cuda.pinned_array(n, np.float64)
    host[:] = np.random.default_rng(1).standard_normal(n)
    expected = host * 3.0

    stream = cuda.stream()
    marks = [cuda.event() for _ in range(4)]
    dev = cuda.device_array(n, np.float64, stream=stream)
    marks[0].record(stream)
    dev.copy_to_device(host, stream=stream)
    marks[1].record(stream)
    scale[(n + 255) // 256, 256, stream](dev, 3.0, n)
    marks[2].record(stream)
    out = dev.copy_to_host(stream=stream)
    marks[3].record(stream)
    marks[3].synchronize()

    failures = 0
    nbytes = host.nbytes
    for label, a, b, moved in (("host to device", 0, 1, nbytes), ("kernel", 1, 2, 2 * nbytes),
                               ("device to host", 2, 3, nbytes)):
        # numba's name; marks[a].elapsed_time(marks[b]) is the same
        ms = cuda.event_elapsed_time(marks[a], marks[b])
        failures += not ms > 0
        print("%-15s %8.3f ms  %7.1f GB/s" % (label, ms, moved / ms / 1e6))
    print("%-15s %8.3f ms" % ("total", marks[0].elapsed_time(marks[3])))
    if not np.array_equal(out, expected):
        print("FAILED: the kernel's result differs from NumPy's")
        failures += 1
    else:
        print("ok: x * 3 equals NumPy's")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
