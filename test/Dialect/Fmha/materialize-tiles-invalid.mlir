// RUN: fmha-opt %s -split-input-file -fmha-materialize-tiles=chip=sm_90a -verify-diagnostics
// RUN: not fmha-opt %s -fmha-materialize-tiles=chip=sm_75 2>&1 | FileCheck %s --check-prefix=CHIP

// CHIP: error: fmha-materialize-tiles: unknown chip 'sm_75'; expected sm_80 or sm_90a

// A tile tuned for one chip is never silently built for another.
func.func @wrong_chip(%q: memref<?x?x?x128xbf16>) {
  // expected-error @+1 {{'fmha.attention' op tile configuration is for sm_80 but the target chip is sm_90a}}
  fmha.attention q(%q : memref<?x?x?x128xbf16>) k(%q : memref<?x?x?x128xbf16>) v(%q : memref<?x?x?x128xbf16>) -> o(%q : memref<?x?x?x128xbf16>)
      {tile = #fmha.tile<sm_80, block_m = 128, block_n = 64, warps = 4, stages = 1>}
  return
}

// -----

func.func @wrong_chip_resample(%t: memref<?x?xf32>, %x: memref<?x?x32xbf16>, %tt: memref<?x?xf32>, %o: memref<?x?x32xbf16>) {
  // expected-error @+1 {{'fmha.resample' op tile configuration is for sm_80 but the target chip is sm_90a}}
  fmha.resample linear times(%t : memref<?x?xf32>) values(%x : memref<?x?x32xbf16>) targets(%tt : memref<?x?xf32>) -> out(%o : memref<?x?x32xbf16>)
      {tile = #fmha.resample_tile<sm_80, block_t = 64, threads = 256>}
  return
}
