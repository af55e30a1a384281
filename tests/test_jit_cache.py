"""gpuhost.jit's disk records (gpuhost/_jitcache.py, _jitrecords.py): a `cache=True` kernel
compiled by one process is launched by the next from C, without importing numba-cuda.

Every process here is a fresh interpreter (tests/scripts/jit_cache_child.py) over a kernel
module written into the test's folder.  On the fake driver numba-cuda compiles for the fake
device's compute capability (it needs no GPU for that) and the fake records each launch
byte for byte (tests/fakecuda, kernels mode), so the whole path runs without a GPU; the
tests marked gpu check the results on a real one.
"""
import json
import os
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gpuhost
from gpuhost import _cache, _jitcache

pytest.importorskip("numba_cuda", reason="gpuhost.jit needs numba-cuda")

from conftest import DRIVER  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHILD = os.path.join(ROOT, "tests", "scripts", "jit_cache_child.py")
rng = np.random.default_rng()
gpu = pytest.mark.gpu
fake_only = pytest.mark.skipif(DRIVER != "fake", reason="reads the fake driver's launch records")


def child(folder, module, *flags, cache=None, env=None, timeout=300):
    """Run `module` (FOLDER/module.py) in a fresh process; its report (jit_cache_child.py)."""
    full = dict(os.environ)
    full.update(PYTHONPATH=ROOT, GPUHOST_CACHE_DIR=str(cache or os.path.join(folder, "cache")),
                NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS="0")
    full.pop("NUMBA_CACHE_DIR", None)
    for key, value in (env or {}).items():
        if value is None:
            full.pop(key, None)
        else:
            full[key] = value
    proc = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", CHILD, str(folder),
                           module, *flags], env=full, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, "child failed (%d):\n%s\n%s" % (proc.returncode, proc.stdout,
                                                                proc.stderr[-6000:])
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("__REPORT__")][-1]
    report = json.loads(line[len("__REPORT__"):])
    report["stderr"] = proc.stderr
    return report


def write(folder, name, source):
    path = os.path.join(folder, name + ".py")
    with open(path, "w") as f:
        f.write(textwrap.dedent(source))
    return path


def params(*parts):
    """A kernel's parameter buffer as numba lays it out: each (struct format, value) at the
    next offset aligned to its size."""
    out = bytearray()
    for fmt, value in parts:
        size = struct.calcsize("<" + fmt)
        out.extend(b"\0" * (-len(out) % size))
        out.extend(struct.pack("<" + fmt, value))
    return bytes(out)


def array_params(ptr, shape, itemsize):
    """numba's parameters of a C-contiguous array: meminfo, parent, nitems, itemsize, data,
    shape, strides."""
    strides, step = [], itemsize
    for extent in reversed(shape):
        strides.insert(0, step)
        step *= extent
    return [("q", 0), ("q", 0), ("q", int(np.prod(shape))), ("q", itemsize), ("Q", ptr)] + \
        [("q", s) for s in shape] + [("q", s) for s in strides]


def no_numba(report):
    assert report["numba"] == [], "numba was imported: %s" % report["numba"][:5]


def numba_used(report):
    assert "numba.cuda" in report["numba"] and "llvmlite" in report["numba"]


def record_files(cache):
    root = os.path.join(str(cache), "jit")
    return sorted(os.path.join(root, d, n) for d in os.listdir(root)
                  for n in os.listdir(os.path.join(root, d)))


SAXPY = """
import numpy as np
import gpuhost as cuda
import __main__ as child

@cuda.jit(cache=True)
def saxpy(r, a, x, y):
    i = cuda.grid(1)
    if i < r.size:
        r[i] = a * x[i] + y[i]

def run():
    n = 4096
    x = cuda.to_device(np.arange(n, dtype=np.float32))
    y = cuda.to_device(np.ones(n, np.float32))
    r = cuda.device_array(n, np.float32)
    saxpy[n // 128, 128](r, np.float32(2.5), x, y)
    first = child.launch()
    saxpy[n // 128, 128](r, np.float32(-1.5), x, y)
    return {"first": first, "second": child.launch(), "ptrs": [r.ptr, x.ptr, y.ptr], "n": n,
            "entries": len(saxpy._jit_entries()), "out": r.copy_to_host()[:4].tolist()}
"""


def _saxpy_params(out, a):
    r, x, y = out["ptrs"]
    n = out["n"]
    return params(*array_params(r, (n,), 4), ("f", a), *array_params(x, (n,), 4),
                  *array_params(y, (n,), 4))


