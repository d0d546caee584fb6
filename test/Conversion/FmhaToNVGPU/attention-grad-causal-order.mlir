// RUN: fmha-opt %s -convert-fmha-to-nvgpu=chip=sm_90a | FileCheck %s

// sm_90a's backward under a causal mask (tiles of 64 and 128 columns
// here; 192 and 256 alike): its dk/dv kernel's CTAs take their key
// blocks in another order than the grid's (getLongestFirstCta: longest
// first in sections of heads that fill a wave), folding the grid's three
// axes into one count; each role derives it after its setmaxnreg.
// Without a causal mask, or with a window, the grid's order stands: the
// CTA reads its block index and nothing of the grid but the batch stride
// (gridDim.z).

// CHECK: gpu.func @attention_grad_dkv(
// CHECK: nvvm.setmaxregister decrease 24
// CHECK: gpu.grid_dim  x
// CHECK: gpu.grid_dim  y
// CHECK: gpu.grid_dim  z
// CHECK: nvvm.setmaxregister increase 240
// CHECK: gpu.grid_dim  x
// CHECK: gpu.func @attention_grad_dkv_0(
// CHECK: nvvm.setmaxregister decrease 24
// CHECK: gpu.grid_dim  x
// CHECK: gpu.grid_dim  y
// CHECK: gpu.grid_dim  z
// CHECK: nvvm.setmaxregister increase 240
// CHECK: gpu.grid_dim  x
// CHECK: gpu.func @attention_grad_dkv_1(
// CHECK-NOT: gpu.grid_dim  x
// CHECK: gpu.func @attention_grad_dq_convert_1(
// CHECK: gpu.func @attention_grad_dkv_2(
// CHECK-NOT: gpu.grid_dim  x
// CHECK: gpu.func @attention_grad_dq_convert_2(

func.func @d128_causal(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                       %lse: memref<?x?x?xf32>, %acc: memref<?x?x?x128xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x128xbf16>) k(%k : memref<?x?x?x128xbf16>)
      v(%k : memref<?x?x?x128xbf16>) o(%q : memref<?x?x?x128xbf16>)
      dout(%q : memref<?x?x?x128xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x128xbf16>) dk(%k : memref<?x?x?x128xbf16>)
         dv(%k : memref<?x?x?x128xbf16>) delta(%lse : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x128xf32>) causal
  return
}

func.func @d64_causal(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                      %lse: memref<?x?x?xf32>, %acc: memref<?x?x?x64xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x64xbf16>) k(%k : memref<?x?x?x64xbf16>)
      v(%k : memref<?x?x?x64xbf16>) o(%q : memref<?x?x?x64xbf16>)
      dout(%q : memref<?x?x?x64xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x64xbf16>) dk(%k : memref<?x?x?x64xbf16>)
         dv(%k : memref<?x?x?x64xbf16>) delta(%lse : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x64xf32>) causal
  return
}

func.func @d128(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                %lse: memref<?x?x?xf32>, %acc: memref<?x?x?x128xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x128xbf16>) k(%k : memref<?x?x?x128xbf16>)
      v(%k : memref<?x?x?x128xbf16>) o(%q : memref<?x?x?x128xbf16>)
      dout(%q : memref<?x?x?x128xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x128xbf16>) dk(%k : memref<?x?x?x128xbf16>)
         dv(%k : memref<?x?x?x128xbf16>) delta(%lse : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x128xf32>)
  return
}

func.func @d128_causal_window(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                              %lse: memref<?x?x?xf32>, %acc: memref<?x?x?x128xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x128xbf16>) k(%k : memref<?x?x?x128xbf16>)
      v(%k : memref<?x?x?x128xbf16>) o(%q : memref<?x?x?x128xbf16>)
      dout(%q : memref<?x?x?x128xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x128xbf16>) dk(%k : memref<?x?x?x128xbf16>)
         dv(%k : memref<?x?x?x128xbf16>) delta(%lse : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x128xf32>) causal {window = array<i64: 256, 0>}
  return
}
