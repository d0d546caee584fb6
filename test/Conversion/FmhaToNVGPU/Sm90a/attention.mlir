// RUN: fmha-opt %s -fmha-materialize-tiles=chip=sm_90a -convert-fmha-to-nvgpu=chip=sm_90a | FileCheck %s
// RUN: fmha-opt %s -fmha-materialize-tiles=chip=sm_90a -convert-fmha-to-nvgpu=chip=sm_90a | FileCheck %s --check-prefix=DECODE

// fmha.attention for sm_90a (causal GQA 32:8, d128, LSE; the default tile
// 128x128, 12 warps, 2 stages) becomes one warp-specialized kernel and a
// launch in the op's place. What this checks, in the order the kernel
// emits it (the PTX and SASS tests check the instructions they become):
// - the host: q, k, v tensor maps of 128x64 boxes with 128-byte swizzle
//   and 256-byte L2 fills (a prefill tile's; decode's keeps 128), one CTA
//   per causal pair of 128-row blocks (ceil(Sq / 256) * Hq * B);
// - the contract on the gpu.func that the JIT and fmha-aot launch from;
// - the mbarriers set up by one thread before any warp uses them;
// - the producer warpgroup: registers given up (setmaxnreg 24), Q loaded by
//   TMA once per tile (two 64-column boxes) into one of two buffers on its
//   full barrier that expects its bytes, each K and V stage waited empty,
//   then loaded;
// - the consumers: registers taken (setmaxnreg 240), the ping-pong's named
//   barriers (wait for the turn, pass it on after issuing), S = Q K^T as a
//   chain of 8 WGMMAs over d128 (the first zeroing the accumulator), P V as
//   register-A WGMMAs (inline PTX: the NVVM op takes A from shared memory
//   only), each buffer released by an mbarrier arrive once its WGMMAs
//   retired;
// - the epilogue: O staged through its own shared buffer (so no proxy
//   fence: no TMA load writes it) with stmatrix, stored in 16-byte vectors,
//   and the LSE.

// CHECK-LABEL: func.func @gqa_causal(
// CHECK-COUNT-3: nvgpu.tma.create.descriptor %{{.+}} box[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] : memref<*xbf16> -> <tensor = memref<1x1x128x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>
// CHECK: %[[SQ:.+]] = memref.dim %{{.+}}, %c2
// CHECK: %[[PAIRS:.+]] = arith.ceildivui %[[SQ]], %c256
// CHECK: %[[HQ:.+]] = memref.dim
// CHECK: %[[UNITS_H:.+]] = arith.muli %[[PAIRS]], %[[HQ]]
// CHECK: %[[B:.+]] = memref.dim
// CHECK: %[[UNITS:.+]] = arith.muli %[[UNITS_H]], %[[B]]
// CHECK: %[[CTAS:.+]] = arith.minui %[[UNITS]], %c2147483647
// CHECK: gpu.launch_func @fmha_kernels::@attention blocks in (%[[CTAS]], %{{.+}}, %{{.+}}) threads in (%c384, %{{.+}}, %{{.+}}) dynamic_shared_memory_size %c230496_i32 args(%{{.+}} : !llvm.ptr, %{{.+}} : !llvm.ptr, %{{.+}} : !llvm.ptr, %{{.+}} : memref<?x32x?x128xbf16>

// CHECK-LABEL: gpu.func @attention(
// CHECK-SAME: %[[QMAP:[a-z0-9]+]]: !llvm.ptr, %[[KMAP:[a-z0-9]+]]: !llvm.ptr, %[[VMAP:[a-z0-9]+]]: !llvm.ptr,
// CHECK-SAME: fmha.launch = #fmha.launch<operands = [q, k, v, o, lse], threads = 384, shared_bytes = 230496, grid = [min(ceildiv(q[2], 256) * q[1] * q[0], 2147483647), 1, 1], persistent, parameters = [tensor_map(q, bf16, box = [128, 64], swizzle = 128, l2_promotion = 256), tensor_map(k, bf16, box = [128, 64], swizzle = 128, l2_promotion = 256), tensor_map(v, bf16, box = [128, 64], swizzle = 128, l2_promotion = 256), q, k, v, o, lse]>
// CHECK-SAME: known_block_size = array<i32: 384, 1, 1>

