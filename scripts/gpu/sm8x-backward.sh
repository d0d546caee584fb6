#!/usr/bin/env bash
# sm_80's backward as a 99 KB sm_86 or sm_89 GPU runs it, on the H100/H200:
# installs dist/flashcore-*.whl (as scripts/gpu/python.sh does) and runs
# scripts/gpu/sm8x_backward.py with FLASHCORE_CHIP=sm_80 and
# FMHA_MAX_SHARED_BYTES=101376, then compute-sanitizer memcheck, racecheck
# and synccheck on one deterministic d256 backward there. Prints one line
# per check, a table last; logs go to $OUT. Exit 0 when all pass.
# Usage (GPU machine, repository root; carry "dist"):
#   scripts/gpu/sm8x-backward.sh
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/flashcore-gpu}
mkdir -p "$out"
wheels=("$root"/dist/flashcore-*.whl)
[ ${#wheels[@]} -eq 1 ] && [ -f "${wheels[0]}" ] ||
  { echo "sm8x-backward.sh: expected one dist/flashcore-*.whl" >&2; exit 2; }
site=/tmp/flashcore-site
rm -rf "$site"
python3 -m pip install --no-deps --no-index --target "$site" "${wheels[0]}" \
    > "$out/install.log" 2>&1 ||
  { cat "$out/install.log"; echo "sm8x-backward.sh: no install" >&2; exit 2; }
export PYTHONPATH=$site:$root/scripts/gpu FLASHCORE_CHIP=sm_80 \
  FMHA_MAX_SHARED_BYTES=101376
cd /tmp
python3 "$root/scripts/gpu/sm8x_backward.py" > "$out/sm8x_backward.log" 2>&1
status=$?
sanitized=()
for tool in memcheck racecheck synccheck; do
  log=$out/sm8x-backward-sanitize-$tool.log
  if compute-sanitizer --tool "$tool" --error-exitcode 1 python3 -c "
import torch, flashcore
torch.manual_seed(1)
q = torch.randn(2, 150, 4, 256, device='cuda', dtype=torch.bfloat16, requires_grad=True)
k = torch.randn(2, 170, 2, 256, device='cuda', dtype=torch.bfloat16, requires_grad=True)
o = flashcore.attention(q, k, k, causal=True, deterministic=True)
o.backward(torch.randn_like(o))
torch.cuda.synchronize()
" > "$log" 2>&1; then
    sanitized+=("| sanitize d256 causal deterministic backward $tool | PASS | |")
  else
    sanitized+=("| sanitize d256 causal deterministic backward $tool | FAIL | see $log |"); status=1
  fi
done
grep -E '^(PASS|FAIL|TIMEOUT) ' "$out/sm8x_backward.log"
sed -n '/^| check |/,/^$/p' "$out/sm8x_backward.log"
printf '%s\n' "${sanitized[@]}"
tail -1 "$out/sm8x_backward.log"
exit $status
