"""gpuhost.nccl: loading libnccl, the Communicator's collectives against NumPy, every check
made before NCCL is called, NCCL's errors, the launcher, MPI, and CuPy's names.

On the fake driver NCCL is tests/fakecuda/fakenccl; on a GPU it is the real libnccl.  The
in-process collectives use init_all over every device there is (two on the fake driver,
four on a four-GPU machine); one process per GPU runs tests/scripts/nccl_ranks.py through
gpuhost.launch and mpirun.  Results are exact: the data are small whole numbers, which every
order of NCCL's reductions sums (multiplies, averages over a power of two) without rounding.
Creation with a timeout, registration, graphs and the fast path are in test_nccl_features.py;
the environment of launchers, the rendezvous, several nodes and faults in
test_nccl_multinode.py.
"""
import ctypes
import os
import pickle
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import gpuhost
from conftest import DRIVER, run_python

nccl = pytest.importorskip("gpuhost.nccl")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, "tests", "scripts")
REDUCE_DTYPES = ["int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32",
                 "float64"]

if not (gpuhost.is_available() and nccl.is_available()):
    pytest.skip("no CUDA driver or no libnccl", allow_module_level=True)


@pytest.fixture(autouse=True)
def _nvls_off(monkeypatch):
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "0")  # processes the tests start inherit it


class FakeNccl:
    """tests/fakecuda/fakenccl's control API."""

    def __init__(self):
        self.lib = ctypes.CDLL(nccl.library_path())

    def fail(self, name, code):
        self.lib.fakenccl_fail(name.encode(), code)

    def async_error(self, code):
        self.lib.fakenccl_set_async_error(code)

    def live(self):
        return self.lib.fakenccl_live()


@pytest.fixture
def fnccl(fake):
    f = FakeNccl()
    yield f
    f.fail("", 0)


def rng():
    return np.random.default_rng()


def random_array(dtype, shape, gen=None, op="sum"):
    """Fresh random data: integers over their whole range (they wrap alike everywhere);
    floating point and complex numbers whole and small, so that sums of up to 16 ranks (and
    products, of numbers up to 2 in size) are exact in every order."""
    gen = gen or rng()
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = (info.min, info.max) if dt.itemsize < 8 else (-(2**40), 2**40)
        if dt.kind == "u":
            lo = 0
        return gen.integers(lo, hi, size=shape, endpoint=True).astype(dt)
    bound = 2 if op == "prod" else 64
    if dt.kind == "c":
        return (gen.integers(-bound, bound, shape, endpoint=True)
                + 1j * gen.integers(-bound, bound, shape, endpoint=True)).astype(dt)
    return gen.integers(-bound, bound, size=shape, endpoint=True).astype(dt)


@pytest.fixture(scope="module")
def comms():
    """One Communicator per device, in this process, on every device there is."""
    cs = nccl.Communicator.init_all(len(gpuhost.gpus))
    yield cs
    for c in cs:
        c.destroy()


def on(comm, host):
    with gpuhost.gpus[comm.device.id]:
        return gpuhost.to_device(host)


def host(comm, arr):
    with gpuhost.gpus[comm.device.id]:
        return arr.copy_to_host()


def reduce_np(arrays, op):
    out = arrays[0].copy()
    for a in arrays[1:]:
        with np.errstate(over="ignore"):
            if op == "sum":
                out = (out + a).astype(out.dtype)
            elif op == "prod":
                out = (out * a).astype(out.dtype)
            elif op == "max":
                out = np.maximum(out, a)
            elif op == "min":
                out = np.minimum(out, a)
    if op == "avg" and out.dtype.kind in "iu":  # NCCL sums in the type, then divides (C's /)
        total = reduce_np(arrays, "sum").astype(object)
        out = np.array([abs(t) // len(arrays) * (1 if t >= 0 else -1) for t in total.ravel()],
                       dtype=object).reshape(out.shape).astype(out.dtype)
    elif op == "avg":
        wide = np.complex128 if out.dtype.kind == "c" else np.float64
        out = sum(a.astype(wide) for a in arrays) / len(arrays)
    return out


def check_reduced(got, want, op, nranks):
    """Exact, but for floating-point averages over a number of ranks that is no power of two
    (x / 3 rounds, and NCCL multiplies by 1/3 where NumPy divides)."""
    if op == "avg" and want.dtype.kind in "fc" and nranks & (nranks - 1):
        tol = {"float16": 1e-3, "float32": 1e-6, "complex64": 1e-6}.get(got.dtype.name, 1e-12)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got, want.astype(got.dtype))


# ---- loading ----

def test_importing_gpuhost_does_not_load_libnccl():
    proc = run_python("import gpuhost, gpuhost.nccl\n"
                      "maps = open('/proc/self/maps').read()\n"
                      "print('nccl' in maps)\n"
                      "gpuhost.nccl.get_version()\n"
                      "print('nccl' in open('/proc/self/maps').read())")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True"]


