#!/usr/bin/env bash
# numba-cuda's own kernel tests (numba/cuda/tests/cudapy/), ported to gpuhost.jit by
# tools/numba_kernel_suite.py, on the GPU machine (numba-cuda is installed there; nothing
# of numba's is kept in this repository).  numba's test helpers import filecheck, three
# modules import cffi at the top and test_bfloat16 imports ml_dtypes: where they are
# missing they come from wheels carried in .wheels/ (pip download filecheck cffi pycparser
# ml_dtypes -d .wheels --python-version 3.12 --only-binary=:all:); without ml_dtypes only
# test_bfloat16.py fails to collect.  Log: $OUT/numba_kernel_suite.log.
#   tools/numba_kernel_suite.sh [pytest args...]
# The tests run in $JOBS pytest-xdist workers (default 8; JOBS=1: one process; "-n 4"
# among the arguments overrides it).  A subset of the modules:
#   MODULES='test_atomics,test_array*' EXCLUDE=test_caching SHARD=1/2 tools/numba_kernel_suite.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpuhost-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
# numba-cuda 0.30 needs np.row_stack (NumPy 2.5 removed it): the suite's conftest aliases
# it before numba's test helpers import numba.cuda.
for mod in filecheck cffi; do
    python3 -c "import $mod" 2>/dev/null ||
        python3 -m pip install -q --no-index --find-links .wheels "$mod" || exit 1
done
python3 -c "import ml_dtypes" 2>/dev/null ||
    python3 -m pip install -q --no-index --find-links .wheels ml_dtypes 2>/dev/null ||
    echo "ml_dtypes is not installed and not in .wheels/: test_bfloat16.py will not collect" >&2
JOBS=${JOBS:-8}
PARALLEL=()
if [ "$JOBS" != 1 ]; then
    if python3 -c "import xdist" 2>/dev/null; then
        PARALLEL=(-n "$JOBS")
    else
        echo "pytest-xdist is not installed: the tests run in one process" >&2
    fi
fi
SELECT=()
[ -n "${MODULES:-}" ] && SELECT+=(--modules "$MODULES")
[ -n "${EXCLUDE:-}" ] && SELECT+=(--exclude "$EXCLUDE")
[ -n "${SHARD:-}" ] && SELECT+=(--shard "$SHARD")
{
    echo "numba-cuda: $(python3 -c 'from importlib.metadata import version; print(version("numba-cuda"))' 2>&1)," \
         "numpy: $(python3 -c 'import numpy; print(numpy.__version__)' 2>&1)"
    python3 tools/numba_kernel_suite.py --out "${NUMBA_KERNEL_SUITE_DIR:-/tmp/numba-kernel-suite}" \
        "${SELECT[@]}" -- -q -rfEs --timeout 300 "${PARALLEL[@]}" "$@"
} 2>&1 | tee "$OUT/numba_kernel_suite.log"
exit "${PIPESTATUS[0]}"
