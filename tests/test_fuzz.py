"""Property-based fuzzing (hypothesis) of every public function family with bad input.

Each family is called with wrong types, shapes, dtypes, strides, sizes, negative and huge
numbers and foreign objects (some of which raise from their own __index__, __len__ or
protocol methods).  Every call must either work or raise a Python exception of an
expected kind with a non-empty message: never crash, never SystemError.  Valid inputs
must round-trip exactly with numpy.

Each family runs at least FUZZ_EXAMPLES examples (default 1000; GPUHOST_FUZZ_EXAMPLES
scales it) and prints how many it ran.
"""
import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gpuhost
import gpuhost.memory as gmem
from gpuhost import CudaDriverError, NvrtcError, _core
from gpuhost.tools import DeviceMemoryPool, PageLockedMemoryPool
from conftest import DRIVER

EXAMPLES = int(os.environ.get("GPUHOST_FUZZ_EXAMPLES", "1000"))
RAN = {}  # family -> examples run, printed by each test


class Nasty(Exception):
    """What the foreign objects below raise from their own methods."""


# ---- junk: values of every kind ----

class BadIndex:
    def __index__(self):
        raise Nasty("__index__ refused")

    def __int__(self):
        raise Nasty("__int__ refused")


class HugeLen:
    def __len__(self):
        return 2**62

    def __getitem__(self, i):
        raise Nasty("no items")

    def __iter__(self):
        raise Nasty("no iteration")


class BadInterface:
    """Claims the CUDA array interface and DLPack, and fails both."""

    @property
    def __cuda_array_interface__(self):
        raise Nasty("no interface")

    def __dlpack__(self, **kwargs):
        raise Nasty("no dlpack")

    def __dlpack_device__(self):
        return (2, 0)


class WrongInterface:
    """Protocol methods that answer nonsense."""

    __cuda_array_interface__ = {"shape": "x", "typestr": 5, "data": (None, None), "version": 3}

    def __dlpack__(self, **kwargs):
        return "not a capsule"

    def __dlpack_device__(self):
        return ("cuda", "zero")

    __cuda_stream__ = "a stream"


class FakeStream:
    def __cuda_stream__(self):
        return (0, 2**70)


FOREIGN = [object(), BadIndex(), HugeLen(), BadInterface(), WrongInterface(), FakeStream(),
           np.float32(1.5), np.int64(-3), np.array(5), np.zeros((2, 2)), np.array(["a"]),
           memoryview(b"abcd"), bytearray(8), slice(1, 2), Ellipsis, type, len, 1j,
           float("nan"), float("-inf")]

ints = st.one_of(
    st.integers(-10, 300),
    st.sampled_from([-1, -2**31, -2**63, 2**31, 2**32, 2**63 - 1, 2**63, 2**64, 2**100,
                     -2**100]),
    st.integers(2**60, 2**70),  # never a size the host could actually allocate
)
scalars = st.one_of(ints, st.floats(allow_nan=True, allow_infinity=True), st.booleans(),
                    st.none(), st.text(max_size=6), st.binary(max_size=6),
                    st.sampled_from(FOREIGN))
junk = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.lists(inner, max_size=3).map(tuple),
    st.dictionaries(st.text(max_size=4), inner, max_size=3)), max_leaves=6)
shapes = st.one_of(junk, ints, st.lists(st.integers(0, 5), max_size=4).map(tuple),
                   st.lists(ints, min_size=1, max_size=3).map(tuple))
DTYPES = [np.float32, "f8", "i1", "u2", "i8", "c8", "c16", "?", "f2", "V3", "O", "U3", "S2",
          "M8[s]", "m8[ns]", ">i4", "<u8", np.dtype([("a", "i4"), ("b", "f8")])]
dtypes = st.one_of(st.sampled_from(DTYPES), junk)
streams = st.one_of(st.none(), st.just(0), junk)

# Every failure is one of these, with a message.
ALLOWED = (TypeError, ValueError, IndexError, OverflowError, KeyError, BufferError,
           MemoryError, NotImplementedError, OSError, CudaDriverError, NvrtcError, Nasty)


def plausible_stream_handle(v):
    """Whether gpuhost must take int v as a stream handle on trust (an aligned address in
    user space; __dlpack__, the CUDA array interface's stream, external_stream): the driver
    would follow a bogus one, so the fuzzer never passes them."""
    return (isinstance(v, int) and not isinstance(v, bool) and 65536 <= v < 2**56
            and v % 8 == 0)


