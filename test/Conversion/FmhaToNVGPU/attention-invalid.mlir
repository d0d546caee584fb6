// RUN: fmha-opt %s -split-input-file -convert-fmha-to-nvgpu=chip=sm_80 -verify-diagnostics

// What the attention lowerings cannot do is an error naming the op and the
// reason, never a crash or a silent pass-through.

func.func @no_tile(%q: memref<?x?x?x64xbf16>) {
  // expected-error @+1 {{'fmha.attention' op has no tile configuration: run fmha-materialize-tiles first}}
  fmha.attention q(%q : memref<?x?x?x64xbf16>) k(%q : memref<?x?x?x64xbf16>) v(%q : memref<?x?x?x64xbf16>) -> o(%q : memref<?x?x?x64xbf16>)
  return
}

// -----

func.func @stages(%q: memref<?x?x?x64xbf16>) {
  // expected-error @+1 {{the sm_80 lowering keeps one K and one V buffer whose loads alternate (FlashAttention-2): stages must be 1, got 2}}
  fmha.attention q(%q : memref<?x?x?x64xbf16>) k(%q : memref<?x?x?x64xbf16>) v(%q : memref<?x?x?x64xbf16>) -> o(%q : memref<?x?x?x64xbf16>)
                 {tile = #fmha.tile<sm_80, block_m = 64, block_n = 64, warps = 4, stages = 2>}
  return
}

// -----

func.func @strided_head_dim(%q: memref<?x?x?x64xbf16, strided<[?, ?, ?, 2]>>) {
  // expected-error @+1 {{needs q, k, v and o dense along the head dimension (innermost stride 1)}}
  fmha.attention q(%q : memref<?x?x?x64xbf16, strided<[?, ?, ?, 2]>>) k(%q : memref<?x?x?x64xbf16, strided<[?, ?, ?, 2]>>) v(%q : memref<?x?x?x64xbf16, strided<[?, ?, ?, 2]>>) -> o(%q : memref<?x?x?x64xbf16, strided<[?, ?, ?, 2]>>)
                 {tile = #fmha.tile<sm_80, block_m = 64, block_n = 64, warps = 4, stages = 1>}
  return
}

// -----

func.func @sm90_rows_per_consumer(%q: memref<?x?x?x64xbf16>) {
  // expected-error @+1 {{the sm_90a lowering gives each consumer warpgroup 64 query rows: block_m must be 64 times (warps / 4 - 1), got block_m = 256 with 12 warps}}
  fmha.attention q(%q : memref<?x?x?x64xbf16>) k(%q : memref<?x?x?x64xbf16>) v(%q : memref<?x?x?x64xbf16>) -> o(%q : memref<?x?x?x64xbf16>)
                 {tile = #fmha.tile<sm_90a, block_m = 256, block_n = 64, warps = 12, stages = 2>}
  return
}

// -----

func.func @sm90_too_many_consumers(%q: memref<?x?x?x64xbf16>) {
  // expected-error @+1 {{the sm_90a lowering splits an SM's 65536 registers between one producer and at most 3 consumer warpgroups (setmaxnreg): warps must be at most 16, got 20}}
  fmha.attention q(%q : memref<?x?x?x64xbf16>) k(%q : memref<?x?x?x64xbf16>) v(%q : memref<?x?x?x64xbf16>) -> o(%q : memref<?x?x?x64xbf16>)
                 {tile = #fmha.tile<sm_90a, block_m = 256, block_n = 64, warps = 20, stages = 2>}
  return
}
