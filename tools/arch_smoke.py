"""A smoke test of an installed gpuhost over the fake driver, for an interpreter too slow for
the whole suite: CI runs it with an arm64 Python under qemu-user, from the aarch64 wheel.

    GPUHOST_CUDA_DRIVER=/path/to/libfakecuda.so python tools/arch_smoke.py MACHINE

Checks that gpuhost is imported from an installed wheel (not a checkout) built for MACHINE,
finds the fake's devices, and copies random data both ways, small and through the staging
ring (2 MiB and more: the code whose stores differ between x86_64 and aarch64), slices,
streams and events. Prints one line; any failure raises.
"""
import os
import platform
import sys
import time

import numpy as np

import gpuhost


def main(machine):
    t0 = time.perf_counter()
    checks = []
    assert platform.machine() == machine, platform.machine()
    core = gpuhost._core.__file__
    assert not os.path.isdir(os.path.join(os.path.dirname(gpuhost.__file__), "..", "csrc")), core
    assert machine in os.path.basename(core), core
    checks.append(os.path.basename(core))

    assert gpuhost.is_available()
    n = len(gpuhost.gpus)
    assert n >= 1
    checks.append("%d fake devices" % n)

    rng = np.random.default_rng()
    small = rng.integers(-(2**31), 2**31, size=1000, dtype=np.int32)
    d = gpuhost.to_device(small)
    np.testing.assert_array_equal(d.copy_to_host(), small)
    np.testing.assert_array_equal(d[17:401].copy_to_host(), small[17:401])
    checks.append("small copies and a slice")

    big = rng.random(3 << 20)  # 24 MiB: staged both ways
    db = gpuhost.to_device(big)
    np.testing.assert_array_equal(db.copy_to_host(), big)
    checks.append("24 MiB staged both ways")

    stream = gpuhost.stream()
    start, end = gpuhost.event(), gpuhost.event()
    start.record(stream)
    out = np.empty_like(small)
    gpuhost.to_device(small[::-1].copy(), stream=stream).copy_to_host(out, stream=stream)
    end.record(stream)
    end.synchronize()
    stream.synchronize()
    np.testing.assert_array_equal(out, small[::-1])
    assert gpuhost.event_elapsed_time(start, end) >= 0
    checks.append("stream, events")

    print("%s smoke (Python %s, gpuhost from %s): %s: passed in %.1fs"
          % (machine, platform.python_version(), os.path.dirname(gpuhost.__file__),
             "; ".join(checks), time.perf_counter() - t0))


if __name__ == "__main__":
    main(sys.argv[1])
