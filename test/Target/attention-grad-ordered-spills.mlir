// REQUIRES: ptxas
// RUN: fmha-compile %s --chip=sm_90a --emit=ptx -o %t.ptx
// RUN: FileCheck %s --check-prefix=PTX --input-file=%t.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %t.ptx -o %t.cubin > %t.log 2>&1
// RUN: not grep -E "([5-9][0-9]|[1-9][0-9][0-9]+) bytes (stack frame|spill)" %t.log

// The deterministic one-pass backward (dq_order) compiles as the other
// sm_90a one does (attention-grad-spills.mlir): its dQ writer, which waits
// for its turn and counts its add, lives in the producer warpgroup's 24
// registers (its few values past them go to local memory outside the
// consumers' loop), and the consumers' loop is unchanged.

// PTX: ld.acquire.gpu.global.b32
// PTX: fence.proxy.async.global;
// PTX: cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32
// PTX: cp.async.bulk.wait_group 0;
// PTX: fence.proxy.async.global;
// PTX: red.release.gpu.global.add.u32

func.func @d128_causal(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                       %lse: memref<?x?x?xf32>, %acc: memref<?x?x?x128xf32>,
                       %order: memref<?x?x?xi32>) {
  fmha.attention_grad q(%q : memref<?x?x?x128xbf16>) k(%k : memref<?x?x?x128xbf16>)
      v(%k : memref<?x?x?x128xbf16>) o(%q : memref<?x?x?x128xbf16>)
      dout(%q : memref<?x?x?x128xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x128xbf16>) dk(%k : memref<?x?x?x128xbf16>)
         dv(%k : memref<?x?x?x128xbf16>) delta(%lse : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x128xf32>)
         dq_order(%order : memref<?x?x?xi32>) causal
  return
}

func.func @d64_f16_window(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                          %lse: memref<?x?x?xf32>, %acc: memref<?x?x?x64xf32>,
                          %order: memref<?x?x?xi32>) {
  fmha.attention_grad q(%q : memref<?x?x?x64xf16>) k(%k : memref<?x?x?x64xf16>)
      v(%k : memref<?x?x?x64xf16>) o(%q : memref<?x?x?x64xf16>)
      dout(%q : memref<?x?x?x64xf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x64xf16>) dk(%k : memref<?x?x?x64xf16>)
         dv(%k : memref<?x?x?x64xf16>) delta(%lse : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x64xf32>)
         dq_order(%order : memref<?x?x?xi32>) {window = array<i64: 100, 20>}
  return
}

func.func @d256(%q: memref<?x?x?x256xbf16>, %k: memref<?x?x?x256xbf16>,
                %lse: memref<?x?x?xf32>, %acc: memref<?x?x?x256xf32>,
                %order: memref<?x?x?xi32>) {
  fmha.attention_grad q(%q : memref<?x?x?x256xbf16>) k(%k : memref<?x?x?x256xbf16>)
      v(%k : memref<?x?x?x256xbf16>) o(%q : memref<?x?x?x256xbf16>)
      dout(%q : memref<?x?x?x256xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x256xbf16>) dk(%k : memref<?x?x?x256xbf16>)
         dv(%k : memref<?x?x?x256xbf16>) delta(%lse : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x256xf32>)
         dq_order(%order : memref<?x?x?xi32>)
  return
}
