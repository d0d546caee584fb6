// RUN: fmha-opt %s -convert-fmha-to-nvgpu=chip=sm_90a -verify-diagnostics

// The lowering reads the tile that fmha-materialize-tiles attaches.
func.func @no_tile(%t: memref<?x?xf32>, %x: memref<?x?x3xf32>, %tt: memref<?x?xf32>, %o: memref<?x?x3xf32>) {
  // expected-error @+1 {{'fmha.resample' op has no tile configuration: run fmha-materialize-tiles first}}
  fmha.resample linear times(%t : memref<?x?xf32>) values(%x : memref<?x?x3xf32>) targets(%tt : memref<?x?xf32>) -> out(%o : memref<?x?x3xf32>)
  return
}
