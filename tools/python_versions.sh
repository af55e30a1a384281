#!/usr/bin/env bash
# Builds gpuhost for each given Python (pip install of a wheel built from SDIST, in a fresh
# venv) and runs the fake-driver suite from that install: the whole suite, stopping at the
# first failure. Used by CI for the Pythons other than the main one.
#   tools/python_versions.sh SDIST TMPDIR PYTHON...
set -euo pipefail
sdist=$1 tmp=$2
shift 2
mkdir -p "$tmp/src"
tar -xzf "$sdist" -C "$tmp/src"
src=$(echo "$tmp"/src/gpuhost-*)
for py in "$@"; do
    ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    env="$tmp/py$ver"
    "$py" -m venv "$env"
    "$env/bin/pip" install -q --upgrade pip >/dev/null
    if ! "$env/bin/pip" install -q "$sdist" numpy pytest hypothesis >"$tmp/py$ver.log" 2>&1; then
        tail -n 40 "$tmp/py$ver.log"
        exit 1
    fi
    # run from the unpacked sdist's tests, away from any checkout's gpuhost package
    rm -rf "$src/gpuhost"
    printf 'Python %s: ' "$ver"
    (cd "$tmp" && GPUHOST_TEST_DRIVER=fake GPUHOST_FUZZ_EXAMPLES=20 FAKECUDA_BUILD_DIR="$tmp/fake$ver" \
        "$env/bin/python" -m pytest -q -x -p no:cacheprovider "$src/tests" >"$tmp/py$ver.test.log" 2>&1) \
        || { tail -n 60 "$tmp/py$ver.test.log"; exit 1; }
    tail -n 1 "$tmp/py$ver.test.log"
done
