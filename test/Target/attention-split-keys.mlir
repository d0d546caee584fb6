// REQUIRES: ptxas
// RUN: fmha-opt %s --fmha-materialize-tiles=chip=sm_90a -convert-fmha-to-nvgpu=chip=sm_90a | FileCheck %s --check-prefix=SM90
// RUN: fmha-opt %s --fmha-materialize-tiles=chip=sm_80 -convert-fmha-to-nvgpu=chip=sm_80 | FileCheck %s --check-prefix=SM80
// RUN: fmha-compile %s --chip=sm_90a --emit=ptx -o %t.sm90a.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %t.sm90a.ptx -o %t.sm90a.cubin > %t.sm90a.log 2>&1
// RUN: not grep -E "[1-9][0-9]* bytes (stack frame|spill)|Potential Performance Loss" %t.sm90a.log
// RUN: grep -c "griddepcontrol.launch_dependents" %t.sm90a.ptx | grep -qx 3
// RUN: fmha-compile %s --chip=sm_80 --emit=ptx -o %t.sm80.ptx
// RUN: %ptxas -arch=sm_80 -O3 -v %t.sm80.ptx -o %t.sm80.cubin > %t.sm80.log 2>&1
// RUN: not grep -E "[1-9][0-9]* bytes (stack frame|spill)" %t.sm80.log

// split_keys: the units (sm_90a) and the grid's z (sm_80) cover o's S x B
// batch entries, and each tile keeps the key blocks of its split. The
// split kernels, compiled as whole programs, spill nothing (the split's
// arithmetic is in 32 bits: a 64-bit division by a runtime value spilled
// the sm_90a producer).

// On sm_90a each CTA first lets the dependent merge_attention be placed
// (griddepcontrol.launch_dependents): the grid is persistent, so every CTA
// has started by then, and the merge's CTAs wait for its end on the SMs
// left free.
// SM90: fmha.launch = #fmha.launch<operands = [q, k, v, o, lse], {{.*}} grid = [min(ceildiv(q[2], 128) * q[1] * o[0], 2147483647), 1, 1], persistent
// SM90-NEXT: nvvm.griddepcontrol  launch_dependents
// SM80: fmha.launch = #fmha.launch<operands = [q, k, v, o, lse], {{.*}} grid = [ceildiv(q[2], 128), q[1], min(o[0], 65535)]
// SM80-NOT: griddepcontrol

func.func @d128(%q: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>,
                %lse: memref<?x?x?xf32>) {
  fmha.attention q(%q : memref<?x?x?x128xbf16>) k(%q : memref<?x?x?x128xbf16>)
                 v(%q : memref<?x?x?x128xbf16>) -> o(%o : memref<?x?x?x128xbf16>)
                 lse(%lse : memref<?x?x?xf32>) split_keys
  return
}

func.func @d64_f16(%q: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>,
                   %lse: memref<?x?x?xf32>) {
  fmha.attention q(%q : memref<?x?x?x64xf16>) k(%q : memref<?x?x?x64xf16>)
                 v(%q : memref<?x?x?x64xf16>) -> o(%o : memref<?x?x?x64xf16>)
                 lse(%lse : memref<?x?x?xf32>) split_keys
  return
}

func.func @d256_causal_window(%q: memref<?x?x?x256xbf16>,
                              %o: memref<?x?x?x256xbf16>,
                              %lse: memref<?x?x?xf32>) {
  fmha.attention q(%q : memref<?x?x?x256xbf16>) k(%q : memref<?x?x?x256xbf16>)
                 v(%q : memref<?x?x?x256xbf16>) -> o(%o : memref<?x?x?x256xbf16>)
                 lse(%lse : memref<?x?x?xf32>) causal split_keys
                 {window = array<i64: 100, 0>}
  return
}
