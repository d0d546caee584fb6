#!/usr/bin/env bash
# Split-KV decode at each of several key-split counts (FMHA_KEY_SPLITS) and
# at getKeySplits's own choice, with fmha-runner-jit on the GPU machine
# (.gpu/ carried): GB/s of q + k + v + o, median of the runner's 30 timed
# runs, d128 bf16 GQA 32/8. The numbers behind getKeySplits's choice.
# Usage: [DECODE_SHAPES="B SK[ HKV];..."] bench/decode-splits.sh [SPLITS...]
# (default 8 12 15 16 20 24 32 33 48 64 66; shapes default to batch 1-8
# with 8 KV heads; a third field sets the KV heads, e.g. "16 4096 32")
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp/flashcore-gpu}
mkdir -p "$out"
. "$root/scripts/gpu/lib.sh"
runner=$(unpack_runner) || exit 2
export FMHA_CHIP=${FMHA_CHIP:-sm_90a}
[ $# -gt 0 ] || set -- 8 12 15 16 20 24 32 33 48 64 66
echo "| B x Hq/Hkv x Sk | splits | ms | GB/s |"
echo "|---|---|---|---|"
IFS=';' read -ra shapes <<< "${DECODE_SHAPES:-1 65536;1 131072;2 32768;8 8192}"
for shape in "${shapes[@]}"; do
  read -r b sk hkv <<< "$shape"
  hkv=${hkv:-8}
  bytes=$(( 2 * (2 * b * 32 * 128 + 2 * b * sk * hkv * 128) ))
  for splits in default "$@"; do
    if [ "$splits" = default ]; then env=(); else env=(FMHA_KEY_SPLITS=$splits); fi
    rate=$(runner_rate "$out/decode-splits.log" "$bytes" env "${env[@]}" "$runner" attention \
      --candidate=jit --batch=$b --heads=32 --kv-heads=$hkv --head-dim=128 --seq-q=1 \
      --seq-k=$sk --layout=bshd --time --no-check)
    echo "| ${b}x32/${hkv}x$sk | $splits | $rate |"
  done
done
