#!/usr/bin/env bash
# Generates here (fmha-aot needs MLIR) the C that scripts/gpu/aot.sh builds
# and runs on the GPU machine, and packs it into .gpu/aot/ for the device
# tool's `carry` (the rest of .gpu/ is left alone):
#   consumer/flashcore_attn.{h,c}  examples/aot-consumer's kernel
#                                  (examples/aot-consumer/fmha-aot.args)
#   harness/fmha_aot.{h,c}         harness/aot-kernels.mlir, the `aot`
#                                  candidate of fmha-runner-aot: sm_80,
#                                  sm_90 and sm_90a cubins, the last of
#                                  which a Hopper GPU loads (the consumer
#                                  checks the sm_90 cubin there)
#   grad-sm_90a/fmha_aot_grad.{h,c} harness/aot-grad-kernels.mlir, the
#   grad-sm_90/fmha_aot_grad.{h,c}  backwards scripts/gpu/aot_backward.py
#                                  checks: for sm_90a, and for sm_90
#                                  (lowered for chip sm_80)
#   grad-only-sm_90a/fmha_aot_grad.{h,c}  harness/aot-grad-sm90a-kernels.mlir,
#                                  the backwards sm_80 refuses (v's head
#                                  dim apart from q's, dq_order), likewise
#   kv-sm_90a/fmha_aot_kv.{h,c}    harness/aot-kvcache-kernels.mlir, the
#   kv-sm_90/fmha_aot_kv.{h,c}     KV-cache forwards scripts/gpu/
#                                  aot_kvcache.py checks, likewise
#   kv-split-sm_90a/fmha_aot_kv.{h,c}  harness/aot-varlen-split-kernels.mlir,
#                                  the split decode of packed sequences
#                                  and its merge (sm_90a only), likewise
# The cubins are embedded in the .c files, so their files stay here.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build_dir=${FLASHCORE_BUILD_DIR:-$root/build}
"$root/scripts/build.sh" fmha-aot
aot=$build_dir/bin/fmha-aot
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck disable=SC2046 # the file holds the arguments, split on purpose
"$aot" $(cat "$root/examples/aot-consumer/fmha-aot.args") -o "$work/consumer"
"$aot" "$root/harness/aot-kernels.mlir" --archs=sm_80,sm_90,sm_90a --name=fmha_aot \
  -o "$work/harness"
for arch in sm_90a sm_90; do
  "$aot" "$root/harness/aot-grad-kernels.mlir" --archs=$arch --name=fmha_aot_grad \
    -o "$work/grad-$arch"
  "$aot" "$root/harness/aot-kvcache-kernels.mlir" --archs=$arch --name=fmha_aot_kv \
    -o "$work/kv-$arch"
done
"$aot" "$root/harness/aot-grad-sm90a-kernels.mlir" --archs=sm_90a \
  --name=fmha_aot_grad -o "$work/grad-only-sm_90a"
"$aot" "$root/harness/aot-varlen-split-kernels.mlir" --archs=sm_90a \
  --name=fmha_aot_kv -o "$work/kv-split-sm_90a"
rm -f "$work"/*/*.cubin
rm -rf "$root/.gpu/aot" && mkdir -p "$root/.gpu/aot"
tar -C "$work" -cf - consumer harness grad-sm_90a grad-sm_90 grad-only-sm_90a \
  kv-sm_90a kv-sm_90 kv-split-sm_90a |
  xz -T2 -9 > "$root/.gpu/aot/sources.tar.xz"
ls -la "$root/.gpu/aot"
