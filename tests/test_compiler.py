"""NVRTC compilation (csrc/launch/program.c, gpuhost/compiler.py) and the kernel cache
(gpuhost/_cache.py).  NVRTC needs no GPU: these run for real, on the fake driver too."""
import hashlib
import os
import pickle
import random
import re
import subprocess
import sys
import time
import warnings

import pytest

import gpuhost
from gpuhost import _cache, _core, _libpaths, compiler
from gpuhost.errors import NvrtcError, NvrtcWarning
from conftest import run_python

ARCHS = _core.nvrtc_supported_archs()


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    """Each test gets an empty memory cache and its own disk cache directory."""
    monkeypatch.setenv("GPUHOST_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("GPUHOST_DISABLE_CACHE", raising=False)
    compiler.clear_cache()
    yield
    compiler.clear_cache()


def fresh_kernel(name="k"):
    """A kernel source with a random constant, and that constant."""
    value = random.randrange(1 << 20, 1 << 30)
    src = ('extern "C" __global__ void %s(int *a, int n) {\n'
           '    int i = blockIdx.x * blockDim.x + threadIdx.x;\n'
           '    if (i < n) a[i] = a[i] * 3 + %d;\n'
           '}\n' % (name, value))
    return src, value


def cache_files(tmp_path):
    d = tmp_path / "cache"
    return sorted(p for p in d.iterdir()) if d.exists() else []


class NvrtcCalls:
    """Counts the real NVRTC compilations (monkeypatched over _core.nvrtc_compile)."""

    def __init__(self, monkeypatch):
        self.count = 0
        real = _core.nvrtc_compile

        def counting(*args):
            self.count += 1
            return real(*args)

        monkeypatch.setattr(_core, "nvrtc_compile", counting)


# -- outputs ---------------------------------------------------------------------------


def test_compile_ptx_has_the_entry_the_target_and_the_constant():
    src, value = fresh_kernel("k_ptx")
    code = gpuhost.compile_ptx(src, cc=(8, 0))
    assert isinstance(code, gpuhost.CompiledCode) and isinstance(code, bytes)
    assert code.output == "ptx" and code.target == "compute_80" and code.cc == (8, 0)
    assert bytes(code).decode() == code.ptx
    assert re.search(r"^\.version \d+\.\d+$", code.ptx, re.M)
    assert re.search(r"^\.target sm_80$", code.ptx, re.M)
    assert ".visible .entry k_ptx(" in code.ptx
    assert str(value) in code.ptx
    assert not code.endswith(b"\0")
    assert code.log == "" and code.lowered_names == {}
    assert code.options[0] == "-arch=compute_80"


def test_compile_cubin_is_an_elf_image_and_keeps_its_ptx():
    src, value = fresh_kernel("k_cubin")
    code = gpuhost.compile(src, cc="9.0")
    assert code.output == "cubin" and code.target == "sm_90" and code.cc == (9, 0)
    assert code[:4] == b"\x7fELF"
    assert ".visible .entry k_cubin(" in code.ptx and ".target sm_90" in code.ptx
    assert str(value) in code.ptx


def test_compile_ltoir_gives_nvvm_bitcode_and_no_ptx():
    src, _ = fresh_kernel()
    code = gpuhost.compile(src, "ltoir", cc=(8, 6))
    assert code.output == "ltoir" and code.target == "sm_86"
    assert len(code) > 100 and code[:4] != b"\x7fELF"
    assert "-dlto" in code.options
    assert code.ptx is None


def test_compiled_code_pickles_with_its_attributes():
    src, _ = fresh_kernel()
    code = gpuhost.compile(src, cc=(8, 0), name_expressions=())
    back = pickle.loads(pickle.dumps(code))
    assert type(back) is gpuhost.CompiledCode and back == code
    assert (back.output, back.target, back.ptx, back.log, back.options) == \
        (code.output, code.target, code.ptx, code.log, code.options)
    assert "cubin for sm_80" in repr(code)


# -- options ---------------------------------------------------------------------------

FLOAT_SRC = ('__device__ float sq(float x) { return x * x; }\n'
             'extern "C" __global__ void f(float *a, const float *b) {\n'
             '    int i = threadIdx.x;\n'
             '    a[i] = sq(a[i]) / b[i] + sinf(b[i]) * %d.0f;\n'
             '}\n')


def float_src():
    return FLOAT_SRC % random.randrange(2, 1000)


def has_loc(ptx):
    return re.search(r"^\s*\.loc\s", ptx, re.M) is not None


def test_lineinfo_adds_loc_directives():
    src = float_src()
    plain = gpuhost.compile_ptx(src, cc=(8, 0))
    lined = gpuhost.compile_ptx(src, cc=(8, 0), lineinfo=True)
    assert not has_loc(plain.ptx)
    assert has_loc(lined.ptx) and "-lineinfo" in lined.options


def test_debug_adds_dwarf_sections():
    src = float_src()
    assert "debug_info" not in gpuhost.compile_ptx(src, cc=(8, 0)).ptx
    dbg = gpuhost.compile_ptx(src, cc=(8, 0), debug=True)
    assert "-G" in dbg.options and ".section\t.debug_info" in dbg.ptx


def test_fastmath_uses_approximate_division_and_sine():
    src = float_src()
    exact = gpuhost.compile_ptx(src, cc=(8, 0)).ptx
    fast = gpuhost.compile_ptx(src, cc=(8, 0), fastmath=True).ptx
    assert "div.rn.f32" in exact and "div.approx" not in exact
    assert "div.approx" in fast and "sin.approx" in fast


def test_opt_false_keeps_the_device_function_call():
    src = float_src()
    assert "call" not in gpuhost.compile_ptx(src, cc=(8, 0)).ptx
    code = gpuhost.compile_ptx(src, cc=(8, 0), opt=False)
    assert re.search(r"\bcall(\.uni)?\b", code.ptx)
    # with -G the optimizer is already off; both together must still compile
    assert gpuhost.compile(src, cc=(8, 0), opt=False, debug=True)[:4] == b"\x7fELF"


def test_defines_in_every_spelling_take_effect():
    a, b, c = (random.randrange(1 << 20, 1 << 30) for _ in range(3))
    src = ('extern "C" __global__ void d(int *x) {\n'
           '#ifdef FLAG\n  x[0] = A; x[1] = B; x[2] = C;\n#endif\n}\n')
    for defines in ({"FLAG": None, "A": a, "B": b, "C": c},
                    ["FLAG", "A=%d" % a, ("B", b), ("C", str(c))],
                    ("FLAG", "A=%d" % a, "B=%d" % b, "C=%d" % c)):
        ptx = gpuhost.compile_ptx(src, cc=(8, 0), defines=defines).ptx
        assert all(str(v) in ptx for v in (a, b, c)), defines
    assert str(a) not in gpuhost.compile_ptx(src, cc=(8, 0), defines={"A": a}).ptx


def test_std_selects_the_language_dialect():
    k = random.randrange(1, 1000)
    src = 'extern "C" __global__ void s(long *x) { x[0] = __cplusplus + %d; }' % k
    v17 = gpuhost.compile_ptx(src, cc=(8, 0), std="c++17")
    v20 = gpuhost.compile_ptx(src, cc=(8, 0), std=20)
    assert "-std=c++17" in v17.options and "-std=c++20" in v20.options
    assert str(201703 + k) in v17.ptx and str(202002 + k) in v20.ptx


def test_include_dirs_find_a_header_in_tmp_path(tmp_path):
    value = random.randrange(1 << 20, 1 << 30)
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "params.h").write_text("#define SCALE %d\n" % value)
    src = '#include "params.h"\nextern "C" __global__ void h(int *x) { x[0] = SCALE; }\n'
    code = gpuhost.compile_ptx(src, cc=(8, 0), include_dirs=[tmp_path / "inc"])
    assert str(value) in code.ptx
    assert "-I" + str(tmp_path / "inc") in code.options
    with pytest.raises(NvrtcError, match="params.h"):
        gpuhost.compile_ptx(src, cc=(8, 0))


