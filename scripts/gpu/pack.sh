#!/usr/bin/env bash
# Builds the GPU-side programs here (the GPU machine has no LLVM/MLIR) and
# packs them, stripped and xz-compressed, into .gpu/ for the device tool's
# `carry`. Usage: scripts/gpu/pack.sh [NAME...] (default: all of them; names
# pick some, e.g. fmha-runner-jit, to iterate on one).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build_dir=${FLASHCORE_BUILD_DIR:-$root/build}
# Each is ~50 MB stripped (LLVM and MLIR linked in), ~12 MB compressed.
programs=(bin/jit-scale bin/jit-bench bin/fmha-doctor bin/fmha-runner-jit
          unittests/FmhaCAPITests)
if [ $# -gt 0 ]; then
  chosen=()
  for name in "$@"; do
    for program in "${programs[@]}"; do
      [ "$(basename "$program")" = "$name" ] && chosen+=("$program")
    done
  done
  [ ${#chosen[@]} -eq $# ] || { echo "pack.sh: unknown program in: $*" >&2; exit 2; }
  programs=("${chosen[@]}")
fi
"$root/scripts/build.sh" "${programs[@]##*/}"
rm -rf "$root/.gpu" && mkdir -p "$root/.gpu"
for program in "${programs[@]}"; do
  name=$(basename "$program")
  strip -o "$root/.gpu/$name" "$build_dir/$program"
  xz -T2 -6 "$root/.gpu/$name"
done
ls -la "$root/.gpu"
