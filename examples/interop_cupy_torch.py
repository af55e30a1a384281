"""Zero-copy exchange with CuPy and PyTorch.

gpuhost's DeviceArray exports the CUDA array interface and DLPack, and every gpuhost
function that takes a device array takes a CuPy array or a PyTorch tensor, so arrays move
between the libraries without a copy: the same device memory, seen by each. gpuhost's own
exports are checked first, through each protocol; then CuPy and PyTorch, each where it is
installed (a library that is not is skipped, and says so).

    python examples/interop_cupy_torch.py

Exits 1 if memory was copied instead of shared, or a value is wrong.
"""
import sys

import numpy as np

import gpuhost as cuda


def check(label, ok):
    print("  %-58s %s" % (label, "ok" if ok else "FAILED"))
    return 0 if ok else 1


def with_protocols():
    """gpuhost's exports, read back through each protocol: what CuPy and PyTorch read."""
    print("gpuhost's own exports:")
    failures = 0
    host = np.random.default_rng(7).standard_normal((64, 32))
    ours = cuda.to_device(host)
    cai = ours.__cuda_array_interface__
    failures += check("__cuda_array_interface__ gives the pointer, shape and type",
                      cai["data"][0] == ours.ptr and tuple(cai["shape"]) == host.shape
                      and cai["typestr"] == host.dtype.str)
    via_cai = cuda.as_cuda_array(ours[8:16])
    failures += check("as_cuda_array(a slice) is a view, not a copy",
                      via_cai.ptr == ours.ptr + 8 * host.strides[0])
    via_dlpack = cuda.from_dlpack(ours)
    failures += check("from_dlpack(DeviceArray) shares the memory", via_dlpack.ptr == ours.ptr)
    via_dlpack[0, 0] = 42.0  # written through one view, read through the other
    failures += check("a write through one view is seen through the other",
                      ours[0, 0] == 42.0 and np.array_equal(ours.copy_to_host()[1:], host[1:]))
    return failures


def with_cupy():
    try:
        import cupy as cp
    except ImportError as e:
        print("CuPy: skipped (not importable: %s)" % e)
        return 0
    print("CuPy %s:" % cp.__version__)
    failures = 0
    host = np.random.default_rng(3).standard_normal((256, 128)).astype(np.float32)

    # gpuhost -> CuPy: cp.asarray reads __cuda_array_interface__; no copy.
    ours = cuda.to_device(host)
    theirs = cp.asarray(ours)
    failures += check("cp.asarray(DeviceArray) shares the memory",
                      theirs.data.ptr == ours.ptr and theirs.shape == ours.shape)
    theirs *= 2  # a CuPy kernel writes the memory gpuhost owns
    cp.cuda.get_current_stream().synchronize()
    failures += check("a CuPy kernel's writes are seen by gpuhost",
                      np.array_equal(ours.copy_to_host(), host * 2))

    # CuPy -> gpuhost: as_cuda_array (CAI) or from_dlpack; no copy.
    src = cp.arange(1000, dtype=cp.int64)
    view = cuda.as_cuda_array(src)
    failures += check("cuda.as_cuda_array(cupy array) shares the memory",
                      view.ptr == src.data.ptr)
    view[10:20] = 7  # gpuhost writes (a memset) into CuPy's memory
    cp.cuda.Device().synchronize()
    expected = np.arange(1000)
    expected[10:20] = 7
    failures += check("gpuhost's writes are seen by CuPy",
                      np.array_equal(cp.asnumpy(src), expected))
    dl = cuda.from_dlpack(src)
    failures += check("cuda.from_dlpack(cupy array) shares the memory", dl.ptr == src.data.ptr)
    back = cp.from_dlpack(ours)
    failures += check("cp.from_dlpack(DeviceArray) shares the memory", back.data.ptr == ours.ptr)
    return failures


def with_torch():
    try:
        import torch
    except ImportError as e:
        print("PyTorch: skipped (not importable: %s)" % e)
        return 0
    if not torch.cuda.is_available():
        print("PyTorch %s: skipped (built without CUDA, or no GPU for it)" % torch.__version__)
        return 0
    print("PyTorch %s:" % torch.__version__)
    failures = 0

    # PyTorch -> gpuhost, through DLPack: no copy.
    t = torch.arange(4096, dtype=torch.float32, device="cuda")
    ours = cuda.from_dlpack(t)
    failures += check("cuda.from_dlpack(tensor) shares the memory",
                      ours.ptr == t.data_ptr() and ours.shape == (4096,))
    failures += check("gpuhost reads the tensor's values",
                      np.array_equal(ours.copy_to_host(), np.arange(4096, dtype=np.float32)))

    # gpuhost -> PyTorch: torch.from_dlpack (or torch.as_tensor through the CAI).
    host = np.random.default_rng(5).standard_normal(1000)
    dev = cuda.to_device(host)
    cuda.synchronize()  # the copy ran on gpuhost's stream; PyTorch uses its own
    tt = torch.from_dlpack(dev)
    failures += check("torch.from_dlpack(DeviceArray) shares the memory",
                      tt.data_ptr() == dev.ptr and tt.dtype == torch.float64)
    tt.add_(1.0)  # a PyTorch kernel writes gpuhost's memory
    torch.cuda.synchronize()
    failures += check("a PyTorch kernel's writes are seen by gpuhost",
                      np.array_equal(dev.copy_to_host(), host + 1.0))
    cai = torch.as_tensor(dev, device="cuda")
    failures += check("torch.as_tensor(DeviceArray) shares the memory", cai.data_ptr() == dev.ptr)
    return failures


def main():
    if not cuda.is_available():  # no GPU or no driver: nothing to show, and not a failure
        reason = (cuda.cuda_error() or "gpuhost.is_available() is False").split(". ")[0]
        print("interop_cupy_torch.py: no usable CUDA device (%s), so nothing was run" % reason)
        return 0
    failures = with_protocols() + with_cupy() + with_torch()
    print("ok" if not failures else "FAILED: %d checks" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
