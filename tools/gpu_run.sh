#!/usr/bin/env bash
# Everything the GPU machine is for, in one call: build, the whole suite on the real GPU,
# the same suite over the fake driver, python -m gpuhost, benchmarks.  Logs go to $OUT.
#   tools/gpu_run.sh [pytest args...]
# GPUHOST_NO_TESTS, GPUHOST_NO_FAKE, GPUHOST_NO_BENCH (set to 1) leave parts out.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpuhost-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export PYTHONFAULTHANDLER=1  # a crash, even at exit, prints where it happened
status=0

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
python3 --version

# The GPU machine has no internet: test dependencies it lacks (hypothesis) come as wheels
# carried in .wheels/ (pip download hypothesis ml_dtypes -d .wheels --python-version 3.12
# --only-binary=:all:).
for dep in hypothesis ml_dtypes; do
    if [ -d .wheels ] && ! python3 -c "import $dep" 2>/dev/null; then
        python3 -m pip install -q --no-index --find-links .wheels "$dep"
    fi
done

echo "=== build"
python3 setup.py build_ext --inplace >"$OUT/build.log" 2>&1 || { cat "$OUT/build.log"; exit 1; }
grep -i "warning" "$OUT/build.log" || echo "no compiler warnings"

# One pytest process, its log in $OUT/<name>.log: its failures, then its summary line with the
# process's own exit code beside it.  A run whose summary says passed but whose process died
# at shutdown (a crash in another library's finalizer, exit 139) fails the whole call.
run_pytest() {
    local name=$1 rc summary
    shift
    "$@" >"$OUT/$name.log" 2>&1
    rc=$?
    grep -E "^(FAILED|ERROR) |Fatal Python error|Segmentation fault" "$OUT/$name.log" | tail -n 40
    summary=$(grep -E "^(=+ )?[0-9]+ (passed|failed|error)|^=+ no tests ran" "$OUT/$name.log" | tail -n 1)
    echo "$name: ${summary:-no summary line} [exit code $rc]"
    [ "$rc" = 0 ] || status=1
}

if [ -z "${GPUHOST_NO_TESTS:-}" ]; then
echo "=== pytest, real GPU"
run_pytest pytest_real env GPUHOST_TEST_DRIVER=real python3 -m pytest -v -rsfE --durations=40 \
    -p no:cacheprovider "$@"

if [ -z "${GPUHOST_NO_FAKE:-}" ]; then
echo "=== pytest, fake driver"
run_pytest pytest_fake env GPUHOST_TEST_DRIVER=fake python3 -m pytest -q -p no:cacheprovider "$@"
fi
fi

echo "=== python -m gpuhost"
python3 -m gpuhost 2>&1

if [ -z "${GPUHOST_NO_BENCH:-}" ]; then
    echo "=== benchmarks"
    python3 benchmarks/all.py --json "$OUT/bench.json" --png "$OUT/bench.png" \
        --markdown "$OUT/bench.md" 2>&1 | tee "$OUT/bench.log" | grep -v "^\s*warn"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
    python3 benchmarks/peer.py --json "$OUT/peer.json" 2>&1 | tee "$OUT/peer.log"
fi
exit $status
