#!/bin/bash
# One device session: the test suite on the GPU (with the dev, viewer and tutorials
# extras installed: about 2 minutes on an H200 with 12 workers), tuning, LU and Cholesky
# profiles, backward errors at orders straddling the thresholds, repeated runs of the
# kernels whose work-groups read each other's stores, and the benchmark tables (JSON
# documents, one per `oclla bench` call, in OUTDIR/bench.json).
#   benchmarks/gpu_run.sh OUTDIR [families to tune: gemm,pivot,lu,chol | none]
# Run from the directory that holds oclla/ and kernels_cl/.  Each stage has its
# own time limit and the next runs even if it fails.  At most 8 files come back
# from a device run: gpu.txt tests.log tune.log tuned.json profile.log
# bench.json bench.err.
OUT=${1:?output directory}
FAMILIES=${2:-gemm,pivot,lu}
export PYTHONUNBUFFERED=1 QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen}
mkdir -p "$OUT"
stage() {  # stage LOG SECONDS command...
    local log=$1 limit=$2; shift 2
    echo "=== $* ($(date +%T))" | tee -a "$OUT/$log"
    timeout "$limit" "$@" >> "$OUT/$log" 2>&1
    echo "--- exit $? ($(date +%T))"; tail -n "${TAIL:-8}" "$OUT/$log"
}
bench() {  # bench SECONDS args...
    local limit=$1; shift
    echo "=== bench $* ($(date +%T))"
    timeout "$limit" python3 -m oclla.bench "$@" --json >> "$OUT/bench.json" 2>> "$OUT/bench.err"
    echo "--- exit $? ($(date +%T))"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/gpu.txt"
python3 -c "import oclla; [print(d.describe()) for d in oclla.devices()]" >> "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"
[ -n "$SKIP_TESTS" ] || stage tests.log 400 python3 -m pytest tests/ \
    -q -p no:cacheprovider -n "${WORKERS:-12}" --dist loadfile
if [ "$FAMILIES" != none ]; then
    stage tune.log 200 python3 -m oclla.tune --ship --dtype float32 --families "$FAMILIES"
    F64=$(echo "$FAMILIES" | tr , '\n' | grep -E '^(lu|chol)$' | paste -sd,)
    [ -z "$F64" ] || stage tune.log 100 python3 -m oclla.tune --ship --dtype float64 --quick \
        --families "$F64"
    cp oclla/data/tuned.json "$OUT/tuned.json"
fi
stage profile.log 150 python3 benchmarks/threshold_sweep.py --routines lu,chol,rfp
stage profile.log 60 python3 benchmarks/cross_group_stress.py 8 4096
stage profile.log 40 python3 benchmarks/profile.py 8192 blocked float32
stage profile.log 30 python3 benchmarks/profile.py 2048 cholesky float32
stage profile.log 30 python3 benchmarks/profile.py 8192 cholesky float64
bench 40 gemm --sizes 4096,8192 --dtype float32,float64 --repeat 3
bench 90 getrf --sizes 2048,8192,16384 --repeat 5
bench 60 potrf --sizes 2048,8192,16384 --repeat 5
bench 40 potrf --sizes 2048,8192 --dtype float64 --repeat 3
bench 40 getrf --sizes 2048,8192 --dtype float64 --repeat 2
bench 50 lu --sizes 1024,4096 --repeat 2
bench 20 syrk --sizes 8192 --repeat 3
