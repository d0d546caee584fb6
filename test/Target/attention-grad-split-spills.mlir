// REQUIRES: ptxas
// RUN: fmha-compile %s --chip=sm_90a --emit=ptx -o %t.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %t.ptx -o %t.cubin > %t.log 2>&1
// RUN: FileCheck %s --input-file=%t.log
// RUN: FileCheck %s --check-prefix=PTX --input-file=%t.ptx
// RUN: not grep -E "[1-9][0-9]* bytes (stack frame|spill)" %t.log

// sm_90a's dk/dv kernel at head dim 256, where its consumers split the head
// dim (dK, dV and dQ over 128 of D's columns each: 192 registers of
// accumulators), spills nothing: with its one Q/dO buffer every tile address
// is loop-invariant, and the WGMMA descriptors of all 16 k steps would be
// hoisted out of the loop into spilled registers if the shared base were
// not taken anew at each use (440 bytes, the first build). Head dim 192
// runs it on tiles of 192 columns with two Q/dO buffers, its consumers'
// code apart: they share out dK's, dV's and dQ's three column blocks (one
// takes two of a GEMM's where the other takes one), and so does 192/128
// (dV's two).

// CHECK: Compiling entry function 'attention_grad_dkv'

// d192's consumers apart: 64-column GEMMs (none at d256), their meetings
// by barrier.sync without .aligned.
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n64k16
// PTX-DAG: barrier.sync {{[0-9]+}}, 256;

func.func @d256_atomic_causal(%q: memref<?x?x?x256xbf16>, %k: memref<?x?x?x256xbf16>,
                              %lse: memref<?x?x?xf32>, %delta: memref<?x?x?xf32>,
                              %acc: memref<?x?x?x256xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x256xbf16>) k(%k : memref<?x?x?x256xbf16>)
      v(%k : memref<?x?x?x256xbf16>) o(%q : memref<?x?x?x256xbf16>)
      dout(%q : memref<?x?x?x256xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x256xbf16>) dk(%k : memref<?x?x?x256xbf16>)
         dv(%k : memref<?x?x?x256xbf16>) delta(%delta : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x256xf32>) causal
  return
}

func.func @d192_atomic(%q: memref<?x?x?x192xbf16>, %k: memref<?x?x?x192xbf16>,
                       %lse: memref<?x?x?xf32>, %delta: memref<?x?x?xf32>,
                       %acc: memref<?x?x?x192xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x192xbf16>) k(%k : memref<?x?x?x192xbf16>)
      v(%k : memref<?x?x?x192xbf16>) o(%q : memref<?x?x?x192xbf16>)
      dout(%q : memref<?x?x?x192xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x192xbf16>) dk(%k : memref<?x?x?x192xbf16>)
         dv(%k : memref<?x?x?x192xbf16>) delta(%delta : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x192xf32>)
  return
}

func.func @d192_v128_atomic_causal(%q: memref<?x?x?x192xbf16>, %k: memref<?x?x?x192xbf16>,
                                   %v: memref<?x?x?x128xbf16>,
                                   %lse: memref<?x?x?xf32>, %delta: memref<?x?x?xf32>,
                                   %acc: memref<?x?x?x192xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x192xbf16>) k(%k : memref<?x?x?x192xbf16>)
      v(%v : memref<?x?x?x128xbf16>) o(%v : memref<?x?x?x128xbf16>)
      dout(%v : memref<?x?x?x128xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x192xbf16>) dk(%k : memref<?x?x?x192xbf16>)
         dv(%v : memref<?x?x?x128xbf16>) delta(%delta : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x192xf32>) causal
  return
}