@fake_only
def test_a_cached_kernel_is_launched_by_the_next_process_without_numba(tmp_path):
    write(tmp_path, "saxpy_mod", SAXPY)
    first = child(tmp_path, "saxpy_mod")
    numba_used(first)
    assert first["info"]["misses"] == 1 and first["info"]["hits"] == 0
    assert first["info"]["writes"] == 2 and first["info"]["write_errors"] == 0  # overload, key
    second = child(tmp_path, "saxpy_mod")
    no_numba(second)
    assert second["info"]["hits"] == 1 and second["info"]["misses"] == 0
    assert second["info"]["writes"] == 0 and second["info"]["kernels"] == 1
    assert second["launches"] == 2
    for report in (first, second):
        out = report["out"]
        assert bytes.fromhex(out["first"]["params"]) == _saxpy_params(out, 2.5)
        assert bytes.fromhex(out["second"]["params"]) == _saxpy_params(out, -1.5)
        assert out["first"]["dims"][:6] == [32, 1, 1, 128, 1, 1]
        assert out["entries"] == 1  # the second launch was C's
    assert second["out"]["first"]["name"] == first["out"]["first"]["name"]
    # numba's own cache files are in __pycache__ and nothing of gpuhost's is
    pycache = sorted(f for f in os.listdir(tmp_path / "__pycache__") if not f.endswith(".pyc"))
    assert [f.rsplit(".", 2)[-2:] for f in pycache] == [["1", "nbc"], ["py311", "nbi"]] or \
        len(pycache) == 2 and all(f.endswith((".nbi", ".nbc")) for f in pycache)
    assert all(p.endswith(".jit") for p in record_files(tmp_path / "cache"))


DECORATE_ONLY = """
import gpuhost as cuda

@cuda.jit(device=True)
def helper(a):
    return a + 1

@cuda.jit(cache=True)
def kernel(r):
    r[0] = helper(r[0])

@cuda.jit("void(float32[::1])", cache=True, device=False, lineinfo=True)
def eager(r):
    r[0] = 1

def run():
    return {"kernel": repr(kernel), "helper": repr(helper), "specialized": eager.specialized}
"""


@fake_only
def test_decorating_cached_kernels_and_device_functions_imports_no_numba(tmp_path):
    write(tmp_path, "decorate_mod", DECORATE_ONLY)
    first = child(tmp_path, "decorate_mod")
    numba_used(first)  # the eager kernel compiled at decoration, as numba does
    again = child(tmp_path, "decorate_mod")
    no_numba(again)
    assert again["out"] == {"kernel": "<gpuhost.jit Dispatcher of kernel>",
                            "helper": "<gpuhost.jit device function helper>",
                            "specialized": True}
    assert again["info"]["hits"] == 1 and again["launches"] == 0


EAGER = """
import numpy as np
import gpuhost as cuda
import __main__ as child

@cuda.jit("void(float32[::1], float32)", cache=True)
def scale(x, a):
    i = cuda.grid(1)
    if i < x.size:
        x[i] *= a

def run():
    x = cuda.to_device(np.arange(256, dtype=np.float32))
    scale[2, 128](x, 2.0)  # a Python float: converted to float32, as numba converts it
    first = child.launch()
    scale[2, 128](x, np.float32(0.25))
    return {"first": first, "second": child.launch(), "ptr": x.ptr}
"""


@fake_only
def test_eager_signatures_are_recorded_with_the_conversions_numba_made(tmp_path):
    write(tmp_path, "eager_mod", EAGER)
    first = child(tmp_path, "eager_mod")
    numba_used(first)
    second = child(tmp_path, "eager_mod")
    no_numba(second)
    assert second["info"]["hits"] == 1
    for report in (first, second):
        out = report["out"]
        base = array_params(out["ptr"], (256,), 4)
        assert bytes.fromhex(out["first"]["params"]) == params(*base, ("f", 2.0))
        assert bytes.fromhex(out["second"]["params"]) == params(*base, ("f", 0.25))


CALLER = """
import numpy as np
import gpuhost as cuda
import __main__ as child
from callee_mod import offset

@cuda.jit(cache=True)
def add_offset(r, x):
    i = cuda.grid(1)
    if i < r.size:
        r[i] = offset(x[i])

def run():
    x = cuda.to_device(np.arange(128, dtype=np.int64))
    r = cuda.device_array(128, np.int64)
    add_offset[1, 128](r, x)
    return {"ptx": child.ptx(add_offset)}
"""

CALLEE = """
import gpuhost as cuda

@cuda.jit(device=True)
def offset(v):
    return v + {constant}
"""