def test_a_missing_libnccl_is_a_clear_error_naming_what_was_tried(tmp_path):
    missing = str(tmp_path / "libnccl.so.2")
    proc = run_python("import gpuhost.nccl as n\nprint(n.is_available())\n"
                      "try:\n    n.get_unique_id()\n"
                      "except n.NcclSupportError as e:\n    print('ERR', e)",
                      env={"GPUHOST_NCCL": missing})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("False\nERR libnccl was not found. Tried:")
    assert missing in proc.stdout and "GPUHOST_NCCL" in proc.stdout


def test_candidates_honour_gpuhost_nccl_then_wheels_then_the_toolkit(tmp_path, monkeypatch):
    from gpuhost import _libpaths

    monkeypatch.setenv("GPUHOST_NCCL", "/x/libnccl.so.2")
    assert _libpaths.nccl_candidates(2) == ["/x/libnccl.so.2"]
    monkeypatch.delenv("GPUHOST_NCCL")
    wheel = tmp_path / "site" / "nvidia" / "nccl" / "lib"
    wheel.mkdir(parents=True)
    (wheel / "libnccl.so.2").write_bytes(b"")
    toolkit = tmp_path / "cuda" / "lib64"
    toolkit.mkdir(parents=True)
    (toolkit / "libnccl.so.2").write_bytes(b"")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "site")])
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    got = _libpaths.nccl_candidates(2)
    assert got[:2] == [str(wheel / "libnccl.so.2"), str(toolkit / "libnccl.so.2")]
    assert got[-1] == "libnccl.so.2"


def test_the_declarations_were_checked_against_nccl_h_where_the_build_had_it():
    sys.path.insert(0, ROOT)
    try:
        import cuda_headers
    finally:
        sys.path.remove(ROOT)
    try:
        dirs = cuda_headers.include_dirs()
    except cuda_headers.HeadersNotFound:  # an install without the headers it was built with
        dirs = []
    headers = [os.path.join(d, "nccl.h") for d in dirs if os.path.exists(os.path.join(d, "nccl.h"))]
    checked = gpuhost._core._nccl_abi_checked  # the version of the nccl.h compared, or 0
    if headers:  # the toolkit the build used has one: it was compared
        code = re.search(r"#define NCCL_VERSION_CODE (\d+)", open(headers[0]).read())
        assert checked == int(code.group(1))
    else:  # none there: 0, or one the compiler found on its own path (/usr/include)
        assert checked == 0 or checked >= 21800


def test_unique_ids_are_128_new_bytes_that_pickle():
    a, b = nccl.get_unique_id(), nccl.get_unique_id()
    assert isinstance(a, bytes) and len(a) == 128 and a != b
    assert pickle.loads(pickle.dumps(a)) == a
    assert nccl.get_version() >= 21800


# ---- making communicators ----

def test_a_one_rank_communicator_knows_its_rank_size_and_device():
    with nccl.Communicator(1, nccl.get_unique_id(), 0, device=0) as c:
        assert (c.rank, c.size, c.device.id, c.closed) == (0, 1, 0, False)
        assert c.handle != 0
        assert repr(c) == "<gpuhost.nccl.Communicator rank 0 of 1 on device 0>"
        assert c.check_async_error() is False
    assert c.closed and c.handle == 0
    assert repr(c).endswith("destroyed>")
    c.destroy()  # twice is fine


@pytest.mark.parametrize("args, exc, msg", [
    ((0, b"x" * 128, 0), ValueError, "nranks must be at least 1, not 0"),
    ((2, b"x" * 128, 2), ValueError, "rank 2 is not in 0 to 1 (nranks 2)"),
    ((1, b"x" * 128, -1), ValueError, "rank -1 is not in 0 to 0"),
    ((1, None, 0), TypeError, "unique_id must be the 128 bytes of get_unique_id(), not NoneType"),
    ((1, "x" * 128, 0), TypeError, "not str"),
    ((1, b"x" * 10, 0), ValueError, "this one has 10"),
])
def test_bad_communicator_arguments_are_refused_before_nccl(args, exc, msg):
    with pytest.raises(exc, match=re.escape(msg)):
        nccl.Communicator(*args)


def test_init_all_checks_its_devices():
    n = len(gpuhost.gpus)
    with pytest.raises(ValueError, match="device 0 appears twice"):
        nccl.Communicator.init_all([0, 0])
    with pytest.raises(ValueError, match="the list of devices is empty"):
        nccl.Communicator.init_all([])
    with pytest.raises(ValueError, match="init_all\\(%d\\): there are %d devices" % (n + 1, n)):
        nccl.Communicator.init_all(n + 1)
    with pytest.raises(TypeError, match="devices must be a number of devices or a list"):
        nccl.Communicator.init_all(None)
    with pytest.raises(gpuhost.errors.InvalidDeviceError):
        nccl.Communicator.init_all([n])


def test_init_all_ranks_follow_the_device_list(comms):
    assert [(c.rank, c.size, c.device.id) for c in comms] == \
        [(i, len(comms), i) for i in range(len(comms))]


def test_a_communicator_does_not_pickle():
    with nccl.Communicator(1, nccl.get_unique_id(), 0) as c:
        with pytest.raises(pickle.PicklingError, match="share the unique id"):
            pickle.dumps(c)


