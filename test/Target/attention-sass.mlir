// REQUIRES: cuobjdump
// RUN: fmha-compile %s --chip=sm_80 --arch=sm_90 --emit=cubin -o %t.cubin
// RUN: %cuobjdump -sass %t.cubin | FileCheck %s

// The sm_80 attention kernel compiled for the H100 (sm_80 PTX linked for
// sm_90 by nvJitLink, the JIT's fallback path): tensor-core HMMA, LDSM
// (ldmatrix, plain and transposed), LDGSTS (cp.async) with the bypass-L1
// hint, MUFU.EX2 for the softmax. Spills are checked in
// attention-sm80-spills.mlir on the whole-program compile the JIT loads
// (this d128 kernel keeps its row sums in local memory: docs/BENCHMARKS.md).

// CHECK: code for sm_90
// CHECK: Function : attention
// CHECK-DAG: LDGSTS.E.BYPASS.128
// CHECK-DAG: LDSM.16.M88.4
// CHECK-DAG: LDSM.16.MT88.4
// CHECK-DAG: HMMA.16816.F32.BF16
// CHECK-DAG: MUFU.EX2

func.func @attention(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                     %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) {
  fmha.attention q(%q : memref<?x?x?x128xbf16>) k(%k : memref<?x?x?x128xbf16>)
                 v(%v : memref<?x?x?x128xbf16>) -> o(%o : memref<?x?x?x128xbf16>) causal
  return
}
