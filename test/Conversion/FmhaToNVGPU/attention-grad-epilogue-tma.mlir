// RUN: fmha-opt %s -convert-fmha-to-nvgpu=chip=sm_90a | FileCheck %s

// sm_90a's dk/dv epilogue on tiles of 64 columns (head dims up to 64):
// each consumer warp writes its 16 rows of dK and dV to its slabs
// (stmatrix, in the 128-byte swizzle that a TMA box of 16 x 64 has), fences
// them for the async proxy, and its lane 0 stores both slabs by TMA, whose
// boxes clip the rows past Sk and the columns past D; the tiles are
// released once the TMA has read them. So the contract adds tensor maps of
// dk and dv (boxes of 16 rows) after dout's. Wider tiles (d128) and
// dkv_partial (f32 partials from the registers) keep four maps and their
// stores from registers.

// CHECK-LABEL: gpu.func @attention_grad_dkv(
// CHECK-SAME:  parameters = [tensor_map(q, bf16, box = [128, 64], swizzle = 128), tensor_map(k, bf16, box = [128, 64], swizzle = 128), tensor_map(v, bf16, box = [128, 64], swizzle = 128), tensor_map(dout, bf16, box = [128, 64], swizzle = 128), tensor_map(dk, bf16, box = [16, 64], swizzle = 128), tensor_map(dv, bf16, box = [16, 64], swizzle = 128), q,
// CHECK:       nvvm.stmatrix
// CHECK-NOT:   vector.store
// CHECK:       nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT:  arith.constant -1
// CHECK-NEXT:  nvvm.bar.warp.sync
// CHECK:       scf.if
// CHECK:       nvvm.cp.async.bulk.tensor.global.shared.cta %arg4, %{{.*}}, box[%{{.*}}, %[[KEY:.*]], %{{.*}}, %{{.*}}]
// CHECK:       nvvm.cp.async.bulk.tensor.global.shared.cta %arg5, %{{.*}}, box[%{{.*}}, %[[KEY]], %{{.*}}, %{{.*}}]
// CHECK-NEXT:  nvvm.cp.async.bulk.commit.group
// CHECK-NEXT:  nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK:       nvvm.mbarrier.arrive
// CHECK-NOT:   vector.store
// CHECK:       gpu.return

// Head dim 40: the same boxes of 64 columns, clipped at D.
// CHECK-LABEL: gpu.func @attention_grad_dkv_0(
// CHECK-SAME:  tensor_map(dk, f16, box = [16, 64], swizzle = 128), tensor_map(dv, f16, box = [16, 64], swizzle = 128), q,
// CHECK-COUNT-2: nvvm.cp.async.bulk.tensor.global.shared.cta
// CHECK-NOT:   vector.store
// CHECK:       gpu.return

// Head dim 128: four maps, dK and dV stored from the slabs by 16-byte
// chunks.
// CHECK-LABEL: gpu.func @attention_grad_dkv_1(
// CHECK-SAME:  tensor_map(dout, bf16, box = [64, 64], swizzle = 128), q,
// CHECK-NOT:   nvvm.cp.async.bulk.tensor.global.shared.cta
// CHECK:       vector.store %{{.*}} : memref<?x?x?x128xbf16>, vector<8xbf16>
// CHECK-NOT:   nvvm.cp.async.bulk.tensor.global.shared.cta
// CHECK:       gpu.return

// Head dim 64 with dkv_partial: four maps, f32 partials from the registers.
// CHECK-LABEL: gpu.func @attention_grad_dkv_2(
// CHECK-SAME:  tensor_map(dout, bf16, box = [128, 64], swizzle = 128), q,
// CHECK-NOT:   nvvm.cp.async.bulk.tensor.global.shared.cta
// CHECK:       vector.store %{{.*}} : memref<?x?x?x?x128xf32>, vector<2xf32>
// CHECK-NOT:   nvvm.cp.async.bulk.tensor.global.shared.cta
// CHECK:       gpu.return
func.func @d64(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
               %lse: memref<?x?x?xf32>, %delta: memref<?x?x?xf32>,
               %acc: memref<?x?x?x64xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x64xbf16>) k(%k : memref<?x?x?x64xbf16>)
      v(%k : memref<?x?x?x64xbf16>) o(%q : memref<?x?x?x64xbf16>)
      dout(%q : memref<?x?x?x64xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x64xbf16>) dk(%k : memref<?x?x?x64xbf16>)
         dv(%k : memref<?x?x?x64xbf16>) delta(%delta : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x64xf32>)
  return
}

func.func @d40(%q: memref<?x?x?x40xf16>, %k: memref<?x?x?x40xf16>,
               %lse: memref<?x?x?xf32>, %delta: memref<?x?x?xf32>,
               %acc: memref<?x?x?x40xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x40xf16>) k(%k : memref<?x?x?x40xf16>)
      v(%k : memref<?x?x?x40xf16>) o(%q : memref<?x?x?x40xf16>)
      dout(%q : memref<?x?x?x40xf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x40xf16>) dk(%k : memref<?x?x?x40xf16>)
         dv(%k : memref<?x?x?x40xf16>) delta(%delta : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x40xf32>)
  return
}

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

func.func @d64_sliced(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                      %lse: memref<?x?x?xf32>, %acc: memref<?x?x?x64xf32>,
                      %partial: memref<?x?x?x?x128xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x64xbf16>) k(%k : memref<?x?x?x64xbf16>)
      v(%k : memref<?x?x?x64xbf16>) o(%q : memref<?x?x?x64xbf16>)
      dout(%q : memref<?x?x?x64xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x64xbf16>) dk(%k : memref<?x?x?x64xbf16>)
         dv(%k : memref<?x?x?x64xbf16>) delta(%lse : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x64xf32>)
         dkv_partial(%partial : memref<?x?x?x?x128xf32>)
  return
}
