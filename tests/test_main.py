"""``python -m gpuhost``: --help, the default device summary and self-check, --bench."""
import re
import subprocess
import sys

import pytest

import gpuhost
from conftest import run_python

MAIN = ("import sys, runpy; sys.argv[0] = 'gpuhost'; "
        "runpy.run_module('gpuhost', run_name='__main__')")


def run_main(*args, env=None, timeout=120):
    return run_python("import sys; sys.argv[1:] = %r\n%s" % (list(args), MAIN), env, timeout)


def test_help_names_every_option_and_exits_0():
    proc = run_main("--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: python -m gpuhost [-h] [--bench] [--version]")
    for text in ("--bench", "--version", "self-check", "GPUHOST_CUDA_DRIVER", "CuPy"):
        assert text in proc.stdout


def test_version_prints_the_package_version():
    proc = run_main("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == "gpuhost %s" % gpuhost.__version__


def test_an_unknown_option_is_a_usage_error():
    proc = run_main("--fast")
    assert proc.returncode == 2
    assert "unrecognized arguments: --fast" in proc.stderr


def test_default_prints_versions_devices_and_a_self_check_per_device():
    proc = run_main()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "gpuhost %s" % gpuhost.__version__
    assert any(line.startswith("Driver: CUDA ") for line in lines)
    assert "Found %d CUDA device" % len(gpuhost.gpus) in proc.stdout
    checks = [line for line in lines if line.startswith("self-check device")]
    assert [int(re.match(r"self-check device (\d+):", c).group(1)) for c in checks] == \
        list(range(len(gpuhost.gpus)))
    assert all(c.endswith(": ok") for c in checks), checks


def test_main_is_callable_with_argv_and_returns_the_exit_code(capsys):
    from gpuhost.__main__ import main

    assert main([]) == 0
    assert "self-check device 0" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0


def test_without_a_driver_it_says_that_is_expected_without_a_gpu_and_exits_0():
    proc = run_main(env={"GPUHOST_CUDA_DRIVER": "/nonexistent/libcuda.so.1"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-2].startswith("CUDA driver not usable: no CUDA driver library was found")
    assert lines[-1] == ("That is expected on a machine without an NVIDIA GPU: gpuhost imports "
                         "and compiles kernels there, and gpuhost.is_available() is False. On a "
                         "machine with one, the line above says what failed.")


def test_bench_without_a_driver_says_it_needs_a_gpu_and_exits_1():
    proc = run_main("--bench", env={"GPUHOST_CUDA_DRIVER": "/nonexistent/libcuda.so.1"})
    assert proc.returncode == 1, proc.stderr
    assert "CUDA driver not usable" in proc.stdout
    assert proc.stdout.rstrip().endswith("--bench needs a usable GPU")


@pytest.mark.gpu
def test_bench_prints_every_figure_for_gpuhost():
    proc = subprocess.run([sys.executable, "-m", "gpuhost", "--bench"], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    header = next(line for line in lines if line.startswith("operation"))
    columns = header.split()[2:]
    assert columns[0] == "gpuhost" and set(columns) <= {"gpuhost", "CuPy", "numba-cuda"}
    rows = {}
    for label in ("launch an empty kernel, async", "event record", "to_device of 8 bytes",
                  "host to device, 64 MiB pinned", "host to device, 64 MiB pageable"):
        line = next(line for line in lines if line.startswith(label))
        rows[label] = line[len(label):].split()[1:]
        assert len(rows[label]) == len(columns), line
        assert float(rows[label][0]) > 0, line  # gpuhost's own figure is always there
    assert float(rows["host to device, 64 MiB pinned"][0]) > 1.0  # GB/s, any PCIe link
    assert float(rows["event record"][0]) < 100.0  # µs
