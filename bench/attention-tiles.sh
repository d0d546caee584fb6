#!/usr/bin/env bash
# Measures the generated attention kernel of one chip (FMHA_CHIP, default
# sm_80) under several tiles on the 4k-token rows of ../shared/ANCHORS.md
# (B=4, S=4096, H*D=2048, bf16) and, for sm_90a, a 1k-token row (B=16),
# with torch SDPA's flash backend timed in the same run (GPU machine, .gpu/
# carried): the data behind getDefaultAttentionTiling. Each non-default tile
# is first checked against kernels-ref on an odd causal GQA problem. Prints
# one line per (row, tile): the rate of back-to-back launches (a chip at its
# power cap slows over a run; single launches overstated long rows).
# FMHA_HEAD_DIMS (default "64 128 256"), FMHA_TILES (one list for every
# head dim) and FMHA_LENGTHS (sequence lengths, B x S = 16384) narrow or
# replace the sweep.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/gpu/lib.sh"
runner=$(unpack_runner) || exit 2
export FMHA_CHIP=${FMHA_CHIP:-sm_80}
declare -A tiles
if [ "$FMHA_CHIP" = sm_90a ]; then
  # block_m,block_n,warps,stages: 64 query rows per consumer warpgroup.
  tiles=(
    [64]="192,128,16,2 128,192,12,2 128,128,12,3"
    [128]="128,176,12,2 128,192,12,2 128,64,12,2 128,128,12,3"
    [256]="128,64,12,2 128,48,12,3"
  )
  lengths="4096 1024"
else
  tiles=(
    [64]="128,128,4,1 128,64,4,1 64,64,4,1 128,128,8,1 128,64,8,1"
    [128]="128,64,4,1 128,32,4,1 64,64,4,1 128,64,8,1 128,128,8,1 64,32,4,1"
    [256]="128,64,8,1 64,64,4,1 128,32,8,1 64,32,4,1"
  )
  lengths=4096
fi
head_dims=${FMHA_HEAD_DIMS:-64 128 256}
lengths=${FMHA_LENGTHS:-$lengths}
if [ -n "${FMHA_TILES:-}" ]; then
  for d in $head_dims; do tiles[$d]=$FMHA_TILES; done
fi
for d in $head_dims; do
  for tile in ${tiles[$d]}; do
    check=$(FMHA_ATTENTION_TILE=$tile "$runner" attention --candidate=jit --head-dim=$d \
              --heads=4 --kv-heads=2 --seq-q=333 --seq-k=1000 --causal --lse --seed=1 > /dev/null 2>&1 &&
            echo PASS || echo FAIL)
    printf 'd%s tile %-13s check vs kernels-ref (333x1000 causal GQA): %s\n' "$d" "$tile" "$check"
  done
done
for d in $head_dims; do
  for seq in $lengths; do
  batch=$((16384 / seq))
  heads=$((2048 / d))
  for causal in "" --causal; do
    row="--batch=$batch --heads=$heads --seq-q=$seq --head-dim=$d $causal --no-check --time --seed=1"
    for tile in default ${tiles[$d]}; do
      result=$([ "$tile" = default ] || export FMHA_ATTENTION_TILE=$tile
               "$runner" attention --candidate=jit $row 2>&1 | grep -E "^back-to-back time|error" | sed 's/.*: //')
      printf '%sx%sx%sx%s %-9s tile %-12s %s\n' "$batch" "$heads" "$seq" "$d" "${causal:---}" "$tile" "$result"
    done
  done
  done
done
HEAD_DIMS="$head_dims" python3 - <<'PY'
import os, statistics, torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
for d in (int(d) for d in os.environ["HEAD_DIMS"].split()):
    for causal in (False, True):
        h = 2048 // d
        q, k, v = (torch.randn(4, h, 4096, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        def run():
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        for _ in range(5): run()
        times = []
        for _ in range(30):  # back to back, as the runner's rate above
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(10): run()
            e.record(); e.synchronize(); times.append(s.elapsed_time(e) / 10)
        flops = 4 * 4 * h * 4096 * 4096 * d / (2 if causal else 1)
        print(f"4x{h}x4096x{d} {'causal' if causal else '--'} torch flash2: {flops / statistics.median(times) / 1e9:.1f} TFLOP/s")
PY
