#!/usr/bin/env bash
# sm_80's backward as a 99 KB sm_86 or sm_89 GPU runs it, on the H100/H200:
# installs dist/flashcore-*.whl (install_wheel, lib.sh) and runs
# scripts/gpu/sm8x_backward.py with FLASHCORE_CHIP=sm_80 and
# FMHA_MAX_SHARED_BYTES=101376, then compute-sanitizer memcheck, racecheck
# and synccheck on a deterministic d256 and a one-pass d128 backward
# there. Prints one line per check, a table last; logs go to $OUT. Exit 0
# when all pass.
# Usage (GPU machine, repository root; carry "dist"):
#   scripts/gpu/sm8x-backward.sh
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/flashcore-gpu}
mkdir -p "$out"
. "$root/scripts/gpu/lib.sh"
site=$(install_wheel) || { echo "sm8x-backward.sh: no wheel installed" >&2; exit 2; }
export PYTHONPATH=$site:$root/scripts/gpu FLASHCORE_CHIP=sm_80 \
  FMHA_MAX_SHARED_BYTES=101376
cd /tmp
python3 "$root/scripts/gpu/sm8x_backward.py" > "$out/sm8x_backward.log" 2>&1
status=$?
grep -E '^(PASS|FAIL|TIMEOUT) ' "$out/sm8x_backward.log"
sed -n '/^| check |/,/^$/p' "$out/sm8x_backward.log"
# The fitted kernels under compute-sanitizer (sanitize_python, lib.sh): a
# causal GQA backward of each.
grad="None; q.requires_grad_(); k.requires_grad_(); o = flashcore.attention(q, k, k, causal=True"
backward="o.backward(torch.randn_like(o))"
sanitize_python d256-deterministic 256 "$grad, deterministic=True); $backward"
sanitize_python d128-one-pass 128 "$grad); $backward"
tail -1 "$out/sm8x_backward.log"
exit $status
