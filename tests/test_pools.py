"""Memory pools and allocators (csrc/memory/pool.c, gpuhost/compat/pycuda/_pools.py,
gpuhost/compat/cupy/_pools.py and its neighbours, gpuhost/compat/numba/memory_manager.py):
the default caching pool and its modes, pycuda's pools, CuPy's
allocator API and numba's External Memory Management plugins.

Statistics are checked against a model of the size classes written here; stream safety,
out of memory and leaks through the fake driver's gate, fault injection and counters.  The
tests marked gpu check real memory on the GPU."""
import ctypes
import functools
import gc
import math
import os
import pickle
import threading
import weakref

import numpy as np
import pytest

import gpuhost
import gpuhost.memory as cmem
import gpuhost.memory_manager as emm
from conftest import run_python
from gpuhost import CudaOutOfMemoryError, _core
from gpuhost.tools import (
    DeviceMemoryPool,
    PageLockedAllocator,
    PageLockedMemoryPool,
    PooledDeviceAllocation,
    PooledHostAllocation,
    host_alloc_flags,
)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OOM = 2  # CUDA_ERROR_OUT_OF_MEMORY
rng = np.random.default_rng()


def class_size(n):
    """The bytes of the block a request of n > 0 bytes gets: 512-byte steps up to 4096,
    then 8 classes per doubling."""
    if n <= 4096:
        return 512 * math.ceil(n / 512)
    step = 1 << ((n - 1).bit_length() - 1 - 3)
    return step * math.ceil(n / step)


def fresh_bytes(n):
    return rng.integers(0, 256, n, dtype=np.uint8)


def fake_bytes(fake, kind):
    """fakecuda_bytes(kind): bytes of the live resources of memory `kind`."""
    fn = fake._lib.fakecuda_bytes
    fn.argtypes, fn.restype = [ctypes.c_char_p], ctypes.c_long
    return fn(kind.encode())


def settle(fake):
    """Let queued work finish (frees ordered on streams run there)."""
    gpuhost.synchronize()
    gc.collect()


def live_allocations(fake):
    """The fake's live allocations once earlier tests' garbage is collected: a collection
    that ran later, inside the code under test, would free theirs there and move the
    count (seen once in CI: a plain pool's allocation counted as none)."""
    gc.collect()
    return fake.live("allocations")


@pytest.fixture
def default_allocators():
    """Each test that changes the current allocator or plugin gets the defaults back."""
    yield
    cmem.set_allocator(cmem.get_default_memory_pool().malloc)
    cmem.set_pinned_memory_allocator(cmem.get_default_pinned_memory_pool().malloc)
    emm.set_memory_manager(None)


# ---- size classes and statistics ----

@pytest.mark.parametrize("n", [1, 8, 511, 512, 513, 4096, 4097, 5000, 8192, 8193, 1 << 20,
                               (1 << 20) + 1, 3 * (1 << 20) + 7, 64 << 20, (1 << 40) + 3])
