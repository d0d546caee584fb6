#!/usr/bin/env bash
# README command (a): set up, build fmha-opt, and take the example attention
# op (examples/attention.mlir) as far down the pipeline as FlashCore goes
# today, saying plainly where it stops. Usage: scripts/run-example.sh [chip]
# (default: the GPU's chip when one is present, else sm_90a).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${FLASHCORE_BUILD_DIR:-$root/build}
example=$root/examples/attention.mlir
out_dir=$build_dir/example
"$root/scripts/setup.sh"
"$root/scripts/build.sh" fmha-opt
fmha_opt=$build_dir/bin/fmha-opt
mkdir -p "$out_dir"

gpu="none"
chip=${1:-}
if command -v nvidia-smi >/dev/null && capability=$(nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader 2>/dev/null | head -n 1) && [ -n "$capability" ]; then
  gpu=$capability
  if [ -z "$chip" ]; then
    case "${capability##*, }" in
      9.0) chip=sm_90a ;;
      8.*|9.*|1[0-9].*) chip=sm_80 ;;  # sm_80 PTX runs on every later chip
    esac
  fi
fi
chip=${chip:-sm_90a}

status=()
step() { status+=("$(printf '%-34s %s' "$1" "$2")"); }

"$fmha_opt" "$example" > "$out_dir/attention.verified.mlir"
step "parse + verify" "ok ($out_dir/attention.verified.mlir)"
"$fmha_opt" "$example" --fmha-materialize-tiles=chip="$chip" > "$out_dir/attention.tiled.mlir"
step "tile config for $chip" "ok: $(grep -o '#fmha.tile<[^>]*>' "$out_dir/attention.tiled.mlir")"

if "$fmha_opt" "$example" --fmha-to-ptx=chip="$chip" > "$out_dir/attention.ptx.mlir" 2> "$out_dir/fmha-to-ptx.log"; then
  step "lower to PTX (--fmha-to-ptx)" "ok ($out_dir/attention.ptx.mlir)"
elif grep -q "has no lowering to $chip yet" "$out_dir/fmha-to-ptx.log"; then
  step "lower to PTX (--fmha-to-ptx)" "NOT IMPLEMENTED YET: convert-fmha-to-nvgpu has no attention lowering (see $out_dir/fmha-to-ptx.log)"
  step "link (nvJitLink) + GPU run" "not reached (GPU: $gpu)"
else
  cat "$out_dir/fmha-to-ptx.log" >&2
  echo "run-example: --fmha-to-ptx failed unexpectedly" >&2
  exit 1
fi

echo
echo "FlashCore main job: $example, chip $chip"
printf '%s\n' "${status[@]}"