// A full and an empty barrier per Q buffer and per stage of K and of V.
// CHECK: scf.if
// CHECK-COUNT-12: nvvm.mbarrier.init
// CHECK: nvvm.fence.mbarrier.init
// CHECK: gpu.barrier

// The producer.
// CHECK: nvvm.setmaxregister decrease 24
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.+}}, %c32768_i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.+}}, %[[QMAP]], %{{.+}}, box[%c0_i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.+}}, %[[QMAP]], %{{.+}}, box[%c64_i32
// CHECK: scf.for
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.+}}, %c32768_i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.+}}, %[[KMAP]]
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.+}}, %[[KMAP]]
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.+}}, %c32768_i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.+}}, %[[VMAP]]
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.+}}, %[[VMAP]]

// The consumers: the first key block (S only), ...
// CHECK: nvvm.setmaxregister increase 240
// CHECK: nvvm.barrier.arrive id = %{{.+}} number_of_threads = %c256_i32
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.barrier id = %{{.+}} number_of_threads = %c256_i32
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: nvvm.wgmma.mma_async {{.+}} <m = 64, n = 128, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK-COUNT-7: nvvm.wgmma.mma_async {{.+}} <m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.barrier.arrive id
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.mbarrier.arrive
// ... then each later block: S_j, P_{j-1} V_{j-1} under its softmax.
// CHECK: scf.for
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.barrier id
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-8: nvvm.wgmma.mma_async {{.+}} <m = 64, n = 128, k = 16>
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NOT: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK-COUNT-8: llvm.inline_asm has_side_effects {{.+}}wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.barrier.arrive id
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: nvvm.mbarrier.arrive
// The softmax of S_j, under P_{j-1} V_{j-1}.
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0

// The epilogue.
// CHECK: nvvm.stmatrix
// CHECK: vector.store %{{.+}}, %{{.+}} {alignment = 16 : i64} : memref<?x32x?x128xbf16>, vector<8xbf16>
// CHECK-NOT: nvvm.fence.proxy
// CHECK: memref.store %{{.+}} : memref<?x32x?xf32>
// CHECK: gpu.return
func.func @gqa_causal(%q: memref<?x32x?x128xbf16>, %k: memref<?x8x?x128xbf16>,
                      %v: memref<?x8x?x128xbf16>, %o: memref<?x32x?x128xbf16>,
                      %lse: memref<?x32x?xf32>) {
  fmha.attention q(%q : memref<?x32x?x128xbf16>) k(%k : memref<?x8x?x128xbf16>)
                 v(%v : memref<?x8x?x128xbf16>) -> o(%o : memref<?x32x?x128xbf16>)
                 lse(%lse : memref<?x32x?xf32>) causal
  return
}

// The decode tile (one consumer of 64 rows, as a JIT launch of one query
// picks it) keeps 128-byte L2 fills, the contract's default.
// DECODE-LABEL: func.func @decode_tile(
// DECODE-COUNT-3: nvgpu.tma.create.descriptor {{.+}} : memref<*xbf16> -> <tensor = memref<1x1x64x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = l2promo_128b, oob = zero, interleave = none>
// DECODE: gpu.func @attention_0(
// DECODE-SAME: parameters = [tensor_map(q, bf16, box = [64, 64], swizzle = 128), tensor_map(k, bf16, box = [64, 64], swizzle = 128), tensor_map(v, bf16, box = [64, 64], swizzle = 128), q, k, v, o]
func.func @decode_tile(%q: memref<?x32x?x128xbf16>, %k: memref<?x8x?x128xbf16>,
                       %v: memref<?x8x?x128xbf16>, %o: memref<?x32x?x128xbf16>) {
  fmha.attention q(%q : memref<?x32x?x128xbf16>) k(%k : memref<?x8x?x128xbf16>)
                 v(%v : memref<?x8x?x128xbf16>) -> o(%o : memref<?x32x?x128xbf16>)
                 {tile = #fmha.tile<sm_90a, block_m = 64, block_n = 64, warps = 8, stages = 3>}
  return
}
