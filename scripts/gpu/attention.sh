#!/usr/bin/env bash
# The generated attention kernel (fmha-runner-jit --candidate=jit) against
# kernels-ref on the GPU machine, on fresh random inputs (seeds in the log):
# head dims 64, 128 and 256 and every other multiple of 16 from 32, both
# dtypes, causal and not, Sq != Sk, lengths 1, 17, 113,
# 1000, 4097, GQA 8:1 and MQA, windows, LSE, BSHD, then compute-sanitizer.
# Usage (repository root, .gpu/ carried): scripts/gpu/attention.sh [RUNNER]
# RUNNER defaults to the fmha-runner-jit unpacked from .gpu/. FMHA_CHIPS
# lists the chips to check (default: sm_80, plus sm_90a on a compute
# capability 9.0 device). Logs go to $OUT/attention.log; the table is last;
# exit 0 when every row passed.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/flashcore-gpu}
mkdir -p "$out"
if [ -z "${FMHA_CHIPS:-}" ]; then
  FMHA_CHIPS=sm_80
  [ "$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1)" = "9.0" ] &&
    FMHA_CHIPS="sm_80 sm_90a"
fi
. "$root/scripts/gpu/lib.sh"
runner=${1:-}
[ -n "$runner" ] || runner=$(unpack_runner) || exit 2
log=$out/attention.log
: > "$log"
for FMHA_CHIP in $FMHA_CHIPS; do
export FMHA_CHIP
j="$runner attention --candidate=jit"

for dtype in bf16 f16; do
  for d in 64 128 256; do
    for causal in "" --causal; do
      for shape in "1 1" "17 113" "113 17" "1000 1000" "4097 4097"; do
        set -- $shape
        check "$FMHA_CHIP jit $dtype d$d ${causal:-non-causal} Sq=$1 Sk=$2" \
          $j --dtype=$dtype --head-dim=$d $causal --seq-q=$1 --seq-k=$2 --heads=2 --lse
      done
    done
  done
done
# The other head dims (tiles wider than D: sm_90a rounds D up to 64
# columns, sm_80 to 64, 128 or 256).
for d in 32 48 80 96 112 144 160 176 192 208 224 240; do
  check "$FMHA_CHIP jit bf16 d$d non-causal Sq=1000 Sk=1000" $j --head-dim=$d --seq-q=1000 --seq-k=1000 --heads=2 --lse
done
for d in 32 96 192; do
  for shape in "1 1" "17 113" "4097 4097"; do
    set -- $shape
    check "$FMHA_CHIP jit f16 d$d causal Sq=$1 Sk=$2" $j --dtype=f16 --head-dim=$d --causal --seq-q=$1 --seq-k=$2 --heads=2 --lse
  done
