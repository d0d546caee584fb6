// RUN: fmha-opt %s -convert-fmha-to-nvgpu=chip=sm_90a | FileCheck %s
// RUN: not fmha-opt %s -convert-fmha-to-nvgpu=chip=sm_80 2>&1 | FileCheck %s --check-prefix=SM80

// v's head dim apart from q's (DeepSeek's 192 and 128): sm_90a's WGMMA
// kernel on tiles of the larger one (192 columns, whose blocks the
// consumers share out, each consumer's code apart and meeting the other
// by barrier.sync without .aligned), S^T = K Q^T over D's 12 k steps,
// dP^T = V dO^T over Dv's 8; the delta kernel's lanes cover D (dq_accum's
// zeroing) and Dv (its products). The mma.sync kernels keep one head dim:
// refused on sm_80.

// CHECK-LABEL: func.func @grad_d192_dv128
// CHECK: gpu.launch_func @fmha_kernels::@attention_grad_delta
// CHECK: gpu.launch_func @fmha_kernels::@attention_grad_dkv {{.*}} threads in (%c384
// CHECK: gpu.launch_func @fmha_kernels::@attention_grad_dq_convert
// CHECK: gpu.func @attention_grad_dkv(
// Two Q/dO buffers in tiles of 192 columns: 231488 of the SM's 232448 bytes.
// CHECK-SAME: threads = 384, shared_bytes = 231488,
// CHECK-SAME: tensor_map(v, bf16, box = [64, 64], swizzle = 128), tensor_map(dout, bf16, box = [64, 64], swizzle = 128),
// CHECK-COUNT-12: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 32, k = 16>
// CHECK-COUNT-8: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 32, k = 16>
// CHECK-NOT: <m = 64, n = 32, k = 16>
// CHECK: llvm.call_intrinsic "llvm.nvvm.barrier.cta.sync.count"

// SM80: error: 'fmha.attention_grad' op v's head dim 128 apart from q's 192 needs dq_accum and chip sm_90a (the WGMMA kernel), got chip sm_80
func.func @grad_d192_dv128(%q: memref<?x?x?x192xbf16>, %v: memref<?x?x?x128xbf16>,
                           %lse: memref<?x?x?xf32>, %acc: memref<?x?x?x192xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x192xbf16>) k(%q : memref<?x?x?x192xbf16>)
      v(%v : memref<?x?x?x128xbf16>) o(%v : memref<?x?x?x128xbf16>)
      dout(%v : memref<?x?x?x128xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x192xbf16>) dk(%q : memref<?x?x?x192xbf16>)
         dv(%v : memref<?x?x?x128xbf16>) delta(%lse : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x192xf32>) causal
  return
}
