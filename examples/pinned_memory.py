"""Pinned (page-locked) host memory: why and how.

The DMA engines can only read page-locked memory; a copy from ordinary (pageable) memory
is staged through pinned buffers first. With pinned memory a copy is asynchronous (the
call returns at once, the stream carries on) and runs at the link's full speed. Three
ways to get it: pinned_array() allocates it, `with pinned(arr):` page-locks an existing
array for a block, mapped_array() is pinned memory the device can also read directly.

    python examples/pinned_memory.py

Prints the bandwidth of each kind of copy and exits 1 if any data comes back wrong.
"""
import sys
import time

import numpy as np

import gpuhost as cuda

NBYTES = 128 << 20


def gbs(copy, stream):
    """Median GB/s of copy() over 5 runs, timed with events on `stream`."""
    copy()
    stream.synchronize()
    rates = []
    for _ in range(5):
        start, end = cuda.event(), cuda.event()
        start.record(stream)
        copy()
        end.record(stream)
        end.synchronize()
        rates.append(NBYTES / start.elapsed_time(end) / 1e6)
    return float(np.median(rates))


def main():
    if not cuda.is_available():  # no GPU or no driver: nothing to show, and not a failure
        reason = (cuda.cuda_error() or "gpuhost.is_available() is False").split(". ")[0]
        print("pinned_memory.py: no usable CUDA device (%s), so nothing was run" % reason)
        return 0
    rng = np.random.default_rng(11)
    data = rng.integers(0, 255, NBYTES, dtype=np.uint8)
    stream = cuda.stream()
    dev = cuda.device_array(NBYTES, np.uint8)
    failures = 0

    pageable = data.copy()
    pinned = cuda.pinned_array(NBYTES, np.uint8)
    pinned[:] = data
    print("to the device, %d MiB:" % (NBYTES >> 20))
    print("  pageable numpy array  %6.1f GB/s" % gbs(
        lambda: dev.copy_to_device(pageable, stream=stream), stream))
    print("  pinned_array()        %6.1f GB/s" % gbs(
        lambda: dev.copy_to_device(pinned, stream=stream), stream))
    with cuda.pinned(pageable):  # page-locked for the block only
        print("  with pinned(array):   %6.1f GB/s" % gbs(
            lambda: dev.copy_to_device(pageable, stream=stream), stream))

    # Asynchronous: the copy call returns before the data has moved.
    back = cuda.pinned_array(NBYTES, np.uint8)
    t0 = time.perf_counter()
    dev.copy_to_host(back, stream=stream)
    queued_us = (time.perf_counter() - t0) * 1e6
    running = not stream.query()
    stream.synchronize()
    print("copy_to_host into pinned memory returned after %.0f µs%s" % (
        queued_us, ", with the copy still running" if running else ""))
    if not np.array_equal(back, data):
        print("FAILED: the data that came back differs")
        failures += 1

    # Mapped memory: the device addresses it directly (kernels read and write it over the
    # link); it is also an ordinary numpy array on the host.
    mapped = cuda.mapped_array(1024, np.int64)
    mapped[:] = np.arange(1024)
    on_device = cuda.as_cuda_array(mapped)  # a DeviceArray over the same memory, no copy
    dev_small = cuda.device_array(1024, np.int64)
    dev_small.copy_to_device(on_device)  # a device-to-device copy from host memory
    if not np.array_equal(dev_small.copy_to_host(), np.arange(1024)):
        print("FAILED: mapped memory copied wrong")
        failures += 1
    print("mapped_array: %d bytes at host address %#x, device address %#x" % (
        mapped.nbytes, mapped.ctypes.data, on_device.ptr))
    print("ok" if not failures else "FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
