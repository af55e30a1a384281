#!/usr/bin/env bash
# The fake-driver suite under AddressSanitizer and UndefinedBehaviorSanitizer (GCC): the
# extension and the fake driver are built with both into a temporary folder, beside a copy of
# the package, and the suite runs from there with ASan's runtime preloaded (python itself is
# not instrumented; CPython's own leaks are noise, so leak detection is off). Tests marked
# no_sanitizer (an address-space limit, RSS measurements) are skipped there. CI's sanitizer
# step runs this script.
#   tools/sanitizer_suite.sh [PYTEST ARGUMENTS...]
# Arguments that name a file or folder of the checkout (tests/test_stream.py) run those in
# place of the whole suite: one file under the sanitizers, while working on its C code.
# Needs, for the python3 on PATH: the test extra and setuptools 77 or newer (it runs setup.py).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
args=() paths=0
for arg in "$@"; do
    if [[ $arg != -* && -e $root/${arg%%::*} ]]; then # a path (tests/x.py::test_y too)
        args+=("$root/$arg")
        paths=1
    else
        args+=("$arg")
    fi
done
[ $paths = 1 ] || args=("$root/tests" "${args[@]}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
san="-fsanitize=address,undefined -fno-omit-frame-pointer -g -O1"
if ! GPUHOST_CFLAGS="$san" GPUHOST_LDFLAGS="-fsanitize=address,undefined" \
    GPUHOST_NO_INPLACE_COPY=1 python3 setup.py -q build_ext --build-temp "$tmp/t" \
    --build-lib "$tmp/l" >"$tmp/log" 2>&1; then
    cat "$tmp/log"
    exit 1
fi
mkdir "$tmp/pkg"
cp -r gpuhost "$tmp/pkg/"
rm -f "$tmp"/pkg/gpuhost/_core*.so
cp "$tmp"/l/gpuhost/_core*.so "$tmp/pkg/gpuhost/"
cd "$tmp/pkg"
FAKECUDA_CFLAGS="$san" FAKECUDA_BUILD_DIR="$tmp/fake" GPUHOST_TEST_DRIVER=fake \
    GPUHOST_FUZZ_EXAMPLES="${GPUHOST_FUZZ_EXAMPLES:-200}" \
    LD_PRELOAD="$(cc -print-file-name=libasan.so)" \
    ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    python3 -m pytest -q -p no:cacheprovider "${args[@]}"