@pytest.mark.skipif(not _libpaths.cuda_include_dirs(), reason="no CUDA toolkit headers here")
def test_toolkit_headers_are_on_the_include_path():
    src = ('#include <cuda_fp16.h>\n#include <cuda/std/cstdint>\n'
           'extern "C" __global__ void h(__half *x, cuda::std::int64_t *y) {\n'
           '    x[0] = __float2half(%d.0f); y[0] = 1;\n}\n' % random.randrange(2, 100))
    code = gpuhost.compile(src, cc=(8, 0))
    assert code[:4] == b"\x7fELF" and ".entry h(" in code.ptx


def test_name_expressions_give_the_lowered_names_of_a_template():
    src = ('template <typename T> __global__ void add(T *x, T v) { x[threadIdx.x] += v; }\n'
           'template <int N> __global__ void fill(int *x) { x[threadIdx.x] = N; }\n')
    n = random.randrange(1 << 20, 1 << 30)
    exprs = ["add<float>", "add<int>", "fill<%d>" % n]
    code = gpuhost.compile(src, cc=(8, 0), name_expressions=exprs)
    assert code.name_expressions == tuple(exprs)
    assert code.lowered_names["add<float>"] == "_Z3addIfEvPT_S0_"
    assert code.lowered_names["add<int>"] == "_Z3addIiEvPT_S0_"
    assert code.lowered_names["fill<%d>" % n] == "_Z4fillILi%dEEvPi" % n
    for mangled in code.lowered_names.values():
        assert ".entry %s(" % mangled in code.ptx


