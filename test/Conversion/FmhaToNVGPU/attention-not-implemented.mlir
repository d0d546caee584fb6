// RUN: fmha-opt %s -convert-fmha-to-nvgpu=chip=sm_80 -verify-diagnostics
// RUN: not fmha-opt %s -convert-fmha-to-nvgpu=chip=sm_90a 2>&1 | FileCheck %s --check-prefix=SM90

// fmha.attention has no lowering yet: an error naming the op and the chip,
// never a silent pass-through. The attention issues replace this file.

// SM90: error: 'fmha.attention' op has no lowering to sm_90a yet

func.func @attention(%q: memref<?x?x?x64xbf16>) {
  // expected-error @+1 {{'fmha.attention' op has no lowering to sm_80 yet}}
  fmha.attention q(%q : memref<?x?x?x64xbf16>) k(%q : memref<?x?x?x64xbf16>) v(%q : memref<?x?x?x64xbf16>) -> o(%q : memref<?x?x?x64xbf16>)
  return
}
