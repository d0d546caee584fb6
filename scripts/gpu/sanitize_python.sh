#!/usr/bin/env bash
# compute-sanitizer (memcheck, racecheck, synccheck) on kernels that only
# flashcore.attention reaches with its options (kernels-ref, the harness's
# oracle, has no softcap or sinks): a small causal GQA call of each, through the
# installed wheel (scripts/gpu/python.sh installs it into /tmp/flashcore-site).
# Usage (GPU machine, repository root, after python.sh):
#   scripts/gpu/sanitize_python.sh
# Logs go to $OUT; exit 0 when every tool reports no error.
set -uo pipefail
out=${OUT:-/tmp/flashcore-gpu}
mkdir -p "$out"
export PYTHONPATH=${PYTHONPATH:-/tmp/flashcore-site}
cd /tmp
status=0
run() {
  local name=$1 call=$2
  for tool in memcheck racecheck synccheck; do
    local log=$out/sanitize-$name-$tool.log
    compute-sanitizer --tool "$tool" --error-exitcode 1 python3 -c "
import torch, flashcore
torch.manual_seed(1)
q = torch.randn(2, 150, 4, $3, device='cuda', dtype=torch.bfloat16)
k = torch.randn(2, 170, 2, $3, device='cuda', dtype=torch.bfloat16)
o = flashcore.attention(q, k, k, causal=True, return_lse=True, $call)
torch.cuda.synchronize()
" > "$log" 2>&1
    local rc=$?
    printf '%-44s %s\n' "sanitize $name $tool" "$([ $rc -eq 0 ] && echo PASS || echo "FAIL (see $log)")"
    [ $rc -eq 0 ] || status=1
  done
}
run softcap-d128 "softcap=30.0" 128
run softcap-d96 "softcap=5.0, scale=1.0" 96
run sinks-d64 "sinks=torch.randn(4, device='cuda')" 64
exit $status