# ---- collectives against NumPy ----

@pytest.mark.parametrize("dtype", REDUCE_DTYPES + ["complex64", "complex128"])
@pytest.mark.parametrize("op", ["sum", "prod", "max", "min", "avg"])
def test_all_reduce_matches_numpy(comms, dtype, op):
    if dtype.startswith("complex") and op not in ("sum", "avg"):
        pytest.skip("complex numbers reduce with sum and avg")
    xs = [random_array(dtype, (3, 41), op=op) for _ in comms]
    ds = [on(c, x) for c, x in zip(comms, xs)]
    with nccl.group():
        outs = [c.all_reduce(d, op=op) for c, d in zip(comms, ds)]
    want = reduce_np(xs, op)
    for c, out in zip(comms, outs):
        assert out.shape == (3, 41) and out.dtype == np.dtype(dtype)
        check_reduced(host(c, out), want, op, len(comms))


@pytest.mark.parametrize("op", ["sum", "max"])
def test_bfloat16_reduces_as_nccls_bfloat16(comms, op):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf16 = np.dtype(ml_dtypes.bfloat16)
    xs = [random_array("float32", 257).astype(bf16) for _ in comms]  # whole: exact sums
    ds = [on(c, x) for c, x in zip(comms, xs)]
    with nccl.group():
        outs = [c.all_reduce(d, op=op) for c, d in zip(comms, ds)]
    wide = [x.astype(np.float32) for x in xs]
    want = (sum(wide) if op == "sum" else np.maximum.reduce(wide)).astype(bf16)
    for c, out in zip(comms, outs):
        assert out.dtype == bf16
        np.testing.assert_array_equal(host(c, out).astype(np.float32), want.astype(np.float32))


def test_all_reduce_in_place_and_into_a_given_array(comms):
    xs = [random_array("float32", 1000) for _ in comms]
    ds = [on(c, x) for c, x in zip(comms, xs)]
    recvs = [on(c, np.zeros(1000, np.float32)) for c in comms]
    with nccl.group():
        outs = [c.all_reduce(d, r) for c, d, r in zip(comms, ds, recvs)]
    assert all(o is r for o, r in zip(outs, recvs))
    with nccl.group():
        for c, d in zip(comms, ds):
            c.all_reduce(d, d, op="max")
    for c, d, r in zip(comms, ds, recvs):
        np.testing.assert_array_equal(host(c, r), reduce_np(xs, "sum"))
        np.testing.assert_array_equal(host(c, d), reduce_np(xs, "max"))


@pytest.mark.parametrize("root", [0, -1])
@pytest.mark.parametrize("dtype", ["int32", "float64", "uint64"])
def test_reduce_reaches_the_root_only(comms, root, dtype):
    root = root % len(comms)
    xs = [random_array(dtype, 77) for _ in comms]
    ds = [on(c, x) for c, x in zip(comms, xs)]
    with nccl.group():
        outs = [c.reduce(d, root=root, op="min") for c, d in zip(comms, ds)]
    for c, out in zip(comms, outs):
        if c.rank == root:
            np.testing.assert_array_equal(host(c, out), reduce_np(xs, "min"))
        else:
            assert out is None


@pytest.mark.parametrize("dtype", REDUCE_DTYPES + ["bool", "int16", "complex128", "V3"])
def test_broadcast_moves_any_dtype_in_place_or_into_recv(comms, dtype):
    root = len(comms) - 1
    gen = rng()
    if dtype == "V3":
        xs = [np.frombuffer(gen.bytes(3 * 50), dtype="V3") for _ in comms]
    elif dtype == "bool":
        xs = [gen.random(50) < 0.5 for _ in comms]
    else:
        xs = [random_array(dtype, 50, gen) for _ in comms]
    ds = [on(c, x) for c, x in zip(comms, xs)]
    with nccl.group():
        outs = [c.broadcast(d, root=root) for c, d in zip(comms, ds)]
    for c, d, out in zip(comms, ds, outs):
        assert out is d
        assert host(c, out).tobytes() == xs[root].tobytes()


@pytest.mark.parametrize("dtype", ["int8", "float16", "complex64", "int16"])
def test_all_gather_stacks_every_rank_in_rank_order(comms, dtype):
    xs = [random_array(dtype, (4, 5)) for _ in comms]
    ds = [on(c, x) for c, x in zip(comms, xs)]
    with nccl.group():
        outs = [c.all_gather(d) for c, d in zip(comms, ds)]
    for c, out in zip(comms, outs):
        assert out.shape == (len(comms), 4, 5)
        np.testing.assert_array_equal(host(c, out), np.stack(xs))


