// REQUIRES: ptxas
// RUN: fmha-compile %s --chip=sm_90a --emit=ptx -o %t.ptx
// RUN: FileCheck %s --check-prefix=PTX --input-file=%t.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %t.ptx -o %t.cubin > %t.log 2>&1
// RUN: not grep -E "([5-9][0-9]|[1-9][0-9][0-9]+) bytes (stack frame|spill)" %t.log

// The backward that slices each group's query heads (dkv_partial)
// compiles as the unsliced one does (attention-grad-spills.mlir): its
// epilogue stores dK and dV as f32 pairs straight from the accumulators,
// and the sum of the slices is a row kernel of its own. At each geometry:
// tiles of 64 columns, 128 (causal), a balanced split (192/128) and the
// split head dim (256).

// PTX: .entry attention_grad_dkv(
// PTX: st.global.v2.b32
// PTX: .entry attention_grad_dkv_reduce(
// PTX: ld.global.v4.b32

func.func @d64(%q: memref<?x?x?x64xf16>, %v: memref<?x?x?x64xf16>,
    %lse: memref<?x?x?xf32>, %acc: memref<?x?x?x64xf32>,
    %partial: memref<?x?x?x?x128xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x64xf16>) k(%q : memref<?x?x?x64xf16>)
      v(%v : memref<?x?x?x64xf16>) o(%v : memref<?x?x?x64xf16>)
      dout(%v : memref<?x?x?x64xf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x64xf16>) dk(%q : memref<?x?x?x64xf16>)
         dv(%v : memref<?x?x?x64xf16>) delta(%lse : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x64xf32>)
         dkv_partial(%partial : memref<?x?x?x?x128xf32>)
  return
}

func.func @d128_causal(%q: memref<?x?x?x128xbf16>, %v: memref<?x?x?x128xbf16>,
    %lse: memref<?x?x?xf32>, %acc: memref<?x?x?x128xf32>,
    %partial: memref<?x?x?x?x256xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x128xbf16>) k(%q : memref<?x?x?x128xbf16>)
      v(%v : memref<?x?x?x128xbf16>) o(%v : memref<?x?x?x128xbf16>)
      dout(%v : memref<?x?x?x128xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x128xbf16>) dk(%q : memref<?x?x?x128xbf16>)
         dv(%v : memref<?x?x?x128xbf16>) delta(%lse : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x128xf32>)
         dkv_partial(%partial : memref<?x?x?x?x256xf32>) causal
  return
}

func.func @d192_dv128(%q: memref<?x?x?x192xbf16>, %v: memref<?x?x?x128xbf16>,
    %lse: memref<?x?x?xf32>, %acc: memref<?x?x?x192xf32>,
    %partial: memref<?x?x?x?x320xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x192xbf16>) k(%q : memref<?x?x?x192xbf16>)
      v(%v : memref<?x?x?x128xbf16>) o(%v : memref<?x?x?x128xbf16>)
      dout(%v : memref<?x?x?x128xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x192xbf16>) dk(%q : memref<?x?x?x192xbf16>)
         dv(%v : memref<?x?x?x128xbf16>) delta(%lse : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x192xf32>)
         dkv_partial(%partial : memref<?x?x?x?x320xf32>)
  return
}

func.func @d256(%q: memref<?x?x?x256xbf16>, %v: memref<?x?x?x256xbf16>,
    %lse: memref<?x?x?xf32>, %acc: memref<?x?x?x256xf32>,
    %partial: memref<?x?x?x?x512xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x256xbf16>) k(%q : memref<?x?x?x256xbf16>)
      v(%v : memref<?x?x?x256xbf16>) o(%v : memref<?x?x?x256xbf16>)
      dout(%v : memref<?x?x?x256xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x256xbf16>) dk(%q : memref<?x?x?x256xbf16>)
         dv(%v : memref<?x?x?x256xbf16>) delta(%lse : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x256xf32>)
         dkv_partial(%partial : memref<?x?x?x?x512xf32>) causal
  return
}
