#!/bin/bash
# A device session: correctness on the GPU, tuning, then the benchmark tables.
#   benchmarks/gpu_run.sh OUTDIR first|final [tune families]
# first: the kernel tests, float32 tuning of the given families (default
#        gemm,pivot,lu; stored into oclla/data/tuned.json and copied to OUTDIR),
#        an LU profile and the headline benchmarks;
# final: float64 tuning and the full benchmark tables.
# Run from the directory that holds oclla/ and kernels_cl/.  Each stage has its
# own time limit and the next runs even if it fails; logs and JSON go to OUTDIR
# (at most 8 files come back from a device run).
OUT=${1:?output directory}
MODE=${2:-first}
FAMILIES=${3:-gemm,pivot,lu}
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"
stage() {  # stage NAME SECONDS command...
    local name=$1 limit=$2; shift 2
    echo "=== $name ($(date +%T))" | tee -a "$OUT/$name.log"
    timeout "$limit" "$@" >> "$OUT/$name.log" 2>&1
    echo "--- $name exit $? ($(date +%T))"; tail -n "${TAIL:-12}" "$OUT/$name.log"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/gpu.txt"
python3 -c "import oclla; [print(d.describe()) for d in oclla.devices()]" >> "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"
if [ "$MODE" = first ]; then
    stage tests 100 python3 -m pytest tests/test_blas.py tests/test_lu_kernels.py -q -x -p no:cacheprovider
    stage tune32 240 python3 -m oclla.tune --ship --dtype float32 --families "$FAMILIES"
    cp oclla/data/tuned.json "$OUT/tuned.json"
    stage profile 60 python3 benchmarks/profile_lu.py 8192 blocked float32
    stage profile 30 python3 benchmarks/profile_lu.py 4096 pivot float32
    stage bench 60 python3 -m oclla.bench gemm --sizes 8192 --repeat 3
    stage bench 120 python3 -m oclla.bench getrf --sizes 2048,8192,16384 --repeat 3
    stage bench 90 python3 -m oclla.bench lu --sizes 4096 --repeat 2
else
    stage tune64 120 python3 -m oclla.tune --ship --dtype float64 --quick --families gemm,lu
    cp oclla/data/tuned.json "$OUT/tuned.json"
    stage bench_gemm 60 python3 -m oclla.bench gemm --sizes 4096,8192 --dtype float32,float64 --repeat 3 --json
    stage bench_getrf 150 python3 -m oclla.bench getrf --sizes 2048,8192,16384 --repeat 3 --json
    stage bench_getrf64 60 python3 -m oclla.bench getrf --sizes 2048,8192 --dtype float64 --repeat 2 --json
    stage bench_lu 100 python3 -m oclla.bench lu --sizes 1024,4096 --repeat 2 --json
    stage bench_syrk 30 python3 -m oclla.bench syrk --sizes 8192 --repeat 3 --json
fi
