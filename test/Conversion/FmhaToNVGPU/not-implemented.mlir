// RUN: fmha-opt %s -split-input-file -convert-fmha-to-nvgpu=chip=sm_80 -verify-diagnostics
// RUN: not fmha-opt %s -convert-fmha-to-nvgpu=chip=sm_90a 2>&1 | FileCheck %s --check-prefix=SM90

// SM90: error: 'fmha.attention' op has no lowering to sm_90a yet
// SM90: error: 'fmha.resample' op has no lowering to sm_90a yet

// No fmha op has a lowering yet: each one is an error naming the op and the
// chip, never a silent pass-through. The lowering issues replace this file
// with FileChecks of what they produce.

func.func @attention(%q: memref<?x?x?x64xbf16>) {
  // expected-error @+1 {{'fmha.attention' op has no lowering to sm_80 yet}}
  fmha.attention q(%q : memref<?x?x?x64xbf16>) k(%q : memref<?x?x?x64xbf16>) v(%q : memref<?x?x?x64xbf16>) -> o(%q : memref<?x?x?x64xbf16>)
  return
}

// -----

func.func @resample(%t: memref<?x?xf32>, %x: memref<?x?x32xbf16>, %tt: memref<?x?xf32>, %o: memref<?x?x32xbf16>) {
  // expected-error @+1 {{'fmha.resample' op has no lowering to sm_80 yet}}
  fmha.resample linear times(%t : memref<?x?xf32>) values(%x : memref<?x?x32xbf16>) targets(%tt : memref<?x?xf32>) -> out(%o : memref<?x?x32xbf16>)
  return
}
