#!/usr/bin/env bash
# README command (a): set up, build fmha-opt, and compile the example
# attention op (examples/attention.mlir) to PTX; with a GPU (and nvcc), run
# the generated kernel on that shape through the JIT and check it against
# kernels-ref. Usage: scripts/run-example.sh [chip] (default: sm_90a on a
# Hopper GPU (compute capability 9.0) or with no GPU, sm_80 on any other GPU,
# which runs the sm_80 kernel's PTX).
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
if command -v nvidia-smi >/dev/null && capability=$(nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader 2>/dev/null | head -n 1) && [ -n "$capability" ]; then
  gpu=$capability
fi
default_chip=sm_90a
if [ "$gpu" != none ] && [ "${gpu##*, }" != "9.0" ]; then
  default_chip=sm_80
fi
chip=${1:-$default_chip}

status=()
step() { status+=("$(printf '%-34s %s' "$1" "$2")"); }

"$fmha_opt" "$example" > "$out_dir/attention.verified.mlir"
step "parse + verify" "ok ($out_dir/attention.verified.mlir)"
"$fmha_opt" "$example" --fmha-materialize-tiles=chip="$chip" > "$out_dir/attention.tiled.mlir"
step "tile config for $chip" "ok: $(grep -o '#fmha.tile<[^>]*>' "$out_dir/attention.tiled.mlir")"

if "$fmha_opt" "$example" --fmha-to-ptx=chip="$chip" > "$out_dir/attention.ptx.mlir" 2> "$out_dir/fmha-to-ptx.log"; then
  step "lower to PTX (--fmha-to-ptx)" "ok ($out_dir/attention.ptx.mlir)"
  if [ "$gpu" = none ]; then
    step "GPU run" "skipped: no GPU (nvidia-smi found none)"
  elif ! "$root/scripts/build.sh" fmha-runner-jit > "$out_dir/build-runner.log" 2>&1; then
    step "GPU run" "skipped: fmha-runner-jit did not build (needs nvcc; see $out_dir/build-runner.log)"
  else
    # The example's shape: 32 query heads on 8 KV heads, causal, d128, LSE.
    if FMHA_CHIP=$chip "$build_dir/bin/fmha-runner-jit" attention --candidate=jit \
         --batch=2 --heads=32 --kv-heads=8 --seq-q=2048 --head-dim=128 --causal --lse \
         --time > "$out_dir/gpu-run.log" 2>&1; then
      step "GPU run on $gpu" "ok, matches kernels-ref: $(grep -h '^time' "$out_dir/gpu-run.log")"
    else
      cat "$out_dir/gpu-run.log" >&2
      echo "run-example: the generated kernel failed on the GPU" >&2
      exit 1
    fi
  fi
else
  cat "$out_dir/fmha-to-ptx.log" >&2
  echo "run-example: --fmha-to-ptx failed unexpectedly" >&2
  exit 1
fi

echo
echo "FlashCore main job: $example, chip $chip"
printf '%s\n' "${status[@]}"