def test_an_unknown_name_expression_fails_compilation():
    with pytest.raises(NvrtcError, match="nothere"):
        gpuhost.compile(fresh_kernel()[0], cc=(8, 0), name_expressions=["nothere<int>"])


def test_options_pass_through_and_add_to_the_key():
    src, _ = fresh_kernel()
    plain = gpuhost.compile_ptx(src, cc=(8, 0))
    lined = gpuhost.compile_ptx(src, cc=(8, 0), options=["--generate-line-info"])
    assert "--generate-line-info" in lined.options and lined is not plain
    assert has_loc(lined.ptx) and not has_loc(plain.ptx)


# -- targets ---------------------------------------------------------------------------


def test_ptx_for_a_cc_newer_than_nvrtc_knows_is_made_for_the_newest():
    src, _ = fresh_kernel()
    code = gpuhost.compile_ptx(src, cc=(99, 0))
    assert code.target == "compute_%d" % ARCHS[-1]
    assert code.cc == divmod(ARCHS[-1], 10)


def test_ptx_for_an_unknown_cc_in_range_uses_the_closest_older_one():
    missing = [n for n in range(ARCHS[0], ARCHS[-1]) if n not in ARCHS and n % 10]
    if not missing:
        pytest.skip("NVRTC supports every cc in its range")
    code = gpuhost.compile_ptx(fresh_kernel()[0], cc=divmod(missing[0], 10))
    assert code.target == "compute_%d" % max(a for a in ARCHS if a < missing[0])


def test_cubin_for_a_cc_nvrtc_does_not_know_lists_the_supported_ones():
    with pytest.raises(ValueError, match=r"cannot make a cubin for compute capability 99\.0"
                                         r".*7\.5, 8\.0.*output='ptx'"):
        gpuhost.compile(fresh_kernel()[0], cc=(99, 0))
    with pytest.raises(ValueError, match="cannot make LTO IR"):
        gpuhost.compile(fresh_kernel()[0], "ltoir", cc=(99, 0))


def test_a_cc_older_than_nvrtc_supports_is_refused():
    with pytest.raises(ValueError, match=r"cannot compile for compute capability 3\.5.*oldest"):
        gpuhost.compile_ptx(fresh_kernel()[0], cc=(3, 5))


