// RUN: fmha-opt %s -convert-fmha-to-nvgpu=chip=sm_80 | FileCheck %s --check-prefixes=CHECK,SM80
// RUN: fmha-opt %s -convert-fmha-to-nvgpu=chip=sm_90a | FileCheck %s --check-prefixes=CHECK,SM90A

// fmha.attention_grad becomes three kernels (getAttentionGradKernels),
// launched in order in its place: delta = rowsum(dout * o) (16 bytes of
// a row per lane), dq (a CTA per 64 query rows of each (batch, query head)), then dk
// and dv (a CTA per 64 keys of each (batch, KV head), over the query heads
// of its group). Each takes every operand as a memref descriptor (sm_90a's
// dk/dv with dq_accum, below, also tensor maps).

// CHECK-LABEL: func.func @grad
// CHECK: gpu.launch_func @fmha_kernels::@attention_grad_delta blocks in (%{{.+}}, %{{.+}}, %{{.+}}) threads in (%c256,
// CHECK: gpu.launch_func @fmha_kernels::@attention_grad_dq blocks in (%{{.+}}, %{{.+}}, %{{.+}}) threads in (%c128, {{.*}} dynamic_shared_memory_size %c99328_i32
// CHECK: gpu.launch_func @fmha_kernels::@attention_grad_dkv blocks in (%{{.+}}, %{{.+}}, %{{.+}}) threads in (%c128{{.*}} dynamic_shared_memory_size %c99328_i32
// CHECK-NOT: fmha.attention_grad

// With dq_accum: delta (which also zeroes dq_accum), dk/dv (which adds each
// block's dQ = dS K into dq_accum, dS^T through shared memory), then
// dq = scale dq_accum. On sm_80 dk/dv is the mma.sync kernel of 128 keys
// over 8 warps with f32 atomics; on sm_90a the warp-specialized WGMMA kernel of 128 keys
// (a producer and two consumer warpgroups) with bulk reduce-adds.

// CHECK-LABEL: func.func @grad_atomic
// CHECK: gpu.launch_func @fmha_kernels::@attention_grad_delta_0
// SM80: gpu.launch_func @fmha_kernels::@attention_grad_dkv_0 {{.*}} threads in (%c256{{.*}} dynamic_shared_memory_size %c164864_i32
// SM90A: gpu.launch_func @fmha_kernels::@attention_grad_dkv_0 {{.*}} threads in (%c384, {{.*}} dynamic_shared_memory_size %c231504_i32
// CHECK: gpu.launch_func @fmha_kernels::@attention_grad_dq_convert
// CHECK-NOT: attention_grad_dq_0

// At head dim 256: delta, dq, dk, dv.

