// RUN: fmha-opt %s -fmha-materialize-tiles=chip=sm_80 -convert-fmha-to-nvgpu=chip=sm_80 | FileCheck %s

// fmha.attention for sm_80 becomes one FlashAttention-2 kernel in the
// module's fmha_kernels gpu.module and a launch in the op's place: grid
// (ceil(Sq / block_m), Hq, min(B, 65535)), 32 * warps threads, Q + K + V
// tiles of dynamic shared memory ((128 + 2 * 64) * D * 2 bytes), and at
// head dim 128 the held row sums (4 bytes per thread).

// CHECK: func.func @gqa_causal
// CHECK: %[[SQ:.*]] = memref.dim %{{.*}}, %c2
// CHECK: %[[ROWS:.*]] = arith.ceildivui %[[SQ]], %c128
// CHECK: gpu.launch_func @fmha_kernels::@attention blocks in (%[[ROWS]], %{{.*}}, %{{.*}}) threads in (%c128{{.*}}, %c1{{.*}}, %c1{{.*}}) dynamic_shared_memory_size %c66048_i32 args(
// CHECK: func.func @window_f16
// CHECK: gpu.launch_func @fmha_kernels::@attention_0 {{.*}} dynamic_shared_memory_size %c32768_i32
// CHECK-NOT: fmha.attention

// CHECK: gpu.module @fmha_kernels
// CHECK: gpu.func @attention(%{{.*}}: memref<?x32x?x128xbf16>, %{{.*}}: memref<?x8x?x128xbf16>, %{{.*}}: memref<?x8x?x128xbf16>, %{{.*}}: memref<?x32x?x128xbf16>, %{{.*}}: memref<?x32x?xf32>) kernel attributes {fmha.launch = #fmha.launch<operands = [q, k, v, o, lse], threads = 128, shared_bytes = 66048, grid = [ceildiv(q[2], 128), q[1], min(q[0], 65535)], parameters = [q, k, v, o, lse]>, known_block_size = array<i32: 128, 1, 1>}
// CHECK: gpu.dynamic_shared_memory
// Q, K and V tiles.
// CHECK: memref.view {{.*}} to memref<128x128xbf16, #gpu.address_space<workgroup>>
// CHECK: memref.view {{.*}} to memref<64x128xbf16, #gpu.address_space<workgroup>>
// CHECK: memref.view {{.*}} to memref<64x128xbf16, #gpu.address_space<workgroup>>
// The batch loop, the prologue's zero-filling copies of Q and K.
// CHECK: scf.for
// CHECK: nvgpu.device_async_copy {{.*}}, 8, %{{.*}} {bypassL1}
// CHECK: nvgpu.device_async_create_group
// Masked key blocks first: wait, copy V, S = Q K^T, mask, online softmax,
// O += P V.
// CHECK: scf.for {{.*}} iter_args(
// CHECK: nvvm.cp.async.wait.group 0
// CHECK: gpu.barrier
// CHECK: nvgpu.device_async_copy
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK: nvvm.mma.sync {{.*}} {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// CHECK: arith.select {{.*}} : f32
// CHECK: gpu.shuffle xor
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK: scf.yield
// Unmasked key blocks: the same body without the mask.
// CHECK: scf.for {{.*}} iter_args(
// Epilogue: O / l through shared memory, 16-byte stores, the LSE.
// CHECK: math.log
// CHECK: vector.store {{.*}} : memref<?x32x?x128xbf16>, vector<8xbf16>
// CHECK: memref.store {{.*}} : memref<?x32x?xf32>
// CHECK: gpu.return
func.func @gqa_causal(%q: memref<?x32x?x128xbf16>, %k: memref<?x8x?x128xbf16>,
                      %v: memref<?x8x?x128xbf16>, %o: memref<?x32x?x128xbf16>,
                      %lse: memref<?x32x?xf32>) {
  fmha.attention q(%q : memref<?x32x?x128xbf16>) k(%k : memref<?x8x?x128xbf16>)
                 v(%v : memref<?x8x?x128xbf16>) -> o(%o : memref<?x32x?x128xbf16>)
                 lse(%lse : memref<?x32x?xf32>) causal
  return
}

// f16 uses nvgpu.mma.sync; a window adds a third, masked range of key
// blocks (its left edge), after the masked and the unmasked ones.
// CHECK: gpu.func @attention_0
// CHECK: scf.for {{.*}} iter_args(
// CHECK: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK: scf.for {{.*}} iter_args(
// CHECK: scf.for {{.*}} iter_args(
func.func @window_f16(%q: memref<?x?x?x64xf16>) {
  fmha.attention q(%q : memref<?x?x?x64xf16>) k(%q : memref<?x?x?x64xf16>)
                 v(%q : memref<?x?x?x64xf16>) -> o(%q : memref<?x?x?x64xf16>)
                 {window = array<i64: 128, 16>}
  return
}
