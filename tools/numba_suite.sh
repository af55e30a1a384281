#!/usr/bin/env bash
# numba-cuda's own host-API tests, ported to gpuhost by tools/numba_suite.py, on the GPU
# machine (numba-cuda is installed there; nothing of numba's is kept in this repository).
# numba's test helpers import filecheck and test_cuda_driver imports cffi: where they are
# missing they come from wheels carried in .wheels/ (pip download filecheck cffi pycparser
# -d .wheels --python-version 3.12 --only-binary=:all:).  Log: $OUT/numba_suite.log.
#   tools/numba_suite.sh [pytest args...]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpuhost-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
for mod in filecheck cffi; do
    python3 -c "import $mod" 2>/dev/null ||
        python3 -m pip install -q --no-index --find-links .wheels "$mod" || exit 1
done
python3 tools/numba_suite.py --out "${NUMBA_SUITE_DIR:-/tmp/numba-suite}" --unskip-317 -- \
    -q -rfEs --timeout 300 "$@" 2>&1 | tee "$OUT/numba_suite.log"
exit "${PIPESTATUS[0]}"
