#!/usr/bin/env bash
# Configures (once) and builds FlashCore with Ninja against Debian's LLVM/MLIR
# 22. Usage: scripts/build.sh [ninja targets...] (default: everything).
# FLASHCORE_BUILD_DIR (default build/) and FLASHCORE_JOBS (default 2: the
# build machines have 2 cores and a 2.4 GB peak per MLIR translation unit).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${FLASHCORE_BUILD_DIR:-$root/build}
jobs=${FLASHCORE_JOBS:-2}

if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build_dir" \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit
fi
ninja -C "$build_dir" -j "$jobs" "$@"