@fake_only
def test_an_edited_device_function_never_launches_a_stale_caller(tmp_path):
    write(tmp_path, "caller_mod", CALLER)
    write(tmp_path, "callee_mod", CALLEE.format(constant=424242))
    first = child(tmp_path, "caller_mod")
    numba_used(first)
    assert any("424242" in p for p in first["out"]["ptx"])
    write(tmp_path, "callee_mod", CALLEE.format(constant=535353))  # the caller's file is the same
    edited = child(tmp_path, "caller_mod")
    numba_used(edited)  # a miss: the callee's code is part of the caller's key
    assert edited["info"]["misses"] == 1 and edited["info"]["hits"] == 0
    assert all("424242" not in p for p in edited["out"]["ptx"])
    assert any("535353" in p for p in edited["out"]["ptx"])
    again = child(tmp_path, "caller_mod")
    no_numba(again)
    assert any("535353" in p for p in again["out"]["ptx"])
    # the records of the callee's earlier version were removed with its first new record
    assert len(record_files(tmp_path / "cache")) == 2


FACTORY = """
import numpy as np
import gpuhost as cuda
import __main__ as child

def make(k, **options):
    @cuda.jit(cache=True, **options)
    def add_k(r):
        r[0] = k
    return add_k

three, five, five_fast = make(3), make(5), make(5, fastmath=True)

def run():
    r = cuda.device_array(1, np.int64)
    names = []
    for kernel in (three, five, five_fast):
        kernel[1, 1](r)
        names.append(child.launch()["name"])
    return {"names": names, "ptx": {"three": child.ptx(three), "five": child.ptx(five)}}
"""


@fake_only
def test_captured_values_and_options_key_their_own_records(tmp_path):
    write(tmp_path, "factory_mod", FACTORY)
    first = child(tmp_path, "factory_mod")
    numba_used(first)
    assert first["info"]["misses"] == 3 and first["info"]["kernels"] == 3
    second = child(tmp_path, "factory_mod")
    no_numba(second)
    assert second["info"]["hits"] == 3
    ptx = second["out"]["ptx"]
    assert any("st.global.u64" in p and ", 3;" in p for p in ptx["three"])
    assert any(", 5;" in p for p in ptx["five"]) and not any(", 5;" in p for p in ptx["three"])


HINTS = """
import numpy as np
import gpuhost as cuda
import __main__ as child

@cuda.jit(cache=True)
def copy(dst, src):
    i = cuda.grid(1)
    if i < dst.size:
        dst[i] = src[i]

def counts():
    return child.calls("cuMemcpyHtoDAsync") + child.calls("cuMemcpyHtoD"), \\
        child.calls("cuMemcpyDtoHAsync") + child.calls("cuMemcpyDtoH")

def run():
    host_src = np.arange(200, dtype=np.float64)
    host_dst = np.zeros(200)
    out = {}
    for name, dst in (("plain", host_dst), ("out", cuda.Out(host_dst)),
                      ("inout", cuda.InOut(host_dst))):
        before = counts()
        copy[2, 128](dst, cuda.In(host_src))
        after = counts()
        out[name] = [after[0] - before[0], after[1] - before[1]]
    return out
"""


@fake_only
def test_host_arrays_and_in_out_hints_take_the_cached_path_with_numbas_copies(tmp_path):
    write(tmp_path, "hints_mod", HINTS)
    first = child(tmp_path, "hints_mod")
    second = child(tmp_path, "hints_mod")
    no_numba(second)
    assert second["launches"] == 3 and second["info"]["hits"] == 1  # one overload, three keys
    # copies to the device, back to the host: In copies in only, Out back only
    expect = {"plain": [2, 1], "out": [1, 1], "inout": [2, 1]}
    assert first["out"] == second["out"] == expect


FEATURES = """
import numpy as np
import gpuhost as cuda
import __main__ as child

@cuda.jit(cache=True)
def grid_sync(r):
    g = cuda.cg.this_grid()
    r[cuda.grid(1)] = 1
    g.sync()

@cuda.jit(cache=True, launch_bounds=128)
def bounded(r):
    r[cuda.grid(1)] = 2

@cuda.jit(cache=True)
def tasks(r, n):
    i = cuda.grid(1)
    if i < n:
        r[i] = i

def run():
    r = cuda.device_array(256, np.int32)
    grid_sync[2, 128](r)
    coop = child.launch()
    bounded[2, 128](r)
    tasks.forall(200, tpb=64)(r, 200)
    forall = child.launch()
    return {"coop": coop["cooperative"], "forall": forall["dims"][:6],
            "links": [sorted(m["links"]) for m in grid_sync._rec.metas.values()]}
"""


@fake_only
def test_cooperative_launch_bounds_and_forall_take_the_cached_path(tmp_path):
    write(tmp_path, "features_mod", FEATURES)
    first = child(tmp_path, "features_mod")
    assert first["out"]["coop"] == 1
    second = child(tmp_path, "features_mod")
    no_numba(second)
    assert second["info"]["hits"] == 3
    assert second["out"]["coop"] == 1  # a cooperative launch, from the record
    assert second["out"]["forall"] == [4, 1, 1, 64, 1, 1]
    assert second["out"]["links"] == [["cudadevrt"]]


