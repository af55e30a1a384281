"""A numba.cuda user's script that uses only the host API: run it with numba-cuda or with
gpuhost in numba's place, and the output is the same line for line.

    python numba_host_script.py numba      # from numba import cuda
    python numba_host_script.py gpuhost    # import gpuhost as cuda

Everything printed is deterministic (seeded data, checksums, shapes, flags): no timings,
addresses or device names.
"""
import hashlib
import sys

import numpy as np

if sys.argv[1:] == ["numba"]:
    from numba import cuda
elif sys.argv[1:] == ["gpuhost"]:
    import gpuhost as cuda
else:
    sys.exit("usage: numba_host_script.py numba|gpuhost")


def digest(a):
    """A checksum of the values (in C order) and the shape and dtype of host array `a`."""
    a = np.ascontiguousarray(a)
    return "%s %s %s" % (a.shape, a.dtype, hashlib.sha256(a.tobytes()).hexdigest()[:16])


def show(label, value):
    print("%-44s %s" % (label, value))


def show_unless_numba_bug(label, fn):
    """show(label, fn()); under numba an AttributeError raised inside numba-cuda (its own
    bug, not a difference to match) shows a NUMBA-BUG line, which the comparing test
    checks by label only."""
    try:
        value = fn()
    except AttributeError as e:
        if sys.argv[1:] != ["numba"]:
            raise
        value = "NUMBA-BUG %s" % e
    show(label, value)


rng = np.random.default_rng(20261122)

# devices and contexts
show("is_available", cuda.is_available())
show("len(gpus) == len(list_devices())", len(cuda.gpus) == len(cuda.list_devices()))
dev = cuda.get_current_device()
show("current device id", dev.id)
show("compute_capability is a pair", len(dev.compute_capability) == 2)
show("select_device(0).id", cuda.select_device(0).id)
free, total = cuda.current_context().get_memory_info()
show("0 < free <= total", 0 < free <= total)
with cuda.gpus[0]:
    show("with gpus[0]: current device", cuda.get_current_device().id)

# to_device / copy_to_host, several dtypes and layouts
for dtype in (np.float32, np.float64, np.int32, np.uint8, np.complex64):
    if np.issubdtype(dtype, np.complexfloating):
        host = (rng.standard_normal(1000) + 1j * rng.standard_normal(1000)).astype(dtype)
    elif np.issubdtype(dtype, np.floating):
        host = rng.standard_normal(1000).astype(dtype)
    else:
        host = rng.integers(0, 100, 1000).astype(dtype)
    d = cuda.to_device(host)
    show("to_device %s" % np.dtype(dtype).name, digest(d.copy_to_host()))
    show("  shape strides size nbytes", (d.shape, d.strides, d.size, d.nbytes))

host2d = rng.standard_normal((6, 8))
d2 = cuda.to_device(host2d)
show("2-d round trip", digest(d2.copy_to_host()) == digest(host2d))
show("2-d flags", (d2.is_c_contiguous(), d2.is_f_contiguous()))
fortran = cuda.to_device(np.asfortranarray(host2d))
show("Fortran array strides", fortran.strides)
show("Fortran round trip", digest(fortran.copy_to_host()) == digest(host2d))

# device_array and friends
e = cuda.device_array((3, 4), np.int16)
show("device_array shape strides dtype", (e.shape, e.strides, e.dtype.name))
f = cuda.device_array((3, 4), np.float32, order="F")
show("device_array F strides", f.strides)
like = cuda.device_array_like(d2)
show("device_array_like", (like.shape, like.dtype.name, like.strides))

# slicing, indexing and views
v = cuda.to_device(np.arange(100, dtype=np.int64) * 3)
show("slice [10:20]", v[10:20].copy_to_host().tolist())
show("slice [1::7]", v[1::7].copy_to_host().tolist())
show("slice shape/strides", (v[1::7].shape, v[1::7].strides))
show("2-d slice [1:4, ::3]", digest(d2[1:4, ::3].copy_to_host()) == digest(host2d[1:4, ::3]))
show("element [42]", int(v[42]))
show("element [-1]", int(v[-1]))
show("reshape(10, 10) shape", v.reshape(10, 10).shape)
show("reshape(10, 10)[3]", v.reshape(10, 10)[3].copy_to_host().tolist())
show("ravel shape", d2.ravel().shape)
show("view(int32) shape", v.view(np.int32).shape)
parts = list(v.split(30))  # a list in older numba, a generator in newer
show("split(30) sizes", [p.size for p in parts])
show("split(30)[3]", parts[3].copy_to_host().tolist())

