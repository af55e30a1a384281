"""The part of the test suite CI runs from each Python's installed wheel, and its proof.

    python3 tools/wheel_subset.py --list           the subset's test files, one a line
    python3 tools/wheel_subset.py --requirements   what a wheel's environment installs with it
    python3 tools/wheel_subset.py --check [--keep DIR]

The whole fake-driver suite runs twice in CI from builds of the checkout (README's test
command, and the sanitizer suite); from each Python's manylinux wheel what has to be shown is
that the wheel zig built for that Python works: every C file of csrc/ compiled into it runs.
COVERS names, for each C file, a test file of the subset whose run executes that file's code
beyond what importing gpuhost executes; SUBSET is those test files. tests/test_wheel_subset.py
fails where a C file of csrc/ has no entry (a new file), or an entry names a test file that is
gone or outside the subset.

--check measures COVERS: the extension built with gcc --coverage into a temporary folder (the
fake driver as the tests build it), a copy of the package beside it, gcov's line counts after
`import gpuhost` alone, then after each test file of the subset run on its own, in an
environment like a wheel's (the packages --requirements names; the check runs in the Python
it is started with). It prints, per C file, its lines, those the subset executes and those it
executes beyond the import, and exits 1 where a C file's entry does not hold (its test file
executes nothing of it beyond the import) or where a C file is executed by no test file of the
subset. Needs gcc and gcov, and setuptools 77 or newer (it runs setup.py). CI runs it.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# What a wheel's environment gets beside the wheel (tools/python_versions.sh): no numba-cuda,
# so gpuhost.jit's tests that need it skip there; csrc/jit is exercised by test_interop.py's
# dispatcher tests, which need only the extension.
REQUIREMENTS = ["numpy", "pytest", "hypothesis"]

# Two C files have no code to run: their static assertions hold when they compile (the
# libraries' ABI as gpuhost declares it); the module's init is what the import itself runs.
COMPILED = "(compile-time checks only)"
IMPORT = "(the import)"
# C file -> the test file of the subset that executes it beyond the import (measured by
# --check), or COMPILED (no executable line), or IMPORT (what `import gpuhost` executes)
COVERS = {
    "csrc/arrays/array_copy.c": "tests/test_devicearray.py",
    "csrc/arrays/array_index.c": "tests/test_array_index.py",
    "csrc/arrays/devicearray.c": "tests/test_devicearray.py",
    "csrc/arrays/dlpack.c": "tests/test_interop.py",
    "csrc/arrays/interop.c": "tests/test_interop.py",
    "csrc/arrays/interop_arrays.c": "tests/test_interop.py",
    "csrc/arrays/interop_cai.c": "tests/test_interop.py",
    "csrc/base/cuda_api.c": "tests/test_cuda_api.py",
    "csrc/base/display.c": "tests/test_display.py",
    "csrc/base/errors.c": "tests/test_errors.py",
    "csrc/base/libload.c": "tests/test_nvrtc_api.py",
    "csrc/base/live.c": "tests/test_live.py",
    "csrc/base/services.c": "tests/test_devicearray.py",
    "csrc/core/address_api.c": "tests/test_device.py",
    "csrc/core/context.c": "tests/test_context.py",
    "csrc/core/current.c": "tests/test_context.py",
    "csrc/core/device.c": "tests/test_device.py",
    "csrc/core/event.c": "tests/test_event.py",
    "csrc/core/nvtx.c": "tests/test_nvtx.py",
    "csrc/core/release.c": "tests/test_context.py",
    "csrc/core/stream.c": "tests/test_stream.py",
    "csrc/graphs/capture.c": "tests/test_graphs.py",
    "csrc/graphs/graph.c": "tests/test_graphs.py",
    "csrc/graphs/graph_exec.c": "tests/test_graphs.py",
    "csrc/jit/jit_args.c": "tests/test_interop.py",
    "csrc/jit/jit_launch.c": "tests/test_interop.py",
    "csrc/launch/code_image.c": "tests/test_kernel.py",
    "csrc/launch/kernel.c": "tests/test_kernel_types.py",
    "csrc/launch/kernel_args.c": "tests/test_kernel_types.py",
    "csrc/launch/kernel_types.c": "tests/test_kernel_types.py",
    "csrc/launch/nvrtc_abi_check.c": COMPILED,
    "csrc/launch/nvrtc_api.c": "tests/test_nvrtc_api.py",
    "csrc/launch/program.c": "tests/test_compiler.py",
    "csrc/memory/allocator.c": "tests/test_pools.py",
    "csrc/memory/memory.c": "tests/test_devicearray.py",
    "csrc/memory/pool.c": "tests/test_pools.py",
    "csrc/memory/pool_engine.c": "tests/test_pools.py",
    "csrc/memory/pool_obtain.c": "tests/test_pools.py",
    "csrc/memory/staging.c": "tests/test_staging.py",
    "csrc/module.c": IMPORT,
    "csrc/nccl/nccl_abi_check.c": COMPILED,
    "csrc/nccl/nccl_api.c": "tests/test_nccl.py",
    "csrc/nccl/nccl_args.c": "tests/test_nccl.py",
    "csrc/nccl/nccl_collectives.c": "tests/test_nccl.py",
    "csrc/nccl/nccl_comm.c": "tests/test_nccl.py",
    "csrc/nccl/nccl_ready.c": "tests/test_nccl.py",
    "csrc/nccl/nccl_register.c": "tests/test_nccl.py",
}
SUBSET = sorted(set(COVERS.values()) - {COMPILED, IMPORT})


def c_files(root=ROOT):
    """csrc/'s C files, relative to the checkout's root."""
    return sorted(os.path.relpath(p, root)
                  for p in glob.glob(os.path.join(root, "csrc", "**", "*.c"), recursive=True))


def problems(root=ROOT):
    """What makes COVERS incomplete or stale, without running anything: a C file with no
    entry, an entry for a file that is gone, a test file that does not exist."""
    out, files = [], c_files(root)
    out += ["%s: no test file of the subset is named for it in tools/wheel_subset.py's "
            "COVERS" % c for c in files if c not in COVERS]
    out += ["%s: named in COVERS, but not a C file of csrc/" % c for c in COVERS
            if c not in files]
    out += ["%s: in the subset, but there is no such test file" % t for t in SUBSET
            if not os.path.exists(os.path.join(root, t))]
    return out


# ---- --check: measured with gcov --------------------------------------------------------------

def measure(objdir, root):
    """{C file: (its executable lines, the set of those executed)}, from gcov's reading of
    the notes (.gcno) and counts (.gcda, where the file ran at all) under objdir."""
    out = {}
    for notes in glob.glob(os.path.join(objdir, "**", "*.gcno"), recursive=True):
        result = subprocess.run(["gcov", "--json-format", "--stdout", notes],
                                cwd=os.path.dirname(notes), capture_output=True, text=True)
        if result.returncode:
            raise RuntimeError("gcov %s: %s" % (notes, result.stderr.strip()))
        for doc in filter(str.strip, result.stdout.splitlines()):
            for entry in json.loads(doc)["files"]:
                rel = os.path.relpath(os.path.normpath(os.path.join(root, entry["file"])), root)
                if rel.startswith("csrc" + os.sep) and rel.endswith(".c"):
                    lines, ran = out.get(rel, (0, set()))
                    ran |= {line["line_number"] for line in entry["lines"] if line["count"]}
                    out[rel] = (max(lines, len(entry["lines"])), ran)
    return out


def executed(objdir, root):
    """{C file: the set of its lines executed}."""
    return {c: ran for c, (_, ran) in measure(objdir, root).items()}


def reset(objdir):
    for gcda in glob.glob(os.path.join(objdir, "**", "*.gcda"), recursive=True):
        os.remove(gcda)


def check(work, python=sys.executable, root=ROOT, out=sys.stdout):
    """Measure COVERS in `work` (a fresh folder); return the number of problems found."""
    bad = problems(root)
    for line in bad:
        print(line, file=out)
    objdir, lib = os.path.join(work, "t"), os.path.join(work, "l")
    env = dict(os.environ, GPUHOST_CFLAGS="--coverage -O0", GPUHOST_LDFLAGS="--coverage",
               GPUHOST_NO_INPLACE_COPY="1")
    build = subprocess.run([python, "setup.py", "-q", "build_ext", "--build-temp", objdir,
                            "--build-lib", lib], cwd=root, env=env, capture_output=True,
                           text=True)
    if build.returncode:
        print(build.stdout + build.stderr, file=out)
        return len(bad) + 1
    # laid out as CI runs the subset from a wheel: the package in a folder of its own on
    # PYTHONPATH (where a wheel is installed), the tests from a copy of the checkout without
    # its package (the sdist's, there), run from a third folder
    pkg, src = os.path.join(work, "pkg"), os.path.join(work, "src")
    shutil.copytree(os.path.join(root, "gpuhost"), os.path.join(pkg, "gpuhost"),
                    ignore=shutil.ignore_patterns("_core*.so", "__pycache__"))
    for so in glob.glob(os.path.join(lib, "gpuhost", "_core*.so")):
        shutil.copy(so, os.path.join(pkg, "gpuhost"))
    os.makedirs(src)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import doc_commands  # the files a fresh clone holds
    doc_commands.fresh_copy(root, src)
    shutil.rmtree(os.path.join(src, "gpuhost"))
    here = os.path.join(work, "run")
    os.makedirs(here)
    fake_dir = os.path.join(work, "fake")
    fake = subprocess.run([python, os.path.join(root, "tests", "fakecuda", "build.py"),
                           fake_dir], capture_output=True, text=True, check=True).stdout.strip()
    run_env = {k: v for k, v in os.environ.items()
               if not k.startswith(("GPUHOST_", "FAKECUDA_", "PYTHONPATH"))}
    run_env.update(GPUHOST_TEST_DRIVER="fake", FAKECUDA_BUILD_DIR=fake_dir,
                   GPUHOST_FUZZ_EXAMPLES="20", PYTHONPATH=pkg)
    reset(objdir)
    subprocess.run([python, "-c", "import gpuhost"], cwd=here, check=True,
                   env=dict(run_env, GPUHOST_CUDA_DRIVER=fake))
    baseline = executed(objdir, root)
    beyond, by_subset, failed = {}, {}, []
    for test in SUBSET:
        reset(objdir)
        started = time.time()
        result = subprocess.run([python, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                                 os.path.join(src, test)], cwd=here, env=run_env,
                                capture_output=True, text=True)
        summary = (result.stdout.strip().splitlines() or [""])[-1]
        print("%s: %s (%.0f s)" % (test, summary, time.time() - started), file=out, flush=True)
        if result.returncode:
            print(result.stdout[-3000:] + result.stderr[-2000:], file=out)
            failed.append(test)
        for c, lines in executed(objdir, root).items():
            by_subset.setdefault(c, set()).update(lines)
            extra = lines - baseline.get(c, set())
            if extra:
                beyond.setdefault(c, {})[test] = len(extra)
    total = {c: lines for c, (lines, _) in measure(objdir, root).items()}
    print("\n%-34s %6s %8s %8s  %s" % ("C file", "lines", "subset", "beyond", "its test file"),
          file=out)
    for c in c_files(root):
        tests, named = beyond.get(c, {}), COVERS.get(c)
        ran = by_subset.get(c, set())
        if named == COMPILED:
            # compiled (its notes are there), with nothing gcov counts
            holds = total.get(c, 0) == 0 and os.path.exists(
                os.path.join(objdir, os.path.splitext(c)[0] + ".gcno"))
            why = "has executable lines: name its test file"
        elif named == IMPORT:
            holds = bool(baseline.get(c))
            why = "the import executes none of it"
        else:
            holds = named in tests
            why = "executes none of it beyond the import"
        print("%-34s %6d %8d %8d  %s%s" % (c, total.get(c, 0), len(ran),
                                          len(ran - baseline.get(c, set())), named,
                                          "" if holds else "  <- " + why), file=out)
        if not holds:
            bad.append("%s: %s %s%s" % (c, named, why, " (%s do)" % ", ".join(sorted(tests))
                                         if tests else ""))
    bad += ["%s: failed" % t for t in failed]
    for line in bad:
        print("PROBLEM", line, file=out)
    if not bad:
        print("\nevery C file of csrc/ with code executed beyond the import by its test file "
              "of the subset (%d test files)" % len(SUBSET), file=out)
    return len(bad)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--list", action="store_true", help="print the subset's test files")
    what.add_argument("--requirements", action="store_true",
                      help="print what a wheel's environment installs beside the wheel")
    what.add_argument("--check", action="store_true",
                      help="measure with gcov that each C file's test file executes it")
    parser.add_argument("--keep", help="with --check: build and measure in this folder, and "
                        "keep it (default: a temporary one)")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(SUBSET))
        return 0
    if args.requirements:
        print(" ".join(REQUIREMENTS))
        return 0
    work = args.keep or tempfile.mkdtemp(prefix="wheel_subset.")
    os.makedirs(work, exist_ok=True)
    try:
        return 1 if check(work) else 0
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
