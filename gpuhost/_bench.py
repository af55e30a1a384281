"""``python -m gpuhost --bench``: a few seconds' side-by-side of the figures that matter
most (kernel launch, event record, a small to_device, 64 MiB host-to-device copies from
pinned and pageable memory), for gpuhost and, where they import, CuPy and numba-cuda.
benchmarks/all.py is the full, careful version; this one is a quick look."""
import statistics
import time

import numpy as np

import gpuhost

EMPTY = r'extern "C" __global__ void empty(float *a) {}'
COPY_BYTES = 64 << 20
CASES = [
    ("launch an empty kernel, async", "µs", "launch"),
    ("event record", "µs", "record"),
    ("to_device of 8 bytes", "µs", "small"),
    ("host to device, 64 MiB pinned", "GB/s", "pinned"),
    ("host to device, 64 MiB pageable", "GB/s", "pageable"),
]


def per_call_us(fn, n, sync, repeat=5):
    """Median over `repeat` loops of µs per call of fn() over n calls, sync() after each."""
    fn()
    sync()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        times.append((time.perf_counter() - t0) / n * 1e6)
        sync()
    return statistics.median(times)


def copy_gbs(copy, sync, repeat=5):
    """Median GB/s of copy() of COPY_BYTES, timed to sync()."""
    copy()
    sync()
    rates = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        copy()
        sync()
        rates.append(COPY_BYTES / (time.perf_counter() - t0) / 1e9)
    return statistics.median(rates)


def gpuhost_cases():
    s = gpuhost.stream()
    buf = gpuhost.device_array(64, np.float32)
    ev = gpuhost.event()
    small = np.arange(1, dtype=np.float64)
    pinned = gpuhost.pinned_array(COPY_BYTES, np.uint8)
    pageable = np.ones(COPY_BYTES, np.uint8)
    pinned[:] = 1
    dst = gpuhost.device_array(COPY_BYTES, np.uint8)

    def launch_us(k):
        return per_call_us(lambda: k[1, 1, s](buf), 2000, s.synchronize)

    return {
        "launch": lambda: launch_us(
            gpuhost.Module(gpuhost.compile(EMPTY)).get_function("empty")),
        "record": lambda: per_call_us(lambda: ev.record(s), 5000, s.synchronize),
        "small": lambda: per_call_us(lambda: gpuhost.to_device(small, stream=s), 500,
                                     s.synchronize),
        "pinned": lambda: copy_gbs(lambda: dst.copy_to_device(pinned, stream=s), s.synchronize),
        "pageable": lambda: copy_gbs(lambda: dst.copy_to_device(pageable, stream=s),
                                     s.synchronize),
    }


def cupy_cases():
    import cupy as cp
    import cupyx

    s = cp.cuda.Stream()
    s.use()
    k = cp.RawKernel(EMPTY, "empty")
    buf = cp.zeros(64, cp.float32)
    ev = cp.cuda.Event()
    small = np.arange(1, dtype=np.float64)
    pinned = cupyx.empty_pinned(COPY_BYTES, np.uint8)
    pinned[:] = 1
    pageable = np.ones(COPY_BYTES, np.uint8)
    dst = cp.empty(COPY_BYTES, cp.uint8)
    return {
        "launch": lambda: per_call_us(lambda: k((1,), (1,), (buf,)), 2000, s.synchronize),
        "record": lambda: per_call_us(lambda: ev.record(s), 5000, s.synchronize),
        "small": lambda: per_call_us(lambda: cp.asarray(small), 500, s.synchronize),
        "pinned": lambda: copy_gbs(lambda: dst.set(pinned, s), s.synchronize),
        "pageable": lambda: copy_gbs(lambda: dst.set(pageable, s), s.synchronize),
    }


def numba_cases():
    from numba import cuda as ncuda

    if not hasattr(np, "row_stack"):  # numba-cuda 0.30 calls it; NumPy 2.5 removed it
        np.row_stack = np.vstack
    s = ncuda.stream()
    buf = ncuda.device_array(64, np.float32)
    ev = ncuda.event()
    small = np.arange(1, dtype=np.float64)
    pinned = ncuda.pinned_array(COPY_BYTES, np.uint8)
    pinned[:] = 1
    pageable = np.ones(COPY_BYTES, np.uint8)
    dst = ncuda.device_array(COPY_BYTES, np.uint8)
    cases = {
        "record": lambda: per_call_us(lambda: ev.record(s), 5000, s.synchronize),
        "small": lambda: per_call_us(lambda: ncuda.to_device(small, stream=s), 500,
                                     s.synchronize),
        "pinned": lambda: copy_gbs(lambda: dst.copy_to_device(pinned, stream=s), s.synchronize),
        "pageable": lambda: copy_gbs(lambda: dst.copy_to_device(pageable, stream=s),
                                     s.synchronize),
    }

    @ncuda.jit
    def empty(a):
        pass

    try:
        empty[1, 1, s](buf)
        cases["launch"] = lambda: per_call_us(lambda: empty[1, 1, s](buf), 2000, s.synchronize)
    except Exception:  # numba could not compile here; its other figures still count
        pass
    return cases


def _measure(make, out):
    """{case: figure or None} for one library; None for the whole library if it is absent
    or cannot start, printing why."""
    try:
        cases = make()
    except ImportError as e:
        print("(%s not importable: %s)" % (make.__name__[:-6], e), file=out)
        return None
    except Exception as e:  # a peer that fails to start is left out, not fatal
        print("(%s left out: %s: %s)" % (make.__name__[:-6], type(e).__name__, e), file=out)
        return None
    figures = {}
    for _, _, key in CASES:
        try:
            figures[key] = cases[key]() if key in cases else None
        except Exception as e:
            print("(%s, %s: %s: %s)" % (make.__name__[:-6], key, type(e).__name__, e), file=out)
            figures[key] = None
    return figures


def run(out):
    """Measure and print the table; return 0, or 1 if gpuhost itself could not run."""
    with gpuhost.gpus[0]:
        ours = _measure(gpuhost_cases, out)
        if ours is None:
            return 1
        columns = [("gpuhost", ours)]
        for name, make in (("CuPy", cupy_cases), ("numba-cuda", numba_cases)):
            figures = _measure(make, out)
            if figures is not None:
                columns.append((name, figures))
        print("\n%s, %s" % (gpuhost.gpus[0].name, "median of 5 loops; lower µs and higher "
                            "GB/s are better"), file=out)
        header = "%-36s %6s" % ("operation", "unit") + "".join("%12s" % c for c, _ in columns)
        print(header, file=out)
        print("-" * len(header), file=out)
        for label, unit, key in CASES:
            cells = "".join("%12s" % ("—" if f[key] is None else "%.2f" % f[key])
                            for _, f in columns)
            print("%-36s %6s%s" % (label, unit, cells), file=out)
    return 0
