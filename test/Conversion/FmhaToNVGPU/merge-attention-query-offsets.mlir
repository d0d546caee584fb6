// RUN: fmha-opt %s -convert-fmha-to-nvgpu=chip=sm_90a | FileCheck %s
// RUN: fmha-compile %s --chip=sm_90a --emit=link-log | FileCheck %s --check-prefix=LOG

// fmha.merge_attention with query_offsets: the states of packed sequences
// (fmha.attention's split_keys with query_offsets) exist only inside the
// sequences' rows, so the merge writes the rows from query_offsets[0] to
// query_offsets[N] only (each clamped into [0, Sq]); a warp's row outside
// them (before the first sequence or after the last) is left as it was.

// CHECK: gpu.func @merge_attention(
// CHECK-SAME: fmha.launch = #fmha.launch<operands = [outs, lses, o, lse, query_offsets], threads = 256, shared_bytes = 0, grid = [min(ceildiv(o[2], 8) * o[1] * o[0], 2147483647), 1, 1], dependent_launch, parameters = [outs, lses, o, lse, query_offsets]>
// CHECK: scf.for
// CHECK-COUNT-2: memref.load %{{.+}} : memref<?xi32>
// CHECK: %[[INSIDE:.+]] = arith.andi
// CHECK: scf.if %[[INSIDE]] {
// CHECK: math.log
// CHECK: memref.store

// LOG: Function properties for 'merge_attention':
// LOG: 0 bytes lmem

func.func @merge(%outs: memref<?x1x?x?x128xbf16>, %lses: memref<?x1x?x?xf32>,
                 %o: memref<1x?x?x128xbf16>, %lse: memref<1x?x?xf32>,
                 %cq: memref<?xi32>) {
  fmha.merge_attention outs(%outs : memref<?x1x?x?x128xbf16>) lses(%lses : memref<?x1x?x?xf32>)
                    -> o(%o : memref<1x?x?x128xbf16>) lse(%lse : memref<1x?x?xf32>)
                    query_offsets(%cq : memref<?xi32>)
  return
}