def test_arch_specific_suffix_is_kept():
    if 90 not in ARCHS:
        pytest.skip("NVRTC without sm_90")
    code = gpuhost.compile(fresh_kernel()[0], cc="9.0a")
    assert code.target == "sm_90a" and code.cc == (9, 0) and ".target sm_90a" in code.ptx


def test_default_cc_is_the_current_devices():
    if not gpuhost.is_available():
        pytest.skip("no device")
    code = gpuhost.compile_ptx(fresh_kernel()[0])
    want = (_core.current_device() or _core.get_device(0)).compute_capability
    number = want[0] * 10 + want[1]
    if number in ARCHS:
        assert code.cc == want
    cur = gpuhost.compile_ptx_for_current_device(fresh_kernel()[0])
    assert cur.output == "ptx" and (cur.cc == want or number not in ARCHS)


@pytest.mark.gpus(2)
def test_default_cc_follows_the_device_made_current():
    src = fresh_kernel()[0]
    for dev in gpuhost.list_devices()[:2]:
        with gpuhost.gpus[dev.id]:
            code = gpuhost.compile_ptx(src)
            assert code.cc == dev.compute_capability


def _default_target(env):
    full = {"GPUHOST_CUDA_DRIVER": "/nonexistent/libcuda.so.1", "GPUHOST_DEFAULT_PTX_CC": None,
            "NUMBA_CUDA_DEFAULT_PTX_CC": None, "GPUHOST_DISABLE_CACHE": "1"}
    full.update(env)
    proc = run_python("import gpuhost\n"
                      "assert not gpuhost.is_available()\n"
                      "try:\n"
                      "    print(gpuhost.compile_ptx('__global__ void k() {}').target)\n"
                      "except ValueError as e:\n"
                      "    print('ValueError', e)\n", full)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_without_a_gpu_the_default_cc_comes_from_the_environment():
    assert _default_target({"GPUHOST_DEFAULT_PTX_CC": "8.6"}) == "compute_86"
    assert _default_target({"NUMBA_CUDA_DEFAULT_PTX_CC": "8.9"}) == "compute_89"
    assert _default_target({"GPUHOST_DEFAULT_PTX_CC": "8.0",
                            "NUMBA_CUDA_DEFAULT_PTX_CC": "8.9"}) == "compute_80"
    assert _default_target({}) == "compute_%d" % ARCHS[0]
    out = _default_target({"GPUHOST_DEFAULT_PTX_CC": "eighty"})
    assert out.startswith("ValueError GPUHOST_DEFAULT_PTX_CC='eighty' is not a compute capability")


# -- logs and errors ---------------------------------------------------------------------


WARN_SRC = ('extern "C" __global__ void w(int *a) {\n'
            '    int unused_%d;\n'
            '    a[0] = 1;\n'
            '}\n')


def test_a_warning_log_is_kept_and_issued_once_not_on_cache_hits():
    src = WARN_SRC % random.randrange(1 << 30)
    with pytest.warns(NvrtcWarning, match=r"kernel\.cu\(2\): warning #177-D"):
        code = gpuhost.compile(src, cc=(8, 0))
    assert "declared but never referenced" in code.log
    compiler.clear_cache()  # memory gone: the disk serves it, silently, with its log
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = gpuhost.compile(src, cc=(8, 0))
        assert gpuhost.compile(src, cc=(8, 0)) is again
    assert again.log == code.log and again == code


ERROR_SRC = ('extern "C" __global__ void e(float *a) {\n'
             '    int i = threadIdx.x;\n'
             '    float x = a[i]\n'
             '    a[i] = x * undefined_%d;\n'
             '}\n'
             '\n'
             '\n'
             '\n'
             '__device__ int g() { return nope; }\n')