done
check "$FMHA_CHIP jit GQA 4:1 window 64,0 causal d96 BSHD Sq=Sk=1000" $j --head-dim=96 --heads=8 --kv-heads=2 --seq-q=1000 --causal --window=64,0 --layout=bshd --lse
check "$FMHA_CHIP jit decode GQA 4:1 d80 B=3 Sk=1000"             $j --head-dim=80 --batch=3 --heads=32 --kv-heads=8 --seq-q=1 --seq-k=1000 --causal --lse
check "$FMHA_CHIP jit decode split-KV GQA 8:1 d192 Sk=4097"       $j --head-dim=192 --heads=16 --kv-heads=2 --seq-q=1 --seq-k=4097 --lse
check "$FMHA_CHIP jit GQA 8:1 causal d128 B=2 Sq=333 Sk=1000 lse" $j --batch=2 --heads=16 --kv-heads=2 --seq-q=333 --seq-k=1000 --causal --lse
check "$FMHA_CHIP jit MQA d64 Sq=1000 Sk=17"                      $j --heads=8 --kv-heads=1 --seq-q=1000 --seq-k=17 --head-dim=64 --lse
check "$FMHA_CHIP jit MQA causal d256 f16 Sq=17 Sk=4097"          $j --heads=4 --kv-heads=1 --seq-q=17 --seq-k=4097 --head-dim=256 --dtype=f16 --causal --lse
check "$FMHA_CHIP jit window 32,0 causal GQA d128 Sq=Sk=1000"     $j --heads=4 --kv-heads=2 --seq-q=1000 --seq-k=1000 --causal --window=32,0 --lse
check "$FMHA_CHIP jit window 100,50 non-causal d64 Sq=700 Sk=900" $j --heads=2 --seq-q=700 --seq-k=900 --window=100,50 --head-dim=64 --lse
check "$FMHA_CHIP jit window 0,-1 d128 Sq=Sk=513"                 $j --heads=2 --seq-q=513 --seq-k=513 --window=0,-1 --lse
check "$FMHA_CHIP jit BSHD causal d128 bf16 Sq=Sk=1000"           $j --heads=4 --seq-q=1000 --causal --layout=bshd --lse
# Decode: one query, a GQA group's heads folded into one tile's rows
# (foldGroupedQueries); with a window, packed (pack_query_heads) instead. The runner gives the
# launch a workspace, so where the rows are few (B x Hkv) the keys split
# over CTAs and merge (split-KV): 8:1 B=2 Sk=4097 and the window row.
check "$FMHA_CHIP jit decode GQA 4:1 causal d128 BSHD B=3 Sk=1000" $j --batch=3 --heads=32 --kv-heads=8 --seq-q=1 --seq-k=1000 --causal --layout=bshd --lse
check "$FMHA_CHIP jit decode GQA 8:1 d64 f16 B=2 Sk=4097"          $j --batch=2 --heads=16 --kv-heads=2 --seq-q=1 --seq-k=4097 --head-dim=64 --dtype=f16 --lse
check "$FMHA_CHIP jit decode MQA causal d256 Sk=77"                $j --batch=2 --heads=6 --kv-heads=1 --seq-q=1 --seq-k=77 --head-dim=256 --causal --lse
check "$FMHA_CHIP jit decode GQA 4:1 window 64,0 causal d128 Sk=1000" $j --heads=8 --kv-heads=2 --seq-q=1 --seq-k=1000 --causal --window=64,0 --lse
# A few queries: a group's heads packed into one tile's rows
# (pack_query_heads), their keys split where the rows are few.
check "$FMHA_CHIP jit packed GQA 4:1 Sq=4 causal d128 BSHD B=3 Sk=1000" $j --batch=3 --heads=32 --kv-heads=8 --seq-q=4 --seq-k=1000 --causal --layout=bshd --lse
check "$FMHA_CHIP jit packed GQA 8:1 Sq=16 d64 f16 B=2 Sk=4097"    $j --batch=2 --heads=16 --kv-heads=2 --seq-q=16 --seq-k=4097 --head-dim=64 --dtype=f16 --lse
check "$FMHA_CHIP jit packed GQA 6:1 Sq=5 window 64,0 causal d256 Sk=300" $j --heads=6 --kv-heads=1 --seq-q=5 --seq-k=300 --head-dim=256 --causal --window=64,0 --lse
# Long enough for the JIT's length-dependent tile (sm_90a causal d64 from
# 4k queries: getDefaultAttentionTiling), and the longest rows benchmarked.
check "$FMHA_CHIP jit long causal GQA d128 Sq=Sk=16384 lse"       $j --heads=4 --kv-heads=2 --seq-q=16384 --causal --lse
check "$FMHA_CHIP jit long causal d64 f16 Sq=8000 Sk=8192"        $j --heads=2 --seq-q=8000 --seq-k=8192 --head-dim=64 --dtype=f16 --causal --lse
# More units of work than SMs, and (FMHA_PERSISTENT=N, sm_90a) a few CTAs
# taking many: barrier phases, turns and causal pairs (odd row block counts
# leave a block alone) carried from tile to tile.
check "$FMHA_CHIP jit many tiles causal d128 B=4 H=16 Sq=Sk=1100 lse" $j --batch=4 --heads=16 --seq-q=1100 --causal --lse
check "$FMHA_CHIP jit many tiles d64 B=3 H=20 Sq=777 Sk=1500"      $j --batch=3 --heads=20 --seq-q=777 --seq-k=1500 --head-dim=64
check "$FMHA_CHIP jit 5 CTAs causal GQA 4:1 d256 B=2 Sq=1500 Sk=700" env FMHA_PERSISTENT=5 $j --batch=2 --heads=8 --kv-heads=2 --seq-q=1500 --seq-k=700 --head-dim=256 --causal --lse
check "$FMHA_CHIP jit 3 CTAs causal d64 f16 H=6 Sq=Sk=1000"         env FMHA_PERSISTENT=3 $j --heads=6 --seq-q=1000 --head-dim=64 --dtype=f16 --causal --lse
check "$FMHA_CHIP jit 1 CTA window 64,0 d128 B=2 Sq=Sk=900"       env FMHA_PERSISTENT=1 $j --batch=2 --heads=3 --seq-q=900 --window=64,0 --lse
# The nvJitLink fallback (the JIT loads through the driver's JIT when it
# can): its relocatable compile spills, the answers must not change.
[ "$FMHA_CHIP" = sm_80 ] &&
  check "$FMHA_CHIP jit via nvJitLink: causal GQA d128 Sq=1500 Sk=700" env FMHA_DRIVER_JIT=off $j --heads=8 --kv-heads=2 --seq-q=1500 --seq-k=700 --causal --lse
