"""A synchronous copy to the device has landed when it returns.

From pageable host memory the driver's cuMemcpyHtoD (and cuMemcpy2D) return once the bytes
are staged, and write them on the legacy default stream later: work on a non-blocking
stream, or on another device's stream, could read the old bytes (seen on the H200: a peer
copy on device 0's stream right after a synchronous copy to device 1 read stale data under
load).  gpuhost's synchronous copies wait for the write.  The fake driver stages as the
real one documents (tests/fakecuda/fk_copy.c), so its gate shows the wait."""
import threading

import numpy as np
import pytest

import gpuhost

RNG = np.random.default_rng()


def fresh(n=202):
    return RNG.integers(-2**31, 2**31, n, dtype=np.int32)


COPIES = {
    "copy_to_device": lambda d, h: d.copy_to_device(h),
    "setitem": lambda d, h: d.__setitem__(slice(None), h),
    "strided": lambda d, h: d[::2].copy_to_device(h[::2]),  # rows: cuMemcpy2D
}


@pytest.mark.parametrize("how", sorted(COPIES))
def test_a_synchronous_copy_returns_after_the_device_write_not_before(fake, how):
    d = gpuhost.to_device(np.zeros(202, np.int32))
    host = fresh()
    reader = gpuhost.stream(non_blocking=True)  # not ordered after the legacy stream
    done = threading.Event()
    errors = []

    def copy():
        try:
            COPIES[how](d, host)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
        done.set()

    fake.gate_close()  # the device's queue is held: a write queued on it waits
    worker = threading.Thread(target=copy)
    worker.start()
    try:
        assert not done.wait(0.2), "the copy returned before its bytes reached the device"
    finally:
        fake.gate_open()
    worker.join(30)
    assert done.is_set() and not errors, errors
    got = d.copy_to_host(stream=reader)  # into pageable memory: read at once on `reader`
    expect = np.zeros(202, np.int32)
    expect[::2 if how == "strided" else 1] = host[::2 if how == "strided" else 1]
    np.testing.assert_array_equal(got, expect)


@pytest.mark.gpu
def test_a_non_blocking_stream_reads_what_a_synchronous_copy_wrote():
    d = gpuhost.device_array(202, np.int32)
    reader = gpuhost.stream(non_blocking=True)
    for _ in range(300):
        host = fresh()
        d.copy_to_device(host)
        got = d.copy_to_host(stream=reader)
        reader.synchronize()
        np.testing.assert_array_equal(got, host)


@pytest.mark.gpu
@pytest.mark.gpus(2)
def test_another_devices_stream_reads_what_a_synchronous_copy_wrote():
    with gpuhost.gpus[1]:
        d1 = gpuhost.device_array(202, np.int32)
    d0, s0 = gpuhost.device_array(202, np.int32), gpuhost.stream()
    for _ in range(300):
        host = fresh()
        d1.copy_to_device(host)
        d0.copy_to_device(d1, stream=s0)  # a peer copy, ordered on device 0's stream only
        s0.synchronize()
        np.testing.assert_array_equal(d0.copy_to_host(), host)
