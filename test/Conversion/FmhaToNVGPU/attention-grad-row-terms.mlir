// RUN: fmha-opt %s -convert-fmha-to-nvgpu=chip=sm_90a | FileCheck %s

// sm_90a's dk/dv consumers load their first two query blocks' LSE and
// delta (a query a thread, from global memory) before they wait for the
// K, V, Q and dO tiles, so that the loads' latency passes under the TMA's
// (backward-notes v56); the first block's S^T and dP^T follow the waits.

// CHECK-LABEL: gpu.func @attention_grad_dkv(
// CHECK:       nvvm.setmaxregister  increase 240
// CHECK-NOT:   nvvm.mbarrier.try_wait.parity
// CHECK:       llvm.load %{{.*}} : !llvm.ptr<1> -> f32
// CHECK-NOT:   nvvm.mbarrier.try_wait.parity
// CHECK:       llvm.load %{{.*}} : !llvm.ptr<1> -> f32
// CHECK-NOT:   nvvm.mbarrier.try_wait.parity
// CHECK:       llvm.load %{{.*}} : !llvm.ptr<1> -> f32
// CHECK-NOT:   nvvm.mbarrier.try_wait.parity
// CHECK:       llvm.load %{{.*}} : !llvm.ptr<1> -> f32
// CHECK:       nvvm.mbarrier.try_wait.parity
// CHECK:       nvvm.mbarrier.try_wait.parity
// CHECK:       nvvm.wgmma.mma_async
func.func @d128(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
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