check "$FMHA_CHIP jit causal Sq=113 Sk=17 d128: empty rows, cpu"  $j --heads=2 --seq-q=113 --seq-k=17 --causal --lse --oracle=cpu
check "$FMHA_CHIP jit non-causal d64 Sq=Sk=200, cpu oracle"       $j --heads=2 --seq-q=200 --seq-k=200 --head-dim=64 --oracle=cpu
if command -v compute-sanitizer > /dev/null; then
  check "$FMHA_CHIP compute-sanitizer: jit attention d128 causal GQA" \
    "$root/scripts/gpu/sanitize.sh" $j --seq-q=150 --seq-k=170 --causal --lse --heads=2 --kv-heads=1 --seed=1
  check "$FMHA_CHIP compute-sanitizer: jit attention d96 causal GQA" \
    "$root/scripts/gpu/sanitize.sh" $j --seq-q=150 --seq-k=170 --causal --lse --heads=2 --kv-heads=1 --head-dim=96 --seed=1
  check "$FMHA_CHIP compute-sanitizer: jit attention d32" \
    "$root/scripts/gpu/sanitize.sh" $j --seq-q=130 --seq-k=90 --lse --heads=2 --head-dim=32 --seed=1
  check "$FMHA_CHIP compute-sanitizer: jit attention d64 window" \
    "$root/scripts/gpu/sanitize.sh" $j --seq-q=90 --seq-k=130 --window=20,10 --head-dim=64 --seed=1
  check "$FMHA_CHIP compute-sanitizer: jit attention GQA decode" \
    "$root/scripts/gpu/sanitize.sh" $j --seq-q=1 --seq-k=300 --causal --lse --heads=8 --kv-heads=2 --layout=bshd --seed=1
  check "$FMHA_CHIP compute-sanitizer: jit attention GQA decode, window (packed)" \
    "$root/scripts/gpu/sanitize.sh" $j --seq-q=1 --seq-k=3000 --causal --window=200,0 --lse --heads=8 --kv-heads=2 --layout=bshd --seed=1
  check "$FMHA_CHIP compute-sanitizer: jit attention packed GQA Sq=4" \
    "$root/scripts/gpu/sanitize.sh" $j --seq-q=4 --seq-k=3000 --causal --lse --heads=8 --kv-heads=2 --layout=bshd --seed=1
  check "$FMHA_CHIP compute-sanitizer: jit attention causal pairs, 2 CTAs" \
    env FMHA_PERSISTENT=2 "$root/scripts/gpu/sanitize.sh" $j --seq-q=300 --seq-k=300 --causal --lse --heads=3 --seed=1
fi
done
finish