def test_a_syntax_error_raises_nvrtc_error_with_numbered_source_lines():
    n = random.randrange(1 << 30)
    src = ERROR_SRC % n
    with pytest.raises(NvrtcError) as info:
        gpuhost.compile(src, cc=(8, 0))
    e = info.value
    assert e.code == 6 and e.name == "NVRTC_ERROR_COMPILATION"
    assert 'kernel.cu(4): error: expected a ";"' in e.log
    assert 'kernel.cu(9): error: identifier "nope" is undefined' in e.log
    msg = str(e)
    assert msg.startswith("NVRTC could not compile kernel.cu for sm_80 (NVRTC_ERROR_COMPILATION)")
    assert e.log.rstrip() in msg
    assert "> 4 |     a[i] = x * undefined_%d;" % n in msg
    assert "  3 |     float x = a[i]" in msg  # context
    assert "  2 |     int i = threadIdx.x;" in msg
    assert "> 9 | __device__ int g() { return nope; }" in msg
    assert "  1 | extern" not in msg.split("marked")[1]  # only two lines of context
    assert not cache_files_in(os.environ["GPUHOST_CACHE_DIR"])


def cache_files_in(directory):
    return os.listdir(directory) if os.path.isdir(directory) else []


def test_an_unknown_option_raises_nvrtc_error_with_the_log():
    with pytest.raises(NvrtcError, match="unrecognized option --no-such-option") as info:
        gpuhost.compile_ptx(fresh_kernel()[0], cc=(8, 0), options=["--no-such-option"])
    assert info.value.name == "NVRTC_ERROR_INVALID_OPTION" and info.value.log


@pytest.mark.parametrize("call, exc, match", [
    (lambda: gpuhost.compile(b"__global__ void k() {}"), TypeError, "source must be a str"),
    (lambda: gpuhost.compile("x", "sass"), ValueError, "output must be 'ptx', 'cubin' or 'ltoir'"),
    (lambda: gpuhost.compile("x", cc="eighty"), ValueError, "cc must be"),
    (lambda: gpuhost.compile("x", cc=8.0), TypeError, "cc must be a"),
    (lambda: gpuhost.compile("x", cc=(8, 10)), ValueError, "is not a compute capability"),
    (lambda: gpuhost.compile("x", cc=(8, 0), options=[1]), TypeError, "options must hold str"),
    (lambda: gpuhost.compile("x", cc=(8, 0), options=3), TypeError, "options must be a str"),
    (lambda: gpuhost.compile("x", cc=(8, 0), options=["-arch=sm_80"]), ValueError, "cc="),
    (lambda: gpuhost.compile("x", cc=(8, 0), defines=[3]), TypeError, "defines must hold"),
    (lambda: gpuhost.compile("x", cc=(8, 0), defines={"": 1}), ValueError, "not a macro name"),
    (lambda: gpuhost.compile("x", cc=(8, 0), include_dirs=3), TypeError, "include_dirs"),
    (lambda: gpuhost.compile("x", cc=(8, 0), std=17.5), TypeError, "std must be"),
    (lambda: gpuhost.compile("x", cc=(8, 0), name_expressions=[1]), TypeError,
     "name_expressions must hold str"),
    (lambda: gpuhost.compile("x\0y", cc=(8, 0)), ValueError, "NUL"),
])
def test_bad_arguments_raise_clear_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_core_nvrtc_compile_checks_its_arguments():
    with pytest.raises(TypeError, match="options must be a sequence of str, not str"):
        _core.nvrtc_compile("x", "k.cu", "-G", (), ())
    with pytest.raises(ValueError, match="unknown output 'sass'"):
        _core.nvrtc_compile("x", "k.cu", (), (), ("sass",))
    with pytest.raises(ValueError, match="options item 0 contains a NUL"):
        _core.nvrtc_compile("x", "k.cu", ("-D\0",), (), ())


def test_core_nvrtc_compile_returns_outputs_log_and_lowered_names():
    src = 'template <int N> __global__ void t(int *x) { x[0] = N; }\n'
    outs, log, lowered = _core.nvrtc_compile(src, "t.cu", ("-arch=sm_80",), ("t<7>",),
                                             ("ptx", "cubin", "ltoir"))
    assert outs["cubin"][:4] == b"\x7fELF" and outs["ltoir"] is None
    assert b".entry _Z1tILi7EEvPi(" in outs["ptx"]
    assert log == "" and lowered == {"t<7>": "_Z1tILi7EEvPi"}