SIX = "\n".join("""
@cuda.jit(cache=True)
def k{i}(r):
    r[0] = {i}
""".format(i=i) for i in range(6))

SIX_MOD = """
import numpy as np
import gpuhost as cuda
import __main__ as child
""" + SIX + """
def run():
    r = cuda.device_array(1, np.int64)
    names = []
    for k in (k0, k1, k2, k3, k4, k5):
        k[1, 1](r)
        names.append(child.launch()["name"])
    return {"names": names}
"""


def _records_by_kernel(cache, names):
    """{kernel index: {"overload": path, "alias": path}} of SIX_MOD's kernels, from the entry
    name each overload record holds and the kernel names launched (`names`)."""
    root = os.path.join(str(cache), "jit")
    out = {}
    for folder in os.listdir(root):
        kinds = {}
        for name in os.listdir(os.path.join(root, folder)):
            fields = _cache.load(os.path.join(root, folder), name[:-4], ".jit")
            kinds[fields["kind"]] = (os.path.join(root, folder, name), fields)
        out[names.index(kinds["overload"][1]["entry"])] = kinds
    return out


def _damage(path, how):
    data = open(path, "rb").read()
    data = {"truncated": data[:len(data) // 2],
            "flipped": data[:-7] + bytes([data[-7] ^ 0x5A]) + data[-6:],
            "garbage": os.urandom(len(data)), "empty": b""}[how]
    with open(path, "wb") as f:
        f.write(data)


@fake_only
def test_corrupt_truncated_foreign_or_unloadable_records_are_compiled_again(tmp_path):
    write(tmp_path, "six_mod", SIX_MOD)
    first = child(tmp_path, "six_mod")
    names = first["out"]["names"]
    records = _records_by_kernel(tmp_path / "cache", names)
    assert sorted(records) == list(range(6))
    for i, how in enumerate(("truncated", "flipped", "garbage", "empty")):
        _damage(records[i]["overload"][0], how)
        _damage(records[i]["alias"][0], how)
    # kernel 4's overload file holds kernel 5's record: whole, but not the one of its name
    foreign = open(records[5]["overload"][0], "rb").read()
    open(records[4]["overload"][0], "wb").write(foreign)
    # kernel 5's is whole and its own, but its code is nothing the driver loads
    path, fields = records[5]["overload"]
    fields.update(code=b"\x7fELF not a cubin", ptx=b"not PTX at all")
    _cache.store(os.path.dirname(path), os.path.basename(path)[:-4], fields, ".jit")
    again = child(tmp_path, "six_mod")
    numba_used(again)
    assert again["out"]["names"] == names and again["launches"] == 6
    assert again["info"]["misses"] == 6 and again["info"]["hits"] == 0
    healed = child(tmp_path, "six_mod")
    no_numba(healed)
    assert healed["info"]["hits"] == 6 and healed["out"]["names"] == names


@fake_only
@pytest.mark.parametrize("how", ["a file", "unwritable", "full"])
def test_a_cache_folder_that_cannot_be_written_leaves_kernels_uncached_not_failing(tmp_path, how):
    write(tmp_path, "saxpy_mod", SAXPY)
    cache, flags = tmp_path / "cache", ()
    if how == "a file":
        cache.write_text("not a folder")
    elif how == "unwritable":
        flags = ("--unwritable",)
    else:
        flags = ("--fsize", "4096")  # a record of the cubin is larger
    report = child(tmp_path, "saxpy_mod", *flags, cache=cache)
    assert report["launches"] == 2 and report["info"]["write_errors"] >= 1
    assert report["info"]["writes"] == 0 or how == "full"
    assert "Traceback" not in report["stderr"] and "RuntimeWarning" not in report["stderr"]
    out = report["out"]
    assert bytes.fromhex(out["first"]["params"]) == _saxpy_params(out, 2.5)
    if how != "a file":
        assert not any(n.endswith(".tmp") for p in [str(cache / "jit")] if os.path.isdir(p)
                       for d in os.listdir(p) for n in os.listdir(os.path.join(p, d)))


@fake_only
def test_a_read_only_cache_folder_is_read_and_never_written(tmp_path):
    write(tmp_path, "saxpy_mod", SAXPY)
    child(tmp_path, "saxpy_mod")
    files = record_files(tmp_path / "cache")
    for path in [os.path.dirname(files[0]), str(tmp_path / "cache" / "jit")]:
        os.chmod(path, 0o555)
    try:
        if os.access(os.path.dirname(files[0]), os.W_OK) and os.geteuid() == 0:
            pytest.skip("this user writes into read-only folders (root)")
        report = child(tmp_path, "saxpy_mod")
    finally:
        for path in [os.path.dirname(files[0]), str(tmp_path / "cache" / "jit")]:
            os.chmod(path, 0o755)
    no_numba(report)
    assert report["info"]["hits"] == 1


CONCURRENT = """
import os
import numpy as np
import gpuhost as cuda
import __main__ as child

@cuda.jit(cache=True)
def fill(r, v):
    i = cuda.grid(1)
    if i < r.size:
        r[i] = v

def run():
    r = cuda.device_array(512, np.float64)
    for v in (1.5, 2, np.int8(3), (4.0)):
        fill[4, 128](r, v)
    return {"pid": os.getpid()}
"""


@fake_only
def test_processes_filling_one_cache_at_once_leave_whole_records(tmp_path):
    write(tmp_path, "fill_mod", CONCURRENT)
    env = dict(os.environ, PYTHONPATH=ROOT, GPUHOST_CACHE_DIR=str(tmp_path / "cache"),
               NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS="0")
    procs = [subprocess.Popen([sys.executable, CHILD, str(tmp_path), "fill_mod"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-4000:]
    files = record_files(tmp_path / "cache")
    assert not [f for f in files if not f.endswith(".jit")]  # no temporary file left
    for path in files:
        assert _cache.load(os.path.dirname(path), os.path.basename(path)[:-4], ".jit")
    after = child(tmp_path, "fill_mod")
    no_numba(after)
    assert after["info"]["hits"] >= 1 and after["launches"] == 4


def test_readers_never_see_a_record_being_written(tmp_path):
    """Writers replace one record with payloads of different sizes while a reader loads it:
    every load is one payload whole, or nothing before the first write."""
    import random

    folder, key, seed = str(tmp_path), "r" * 40, int(rng.integers(1 << 30))
    sizes = (10, 70000, 3000)
    payloads = [random.Random(seed + n).randbytes(n) for n in sizes]
    writer = textwrap.dedent("""
        import random, sys
        sys.path.insert(0, %r)
        from gpuhost import _cache
        payloads = [random.Random(%d + n).randbytes(n) for n in %r]
        for i in range(300):
            _cache.store(%r, %r, {"code": payloads[i %% 3], "ptx": None}, ".jit")
    """ % (ROOT, seed, sizes, folder, key))
    procs = [subprocess.Popen([sys.executable, "-c", writer]) for _ in range(2)]
    seen = set()
    while any(p.poll() is None for p in procs):
        fields = _cache.load(folder, key, ".jit")
        if fields is not None:
            assert fields["code"] in payloads
            seen.add(len(fields["code"]))
    assert all(p.wait() == 0 for p in procs)
    assert seen and os.listdir(folder) == [key + ".jit"]


DEVICES = """
import sys
import numpy as np
import gpuhost as cuda
import __main__ as child

@cuda.jit(cache=True)
def inc(r):
    r[0] += 1

def run():
    out = []
    for dev in [int(d) for d in sys.argv[3].split(",")]:
        with cuda.gpus[dev]:
            r = cuda.device_array(1, np.int32)
            inc[1, 1](r)
            out.append(child.launch()["name"])
    return out
"""


@fake_only
def test_each_compute_capability_and_driver_version_has_its_own_records(tmp_path):
    write(tmp_path, "devices_mod", DEVICES)
    on0 = child(tmp_path, "devices_mod", "0")  # the fake's device 0: cc 9.0, device 1: 8.0
    numba_used(on0)
    on1 = child(tmp_path, "devices_mod", "1")
    numba_used(on1)
    assert on1["info"]["misses"] == 1
    both = child(tmp_path, "devices_mod", "0,1")
    no_numba(both)
    assert both["info"]["hits"] == 2
    other = child(tmp_path, "devices_mod", "0", env={"FAKECUDA_DRIVER_VERSION": "12080"})
    numba_used(other)
    assert other["info"]["misses"] == 1


RECOMPILE = """
import sys
import numpy as np
import gpuhost as cuda

@cuda.jit(cache=True)
def store(r):
    r[0] = 7

def run():
    r = cuda.device_array(1, np.int32)
    store[1, 1](r)
    if sys.argv[3:] == ["recompile"]:
        store.recompile()
    return sum(store._rec.hits.values())
"""


@fake_only
def test_recompile_forgets_the_records_in_every_process(tmp_path):
    write(tmp_path, "recompile_mod", RECOMPILE)
    child(tmp_path, "recompile_mod")
    assert len(record_files(tmp_path / "cache")) == 2
    dropped = child(tmp_path, "recompile_mod", "recompile")
    assert dropped["out"] == 1  # launched from the records, then recompiled
    assert record_files(tmp_path / "cache") == []
    after = child(tmp_path, "recompile_mod")
    numba_used(after)
    assert after["info"]["misses"] == 1


STATS = """
import numpy as np
import gpuhost as cuda

@cuda.jit(cache=True)
def twice(r):
    r[0] *= 2

def run():
    r = cuda.device_array(1, np.float32)
    twice[1, 1](r)
    twice[1, 1](r)
    st = twice.stats
    return [sum(st.cache_hits.values()), sum(st.cache_misses.values())]
"""


@fake_only
def test_stats_count_a_launch_from_the_records_as_numbas_cache_hit(tmp_path):
    write(tmp_path, "stats_mod", STATS)
    assert child(tmp_path, "stats_mod")["out"] == [0, 1]
    assert child(tmp_path, "stats_mod")["out"] == [1, 0]
    gpuhost_cleared = child(tmp_path, "stats_mod", cache=tmp_path / "other")
    assert gpuhost_cleared["out"] == [1, 0]  # no records there: numba's own cache hit


# ---- keys, without processes ----

def _function(tmp_path, name, source, env=None):
    """The function `name` of a module made of `source`, imported afresh."""
    import importlib.util

    path = write(tmp_path, name, source)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


KEYED = """
import gpuhost as cuda
from keyed_callee import helper
LIMIT = {limit}

@cuda.jit(cache=True)
def kernel(r):
    r[0] = helper({body}) + LIMIT
"""


def _fkey(tmp_path, tag, limit=1, body="1", callee="x + 1", options=None, sigs=None):
    write(tmp_path, "keyed_callee", "def helper(x):\n    return %s\n" % callee)
    sys.modules.pop("keyed_callee", None)
    sys.path.insert(0, str(tmp_path))
    try:
        mod = _function(tmp_path, "keyed_" + tag, KEYED.format(limit=limit, body=body))
    finally:
        sys.path.remove(str(tmp_path))
    k = _jitcache.Kernel(mod.kernel.py_func, options or {"cache": True}, sigs)
    return k.fkey, k.folder


def test_the_function_key_holds_the_code_and_every_callees_code(tmp_path):
    base, folder = _fkey(tmp_path, "a")
    assert _fkey(tmp_path, "a")[0] == base  # the same source: the same key
    assert _fkey(tmp_path, "a", body="2")[0] != base
    assert _fkey(tmp_path, "a", callee="x + 2")[0] != base  # an edited callee, another file
    assert _fkey(tmp_path, "a", options={"cache": True, "fastmath": True})[0] != base
    assert _fkey(tmp_path, "a", sigs=["void(int64[::1])"])[0] != base
    # a global's value is frozen when numba compiles, as numba documents: not in the key,
    # but the source file holding it is (editing LIMIT there changes the key)
    assert _fkey(tmp_path, "a", limit=2)[0] != base


def test_the_key_follows_numbas_environment_and_the_versions(tmp_path, monkeypatch):
    base, _ = _fkey(tmp_path, "b")
    monkeypatch.setenv("NUMBA_OPT", "0")
    assert _fkey(tmp_path, "b")[0] != base
    monkeypatch.delenv("NUMBA_OPT")
    monkeypatch.setenv("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")  # warnings: not the code
    assert _fkey(tmp_path, "b")[0] == base
    versions = dict(_jitcache.versions())
    monkeypatch.setattr(_jitcache, "_versions", dict(versions, **{"numba-cuda": "0.30.99"}))
    assert _fkey(tmp_path, "b")[0] != base
    monkeypatch.setattr(_jitcache, "_versions", dict(versions, gpuhost="9.9.9"))
    assert _fkey(tmp_path, "b")[0] != base


def test_a_closure_over_an_object_numba_cannot_freeze_is_not_keyed():
    class Opaque:
        pass

    thing = Opaque()

    def kernel(r):
        r[0] = thing.value

    with pytest.raises(_jitcache.Unkeyable, match="a captured Opaque"):
        _jitcache.Kernel(kernel, {"cache": True}, None)


def test_records_are_named_by_compute_capability_driver_and_arguments(tmp_path):
    k = _jitcache.Kernel(_function(tmp_path, "keyed_d", "def f(r):\n    r[0] = 1\n").f,
                         {"cache": True}, None)
    names = {k.name(cc, drv, kind, what) for cc in ((9, 0), (8, 0)) for drv in ((12, 8), (13, 0))
             for kind, what in (("args", b"C\x01"), ("args", b"C\x02"), ("sig", "(int64,)"))}
    assert len(names) == 12 and all(n.startswith(k.prefix) for n in names)


@pytest.mark.parametrize("env, expect", [
    ({"GPUHOST_CACHE_DIR": "/x/gh", "NUMBA_CACHE_DIR": "/x/nb"}, "/x/gh/jit"),
    ({"GPUHOST_CACHE_DIR": None, "NUMBA_CACHE_DIR": "/x/nb"}, "/x/nb/gpuhost-jit"),
    ({"GPUHOST_CACHE_DIR": None, "NUMBA_CACHE_DIR": None, "XDG_CACHE_HOME": "/x/xdg"},
     "/x/xdg/gpuhost/jit"),
    ({"GPUHOST_CACHE_DIR": None, "NUMBA_CACHE_DIR": None, "XDG_CACHE_HOME": None,
      "HOME": "/x/home"}, "/x/home/.cache/gpuhost/jit"),
])
def test_the_records_folder_follows_gpuhosts_then_numbas_variables(monkeypatch, env, expect):
    for key, value in env.items():
        if value is None:
            monkeypatch.delenv(key, raising=False)
        else:
            monkeypatch.setenv(key, value)
    assert _jitcache.cache_dir() == expect


BOTH_TARGETS = """
    import os

    import numpy as np
    from numba import njit

    import gpuhost

    def assign(r, x):
        r[0] = x[0]

    on_cpu = njit(cache=True)(assign)
    on_gpu = gpuhost.jit(cache=True)(assign)

    def run():
        r, x = np.zeros(1, np.int64), np.array([5])
        on_cpu(r, x)
        d = gpuhost.to_device(np.zeros(1, np.int64))
        on_gpu[1, 1](d, gpuhost.to_device(x))
        gpuhost.synchronize()
        here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__")
        return {"files": sorted(f for f in os.listdir(here) if f.startswith("both_mod.assign")),
                "cpu_hits": sum(on_cpu.stats.cache_hits.values()), "cpu": int(r[0])}
"""


def test_a_function_cached_for_the_cpu_and_for_cuda_keeps_both_in_one_index(tmp_path):
    """numba's CPU target and numba-cuda share one index file per function; numba 0.68
    stamps the source by content, numba-cuda 0.30 by mtime and size, and without gpuhost's
    alignment each target's save dropped the other's entries (numba-cuda's own
    CUDAAndCPUCachingTest)."""
    pytest.importorskip("numba.core.caching", reason="needs numba's CPU target")
    write(tmp_path, "both_mod", BOTH_TARGETS)
    first = child(tmp_path, "both_mod")
    files = first["out"]["files"]
    assert [f.rsplit(".", 1)[-1] for f in files] == ["nbc", "nbc", "nbi"], files  # 2 data
    assert first["out"]["cpu_hits"] == 0 and first["out"]["cpu"] == 5
    second = child(tmp_path, "both_mod")
    assert second["out"] == dict(first["out"], cpu_hits=1)  # the CPU's entry survived
    assert second["numba"] and "numba.cuda" not in second["numba"]  # CUDA: gpuhost's records


def test_cache_info_counts_the_records_and_clear_removes_them(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUHOST_CACHE_DIR", str(tmp_path))
    k = _jitcache.Kernel(_function(tmp_path, "keyed_e", "def f(r):\n    r[0] = 1\n").f,
                         {"cache": True}, None)
    payload = os.urandom(1000)
    assert k.store(k.name((9, 0), (13, 0), "sig", "(int64,)"), {"kind": "overload"}, payload)
    assert k.store(k.name((9, 0), (13, 0), "args", b"C"), {"kind": "alias", "sig": "(int64,)"})
    info = gpuhost.jit_cache_info()
    assert info.path == str(tmp_path / "jit") and (info.kernels, info.files) == (1, 2)
    assert info.bytes > 1000
    # numba's files beside the source stay. The import above may have put its bytecode in
    # that __pycache__ already (unless PYTHONDONTWRITEBYTECODE is set): that stays too.
    pycache = tmp_path / "__pycache__"
    pycache.mkdir(exist_ok=True)
    (pycache / "mod.f-1.py311.nbi").write_bytes(b"numba's")
    before = sorted(os.listdir(pycache))
    assert "mod.f-1.py311.nbi" in before
    assert gpuhost.clear_jit_cache() == 2
    assert gpuhost.jit_cache_info()[1:4] == (0, 0, 0)
    assert os.listdir(tmp_path / "jit") == []  # the kernel's folder went with its records
    assert sorted(os.listdir(pycache)) == before


# ---- on a GPU: the results ----

GPU_SAXPY = """
import numpy as np
import gpuhost as cuda

@cuda.jit(device=True)
def mul(a, x):
    return a * x

@cuda.jit(cache=True)
def saxpy(r, a, x, y):
    i = cuda.grid(1)
    if i < r.size:
        r[i] = mul(a, x[i]) + y[i]

@cuda.jit("void(float32[::1], float32)", cache=True)
def scale(x, a):
    i = cuda.grid(1)
    if i < x.size:
        x[i] *= a

@cuda.jit(cache=True)
def total(x, out):
    g = cuda.cg.this_grid()
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(out, 0, x[i])
    g.sync()

def run():
    rng = np.random.default_rng(int.from_bytes(__import__("os").urandom(4), "little"))
    n = 65536
    x, y = rng.random(n).astype(np.float32), rng.random(n).astype(np.float32)
    r = cuda.device_array(n, np.float32)
    saxpy[n // 256, 256](r, np.float32(2), cuda.to_device(x), cuda.to_device(y))
    ok = [bool(np.array_equal(r.copy_to_host(), np.float32(2) * x + y))]
    host = x.copy()
    scale[n // 256, 256](host, 4.0)  # a host array, a converted scalar
    ok.append(bool(np.array_equal(host, x * np.float32(4))))
    out = np.zeros(1, np.float32)
    ints = rng.integers(0, 8, 4096).astype(np.float32)
    total[16, 256](cuda.In(ints), cuda.InOut(out))
    ok.append(float(out[0]) == float(ints.sum()))
    host2 = np.zeros(n, np.float32)
    saxpy.forall(n)(host2, np.float32(0.5), x, cuda.In(y))
    ok.append(bool(np.array_equal(host2, np.float32(0.5) * x + y)))
    return ok
"""


@gpu
def test_cached_kernels_compute_the_same_results_in_a_fresh_process(tmp_path):
    write(tmp_path, "gpu_saxpy_mod", GPU_SAXPY)
    first = child(tmp_path, "gpu_saxpy_mod")
    assert first["out"] == [True] * 4
    second = child(tmp_path, "gpu_saxpy_mod")
    no_numba(second)
    assert second["out"] == [True] * 4
    assert second["info"]["hits"] == 3  # saxpy's one signature, scale's, total's


GPU_BOUNDS = """
import numpy as np
import gpuhost as cuda

@cuda.jit(cache=True, launch_bounds=64)
def bounded(r):
    r[cuda.grid(1)] = 1

def run():
    r = cuda.device_array(256, np.int32)
    bounded[4, 64](r)
    try:
        bounded[2, 128](r)
    except cuda.CudaAPIError as e:
        return [e.name, "bounded" in str(e)]
    return None
"""


@gpu
def test_a_launch_past_launch_bounds_raises_numbas_error_from_the_records(tmp_path):
    write(tmp_path, "gpu_bounds_mod", GPU_BOUNDS)
    assert child(tmp_path, "gpu_bounds_mod")["out"] == ["CUDA_ERROR_INVALID_VALUE", True]
    second = child(tmp_path, "gpu_bounds_mod")
    no_numba(second)
    assert second["out"] == ["CUDA_ERROR_INVALID_VALUE", True]


GPU_CALLEE = """
import numpy as np
import gpuhost as cuda
from gpu_callee_mod import offset

@cuda.jit(cache=True)
def add_offset(r):
    r[cuda.grid(1)] = offset(cuda.grid(1))

def run():
    r = cuda.device_array(128, np.int64)
    add_offset[1, 128](r)
    return r.copy_to_host().tolist()
"""


@gpu
def test_an_edited_device_function_changes_the_result_in_the_next_process(tmp_path):
    write(tmp_path, "gpu_caller_mod", GPU_CALLEE)
    write(tmp_path, "gpu_callee_mod", CALLEE.format(constant=1000))
    assert child(tmp_path, "gpu_caller_mod")["out"] == list(range(1000, 1128))
    write(tmp_path, "gpu_callee_mod", CALLEE.format(constant=-7))
    assert child(tmp_path, "gpu_caller_mod")["out"] == list(range(-7, 121))
    again = child(tmp_path, "gpu_caller_mod")
    no_numba(again)
    assert again["out"] == list(range(-7, 121))


def test_the_cold_start_benchmark_says_at_once_that_it_needs_a_gpu(tmp_path):
    env = dict(os.environ, GPUHOST_CUDA_DRIVER=str(tmp_path / "libcuda.so.1"), PYTHONPATH=ROOT)
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "coldstart.py"),
                           "--json", str(tmp_path / "out.json")], capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith("coldstart.py measures on a GPU, and there is none it can "
                                  "use here (gpuhost.is_available() is False)")
    assert "Traceback" not in proc.stderr and not (tmp_path / "out.json").exists()
