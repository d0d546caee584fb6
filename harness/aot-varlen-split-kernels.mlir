// The split decode of packed sequences that scripts/gpu/aot_kvcache.py
// checks on the GPU machine against torch per sequence (scripts/gpu/aot.sh):
// scripts/gpu/pack-aot.sh compiles them with fmha-aot --name=fmha_aot_kv
// for sm_90a only (sm_80 refuses split_keys with query_offsets). Each
// sequence's packed keys split args.splits ways, the states [splits, Hq,
// total_q, D] merged over the sequences' rows. Every size but D and every
// stride is dynamic.

func.func @varlen_split(
    %q: memref<1x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %k: memref<1x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %v: memref<1x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %o: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %lse: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>,
    %cq: memref<?xi32>, %ck: memref<?xi32>, %m: index) {
  fmha.attention q(%q : memref<1x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) k(%k : memref<1x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) v(%v : memref<1x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) -> o(%o : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>)
                 lse(%lse : memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>) query_offsets(%cq : memref<?xi32>)
                 key_offsets(%ck : memref<?xi32>) max_query_length(%m) split_keys
  return
}

func.func @merge_varlen(%outs: memref<?x1x?x?x128xbf16, strided<[?, ?, ?, ?, 1], offset: ?>>, %lses: memref<?x1x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>, %o: memref<1x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>, %lse: memref<1x?x?xf32, strided<[?, ?, ?], offset: ?>>, %cq: memref<?xi32>) {
  fmha.merge_attention outs(%outs : memref<?x1x?x?x128xbf16, strided<[?, ?, ?, ?, 1], offset: ?>>) lses(%lses : memref<?x1x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>)
                    -> o(%o : memref<1x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>) lse(%lse : memref<1x?x?xf32, strided<[?, ?, ?], offset: ?>>)
                    query_offsets(%cq : memref<?xi32>)
  return
}
