// RUN: fmha-opt %s -convert-fmha-to-nvgpu=chip=sm_90a | FileCheck %s

// At head dim 256 with dq_accum, sm_90a's dk/dv kernel splits the head dim
// between its two consumers: both share the CTA's 64 keys, each computes
// S^T and dP^T for 32 of a block's 64 queries (m64n32), P^T and dS^T meet
// in shared memory, and each accumulates dV and dK over 128 of D's columns
// with A from shared memory (m64n128, A K-major, B MN-major). One Q/dO
// buffer and one dQ staging buffer fit beside them.

// CHECK-LABEL: func.func @grad_d256
// CHECK: gpu.launch_func @fmha_kernels::@attention_grad_delta
// CHECK: gpu.launch_func @fmha_kernels::@attention_grad_dkv {{.*}} threads in (%c384, {{.*}} dynamic_shared_memory_size %c231472_i32
// CHECK: gpu.launch_func @fmha_kernels::@attention_grad_dq_convert
// CHECK: gpu.func @attention_grad_dkv(
// CHECK-SAME: threads = 384, shared_bytes = 231472, grid = [ceildiv(k[2], 64), k[1], min(k[0], 65535)], parameters = [tensor_map(q, bf16, box = [64, 64], swizzle = 128), tensor_map(k, bf16, box = [64, 64], swizzle = 128), tensor_map(v, bf16, box = [64, 64], swizzle = 128), tensor_map(dout, bf16, box = [64, 64], swizzle = 128),
// CHECK: nvvm.setmaxregister increase 240
// CHECK-COUNT-2: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 32, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK: nvvm.barrier id = %{{.+}} number_of_threads = %{{.+}}
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]

func.func @grad_d256(%q: memref<?x?x?x256xbf16>, %lse: memref<?x?x?xf32>,
                     %acc: memref<?x?x?x256xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x256xbf16>) k(%q : memref<?x?x?x256xbf16>)
      v(%q : memref<?x?x?x256xbf16>) o(%q : memref<?x?x?x256xbf16>)
      dout(%q : memref<?x?x?x256xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x256xbf16>) dk(%q : memref<?x?x?x256xbf16>)
         dv(%q : memref<?x?x?x256xbf16>) delta(%lse : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x256xf32>) causal
  return
}
