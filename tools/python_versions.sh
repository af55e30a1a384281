#!/usr/bin/env bash
# Installs each given Python's manylinux wheel of gpuhost (from WHEELHOUSE, built by
# tools/manylinux_wheels.sh) and runs the fake-driver suite from that install: the subset
# tools/wheel_subset.py lists (the test files that run each C file of csrc/; CI measures that
# with gcov), stopping at the first failure; GPUHOST_WHOLE_SUITE=1 runs the whole suite
# instead. Used by CI for every Python (the whole suite runs there from builds of the
# checkout: README's test command, the sanitizer suite).
#   tools/python_versions.sh SDIST WHEELHOUSE TMPDIR PYTHON...
# The install is a fresh venv where the interpreter makes one; else (an interpreter unpacked
# from Debian's packages has no ensurepip) a folder of its own on PYTHONPATH, filled by $PIP
# for that Python's version. GPUHOST_SMOKE_ONLY="3.11 ..." names versions that only import
# and run tools/arch_smoke.py (one already ran the suite from a build of the checkout).
# GPUHOST_SUITE_JOBS=N runs up to N Pythons' suites at once (each is one process, mostly
# one core busy); their summaries are printed in the order given.
set -euo pipefail
sdist=$1 wheelhouse=$2 tmp=$3
shift 3
mkdir -p "$tmp/src"
tar -xzf "$sdist" -C "$tmp/src"
src=$(echo "$tmp"/src/gpuhost*-*)
rm -rf "$src/gpuhost" # the tests run against the install, away from the sdist's package
read -r -a requirements < <(python3 "$src/tools/wheel_subset.py" --requirements)
if [ "${GPUHOST_WHOLE_SUITE:-}" = 1 ]; then
    tests=("$src/tests")
else
    mapfile -t tests < <(python3 "$src/tools/wheel_subset.py" --list | sed "s|^|$src/|")
    echo "the subset of tools/wheel_subset.py: ${#tests[@]} test files"
fi
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT # suites still running when this stops early

install() { # PYTHON VER: the wheel installed; leaves $tmp/pyVER/run (runs that Python) and how
    local py=$1 ver=$2 env=$tmp/py$2 wheel
    wheel=$(ls "$wheelhouse"/*-"cp${ver/./}"-"cp${ver/./}"-*x86_64*.whl)
    if "$py" -m venv "$env" >/dev/null 2>&1; then
        "$env/bin/pip" install -q "$wheel" "${requirements[@]}" >"$tmp/py$ver.log" 2>&1 \
            || { tail -n 40 "$tmp/py$ver.log"; return 1; }
        printf '#!/bin/sh\nexec "%s" "$@"\n' "$env/bin/python" >"$env/run"
        echo "$(basename "$wheel") in a fresh venv" >"$env/how"
    else
        rm -rf "$env"
        "$PIP" install -q --target "$env" --python-version "$ver" --only-binary=:all: \
            --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 \
            "$wheel" "${requirements[@]}" >"$tmp/py$ver.log" 2>&1 \
            || { tail -n 40 "$tmp/py$ver.log"; return 1; }
        printf '#!/bin/sh\nPYTHONPATH="%s" exec "%s" "$@"\n' "$env" "$py" >"$env/run"
        echo "$(basename "$wheel") in a folder of its own" >"$env/how"
    fi
    chmod +x "$env/run"
}

suites=()
for py in "$@"; do
    ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    install "$py" "$ver"
    run=$tmp/py$ver/run
    if [[ " ${GPUHOST_SMOKE_ONLY:-} " == *" $ver "* ]]; then
        printf 'Python %s (%s): ' "$ver" "$(cat "$tmp/py$ver/how")"
        (cd "$tmp" && GPUHOST_CUDA_DRIVER=$("$run" "$src/tests/fakecuda/build.py" "$tmp/fake$ver") \
            "$run" "$src/tools/arch_smoke.py" x86_64)
        continue
    fi
    while [ "$(jobs -rp | wc -l)" -ge "${GPUHOST_SUITE_JOBS:-1}" ]; do
        wait -n || true
    done
    (rc=0
     cd "$tmp" && GPUHOST_TEST_DRIVER=fake GPUHOST_FUZZ_EXAMPLES=20 FAKECUDA_BUILD_DIR="$tmp/fake$ver" \
        "$run" -m pytest -q -x -p no:cacheprovider "${tests[@]}" >"$tmp/py$ver.test.log" 2>&1 || rc=$?
     echo $rc >"$tmp/py$ver.rc") &
    suites+=("$ver")
done
wait
failed=0
for ver in "${suites[@]}"; do
    printf 'Python %s (%s): %s\n' "$ver" "$(cat "$tmp/py$ver/how")" "$(tail -n 1 "$tmp/py$ver.test.log")"
    if [ "$(cat "$tmp/py$ver.rc")" != 0 ]; then
        tail -n 60 "$tmp/py$ver.test.log"
        failed=1
    fi
done
exit $failed
