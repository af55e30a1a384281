"""benchmarks/all.py on a machine where it cannot measure: it says so at once, naming why,
instead of each area script's traceback and a partial table."""
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_without_a_usable_gpu_it_says_so_and_measures_nothing(tmp_path):
    env = dict(os.environ, GPUHOST_CUDA_DRIVER=str(tmp_path / "libcuda.so.1"),
               PYTHONPATH=ROOT)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "all.py"),
                           "--json", str(tmp_path / "out.json")],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.startswith("benchmarks/all.py measures on a GPU, and there is none it "
                                  "can use here: no CUDA driver library was found. Tried: %s "
                                  "(from GPUHOST_CUDA_DRIVER)" % (tmp_path / "libcuda.so.1"))
    assert "Traceback" not in proc.stderr and "python3 -m gpuhost" in proc.stderr
    assert not (tmp_path / "out.json").exists()
    assert time.perf_counter() - start < 60  # no area script was started


def test_where_gpuhost_does_not_import_it_says_that(tmp_path):
    (tmp_path / "gpuhost.py").write_text("raise ImportError('built for another Python')\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "all.py")],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert ("gpuhost does not import with %s (ImportError: built for another Python)"
            % sys.executable) in proc.stderr
