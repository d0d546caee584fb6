#!/usr/bin/env bash
# Decode (one query, or DECODE_SQ; bf16, BSHD) under several sm_90a tiles
# (FMHA_ATTENTION_TILE), with fmha-runner-jit on the GPU machine (.gpu/
# carried), and cuDNN's GB/s on the same rows from torch SDPA (its own
# process, after): the data behind the decode's tile. GB/s of q + k + v + o,
# median of the runner's 30 timed runs. DECODE_TILES replaces the tiles
# (block_m,block_n,warps,stages; "default" is getDefaultAttentionTiling's),
# DECODE_SHAPES the rows ("B Hq Hkv Sk D" a line), DECODE_LAYOUT=bhsd the
# layout of q, k, v and o (default bshd), DECODE_SQ the queries per
# sequence (default 1; a few, as speculative decoding has, pack a GQA
# group's heads into a tile's rows).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp/flashcore-gpu}
mkdir -p "$out"
. "$root/scripts/gpu/lib.sh"
runner=$(unpack_runner) || exit 2
export FMHA_CHIP=sm_90a
layout=${DECODE_LAYOUT:-bshd}
sq=${DECODE_SQ:-1}
# The default rows' (d128) decode tile, the prefill tile it replaced, and
# the runners-up of docs/decode-notes.md v13.
tiles=${DECODE_TILES:-"default 128,128,12,2 64,128,8,3 64,176,8,2 64,96,8,4"}
# B Hq Hkv Sk D
shapes=${DECODE_SHAPES:-"64 32 8 8192 128
128 32 8 2048 128
16 32 32 4096 128
8 64 8 8192 128
1 32 8 65536 128
1 32 8 131072 128"}
for tile in $tiles; do
  [ "$tile" = default ] && continue
  check=$(FMHA_ATTENTION_TILE=$tile "$runner" attention --candidate=jit \
            --head-dim=$(echo "$shapes" | awk 'NR == 1 { print $5 }') \
            --batch=3 --heads=16 --kv-heads=4 --seq-q=$sq --seq-k=3001 --layout=$layout --lse \
            --seed=1 >> "$out/decode-tiles.log" 2>&1 && echo PASS || echo FAIL)
  echo "tile $tile: decode check vs kernels-ref (3 x 16/4 x 3001): $check"
done
echo "| B x Hq/Hkv x Sk | tile | ms | GB/s |"
echo "|---|---|---|---|"
while read -r b hq hkv sk d; do
  bytes=$(( 2 * (2 * b * sq * hq * d + 2 * b * sk * hkv * d) ))
  for tile in $tiles; do
    if [ "$tile" = default ]; then env=(); else env=(FMHA_ATTENTION_TILE=$tile); fi
    rate=$(runner_rate "$out/decode-tiles.log" "$bytes" env "${env[@]}" "$runner" attention \
      --candidate=jit --batch=$b --heads=$hq --kv-heads=$hkv --head-dim=$d --seq-q=$sq \
      --seq-k=$sk --layout=$layout --time --no-check)
    echo "| ${b}x$hq/${hkv}x${sk}x$d | $tile | $rate |"
  done
done <<< "$shapes"
SHAPES="$shapes" LAYOUT="$layout" SQ="$sq" python3 - <<'PY'
import os, statistics, torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
for line in os.environ["SHAPES"].strip().splitlines():
    b, hq, hkv, sk, d = map(int, line.split())
    # The runner's layout: BSHD memory seen through transposes, or BHSD.
    def tensor(s, h):
        if os.environ["LAYOUT"] == "bhsd":
            return torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)
        return torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
    sq = int(os.environ["SQ"])
    q, k, v = tensor(sq, hq), tensor(sk, hkv), tensor(sk, hkv)
    def run():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return F.scaled_dot_product_attention(q, k, v, enable_gqa=hq != hkv)
    for _ in range(5): run()
    times = []
    for _ in range(10):  # 20 calls back to back: the launches' cost hidden
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(20): run()
        e.record(); e.synchronize(); times.append(s.elapsed_time(e) / 20)
    ms = statistics.median(times)
    nbytes = 2 * (2 * b * sq * hq * d + 2 * b * sk * hkv * d)
    print(f"| {b}x{hq}/{hkv}x{sk}x{d} | cudnn | {ms:.4f} | {nbytes / ms / 1e6:.0f} |")
PY
