#!/usr/bin/env bash
# The forward tile that sm_80's kernels take past head dim 128 on a 99 KB
# sm_86 or sm_89 GPU (getDefaultAttentionTiling with the device's shared
# memory: 64 x 64 with 4 warps), run where the GPU machine can: sm_80's
# kernels on the H100/H200 with that tile named (FMHA_ATTENTION_TILE),
# checked against kernels-ref by fmha-runner-jit (.gpu/fmha-runner-jit.xz,
# scripts/gpu/pack.sh fmha-runner-jit), then compute-sanitizer memcheck,
# racecheck and synccheck on one call. Prints one line per check, a table
# last; logs go to $OUT. Exit 0 when all pass.
# Usage (GPU machine, repository root): scripts/gpu/sm8x-tile.sh
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/scripts/gpu/lib.sh"
out=${OUT:-/tmp/flashcore-gpu}
mkdir -p "$out"
runner=$(unpack_runner) || exit 2
export FMHA_CHIP=sm_80 FMHA_ATTENTION_TILE=64,64,4,1
status=0
results=()
check() { # NAME ARGS...: the runner's comparisons of o (and lse) with
  # kernels-ref, their normalized errors in the table.
  local name=$1 log=$out/sm8x-$(echo "$1" | tr -c 'A-Za-z0-9\n' '-').log; shift
  local errors
  "$runner" attention --candidate=jit "$@" > "$log" 2>&1
  local rc=$?
  errors=$(grep -E '^(o|lse) ' "$log" | sed -E 's/^(\S+).*normalized ([0-9.e+-]+).*: (PASS|FAIL)$/\1 \2 \3/' | paste -sd ';')
  if [ $rc -eq 0 ] && [ -n "$errors" ] && ! grep -q FAIL <<< "$errors"; then
    results+=("| $name | PASS | $errors |")
  else
    results+=("| $name | FAIL | ${errors:-$(tail -1 "$log")} |"); status=1
  fi
  echo "${results[-1]}"
}
for d in 136 160 192 224 256; do
  check "d$d bf16 causal GQA 4:2 Sq=333 Sk=1000" --head-dim=$d --heads=4 \
    --kv-heads=2 --seq-q=333 --seq-k=1000 --causal --lse --seed=1
  check "d$d f16 Sq=Sk=1025 BSHD" --head-dim=$d --dtype=f16 --heads=2 \
    --seq-q=1025 --layout=bshd --lse --seed=2
done
check "d256 bf16 window 64,16 MQA B=2 Sq=Sk=777" --head-dim=256 --batch=2 \
  --heads=4 --kv-heads=1 --seq-q=777 --window=64,16 --lse --seed=3
check "d256 bf16 one query Sk=4097" --head-dim=256 --heads=8 --kv-heads=2 \
  --seq-q=1 --seq-k=4097 --lse --seed=4
for tool in memcheck racecheck synccheck; do
  log=$out/sm8x-sanitize-$tool.log
  if compute-sanitizer --tool "$tool" --error-exitcode 1 "$runner" attention \
       --candidate=jit --head-dim=256 --heads=2 --kv-heads=1 --seq-q=150 \
       --seq-k=170 --causal --lse --seed=5 > "$log" 2>&1; then
    results+=("| sanitize d256 causal $tool | PASS | |")
  else
    results+=("| sanitize d256 causal $tool | FAIL | |"); status=1
  fi
  echo "${results[-1]}"
done
echo
echo "| check (sm_80 kernels, tile 64,64,4,1, vs kernels-ref) | result | normalized errors |"
echo "|---|---|---|"
printf '%s\n' "${results[@]}"
exit $status
