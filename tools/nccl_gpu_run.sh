#!/usr/bin/env bash
# The NCCL runs of issue 43 on a 4-GPU machine, in one call (9 minutes at most):
#   1. build;
#   2. the NCCL and multi-GPU tests on the real driver, every GPU a rank (4 ranks);
#   3. test_nccl_multinode.py on the real NCCL: two simulated nodes (two launchers --nnodes 2,
#      two GPUs each, NCCL_HOSTID apart: NCCL's socket transport over loopback), the faults
#      (a rank killed mid-loop, a rank never started, a rank raising), every launcher's
#      variables, torchrun;
#   4. benchmarks/nccl.py on 2 GPUs (one node) and on 4 (one node, and two simulated nodes):
#      raw C, gpuhost, CuPy, PyTorch side by side.
# Logs under $OUT; a short summary is printed last.  NCCL_NVLS_ENABLE=0 throughout (the
# lent machines' rule), GPUHOST_STORE unset (no shared folder anywhere).
#   tools/nccl_gpu_run.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpuhost-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
unset GPUHOST_STORE
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1 GPUHOST_TEST_DRIVER=real
start=$(date +%s)
summary="$OUT/nccl_summary.txt"
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }
# step NAME SECONDS LOG command...: run it within SECONDS, its output in LOG
step() {
    local name=$1 limit=$2 log=$3
    shift 3
    echo "=== $name (at most ${limit} s)"
    timeout --signal=TERM --kill-after=10 "$limit" "$@" >"$log" 2>&1
    local rc=$?
    [ "$rc" = 124 ] && note "$name: TIMED OUT after ${limit} s (see $log)"
    return $rc
}

nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv | tee "$OUT/gpus.csv"
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
python3 --version
note "GPUs: $gpus; NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE; GPUHOST_STORE ${GPUHOST_STORE:-unset}"
for dep in hypothesis ml_dtypes; do
    if [ -d .wheels ] && ! python3 -c "import $dep" 2>/dev/null; then
        python3 -m pip install -q --no-index --find-links .wheels "$dep"
    fi
done

step build 60 "$OUT/nccl_build.log" python3 setup.py build_ext --inplace \
    || { tail -n 30 "$OUT/nccl_build.log"; note "build FAILED"; exit 1; }
python3 -c "from gpuhost import nccl; print('NCCL', nccl.get_version(), nccl.library_path(),
'registration', nccl.registration_available())" | tee -a "$summary"

step "tests: NCCL and multi-GPU, $gpus ranks" 150 "$OUT/nccl_tests.log" \
    python3 -m pytest -q -rsfE -p no:cacheprovider --durations=15 \
    tests/test_nccl.py tests/test_nccl_features.py tests/test_multigpu.py
note "tests (NCCL, features, multi-GPU): $(grep -E '^[0-9]+ (passed|failed)|^=+ .*(passed|failed)' "$OUT/nccl_tests.log" | tail -n 1)"
grep -E "^(FAILED|ERROR)" "$OUT/nccl_tests.log" | head -n 20 | tee -a "$summary"

step "tests: several nodes and faults on the real NCCL" 170 "$OUT/nccl_multinode.log" \
    python3 -m pytest -q -rsfE -p no:cacheprovider --durations=15 tests/test_nccl_multinode.py
note "tests (two simulated nodes, faults): $(grep -E '^[0-9]+ (passed|failed)|^=+ .*(passed|failed)' "$OUT/nccl_multinode.log" | tail -n 1)"
grep -E "^(FAILED|ERROR)" "$OUT/nccl_multinode.log" | head -n 20 | tee -a "$summary"

step "benchmark: 2 GPUs, one node" 45 "$OUT/nccl_bench_2.log" \
    python3 benchmarks/nccl.py --nproc 2 --nodes 1 --repeat 5 --json "$OUT/nccl_bench_2.json"
if [ "$gpus" -ge 4 ]; then
    step "benchmark: 4 GPUs, one node and two simulated nodes" 100 "$OUT/nccl_bench_4.log" \
        python3 benchmarks/nccl.py --nproc 4 --nodes 1,2 --repeat 5 --json "$OUT/nccl_bench_4.json"
else
    note "benchmark on 4 GPUs: NOT RUN ($gpus GPUs)"
fi

echo
echo "=================== summary ($(( $(date +%s) - start )) s) ==================="
cat "$summary"
for log in "$OUT/nccl_bench_2.log" "$OUT/nccl_bench_4.log"; do
    [ -f "$log" ] && grep -E "operation|all_reduce|failed" "$log"
done
