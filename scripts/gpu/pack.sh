#!/usr/bin/env bash
# Builds the GPU-side programs here (the GPU machine has no LLVM/MLIR) and
# packs them, stripped and xz-compressed, into .gpu/ for the device tool's
# `carry`. Usage: scripts/gpu/pack.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build_dir=${FLASHCORE_BUILD_DIR:-$root/build}
# Each is ~50 MB stripped (LLVM and MLIR linked in), ~12 MB compressed.
programs=(bin/jit-scale bin/jit-bench bin/fmha-doctor bin/fmha-runner-jit
          unittests/FmhaCAPITests)
"$root/scripts/build.sh" "${programs[@]##*/}"
rm -rf "$root/.gpu" && mkdir -p "$root/.gpu"
for program in "${programs[@]}"; do
  name=$(basename "$program")
  strip -o "$root/.gpu/$name" "$build_dir/$program"
  xz -T2 -6 "$root/.gpu/$name"
done
ls -la "$root/.gpu"
