#!/usr/bin/env bash
# Nsight Compute on one decode row (B x 1 x Hq/Hkv x Sk, d128 bf16 BSHD,
# non-causal), flashcore's kernels (the installed wheel: PYTHONPATH) beside
# cuDNN's through torch SDPA: what each launches (grid, block, registers,
# shared memory) and its DRAM throughput, under ncu's locked clocks (for
# comparing the two, not for the benchmark tables). Full reports go to
# $OUT/ncu-decode-*.txt.
# Usage (GPU machine): [DECODE_ROW="B HQ HKV SK"] bench/profile-decode.sh
set -uo pipefail
out=${OUT:-/tmp/flashcore-bench}
mkdir -p "$out"
read -r b hq hkv sk <<< "${DECODE_ROW:-64 32 8 8192}"
for who in flashcore cudnn; do
  report=$out/ncu-decode-$who.txt
  # Every kernel of four calls (the first compiles); the last call's are
  # the last in the report.
  ncu --section SpeedOfLight --section LaunchStats --section Occupancy \
    --section MemoryWorkloadAnalysis --launch-count 64 \
    python3 - "$who" "$b" "$hq" "$hkv" "$sk" > "$report" 2>&1 <<'PY'
import sys, torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
who, b, hq, hkv, sk = sys.argv[1], *map(int, sys.argv[2:])
q = torch.randn(b, 1, hq, 128, device="cuda", dtype=torch.bfloat16)
k, v = (torch.randn(b, sk, hkv, 128, device="cuda", dtype=torch.bfloat16) for _ in range(2))
if who == "flashcore":
    import flashcore
    call = lambda: flashcore.attention(q, k, v)
else:
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
    def call():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True)
for _ in range(4):
    call()
torch.cuda.synchronize()
PY
  echo "== $who ${b}x1x$hq/${hkv}x$sk: the last call's kernels"
  grep -E "^  [A-Za-z_].*\(|^ +(Duration|DRAM Throughput|Grid Size|Block Size|Registers Per Thread|Dynamic Shared Memory Per Block|Static Shared Memory Per Block|Achieved Occupancy|Waves Per SM)" "$report" |
    sed 's/  */ /g' | tail -${DECODE_LINES:-20}
done
