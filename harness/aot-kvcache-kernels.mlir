// The KV-cache kernels (and a merge of split-KV states) that
// scripts/gpu/aot_kvcache.py checks on the GPU machine
// against torch per sequence (scripts/gpu/aot.sh): scripts/gpu/pack-aot.sh
// compiles them with fmha-aot --name=fmha_aot_kv for sm_90a and for sm_90
// (lowered for chip sm_80). Every size but D (and a page's rows) and every
// stride is dynamic.

// A paged cache of 64-row pages, filled to per-sequence lengths, with
// attention sinks and the LSE, causal.
func.func @paged64_sinks_causal(
    %q: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %k: memref<?x?x64x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %v: memref<?x?x64x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %o: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %lse: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, %sinks: memref<?x?xf32, strided<[?, ?], offset: ?>>,
    %lengths: memref<?xi32>, %table: memref<?x?xi32>) {
  fmha.attention q(%q : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) k(%k : memref<?x?x64x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) v(%v : memref<?x?x64x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) -> o(%o : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>)
                 lse(%lse : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>) sinks(%sinks : memref<?x?xf32, strided<[?, ?], offset: ?>>)
                 key_lengths(%lengths : memref<?xi32>)
                 page_table(%table : memref<?x?xi32>) causal
  return
}

// A contiguous cache filled to per-sequence lengths, f16 d64, with sinks.
func.func @lengths_sinks_f16_d64(
    %q: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>, %k: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>, %v: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>, %o: memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>, %sinks: memref<?x?xf32, strided<[?, ?], offset: ?>>,
    %lengths: memref<?xi32>) {
  fmha.attention q(%q : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>) k(%k : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>) v(%v : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>) -> o(%o : memref<?x?x?x64xf16, strided<[?, ?, ?, 1], offset: ?>>)
                 sinks(%sinks : memref<?x?xf32, strided<[?, ?], offset: ?>>) key_lengths(%lengths : memref<?xi32>)
  return
}

// Speculative decoding over 16-row pages: a GQA group's heads packed into
// one tile's rows.
func.func @paged16_packed_causal(
    %q: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %k: memref<?x?x16x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %v: memref<?x?x16x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %o: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %lse: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>,
    %lengths: memref<?xi32>, %table: memref<?x?xi32>) {
  fmha.attention q(%q : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) k(%k : memref<?x?x16x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) v(%v : memref<?x?x16x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) -> o(%o : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>)
                 lse(%lse : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>) key_lengths(%lengths : memref<?xi32>)
                 page_table(%table : memref<?x?xi32>) causal pack_query_heads
  return
}

// Split-KV decode over a cache filled to per-sequence lengths: each key
// split's partial state, o and lse [splits x B, ...], then their merge.
func.func @split_lengths_causal(
    %q: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %k: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %v: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %o: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %lse: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>,
    %lengths: memref<?xi32>) {
  fmha.attention q(%q : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) k(%k : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) v(%v : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) -> o(%o : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>)
                 lse(%lse : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>) key_lengths(%lengths : memref<?xi32>)
                 causal split_keys
  return
}

func.func @merge_d128(%outs: memref<?x?x?x?x128xbf16, strided<[?, ?, ?, ?, 1], offset: ?>>, %lses: memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>, %o: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %lse: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>) {
  fmha.merge_attention outs(%outs : memref<?x?x?x?x128xbf16, strided<[?, ?, ?, ?, 1], offset: ?>>) lses(%lses : memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>)
                    -> o(%o : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) lse(%lse : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>)
  return
}

// Variable-length sequences packed without padding (query_offsets,
// key_offsets, max_query_length), causal, with the LSE.
func.func @varlen_causal(
    %q: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %k: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %v: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %o: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %lse: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>,
    %cq: memref<?xi32>, %ck: memref<?xi32>, %m: index) {
  fmha.attention q(%q : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) k(%k : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) v(%v : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) -> o(%o : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>)
                 lse(%lse : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>) query_offsets(%cq : memref<?xi32>)
                 key_offsets(%ck : memref<?xi32>) max_query_length(%m)
                 causal
  return
}