def test_supported_archs_are_sorted_ints():
    assert all(type(a) is int for a in ARCHS) and list(ARCHS) == sorted(ARCHS)
    assert ARCHS[0] >= 50 and 80 in ARCHS


# -- the memory cache ----------------------------------------------------------------------


def test_a_memory_hit_returns_the_same_object_without_nvrtc(monkeypatch):
    src, _ = fresh_kernel()
    first = gpuhost.compile(src, cc=(8, 0), defines={"X": 1}, options=["-lineinfo"])
    calls = NvrtcCalls(monkeypatch)
    assert gpuhost.compile(src, cc=(8, 0), defines={"X": 1}, options=["-lineinfo"]) is first
    assert gpuhost.compile(src, cc="8.0", defines=["X=1"], options=("-lineinfo",)) is first
    assert calls.count == 0
    other = gpuhost.compile(src, cc=(8, 0), defines={"X": 2}, options=["-lineinfo"])
    assert calls.count == 1 and other is not first


def test_the_memory_cache_sees_an_edited_header(tmp_path):
    inc = tmp_path / "inc"
    inc.mkdir()
    header = inc / "v.h"
    src = '#include <v.h>\nextern "C" __global__ void h(int *x) { x[0] = V; }\n'
    a, b = random.sample(range(1 << 20, 1 << 30), 2)
    header.write_text("#define V %d\n" % a)
    first = gpuhost.compile_ptx(src, cc=(8, 0), include_dirs=(str(inc),))
    assert str(a) in first.ptx
    header.write_text("#define V %d  /* edited */\n" % b)
    second = gpuhost.compile_ptx(src, cc=(8, 0), include_dirs=(str(inc),))
    assert str(b) in second.ptx and second is not first


def test_the_disk_key_covers_the_headers_contents(tmp_path):
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "inner.h").write_text("#define W 1\n")
    (inc / "outer.h").write_text('#include "inner.h"\n')
    src = '#include "outer.h"\nextern "C" __global__ void h(int *x) { x[0] = W; }\n'
    gpuhost.compile_ptx(src, cc=(8, 0), include_dirs=[str(inc)])
    compiler.clear_cache()
    value = random.randrange(1 << 20, 1 << 30)
    (inc / "inner.h").write_text("#define W %d\n" % value)  # included by an included file
    assert str(value) in gpuhost.compile_ptx(src, cc=(8, 0), include_dirs=[str(inc)]).ptx
    assert len([p for p in cache_files(tmp_path) if p.suffix == ".nvrtc"]) == 2


# -- the disk cache ------------------------------------------------------------------------

CHILD = r"""
import hashlib, json, sys, warnings
import gpuhost
from gpuhost import _core
calls = []
real = _core.nvrtc_compile
_core.nvrtc_compile = lambda *a: calls.append(1) or real(*a)
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    code = gpuhost.compile(sys.argv[1] if len(sys.argv) > 1 else SRC, cc=(8, 0),
                           name_expressions=["t<3>"])
print(json.dumps({"calls": len(calls), "sha": hashlib.sha256(code).hexdigest(),
                  "log": code.log, "lowered": code.lowered_names, "ptx": code.ptx,
                  "warned": len(w)}))
"""

TEMPLATE_SRC = ('template <int N> __global__ void t(int *x) { int unused; x[0] = N + %d; }\n')


def child(tmp_path, src, extra_env=None):
    env = {"GPUHOST_CACHE_DIR": str(tmp_path / "cache")}
    env.update(extra_env or {})
    proc = run_python("SRC = %r\n" % src + CHILD, env)
    assert proc.returncode == 0, proc.stderr
    import json

    return json.loads(proc.stdout)


