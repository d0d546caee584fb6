// RUN: fmha-compile %s --chip=sm_80 --emit=ptx | FileCheck %s

// How the sm_80 dk/dv kernel finds a streamed block's query head and block
// (Sm80/AttentionGradToGPUSm80.cpp, buildDkv's locate): the step divided
// by the blocks a head. Where the warps are one column (head dim 80 here)
// by InvariantDivisor's multiply-high, its magic number derived by a
// restoring division (clz, no div) before the loop, so that nothing in the
// kernel divides after it; over the 4 x 2 grid of warps (head dims 64, 96
// and 128; 128 here) by div.u32 and rem.u32 (measured faster there:
// backward-notes v40).

// CHECK-LABEL: .entry attention_grad_dkv(
// CHECK: clz.b32
// CHECK-NOT: {{div|rem}}.u{{32|64}}
// CHECK: ret;
// CHECK-LABEL: .entry attention_grad_dkv_0(
// CHECK-NOT: clz.b32
// CHECK: div.u32
// CHECK: ret;

func.func @d80(%q: memref<?x?x?x80xbf16>, %lse: memref<?x?x?xf32>,
               %acc: memref<?x?x?x80xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x80xbf16>) k(%q : memref<?x?x?x80xbf16>)
                      v(%q : memref<?x?x?x80xbf16>) o(%q : memref<?x?x?x80xbf16>)
                      dout(%q : memref<?x?x?x80xbf16>) lse(%lse : memref<?x?x?xf32>)
                   -> dq(%q : memref<?x?x?x80xbf16>) dk(%q : memref<?x?x?x80xbf16>)
                      dv(%q : memref<?x?x?x80xbf16>) delta(%lse : memref<?x?x?xf32>)
                      dq_accum(%acc : memref<?x?x?x80xf32>) causal
  return
}

func.func @d128(%q: memref<?x?x?x128xbf16>, %lse: memref<?x?x?xf32>,
                %acc: memref<?x?x?x128xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x128xbf16>) k(%q : memref<?x?x?x128xbf16>)
                      v(%q : memref<?x?x?x128xbf16>) o(%q : memref<?x?x?x128xbf16>)
                      dout(%q : memref<?x?x?x128xbf16>) lse(%lse : memref<?x?x?xf32>)
                   -> dq(%q : memref<?x?x?x128xbf16>) dk(%q : memref<?x?x?x128xbf16>)
                      dv(%q : memref<?x?x?x128xbf16>) delta(%lse : memref<?x?x?xf32>)
                      dq_accum(%acc : memref<?x?x?x128xf32>) causal
  return
}
