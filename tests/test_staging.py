"""Pageable copies through the pinned staging ring (csrc/memory/staging.c): exact at odd sizes
and misalignments, in chunks, both ways, from several threads; pinned memory is not
staged; a failing chunk is reported and leaves the ring usable.
"""
import os
import shutil
import subprocess
import threading

import numpy as np
import pytest

import gpuhost
from conftest import run_python
from gpuhost import CudaAPIError

rng = np.random.default_rng()
CHUNK = 4 << 20  # the ring's slots (csrc/memory/staging.c): 8 of 4 MiB
SLOTS, PART = 8, 256 << 10


def dma_count(n):
    """How many DMAs a staged copy of n bytes makes: chunks of at least two slots' worth,
    whole parts, at most a slot (csrc/memory/staging.c, staged_stream)."""
    chunk = -(-(n // (2 * SLOTS)) // PART) * PART
    chunk = min(max(chunk, PART), CHUNK)
    return -(-n // chunk)


THRESHOLD = 2 << 20  # both ways


def random_bytes(n):
    return rng.integers(0, 256, n, dtype=np.uint8)


@pytest.mark.parametrize("n, offset", [
    (THRESHOLD, 0),
    (THRESHOLD + 3, 1),
    (CHUNK * 5 + 4097, 7),   # more chunks than slots: every slot reused
    (CHUNK * 2, 3),
])
def test_round_trip_is_exact_at_odd_sizes_and_misalignments(n, offset):
    host = random_bytes(n + offset)[offset:]  # a pageable view starting off alignment
    dev = gpuhost.to_device(host)
    back = np.empty(n + 5, np.uint8)[5:]
    dev.copy_to_host(back)
    np.testing.assert_array_equal(back, host)
    fresh = dev.copy_to_host()
    np.testing.assert_array_equal(fresh, host)


def test_float_arrays_and_a_stream():
    host = rng.standard_normal(3 * CHUNK // 8 + 11)
    s = gpuhost.stream()
    dev = gpuhost.to_device(host, stream=s)
    out = dev.copy_to_host(stream=s)
    s.synchronize()
    np.testing.assert_array_equal(out, host)


def test_several_threads_at_once():
    hosts = [random_bytes(CHUNK * 2 + i * 999) for i in range(4)]
    results, errors = [None] * 4, []

    def work(i):
        try:
            dev = gpuhost.to_device(hosts[i])
            results[i] = dev.copy_to_host()
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for h, r in zip(hosts, results):
        np.testing.assert_array_equal(r, h)


@pytest.mark.fake
def test_pageable_copies_go_in_chunks_and_pinned_ones_do_not(fake):
    n = CHUNK * 3 + 5
    host = random_bytes(n)
    before = fake.calls("cuMemcpyHtoDAsync")
    dev = gpuhost.to_device(host)
    assert fake.calls("cuMemcpyHtoDAsync") - before == dma_count(n) == 17
    pinned = gpuhost.pinned_array(n, np.uint8)
    pinned[:] = host
    before_async, before_sync = fake.calls("cuMemcpyHtoDAsync"), fake.calls("cuMemcpyHtoD")
    dev.copy_to_device(pinned)
    assert fake.calls("cuMemcpyHtoDAsync") == before_async
    assert fake.calls("cuMemcpyHtoD") == before_sync + 1
    small = random_bytes(THRESHOLD - 1)
    before_async = fake.calls("cuMemcpyHtoDAsync")
    small_dev = gpuhost.to_device(small)
    assert fake.calls("cuMemcpyHtoDAsync") == before_async
    small_dev.copy_to_device(small)
    assert fake.calls("cuMemcpyHtoDAsync") == before_async
    at_threshold = gpuhost.to_device(random_bytes(THRESHOLD))  # staged from 2 MiB both ways
    assert fake.calls("cuMemcpyHtoDAsync") - before_async == dma_count(THRESHOLD)
    before_async = fake.calls("cuMemcpyDtoHAsync")
    at_threshold.copy_to_host()
    assert fake.calls("cuMemcpyDtoHAsync") - before_async == dma_count(THRESHOLD)
    before_async = fake.calls("cuMemcpyDtoHAsync")
    small_dev.copy_to_host()
    assert fake.calls("cuMemcpyDtoHAsync") == before_async
    np.testing.assert_array_equal(dev.copy_to_host(), host)


@pytest.mark.fake
def test_a_failing_chunk_raises_and_the_ring_still_works(fake):
    host = random_bytes(CHUNK * 3)
    dev = gpuhost.device_array(host.size, np.uint8)
    fake.fail("cuMemcpyHtoDAsync", 1, nth=2)  # CUDA_ERROR_INVALID_VALUE on the 2nd chunk
    with pytest.raises(CudaAPIError) as info:
        dev.copy_to_device(host)
    assert info.value.call == "cuMemcpyHtoDAsync"
    fake.clear_faults()
    dev.copy_to_device(host)
    np.testing.assert_array_equal(dev.copy_to_host(), host)
    fake.fail("cuMemcpyDtoHAsync", 1, nth=3)
    with pytest.raises(CudaAPIError) as info:
        dev.copy_to_host()
    assert info.value.call == "cuMemcpyDtoHAsync"
    fake.clear_faults()
    np.testing.assert_array_equal(dev.copy_to_host(), host)


def test_the_ring_survives_a_reset_of_the_device():
    # in a process of its own: a reset of the device is never done to the test process's
    proc = run_python(
        "import numpy as np, gpuhost\n"
        "rng = np.random.default_rng()\n"
        "for n in (%d, %d):\n"
        "    host = rng.integers(0, 256, n, dtype=np.uint8)\n"
        "    print(np.array_equal(gpuhost.to_device(host).copy_to_host(), host))\n"
        "    gpuhost.get_current_device().reset()\n"  # undoes the ring's registration
        % (CHUNK + 1, CHUNK * 2 + 3))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "True"]


@pytest.mark.fake
def test_a_failing_wait_stops_the_stream_of_parts(fake):
    # More chunks than slots, both ways: the driving thread waits for the slots' DMAs
    # while the workers stream through the parts; a failing wait stops them all, and the
    # ring works again after.
    host = random_bytes(CHUNK * 20 + 17)
    dev = gpuhost.device_array(host.size, np.uint8)
    for direction, nth in (("htod", 3), ("dtoh", 5)):
        fake.gate_close()  # the DMAs wait: workers and driver wait with them
        fake.fail("cuEventSynchronize", 999, nth=nth, times=1)
        threading.Timer(0.05, fake.gate_open).start()
        with pytest.raises(CudaAPIError) as info:
            if direction == "htod":
                dev.copy_to_device(host)
            else:
                dev.copy_to_host()
        assert info.value.call == "cuEventSynchronize"
        fake.clear_faults()
        fake.gate_open()
    dev.copy_to_device(host)
    np.testing.assert_array_equal(dev.copy_to_host(), host)


@pytest.mark.fake
def test_a_staged_copy_makes_a_bounded_number_of_driver_calls(fake):
    # One DMA, one record and at most one wait per chunk, however the threads are timed
    # (the fault sweep fails each call in turn: the count must not depend on timing).
    n = CHUNK * 20 + 17
    host = random_bytes(n)
    dev = gpuhost.device_array(n, np.uint8)
    chunks = dma_count(n)
    for copy in (lambda: dev.copy_to_device(host), lambda: dev.copy_to_host()):
        waits, records = fake.calls("cuEventSynchronize"), fake.calls("cuEventRecord")
        copy()
        assert fake.calls("cuEventRecord") - records == chunks
        assert fake.calls("cuEventSynchronize") - waits <= chunks + SLOTS


@pytest.mark.parametrize("chunks", [1, 8, 9, 33])
def test_streamed_copies_of_every_ring_shape_are_exact(chunks):
    for extra in (0, 4095):
        host = random_bytes(CHUNK * chunks + extra)
        dev = gpuhost.to_device(host)
        np.testing.assert_array_equal(dev.copy_to_host(), host)


def test_the_host_copy_probe_builds(tmp_path):
    # tools/host_copy_probe.c holds the measurements behind the ring's design; it is run by
    # hand on a GPU machine, and built here so that it keeps compiling.
    from gpuhost._libpaths import cuda_include_dirs

    include = cuda_include_dirs()
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None or not include or not os.path.isfile(os.path.join(include[0], "cuda.h")):
        pytest.skip("needs a C compiler and the CUDA headers")
    tool = os.path.join(os.path.dirname(__file__), "..", "tools", "host_copy_probe.c")
    proc = subprocess.run([cc, "-O2", "-Wall", "-Werror", "-pthread", "-c", "-o",
                           str(tmp_path / "probe.o"), tool, "-I", include[0]],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr  # warning-free, as CI builds
    assert (tmp_path / "probe.o").stat().st_size > 0