def test_the_disk_cache_serves_another_process(tmp_path):
    src = TEMPLATE_SRC % random.randrange(1 << 30)
    first = child(tmp_path, src)
    assert first["calls"] == 1 and first["warned"] == 1 and "#177-D" in first["log"]
    files = cache_files(tmp_path)
    assert len(files) == 1 and files[0].suffix == ".nvrtc"
    assert re.fullmatch(r"[0-9a-f]{64}\.nvrtc", files[0].name)
    second = child(tmp_path, src)
    assert second["calls"] == 0 and second["warned"] == 0
    for k in ("sha", "log", "lowered", "ptx"):
        assert second[k] == first[k], k
    assert second["lowered"] == {"t<3>": "_Z1tILi3EEvPi"}


@pytest.mark.parametrize("damage", ["truncate", "flip_payload", "flip_header", "empty", "garbage"])
def test_a_damaged_cache_file_is_rejected_and_rewritten(tmp_path, damage):
    src = TEMPLATE_SRC % random.randrange(1 << 30)
    first = child(tmp_path, src)
    (path,) = cache_files(tmp_path)
    good = path.read_bytes()
    data = bytearray(good)
    if damage == "truncate":
        data = data[:len(data) // 2]
    elif damage == "flip_payload":
        data[-10] ^= 0xFF
    elif damage == "flip_header":
        data[20] ^= 0x01  # the payload length
    elif damage == "empty":
        data = b""
    else:
        data = os.urandom(len(data))
    path.write_bytes(bytes(data))
    again = child(tmp_path, src)
    assert again["calls"] == 1 and again["sha"] == first["sha"]
    assert path.read_bytes() == good
    assert child(tmp_path, src)["calls"] == 0


def test_concurrent_writers_leave_one_valid_file(tmp_path):
    src = TEMPLATE_SRC % random.randrange(1 << 30)
    start = time.time() + 3.0
    code = ("import time\nwhile time.time() < %r: time.sleep(0.001)\n" % start
            + "SRC = %r\n" % src + CHILD)
    env = dict(os.environ, GPUHOST_CACHE_DIR=str(tmp_path / "cache"))
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(8)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e for _, e in outs]
    import json

    results = [json.loads(o) for o, _ in outs]
    assert len({r["sha"] for r in results}) == 1
    files = cache_files(tmp_path)
    assert [f.suffix for f in files] == [".nvrtc"], files  # no temporary file left
    key = files[0].name[:-len(".nvrtc")]
    fields = _cache.load(str(tmp_path / "cache"), key)
    assert fields is not None and hashlib.sha256(fields["code"]).hexdigest() == results[0]["sha"]
    assert child(tmp_path, src)["calls"] == 0


def test_a_disabled_cache_writes_nothing_and_compiles_every_time(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUHOST_DISABLE_CACHE", "1")
    src, _ = fresh_kernel()
    calls = NvrtcCalls(monkeypatch)
    a = gpuhost.compile(src, cc=(8, 0))
    b = gpuhost.compile(src, cc=(8, 0))
    assert calls.count == 2 and a == b and a is not b
    assert not (tmp_path / "cache").exists()


def test_an_unwritable_cache_dir_compiles_without_caching_and_warns_once(tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("GPUHOST_CACHE_DIR", str(blocker / "cache"))
    with pytest.warns(RuntimeWarning, match="cannot write the kernel cache"):
        code = gpuhost.compile(fresh_kernel()[0], cc=(8, 0))
    assert code[:4] == b"\x7fELF"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gpuhost.compile(fresh_kernel()[0], cc=(8, 0))


def test_the_default_cache_dir_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("GPUHOST_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _cache.cache_dir() == str(tmp_path / "xdg" / "gpuhost")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _cache.cache_dir() == str(tmp_path / "home" / ".cache" / "gpuhost")


def test_clear_cache_removes_the_files(tmp_path):
    gpuhost.compile(fresh_kernel()[0], cc=(8, 0))
    assert cache_files(tmp_path)
    compiler.clear_cache(disk=True)
    assert cache_files(tmp_path) == []
