// RUN: fmha-opt %s -fmha-materialize-tiles=chip=sm_90a -convert-fmha-to-nvgpu=chip=sm_90a | FileCheck %s

// Over pages smaller than a key block's boxes allow in one, several warps
// of the producer warpgroup issue a block's boxes (getIssuingWarps):
// 192-row blocks of 64-row pages take three, of 16-row pages four. Only
// those warps walk the tiles (the first thread of each; the fourth warp
// of three waits on nothing), and a K or V full barrier counts an arrive
// from each of them, the first's with the block's bytes, even where a
// block's last keys hold no box of a warp. Without those arrives a warp
// with no box in a block could fall two phases behind the empty barrier
// and wait on its parity forever (a split-KV decode over 256-row pages
// hung in about one call of eight on an H200). Unpaged, one thread issues
// and the full barriers count one arrive.

// CHECK-LABEL: gpu.func @attention(
// Q's full and empty barriers, then each stage's K full, V full (three
// issuing warps), K empty and V empty.
// CHECK: nvvm.mbarrier.init %{{.*}}, %c1_i32
// CHECK-NEXT: {{^ *}}%{{.*}} = arith.constant
// CHECK: nvvm.mbarrier.init %{{.*}}, %c4_i32
// CHECK-COUNT-2: nvvm.mbarrier.init %{{.*}}, %c3_i32
// CHECK-COUNT-2: nvvm.mbarrier.init %{{.*}}, %c4_i32
// CHECK-COUNT-2: nvvm.mbarrier.init %{{.*}}, %c3_i32
// CHECK-COUNT-2: nvvm.mbarrier.init %{{.*}}, %c4_i32
// CHECK: nvvm.fence.mbarrier.init
// CHECK: nvvm.setmaxregister decrease
// CHECK-NEXT: %[[BOUND:.*]] = arith.constant 96 : index
// CHECK-NEXT: %[[ISSUING:.*]] = arith.cmpi slt, %thread_id_x, %[[BOUND]]
// CHECK: %[[ISSUER:.*]] = arith.andi %[[ISSUING]],
// CHECK-NEXT: scf.if %[[ISSUER]]
// Q's bytes (a constant), then K's buffer and V's: the first warp states
// the bytes of the block's boxes, the others arrive.
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %{{[0-9]+}} :
// CHECK-NEXT: } else {
// CHECK-NEXT: nvvm.mbarrier.arrive
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %{{[0-9]+}} :
// CHECK-NEXT: } else {
// CHECK-NEXT: nvvm.mbarrier.arrive
func.func @pages_of_64(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x64x128xbf16>,
                       %o: memref<?x?x?x128xbf16>, %lengths: memref<?xi32>,
                       %table: memref<?x?xi32>) {
  fmha.attention q(%q : memref<?x?x?x128xbf16>) k(%k : memref<?x?x64x128xbf16>)
                 v(%k : memref<?x?x64x128xbf16>) -> o(%o : memref<?x?x?x128xbf16>)
                 key_lengths(%lengths : memref<?xi32>)
                 page_table(%table : memref<?x?xi32>)
                 {tile = #fmha.tile<sm_90a, block_m = 64, block_n = 192, warps = 8, stages = 2>}
  return
}

// CHECK-LABEL: gpu.func @attention_0(
// CHECK: nvvm.mbarrier.init %{{.*}}, %c1_i32
// CHECK-NEXT: {{^ *}}%{{.*}} = arith.constant
// CHECK: nvvm.mbarrier.init %{{.*}}, %c4_i32
// CHECK-COUNT-4: nvvm.mbarrier.init %{{.*}}, %c4_i32
// CHECK: nvvm.fence.mbarrier.init
// CHECK: nvvm.setmaxregister decrease
// CHECK-NEXT: %[[BOUND:.*]] = arith.constant 128 : index
// CHECK-NEXT: arith.cmpi slt, %thread_id_x, %[[BOUND]]
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %{{[0-9]+}} :
// CHECK-NEXT: } else {
// CHECK-NEXT: nvvm.mbarrier.arrive
func.func @pages_of_16(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x16x128xbf16>,
                       %o: memref<?x?x?x128xbf16>, %lengths: memref<?xi32>,
                       %table: memref<?x?xi32>) {
  fmha.attention q(%q : memref<?x?x?x128xbf16>) k(%k : memref<?x?x16x128xbf16>)
                 v(%k : memref<?x?x16x128xbf16>) -> o(%o : memref<?x?x?x128xbf16>)
                 key_lengths(%lengths : memref<?xi32>)
                 page_table(%table : memref<?x?xi32>)
                 {tile = #fmha.tile<sm_90a, block_m = 64, block_n = 192, warps = 8, stages = 2>}
  return
}

// CHECK-LABEL: gpu.func @attention_1(
// CHECK-COUNT-2: nvvm.mbarrier.init %{{.*}}, %c1_i32
// CHECK-NOT: nvvm.mbarrier.init %{{.*}}, %c3_i32
// CHECK: nvvm.setmaxregister decrease
// CHECK-NOT: arith.cmpi slt, %thread_id_x
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %thread_id_x,
// CHECK-NEXT: scf.if %[[FIRST]]
// CHECK: nvvm.mbarrier.arrive.expect_tx
// CHECK-NOT: nvvm.mbarrier.arrive %
// CHECK: nvvm.setmaxregister increase
func.func @unpaged(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                   %o: memref<?x?x?x128xbf16>, %lengths: memref<?xi32>) {
  fmha.attention q(%q : memref<?x?x?x128xbf16>) k(%k : memref<?x?x?x128xbf16>)
                 v(%k : memref<?x?x?x128xbf16>) -> o(%o : memref<?x?x?x128xbf16>)
                 key_lengths(%lengths : memref<?xi32>)
                 {tile = #fmha.tile<sm_90a, block_m = 64, block_n = 192, warps = 8, stages = 2>}
  return
}
