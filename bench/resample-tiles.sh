#!/usr/bin/env bash
# Measures the generated resample kernel under several tiles on the three
# ANCHORS.md rows (GPU machine, .gpu/ carried): the data behind
# getDefaultResampleTiling. Prints one line per (row, tile): the check, the
# time with the launch, the GPU's time alone. FMHA_RESAMPLE_TILES lists the
# tiles (block_t,threads ...).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/gpu/lib.sh"
runner=$(unpack_runner) || exit 2
for shape in "256 500 250 32" "4096 1000 500 64" "1024 4096 4096 128"; do
  set -- $shape
  for tile in ${FMHA_RESAMPLE_TILES:-32,128 64,128 64,256 128,128 256,256 128,256}; do
    result=$(FMHA_RESAMPLE_TILE=$tile "$runner" resample --batch=$1 --samples=$2 \
      --targets=$3 --features=$4 --target-range=inside --candidate=jit --time --seed=1 |
      grep -E "^(out|time|gpu time)" | sed 's/ of 30 runs.*: / /' | tr '\n' ' ')
    printf '%s x %s -> %s x %s  tile %-8s %s\n' "$1" "$2" "$3" "$4" "$tile" "$result"
  done
done
