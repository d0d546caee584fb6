// RUN: fmha-opt %s -fmha-materialize-tiles=chip=sm_90a -convert-fmha-to-nvgpu=chip=sm_90a | FileCheck %s

// The decode tile (one consumer of 64 rows, a GQA group's few rows packed)
// at head dim 32 skips the softmax of a warp's halves of rows that lie
// wholly past the tile's queries (skipsPaddingRows): each key block reads
// the lane id to find its warp's first row (the first block, then the
// masked and the unmasked loop). The same tile at head dim 64, and the
// prefill tile at 32, keep every row's softmax.

// CHECK: gpu.func @attention(
// CHECK-COUNT-3: llvm.inline_asm has_side_effects "mov.u32 $0, %laneid;"
// CHECK-NOT: %laneid
// CHECK: gpu.func @attention_0(
// CHECK-NOT: %laneid
// CHECK: gpu.func @attention_1(
// CHECK-NOT: %laneid
func.func @decode_d32(%q: memref<?x32x?x32xbf16>, %k: memref<?x8x?x32xbf16>,
                      %v: memref<?x8x?x32xbf16>, %o: memref<?x32x?x32xbf16>) {
  fmha.attention q(%q : memref<?x32x?x32xbf16>) k(%k : memref<?x8x?x32xbf16>)
                 v(%v : memref<?x8x?x32xbf16>) -> o(%o : memref<?x32x?x32xbf16>)
                 {tile = #fmha.tile<sm_90a, block_m = 64, block_n = 64, warps = 8, stages = 3>}
  return
}
func.func @decode_d64(%q: memref<?x32x?x64xbf16>, %k: memref<?x8x?x64xbf16>,
                      %v: memref<?x8x?x64xbf16>, %o: memref<?x32x?x64xbf16>) {
  fmha.attention q(%q : memref<?x32x?x64xbf16>) k(%k : memref<?x8x?x64xbf16>)
                 v(%v : memref<?x8x?x64xbf16>) -> o(%o : memref<?x32x?x64xbf16>)
                 {tile = #fmha.tile<sm_90a, block_m = 64, block_n = 64, warps = 8, stages = 3>}
  return
}
func.func @prefill_d32(%q: memref<?x32x?x32xbf16>, %k: memref<?x8x?x32xbf16>,
                      %v: memref<?x8x?x32xbf16>, %o: memref<?x32x?x32xbf16>) {
  fmha.attention q(%q : memref<?x32x?x32xbf16>) k(%k : memref<?x8x?x32xbf16>)
                 v(%v : memref<?x8x?x32xbf16>) -> o(%o : memref<?x32x?x32xbf16>)
  return
}
