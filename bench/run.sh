#!/usr/bin/env bash
# The benchmark, in one call on the GPU machine (from the repository root,
# .gpu/ carried): the ceilings, FlashCore's and the reference's resample
# from the harness, then the peers
# (torch SDPA backends, Triton, torch resample) on the grid of
# ../shared/ANCHORS.md. Rows for docs/BENCHMARKS.md go to $OUT/peers.md and
# $OUT/harness.txt. Benchmarks are not tests: this prints numbers.
# To fit one device call beside scripts/gpu/attention.sh (whose checks cover
# the same kernels): BENCH_ATTENTION_ONLY=1 leaves out resample, ours and the
# peers'; BENCH_NO_CHECK=1 times ours without checking each row first.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp/flashcore-bench}
mkdir -p "$out"
. "$root/scripts/gpu/lib.sh"
build=/tmp/flashcore-harness
cmake -S "$root/harness" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$out/build.log" 2>&1 &&
  ninja -C "$build" >> "$out/build.log" 2>&1 || { echo "harness build failed (see build.log)"; exit 1; }
runner=$build/bin/fmha-runner
# FlashCore's generated kernels run through fmha-runner-jit, built here and
# carried in .gpu/ (scripts/gpu/pack.sh).
jit_runner=$(unpack_runner 2> /dev/null)
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  $runner ceilings
  shapes=("256 500 250 32" "4096 1000 500 64" "1024 4096 4096 128")
  [ "${BENCH_ATTENTION_ONLY:-0}" = 1 ] && shapes=()
  for shape in "${shapes[@]}"; do
    set -- $shape
    rows="--batch=$1 --samples=$2 --targets=$3 --features=$4 --target-range=inside --time --seed=1"
    echo "resample $1 x $2 -> $3 x $4, kernels-ref:"
    $runner resample $rows --no-check | grep -E "^(time|gpu time):"
    if [ -x "$jit_runner" ]; then
      echo "resample $1 x $2 -> $3 x $4, FlashCore (checked against kernels-ref):"
      $jit_runner resample $rows --candidate=jit | grep -E "^(out |time:|gpu time:)"
    fi
  done
} 2>&1 | tee "$out/harness.txt"
# FlashCore's attention on the peers' grid, each row checked against
# kernels-ref (unless BENCH_NO_CHECK=1), then timed: TFLOP/s into ours.txt
# for peers.py's `ours` column
# ("wrong" when the check fails). FMHA_CHIP picks the kernel (default: the
# JIT's choice for the device, sm_90a on Hopper).
: > "$out/ours.txt"
if [ -x "$jit_runner" ]; then
  python3 "$root/bench/peers/peers.py" --grid | while read -r b h s d causal dtype; do
    flags="--batch=$b --heads=$h --seq-q=$s --head-dim=$d --dtype=$dtype --time --seed=1"
    [ "$causal" = 1 ] && flags="$flags --causal"
    [ "${BENCH_NO_CHECK:-0}" = 1 ] && flags="$flags --no-check"
    result=$("$jit_runner" attention --candidate=jit $flags 2>&1)
    status=$?
    echo "$result" | tail -4 >> "$out/harness.txt"
    tflops=$(echo "$result" | grep -E "^time" | sed 's/.*: \([0-9.]*\) TFLOP.*/\1/')
    if [ "$status" -eq 0 ] && [ -n "$tflops" ]; then
      echo "$b $h $s $d $causal $dtype ${tflops%.*}" >> "$out/ours.txt"
    else
      echo "$b $h $s $d $causal $dtype wrong(exit-$status)" >> "$out/ours.txt"
    fi
  done
fi
PYTHONUNBUFFERED=1 python3 "$root/bench/peers/peers.py" 2>&1 | tee "$out/peers.log"
