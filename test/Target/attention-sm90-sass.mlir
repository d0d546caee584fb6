// REQUIRES: ptxas, cuobjdump
// RUN: fmha-compile %s --chip=sm_90a --emit=ptx -o %t.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %t.ptx -o %t.cubin > %t.log 2>&1
// RUN: FileCheck %s --check-prefix=PTXAS < %t.log
// RUN: not grep -E "[1-9][0-9]* bytes (stack frame|spill)" %t.log
// RUN: %cuobjdump -sass %t.cubin > %t.sass
// RUN: FileCheck %s < %t.sass
// RUN: not grep -E "LDL|STL" %t.sass
// RUN: not grep -E "STG.E.(U16|16|64)" %t.sass

// The sm_90a attention kernel compiled as a whole program, as the driver's
// JIT loads it (LoadPlan.cpp): ptxas keeps the WGMMAs pipelined and honors
// setmaxnreg (any "Potential Performance Loss" C75xx note fails the test),
// and the SASS has the TMA loads, the register split, HGMMA with both
// operands in shared memory (S = Q K^T) and with A in registers and B
// transposed (O += P V), O leaving through shared memory in 16-byte stores,
// and no local memory at all (no spill, no stack: the producer runs its
// tile loop in 24 registers).
// attention-sm90-spills.mlir checks the other head dims and register
// splits.

// PTXAS-NOT: Potential Performance Loss
// PTXAS: Compiling entry function 'attention' for 'sm_90a'
// PTXAS-NOT: Potential Performance Loss

// CHECK: Function : attention
// CHECK-DAG: UTMALDG.4D
// CHECK-DAG: USETMAXREG.DEALLOC.CTAPOOL 0x18
// CHECK-DAG: USETMAXREG.TRY_ALLOC.CTAPOOL {{.*}}0xf0
// CHECK: HGMMA.64x{{[0-9]+}}x16.F32.BF16 R{{[0-9]+}}, gdesc[{{.*}}], RZ, !UPT
// CHECK-NOT: {{LDL|STL}}
// CHECK: HGMMA.64x128x16.F32.BF16 R{{[0-9]+}}, R{{[0-9]+}}, gdesc[{{.*}}].tnspB
// CHECK-NOT: {{LDL|STL}}
// The epilogue stages O with stmatrix and stores it in 16-byte chunks; the
// only narrower global stores are the LSE's.
// CHECK: STSM.16.M88.4
// CHECK: LDS.128
// CHECK: STG.E.128
// CHECK: EXIT

func.func @attention(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                     %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>,
                     %lse: memref<?x?x?xf32>) {
  fmha.attention q(%q : memref<?x?x?x128xbf16>) k(%k : memref<?x?x?x128xbf16>)
                 v(%v : memref<?x?x?x128xbf16>) -> o(%o : memref<?x?x?x128xbf16>)
                 lse(%lse : memref<?x?x?xf32>) causal
  return
}
