// REQUIRES: ptxas, cuobjdump
// RUN: fmha-compile %s --chip=sm_80 --emit=ptx -o %t.ptx
// RUN: %ptxas -arch=sm_80 -O3 -v %t.ptx -o %t.sm80.cubin > %t.sm80.log 2>&1
// RUN: %ptxas -arch=sm_90 -O3 -v %t.ptx -o %t.sm90.cubin > %t.sm90.log 2>&1
// RUN: FileCheck %s < %t.sm80.log
// RUN: FileCheck %s < %t.sm90.log
// RUN: not grep -E "[1-9][0-9]* bytes (stack frame|spill)" %t.sm80.log %t.sm90.log
// RUN: %cuobjdump -sass %t.sm90.cubin > %t.sass
// RUN: FileCheck %s --check-prefix=SASS < %t.sass
// RUN: not grep -E "LDL|STL" %t.sass

// The sm_80 attention kernels of head dims 64 and 256 compiled as a whole
// program, as the driver's JIT loads them (LoadPlan.cpp), for the A100
// (sm_80) and for the H100 (sm_90): no spill, no stack frame, no local
// memory access anywhere in the SASS. bf16 and f16, causal and not, LSE and
// a window. (Head dim 128: attention-sm80-d128-spills.mlir.)

// CHECK-DAG: Compiling entry function 'attention' for
// CHECK-DAG: Compiling entry function 'attention_0' for
// CHECK-DAG: Compiling entry function 'attention_1' for
// CHECK-DAG: Compiling entry function 'attention_2' for

// SASS: HMMA.16816.F32.BF16
// SASS: HMMA.16816.F32

func.func @d64(%q: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>) {
  fmha.attention q(%q : memref<?x?x?x64xbf16>) k(%q : memref<?x?x?x64xbf16>)
                 v(%q : memref<?x?x?x64xbf16>) -> o(%o : memref<?x?x?x64xbf16>)
  return
}

func.func @d64_causal_f16(%q: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>,
                          %lse: memref<?x?x?xf32>) {
  fmha.attention q(%q : memref<?x?x?x64xf16>) k(%q : memref<?x?x?x64xf16>)
                 v(%q : memref<?x?x?x64xf16>) -> o(%o : memref<?x?x?x64xf16>)
                 lse(%lse : memref<?x?x?xf32>) causal
  return
}

func.func @d256_causal(%q: memref<?x?x?x256xbf16>, %o: memref<?x?x?x256xbf16>) {
  fmha.attention q(%q : memref<?x?x?x256xbf16>) k(%q : memref<?x?x?x256xbf16>)
                 v(%q : memref<?x?x?x256xbf16>) -> o(%o : memref<?x?x?x256xbf16>)
                 causal
  return
}

func.func @d256_window(%q: memref<?x?x?x256xbf16>, %o: memref<?x?x?x256xbf16>,
                       %lse: memref<?x?x?xf32>) {
  fmha.attention q(%q : memref<?x?x?x256xbf16>) k(%q : memref<?x?x?x256xbf16>)
                 v(%q : memref<?x?x?x256xbf16>) -> o(%o : memref<?x?x?x256xbf16>)
                 lse(%lse : memref<?x?x?xf32>) {window = array<i64: 100, 20>}
  return
}
