"""gpuhost.autoinit and gpuhost.autoprimaryctx, each in a fresh interpreter (importing
them makes a context current for the whole process)."""
import pytest

import gpuhost
from conftest import DRIVER, run_python


def run(code, tmp_path, **env):
    """Run `code` with a home of its own and no CUDA_DEVICE, unless `env` sets them."""
    full = {"HOME": str(tmp_path), "CUDA_DEVICE": None}
    full.update(env)
    return run_python(code, env=full)


def test_autoinit_makes_the_first_device_primary_context_current(tmp_path):
    proc = run("""
import gpuhost
import gpuhost.autoinit as a
assert a.context is gpuhost.gpus[0].get_primary_context(), a.context
assert a.device is gpuhost.gpus[0]
assert gpuhost.gpus.current is a.device
print("device", a.device.id)
""", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "device 0\n" and proc.stderr == ""


@pytest.mark.gpus(2)
@pytest.mark.parametrize("module", ["autoinit", "autoprimaryctx"])
def test_autoinit_follows_cuda_device(tmp_path, module):
    proc = run("import gpuhost, gpuhost.%s as a; print(a.device.id, gpuhost.gpus.current.id)"
               % module, tmp_path, CUDA_DEVICE="1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "1 1\n"


@pytest.mark.gpus(2)
def test_autoinit_follows_the_home_file(tmp_path):
    (tmp_path / ".cuda-device").write_text("1\n")
    proc = run("import gpuhost.autoinit as a; print(a.device.id)", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "1\n"


def test_autoinit_and_autoprimaryctx_share_one_push(tmp_path):
    proc = run("""
import gpuhost
import gpuhost.autoinit as a
import gpuhost.autoprimaryctx as p
assert p.context is a.context and p.device is a.device
a.context.pop()            # pushed once: the stack is empty again
assert gpuhost.gpus.current is None
print("ok")
""", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "ok\n" and proc.stderr == ""  # the exit handler keeps quiet


def test_autoinit_pops_and_clears_the_caches_at_exit(tmp_path):
    proc = run("""
import atexit, gpuhost
from gpuhost.tools import context_dependent_memoize

@context_dependent_memoize
def value():
    return object()

def after():  # registered first, so it runs after autoinit's handler
    print("stack empty:", gpuhost.gpus.current is None)
    print("module context:", gpuhost.autoinit.context)
    print("cache cleared:", value() is not kept)

atexit.register(after)
import gpuhost.autoinit
kept = value()
""", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "stack empty: True\nmodule context: None\ncache cleared: True\n"
    assert proc.stderr == ""


def test_autoinit_raises_a_bad_cuda_device_at_import(tmp_path):
    proc = run("import gpuhost.autoinit", tmp_path, CUDA_DEVICE="first")
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ValueError: CUDA_DEVICE is not a device number: 'first'; the ")


@pytest.mark.skipif(DRIVER != "fake", reason="needs the fake driver (a machine with no device)")
def test_autoinit_without_a_device_raises_cuda_support_error(tmp_path):
    proc = run("import gpuhost.autoinit", tmp_path, FAKECUDA_DEVICES="0")
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last == ("gpuhost.errors.CudaSupportError: the CUDA driver %s is unusable: cuInit "
                    "failed with CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is "
                    "detected" % gpuhost._core.driver_library())
