#!/usr/bin/env bash
# CuPy's own tests of cupy.cuda's host API, ported to gpuhost.compat.cupy by
# tools/cupy_suite.py, on the GPU machine (CuPy is installed there, for its test helpers).
# CuPy's tests are not installed with CuPy and are never kept in this repository: export
# them from CuPy's source, at the tag of the installed version, into the ignored folder
# .cupy-src/ and carry it to the GPU machine:
#   git -C <cupy checkout> archive v14.2.0 tests/cupy_tests/cuda_tests | tar -x -C .cupy-src
#   echo v14.2.0 > .cupy-src/TAG
# Log: $OUT/cupy_suite.log.
#   tools/cupy_suite.sh [pytest args...]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpuhost-out}
SRC=${CUPY_SOURCE:-.cupy-src}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if [ ! -d "$SRC/tests/cupy_tests/cuda_tests" ]; then
    echo "no CuPy tests under $SRC (see the comment at the top of $0)" >&2
    exit 2
fi
{
    echo "CuPy installed: $(python3 -c 'import cupy; print(cupy.__version__)' 2>&1)," \
         "tests from: $(cat "$SRC/TAG" 2>/dev/null || echo unknown)"
    python3 tools/cupy_suite.py --cupy-source "$SRC" --out "${CUPY_SUITE_DIR:-/tmp/cupy-suite}" \
        -- -q -rfEs --timeout 600 "$@"
} 2>&1 | tee "$OUT/cupy_suite.log"
exit "${PIPESTATUS[0]}"
