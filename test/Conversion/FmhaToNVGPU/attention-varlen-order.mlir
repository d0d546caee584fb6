// RUN: fmha-opt %s --fmha-materialize-tiles=chip=sm_90a -convert-fmha-to-nvgpu=chip=sm_90a | FileCheck %s

// Packed sequences without a mask go longest first among the first 32
// (PersistentTileSchedule::ordersLongestFirst; decode-notes v25): each role
// sorts that chunk once, before its tile loop, by a bitonic network across
// the warp's lanes (xor shuffles of i32 keys up to 16 lanes apart; the
// softmax's row reductions shuffle f32 1 and 2 lanes apart). The
// producer's walking warp stores the order in shared memory of its own and
// reads it back in its tile loop; the consumers hold their sorted chunk.
// Under a causal mask the index order stands: no sort.

// CHECK-LABEL: gpu.func @attention(
// CHECK:       nvvm.setmaxregister  decrease 24
// CHECK:       gpu.shuffle  xor %{{.*}}, %c16_i32{{[_0-9]*}}, %c32_i32{{[_0-9]*}} : i32
// CHECK:       llvm.store %{{.*}} : i32, !llvm.ptr<3>
// CHECK-NEXT:  arith.constant -1 : i32
// CHECK-NEXT:  nvvm.bar.warp.sync
// CHECK:       scf.while
// CHECK:       llvm.load %{{.*}} : !llvm.ptr<3> -> i32
// CHECK:       nvvm.setmaxregister  increase 240
// CHECK:       gpu.shuffle  xor %{{.*}}, %c16_i32{{[_0-9]*}}, %c32_i32{{[_0-9]*}} : i32
// CHECK:       scf.while
func.func @unmasked(%q: memref<1x?x?x128xbf16>, %k: memref<1x?x?x128xbf16>,
                    %o: memref<1x?x?x128xbf16>, %cq: memref<?xi32>,
                    %ck: memref<?xi32>, %m: index) {
  fmha.attention q(%q : memref<1x?x?x128xbf16>) k(%k : memref<1x?x?x128xbf16>)
                 v(%k : memref<1x?x?x128xbf16>) -> o(%o : memref<1x?x?x128xbf16>)
                 query_offsets(%cq : memref<?xi32>) key_offsets(%ck : memref<?xi32>)
                 max_query_length(%m)
  return
}

// CHECK-LABEL: gpu.func @attention_0(
// CHECK-NOT:   gpu.shuffle  xor %{{.*}}, %c16_i32{{[_0-9]*}}, %c32_i32{{[_0-9]*}} : i32
// CHECK:       gpu.return
func.func @causal(%q: memref<1x?x?x128xbf16>, %k: memref<1x?x?x128xbf16>,
                  %o: memref<1x?x?x128xbf16>, %cq: memref<?xi32>,
                  %ck: memref<?xi32>, %m: index) {
  fmha.attention q(%q : memref<1x?x?x128xbf16>) k(%k : memref<1x?x?x128xbf16>)
                 v(%k : memref<1x?x?x128xbf16>) -> o(%o : memref<1x?x?x128xbf16>)
                 query_offsets(%cq : memref<?xi32>) key_offsets(%ck : memref<?xi32>)
                 max_query_length(%m) causal
  return
}