def test_size_classes_follow_the_documented_rule(n):
    pool = _core.Pool("device", "cache")
    assert pool.alloc_size(pool.bin_number(n)) == class_size(n)
    assert class_size(n) - n <= max(511, n // 8)  # at most 12.5% above, past 4096


def test_size_class_arguments_are_checked():
    pool = _core.Pool("device", "cache")
    with pytest.raises(ValueError, match=r"^size must be from 0 to 2\*\*62, not -1$"):
        pool.bin_number(-1)
    with pytest.raises(ValueError, match=r"^bin must be from 0 to 407, not 408$"):
        pool.alloc_size(408)
    with pytest.raises(TypeError):
        pool.bin_number("8")


def test_statistics_are_exact_after_a_scripted_sequence():
    pool = _core.Pool("device", "cache")
    assert (pool.mode, pool.kind, pool.used_bytes, pool.free_bytes, pool.n_used_blocks,
            pool.n_free_blocks) == ("cache", "device", 0, 0, 0, 0)
    sizes = [1000, 5000, 1, 1 << 20, 3000]
    allocs = [pool.allocate(n) for n in sizes]
    assert [len(a) for a in allocs] == sizes and all(a.pool is pool for a in allocs)
    assert pool.used_bytes == sum(map(class_size, sizes)) and pool.n_used_blocks == 5
    assert pool.free_bytes == 0 and pool.total_bytes == pool.used_bytes
    ptr_5000 = allocs[1].ptr
    allocs[1].free()
    assert allocs[1].ptr == 0
    assert pool.free_bytes == class_size(5000) and pool.n_free_blocks == 1
    assert pool.used_bytes == sum(map(class_size, sizes)) - class_size(5000)
    again = pool.allocate(4700)  # same class: the held block, no new memory
    assert again.ptr == ptr_5000 and pool.n_free_blocks == 0 and pool.free_bytes == 0
    del allocs[3]  # dropping it returns it too
    assert pool.free_bytes == 1 << 20 and pool.n_free_blocks == 1
    assert pool.stats == {"used_bytes": pool.used_bytes, "used_blocks": 4,
                          "free_bytes": 1 << 20, "free_blocks": 1,
                          "total_bytes": pool.used_bytes + (1 << 20), "limit": 0,
                          "mode": "cache"}
    pool.free_all_blocks()
    assert pool.free_bytes == 0 and pool.n_free_blocks == 0 and pool.n_used_blocks == 4
    del allocs, again
    assert pool.n_used_blocks == 0 and pool.used_bytes == 0 and pool.n_free_blocks == 4
    zero = pool.allocate(0)
    assert zero.ptr == 0 and zero.size == 0 and pool.n_used_blocks == 0
    assert "cache mode: 0 bytes in use in 0 blocks" in repr(pool)


def test_pool_arguments_are_checked():
    with pytest.raises(ValueError, match=r"^kind must be 'device' or 'pinned', not 'host'$"):
        _core.Pool("host")
    with pytest.raises(ValueError, match=r"^mode must be 'cache', 'driver' or 'plain', not "
                                         r"'fast'$"):
        _core.Pool("device", "fast")
    with pytest.raises(ValueError, match=r"^pinned memory pools have no 'driver' mode$"):
        _core.Pool("pinned", "driver")
    with pytest.raises(ValueError, match=r"^allocator must be callable$"):
        _core.Pool(allocator=3)
    with pytest.raises(ValueError, match=r"^a 'driver' mode pool takes no allocator$"):
        _core.Pool("device", "driver", allocator=len)
    with pytest.raises(ValueError, match=r"^host_flags are for pinned pools$"):
        _core.Pool(host_flags=1)
    pool = _core.Pool("device", "cache")
    with pytest.raises(ValueError, match=r"^allocation size must not be negative, not -5$"):
        pool.allocate(-5)
    with pytest.raises(TypeError, match=r"^allocate\(\) size must be an int, not float$"):
        pool.allocate(1.5)
    with pytest.raises(TypeError, match=r"^allocate\(\) takes a size and an optional stream$"):
        pool.allocate()
    with pytest.raises(TypeError, match=r"^allocate\(\) got an unexpected keyword argument "
                                        r"'steam'$"):
        pool.allocate(8, steam=None)
    with pytest.raises(TypeError, match=r"^device_alloc\(\) size must be an int, not str$"):
        _core.device_alloc("8")


def test_a_limit_counts_held_blocks_gives_them_back_first_and_is_enforced():
    pool = _core.Pool("device", "cache")
    pool.limit = 8192
    assert pool.limit == 8192
    a = pool.allocate(4096)
    a.free()  # held: 4096 in the pool
    b = pool.allocate(6000)  # 4096 held + 6144 > 8192: the held block is freed first
    assert pool.n_free_blocks == 0 and pool.used_bytes == 6144
    with pytest.raises(CudaOutOfMemoryError) as info:
        pool.allocate(4096)
    e = info.value
    assert isinstance(e, MemoryError) and e.requested == 4096
    assert ("the pool (cache mode) has 6144 bytes in use in 1 blocks and holds 0 bytes in 0 "
            "free blocks, over its limit of 8192 bytes") in str(e)
    assert e.pool_stats["limit"] == 8192 and e.pool_stats["used_bytes"] == 6144
    pool.limit = None  # none
    assert pool.limit == 0 and pool.allocate(1 << 20).size == 1 << 20
    with pytest.raises(ValueError, match=r"^the limit must not be negative, not -1$"):
        pool.limit = -1
    with pytest.raises(AttributeError, match="cannot be deleted"):
        del pool.limit
    del b


def test_stop_holding_frees_held_blocks_and_every_later_one(fake):
    pool = _core.Pool("device", "cache")
    allocs = [pool.allocate(1000) for _ in range(3)]
    live = live_allocations(fake)
    allocs.pop().free()
    assert pool.n_free_blocks == 1 and pool.holding
    pool.stop_holding()
    assert not pool.holding and pool.n_free_blocks == 0
    assert fake.live("allocations") == live - 1
    del allocs
    assert pool.n_free_blocks == 0 and pool.n_used_blocks == 0
    assert fake.live("allocations") == live - 3


# ---- the default allocator ----

def test_device_arrays_allocate_from_the_default_pool_and_give_back_to_it():
    pool = _core.default_pool()
    assert pool is _core.default_pool(gpuhost.current_context()) and pool.mode == "cache"
    gc.collect()  # no earlier test's garbage comes back to the pool meanwhile
    pool.free_all_blocks()
    used = pool.used_bytes
    h = rng.standard_normal((37, 11))
    d = gpuhost.to_device(h)
    assert d.gpu_data.pool is pool and pool.used_bytes == used + class_size(h.nbytes)
    ptr = d.ptr
    like = gpuhost.device_array_like(h)
    assert like.gpu_data.pool is pool
    del d
    again = gpuhost.device_array(h.shape)  # the same class: the same block
    assert again.ptr == ptr
    again.copy_to_device(h)
    assert np.array_equal(again.copy_to_host(), h)
    with pytest.raises(TypeError, match=r"^default_pool\(\) takes a Context or None, not int$"):
        _core.default_pool(0)


@pytest.mark.gpus(2)
def test_every_device_has_its_own_default_pool(device0):
    with gpuhost.gpus[1]:
        d1 = gpuhost.device_array(100)
        pool1 = _core.default_pool()
    assert d1.gpu_data.pool is pool1 and pool1 is not _core.default_pool()
    assert pool1.context.device.id == 1


def test_a_block_goes_back_to_its_own_stream_and_is_reused_there_without_ordering(fake):
    pool = _core.Pool("device", "cache")
    s1 = gpuhost.stream()
    a = pool.allocate(3000, s1)
    ptr = a.ptr
    del a
    waits = fake.calls("cuStreamWaitEvent")
    b = pool.allocate(2900, stream=s1)
    assert b.ptr == ptr and fake.calls("cuStreamWaitEvent") == waits


def test_a_block_freed_on_a_busy_stream_reaches_another_only_after_that_work(fake):
    pool = _core.Pool("device", "cache")
    s1, s2 = gpuhost.stream(), gpuhost.stream()
    ran = []
    fake.gate_close()
    try:
        a = pool.allocate(1 << 16, s1)
        ptr = a.ptr
        s1.add_callback(lambda *args: ran.append("s1"))  # s1 busy until the gate opens
        del a
        waits = fake.calls("cuStreamWaitEvent")
        b = pool.allocate(1 << 16, s2)
        # handed over with s2 ordered after everything queued on s1 so far
        assert b.ptr == ptr
        assert fake.calls("cuStreamWaitEvent") == waits + 1
        assert not s2.query()  # s2 now waits for s1's work
        s2.add_callback(lambda *args: ran.append("s2"))
    finally:
        fake.gate_open()
    s2.synchronize()
    assert ran == ["s1", "s2"]


def test_a_block_freed_on_an_idle_stream_moves_to_another_without_waiting(fake):
    pool = _core.Pool("device", "cache")
    s1, s2 = gpuhost.stream(), gpuhost.stream()
    a = pool.allocate(1 << 16, s1)
    ptr = a.ptr
    del a
    s1.synchronize()
    waits = fake.calls("cuStreamWaitEvent")
    b = pool.allocate(1 << 16, s2)
    assert b.ptr == ptr and fake.calls("cuStreamWaitEvent") == waits and s2.query()


def test_free_all_blocks_of_one_stream_leaves_the_others(fake):
    pool = _core.Pool("device", "cache")
    s1, s2 = gpuhost.stream(), gpuhost.stream()
    a, b, c = pool.allocate(100, s1), pool.allocate(100, s2), pool.allocate(100)
    del a, b, c
    assert pool.n_free_blocks == 3
    pool.free_all_blocks(stream=s1)
    assert pool.n_free_blocks == 2
    pool.free_all_blocks(s2)
    assert pool.n_free_blocks == 1
    pool.free_all_blocks()
    assert pool.n_free_blocks == 0


@pytest.mark.gpus(2)
def test_a_pool_refuses_a_stream_of_another_device(device0):
    with gpuhost.gpus[1]:
        s = gpuhost.stream()
    pool = _core.Pool("device", "cache")
    with pytest.raises(gpuhost.CudaDriverError,
                       match=r"^the pool allocates on device 0 but the stream is device 1's$"):
        pool.allocate(8, s)


def test_eight_threads_allocating_and_freeing_at_once_never_share_memory():
    pool = _core.Pool("device", "cache")
    live = {}  # ptr -> (end, thread): every block in use
    lock = threading.Lock()
    errors = []

    def work(seed):
        r = np.random.default_rng(seed)
        gpuhost.select_device(pool.context.device.id)  # a new thread starts on device 0
        stream = gpuhost.stream() if seed % 2 else None
        mine = []
        try:
            for i in range(300):
                n = int(r.choice([8, 600, 5000, 70000, 1 << 20]))
                a = pool.allocate(n, stream)
                with lock:
                    for ptr, (end, who) in live.items():
                        if ptr < a.ptr + n and a.ptr < end:
                            errors.append("thread %d got [%#x, +%d), in use by %d"
                                          % (seed, a.ptr, n, who))
                    live[a.ptr] = (a.ptr + n, seed)
                mine.append(a)
                if i % 25 == 0:  # real data through some of the blocks
                    h = r.integers(0, 256, n, dtype=np.uint8)
                    d = _core.make_array(a, a.ptr, (n,), (1,), np.uint8)
                    d.copy_to_device(h)
                    if not np.array_equal(d.copy_to_host(), h):
                        errors.append("thread %d read back other data" % seed)
                while len(mine) > r.integers(0, 6):
                    old = mine.pop(int(r.integers(0, len(mine))))
                    with lock:
                        del live[old.ptr]
                    old.free()
            with lock:
                for a in mine:
                    del live[a.ptr]
            mine.clear()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append("thread %d: %r" % (seed, e))

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert pool.n_used_blocks == 0 and pool.used_bytes == 0
    assert pool.n_free_blocks > 0 and pool.free_bytes == pool.total_bytes > 0
    pool.free_all_blocks()
    assert pool.n_free_blocks == 0 and pool.free_bytes == 0


def test_eight_threads_of_device_arrays_round_trip_exactly():
    errors = []

    def work(seed):
        r = np.random.default_rng(seed)
        try:
            s = gpuhost.stream()
            for _ in range(60):
                h = r.standard_normal(int(r.integers(1, 3000)))
                d = gpuhost.to_device(h, stream=s if seed % 2 else 0)
                back = d.copy_to_host(stream=s if seed % 2 else 0)
                s.synchronize()
                if not np.array_equal(back, h):
                    errors.append(seed)
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_no_device_memory_leaks_once_the_pools_free_their_blocks(fake):
    settle(fake)
    pool = _core.default_pool()
    pool.free_all_blocks()
    before = fake.live("allocations"), fake_bytes(fake, "allocations")
    mine = _core.Pool("device", "cache")
    s = gpuhost.stream()
    arrays = [gpuhost.device_array(int(n), np.uint8, stream=s if n % 2 else 0)
              for n in rng.integers(1, 1 << 18, 40)]
    blocks = [mine.allocate(int(n), s) for n in rng.integers(1, 1 << 18, 40)]
    assert fake.live("allocations") == before[0] + 80
    del arrays, blocks
    assert fake.live("allocations") == before[0] + 80  # held by the pools
    pool.free_all_blocks()
    mine.free_all_blocks()
    assert (fake.live("allocations"), fake_bytes(fake, "allocations")) == before
    del mine  # a pool that dies frees what it holds
    p2 = _core.Pool("device", "cache")
    p2.allocate(1000).free()
    del p2
    assert fake.live("allocations") == before[0]


# ---- out of memory ----

def test_out_of_memory_gives_back_held_blocks_collects_garbage_and_retries(fake):
    pool = _core.default_pool()
    pool.free_all_blocks()
    gc.collect()

    class Cycle:
        pass

    cycle = Cycle()
    cycle.me = cycle
    cycle.array = gpuhost.device_array(3000, np.uint8)  # garbage only gc finds
    dead = weakref.ref(cycle)
    held = gpuhost.device_array(7000, np.uint8)
    del held  # a held block
    assert pool.n_free_blocks == 1
    gc.disable()
    try:
        del cycle
        assert dead() is not None
        live = live_allocations(fake)
        fake.fail("cuMemAlloc", OOM, times=1)
        d = gpuhost.device_array(1 << 20, np.uint8)  # fails once, then succeeds
    finally:
        gc.enable()
    assert dead() is None  # collected before the retry
    assert pool.n_free_blocks == 0 and pool.n_used_blocks >= 1
    assert fake.live("allocations") == live - 2 + 1
    h = fresh_bytes(1 << 20)
    d.copy_to_device(h)
    assert np.array_equal(d.copy_to_host(), h)


def test_out_of_memory_twice_raises_with_size_pool_statistics_and_device_memory(fake):
    pool = _core.Pool("device", "cache")
    keep = pool.allocate(10000)
    fake.fail("cuMemAlloc", OOM, times=2)
    with pytest.raises(CudaOutOfMemoryError) as info:
        pool.allocate(123457)
    e = info.value
    info_now = gpuhost.current_context().get_memory_info()
    assert e.requested == 123457 and e.call == "cuMemAlloc" and e.code == OOM
    assert str(e) == (
        "cuMemAlloc failed: [2] CUDA_ERROR_OUT_OF_MEMORY: out of memory allocating 123457 bytes "
        "of device memory on device %d (%d of %d bytes free); the pool (cache mode) has %d "
        "bytes in use in 1 blocks and holds 0 bytes in 0 free blocks"
        % (pool.context.device.id, info_now.free, info_now.total, class_size(10000)))
    assert e.pool_stats == dict(pool.stats)
    assert pool.n_used_blocks == 1 and pool.used_bytes == class_size(10000)
    assert pool.allocate(123457).size == 123457  # usable afterwards
    del keep


def test_out_of_memory_of_a_pinned_pool_names_pinned_memory(fake):
    pool = PageLockedMemoryPool()
    fake.fail("cuMemHostAlloc", OOM, times=2)
    with pytest.raises(CudaOutOfMemoryError, match=r"out of memory allocating 4000 bytes of "
                                                   r"pinned memory on device %d \("
                                                   % gpuhost.get_current_device().id) as info:
        pool.allocate(1000, np.float32)
    assert info.value.call == "cuMemHostAlloc" and pool.active_blocks == 0


def test_a_request_larger_than_the_device_is_not_retried(fake):
    """Giving held blocks back and collecting garbage cannot make room for more than the
    device has: no driver call, the cache kept, no gc pass."""
    pool = _core.Pool("device", "cache")
    pool.allocate(5000)  # freed at once: a held block
    assert pool.n_free_blocks == 1
    calls = fake.calls("cuMemAlloc")
    collections = gc.get_stats()[2]["collections"]
    too_big = gpuhost.gpus[0].total_memory + 4096
    with pytest.raises(CudaOutOfMemoryError) as info:
        pool.allocate(too_big)
    assert info.value.requested == too_big
    assert fake.calls("cuMemAlloc") == calls
    assert gc.get_stats()[2]["collections"] == collections
    assert pool.n_free_blocks == 1


def test_a_request_past_any_device_raises_out_of_memory_at_once(fake):
    calls = fake.calls("cuMemAlloc")
    with pytest.raises(CudaOutOfMemoryError) as info:
        _core.Pool("device", "cache").allocate((1 << 62) + 1)
    assert info.value.requested == (1 << 62) + 1 and fake.calls("cuMemAlloc") == calls


# ---- the other modes ----

def test_plain_mode_allocates_and_frees_every_time(fake):
    pool = _core.Pool("device", "plain")
    live = live_allocations(fake)
    a = pool.allocate(1000)
    assert a.size == 1000 and pool.used_bytes == 1000 and fake.live("allocations") == live + 1
    del a
    assert pool.n_free_blocks == 0 and fake.live("allocations") == live


def test_driver_mode_frees_on_the_stream_once_its_work_is_done(fake):
    pool = _core.Pool("device", "driver")
    assert pool.mode == "driver"
    s = gpuhost.stream()
    settle(fake)
    live = live_allocations(fake)
    frees = fake.calls("cuMemFreeAsync")
    a = pool.allocate(5000, s)
    assert a.size == 5000 and pool.used_bytes == 5000 and pool.n_free_blocks == 0
    h = fresh_bytes(5000)
    d = _core.make_array(a, a.ptr, (5000,), (1,), np.uint8, s)
    d.copy_to_device(h, stream=s)
    assert np.array_equal(d.copy_to_host(stream=s), h)
    s.synchronize()
    fake.gate_close()
    try:
        s.add_callback(lambda *args: None)
        del d, a
        assert fake.calls("cuMemFreeAsync") == frees + 1
        assert fake.live("allocations") == live + 1  # the free waits in the stream's queue
        assert pool.used_bytes == 0
    finally:
        fake.gate_open()
    s.synchronize()
    pool.free_all_blocks()  # trims the driver's pool
    assert fake.live("allocations") == live and pool.free_bytes == 0


def test_gpuhost_allocator_picks_the_default_pools_mode():
    code = ("import gpuhost, numpy as np\n"
            "from gpuhost import _core\n"
            "h = np.arange(1000.0)\n"
            "d = gpuhost.to_device(h)\n"
            "assert (d.copy_to_host() == h).all()\n"
            "print(_core.default_pool().mode, _core.Pool().mode, d.gpu_data.pool.mode)\n")
    for mode in ("cache", "driver", "plain"):
        proc = run_python(code, env={"GPUHOST_ALLOCATOR": mode})
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.split() == [mode] * 3
    proc = run_python(code, env={"GPUHOST_ALLOCATOR": "fastest"})
    assert proc.returncode != 0
    assert ("ValueError: GPUHOST_ALLOCATOR must be 'cache', 'driver' or 'plain', not 'fastest'"
            in proc.stderr)


# ---- pycuda's pools ----

def test_pycuda_device_memory_pool_statistics_and_controls(fake):
    pool = DeviceMemoryPool()
    a = pool.allocate(1000)
    assert isinstance(a, PooledDeviceAllocation) and len(a) == 1000 and int(a) == a.ptr != 0
    b = pool.allocate(70000)
    assert (pool.active_blocks, pool.active_bytes, pool.held_blocks, pool.managed_bytes) == \
        (2, class_size(1000) + class_size(70000), 0, class_size(1000) + class_size(70000))
    a.free()
    assert (pool.active_blocks, pool.held_blocks) == (1, 1)
    assert pool.managed_bytes == class_size(1000) + class_size(70000)
    assert pool.bin_number(1000) == pool.bin_number(600) != pool.bin_number(1025)
    assert pool.alloc_size(pool.bin_number(70000)) == class_size(70000)
    pool.free_held()
    assert (pool.held_blocks, pool.managed_bytes) == (0, class_size(70000))
    live = live_allocations(fake)
    pool.stop_holding()
    del b
    assert pool.held_blocks == 0 and pool.active_blocks == 0
    assert fake.live("allocations") == live - 1
    assert repr(pool) == "<DeviceMemoryPool 0 active, 0 held blocks>"


def test_pycuda_device_memory_pool_with_an_allocator_of_its_own():
    made = []

    def allocator(size):
        alloc = _core.mem_alloc(size)
        made.append(size)
        return alloc  # int() is its address, as pycuda's DeviceAllocation

    pool = DeviceMemoryPool(allocator)
    a = pool.allocate(3000)
    assert made == [class_size(3000)]
    h = fresh_bytes(3000)
    d = _core.make_array(a, int(a), (3000,), (1,), np.uint8)
    d.copy_to_device(h)
    assert np.array_equal(d.copy_to_host(), h)
    del d, a
    pool.allocate(2900)
    assert made == [class_size(3000)]

    bad = DeviceMemoryPool(lambda size: "memory")
    with pytest.raises(TypeError, match=r"^the pool's allocator must return an object with an "
                                        r"int \.ptr or int\(\), not str$"):
        bad.allocate(8)


def test_pycuda_page_locked_pool_gives_numpy_arrays_over_pooled_pinned_memory():
    pool = PageLockedMemoryPool()
    h = pool.allocate((30, 20), np.float32)
    assert isinstance(h, np.ndarray) and h.shape == (30, 20) and h.dtype == np.float32
    assert isinstance(h.base, PooledHostAllocation) and h.base.kind == "pinned"
    assert h.flags.c_contiguous and h.base.size == h.nbytes
    assert h.ctypes.data == h.base.host_ptr
    f = pool.allocate((3, 5), np.int16, order="F")
    assert f.flags.f_contiguous and not f.flags.c_contiguous
    assert (pool.active_blocks, pool.active_bytes) == (2, class_size(2400) + class_size(30))
    h[...] = rng.standard_normal(h.shape)
    d = gpuhost.to_device(h)
    assert np.array_equal(d.copy_to_host(), h)
    address = h.ctypes.data
    del h
    assert (pool.active_blocks, pool.held_blocks) == (1, 1)
    again = pool.allocate(600, np.float32)  # 2400 bytes: the same block
    assert again.ctypes.data == address
    empty = pool.allocate(0, np.float64)
    assert empty.shape == (0,) and pool.active_blocks == 2
    with pytest.raises(ValueError, match=r"^negative dimensions are not allowed: shape "
                                         r"\(-1, 2\)$"):
        pool.allocate((-1, 2), np.float32)
    with pytest.raises(ValueError, match=r"^order must be 'C' or 'F', not 'A'$"):
        pool.allocate(4, np.float32, order="A")
    with pytest.raises(TypeError, match="holds Python objects"):
        pool.allocate(4, object)
    pool.stop_holding()
    assert pool.held_blocks == 0


def test_pycuda_page_locked_allocator_flags():
    assert (host_alloc_flags.PORTABLE, host_alloc_flags.DEVICEMAP,
            host_alloc_flags.WRITECOMBINED) == (1, 2, 4)
    pool = PageLockedMemoryPool(PageLockedAllocator(host_alloc_flags.DEVICEMAP))
    m = pool.allocate(64, np.int32)
    assert m.base.kind == "mapped" and m.base.ptr != 0
    m[:] = np.arange(64)
    d = _core.make_array(m.base, m.base.ptr, (64,), (4,), np.int32)
    assert np.array_equal(d.copy_to_host(), np.arange(64))
    alloc = PageLockedAllocator(host_alloc_flags.PORTABLE)(100)
    assert alloc.kind == "pinned" and alloc.size == 100
    with pytest.raises(ValueError, match=r"^flags must combine host_alloc_flags \(PORTABLE, "
                                         r"DEVICEMAP, WRITECOMBINED\), not 8$"):
        PageLockedAllocator(8)


# ---- the garbage collector ----

class _Memory:
    """What a pool's allocator hands back: the address, the memory's owner, and whatever
    the test hangs on it (a path back to the pool, making a cycle)."""

    def __init__(self, alloc):
        self.alloc, self.ptr, self.back = alloc, alloc.ptr, None


def _memory_from(source, made, size):
    m = _Memory(source.allocate(size))
    made.append(m)
    return m


def test_a_pool_is_tracked_by_the_collector_only_with_an_allocator():
    assert gc.is_tracked(_core.Pool("device", "cache", allocator=_core.mem_alloc))
    assert gc.is_tracked(_core.Pool("pinned", "plain", allocator=_core.mem_alloc))
    assert not gc.is_tracked(_core.Pool("device", "cache"))
    assert not gc.is_tracked(_core.default_pool())
    assert gc.is_tracked(DeviceMemoryPool()._pool) is False  # pycuda's, no allocator given
    assert gc.is_tracked(DeviceMemoryPool(_core.mem_alloc)._pool)


def test_a_cycle_through_a_pools_allocator_is_freed_with_its_memory(fake):
    class Owner:  # the allocator is its bound method: owner -> pool -> allocator -> owner
        def __init__(self):
            self.source, self.made = _core.Pool("device", "plain"), []
            self.pool = _core.Pool("device", "cache", allocator=self.allocate)

        def allocate(self, size):
            return _memory_from(self.source, self.made, size)

    gc.collect()
    live = live_allocations(fake)
    owner = Owner()
    sizes = [int(n) for n in rng.integers(1, 1 << 15, size=6)]
    blocks = [owner.pool.allocate(n) for n in sizes]
    h = fresh_bytes(sizes[0])
    d = _core.make_array(blocks[0], blocks[0].ptr, (sizes[0],), (1,), np.uint8)
    d.copy_to_device(h)
    assert np.array_equal(d.copy_to_host(), h)  # the allocator's memory is used
    assert [m.alloc.size for m in owner.made] == [class_size(n) for n in sizes]
    assert fake.live("allocations") == live + len(sizes)
    del d, blocks  # held by the pool now, with the allocator's objects
    assert owner.pool.n_free_blocks == len(sizes)
    ref = weakref.ref(owner)
    del owner
    assert ref() is not None  # only the collector can free the cycle
    gc.collect()
    assert ref() is None and fake.live("allocations") == live


def test_a_cycle_through_a_held_blocks_memory_is_freed(fake):
    # The allocator refers to nothing of the pool; only a held block's memory object
    # leads back to it, so the collector must see the held blocks.
    gc.collect()
    live = live_allocations(fake)
    source, made = _core.Pool("device", "plain"), []
    pool = _core.Pool("device", "cache", allocator=functools.partial(_memory_from, source,
                                                                      made))
    n = int(rng.integers(1, 1 << 16))
    pool.allocate(n).close()
    assert pool.n_free_blocks == 1 and len(made) == 1
    made[0].back = {"pool": pool}
    probe = weakref.ref(made[0])
    del made[:], pool
    assert probe() is not None
    gc.collect()
    assert probe() is None and fake.live("allocations") == live
    assert source.used_bytes == 0


def test_a_pool_in_a_cycle_with_blocks_in_use_lives_until_they_are_freed(fake):
    class Owner:
        def __init__(self):
            self.pool = _core.Pool("device", "cache", allocator=self.allocate)

        def allocate(self, size):
            return _core.mem_alloc(size)

    owner = Owner()
    a = owner.pool.allocate(int(rng.integers(1, 4096)))
    ref = weakref.ref(owner)
    del owner
    gc.collect()
    assert ref() is not None and a.pool is ref().pool  # the Allocation holds its pool
    del a
    gc.collect()
    assert ref() is None


# ---- CuPy's allocator API ----

def test_cupy_memory_pool_statistics_and_pointers():
    pool = cmem.MemoryPool()
    p = pool.malloc(1000)
    assert isinstance(p, cmem.MemoryPointer) and p.ptr != 0 and p.mem.size == 1000
    here = gpuhost.get_current_device().id
    assert p.device_id == here and p.device.id == here and int(p) == p.ptr
    q = pool.malloc(5000)
    assert (pool.used_bytes(), pool.free_bytes(), pool.n_free_blocks()) == \
        (class_size(1000) + class_size(5000), 0, 0)
    ptr = q.ptr
    del q
    assert (pool.free_bytes(), pool.n_free_blocks()) == (class_size(5000), 1)
    assert pool.total_bytes() == class_size(1000) + class_size(5000)
    assert pool.malloc(4800).ptr == ptr
    pool.free_all_blocks()
    assert pool.n_free_blocks() == 0
    zero = pool.malloc(0)
    assert zero.ptr == 0
    with pytest.warns(DeprecationWarning, match="free_all_free is deprecated"):
        pool.free_all_free()


def test_cupy_set_limit_by_size_and_by_fraction_and_its_errors():
    pool = cmem.MemoryPool()
    pool.set_limit(size=4096)
    assert pool.get_limit() == 4096
    msg = (r"^Out of memory allocating 5,000 bytes \(allocated so far: 0 bytes, limit set to: "
           r"4,096 bytes\)\.$")
    with pytest.raises(cmem.OutOfMemoryError, match=msg) as info:
        pool.malloc(5000)
    assert isinstance(info.value, CudaOutOfMemoryError) and isinstance(info.value, MemoryError)
    assert "over its limit of 4096 bytes" in str(info.value.__cause__)  # gpuhost's details
    total = gpuhost.current_context().get_memory_info().total
    pool.set_limit(fraction=0.25)
    assert pool.get_limit() == int(0.25 * total)
    pool.set_limit()
    assert pool.get_limit() == 0
    with pytest.raises(ValueError, match=r"^memory limit size out of range: -1$"):
        pool.set_limit(size=-1)
    with pytest.raises(ValueError, match=r"^memory limit fraction out of range: 1\.5$"):
        pool.set_limit(fraction=1.5)
    with pytest.raises(ValueError, match=r"^size and fraction cannot be specified at one "
                                         r"time$"):
        pool.set_limit(size=1, fraction=0.5)


def test_cupy_memory_pointer_arithmetic_and_copies_match_numpy():
    n = 4096
    h = fresh_bytes(n)
    p = cmem.alloc(n)
    p.copy_from_host(h.ctypes.data, n)
    out = np.zeros(n, np.uint8)
    p.copy_to_host(ctypes.c_void_p(out.ctypes.data), n)
    assert np.array_equal(out, h)
    q = p + 100
    assert q.ptr == p.ptr + 100 and q.mem is p.mem and (100 + p).ptr == q.ptr
    assert (q - 40).ptr == p.ptr + 60
    part = np.zeros(50, np.uint8)
    q.copy_to_host(part.ctypes.data, 50)
    assert np.array_equal(part, h[100:150])
    r = cmem.alloc(n)
    r.copy_from_device(p, n)
    (r + 10).memset(0xAB, 20)
    expect = h.copy()
    expect[10:30] = 0xAB
    r.copy_to_host(out.ctypes.data, n)
    assert np.array_equal(out, expect)
    s = gpuhost.stream()
    w = cmem.alloc(n)
    w.copy_from_async(r, n, s)
    (w + 1000).memset_async(7, 3, stream=s)
    (w + 2000).copy_from_host_async(h[:8].ctypes.data, 8, s)
    w.copy_to_host_async(out.ctypes.data, n, s)
    s.synchronize()
    expect[1000:1003] = 7
    expect[2000:2008] = h[:8]
    assert np.array_equal(out, expect)
    w.copy_from(h.ctypes.data, 16)  # from the host when not a MemoryPointer
    w.copy_to_host(out.ctypes.data, 16)
    assert np.array_equal(out[:16], h[:16])
    w += 8
    assert w.ptr == w.mem.ptr + 8
    w -= 8
    assert w.ptr == w.mem.ptr
    with pytest.raises(TypeError, match=r"^expected an address \(int or ctypes\.c_void_p\), "
                                        r"not str$"):
        w.copy_from_host("memory", 8)
    null = cmem.MemoryPointer(cmem.Memory(0), 0)
    with pytest.raises(ValueError, match=r"^a null pointer cannot be offset$"):
        null + 1
    assert (null + 0).ptr == 0


def test_cupy_set_allocator_routes_device_arrays_and_alloc(default_allocators):
    assert cmem.get_allocator() == cmem.get_default_memory_pool().malloc
    pool = cmem.MemoryPool()
    cmem.set_allocator(pool.malloc)
    assert cmem.get_allocator() == pool.malloc
    h = rng.standard_normal(300)
    d = gpuhost.to_device(h)
    like = gpuhost.device_array_like(h)
    p = cmem.alloc(100)
    assert pool.used_bytes() == 2 * class_size(h.nbytes) + class_size(100)
    assert np.array_equal(d.copy_to_host(), h)
    del d, like, p
    assert pool.used_bytes() == 0 and pool.n_free_blocks() == 3

    calls = []

    def counting(size):
        calls.append(size)
        return cmem.Memory(size)  # an object with an int .ptr

    cmem.set_allocator(counting)
    e = gpuhost.device_array(10, np.int32)
    e.copy_to_device(np.arange(10, dtype=np.int32))
    assert calls == [40] and np.array_equal(e.copy_to_host(), np.arange(10))
    cmem.set_allocator(None)  # no pool
    f = gpuhost.device_array(10)
    assert isinstance(f.owner.mem, cmem.Memory) and cmem.alloc(8).mem.size == 8
    with pytest.raises(TypeError, match=r"^allocator must be callable, not int$"):
        cmem.set_allocator(3)
    cmem.set_allocator(cmem.get_default_memory_pool().malloc)
    assert gpuhost.device_array(10).gpu_data.pool is _core.default_pool()


@pytest.fixture
def array_allocator():
    """The C core's current allocator of device arrays, put back after the test."""
    before = _core.array_allocator()
    yield
    _core.set_array_allocator(before)


def test_the_core_owns_the_allocator_that_every_array_function_takes_memory_from(
        array_allocator):
    assert _core.array_allocator() is None  # the default pool: no Python call
    calls = []

    def counting(nbytes, stream):
        calls.append((nbytes, stream))
        m = cmem.Memory(nbytes)
        return m, m.ptr

    _core.set_array_allocator(counting)
    assert _core.array_allocator() is counting
    s = gpuhost.stream()
    h = rng.standard_normal((7, 5))
    for host, stream in ((h, 0), (np.asfortranarray(h), s), (h[:, ::2], None)):
        d = gpuhost.to_device(host, stream=stream)  # the C path, in every layout
        s.synchronize()
        assert isinstance(d.owner, cmem.Memory) and d.gpu_data.device_ctypes_pointer.value \
            == d.owner.ptr
        assert np.array_equal(d.copy_to_host(), host)
    assert calls == [(h.nbytes, None), (h.nbytes, s), (h[:, ::2].nbytes, None)]
    e = gpuhost.device_array((3, 4), np.int16, stream=s)
    assert calls[-1] == (24, s) and isinstance(e.owner, cmem.Memory)
    assert gpuhost.device_array(0).nbytes == 0 and len(calls) == 4  # no bytes: the pool's
    owner, ptr = _core.array_memory(100)
    assert isinstance(owner, cmem.Memory) and ptr == owner.ptr and calls[-1] == (100, None)
    _core.set_array_allocator(None)
    owner, ptr = _core.array_memory(100)
    assert owner.pool is _core.default_pool() and ptr == owner.ptr and len(calls) == 5
    assert _core.array_allocator() is None


def test_the_core_allocator_refuses_what_is_not_an_allocator_or_its_answer(array_allocator):
    with pytest.raises(TypeError, match=r"^the array allocator must be callable or None, "
                                        r"not int$"):
        _core.set_array_allocator(3)
    assert _core.array_allocator() is None

    def pair_less(nbytes, stream):
        return [object(), 1]

    _core.set_array_allocator(pair_less)
    for make in (lambda: gpuhost.device_array(8), lambda: gpuhost.to_device(np.ones(3))):
        with pytest.raises(TypeError, match=r"^the array allocator <function .*pair_less.*> "
                                            r"returned list, not an \(owner, address\) pair$"):
            make()

    def bad_address(nbytes, stream):
        return object(), -5

    _core.set_array_allocator(bad_address)
    with pytest.raises(TypeError, match=r"returned an address that is not an int from 0 to "
                                        r"2\*\*64-1: -5$"):
        gpuhost.to_device(np.ones(3))

    def failing(nbytes, stream):
        raise MemoryError("no room for %d bytes" % nbytes)

    _core.set_array_allocator(failing)
    with pytest.raises(MemoryError, match=r"^no room for 24 bytes$"):
        gpuhost.to_device(np.ones(3))
    with pytest.raises(ValueError, match=r"^nbytes must be >= 0, not -1$"):
        _core.array_memory(-1)
    with pytest.raises(TypeError, match=r"^array_memory\(\) takes 1 or 2 arguments \(0 given\)$"):
        _core.array_memory()


def test_a_thread_s_own_allocator_wins_over_the_module_s_in_that_thread_only(array_allocator):
    calls = {"module": [], "thread": []}

    def recording(name):
        def allocate(nbytes, stream):
            calls[name].append(nbytes)
            m = cmem.Memory(nbytes)
            return m, m.ptr
        return allocate

    module_fn, thread_fn = recording("module"), recording("thread")
    _core.set_array_allocator(module_fn)
    assert _core.thread_array_allocator() == ()
    _core.set_thread_array_allocator(thread_fn)
    try:
        assert _core.thread_array_allocator() == (thread_fn,)
        h = rng.standard_normal(9)
        d = gpuhost.to_device(h)  # C path
        e = gpuhost.device_array(5, np.int32)
        assert np.array_equal(d.copy_to_host(), h) and calls == {"module": [], "thread": [72, 20]}
        seen = {}

        def other_thread():
            seen["own"] = _core.thread_array_allocator()
            seen["owner"] = gpuhost.device_array(3, np.int64).owner

        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
        assert seen["own"] == () and isinstance(seen["owner"], cmem.Memory)
        assert calls == {"module": [24], "thread": [72, 20]}
        _core.set_thread_array_allocator(None)  # this thread: the default pool, no Python call
        assert _core.thread_array_allocator() == (None,)
        f = gpuhost.device_array(16, np.uint8)
        assert f.owner.pool is _core.default_pool() and len(calls["thread"]) == 2
        assert isinstance(e.owner, cmem.Memory)
        assert e.owner.ptr == e.gpu_data.device_ctypes_pointer.value
    finally:
        _core.set_thread_array_allocator()
    assert _core.thread_array_allocator() == ()
    gpuhost.device_array(2, np.int8)  # the module's again
    assert calls["module"] == [24, 2]


def test_a_thread_s_allocator_left_by_an_earlier_import_of_the_core_is_dropped():
    """gpuhost._core imported again is a new module with its own state: this thread's
    allocator set through the first is the second's to replace, and its reference goes."""
    import importlib
    import sys

    def allocate(nbytes, stream):
        raise AssertionError("not called")

    first = sys.modules.pop("gpuhost._core")
    try:
        second = importlib.import_module("gpuhost._core")
        assert second is not first
        first.set_thread_array_allocator(allocate)
        held = sys.getrefcount(allocate)
        assert first.thread_array_allocator() == (allocate,)
        assert second.thread_array_allocator() == ()
        second.set_thread_array_allocator(None)
        assert sys.getrefcount(allocate) == held - 1
        assert second.thread_array_allocator() == (None,) and first.thread_array_allocator() == ()
        first.set_thread_array_allocator()  # this thread's own, whoever set it, goes
        assert second.thread_array_allocator() == () == first.thread_array_allocator()
    finally:
        first.set_thread_array_allocator()
        sys.modules["gpuhost._core"] = first
        gpuhost._core = first  # the import set the package's attribute too


def test_set_thread_array_allocator_refuses_what_is_not_an_allocator():
    with pytest.raises(TypeError, match=r"^the array allocator must be callable or None, "
                                        r"not str$"):
        _core.set_thread_array_allocator("pool")
    with pytest.raises(TypeError, match=r"^set_thread_array_allocator\(\) takes at most 1 "
                                        r"argument \(2 given\)$"):
        _core.set_thread_array_allocator(None, None)
    assert _core.thread_array_allocator() == ()


def test_cupy_default_memory_pool_counts_device_arrays():
    pool = cmem.get_default_memory_pool()
    gc.collect()
    pool.free_all_blocks()
    used = pool.used_bytes()
    d = gpuhost.device_array(1 << 16, np.uint8)
    assert pool.used_bytes() == used + (1 << 16)
    del d
    assert pool.free_bytes() == 1 << 16


def test_cupy_memory_kinds():
    here = gpuhost.get_current_device().id
    m = cmem.Memory(100)
    assert m.size == 100 and m.ptr != 0 and m.device_id == here and int(m) == m.ptr
    managed = cmem.malloc_managed(64)
    assert managed.mem.size == 64 and managed.ptr != 0
    asynchronous = cmem.malloc_async(5000, gpuhost.stream())
    assert asynchronous.mem.size == 5000 and asynchronous.ptr != 0
    owner = object()
    u = cmem.UnownedMemory(m.ptr, 100, owner)
    assert u.ptr == m.ptr and u.device_id == here and u._owner is owner
    with pytest.raises(RuntimeError, match=r"^UnownedMemory requires an explicit device ID "
                                           r"for a null pointer\.$"):
        cmem.UnownedMemory(0, 0, None)


def test_cupy_pinned_memory_pool(default_allocators):
    pool = cmem.PinnedMemoryPool()
    p = pool.malloc(1000)
    assert isinstance(p, cmem.PinnedMemoryPointer) and len(p) == 1000
    view = np.asarray(p)
    assert view.shape == (1000,) and view.ctypes.data == p.ptr
    view[:] = fresh_bytes(1000)
    assert np.array_equal(np.asarray(p + 10), view[10:])
    address = p.ptr
    del p, view
    assert pool.n_free_blocks() == 1
    assert pool.malloc(900).ptr == address
    pool.free_all_blocks()
    assert pool.n_free_blocks() == 0
    cmem.set_pinned_memory_allocator(pool.malloc)
    q = cmem.alloc_pinned_memory(100)
    assert q.mem.pool is pool._pool()
    cmem.set_pinned_memory_allocator(None)
    assert isinstance(cmem.alloc_pinned_memory(100).mem, cmem.PinnedMemory)


# ---- numba's EMM plugins ----

@pytest.fixture
def plugin(default_allocators):
    import emm_plugin

    emm_plugin.EVENTS.clear()
    emm.set_memory_manager(emm_plugin.RecordingManager)
    yield emm_plugin
    emm.set_memory_manager(None)


def test_a_plugin_allocates_every_device_array(plugin):
    h = rng.standard_normal((20, 7))
    d = gpuhost.to_device(h)
    like = gpuhost.device_array_like(h)
    plain = gpuhost.device_array(5, np.int8)
    here = gpuhost.get_current_device().id
    assert plugin.EVENTS == [("initialize", here), ("memalloc", h.nbytes),
                             ("memalloc", h.nbytes), ("memalloc", 5)]
    assert isinstance(d.owner, emm.MemoryPointer)
    assert np.array_equal(d.copy_to_host(), h)
    like.copy_to_device(d)
    assert np.array_equal(like.copy_to_host(), h)
    del d, like, plain
    gc.collect()
    assert sorted(e for e in plugin.EVENTS if e[0] == "free") == \
        [("free", 5), ("free", h.nbytes), ("free", h.nbytes)]
    mgr = emm.get_memory_manager()
    assert isinstance(mgr, plugin.RecordingManager) and mgr.context is gpuhost.current_context()
    assert emm.get_memory_manager() is mgr


@pytest.mark.gpus(2)
def test_a_plugin_has_an_instance_per_context(plugin, device0):
    with gpuhost.gpus[1]:
        gpuhost.device_array(10)
        mgr1 = emm.get_memory_manager()
    gpuhost.device_array(10)
    assert ("initialize", 1) in plugin.EVENTS and ("initialize", 0) in plugin.EVENTS
    assert mgr1.context.device.id == 1 and emm.get_memory_manager() is not mgr1


def test_defer_cleanup_enters_the_plugins(plugin):
    gpuhost.device_array(4)
    with gpuhost.defer_cleanup():
        pass
    assert plugin.EVENTS[-1] == ("defer_cleanup",)


def test_a_plugins_memory_info_and_host_side(plugin, fake):
    mgr = emm.get_memory_manager()
    info = mgr.get_memory_info()
    assert info == tuple(gpuhost.current_context().get_memory_info())
    assert info.free <= info.total
    gc.collect()
    hosts, regs = fake.live("host_allocations"), fake.live("registrations")
    pinned = mgr.memhostalloc(4096)
    assert isinstance(pinned, emm.PinnedMemory) and pinned.size == 4096
    mapped = mgr.memhostalloc(256, mapped=True)
    assert mapped.size == 256 and mapped.device_pointer_value == mapped.host_pointer.value
    buf = np.zeros(512, np.uint8)
    pin = mgr.mempin(buf, buf.ctypes.data, buf.nbytes)
    assert pin.size == 512 and pin.owned is buf
    managed = mgr.memallocmanaged(1024)
    assert managed.size == 1024 and managed.device_pointer_value
    assert fake.live("host_allocations") == hosts + 2 and fake.live("registrations") == regs + 1
    assert len(mgr.allocations) == 2  # the mapped and the managed memory, as numba keeps
    del pinned, pin  # freed, unregistered when they die
    assert fake.live("host_allocations") == hosts + 1 and fake.live("registrations") == regs
    mgr.reset()  # frees the mapped and managed memory it keeps
    assert mgr.allocations == {} and fake.live("host_allocations") == hosts
    with pytest.raises(ReferenceError):
        mapped.size  # noqa: B018 - its memory is gone
    mapped2 = mgr.memhostalloc(64, mapped=True)
    del mapped2  # the last OwnedPointer: freed at once
    assert mgr.allocations == {} and fake.live("host_allocations") == hosts


@pytest.mark.fake  # a real driver opens IPC handles only in another process
def test_a_plugins_ipc_handle_opens_elsewhere_as_the_same_memory(plugin):
    mgr = emm.get_memory_manager()
    ptr = mgr.memalloc(4096)
    h = fresh_bytes(4096)
    _core.make_array(ptr, ptr.device_pointer_value, (4096,), (1,), np.uint8).copy_to_device(h)
    view = ptr.view(1024)
    handle = mgr.get_ipc_handle(view)
    assert handle.size == 3072 and handle.offset == 1024 and handle.base is view
    with pytest.raises(ValueError, match=r"^opening IpcHandle from original process$"):
        handle.open()
    other = pickle.loads(pickle.dumps(handle))
    opened = other.open(gpuhost.current_context())
    back = _core.make_array(opened, opened.device_pointer_value, (3072,), (1,), np.uint8)
    assert np.array_equal(back.copy_to_host(), h[1024:])
    arr = pickle.loads(pickle.dumps(handle)).open_array(gpuhost.current_context(), (3072,),
                                                         np.uint8)
    assert np.array_equal(arr.copy_to_host(), h[1024:])
    other.close()
    with pytest.raises(ValueError, match=r"^IpcHandle not opened$"):
        other.close()


def test_close_resets_every_plugin_instance():
    proc = run_python("import gpuhost, emm_plugin\n"
                      "gpuhost.set_memory_manager(emm_plugin.RecordingManager)\n"
                      "d = gpuhost.device_array(100)\n"
                      "del d\n"
                      "gpuhost.close()\n"
                      "gpuhost.device_array(8)\n"
                      "print(emm_plugin.EVENTS)\n",
                      env={"PYTHONPATH": HERE + os.pathsep + os.environ.get("PYTHONPATH", "")})
    assert proc.returncode == 0, proc.stderr
    # a new context after close(): a new instance, initialized again
    assert proc.stdout.strip() == str([("initialize", 0), ("memalloc", 800), ("free", 800),
                                       ("reset",), ("initialize", 0), ("memalloc", 64),
                                       ("free", 64)])


def test_set_memory_manager_none_goes_back_to_the_pools(plugin):
    emm.set_memory_manager(None)
    assert emm.get_memory_manager() is None
    assert gpuhost.device_array(8).gpu_data.pool is _core.default_pool()


def test_a_plugin_of_another_interface_version_is_refused(default_allocators):
    import emm_plugin

    class Version2(emm_plugin.RecordingManager):
        @property
        def interface_version(self):
            return 2

    with pytest.raises(RuntimeError, match=r"^EMM Plugin interface has version 2 - version 1 "
                                           r"required$"):
        emm.set_memory_manager(Version2)
    assert emm.get_memory_manager() is None


def test_the_plugin_base_classes_are_abstract_and_need_a_context():
    with pytest.raises(TypeError, match="abstract"):
        emm.BaseCUDAMemoryManager(context=None)

    class Incomplete(emm.HostOnlyCUDAMemoryManager):
        pass

    with pytest.raises(TypeError, match="abstract"):
        Incomplete(context=None)
    import emm_plugin

    with pytest.raises(RuntimeError, match=r"^Memory manager requires a context$"):
        emm_plugin.RecordingManager()
    emm_plugin.RecordingManager(context=None).reset()  # reset before initialize is safe


def test_numba_names_are_attributes_of_the_package():
    assert gpuhost.set_memory_manager is emm.set_memory_manager
    assert gpuhost.HostOnlyCUDAMemoryManager is emm.HostOnlyCUDAMemoryManager
    assert gpuhost.BaseCUDAMemoryManager is emm.BaseCUDAMemoryManager
    assert gpuhost.GetIpcHandleMixin is emm.GetIpcHandleMixin
    assert gpuhost.MemoryPointer is emm.MemoryPointer and gpuhost.IpcHandle is emm.IpcHandle
    assert gpuhost.memory is cmem and gpuhost.memory_manager is emm
    proc = run_python("import sys, gpuhost\n"
                      "assert 'gpuhost.memory' not in sys.modules\n"
                      "print(gpuhost.memory.MemoryPool.__name__, gpuhost.tools.__name__)\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["MemoryPool", "gpuhost.tools"]


PLUGIN_RUN = r"""
import numpy as np, gpuhost, emm_plugin
h = np.arange(250, dtype=np.float32)
d = gpuhost.to_device(h)
assert (d.copy_to_host() == h).all()
print(emm_plugin.EVENTS[:2])
"""


@pytest.mark.parametrize("variable", ["GPUHOST_CUDA_MEMORY_MANAGER",
                                      "NUMBA_CUDA_MEMORY_MANAGER"])
def test_an_environment_variable_installs_a_plugin(variable):
    env = {"PYTHONPATH": HERE + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "GPUHOST_CUDA_MEMORY_MANAGER": None, "NUMBA_CUDA_MEMORY_MANAGER": None,
           variable: "emm_plugin"}
    proc = run_python(PLUGIN_RUN, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[('initialize', 0), ('memalloc', 1000)]"


def test_an_environment_variable_naming_no_plugin_raises_at_the_first_allocation():
    proc = run_python("import gpuhost\n"
                      "try:\n"
                      "    gpuhost.device_array(4)\n"
                      "except RuntimeError as e:\n"
                      "    print(e)\n",
                      env={"GPUHOST_CUDA_MEMORY_MANAGER": "no_such_plugin_module"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ("Failed to use memory manager from no_such_plugin_module: "
                                   "No module named 'no_such_plugin_module'")


# ---- on a real GPU ----

@pytest.mark.gpu
def test_gpu_device_free_memory_comes_back_after_free_all_blocks():
    ctx = gpuhost.current_context()
    pool = _core.default_pool()
    gpuhost.synchronize()
    # The device's free memory is shared with other processes (pytest-xdist's workers), which
    # allocate meanwhile: the cycle is repeated until one ran while they held still.  Memory
    # that did not go back would be missing from every cycle's end, so none would pass.
    back = []
    for _ in range(30):
        pool.free_all_blocks()
        baseline = ctx.get_memory_info().free
        # multiples of 2 MiB, the driver's page: smaller allocations share pages it may keep
        arrays = [gpuhost.device_array(n, np.uint8) for n in (2 << 20, 6 << 20, 64 << 20)]
        taken = baseline - ctx.get_memory_info().free
        del arrays
        assert pool.n_free_blocks == 3
        pool.free_all_blocks()
        back.append((taken, ctx.get_memory_info().free - baseline))
        if back[-1][0] >= 72 << 20 and back[-1][1] == 0:
            break
    assert back[-1][0] >= 72 << 20 and back[-1][1] == 0, back


@pytest.mark.gpu
def test_gpu_one_mib_blocks_round_trip_exactly_through_reuse():
    pool = _core.Pool("device", "cache")
    s = gpuhost.stream()
    addresses = set()
    for _ in range(20):
        a = pool.allocate(1 << 20, s)
        addresses.add(a.ptr)
        h = fresh_bytes(1 << 20)
        d = _core.make_array(a, a.ptr, (1 << 20,), (1,), np.uint8, s)
        d.copy_to_device(h, stream=s)
        back = d.copy_to_host(stream=s)
        s.synchronize()
        assert np.array_equal(back, h)
        del d, a
    assert len(addresses) == 1 and pool.n_free_blocks == 1
    p = cmem.MemoryPool().malloc(1 << 20)
    h = fresh_bytes(1 << 20)
    p.copy_from_host(h.ctypes.data, 1 << 20)
    out = np.empty_like(h)
    (p + 4096).copy_to_host(out.ctypes.data, (1 << 20) - 4096)
    assert np.array_equal(out[:(1 << 20) - 4096], h[4096:])


@pytest.mark.gpu
def test_gpu_driver_mode_allocates_copies_and_trims():
    ctx = gpuhost.current_context()
    pool = _core.Pool("device", "driver")
    s = gpuhost.stream()
    gpuhost.synchronize()
    pool.free_all_blocks()
    # the driver's pool of this process: the device's free memory is shared with other
    # processes (pytest-xdist's workers), which allocate meanwhile
    dev = ctx.device.id
    baseline = _core.mempool_attribute(dev, "reserved_current")
    for n in (8, 1 << 20, 64 << 20):
        a = pool.allocate(n, s)
        h = fresh_bytes(n)
        d = _core.make_array(a, a.ptr, (n,), (1,), np.uint8, s)
        d.copy_to_device(h, stream=s)
        back = d.copy_to_host(stream=s)
        s.synchronize()
        assert np.array_equal(back, h) and pool.used_bytes == n
        del d, a
    s.synchronize()
    assert pool.used_bytes == 0 and pool.free_bytes >= 64 << 20  # kept by the driver's pool
    pool.free_all_blocks()
    assert pool.free_bytes == 0 and _core.mempool_attribute(dev, "reserved_current") == baseline
    proc = run_python("import gpuhost, numpy as np\n"
                      "h = np.random.default_rng().standard_normal(1 << 18)\n"
                      "d = gpuhost.to_device(h)\n"
                      "assert (d.copy_to_host() == h).all()\n"
                      "print(d.gpu_data.pool.mode)\n", env={"GPUHOST_ALLOCATOR": "driver"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "driver"


def test_a_block_of_an_external_stream_goes_to_no_other_stream():
    # external_stream() does not keep its handle alive: asking the driver about it later
    # could follow a dead handle, so its blocks are reused on that handle alone
    pool = _core.Pool("device", "cache")
    owner = gpuhost.stream()
    ext = _core.external_stream(owner.handle)
    a = pool.allocate(1000, ext)
    ptr = a.ptr
    del a
    b = pool.allocate(1000, gpuhost.stream())
    assert b.ptr != ptr and pool.n_free_blocks == 1
    assert pool.allocate(1000, _core.external_stream(owner.handle)).ptr == ptr
    c = pool.allocate(1000, owner)  # a gpuhost stream's own blocks are still shared
    ptr = c.ptr
    del c
    assert pool.allocate(1000, gpuhost.stream()).ptr == ptr
