#!/usr/bin/env bash
# Nsight Compute on one prefill row over a paged KV cache (B x S x Hq/Hkv,
# Sq = Sk = S, d128 bf16 BSHD): flashcore's dense kernel beside the same
# keys in shuffled pages of 16 and of 256 rows (the installed wheel:
# PYTHONPATH), under ncu's locked clocks: duration, DRAM and L2 traffic,
# and where the warps stall, to tell what holds pages of 16 rows below the
# dense kernel (docs/decode-notes.md v21). Full reports go to
# $OUT/ncu-paged-*.txt.
# Usage (GPU machine): [PREFILL_ROW="B HQ HKV S"] [CAUSAL=1]
#   bench/profile-paged.sh
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/flashcore-bench}
mkdir -p "$out"
read -r b hq hkv s <<< "${PREFILL_ROW:-4 32 8 4096}"
for layout in dense 16 256; do
  report=$out/ncu-paged-$layout.txt
  # The last of three calls (the first compiles).
  ncu --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section LaunchStats \
    --metrics lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,smsp__inst_executed.sum \
    --kernel-name regex:attention --launch-skip 2 --launch-count 1 \
    python3 - "$here/python" "$layout" "$b" "$hq" "$hkv" "$s" "${CAUSAL:-0}" > "$report" 2>&1 <<'PY'
import sys, torch
import flashcore
sys.path.insert(0, sys.argv[1])
from bench import paged_caches
layout, b, hq, hkv, s, causal = sys.argv[2], *map(int, sys.argv[3:])
torch.manual_seed(0)
q = torch.randn(b, s, hq, 128, device="cuda", dtype=torch.bfloat16)
k, v = (torch.randn(b, s, hkv, 128, device="cuda", dtype=torch.bfloat16) for _ in range(2))
if layout == "dense":
    call = lambda: flashcore.attention(q, k, v, causal=bool(causal))
else:
    pk, pv, table = paged_caches(k, v, int(layout))
    call = lambda: flashcore.attention_with_kvcache(
        q, pk, pv, page_table=table, causal=bool(causal))
for _ in range(3):
    call()
torch.cuda.synchronize()
PY
  echo "== ${layout} ${b}x${s}x${hq}/${hkv} causal=${CAUSAL:-0}"
  grep -E "^ +(Duration|DRAM Throughput|Memory Throughput|L2 Hit Rate|L1/TEX Hit Rate|Compute \(SM\) Throughput|Registers Per Thread|Grid Size|Issue Slots Busy|No Eligible|Warp Cycles Per Issued Instruction|lts__t_sectors_srcunit_tex_op_read.sum|lts__t_sector_hit_rate.pct|dram__bytes_read.sum|smsp__inst_executed.sum)" "$report" |
    sed 's/  */ /g'
done
