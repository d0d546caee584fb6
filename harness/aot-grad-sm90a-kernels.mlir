// The backwards scripts/gpu/aot_backward.py checks on the GPU machine beside
// harness/aot-grad-kernels.mlir's, for sm_90a only, which sm_80 refuses: v's
// head dim apart from q's (DeepSeek's 192/128) and dq_order (the
// deterministic one-pass kernel). scripts/gpu/pack-aot.sh compiles them with
// fmha-aot --name=fmha_aot_grad --archs=sm_90a into grad-only-sm_90a.

// Causal, with dq_accum: q, k, dq and dk over 192 columns, v, o, dout and
// dv over 128.
func.func @grad_bf16_d192_dv128_causal_accum(
    %q: memref<?x?x?x192xbf16, strided<[?, ?, ?, 1], offset: ?>>, %k: memref<?x?x?x192xbf16, strided<[?, ?, ?, 1], offset: ?>>, %v: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %o: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %do: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>,
    %lse: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, %dq: memref<?x?x?x192xbf16, strided<[?, ?, ?, 1], offset: ?>>, %dk: memref<?x?x?x192xbf16, strided<[?, ?, ?, 1], offset: ?>>, %dv: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>,
    %delta: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, %acc: memref<?x?x?x192xf32, strided<[?, ?, 192, 1], offset: ?>>) {
  fmha.attention_grad q(%q : memref<?x?x?x192xbf16, strided<[?, ?, ?, 1], offset: ?>>) k(%k : memref<?x?x?x192xbf16, strided<[?, ?, ?, 1], offset: ?>>)
      v(%v : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) o(%o : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>)
      dout(%do : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) lse(%lse : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>)
   -> dq(%dq : memref<?x?x?x192xbf16, strided<[?, ?, ?, 1], offset: ?>>) dk(%dk : memref<?x?x?x192xbf16, strided<[?, ?, ?, 1], offset: ?>>)
      dv(%dv : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) delta(%delta : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>)
      dq_accum(%acc : memref<?x?x?x192xf32, strided<[?, ?, 192, 1], offset: ?>>) causal
  return
}

// Deterministic in one pass (dq_order), bf16 d128, not causal.
func.func @grad_bf16_d128_ordered(
    %q: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %k: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %v: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %o: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %do: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>,
    %lse: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, %dq: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %dk: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %dv: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>,
    %delta: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, %acc: memref<?x?x?x128xf32, strided<[?, ?, 128, 1], offset: ?>>,
    %order: memref<?x?x?xi32, strided<[?, ?, ?], offset: ?>>) {
  fmha.attention_grad q(%q : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) k(%k : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>)
      v(%v : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) o(%o : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>)
      dout(%do : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) lse(%lse : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>)
   -> dq(%dq : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) dk(%dk : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>)
      dv(%dv : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) delta(%delta : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>)
      dq_accum(%acc : memref<?x?x?x128xf32, strided<[?, ?, 128, 1], offset: ?>>)
      dq_order(%order : memref<?x?x?xi32, strided<[?, ?, ?], offset: ?>>)
  return
}

// Deterministic in one pass, f16 d64 (128-query blocks), a causal window of
// 100 keys.
func.func @grad_f16_d64_window_ordered(
    %q: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>, %k: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>, %v: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>, %o: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>, %do: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>,
    %lse: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, %dq: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>, %dk: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>, %dv: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>,
    %delta: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, %acc: memref<?x?x?x64xf32, strided<[?, ?, 64, 1], offset: ?>>,
    %order: memref<?x?x?xi32, strided<[?, ?, ?], offset: ?>>) {
  fmha.attention_grad q(%q : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>) k(%k : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>)
      v(%v : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>) o(%o : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>)
      dout(%do : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>) lse(%lse : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>)
   -> dq(%dq : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>) dk(%dk : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>)
      dv(%dv : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>) delta(%delta : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>)
      dq_accum(%acc : memref<?x?x?x64xf32, strided<[?, ?, 64, 1], offset: ?>>)
      dq_order(%order : memref<?x?x?xi32, strided<[?, ?, ?], offset: ?>>) causal {window = array<i64: 100, 0>}
  return
}
