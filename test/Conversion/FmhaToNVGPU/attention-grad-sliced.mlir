// RUN: fmha-opt %s -convert-fmha-to-nvgpu=chip=sm_90a | FileCheck %s
// RUN: not fmha-opt %s -convert-fmha-to-nvgpu=chip=sm_80 2>&1 | FileCheck %s --check-prefix=SM80

// With dkv_partial, the sm_90a backward slices each group's query heads:
// the dk/dv kernel's grid has a (KV head, slice) pair per y, its CTA walks
// its slice's heads (dkv_partial's first dimension: the slice count) and
// writes its f32 dK (times scale) and dV into its slice's rows, dk's D
// columns then dv's Dv, 8 bytes a lane from the accumulators; a last
// kernel sums the slices in order into dk and dv. Beside dq_order, the
// partial is the operand after it. sm_80 has no such kernel: refused.

// CHECK-LABEL: gpu.func @attention_grad_delta(
// CHECK-SAME: operands = [q, k, v, o, dout, lse, dq, dk, dv, delta, dq_accum, dkv_partial]
// CHECK: gpu.func @attention_grad_dkv(
// CHECK-SAME: grid = [ceildiv(k[2], 128), k[1] * dkv_partial[0], min(k[0], 65535)]
// CHECK: memref.dim %{{.+}}, %{{.+}} : memref<?x?x?x?x256xf32>
// CHECK: vector.store %{{.+}}, %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] {alignment = 8 : i64} : memref<?x?x?x?x256xf32>, vector<2xf32>
// CHECK: gpu.func @attention_grad_dq_convert(
// CHECK: gpu.func @attention_grad_dkv_reduce(
// CHECK-SAME: grid = [min(ceildiv(dk[2], 16) * dk[1] * dk[0], 2147483647), 1, 1]
// CHECK: scf.for
// CHECK: vector.load %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] {alignment = 16 : i64} : memref<?x?x?x?x256xf32>, vector<8xf32>
// CHECK: arith.addf %{{.+}}, %{{.+}} : vector<8xf32>
// CHECK: arith.truncf %{{.+}} : vector<8xf32> to vector<8xbf16>

// CHECK-LABEL: gpu.func @attention_grad_delta_0(
// CHECK-SAME: operands = [q, k, v, o, dout, lse, dq, dk, dv, delta, dq_accum, dq_order, dkv_partial]
// CHECK: gpu.func @attention_grad_dkv_0(
// CHECK-SAME: grid = [ceildiv(k[2], 128), k[1] * dkv_partial[0], min(k[0], 65535)]
// CHECK: gpu.func @attention_grad_dkv_reduce_0(

// SM80: error: 'fmha.attention_grad' op dkv_partial needs chip sm_90a (its one-pass kernel slices a group's query heads), got sm_80

func.func @grad_sliced(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                       %lse: memref<?x?x?xf32>, %acc: memref<?x?x?x128xf32>,
                       %partial: memref<?x?x?x?x256xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x128xbf16>) k(%k : memref<?x?x?x128xbf16>)
      v(%k : memref<?x?x?x128xbf16>) o(%q : memref<?x?x?x128xbf16>)
      dout(%q : memref<?x?x?x128xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x128xbf16>) dk(%k : memref<?x?x?x128xbf16>)
         dv(%k : memref<?x?x?x128xbf16>) delta(%lse : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x128xf32>)
         dkv_partial(%partial : memref<?x?x?x?x256xf32>) causal
  return
}

func.func @grad_sliced_ordered(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                               %lse: memref<?x?x?xf32>, %acc: memref<?x?x?x128xf32>,
                               %order: memref<?x?x?xi32>,
                               %partial: memref<?x?x?x?x256xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x128xbf16>) k(%k : memref<?x?x?x128xbf16>)
      v(%k : memref<?x?x?x128xbf16>) o(%q : memref<?x?x?x128xbf16>)
      dout(%q : memref<?x?x?x128xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x128xbf16>) dk(%k : memref<?x?x?x128xbf16>)
         dv(%k : memref<?x?x?x128xbf16>) delta(%lse : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x128xf32>) dq_order(%order : memref<?x?x?xi32>)
         dkv_partial(%partial : memref<?x?x?x?x256xf32>)
  return
}
