func.func @with_query_offsets(%q: memref<1x8x?x64xbf16>, %k: memref<1x8x?x64xbf16>,
                              %cq: memref<?xi32>, %ck: memref<?xi32>, %m: index) {
  fmha.attention q(%q : memref<1x8x?x64xbf16>) k(%k : memref<1x8x?x64xbf16>)
                 v(%k : memref<1x8x?x64xbf16>) -> o(%q : memref<1x8x?x64xbf16>)
                 query_offsets(%cq : memref<?xi32>) key_offsets(%ck : memref<?xi32>)
                 max_query_length(%m) causal
  return
}
