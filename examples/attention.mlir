// The main job's attention op: causal grouped-query attention (32 query heads
// sharing 8 key/value heads), bf16, head dim 128, with the log-sum-exp.
// Batch and sequence lengths are dynamic: one compiled kernel serves them all.
//
//   fmha-opt examples/attention.mlir                         # verify, print
//   fmha-opt examples/attention.mlir --fmha-to-ptx=chip=sm_90a
func.func @gqa_causal_attention(%q: memref<?x32x?x128xbf16>,
                                %k: memref<?x8x?x128xbf16>,
                                %v: memref<?x8x?x128xbf16>,
                                %o: memref<?x32x?x128xbf16>,
                                %lse: memref<?x32x?xf32>) {
  fmha.attention q(%q : memref<?x32x?x128xbf16>)
                 k(%k : memref<?x8x?x128xbf16>)
                 v(%v : memref<?x8x?x128xbf16>)
              -> o(%o : memref<?x32x?x128xbf16>)
                 lse(%lse : memref<?x32x?xf32>) causal
  return
}
