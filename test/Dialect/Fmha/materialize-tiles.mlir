// RUN: fmha-opt %s -split-input-file -fmha-materialize-tiles=chip=sm_80 | FileCheck %s --check-prefix=SM80
// RUN: fmha-opt %s -split-input-file -fmha-materialize-tiles=chip=sm_90a | FileCheck %s --check-prefix=SM90

// Defaults per chip and head dim (lib/Dialect/Fmha/IR/TileConfig.cpp).

// SM80-LABEL: func @head_dims
// SM90-LABEL: func @head_dims
func.func @head_dims(%q64: memref<?x?x?x64xbf16>, %q128: memref<?x?x?x128xf16>, %q256: memref<?x?x?x256xbf16>) {
  // SM80: tile = #fmha.tile<sm_80, block_m = 128, block_n = 64, warps = 4, stages = 1>
  // SM90: tile = #fmha.tile<sm_90a, block_m = 192, block_n = 128, warps = 16, stages = 2>
  fmha.attention q(%q64 : memref<?x?x?x64xbf16>) k(%q64 : memref<?x?x?x64xbf16>) v(%q64 : memref<?x?x?x64xbf16>) -> o(%q64 : memref<?x?x?x64xbf16>)
  // SM80: tile = #fmha.tile<sm_80, block_m = 128, block_n = 64, warps = 4, stages = 1>
  // SM90: tile = #fmha.tile<sm_90a, block_m = 128, block_n = 128, warps = 12, stages = 2>
  fmha.attention q(%q128 : memref<?x?x?x128xf16>) k(%q128 : memref<?x?x?x128xf16>) v(%q128 : memref<?x?x?x128xf16>) -> o(%q128 : memref<?x?x?x128xf16>)
  // SM80: tile = #fmha.tile<sm_80, block_m = 128, block_n = 64, warps = 8, stages = 1>
  // SM90: tile = #fmha.tile<sm_90a, block_m = 128, block_n = 80, warps = 12, stages = 2>
  fmha.attention q(%q256 : memref<?x?x?x256xbf16>) k(%q256 : memref<?x?x?x256xbf16>) v(%q256 : memref<?x?x?x256xbf16>) -> o(%q256 : memref<?x?x?x256xbf16>)
  return
}

// -----

// Causal attention has its own measured tiles on sm_90a.
// SM80-LABEL: func @causal
// SM90-LABEL: func @causal
func.func @causal(%q64: memref<?x?x?x64xbf16>, %q128: memref<?x?x?x128xbf16>) {
  // SM80: causal {tile = #fmha.tile<sm_80, block_m = 128, block_n = 64, warps = 4, stages = 1>}
  // SM90: causal {tile = #fmha.tile<sm_90a, block_m = 128, block_n = 128, warps = 12, stages = 2>}
  fmha.attention q(%q64 : memref<?x?x?x64xbf16>) k(%q64 : memref<?x?x?x64xbf16>) v(%q64 : memref<?x?x?x64xbf16>) -> o(%q64 : memref<?x?x?x64xbf16>) causal
  // SM80: causal {tile = #fmha.tile<sm_80, block_m = 128, block_n = 64, warps = 4, stages = 1>}
  // SM90: causal {tile = #fmha.tile<sm_90a, block_m = 128, block_n = 128, warps = 12, stages = 2>}
  fmha.attention q(%q128 : memref<?x?x?x128xbf16>) k(%q128 : memref<?x?x?x128xbf16>) v(%q128 : memref<?x?x?x128xbf16>) -> o(%q128 : memref<?x?x?x128xbf16>) causal
  return
}

// -----

// SM80-LABEL: func @resample
// SM90-LABEL: func @resample
func.func @resample(%t: memref<?x?xf32>, %x: memref<?x?x32xbf16>, %tt: memref<?x?xf32>, %o: memref<?x?x32xbf16>) {
  // SM80: {tile = #fmha.resample_tile<sm_80, block_t = 256, threads = 256>}
  // SM90: {tile = #fmha.resample_tile<sm_90a, block_t = 256, threads = 256>}
  fmha.resample linear times(%t : memref<?x?xf32>) values(%x : memref<?x?x32xbf16>) targets(%tt : memref<?x?xf32>) -> out(%o : memref<?x?x32xbf16>)
  return
}
