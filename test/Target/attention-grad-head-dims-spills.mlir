// REQUIRES: ptxas
// RUN: fmha-compile %s --chip=sm_90a --emit=ptx -o %t.sm90a.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %t.sm90a.ptx -o %t.sm90a.cubin > %t.sm90a.log 2>&1
// RUN: FileCheck %s --input-file=%t.sm90a.log
// RUN: not grep -E "([5-9][0-9]|[1-9][0-9][0-9]+) bytes (stack frame|spill)|C7511" %t.sm90a.log
// RUN: FileCheck %s --check-prefix=PTX --input-file=%t.sm90a.ptx
// RUN: fmha-compile %s --chip=sm_80 --emit=ptx -o %t.sm80.ptx
// RUN: %ptxas -arch=sm_80 -O3 -v %t.sm80.ptx -o %t.sm80.cubin > %t.sm80.log 2>&1
// RUN: not grep -E "[1-9][0-9]* bytes (stack frame|spill)" %t.sm80.log

// The backward at head dims below its tiles' 64, 128 and 256 columns
// (getAttentionGradTileColumns) compiles as those tiles do: no spills on
// sm_80, and on sm_90a what head dim 64 has (under 50 bytes outside the
// loop, attention-grad-spills.mlir) and no serialized WGMMA (C7511).
// sm_90a's dK and dV GEMMs take D's own columns as their N (rounded up to
// 8), and dQ's where a consumer's spans D (tiles of 64 columns); where the
// consumers split dQ's columns (tiles of 128), the second's past D are
// staged too (never added): with them dead, ptxas serialized the WGMMAs.

// PTX-DAG: wgmma.mma_async.sync.aligned.m64n40k16
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n96k16

// CHECK-DAG: Compiling entry function 'attention_grad_dkv'
// CHECK-DAG: Compiling entry function 'attention_grad_dq'
// CHECK-DAG: Compiling entry function 'attention_grad_delta'
// CHECK-DAG: Compiling entry function 'attention_grad_dq_convert'
// CHECK-DAG: Compiling entry function 'attention_grad_dk'
// CHECK-DAG: Compiling entry function 'attention_grad_dv'

func.func @d40_atomic(%q: memref<?x?x?x40xbf16>, %k: memref<?x?x?x40xbf16>,
                     %lse: memref<?x?x?xf32>, %delta: memref<?x?x?xf32>,
                     %acc: memref<?x?x?x40xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x40xbf16>) k(%k : memref<?x?x?x40xbf16>)
      v(%k : memref<?x?x?x40xbf16>) o(%q : memref<?x?x?x40xbf16>)
      dout(%q : memref<?x?x?x40xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x40xbf16>) dk(%k : memref<?x?x?x40xbf16>)
         dv(%k : memref<?x?x?x40xbf16>) delta(%delta : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x40xf32>) causal
  return
}

func.func @d40(%q: memref<?x?x?x40xbf16>, %k: memref<?x?x?x40xbf16>,
              %lse: memref<?x?x?xf32>, %delta: memref<?x?x?xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x40xbf16>) k(%k : memref<?x?x?x40xbf16>)
      v(%k : memref<?x?x?x40xbf16>) o(%q : memref<?x?x?x40xbf16>)
      dout(%q : memref<?x?x?x40xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x40xbf16>) dk(%k : memref<?x?x?x40xbf16>)
         dv(%k : memref<?x?x?x40xbf16>) delta(%delta : memref<?x?x?xf32>)
  return
}

func.func @d96_atomic(%q: memref<?x?x?x96xbf16>, %k: memref<?x?x?x96xbf16>,
                     %lse: memref<?x?x?xf32>, %delta: memref<?x?x?xf32>,
                     %acc: memref<?x?x?x96xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x96xbf16>) k(%k : memref<?x?x?x96xbf16>)
      v(%k : memref<?x?x?x96xbf16>) o(%q : memref<?x?x?x96xbf16>)
      dout(%q : memref<?x?x?x96xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x96xbf16>) dk(%k : memref<?x?x?x96xbf16>)
         dv(%k : memref<?x?x?x96xbf16>) delta(%delta : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x96xf32>)
  return
}

func.func @d96(%q: memref<?x?x?x96xbf16>, %k: memref<?x?x?x96xbf16>,
              %lse: memref<?x?x?xf32>, %delta: memref<?x?x?xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x96xbf16>) k(%k : memref<?x?x?x96xbf16>)
      v(%k : memref<?x?x?x96xbf16>) o(%q : memref<?x?x?x96xbf16>)
      dout(%q : memref<?x?x?x96xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x96xbf16>) dk(%k : memref<?x?x?x96xbf16>)
         dv(%k : memref<?x?x?x96xbf16>) delta(%delta : memref<?x?x?xf32>) causal
  return
}

func.func @d192(%q: memref<?x?x?x192xbf16>, %k: memref<?x?x?x192xbf16>,
               %lse: memref<?x?x?xf32>, %delta: memref<?x?x?xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x192xbf16>) k(%k : memref<?x?x?x192xbf16>)
      v(%k : memref<?x?x?x192xbf16>) o(%q : memref<?x?x?x192xbf16>)
      dout(%q : memref<?x?x?x192xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x192xbf16>) dk(%k : memref<?x?x?x192xbf16>)
         dv(%k : memref<?x?x?x192xbf16>) delta(%delta : memref<?x?x?xf32>) causal
  return
}
