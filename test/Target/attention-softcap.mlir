// REQUIRES: ptxas
// RUN: fmha-compile %s --chip=sm_90a --emit=ptx -o %t.sm90a.ptx
// RUN: FileCheck %s < %t.sm90a.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %t.sm90a.ptx -o %t.sm90a.cubin > %t.sm90a.log 2>&1
// RUN: not grep -E "[1-9][0-9]* bytes (stack frame|spill)|Potential Performance Loss" %t.sm90a.log
// RUN: fmha-compile %s --chip=sm_80 --emit=ptx -o %t.sm80.ptx
// RUN: FileCheck %s < %t.sm80.ptx

// Logit softcapping: each score is scaled by scale / c, goes through
// tanh.approx.f32 (llvm.tanh with afn) and is scaled back by c / scale,
// before the mask and the online softmax. On sm_90a without a spill.

// CHECK: .entry attention(
// CHECK: tanh.approx.f32
func.func @softcap(%q: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>,
                   %lse: memref<?x?x?xf32>) {
  fmha.attention q(%q : memref<?x?x?x128xbf16>) k(%q : memref<?x?x?x128xbf16>)
                 v(%q : memref<?x?x?x128xbf16>) -> o(%o : memref<?x?x?x128xbf16>)
                 lse(%lse : memref<?x?x?xf32>) causal {softcap = 30.0 : f32}
  return
}

// The backward with the forward's cap: its kernels cap S (S^T) as the
// forward does and scale dS by the cap's slope (sm_90a: the dq_accum
// kernel, on sm_90a without a spill; sm_80: the deterministic dq and dkv).
// CHECK-LABEL: .entry attention_grad_dkv(
// CHECK: tanh.approx.f32
func.func @softcap_grad(%q: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>,
                        %lse: memref<?x?x?xf32>, %dq: memref<?x?x?x128xbf16>,
                        %acc: memref<?x?x?x128xf32, strided<[?, ?, 128, 1], offset: ?>>) {
  fmha.attention_grad q(%q : memref<?x?x?x128xbf16>) k(%q : memref<?x?x?x128xbf16>)
                      v(%q : memref<?x?x?x128xbf16>) o(%o : memref<?x?x?x128xbf16>)
                      dout(%o : memref<?x?x?x128xbf16>) lse(%lse : memref<?x?x?xf32>)
                   -> dq(%dq : memref<?x?x?x128xbf16>) dk(%dq : memref<?x?x?x128xbf16>)
                      dv(%dq : memref<?x?x?x128xbf16>) delta(%lse : memref<?x?x?xf32>)
                      dq_accum(%acc : memref<?x?x?x128xf32, strided<[?, ?, 128, 1], offset: ?>>)
                      causal {softcap = 30.0 : f32}
  return
}
