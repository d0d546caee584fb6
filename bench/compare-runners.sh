#!/usr/bin/env bash
# A/B of two fmha-runner-jit builds (e.g. before and after a kernel change),
# or of one build under two environments, on the attention grid of
# ../shared/ANCHORS.md, on the GPU machine: each row is timed with A, then
# B, then A and B again (CUDA events, median of 30 each; --no-check: check
# the kernels with scripts/gpu/attention.sh).
# Prints TFLOP/s per row: A, B (two runs each) and B / A.
# Usage: bench/compare-runners.sh RUNNER_A RUNNER_B  (.xz files are unpacked)
# COMPARE_ENV_A / COMPARE_ENV_B: VAR=VALUE settings for each side (e.g.
# COMPARE_ENV_A=FMHA_PERSISTENT=off with the same runner twice);
# COMPARE_ROWS: a grep -E pattern over "BxHxSxD causal dtype" to time some
# rows only; COMPARE_PASSES=1: A, B once each.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/gpu/lib.sh"
unpack() {
  case $1 in
    *.xz) local to=/tmp/flashcore-bin/$(basename "${1%.xz}")
          mkdir -p /tmp/flashcore-bin
          xz -dc "$1" > "$to" && chmod +x "$to" && echo "$to" ;;
    *) echo "$1" ;;
  esac
}
a=$(unpack "$1") b=$(unpack "$2")
tflops() {  # RUNNER ENV FLAGS
  env $2 "$1" attention --candidate=jit --no-check --time $3 2>&1 |
    grep -E "^time" | sed 's/.*: \([0-9.]*\) TFLOP.*/\1/'
}
envA=${COMPARE_ENV_A:-} envB=${COMPARE_ENV_B:-}
printf '%-24s %-6s %-5s %8s %8s %8s %8s %6s\n' row causal dtype A A B B B/A
python3 "$root/bench/peers/peers.py" --grid | while read -r batch heads seq dim causal dtype; do
  echo "${batch}x${heads}x${seq}x${dim} $causal $dtype" | grep -qE "${COMPARE_ROWS:-.}" || continue
  flags="--batch=$batch --heads=$heads --seq-q=$seq --head-dim=$dim --dtype=$dtype --seed=1"
  [ "$causal" = 1 ] && flags="$flags --causal"
  a1=$(tflops "$a" "$envA" "$flags"); b1=$(tflops "$b" "$envB" "$flags")
  a2=$a1 b2=$b1
  if [ "${COMPARE_PASSES:-2}" != 1 ]; then
    a2=$(tflops "$a" "$envA" "$flags"); b2=$(tflops "$b" "$envB" "$flags")
  fi
  ratio=$(python3 -c "print(f'{max($b1, $b2) / max($a1, $a2):.3f}')" 2>/dev/null || echo "?")
  printf '%-24s %-6s %-5s %8s %8s %8s %8s %6s\n' "${batch}x${heads}x${seq}x${dim}" \
    "$causal" "$dtype" "$a1" "$a2" "$b1" "$b2" "$ratio"
done
