"""gpuhost beside PyTorch and CuPy in one process: the calls that reach the whole process leave
their state as it was.

They share the device's primary context with gpuhost. Each library here holds live state
(tensors, a cuBLAS handle, blocks its allocator caches); then gpuhost frees its own state
(Context.reset), asks for a reset of the device (left to them, with a DeviceResetWarning
naming them), and captures a graph while they work in another thread; after each, they
compute again and the results are checked exactly. A library that is not installed is
skipped, and says so.

    python examples/beside_torch_cupy.py

Exits 1 if a result is wrong.
"""
import sys
import threading
import warnings

import numpy as np

import gpuhost

TWICE = r"""
extern "C" __global__ void twice(float *a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] *= 2;
}
"""


def check(label, ok):
    print("  %-66s %s" % (label, "ok" if ok else "FAILED"))
    return 0 if ok else 1


def others(host):
    """Live state in each library that is installed: {name: a function that computes again
    and says whether the result is exact}. Each computes on a stream of its own library, not
    on the legacy default stream: work there waits for every blocking stream, which CUDA
    refuses while one of them captures a graph, whoever captures (docs/guide/beside.md)."""
    found = {}
    try:
        import torch
        if torch.cuda.is_available():
            t = torch.from_numpy(host).cuda()
            m = torch.from_numpy(host[:64 * 64].reshape(64, 64)).cuda()
            m_m = (m @ m).cpu().numpy()  # torch's cuBLAS handle
            ts = torch.cuda.Stream()  # a stream of torch's own (see capture below)

            def torch_exact():
                with torch.cuda.stream(ts):
                    return (np.array_equal((t * 2).cpu().numpy(), host * 2)
                            and np.array_equal((m @ m).cpu().numpy(), m_m))
            found["PyTorch"] = torch_exact
    except ImportError:
        print("  PyTorch is not installed: skipped")
    try:
        import cupy
        c = cupy.asarray(host)
        k = cupy.asarray(host[:64 * 64].reshape(64, 64))
        k_k = cupy.asnumpy(k @ k)  # CuPy's cuBLAS handle
        cs = cupy.cuda.Stream(non_blocking=True)

        def cupy_exact():
            with cs:
                return (np.array_equal(cupy.asnumpy(c * 2), host * 2)
                        and np.array_equal(cupy.asnumpy(k @ k), k_k))
        found["CuPy"] = cupy_exact
    except ImportError:
        print("  CuPy is not installed: skipped")
    return found


def main():
    if not gpuhost.is_available():
        print("no CUDA device here: nothing to run")
        return 0
    failures = 0
    host = np.random.default_rng(5).random(1 << 16).astype(np.float32)
    libs = others(host)
    twice = gpuhost.SourceModule(TWICE).get_function("twice")

    print("Context.reset(): gpuhost's memory and modules go, the context stays")
    d = gpuhost.to_device(host)
    gpuhost.current_context().reset()
    try:
        d.copy_to_host()
        stale = False
    except gpuhost.CudaAPIError:
        stale = True  # an array made before says so: its memory is gone
    failures += check("an array made before the reset raises when used", stale)
    for name, exact in libs.items():
        failures += check("%s computes exactly after it" % name, exact())
    twice = gpuhost.SourceModule(TWICE).get_function("twice")  # the old module went too
    d = gpuhost.to_device(host)
    twice[(host.size + 255) // 256, 256](d, host.size)
    failures += check("gpuhost works on", np.array_equal(d.copy_to_host(), host * 2))

    print("Device.reset(): destroyed only if no other library holds the context")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gpuhost.get_current_device().reset()
    said = [w for w in caught if issubclass(w.category, gpuhost.DeviceResetWarning)]
    failures += check("a DeviceResetWarning where they hold it, none where no one does",
                      len(said) == (1 if libs else 0))
    for name, exact in libs.items():
        failures += check("%s computes exactly after it" % name, exact())

    print("a capture in this thread while another thread works")
    twice = gpuhost.SourceModule(TWICE).get_function("twice")  # gpuhost's part was reset
    results = []
    s = gpuhost.stream(non_blocking=True)
    d = gpuhost.to_device(host)
    ready, go = threading.Event(), threading.Event()

    def work():
        # The libraries' first work in a thread makes their handles for it (cuBLAS's), with
        # calls CUDA refuses while a stream captures: made here before the capture begins.
        for f in libs.values():
            f()
        ready.set()
        go.wait(60)
        results.extend(f() for f in libs.values())

    worker = threading.Thread(target=work)
    worker.start()
    ready.wait(60)
    with gpuhost.graph_capture(s) as cap:  # thread-local: other threads are never refused
        go.set()
        worker.join(60)
        twice[(host.size + 255) // 256, 256, s](d, host.size)
    cap.graph.instantiate().launch(s)
    s.synchronize()
    failures += check("the others computed exactly during the capture", all(results))
    failures += check("the graph ran", np.array_equal(d.copy_to_host(), host * 2))
    print("ok" if failures == 0 else "%d FAILED" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
