// REQUIRES: ptxas
// RUN: fmha-compile %s --chip=sm_90a --emit=ptx -o %t.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %t.ptx -o %t.cubin > %t.log 2>&1
// RUN: FileCheck %s < %t.log
// RUN: not grep -E "[1-9][0-9]* bytes (stack frame|spill)|Potential Performance Loss" %t.log

// The sm_90a attention kernels of the other default tiles, compiled as a
// whole program (as the driver's JIT loads them): d64 non-causal with
// three consumer warpgroups (setmaxnreg 32/160), d256 causal (causal
// row-block pairs), a windowed f16 d128 (single row blocks): no
// C75xx "Potential Performance Loss" note, no spill and no stack frame in
// any of them.

// CHECK-DAG: Compiling entry function 'attention' for 'sm_90a'
// CHECK-DAG: Compiling entry function 'attention_0' for 'sm_90a'
// CHECK-DAG: Compiling entry function 'attention_1' for 'sm_90a'

func.func @d64(%q: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>,
               %lse: memref<?x?x?xf32>) {
  fmha.attention q(%q : memref<?x?x?x64xbf16>) k(%q : memref<?x?x?x64xbf16>)
                 v(%q : memref<?x?x?x64xbf16>) -> o(%o : memref<?x?x?x64xbf16>)
                 lse(%lse : memref<?x?x?xf32>)
  return
}

func.func @d256_causal(%q: memref<?x?x?x256xbf16>, %o: memref<?x?x?x256xbf16>) {
  fmha.attention q(%q : memref<?x?x?x256xbf16>) k(%q : memref<?x?x?x256xbf16>)
                 v(%q : memref<?x?x?x256xbf16>) -> o(%o : memref<?x?x?x256xbf16>)
                 causal
  return
}

func.func @d128_window(%q: memref<?x?x?x128xf16>, %o: memref<?x?x?x128xf16>,
                       %lse: memref<?x?x?xf32>) {
  fmha.attention q(%q : memref<?x?x?x128xf16>) k(%q : memref<?x?x?x128xf16>)
                 v(%q : memref<?x?x?x128xf16>) -> o(%o : memref<?x?x?x128xf16>)
                 lse(%lse : memref<?x?x?xf32>) {window = array<i64: 100, 20>}
  return
}
