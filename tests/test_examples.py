"""examples/: each script runs to the end, checks its own results and says ok."""
import os
import re
import subprocess
import sys

import pytest

from conftest import DRIVER

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")
# Examples that launch kernels need a real GPU; the others also run on the fake driver.
KERNELS = {"saxpy.py", "two_streams.py", "event_timing.py", "interop_cupy_torch.py",
           "beside_torch_cupy.py"}
HOST_ONLY = {"pinned_memory.py", "allreduce.py"}  # allreduce: NCCL (fakenccl on the fake)


def run_example(name, timeout=300):
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")  # this checkout's gpuhost
    return subprocess.run([sys.executable, os.path.join(EXAMPLES, name)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_every_example_is_tested():
    names = {n for n in os.listdir(EXAMPLES) if n.endswith(".py")}
    assert names == KERNELS | HOST_ONLY


@pytest.mark.parametrize("name", sorted(KERNELS | HOST_ONLY))
def test_example_runs_and_checks_itself(name):
    if name in KERNELS and DRIVER != "real":
        pytest.skip("launches kernels: needs a real GPU (running on the fake driver)")
    proc = run_example(name)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "FAILED" not in proc.stdout
    assert re.search(r"\bok\b", proc.stdout), proc.stdout


@pytest.mark.gpu
def test_saxpy_example_prints_the_checksum_of_the_seeded_data():
    proc = run_example("saxpy.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    import numpy as np

    rng = np.random.default_rng(2026)
    n = 1 << 24
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    expected = float((np.float32(2.5) * x + y).sum(dtype=np.float64))
    assert ("sum %.6e" % expected) in proc.stdout


@pytest.mark.gpu
def test_two_streams_example_reports_both_runs():
    proc = run_example("two_streams.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert [line.split("  ")[0].strip() for line in lines] == ["one stream", "two streams"]
    assert all(line.endswith(": ok") for line in lines)


def test_pinned_memory_example_reports_each_kind_of_copy():
    proc = run_example("pinned_memory.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for text in ("pageable numpy array", "pinned_array()", "with pinned(array):",
                 "copy_to_host into pinned memory returned after", "mapped_array: 8192 bytes"):
        assert text in proc.stdout


def test_the_docs_list_every_example():
    index = open(os.path.join(ROOT, "docs", "examples", "index.md")).read()
    names = [n for n in os.listdir(EXAMPLES) if n.endswith((".py", ".ipynb"))]
    assert any(n.endswith(".ipynb") for n in names)
    for name in names:
        assert name in index or name.rsplit(".", 1)[0] in index, name


def test_every_gpuhost_name_in_the_migration_tables_exists():
    import re

    import gpuhost

    tables = "".join(open(os.path.join(ROOT, "docs", "guide", page)).read()
                     for page in ("numba.md", "pycuda.md", "cupy.md"))
    checked = 0
    for row in tables.splitlines():
        if not row.startswith("| ") or row.startswith("| numba") or row.startswith("|---"):
            continue
        ours = row.split(" | ")[1]
        for prefix, dotted in re.findall(r"`(cuda|gpuhost)\.([A-Za-z_][\w.]*)", ours):
            obj = gpuhost
            for part in dotted.split("."):
                if part in ("gpus",) and obj is gpuhost:
                    obj = gpuhost.gpus
                    continue
                if obj is gpuhost and part in ("memory", "memory_manager", "tools", "nvtx",
                                               "runtime", "nccl", "compat", "autoinit",
                                               "autoprimaryctx"):
                    if part in ("autoinit", "autoprimaryctx"):
                        break  # importing them pushes a context
                    import importlib

                    obj = importlib.import_module("gpuhost." + part)
                    continue
                assert hasattr(obj, part), "%s.%s (docs: %s)" % (prefix, dotted, row[:60])
                obj = getattr(obj, part)
            checked += 1
    assert checked > 30
