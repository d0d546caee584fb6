#!/usr/bin/env bash
# Writes the PTX of every kernel family FlashCore generates (attention for
# sm_80 and sm_90a at d64/d128/d256, causal or not, f16 and bf16, with LSE
# and windows; resample in every mode; check_sorted) to DIR, one file each,
# so that a refactoring of the lowerings can be checked byte for byte:
#   scripts/dev/ptx-snapshot.sh /tmp/before; (change); scripts/dev/ptx-snapshot.sh /tmp/after
#   diff -r /tmp/before /tmp/after
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: ptx-snapshot.sh DIR}
compile=${FLASHCORE_BUILD_DIR:-$root/build}/bin/fmha-compile
mkdir -p "$out"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

attention() { # name type d extras lse
  local t="memref<?x?x?x$3x$2, strided<[?, ?, ?, 1], offset: ?>>"
  local l="memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>"
  local args="%q: $t, %k: $t, %v: $t, %o: $t" lse=""
  if [ "$5" = lse ]; then args="$args, %lse: $l"; lse=" lse(%lse : $l)"; fi
  cat > "$tmp/$1.mlir" <<MLIR
func.func @attention($args) {
  fmha.attention q(%q : $t) k(%k : $t) v(%v : $t) -> o(%o : $t)$lse $4
  return
}
MLIR
}
for d in 64 128 256; do
  attention "attn-bf16-d$d" bf16 $d "" nolse
  attention "attn-bf16-d$d-causal-lse" bf16 $d causal lse
  attention "attn-f16-d$d-causal" f16 $d causal nolse
done
attention attn-bf16-d128-window bf16 128 "{window = array<i64: 256, 0>}" lse
attention attn-f16-d64-scale bf16 64 "causal {scale = 5.000000e-01 : f32}" nolse

for mode in linear nearest previous; do
  cat > "$tmp/resample-$mode.mlir" <<MLIR
func.func @resample(%t0: memref<?x?xf32>, %x0: memref<?x?x6xbf16>, %t1: memref<?x?xf32>, %x1: memref<?x?x32xbf16>, %n0: memref<?xi32>, %n1: memref<?xi32>, %targets: memref<?x?xf32>, %out: memref<?x?x38xbf16>) {
  fmha.resample $mode times(%t0, %t1 : memref<?x?xf32>, memref<?x?xf32>) values(%x0, %x1 : memref<?x?x6xbf16>, memref<?x?x32xbf16>) lengths(%n0, %n1 : memref<?xi32>, memref<?xi32>) targets(%targets : memref<?x?xf32>) -> out(%out : memref<?x?x38xbf16>)
  return
}
MLIR
done
cat > "$tmp/resample-f32.mlir" <<MLIR
func.func @resample(%t0: memref<?x?xf32>, %x0: memref<?x?x16xf32>, %targets: memref<?x?xf32>, %out: memref<?x?x16xf32>) {
  fmha.resample linear times(%t0 : memref<?x?xf32>) values(%x0 : memref<?x?x16xf32>) targets(%targets : memref<?x?xf32>) -> out(%out : memref<?x?x16xf32>)
  return
}
MLIR
cat > "$tmp/check-sorted.mlir" <<MLIR
func.func @check_sorted(%t0: memref<?x?xf32>, %t1: memref<?x?xf32>, %n0: memref<?xi32>, %n1: memref<?xi32>, %first: memref<2xi64>) {
  fmha.check_sorted times(%t0, %t1 : memref<?x?xf32>, memref<?x?xf32>) lengths(%n0, %n1 : memref<?xi32>, memref<?xi32>) -> first(%first : memref<2xi64>)
  return
}
MLIR

for input in "$tmp"/*.mlir; do
  name=$(basename "$input" .mlir)
  for chip in sm_80 sm_90a; do
    "$compile" "$input" --chip=$chip -o "$out/$name.$chip.ptx"
  done
done
ls "$out" | wc -l
