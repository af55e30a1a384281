#!/usr/bin/env bash
# One GPU call for a change that touches launches and interop: build, the whole suite on the
# real GPU (4 workers, then the failures again one by one), and the benchmarks named in
# $BENCH (default: foreign_launch jit_launch launch), logs and JSON under $OUT.
#   tools/gpu_check.sh [pytest args...]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpuhost-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl \
        && export PYTHONPATH=/tmp/site
fi
echo "=== build"
python3 setup.py build_ext --inplace >"$OUT/build.log" 2>&1 || { tail -n 40 "$OUT/build.log"; exit 1; }
grep -i "warning" "$OUT/build.log" || echo "no compiler warnings"
status=0
if [ -z "${GPUHOST_NO_TESTS:-}" ]; then
    echo "=== pytest, real GPU"
    GPUHOST_TEST_DRIVER=real timeout 480 python3 -m pytest -q -n 4 -rfE "$@" 2>&1 \
        | tee "$OUT/pytest_real.log" | grep -E "^(FAILED|ERROR)|passed|failed" | tail -n 30
    if [ "${PIPESTATUS[0]}" != 0 ]; then
        echo "=== the failures again, one by one"
        GPUHOST_TEST_DRIVER=real timeout 240 python3 -m pytest -q --lf -rfE "$@" 2>&1 \
            | tee "$OUT/pytest_lf.log" | grep -E "^(FAILED|ERROR)|passed|failed|^E " | tail -n 40
        [ "${PIPESTATUS[0]}" = 0 ] || status=1
    fi
fi
for b in ${BENCH-foreign_launch jit_launch launch}; do
    echo "=== benchmarks/$b.py"
    timeout 300 python3 "benchmarks/$b.py" --json "$OUT/$b.json" 2>&1 | tee "$OUT/$b.log" \
        | grep -v "^\s*warn" | tail -n 25
done
exit $status
