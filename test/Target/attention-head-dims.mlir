// REQUIRES: ptxas
// RUN: fmha-compile %s --chip=sm_90a --emit=ptx -o %t.sm90a.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %t.sm90a.ptx -o %t.sm90a.cubin > %t.sm90a.log 2>&1
// RUN: FileCheck %s --check-prefix=SM90A < %t.sm90a.log
// RUN: not grep -E "[1-9][0-9]* bytes (stack frame|spill)|Potential Performance Loss" %t.sm90a.log
// RUN: fmha-compile %s --chip=sm_80 --emit=ptx -o %t.sm80.ptx
// RUN: %ptxas -arch=sm_80 -O3 -v %t.sm80.ptx -o %t.sm80.cubin > %t.sm80.log 2>&1
// RUN: FileCheck %s --check-prefix=SM80 < %t.sm80.log
// RUN: FileCheck %s --check-prefix=PTX < %t.sm90a.ptx

// Head dims that are not 64, 128 or 256: the kernels' tiles hold D rounded
// up (sm_90a: to 64 columns, 96 -> 128, 160 -> 192; sm_80: to 64, 128 or
// 256), Q K^T walks D's columns only, in k steps of 16 (a D of 8 mod 16
// its last over zeros past D); sm_90a's P V has O's D columns as its N,
// reading the V tile's last column block in part. Each compiles as a whole
// program on both chips, on sm_90a without a spill (sm_80's d96 spills 64
// bytes at its 128x64 tile with 4 warps, which still measured fastest:
// TileConfig.cpp).

// SM90A-COUNT-6: Compiling entry function 'attention{{(_[0-9])?}}' for 'sm_90a'
// SM80-COUNT-6: Compiling entry function 'attention{{(_[0-9])?}}' for 'sm_80'

// d32: one 64-column box, Q K^T two k steps of 16 (the first kernel's
// first wgmma is m64n128k16, its P V m64n32k16).
// PTX-LABEL: .entry attention(
// PTX: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// PTX: wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16
func.func @d32(%q: memref<?x?x?x32xbf16>, %o: memref<?x?x?x32xbf16>,
               %lse: memref<?x?x?xf32>) {
  fmha.attention q(%q : memref<?x?x?x32xbf16>) k(%q : memref<?x?x?x32xbf16>)
                 v(%q : memref<?x?x?x32xbf16>) -> o(%o : memref<?x?x?x32xbf16>)
                 lse(%lse : memref<?x?x?xf32>)
  return
}

// d96: a tile of 128 columns, P V m64n96k16.
// PTX-LABEL: .entry attention_0(
// PTX: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// PTX: wgmma.mma_async.sync.aligned.m64n96k16.f32.bf16.bf16
func.func @d96(%q: memref<?x?x?x96xbf16>, %o: memref<?x?x?x96xbf16>,
               %lse: memref<?x?x?xf32>) {
  fmha.attention q(%q : memref<?x?x?x96xbf16>) k(%q : memref<?x?x?x96xbf16>)
                 v(%q : memref<?x?x?x96xbf16>) -> o(%o : memref<?x?x?x96xbf16>)
                 lse(%lse : memref<?x?x?xf32>)
  return
}

func.func @d160_causal(%q: memref<?x?x?x160xbf16>, %o: memref<?x?x?x160xbf16>) {
  fmha.attention q(%q : memref<?x?x?x160xbf16>) k(%q : memref<?x?x?x160xbf16>)
                 v(%q : memref<?x?x?x160xbf16>) -> o(%o : memref<?x?x?x160xbf16>)
                 causal
  return
}

func.func @d192_causal(%q: memref<?x?x?x192xf16>, %o: memref<?x?x?x192xf16>) {
  fmha.attention q(%q : memref<?x?x?x192xf16>) k(%q : memref<?x?x?x192xf16>)
                 v(%q : memref<?x?x?x192xf16>) -> o(%o : memref<?x?x?x192xf16>)
                 causal
  return
}

// Multiples of 8: d40 (Stable Diffusion's; three k steps of Q K^T, the
// last half past D) and d72 causal.
func.func @d40(%q: memref<?x?x?x40xf16>, %o: memref<?x?x?x40xf16>) {
  fmha.attention q(%q : memref<?x?x?x40xf16>) k(%q : memref<?x?x?x40xf16>)
                 v(%q : memref<?x?x?x40xf16>) -> o(%o : memref<?x?x?x40xf16>)
  return
}

func.func @d72_causal(%q: memref<?x?x?x72xbf16>, %o: memref<?x?x?x72xbf16>,
                      %lse: memref<?x?x?xf32>) {
  fmha.attention q(%q : memref<?x?x?x72xbf16>) k(%q : memref<?x?x?x72xbf16>)
                 v(%q : memref<?x?x?x72xbf16>) -> o(%o : memref<?x?x?x72xbf16>)
                 lse(%lse : memref<?x?x?xf32>) causal
  return
}
