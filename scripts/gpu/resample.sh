#!/usr/bin/env bash
# The generated resample kernels (fmha-runner-jit --candidate=jit) against
# kernels-ref on the GPU machine, on fresh random inputs (seeds in the log):
# both chips x modes x dtypes with two streams and lengths, S=1 and T=1,
# four streams, a CPU oracle, a batch past the grid's y limit; the checking
# mode of unsorted timestamps (fmha.check_sorted) on sorted and deliberately
# unsorted rows; compute-sanitizer on both kernels; then the three timed rows
# of ANCHORS.md (launch included and GPU alone).
# Usage (repository root, .gpu/ carried): scripts/gpu/resample.sh [RUNNER]
# RUNNER defaults to the fmha-runner-jit unpacked from .gpu/. Logs go to
# $OUT/resample.log; the table is last; exit 0 when every row passed.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/flashcore-gpu}
mkdir -p "$out"
. "$root/scripts/gpu/lib.sh"
runner=${1:-}
[ -n "$runner" ] || runner=$(unpack_runner) || exit 2
log=$out/resample.log
: > "$log"
j="$runner resample --candidate=jit"

for chip in sm_90a sm_80; do
  for mode in linear nearest previous; do
    for dtype in f32 f16 bf16; do
      check "jit resample $chip $mode $dtype, 2 streams, lengths" env FMHA_CHIP=$chip $j --mode=$mode --dtype=$dtype --batch=8 --samples=100,37 --features=32,5 --targets=61 --lengths
    done
  done
done
check "jit resample: S=1, T=1"                        $j --samples=1 --features=8 --targets=1
check "jit resample: 4 streams, D=1,3,8,64"           $j --samples=7,300,1,64 --features=1,3,8,64 --targets=500 --lengths
check "jit resample: 64 rows x 1000 targets, cpu"     $j --batch=64 --samples=1000 --features=64 --targets=1000 --oracle=cpu
check "jit resample: B=70000 > the grid's y limit"    $j --batch=70000 --samples=20 --features=8 --targets=3 --lengths
check "jit resample: tile 64x128 (block_t < threads)" env FMHA_RESAMPLE_TILE=64,128 $j --batch=16 --samples=500 --features=32 --targets=250
check "jit resample: tile 512x128 (block_t > threads)" env FMHA_RESAMPLE_TILE=512,128 $j --batch=4 --samples=300,20 --features=16,3 --targets=1000 --lengths

# The checking mode: sorted inputs pass through it; an unsorted row must be
# reported exactly (the first of several, the runner knows where it broke
# them), also past the grid's x extent and with lengths.
check "check-sorted: sorted, 2 streams, lengths"      $j --check-sorted --samples=100,37 --features=8,5 --targets=61 --lengths --batch=8
check "check-sorted: rows 5 and 2 unsorted -> row 2"  $j --check-sorted --unsort=5,2 --samples=100 --features=8 --targets=10 --batch=8
check "check-sorted: 2 streams, lengths, row 0"       $j --check-sorted --unsort=0 --samples=1000,3 --features=8,5 --targets=10 --batch=3 --lengths
check "check-sorted: B=70000, row 69999"              $j --check-sorted --unsort=69999 --samples=40 --features=8 --targets=3 --batch=70000

if command -v compute-sanitizer > /dev/null; then
  check "compute-sanitizer: jit resample"             "$root/scripts/gpu/sanitize.sh" $j --samples=40,9 --features=8,3 --targets=20 --lengths --seed=1
  check "compute-sanitizer: jit check-sorted"         "$root/scripts/gpu/sanitize.sh" $j --check-sorted --unsort=3 --samples=40,9 --features=8,3 --targets=20 --lengths --batch=6 --seed=1
fi
for shape in "256 500 250 32" "4096 1000 500 64" "1024 4096 4096 128"; do
  set -- $shape
  check "jit resample timed: $1 x $2 -> $3 x $4 bf16"  $j --batch=$1 --samples=$2 --targets=$3 --features=$4 --target-range=inside --time --seed=1
done
grep -E "^(resample|time:|gpu time:)" "$log" | grep -B2 "gpu time" | grep -v "^--"
finish
