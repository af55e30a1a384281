"""The pytest plugin's cost per test: 1,000 trivial tests with the leak check on (the
`gpuhost_leak_check` fixture) beside 1,000 with it off (`gpuhost_context`, the same
context without the check), in a process whose heap holds 10^4 or 10^6 Python objects
besides (goal: the check costs <= 50 µs per test when nothing leaked, the same at both
heap sizes).

Each sample is a fresh pytest process running the tests, a checked and an unchecked one
in turn; a conftest times each test from the start of its setup to the end of its
teardown and report (perf_counter, and the process's CPU time, which other processes on a
shared machine disturb least).  A sample's figure is the median time of its checked tests
less that of its unchecked ones, so that the collections of the big heap (which fall on
either kind alike) and other noise stay out of it; the figure printed is the median over
the samples.  Without a GPU, or with --fake, the tests run over the fake driver
(tests/fakecuda); --root measures another checkout's gpuhost (built in place) instead.

    python3 benchmarks/pytest_plugin.py [--repeat 5] [--tests 1000] [--fake] [--json out.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
HEAPS = (10**4, 10**6)
GOAL_US = 50.0
SAME_US = 10.0  # "the same at both heap sizes": the costs differ by at most this

CONFTEST = r'''
import json, os, time
import pytest

# The user's data: objects the collector tracks, alive for the whole session.
HEAP = [[] for _ in range(int(os.environ["BENCH_HEAP"]))]
_times = {"on": [], "off": []}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start = time.perf_counter(), time.process_time()
    yield
    end = time.perf_counter(), time.process_time()
    kind = "on" if "gpuhost_leak_check" in item.fixturenames else "off"
    _times[kind].append([(b - a) * 1e6 for a, b in zip(start, end)])
    if nextitem is None:
        with open(os.environ["BENCH_OUT"], "w") as f:
            json.dump(_times, f)
'''

TEST = '''
def test_on_{i}(gpuhost_leak_check):
    pass


def test_off_{i}(gpuhost_context):
    pass
'''

AUTOLOADED = ("import os, sys\n"
              "from importlib.metadata import entry_points\n"
              "sys.exit(0 if not os.environ.get('PYTEST_DISABLE_PLUGIN_AUTOLOAD') and any(\n"
              "    ep.name == 'gpuhost' for ep in entry_points(group='pytest11')) else 1)\n")


def _plugin_args(env):
    """-p gpuhost.pytest_plugin unless pytest loads it by itself (gpuhost installed where
    the runs look, with its entry point): asked of an interpreter with their environment."""
    autoloaded = subprocess.run([sys.executable, "-c", AUTOLOADED], env=env).returncode == 0
    return [] if autoloaded else ["-p", "gpuhost.pytest_plugin"]


def _fake_driver_env():
    sys.path.insert(0, os.path.join(ROOT, "tests", "fakecuda"))
    import build  # tests/fakecuda/build.py

    return {"GPUHOST_CUDA_DRIVER": build.build(), "FAKECUDA_DEVICES": "2"}


def _has_gpu():
    import ctypes

    try:
        lib = ctypes.CDLL("libcuda.so.1")
        count = ctypes.c_int(0)
        return lib.cuInit(0) == 0 and lib.cuDeviceGetCount(ctypes.byref(count)) == 0 \
            and count.value > 0
    except OSError:
        return False


def sample(folder, env, plugin, heap):
    """{clock: (median µs of a checked test, of an unchecked one)} of one pytest run with
    `heap` objects alive; clock is "wall" or "cpu".  The first test of each kind (the
    context's creation, imports) is left out."""
    out = os.path.join(folder, "out.json")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:hypothesispytest", *plugin, "test_plugin_cost.py"],
                          cwd=folder, env=dict(env, BENCH_HEAP=str(heap), BENCH_OUT=out),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError("the tests failed (heap %d):\n%s"
                           % (heap, proc.stdout[-3000:] + proc.stderr[-2000:]))
    with open(out) as f:
        times = json.load(f)
    return {clock: tuple(statistics.median(t[k] for t in times[kind][1:])
                         for kind in ("on", "off"))
            for k, clock in enumerate(("wall", "cpu"))}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--tests", type=int, default=1000, help="tests of each kind")
    parser.add_argument("--fake", action="store_true", help="run over the fake driver")
    parser.add_argument("--root", default=ROOT, help="the checkout whose gpuhost is measured")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.abspath(args.root)] + [
        p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    driver = "real GPU"
    if args.fake or not _has_gpu():
        env.update(_fake_driver_env())
        driver = "fake driver"
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "conftest.py"), "w") as f:
            f.write(CONFTEST)
        with open(os.path.join(folder, "test_plugin_cost.py"), "w") as f:
            f.write("".join(TEST.format(i=i) for i in range(args.tests)))
        plugin = _plugin_args(env)
        for heap in HEAPS:  # warm-up: caches, the disk
            sample(folder, env, plugin, heap)
        samples = {heap: [] for heap in HEAPS}
        for _ in range(args.repeat):
            for heap in HEAPS:
                samples[heap].append(sample(folder, env, plugin, heap))
    print("pytest plugin: %d checked and %d unchecked trivial tests in turn per run, median "
          "of %d runs (%s, Python %s)" % (args.tests, args.tests, args.repeat, driver,
                                           sys.version.split()[0]))
    print("%-14s %-5s %16s %16s %18s" % ("heap objects", "time", "check off (µs)",
                                         "check on (µs)", "check's cost (µs)"))
    results = {}
    for heap in HEAPS:
        row = results[str(heap)] = {}
        for clock in ("wall", "cpu"):
            on = statistics.median(s[clock][0] for s in samples[heap])
            off = statistics.median(s[clock][1] for s in samples[heap])
            cost = statistics.median(s[clock][0] - s[clock][1] for s in samples[heap])
            row[clock] = {"off_us": off, "on_us": on, "cost_us": cost,
                          "cost_samples_us": [s[clock][0] - s[clock][1]
                                              for s in samples[heap]]}
            print("%-14s %-5s %16.1f %16.1f %18.1f" % ("10^%d" % len(str(heap)[1:]), clock,
                                                      off, on, cost))
    costs = [results[str(h)]["wall"]["cost_us"] for h in HEAPS]
    met = max(costs) <= GOAL_US and abs(costs[1] - costs[0]) <= SAME_US
    print("leak check per test (wall): %s µs (goal <= %.0f µs, within %.0f µs of each other): "
          "%s" % (" and ".join("%.1f" % c for c in costs), GOAL_US, SAME_US,
                  "met" if met else "NOT met"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"driver": driver, "tests": args.tests, "heaps": results, "met": met},
                      f, indent=2)


if __name__ == "__main__":
    main()