# copies into existing memory
target = cuda.device_array(100, np.int64)
target.copy_to_device(np.arange(100, dtype=np.int64)[::-1].copy())
out = np.zeros(100, np.int64)
res = target.copy_to_host(out)
show("copy_to_host(ary) returns ary", res is out)
show("copy_to_device then copy_to_host", out[:5].tolist() + out[-3:].tolist())
target.copy_to_device(v)  # device to device
show("device-to-device copy", digest(target.copy_to_host()) == digest(np.arange(100) * 3))

# streams
s = cuda.stream()
hs = rng.standard_normal(4096).astype(np.float32)
ds = cuda.to_device(hs, stream=s)
back = ds.copy_to_host(stream=s)
s.synchronize()
show("stream round trip", digest(back) == digest(hs))
with s.auto_synchronize():
    ds2 = cuda.to_device(hs * 2, stream=s)
    back2 = ds2.copy_to_host(stream=s)
show("auto_synchronize round trip", digest(back2) == digest(hs * 2))
calls = []


def callback_args():
    s.add_callback(lambda stream, status, arg: calls.append(arg), "done")
    s.synchronize()
    return calls


# numba-cuda over cuda.bindings reads a .value its CUstream lacks
show_unless_numba_bug("add_callback arg", callback_args)
show("default_stream() usable", cuda.to_device(hs, stream=cuda.default_stream()).size)

# events
start, end = cuda.event(), cuda.event()
start.record(s)
big = cuda.to_device(rng.standard_normal(1 << 20), stream=s)
end.record(s)
end.synchronize()
show("event query after synchronize", end.query())
show("elapsed_time >= 0", cuda.event_elapsed_time(start, end) >= 0)
show("start.elapsed_time(end) >= 0", start.elapsed_time(end) >= 0)
notime = cuda.event(timing=False)
notime.record(s)
notime.wait(s)
notime.synchronize()
show("event(timing=False) completes", notime.query())

# pinned and mapped host memory
p = cuda.pinned_array((64, 64), np.float64)
show("pinned_array", (type(p) is np.ndarray or isinstance(p, np.ndarray), p.shape, p.dtype.name))
p[:] = rng.standard_normal((64, 64))
dp = cuda.to_device(p, stream=s)
q = cuda.pinned_array_like(p)
dp.copy_to_host(q, stream=s)
s.synchronize()
show("pinned round trip", digest(q) == digest(p))
m = cuda.mapped_array(256, np.int32)
m[:] = np.arange(256, dtype=np.int32) * 5
dm = cuda.device_array(256, np.int32)
# numba-cuda's MappedNDArray lacks the _dummy its copy_to_device check uses
show_unless_numba_bug("mapped_array copied",
                      lambda: (dm.copy_to_device(m), dm.copy_to_host()[250:].tolist())[1])
plain = rng.standard_normal(10000)
with cuda.pinned(plain):
    dpl = cuda.to_device(plain, stream=s)
    s.synchronize()
show("with pinned(array)", digest(dpl.copy_to_host()) == digest(plain))

# the array protocols
show("is_cuda_array(device array)", cuda.is_cuda_array(v))
show("is_cuda_array(numpy array)", cuda.is_cuda_array(np.zeros(3)))
view = cuda.as_cuda_array(v)
show("as_cuda_array shares memory", view.__cuda_array_interface__["data"][0] ==
     v.__cuda_array_interface__["data"][0])
cai = v.__cuda_array_interface__
show("CAI shape typestr version", (cai["shape"], cai["typestr"], cai["version"]))

with cuda.defer_cleanup():
    tmp = cuda.device_array(1 << 16, np.uint8)
    del tmp
cuda.synchronize()
show("done", True)
