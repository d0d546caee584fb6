// REQUIRES: ptxas
// RUN: fmha-compile %s --chip=sm_90a --emit=ptx -o %t.sm90a.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %t.sm90a.ptx -o %t.sm90a.cubin > %t.sm90a.log 2>&1
// RUN: FileCheck %s --input-file=%t.sm90a.log
// RUN: not grep -E "([5-9][0-9]|[1-9][0-9][0-9]+) bytes (stack frame|spill)" %t.sm90a.log
// RUN: fmha-compile %s --chip=sm_80 --emit=ptx -o %t.sm80.ptx
// RUN: %ptxas -arch=sm_80 -O3 -v %t.sm80.ptx -o %t.sm80.cubin > %t.sm80.log 2>&1
// RUN: not grep -E "[1-9][0-9]* bytes (stack frame|spill)" %t.sm80.log

// The backward's kernels, compiled as whole programs, spill nothing: dk
// and dv of a 64-key block (128 f32 registers at head dim 128) stay in
// registers with the S^T and dP^T fragments, the query block's LSE and
// delta are read from shared memory where they are used; with dq_accum,
// dQ's slices are added as they are summed (sm_80, whose 4 x 2 grid of
// warps at head dim 128 derives the LSE's and delta's row pointers anew
// each block: held, they spilled), or on sm_90a the
// consumers of the WGMMA kernel hold dK, dV, S^T and dP^T in their 240
// registers (ptxas may park a few loop-invariant values in local memory
// over the prologue and the epilogue, never in the loop: 24 bytes at
// head dim 64, whose 128-query blocks double S^T and dP^T, so under 50 is
// allowed on sm_90a), and its producer (the TMA thread) fits in 24; at head
// dim 256 (attention-grad-split-spills.mlir) the consumers split the head
// dim, and without dq_accum dk and dv are two kernels, each with its 128
// registers of accumulators.

// CHECK-DAG: Compiling entry function 'attention_grad_dkv'
// CHECK-DAG: Compiling entry function 'attention_grad_dq'
// CHECK-DAG: Compiling entry function 'attention_grad_delta'
// CHECK-DAG: Compiling entry function 'attention_grad_dq_convert'
// CHECK-DAG: Compiling entry function 'attention_grad_dk'
// CHECK-DAG: Compiling entry function 'attention_grad_dv'

func.func @d128_causal(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                       %lse: memref<?x?x?xf32>, %delta: memref<?x?x?xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x128xbf16>) k(%k : memref<?x?x?x128xbf16>)
      v(%k : memref<?x?x?x128xbf16>) o(%q : memref<?x?x?x128xbf16>)
      dout(%q : memref<?x?x?x128xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x128xbf16>) dk(%k : memref<?x?x?x128xbf16>)
         dv(%k : memref<?x?x?x128xbf16>) delta(%delta : memref<?x?x?xf32>) causal
  return
}

func.func @d64_f16_window(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                          %lse: memref<?x?x?xf32>, %delta: memref<?x?x?xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x64xf16>) k(%k : memref<?x?x?x64xf16>)
      v(%k : memref<?x?x?x64xf16>) o(%q : memref<?x?x?x64xf16>)
      dout(%q : memref<?x?x?x64xf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x64xf16>) dk(%k : memref<?x?x?x64xf16>)
         dv(%k : memref<?x?x?x64xf16>) delta(%delta : memref<?x?x?xf32>)
         {window = array<i64: 100, 20>}
  return
}

func.func @d128_atomic(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                       %lse: memref<?x?x?xf32>, %delta: memref<?x?x?xf32>,
                       %acc: memref<?x?x?x128xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x128xbf16>) k(%k : memref<?x?x?x128xbf16>)
      v(%k : memref<?x?x?x128xbf16>) o(%q : memref<?x?x?x128xbf16>)
      dout(%q : memref<?x?x?x128xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x128xbf16>) dk(%k : memref<?x?x?x128xbf16>)
         dv(%k : memref<?x?x?x128xbf16>) delta(%delta : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x128xf32>) causal
  return
}

func.func @d64_f16_atomic_window(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                                 %lse: memref<?x?x?xf32>, %delta: memref<?x?x?xf32>,
                                 %acc: memref<?x?x?x64xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x64xf16>) k(%k : memref<?x?x?x64xf16>)
      v(%k : memref<?x?x?x64xf16>) o(%q : memref<?x?x?x64xf16>)
      dout(%q : memref<?x?x?x64xf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x64xf16>) dk(%k : memref<?x?x?x64xf16>)
         dv(%k : memref<?x?x?x64xf16>) delta(%delta : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x64xf32>) {window = array<i64: 100, 20>}
  return
}

func.func @d256_causal(%q: memref<?x?x?x256xbf16>, %k: memref<?x?x?x256xbf16>,
                       %lse: memref<?x?x?xf32>, %delta: memref<?x?x?xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x256xbf16>) k(%k : memref<?x?x?x256xbf16>)
      v(%k : memref<?x?x?x256xbf16>) o(%q : memref<?x?x?x256xbf16>)
      dout(%q : memref<?x?x?x256xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x256xbf16>) dk(%k : memref<?x?x?x256xbf16>)
         dv(%k : memref<?x?x?x256xbf16>) delta(%delta : memref<?x?x?xf32>) causal
  return
}
