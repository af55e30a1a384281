"""Overlap copies and kernels on two streams.

The input is cut into chunks; each chunk's host-to-device copy, kernel and device-to-host
copy go on one of two streams, alternating, so that while one stream's kernel runs the
other's copies move data (the copy engines and the SMs work at the same time). Pinned
host memory makes the copies asynchronous.

    python examples/two_streams.py

Prints the time of the overlapped run next to the same work on one stream, and exits 1
if any result differs from NumPy's.
"""
import sys

import numpy as np

import gpuhost as cuda

POLY = r"""
extern "C" __global__
void poly(const float *x, float *y, int n, int rounds)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i], acc = 0.0f;
        for (int r = 0; r < rounds; r++) {   /* enough work for the overlap to show */
            acc = acc * 0.5f + v;
        }
        y[i] = acc;
    }
}
"""


def run(kernel, h_in, h_out, streams, chunks, rounds):
    """Process h_in into h_out chunk by chunk, round-robin over `streams`; return ms."""
    n = h_in.size // chunks
    d_in = [cuda.device_array(n, np.float32) for _ in streams]
    d_out = [cuda.device_array(n, np.float32) for _ in streams]
    start, end = cuda.event(), cuda.event()
    start.record()
    for s in streams:
        s.wait_event(start)
    for c in range(chunks):
        k = c % len(streams)
        s, part = streams[k], slice(c * n, (c + 1) * n)
        d_in[k].copy_to_device(h_in[part], stream=s)
        kernel[(n + 255) // 256, 256, s](d_in[k], d_out[k], np.int32(n), np.int32(rounds))
        d_out[k].copy_to_host(h_out[part], stream=s)
    for s in streams:  # the default stream waits for the last work of every stream
        done = cuda.event(timing=False)
        done.record(s)
        done.wait(0)
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def reference(x, rounds):
    acc = np.zeros_like(x)
    for _ in range(rounds):
        acc = acc * np.float32(0.5) + x
    return acc


def main():
    if not cuda.is_available():  # no GPU or no driver: nothing to show, and not a failure
        reason = (cuda.cuda_error() or "gpuhost.is_available() is False").split(". ")[0]
        print("two_streams.py: no usable CUDA device (%s), so nothing was run" % reason)
        return 0
    kernel = cuda.Module(cuda.compile(POLY, options=("-fmad=false",))).get_function("poly")
    chunks, n, rounds = 8, 1 << 24, 64
    rng = np.random.default_rng(7)
    h_in = cuda.pinned_array(n, np.float32)
    h_in[:] = rng.standard_normal(n, dtype=np.float32)
    expected = reference(h_in, rounds)

    failures = 0
    for label, streams in (("one stream", [cuda.stream()]),
                           ("two streams", [cuda.stream(), cuda.stream()])):
        h_out = cuda.pinned_array(n, np.float32)
        h_out[:] = np.nan
        run(kernel, h_in, h_out, streams, chunks, rounds)  # warm-up
        ms = run(kernel, h_in, h_out, streams, chunks, rounds)
        bad = np.count_nonzero(h_out != expected)
        failures += bad != 0
        print("%-12s %8.3f ms for %d chunks of %d floats: %s" % (
            label, ms, chunks, n // chunks,
            "ok" if not bad else "FAILED, %d values differ from NumPy's" % bad))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
