// RUN: fmha-opt %s -convert-fmha-to-nvgpu=chip=sm_90a | FileCheck %s

// sm_90a's dk/dv epilogue on slabs of 64 columns: each consumer warp
// writes its rows of dK and dV to its slabs (stmatrix), then reads all of
// its lane's 16-byte chunks (8 at head dim 64: 4 of dK, 4 of dV) before it
// stores the first, each store one predicated instruction (the key's row
// check), not a branch that ptxas would sink the next chunk's read into
// (backward-notes v57). Wider slabs (d128) read and store in turn.

// CHECK-LABEL: gpu.func @attention_grad_dkv(
// CHECK:       nvvm.stmatrix
// CHECK-NOT:   st.global
// CHECK-COUNT-8: llvm.load %{{.*}} : !llvm.ptr<3> -> vector<4xi32>
// CHECK-NOT:   scf.if
// CHECK-COUNT-8: llvm.inline_asm has_side_effects "{ .reg .pred p; setp.ne.u32 p, $0, 0; @p st.global.v4.b32 [$1], {$2, $3, $4, $5}; }"
// CHECK-NOT:   st.global.v4.b32
// CHECK-LABEL: gpu.func @attention_grad_dkv_0(
// CHECK-NOT:   st.global.v4.b32
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
