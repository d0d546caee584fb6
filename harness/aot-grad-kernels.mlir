// The backward kernels scripts/gpu/aot_backward.py checks on the GPU
// machine against torch's fp32 autograd (scripts/gpu/aot.sh):
// scripts/gpu/pack-aot.sh compiles them with fmha-aot --name=fmha_aot_grad
// twice, for sm_90a (the Hopper kernels) and for sm_90 (lowered for chip
// sm_80: the mma.sync kernels, on the same GPU). Every size but D and every
// stride is dynamic but dq_accum's rows, which its contract makes dense.

// Deterministic (dq by blocks of queries), causal.
func.func @grad_bf16_d128_causal(
    %q: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %k: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %v: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %o: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %do: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>,
    %lse: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, %dq: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %dk: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %dv: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>,
    %delta: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>) {
  fmha.attention_grad q(%q : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) k(%k : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>)
      v(%v : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) o(%o : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>)
      dout(%do : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) lse(%lse : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>)
   -> dq(%dq : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) dk(%dk : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>)
      dv(%dv : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) delta(%delta : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>) causal
  return
}

// With dq_accum (FlashAttention-3's kernel on sm_90a), causal.
func.func @grad_bf16_d128_causal_accum(
    %q: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %k: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %v: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %o: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %do: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>,
    %lse: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, %dq: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %dk: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %dv: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>,
    %delta: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, %acc: memref<?x?x?x128xf32, strided<[?, ?, 128, 1], offset: ?>>) {
  fmha.attention_grad q(%q : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) k(%k : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>)
      v(%v : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) o(%o : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>)
      dout(%do : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) lse(%lse : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>)
   -> dq(%dq : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) dk(%dk : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>)
      dv(%dv : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) delta(%delta : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>)
      dq_accum(%acc : memref<?x?x?x128xf32, strided<[?, ?, 128, 1], offset: ?>>) causal
  return
}

// f16, head dim 64, a causal window of 32 keys, with dq_accum.
func.func @grad_f16_d64_window_accum(
    %q: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>, %k: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>, %v: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>, %o: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>, %do: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>,
    %lse: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, %dq: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>, %dk: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>, %dv: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>,
    %delta: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, %acc: memref<?x?x?x64xf32, strided<[?, ?, 64, 1], offset: ?>>) {
  fmha.attention_grad q(%q : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>) k(%k : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>)
      v(%v : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>) o(%o : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>)
      dout(%do : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>) lse(%lse : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>)
   -> dq(%dq : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>) dk(%dk : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>)
      dv(%dv : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>) delta(%delta : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>)
      dq_accum(%acc : memref<?x?x?x64xf32, strided<[?, ?, 64, 1], offset: ?>>) causal {window = array<i64: 32, 0>}
  return
}

// f16, head dim 64, deterministic.
func.func @grad_f16_d64(
    %q: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>, %k: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>, %v: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>, %o: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>, %do: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>,
    %lse: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, %dq: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>, %dk: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>, %dv: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>,
    %delta: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>) {
  fmha.attention_grad q(%q : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>) k(%k : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>)
      v(%v : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>) o(%o : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>)
      dout(%do : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>) lse(%lse : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>)
   -> dq(%dq : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>) dk(%dk : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>)
      dv(%dv : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>) delta(%delta : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>)
  return
}

// Head dim 256 (delta, dq, dk, dv), a scale of 0.3.
func.func @grad_bf16_d256_scale(
    %q: memref<?x?x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>, %k: memref<?x?x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>, %v: memref<?x?x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>, %o: memref<?x?x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>, %do: memref<?x?x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>,
    %lse: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, %dq: memref<?x?x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>, %dk: memref<?x?x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>, %dv: memref<?x?x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>,
    %delta: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>) {
  fmha.attention_grad q(%q : memref<?x?x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>) k(%k : memref<?x?x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>)
      v(%v : memref<?x?x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>) o(%o : memref<?x?x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>)
      dout(%do : memref<?x?x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>) lse(%lse : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>)
   -> dq(%dq : memref<?x?x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>) dk(%dk : memref<?x?x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>)
      dv(%dv : memref<?x?x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>) delta(%delta : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>) {scale = 0.3 : f32}
  return
}
