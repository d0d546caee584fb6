// RUN: fmha-compile %s --chip=sm_80 --emit=ptx | FileCheck %s

// How the sm_80 kernel addresses the cp.async passes of a K/V tile copy
// (Sm80/AsyncCopy.cpp, emitTileCopy; kSm80AccumulatorRegisterBudget). At
// d64 (128 accumulator registers per thread) the passes of an unbounded
// copy share a base: the source of the pass 8 rows on (2048 bytes at d64)
// is an immediate offset, which keeps 15 instructions out of the key loop.
// At d128 (192) each pass computes its own source address: with a shared
// base ptxas carries the passes' addresses through the key loop and spills.

// CHECK-LABEL: .entry attention(
// CHECK: cp.async.cg.shared.global [%r{{[0-9]+}}+2048], [%rd{{[0-9]+}}+2048], 16;
// CHECK-LABEL: .entry attention_0(
// CHECK-NOT: cp.async.cg.shared.global [{{.*}}], [%rd{{[0-9]+}}+{{[0-9]+}}]
// CHECK: ret;

func.func @d64(%q: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>) {
  fmha.attention q(%q : memref<?x?x?x64xbf16>) k(%q : memref<?x?x?x64xbf16>)
                 v(%q : memref<?x?x?x64xbf16>) -> o(%o : memref<?x?x?x64xbf16>)
  return
}

func.func @d128(%q: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) {
  fmha.attention q(%q : memref<?x?x?x128xbf16>) k(%q : memref<?x?x?x128xbf16>)
                 v(%q : memref<?x?x?x128xbf16>) -> o(%o : memref<?x?x?x128xbf16>)
  return
}
