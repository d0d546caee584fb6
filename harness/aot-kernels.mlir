// The kernels fmha-runner-aot checks against kernels-ref on the GPU machine
// (scripts/gpu/aot.sh): fmha-aot --name=fmha_aot compiles them
// (scripts/gpu/pack-aot.sh), the `aot` candidate picks the one that computes
// each problem. Every size but D and every stride is dynamic, so one kernel
// serves BHSD and BSHD, GQA and odd lengths; the scale is the default
// 1/sqrt(D), as the runner's.

// Non-causal, no LSE.
func.func @attention_bf16_d128(
    %q: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %k: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>,
    %v: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %o: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) {
  fmha.attention q(%q : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) k(%k : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>)
      v(%v : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) -> o(%o : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>)
  return
}

// Causal with the LSE.
func.func @attention_bf16_d128_causal_lse(
    %q: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %k: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>,
    %v: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %o: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>,
    %lse: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>) {
  fmha.attention q(%q : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) k(%k : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>)
      v(%v : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) -> o(%o : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>)
      lse(%lse : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>) causal
  return
}

// f16, head dim 64.
func.func @attention_f16_d64_causal(
    %q: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>, %k: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>,
    %v: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>, %o: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>) {
  fmha.attention q(%q : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>) k(%k : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>)
      v(%v : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>) -> o(%o : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>) causal
  return
}

// A causal sliding window of 32 keys, with the LSE.
func.func @attention_f16_d128_window(
    %q: memref<?x?x?x128xf16, strided<[?, ?, ?, 1], offset: ?>>, %k: memref<?x?x?x128xf16, strided<[?, ?, ?, 1], offset: ?>>,
    %v: memref<?x?x?x128xf16, strided<[?, ?, ?, 1], offset: ?>>, %o: memref<?x?x?x128xf16, strided<[?, ?, ?, 1], offset: ?>>,
    %lse: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>) {
  fmha.attention q(%q : memref<?x?x?x128xf16, strided<[?, ?, ?, 1], offset: ?>>) k(%k : memref<?x?x?x128xf16, strided<[?, ?, ?, 1], offset: ?>>)
      v(%v : memref<?x?x?x128xf16, strided<[?, ?, ?, 1], offset: ?>>) -> o(%o : memref<?x?x?x128xf16, strided<[?, ?, ?, 1], offset: ?>>)
      lse(%lse : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>) causal {window = array<i64: 32, 0>}
  return
}

// Head dim 256: the most shared memory.
func.func @attention_bf16_d256(
    %q: memref<?x?x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>, %k: memref<?x?x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>,
    %v: memref<?x?x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>, %o: memref<?x?x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>) {
  fmha.attention q(%q : memref<?x?x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>) k(%k : memref<?x?x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>)
      v(%v : memref<?x?x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>) -> o(%o : memref<?x?x?x256xbf16, strided<[?, ?, ?, 1], offset: ?>>)
  return
}

// Two streams with valid lengths, resampled linearly.
func.func @resample_linear_bf16(%t0: memref<?x?xf32>, %x0: memref<?x?x32xbf16>,
    %n0: memref<?xi32>, %t1: memref<?x?xf32>, %x1: memref<?x?x5xbf16>,
    %n1: memref<?xi32>, %targets: memref<?x?xf32>, %out: memref<?x?x37xbf16>) {
  fmha.resample linear times(%t0, %t1 : memref<?x?xf32>, memref<?x?xf32>)
      values(%x0, %x1 : memref<?x?x32xbf16>, memref<?x?x5xbf16>)
      lengths(%n0, %n1 : memref<?xi32>, memref<?xi32>)
      targets(%targets : memref<?x?xf32>) -> out(%out : memref<?x?x37xbf16>)
  return
}
