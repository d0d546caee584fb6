#!/usr/bin/env bash
# Builds the GPU-side programs here (the GPU machine has no LLVM/MLIR) and
# packs them, stripped and xz-compressed, into .gpu/ for the device tool's
# `carry`. Usage: scripts/gpu/pack.sh [NAME...] (default: all of them, and
# fmha-aot's generated C through scripts/gpu/pack-aot.sh; names pick some,
# e.g. fmha-runner-jit, to iterate on one).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build_dir=${FLASHCORE_BUILD_DIR:-$root/build}
# Each is ~120 MB stripped (LLVM, MLIR and the PTX compiler linked in),
# ~27 MB compressed (fmha-doctor ~11 MB): together over the device tool's
# 64 MiB carry, so carry some per call (check.sh skips what is absent).
programs=(bin/jit-scale bin/jit-bench bin/compile-stages bin/attention-tiles bin/fmha-doctor bin/fmha-runner-jit
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
# .gpu/aot/ is scripts/gpu/pack-aot.sh's, run below when packing everything;
# .gpu/main/ holds scripts/gpu/ab.sh's baseline wheel: both stay.
mkdir -p "$root/.gpu"
find "$root/.gpu" -mindepth 1 -maxdepth 1 ! -name aot ! -name main -exec rm -rf {} +
for program in "${programs[@]}"; do
  name=$(basename "$program")
  strip -o "$root/.gpu/$name" "$build_dir/$program"
  xz -T2 -6 "$root/.gpu/$name"
done
[ $# -gt 0 ] || "$root/scripts/gpu/pack-aot.sh"
ls -la "$root/.gpu"
