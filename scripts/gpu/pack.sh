#!/usr/bin/env bash
# Builds the GPU-side programs here (the GPU machine has no LLVM/MLIR) and
# packs them, stripped and xz-compressed, into .gpu/ for the device tool's
# `carry`. Usage: scripts/gpu/pack.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build_dir=${FLASHCORE_BUILD_DIR:-$root/build}
programs=(jit-scale jit-bench)
"$root/scripts/build.sh" "${programs[@]}"
rm -rf "$root/.gpu" && mkdir -p "$root/.gpu"
for program in "${programs[@]}"; do
  strip -o "$root/.gpu/$program" "$build_dir/bin/$program"
  xz -T2 -6 "$root/.gpu/$program"
done
ls -la "$root/.gpu"