@pytest.mark.parametrize("dtype", ["int64", "float32", "uint8"])
@pytest.mark.parametrize("op", ["sum", "max"])
def test_reduce_scatter_gives_each_rank_its_block(comms, dtype, op):
    n = len(comms)
    xs = [random_array(dtype, (6 * n, 3)) for _ in comms]
    ds = [on(c, x) for c, x in zip(comms, xs)]
    with nccl.group():
        outs = [c.reduce_scatter(d, op=op) for c, d in zip(comms, ds)]
    want = reduce_np(xs, op)
    for c, out in zip(comms, outs):
        assert out.shape == (6, 3)
        check_reduced(host(c, out), want[6 * c.rank:6 * c.rank + 6], op, n)


def test_reduce_scatter_of_a_first_axis_that_does_not_divide_is_flat(comms):
    n = len(comms)
    xs = [random_array("int32", (3, 2 * n)) for _ in comms]
    ds = [on(c, x) for c, x in zip(comms, xs)]
    with nccl.group():
        outs = [c.reduce_scatter(d) for c, d in zip(comms, ds)]
    flat = reduce_np(xs, "sum").ravel()
    for c, out in zip(comms, outs):
        block = flat.size // n
        assert out.shape == ((3 // n, 2 * n) if 3 % n == 0 else (block,))  # (3, 2) for 1 rank
        np.testing.assert_array_equal(host(c, out).ravel(),
                                      flat[block * c.rank:block * (c.rank + 1)])


def test_all_to_all_exchanges_blocks(comms):
    n = len(comms)
    xs = [random_array("float64", 5 * n) for _ in comms]
    ds = [on(c, x) for c, x in zip(comms, xs)]
    with nccl.group():
        outs = [c.all_to_all(d) for c, d in zip(comms, ds)]
    for c, out in zip(comms, outs):
        want = np.concatenate([xs[src][5 * c.rank:5 * c.rank + 5] for src in range(n)])
        np.testing.assert_array_equal(host(c, out), want)


def test_send_and_recv_pair_in_a_group(comms):
    n = len(comms)
    xs = [random_array("uint32", 300) for _ in comms]
    ds = [on(c, x) for c, x in zip(comms, xs)]
    recvs = [on(c, np.zeros(300, np.uint32)) for c in comms]
    with nccl.group():  # a ring: rank r sends to r+1
        for c, d, r in zip(comms, ds, recvs):
            c.send(d, (c.rank + 1) % n)
            assert c.recv(r, (c.rank - 1) % n) is r
    for c, r in zip(comms, recvs):
        np.testing.assert_array_equal(host(c, r), xs[(c.rank - 1) % n])


def test_streams_and_foreign_buffers(comms):
    """stream= takes gpuhost streams; buffers exporting the CUDA array interface or DLPack
    are used in place."""
    from conftest import DlpackOnly

    class CaiOnly:
        def __init__(self, a):
            self.__cuda_array_interface__ = a.__cuda_array_interface__

    xs = [random_array("float32", 64) for _ in comms]
    streams, ds = [], []
    for c, x in zip(comms, xs):
        with gpuhost.gpus[c.device.id]:
            streams.append(gpuhost.stream())
            ds.append(gpuhost.to_device(x))
    recvs = [on(c, np.zeros(64, np.float32)) for c in comms]
    with nccl.group():
        for c, d, r, s in zip(comms, ds, recvs, streams):
            c.all_reduce(CaiOnly(d), DlpackOnly(r), stream=s)
    for c, r, s in zip(comms, recvs, streams):
        c.wait(s, timeout=60)
        np.testing.assert_array_equal(host(c, r), reduce_np(xs, "sum"))


# ---- checks made before NCCL is called ----

@pytest.fixture
def one():
    c = nccl.Communicator(1, nccl.get_unique_id(), 0, device=0)
    yield c
    c.destroy()


def test_buffer_checks(one):
    d = on(one, np.arange(12, dtype=np.float32))
    with pytest.raises(TypeError, match=re.escape("all_reduce(): send is a host (numpy) array")):
        one.all_reduce(np.zeros(3))
    with pytest.raises(TypeError, match="send must be a device array .* not list"):
        one.all_reduce([1, 2])
    with pytest.raises(ValueError, match=re.escape("all_reduce(): send is not contiguous")):
        one.all_reduce(d.reshape(3, 4)[:, ::2])
    with pytest.raises(ValueError, match="send holds float32 and recv holds float64"):
        one.all_reduce(d, on(one, np.zeros(12)))
    with pytest.raises(ValueError, match=re.escape("recv has 11 elements; it needs 12")):
        one.all_reduce(d, on(one, np.zeros(11, np.float32)))
    with pytest.raises(ValueError, match="different memory orders"):
        one.all_reduce(d.reshape(3, 4), on(one, np.zeros((3, 4), np.float32, order="F")))
    with pytest.raises(ValueError, match=re.escape("recv has 3 elements; it needs 12")):
        one.all_gather(d, on(one, np.zeros(3, np.float32)))


def test_all_to_all_is_not_in_place(one):
    d = on(one, np.zeros(4))
    with pytest.raises(ValueError, match=re.escape("all_to_all(): recv cannot be send")):
        one.all_to_all(d, d)


def test_reduction_dtype_checks(one):
    with pytest.raises(TypeError, match="NCCL cannot reduce int16"):
        one.all_reduce(on(one, np.zeros(4, np.int16)))
    with pytest.raises(TypeError, match="NCCL cannot reduce bool"):
        one.reduce_scatter(on(one, np.zeros(4, bool)))
    with pytest.raises(TypeError, match="complex numbers reduce with op 'sum' or 'avg' only"):
        one.all_reduce(on(one, np.zeros(4, np.complex64)), op="max")
    with pytest.raises(ValueError, match="op must be 'sum', 'prod', 'max', 'min' or 'avg'"):
        one.all_reduce(on(one, np.zeros(4)), op="xor")
    with pytest.raises(ValueError, match="op must be"):
        one.all_reduce(on(one, np.zeros(4)), op=7)
    one.all_reduce(on(one, np.zeros(4)), op=3)  # NCCL's code for min


def test_rank_arguments_are_checked(one):
    d = on(one, np.zeros(4))
    for call in (lambda: one.reduce(d, root=1), lambda: one.broadcast(d, root=-1),
                 lambda: one.send(d, 1), lambda: one.recv(d, 5)):
        with pytest.raises(ValueError, match="is not a rank of this communicator \\(0 to 0\\)"):
            call()


def test_read_only_memory_cannot_receive(one):
    d = on(one, np.zeros(4))
    with gpuhost.gpus[one.device.id]:  # a view of memory of the communicator's device
        ro = gpuhost.from_cuda_array_interface(
            dict(d.__cuda_array_interface__, data=(d.ptr, True)), owner=d)
    with pytest.raises(ValueError, match=re.escape("all_reduce(): recv is read-only memory")):
        one.all_reduce(d, ro)
    with pytest.raises(ValueError, match=re.escape("broadcast(): send is read-only memory")):
        one.broadcast(ro)
    with pytest.raises(ValueError, match=re.escape("all_reduce(): recv is read-only memory")):
        one.all_reduce(ro, ro)  # in place


@pytest.mark.gpus(2)
def test_memory_and_streams_of_another_device_are_refused(one):
    with gpuhost.gpus[1]:
        other = gpuhost.to_device(np.zeros(4))
        s1 = gpuhost.stream()
    with pytest.raises(ValueError, match="send is memory of device 1; this Communicator's "
                                         "rank 0 is on device 0"):
        one.all_reduce(other)
    with pytest.raises(gpuhost.CudaDriverError,
                       match="all_reduce\\(\\): this Communicator's rank 0 is on device 0 but the "
                             "stream is device 1's"):
        one.all_reduce(on(one, np.zeros(4)), stream=s1)


def test_a_destroyed_or_aborted_communicator_refuses_work():
    a = nccl.Communicator(1, nccl.get_unique_id(), 0)
    b = nccl.Communicator(1, nccl.get_unique_id(), 0)
    d = on(a, np.zeros(4))
    a.destroy()
    b.abort()
    assert repr(b).endswith("aborted>")
    with pytest.raises(ValueError, match=re.escape("all_reduce(): the Communicator was destroyed")):
        a.all_reduce(d)
    with pytest.raises(ValueError, match=re.escape("send(): the Communicator was aborted")):
        b.send(d, 0)
    with pytest.raises(ValueError, match="the Communicator was aborted"):
        b.check_async_error()


# ---- NCCL's own errors ----

def test_nccl_errors_carry_the_code_the_call_and_nccls_text(fnccl, one):
    d = on(one, np.zeros(4))
    fnccl.fail("AllReduce", 4)
    with pytest.raises(nccl.NcclError) as info:
        one.all_reduce(d)
    e = info.value
    assert (e.status, e.name, e.call) == (4, "NCCL_ERROR_INVALID_ARGUMENT", "ncclAllReduce")
    assert str(e).startswith("ncclAllReduce failed: NCCL_ERROR_INVALID_ARGUMENT: invalid argument")
    e2 = pickle.loads(pickle.dumps(e))
    assert (type(e2), e2.args, e2.status) == (nccl.NcclError, e.args, 4)


def test_a_dropped_communicator_whose_destroy_fails_warns(fnccl):
    c = nccl.Communicator(1, nccl.get_unique_id(), 0)
    fnccl.fail("CommDestroy", 3)
    with pytest.warns(RuntimeWarning, match=re.escape("ncclCommDestroy failed (3) for a "
                                                      "dropped Communicator")):
        del c


def test_init_failure_raises_and_leaks_nothing(fnccl):
    before = fnccl.live()
    fnccl.fail("CommInitRank", 2)
    with pytest.raises(nccl.NcclError, match="ncclCommInitRank failed: NCCL_ERROR_SYSTEM_ERROR"):
        nccl.Communicator(1, nccl.get_unique_id(), 0)
    assert fnccl.live() == before


def test_a_failed_call_in_all_to_all_still_ends_the_group(fnccl, comms):
    ds = [on(c, np.zeros(4 * len(comms))) for c in comms]
    fnccl.fail("Recv", 5)
    with pytest.raises(nccl.NcclError, match="ncclRecv failed: NCCL_ERROR_INVALID_USAGE"):
        comms[0].all_to_all(ds[0])
    with pytest.raises(nccl.NcclError, match="ncclGroupEnd failed: NCCL_ERROR_INVALID_USAGE"):
        gpuhost._core.nccl_group_end()  # no group left open


def test_group_ends_when_its_block_raises(fnccl):
    with pytest.raises(KeyError):
        with nccl.group():
            raise KeyError("x")
    with pytest.raises(nccl.NcclError, match="ncclGroupEnd"):
        gpuhost._core.nccl_group_end()


def test_async_errors_surface_and_wait_aborts(fnccl):
    c = nccl.Communicator(1, nccl.get_unique_id(), 0)
    fnccl.async_error(6)
    with pytest.raises(nccl.NcclError, match="NCCL_ERROR_REMOTE_ERROR.*injected asynchronous"):
        c.check_async_error()
    s = gpuhost.stream()
    fake = fnccl_driver()
    fake.gate_close()
    try:
        s.launch_host_func(lambda arg: None, None)
        with pytest.raises(nccl.NcclError, match="NCCL_ERROR_REMOTE_ERROR"):
            c.wait(s, timeout=30)
        assert c.closed and repr(c).endswith("aborted>")
    finally:
        fake.gate_open()


def test_wait_times_out_and_aborts_instead_of_hanging(fnccl):
    c = nccl.Communicator(1, nccl.get_unique_id(), 0)
    s = gpuhost.stream()
    fake = fnccl_driver()
    fake.gate_close()  # the stream's work cannot finish: a peer that never comes
    try:
        s.launch_host_func(lambda arg: None, None)
        with pytest.raises(TimeoutError, match="did not finish in 0.2 s; the Communicator was "
                                               "aborted"):
            c.wait(s, timeout=0.2)
        assert c.closed
    finally:
        fake.gate_open()
    s.synchronize()


def fnccl_driver():
    from conftest import FAKE_PATH, FakeDriver

    return FakeDriver(FAKE_PATH)


# ---- MPI and the launcher ----

class FakeMpiComm:
    """mpi4py's Comm as from_mpi uses it, for one process."""

    def __init__(self):
        self.bcasts = []

    def Get_rank(self):
        return 0

    def Get_size(self):
        return 1

    def bcast(self, obj, root=0):
        self.bcasts.append((obj, root))
        return obj


def test_from_mpi_broadcasts_rank_0s_unique_id():
    mpi = FakeMpiComm()
    with nccl.Communicator.from_mpi(mpi, device=0) as c:
        assert (c.rank, c.size) == (0, 1)
    [(uid, root)] = mpi.bcasts
    assert len(uid) == 128 and root == 0


def test_from_env_needs_a_launchers_environment(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(RuntimeError, match="not started as one rank of a job: none of RANK "
                                           "and WORLD_SIZE .* python -m gpuhost.launch"):
        nccl.Communicator.from_env()


def launch(args, timeout=300, env=None):
    env = dict(os.environ if env is None else env, NCCL_NVLS_ENABLE="0",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "gpuhost.launch"] + args, cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_the_launcher_sets_each_ranks_environment(tmp_path):
    script = tmp_path / "env.py"
    # one write per rank (atomic on a pipe), so that ranks' lines cannot interleave
    script.write_text("import os, sys\nsys.stdout.write('|'.join(os.environ.get(k, '-') for k in "
                      "('RANK', 'WORLD_SIZE', 'LOCAL_RANK', 'LOCAL_WORLD_SIZE', 'GROUP_RANK', "
                      "'MASTER_ADDR', 'GPUHOST_STORE')) + ' ' + os.environ['MASTER_PORT'] + "
                      "'\\n')\n")
    env = {k: v for k, v in os.environ.items() if k != "GPUHOST_STORE"}
    proc = launch(["-n", "3", str(script)], env=env)
    assert proc.returncode == 0, proc.stderr
    lines = sorted(proc.stdout.splitlines())
    assert [line.split()[0] for line in lines] == ["%d|3|%d|3|0|127.0.0.1|-" % (r, r)
                                                   for r in range(3)]
    ports = {line.split()[1] for line in lines}  # one free port, the same for every rank
    assert len(ports) == 1 and 0 < int(ports.pop()) < 65536


def test_the_launcher_stops_the_others_when_one_fails(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text("import os, sys, time\nif os.environ['RANK'] == '1':\n    sys.exit(7)\n"
                      "time.sleep(600)\n")
    proc = launch(["-n", "2", "--grace", "1", str(script)], timeout=60)
    assert proc.returncode == 7


FIRST_FAILURE = r"""
import os, sys, time
folder = sys.argv[1]
if os.environ["RANK"] == "1":
    with open(os.path.join(folder, "pid1.part"), "w") as f:
        f.write(str(os.getpid()))
    os.replace(os.path.join(folder, "pid1.part"), os.path.join(folder, "pid1"))  # whole or absent
    os._exit(7)
while not os.path.exists(os.path.join(folder, "pid1")):
    time.sleep(0.001)
pid = int(open(os.path.join(folder, "pid1")).read())  # never "": /proc//stat is /proc/stat
while True:  # until rank 1 is dead (a zombie, or reaped already)
    try:
        if open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()[0] in "ZX":
            break
    except (OSError, ValueError):
        break
    time.sleep(0.001)
time.sleep(0.02)  # well inside the launcher's 50 ms between looks
sys.exit(3)
"""


@pytest.mark.parametrize("attempt", range(3))
def test_the_launcher_reports_the_first_rank_to_fail_not_the_lowest(tmp_path, attempt):
    # rank 1 fails first; rank 0 (the lower rank) fails 20 ms later, as ranks whose
    # collectives broke when another died do: the launcher reports rank 1, as torchrun does
    script = tmp_path / "first.py"
    script.write_text(FIRST_FAILURE)
    proc = launch(["-n", "2", "--grace", "1", str(script), str(tmp_path)], timeout=60)
    assert proc.returncode == 7, proc.stderr
    assert "rank 1 (node 0, local rank 1, pid " in proc.stderr
    assert ") exited with status 7; stopping the others" in proc.stderr


def test_importing_the_launcher_keeps_gpuhost_launch_a_kernel_launch():
    import gpuhost.kernels
    import gpuhost.launch as launcher

    assert callable(gpuhost.launch) and callable(launcher.run)
    with pytest.raises(TypeError, match="launch\\(\\) takes a Kernel"):
        gpuhost.launch("not a kernel", 1, 1)


def test_the_launcher_refuses_zero_processes(tmp_path):
    proc = launch(["-n", "0", "x.py"])
    assert proc.returncode != 0 and "nproc must be at least 1" in proc.stderr


def test_the_allreduce_example_under_the_launcher_with_one_rank():
    proc = launch(["-n", "1", os.path.join(ROOT, "examples", "allreduce.py")])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "rank 0 of 1: all_reduce of 1048576 floats ok"


def processes():
    """One process per GPU, on every GPU there is."""
    return len(gpuhost.gpus)


def test_one_process_per_gpu_runs_every_collective_through_the_launcher():
    """Every GPU (every fake device), one process each: no shared folder involved."""
    n = processes()
    env = {k: v for k, v in os.environ.items() if k != "GPUHOST_STORE"}
    proc = launch(["-n", str(n), os.path.join(SCRIPTS, "nccl_ranks.py")], timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(re.findall(r"rank\d+:\S+", proc.stdout)) == \
        sorted("rank%d:ok" % r for r in range(n)), proc.stdout
    assert proc.stdout.count("gpuhost_store:unset") == n


@pytest.mark.gpu
def test_one_process_per_gpu_under_mpirun_with_cuda_aware_mpi_where_built():
    if shutil.which("mpirun") is None:
        pytest.skip("no mpirun")
    pytest.importorskip("mpi4py")
    n = processes()
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", str(n),
                           "-x", "PYTHONPATH", "-x", "NCCL_NVLS_ENABLE", sys.executable,
                           os.path.join(SCRIPTS, "nccl_ranks.py"), "--mpi"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(re.findall(r"rank\d+:\S+", proc.stdout)) == \
        sorted("rank%d:ok" % r for r in range(n))
    aware = re.findall(r"cuda-aware mpi: (ok|skipped: .+)", proc.stdout)
    assert len(aware) == n, proc.stdout
    print("cuda-aware mpi:", aware[0])  # in the GPU run's log


# ---- CuPy's names ----

def test_compat_cupy_nccl_takes_pointers_and_nccls_codes():
    from gpuhost.compat.cupy import nccl as cn

    assert cn.available and cn.get_version() == nccl.get_version()
    uid = cn.get_unique_id()
    comm = cn.NcclCommunicator(1, uid, 0)
    here = gpuhost.get_current_device().id  # a rank on the current device, as CuPy's
    assert (comm.rank_id(), comm.size(), comm.device_id()) == (0, 1, here)
    x = random_array("int64", 10)
    d, r = gpuhost.to_device(x), gpuhost.to_device(np.zeros(10, np.int64))
    cn.groupStart()
    comm.allReduce(d.ptr, r.ptr, 10, cn.NCCL_INT64, cn.NCCL_SUM, 0)
    cn.groupEnd()
    np.testing.assert_array_equal(r.copy_to_host(), x)
    comm.bcast(d.ptr, 10, cn.NCCL_INT64, 0, 0)
    comm.check_async_error()
    with pytest.raises(nccl.NcclError, match="NCCL_ERROR_INVALID_ARGUMENT"):
        comm.allReduce(d.ptr, r.ptr, 10, 99, cn.NCCL_SUM, 0)
    with pytest.raises(ValueError, match="is not a CUDA stream handle"):
        comm.allReduce(d.ptr, r.ptr, 10, cn.NCCL_INT64, cn.NCCL_SUM, 12345)
    assert comm.commSplit(-1, 0) is None
    sub = comm.commSplit(0, 0, cn.NcclConfig(split_share=1))
    assert sub.size() == 1
    sub.destroy()
    comm.destroy()
    assert comm.comm == 0


def test_compat_cupy_nccl_errors_match_cupys():
    from gpuhost.compat.cupy import nccl as cn

    with pytest.raises(TypeError):
        cn.NcclCommunicator(1, None, 0)
    with pytest.raises(TypeError):
        cn.NcclCommunicator(1, (1, 2, 3), 0)
    with pytest.raises(ValueError, match="commId length 10 != 128."):
        cn.NcclCommunicator(1, b"1234567890", 0)
    with pytest.raises(ValueError, match='"devices" should be an int or a list of int.'):
        cn.NcclCommunicator.initAll("x")
    e = cn.NcclError(1)
    assert str(e).startswith("NCCL_ERROR_UNHANDLED_CUDA_ERROR: unhandled cuda error")
    assert pickle.loads(pickle.dumps(e)).args == e.args
    comms = cn.NcclCommunicator.initAll(1)
    assert [c.rank_id() for c in comms] == [0]
    comms[0].destroy()


def test_collective_argument_parsing(one):
    d = on(one, np.zeros(4))
    with pytest.raises(TypeError, match=re.escape("all_reduce() got an unexpected keyword "
                                                  "argument 'root'")):
        one.all_reduce(d, root=0)
    with pytest.raises(TypeError, match=re.escape("all_reduce() missing required argument "
                                                  "'send' (pos 1)")):
        one.all_reduce()
    with pytest.raises(TypeError, match=re.escape("reduce() got multiple values for argument "
                                                  "'recv'")):
        one.reduce(d, None, recv=d)
    with pytest.raises(TypeError, match=re.escape("all_to_all() takes at most 3 arguments "
                                                  "(4 given)")):
        one.all_to_all(d, d, None, None)
    with pytest.raises(TypeError, match=re.escape("send(): peer must be an int, not float")):
        one.send(d, 0.0)
    with pytest.raises(ValueError, match=re.escape("broadcast(): root 4294967296 is out of "
                                                   "range")):
        one.broadcast(d, root=2**32)
    with pytest.raises(TypeError, match="stream"):
        one.all_reduce(d, stream="s")


def _sweep_ops():
    """(the NCCL entry points an operation calls, the operation)."""
    def two(fn):
        def run():
            comms = nccl.Communicator.init_all(len(gpuhost.gpus))
            ds = [on(c, np.ones(4 * len(comms), np.float32)) for c in comms]
            try:
                with nccl.group():
                    for c, d in zip(comms, ds):
                        fn(c, d)
            finally:
                for c in comms:
                    c.destroy()
        return run

    def one(fn):
        def run():
            c = nccl.Communicator(1, nccl.get_unique_id(), 0)
            try:
                fn(c)
            finally:
                c.destroy()
        return run

    return [
        (["GetVersion"], nccl.get_version),
        (["GetUniqueId"], nccl.get_unique_id),
        (["CommInitRank", "CommUserRank", "CommCount"], one(lambda c: None)),
        (["CommInitRankConfig"],
         lambda: nccl.Communicator(1, nccl.get_unique_id(), 0, split_share=True).destroy()),
        (["CommInitAll"], two(lambda c, d: None)),
        (["AllReduce"], two(lambda c, d: c.all_reduce(d))),
        (["Reduce"], two(lambda c, d: c.reduce(d))),
        (["Broadcast"], two(lambda c, d: c.broadcast(d))),
        (["AllGather"], two(lambda c, d: c.all_gather(d))),
        (["ReduceScatter"], two(lambda c, d: c.reduce_scatter(d))),
        (["Send", "Recv"], two(lambda c, d: (c.send(d, c.rank), c.recv(d, c.rank)))),
        (["GroupStart", "GroupEnd"], two(lambda c, d: c.all_to_all(d))),
        (["CommSplit"], one(lambda c: c.split(0, 0))),
        (["CommGetAsyncError"], one(lambda c: c.check_async_error())),
        (["CommDestroy"], lambda: nccl.Communicator(1, nccl.get_unique_id(), 0).destroy()),
        (["CommAbort"], lambda: nccl.Communicator(1, nccl.get_unique_id(), 0).abort()),
        (["MemAlloc"], lambda: nccl.device_array(4)),
        (["CommRegister", "CommDeregister"],
         one(lambda c: c.register(nccl.device_array(4)).close())),
    ]


@pytest.mark.parametrize("names, op", _sweep_ops(),
                         ids=[",".join(n) for n, _ in _sweep_ops()])
def test_every_nccl_failure_is_raised_never_ignored(fnccl, names, op):
    for name in names:
        before = fnccl.live()
        fnccl.fail(name, 3)
        with pytest.raises(nccl.NcclError) as info:
            op()
        assert (info.value.status, info.value.call) == (3, "nccl" + name)
        assert "NCCL_ERROR_INTERNAL_ERROR" in str(info.value)
        if name != "CommAbort":  # a failed abort leaves NCCL's resources to NCCL
            assert fnccl.live() <= before  # a failed step leaks no communicator
        fnccl.fail("", 0)
        op()  # and the same operation works again