def attempt(fn, *args, **kwargs):
    """fn(*args, **kwargs): (True, result) or (False, exception) for an allowed exception
    with a message; anything else propagates and fails the example."""
    try:
        return True, fn(*args, **kwargs)
    except ALLOWED as e:
        if isinstance(e, KeyError):
            assert e.args and str(e.args[0]), repr(e)
        else:
            assert str(e).strip(), "%s with no message" % type(e).__name__
        return False, e


def fuzz(family, strategy, examples=None):
    """Decorate body(value): a test running it on `examples` values drawn from `strategy`
    (hypothesis), counting them into RAN[family]."""
    n = examples or EXAMPLES

    def decorate(body):
        count = [0]

        @settings(max_examples=n, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(strategy)
        def run(value):
            count[0] += 1
            body(value)

        def test():
            count[0] = 0
            run()
            RAN[family] = RAN.get(family, 0) + count[0]
            print("fuzz %s: %d examples" % (family, count[0]))
            assert count[0] >= n * 0.9, "hypothesis ran only %d of %d" % (count[0], n)

        test.__name__ = body.__name__
        test.__doc__ = body.__doc__
        return test
    return decorate


rng = np.random.default_rng()


def contig(a):
    """A C-contiguous copy of `a` with its own ndim (np.ascontiguousarray makes 0-d 1-d)."""
    return np.array(a, order="C", copy=True)


def same(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


# ---- devices and contexts ----

@fuzz("devices and contexts", st.tuples(junk, junk))
def test_fuzz_devices_and_contexts(args):
    a, b = args
    attempt(lambda: gpuhost.gpus[a])
    ok, dev = attempt(gpuhost.gpus[0].get_attribute, a)
    if ok:
        assert isinstance(dev, int)
    attempt(gpuhost.current_context, a if not isinstance(a, int) or a != 1 else 0)
    ok, _ = attempt(gpuhost.select_device, a)
    gpuhost.select_device(0)
    attempt(gpuhost.external_stream, a)
    attempt(gpuhost.list_devices().__getitem__, b)
    with gpuhost.gpus[0]:
        attempt(gpuhost.current_context().push) if a is None else None
        if a is None:
            gpuhost.current_context().pop()
    assert gpuhost.get_current_device().id == 0


# ---- allocation ----

@fuzz("allocation", st.tuples(shapes, dtypes, junk, st.sampled_from(["C", "F", "A", "x", 3]),
                              streams, st.sampled_from(["device", "pinned", "mapped", "managed",
                                                        "like"])))
def test_fuzz_allocation(args):
    shape, dtype, strides, order, stream, kind = args
    if kind == "device":
        ok, arr = attempt(gpuhost.device_array, shape, dtype, strides=strides, order=order,
                          stream=stream)
    elif kind == "pinned":
        ok, arr = attempt(gpuhost.pinned_array, shape, dtype, strides=strides, order=order)
    elif kind == "mapped":
        ok, arr = attempt(gpuhost.mapped_array, shape, dtype, strides=strides, order=order,
                          stream=stream)
    elif kind == "managed":
        ok, arr = attempt(gpuhost.managed_array, shape, dtype, strides=strides, order=order,
                          stream=stream)
    else:
        ok, arr = attempt(gpuhost.device_array_like, shape, stream=stream)
    if ok and kind in ("device", "managed") and strides is None:
        try:
            expect = np.empty(shape, dtype, order=order)
        except (TypeError, ValueError):
            return
        assert arr.shape == expect.shape and arr.dtype == expect.dtype
        assert arr.size == expect.size and arr.nbytes == expect.nbytes


# ---- transfers: exact round trips, and bad arguments ----

array_dtypes = st.one_of(hnp.scalar_dtypes(), hnp.complex_number_dtypes(),
                         hnp.byte_string_dtypes(max_len=3), hnp.unicode_string_dtypes(max_len=2))


@st.composite
def host_views(draw):
    """A fresh numpy array, often viewed through a strided, negatively strided basic index."""
    base = draw(hnp.arrays(array_dtypes, hnp.array_shapes(min_dims=0, max_dims=4, max_side=6)))
    if base.ndim and draw(st.booleans()):
        base = base[draw(hnp.basic_indices(base.shape, allow_newaxis=False))]
    return base


@fuzz("transfers", st.tuples(host_views(), junk, streams, st.integers(0, 3)))
def test_fuzz_transfers(args):
    h, bad, stream, how = args
    ok, d = attempt(gpuhost.to_device, h, stream=stream)
    if not ok:
        assert not isinstance(d, (IndexError, KeyError)), d
        d = gpuhost.to_device(h)  # a bad stream alone made it fail
    if isinstance(h, np.ndarray):
        expect = contig(h)
        assert same(d.copy_to_host(), expect)
        out = np.empty_like(h)
        if how == 0:
            d.copy_to_host(out)
            assert same(contig(out), expect)
        elif how == 1:
            attempt(d.copy_to_host, bad)
        elif how == 2:
            attempt(d.copy_to_device, bad)
            attempt(gpuhost.to_device, bad)
        else:
            fresh = np.asarray(rng.random(d.shape) * 100).astype(d.dtype) \
                if d.dtype.kind in "fiuc" \
                else expect.copy()
            d.copy_to_device(fresh)
            assert same(d.copy_to_host(), contig(fresh))


# ---- indexing and views ----

@st.composite
def index_cases(draw):
    h = draw(hnp.arrays(st.sampled_from(["f4", "i2", "u1", "c16", "f8"]),
                        hnp.array_shapes(min_dims=1, max_dims=3, max_side=6)))
    key = draw(st.one_of(hnp.basic_indices(h.shape, allow_newaxis=True), junk))
    value = draw(st.one_of(st.integers(-100, 100), st.floats(-1e3, 1e3, width=32), junk,
                           hnp.arrays(h.dtype, hnp.array_shapes(min_dims=0, max_dims=2,
                                                                max_side=3))))
    extra = draw(junk)
    return h, key, value, extra


def numpy_outcome(fn):
    try:
        return True, fn()
    except Exception as e:  # noqa: BLE001 - numpy's verdict on the same input
        return False, e


@fuzz("indexing and views", index_cases())
def test_fuzz_indexing_and_views(args):
    h, key, value, extra = args
    d = gpuhost.to_device(h)
    ok, got = attempt(d.__getitem__, key)
    np_ok, want = numpy_outcome(lambda: h[key])
    if ok and np_ok:
        if isinstance(got, gpuhost.DeviceArray):
            # What a failure needs to be diagnosed (seen once in CI, not reproduced since):
            # the view's place in its array, and whether the array itself reads back.
            where = ("key %r: view %r at +%d, strides %r, of %r at %#x (its contents %s)"
                     % (key, got, got.device_ctypes_pointer.value
                        - d.device_ctypes_pointer.value, got.strides, d,
                        d.device_ctypes_pointer.value,
                        "right" if same(d.copy_to_host(), h) else "WRONG"))
            try:
                back = got.copy_to_host()
            except CudaDriverError as e:
                raise AssertionError("%s: %s" % (where, e)) from e
            assert same(back, contig(want)), where
        else:
            assert got == want or (np.isnan(got) and np.isnan(want))
    host = h.copy()
    ok, _ = attempt(d.__setitem__, key, value)
    if ok:
        np_ok, _ = numpy_outcome(lambda: host.__setitem__(key, value))
        if np_ok:
            assert same(d.copy_to_host(), host)
    for method in ("reshape", "view", "split", "ravel", "bind", "transpose"):
        attempt(getattr(d, method), extra)
    attempt(d.reshape, *extra) if isinstance(extra, tuple) else None
    assert same(d.T.copy_to_host(), contig(d.copy_to_host().T))


# ---- streams, events, callbacks ----

def callback_of(s, fn, arg):
    """s.add_callback(fn, arg), then a callback that records its arg, then synchronize: a
    non-callable fn is refused with TypeError; a callable one is called as fn(s, 0, arg) and
    what it raises goes to sys.unraisablehook (add_callback's documented outcome; junk's len
    and type cannot take three arguments), and the stream goes on."""
    reports, got = [], []
    hook, sys.unraisablehook = sys.unraisablehook, reports.append
    try:
        ok, res = attempt(s.add_callback, fn, arg)
        s.add_callback(lambda stream, status, a: got.append(a), arg)
        s.synchronize()
    finally:
        sys.unraisablehook = hook
    assert len(got) == 1 and got[0] is arg
    assert ok == callable(fn)
    expected = None
    if not ok:
        assert type(res) is TypeError
        # the type as its tp_name spells it: numpy.float32, list
        assert str(res).startswith("callback must be callable, not ")
        assert str(res).endswith(type(fn).__name__)
    else:
        try:
            fn(s, 0, arg)
        except Exception as exc:
            expected = exc
    if expected is None:
        assert reports == []
    else:
        assert len(reports) == 1 and reports[0].object is fn
        assert type(reports[0].exc_value) is type(expected)
        assert str(reports[0].exc_value) == str(expected)
    return reports


@pytest.mark.parametrize("fn", [v for v in FOREIGN if callable(v)], ids=lambda v: v.__name__)
def test_a_callable_of_junk_as_a_callback_goes_to_unraisablehook(fn):
    """The fuzz below draws these rarely: each, every time."""
    reports = callback_of(gpuhost.stream(), fn, int(rng.integers(1 << 30)))
    assert len(reports) == 1 and type(reports[0].exc_value) is TypeError


@fuzz("streams and events", st.tuples(junk, junk, junk, st.integers(0, 5)))
def test_fuzz_streams_and_events(args):
    a, b, c, which = args
    ok, s = attempt(gpuhost.stream, non_blocking=a, priority=b)
    if not ok:
        s = gpuhost.stream()
    ok, e = attempt(gpuhost.event, timing=a, blocking_sync=b, interprocess=c)
    if not ok:
        e = gpuhost.event()
    if which == 0:
        callback_of(s, a, b)
    elif which == 1:
        attempt(e.record, a)
        attempt(s.wait_event, a)
        attempt(e.wait, a)
    elif which == 2:
        e.record(s)
        other = gpuhost.event()
        attempt(e.elapsed_time, a)
        attempt(gpuhost.event_elapsed_time, a, other)
        attempt(gpuhost.event_elapsed_time, e, a)
    elif which == 3:
        if not plausible_stream_handle(a):
            attempt(gpuhost.external_stream, a)
        attempt(gpuhost.to_device, np.arange(3), stream=a)
    elif which == 4:
        attempt(s.record, a)
        attempt(s.auto_synchronize) if a is None else None
    else:
        attempt(e.ipc_handle)  # not an interprocess event: ValueError
    s.synchronize()
    assert s.query()


# ---- interop: the CUDA array interface and DLPack ----

@st.composite
def interfaces(draw):
    d = gpuhost.to_device(rng.standard_normal((3, 4)).astype(np.float32))
    cai = dict(d.__cuda_array_interface__)
    key = draw(st.sampled_from(["shape", "typestr", "data", "strides", "version", "stream",
                                "descr", "mask", "extra"]))
    value = draw(junk)
    if key == "data":
        # a bad data field, never a readable stranger's pointer
        value = draw(st.one_of(junk, st.tuples(st.just(0), st.booleans()),
                               st.tuples(ints, st.just(True)).filter(lambda t: t[0] < 0)))
    if key == "stream":
        value = draw(junk.filter(lambda v: not plausible_stream_handle(v)))
    if draw(st.booleans()):
        cai[key] = value
    else:
        cai.pop(key, None)
    return d, cai, draw(junk)


class Exporter:
    def __init__(self, cai):
        self.__cuda_array_interface__ = cai


@fuzz("interop", interfaces())
def test_fuzz_interop(args):
    d, cai, other = args
    ok, view = attempt(gpuhost.from_cuda_array_interface, cai, owner=d)
    if ok and cai.get("data") == d.__cuda_array_interface__["data"] and \
            cai.get("shape") == (3, 4) and cai.get("typestr") == "<f4" and \
            cai.get("strides") in (None, (16, 4)):
        assert same(view.copy_to_host(), d.copy_to_host())
    attempt(gpuhost.as_cuda_array, Exporter(cai))
    attempt(gpuhost.as_cuda_array, other)
    ok, answer = attempt(gpuhost.is_cuda_array, other)
    assert not ok or answer in (True, False)
    attempt(gpuhost.from_dlpack, other)
    if not plausible_stream_handle(other):
        ok, cap = attempt(d.__dlpack__, stream=other)
    attempt(d.__dlpack__, max_version=other)
    attempt(d.__dlpack__, dl_device=other)
    attempt(d.__dlpack__, copy=other)
    ok, back = attempt(gpuhost.from_dlpack, d)
    assert ok and same(back.copy_to_host(), d.copy_to_host())


# ---- pools and memory ----

@fuzz("pools and memory", st.tuples(junk, junk, st.integers(0, 6)))
def test_fuzz_pools_and_memory(args):
    a, b, which = args
    if which == 0:
        pool = gmem.MemoryPool()
        ok, p = attempt(pool.malloc, a, stream=b)
        if ok and type(a) is int and 0 < a < 1 << 20:  # not a bool: numpy refuses size=True
            h = rng.integers(0, 256, a, dtype=np.uint8)
            p.copy_from_host(h.ctypes.data, a)
            out = np.zeros_like(h)
            p.copy_to_host(out.ctypes.data, a)
            assert same(out, h)
        attempt(pool.set_limit, size=a, fraction=b)
        attempt(pool.set_limit, fraction=a)
        del p
        pool.free_all_blocks()
    elif which == 1:
        attempt(DeviceMemoryPool().allocate, a, stream=b)
    elif which == 2:
        hp = PageLockedMemoryPool()
        ok, buf = attempt(hp.allocate, a, b)
        if ok and isinstance(buf, np.ndarray):
            dt = np.dtype(b)  # a subarray dtype adds its dimensions, as in numpy
            assert buf.shape == ((a,) if isinstance(a, int) else tuple(a)) + dt.shape
            assert buf.dtype == dt.base
    elif which == 3:
        attempt(_core.Pool, a, b)
        attempt(_core.Pool, kind=a)
    elif which == 4:
        attempt(gmem.malloc_async, a, stream=b)
        attempt(gmem.malloc_managed, a)
    elif which == 5:
        attempt(gmem.alloc_pinned_memory, a)
        attempt(_core.mem_alloc, a, b)
    else:
        attempt(gpuhost.pinned, a)
        attempt(gpuhost.mapped, a)
        ok, cm = attempt(lambda: gpuhost.pinned(a).__enter__())


# ---- kernels, modules, compilation ----

NOOP = r"""
extern "C" __global__ void noop(int a, float b, double c, long long d, unsigned char e) {}
"""
_noop = []


def noop_kernel():
    if not _noop:
        _noop.append(gpuhost.SourceModule(NOOP, no_extern_c=True).get_function("noop"))
    return _noop[0]


@fuzz("kernels and modules", st.tuples(junk, junk, junk, st.integers(0, 4),
                                       st.lists(junk, max_size=6)))
def test_fuzz_kernels_and_modules(args):
    a, b, c, which, params = args
    if which == 0:
        attempt(gpuhost.Module, a)
        attempt(gpuhost.Linker().add_ptx, a)
    elif which == 1:
        attempt(gpuhost.compile_ptx, a, cc=b)
        attempt(gpuhost.compile_ptx, "__global__ void k() {}", options=a, defines=b,
                include_dirs=c)
    elif which == 2:
        attempt(gpuhost.RawKernel, a, b)
        attempt(gpuhost.SourceModule, a, options=b)
    elif which == 3 and DRIVER == "real":
        k = noop_kernel()
        attempt(lambda: k[a, b](*params))
        attempt(lambda: k[a, b, c](*params))
        attempt(gpuhost.launch, k, a, b, *params, stream=c)
        attempt(k.max_active_blocks_per_multiprocessor, a, b)
        k[1, 1](1, 2.0, 3.0, 4, 5)
        gpuhost.synchronize()
    else:
        attempt(gpuhost.launch, a, b, c, *params)


def test_fuzz_source_strings_compile_or_raise_nvrtc_errors():
    """Random source text: NvrtcError with the log, or PTX (slower: fewer examples)."""
    n = max(EXAMPLES // 10, 20)
    count = [0]

    @settings(max_examples=n, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.text(max_size=40))
    def run(src):
        count[0] += 1
        ok, out = attempt(gpuhost.compile_ptx, src)
        if ok:
            assert isinstance(out, bytes)
        elif "\0" in src:
            assert isinstance(out, ValueError) and "NUL character" in str(out), out
        else:
            assert isinstance(out, NvrtcError), out
    run()
    RAN["kernels and modules"] = RAN.get("kernels and modules", 0) + count[0]
    print("fuzz kernels and modules (source text): %d examples" % count[0])