// CHECK-LABEL: func.func @grad_d256
// CHECK: gpu.launch_func @fmha_kernels::@attention_grad_delta_1
// CHECK: gpu.launch_func @fmha_kernels::@attention_grad_dq_0 {{.*}} dynamic_shared_memory_size %c131584_i32
// CHECK: gpu.launch_func @fmha_kernels::@attention_grad_dk {{.*}} dynamic_shared_memory_size %c131584_i32
// CHECK: gpu.launch_func @fmha_kernels::@attention_grad_dv {{.*}} dynamic_shared_memory_size %c131584_i32
// The kernels, in the module in their launch order (getAttentionGradKernels).
// CHECK: gpu.func @attention_grad_delta(
// CHECK-SAME: fmha.launch = #fmha.launch<operands = [q, k, v, o, dout, lse, dq, dk, dv, delta], threads = 256, shared_bytes = 0, grid = [min(ceildiv(o[2], 16) * o[1] * o[0], 2147483647), 1, 1], parameters = [q, k, v, o, dout, lse, dq, dk, dv, delta]>
// CHECK: vector.reduction <add>
// CHECK: nvvm.shfl.sync  bfly
// CHECK: gpu.func @attention_grad_dq(
// CHECK-SAME: fmha.launch = #fmha.launch<operands = [q, k, v, o, dout, lse, dq, dk, dv, delta], threads = 128, shared_bytes = 99328, grid = [ceildiv(q[2], 64), q[1], min(q[0], 65535)], parameters = [q, k, v, o, dout, lse, dq, dk, dv, delta]>
// S = Q K^T and dP = dO V^T, then dQ += dS K (K read transposed).
// CHECK: nvgpu.device_async_copy
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK: nvvm.mma.sync
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK: gpu.func @attention_grad_dkv(
// CHECK-SAME: fmha.launch = #fmha.launch<operands = [q, k, v, o, dout, lse, dq, dk, dv, delta], threads = 128, shared_bytes = 99328, grid = [ceildiv(k[2], 64), k[1], min(k[0], 65535)], parameters = [q, k, v, o, dout, lse, dq, dk, dv, delta]>
// The LSE and delta of a query block go through shared memory, by cp.async
// of 4 bytes a thread.
// CHECK: nvgpu.device_async_copy {{.*}}, 1, %{{.+}} : memref<1xf32, strided<[1], offset: ?>> to memref<2x64xf32, #gpu.address_space<workgroup>>
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK: gpu.func @attention_grad_delta_0(
// CHECK-SAME: operands = [q, k, v, o, dout, lse, dq, dk, dv, delta, dq_accum]
// CHECK: vector.store %{{.+}}, %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] {alignment = 16 : i64} : memref<?x?x?x128xf32>, vector<8xf32>
// CHECK: gpu.func @attention_grad_dkv_0(
// SM80: nvgpu.ldmatrix %{{.+}} {numTiles = 4 : i32, transpose = false} : memref<128x64xbf16, #gpu.address_space<workgroup>>
// SM80: nvgpu.ldmatrix %{{.+}} {numTiles = 4 : i32, transpose = true} : memref<128x64xbf16, #gpu.address_space<workgroup>>
// SM80: memref.atomic_rmw addf
// SM90A-SAME: fmha.launch = #fmha.launch<operands = [q, k, v, o, dout, lse, dq, dk, dv, delta, dq_accum], threads = 384, shared_bytes = 231504, grid = [ceildiv(k[2], 128), k[1], min(k[0], 65535)], parameters = [tensor_map(q, bf16, box = [64, 64], swizzle = 128), tensor_map(k, bf16, box = [128, 64], swizzle = 128), tensor_map(v, bf16, box = [128, 64], swizzle = 128), tensor_map(dout, bf16, box = [64, 64], swizzle = 128), q, k, v, o, dout, lse, dq, dk, dv, delta, dq_accum]>
// SM90A-SAME: nvvm.maxnreg = 168 : i32
// The producer warpgroup: one thread's TMA loads of K and V, then of each
// block's Q and dO; another's bulk reduce-add of each block's staged dQ
// into dq_accum.
// SM90A: nvvm.setmaxregister decrease 24
// SM90A: nvvm.cp.async.bulk.tensor.shared.cluster.global
// SM90A: cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32
// The consumers: S^T = K Q^T and dP^T = V dO^T, the block's LSE and delta
// (64 threads' loads to shared memory), dV += P^T dO and dK += dS^T Q (A
// from registers), dQ = dS K (both operands transposed), staged for the
// reduce-add.
// SM90A: nvvm.setmaxregister increase 240
// SM90A-COUNT-2: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// SM90A: llvm.load %{{.+}} {alignment = 4 : i64} : !llvm.ptr<1> -> f32
// SM90A: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// SM90A: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
// CHECK: gpu.func @attention_grad_dq_convert(
// CHECK-SAME: grid = [min(ceildiv(q[2], 16) * q[1] * q[0], 2147483647), 1, 1]
// A lane's 8 columns: on sm_80 in a whole tile the even ones and the odd
// ones each 4 neighbours (getFragmentPlace), interleaved; on sm_90a two
// chunks of 4 (getQueryGradColumn).
// SM80: vector.shuffle %{{.+}}, %{{.+}} [0, 4, 1, 5, 2, 6, 3, 7] : vector<4xf32>, vector<4xf32>
// SM90A: vector.shuffle %{{.+}}, %{{.+}} [0, 1, 2, 3, 4, 5, 6, 7] : vector<4xf32>, vector<4xf32>
// CHECK: arith.truncf %{{.+}} : vector<8xf32> to vector<8xbf16>
func.func @grad(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                %lse: memref<?x?x?xf32>, %delta: memref<?x?x?xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x128xbf16>) k(%k : memref<?x?x?x128xbf16>)
      v(%k : memref<?x?x?x128xbf16>) o(%q : memref<?x?x?x128xbf16>)
      dout(%q : memref<?x?x?x128xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x128xbf16>) dk(%k : memref<?x?x?x128xbf16>)
         dv(%k : memref<?x?x?x128xbf16>) delta(%delta : memref<?x?x?xf32>) causal
  return
}

func.func @grad_atomic(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                       %lse: memref<?x?x?xf32>, %delta: memref<?x?x?xf32>,
                       %acc: memref<?x?x?x128xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x128xbf16>) k(%k : memref<?x?x?x128xbf16>)
      v(%k : memref<?x?x?x128xbf16>) o(%q : memref<?x?x?x128xbf16>)
      dout(%q : memref<?x?x?x128xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x128xbf16>) dk(%k : memref<?x?x?x128xbf16>)
         dv(%k : memref<?x?x?x128xbf16>) delta(%delta : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x128xf32>)
  return
}

func.func @grad_d256(%q: memref<?x?x?x256xf16>, %lse: memref<?x?x?xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x256xf16>) k(%q : memref<?x?x?x256xf16>)
      v(%q : memref<?x?x?x256xf16>) o(%q : memref<?x?x?x256xf16>)
      dout(%q : memref<?x?x?x256xf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x256xf16>) dk(%q : memref<?x?x?x256xf16>)
         dv(%q : memref<?x?x?x256xf16>) delta(%lse : memref<?x?x?xf32>)
  return
}
