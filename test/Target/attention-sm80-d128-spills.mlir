// REQUIRES: ptxas, cuobjdump
// RUN: fmha-compile %s --chip=sm_80 --emit=ptx -o %t.ptx
// RUN: %ptxas -arch=sm_80 -O3 -v %t.ptx -o %t.sm80.cubin > %t.sm80.log 2>&1
// RUN: %ptxas -arch=sm_90 -O3 -v %t.ptx -o %t.sm90.cubin > %t.sm90.log 2>&1
// RUN: FileCheck %s < %t.sm80.log
// RUN: FileCheck %s < %t.sm90.log
// RUN: not grep -E "[1-9][0-9]* bytes (stack frame|spill)" %t.sm80.log
// RUN: not grep -E "([1-9][0-9]+|9) bytes spill" %t.sm90.log
// RUN: %cuobjdump -sass %t.sm80.cubin > %t.sass
// RUN: FileCheck %s --check-prefix=SASS < %t.sass
// RUN: not grep -E "LDL|STL" %t.sass

// The sm_80 attention kernels of head dim 128 at the default tile (128x64,
// 4 warps) compiled as a whole program, as the driver's JIT loads them
// (LoadPlan.cpp). Their O and S accumulators take 192 of the 255 registers,
// so each thread keeps its running row sums in shared memory between key
// blocks (getSm80RowSumSharedBytes); carried in a register, ptxas kept them
// in local memory (92-172 bytes of spill for sm_80, 24-32 for sm_90, with an
// LDL and an STL per key block). For the A100 (sm_80): no spill, no stack
// frame, no local memory access anywhere in the SASS. For the H100 (sm_90)
// ptxas still keeps one value (4-8 bytes) in local memory, loaded once per
// masked key block or per batch, never in the unmasked key loop (measured
// with the SASS's loops; docs/BENCHMARKS.md); this asserts at most 8 bytes.

// CHECK-DAG: Compiling entry function 'attention' for
// CHECK-DAG: Compiling entry function 'attention_0' for
// CHECK-DAG: Compiling entry function 'attention_1' for

// SASS: HMMA.16816.F32.BF16
// SASS: HMMA.16816.F32

func.func @d128(%q: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) {
  fmha.attention q(%q : memref<?x?x?x128xbf16>) k(%q : memref<?x?x?x128xbf16>)
                 v(%q : memref<?x?x?x128xbf16>) -> o(%o : memref<?x?x?x128xbf16>)
  return
}

func.func @d128_causal_f16(%q: memref<?x?x?x128xf16>, %o: memref<?x?x?x128xf16>,
                           %lse: memref<?x?x?xf32>) {
  fmha.attention q(%q : memref<?x?x?x128xf16>) k(%q : memref<?x?x?x128xf16>)
                 v(%q : memref<?x?x?x128xf16>) -> o(%o : memref<?x?x?x128xf16>)
                 lse(%lse : memref<?x?x?xf32>) causal
  return
}

func.func @d128_window(%q: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) {
  fmha.attention q(%q : memref<?x?x?x128xbf16>) k(%q : memref<?x?x?x128xbf16>)
                 v(%q : memref<?x?x?x128xbf16>) -> o(%o : memref<?x?x?x128xbf16>)
                 {window = array<i64: 100, 20>}
  return
}
