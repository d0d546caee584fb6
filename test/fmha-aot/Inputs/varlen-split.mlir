// A split decode of packed sequences, as the JIT launches it: each
// sequence's keys split S ways, the states merged over the sequences' rows.
func.func @varlen_split(%q: memref<1x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                        %parts: memref<?x?x?x128xbf16>, %lses: memref<?x?x?xf32>,
                        %cq: memref<?xi32>, %m: index) {
  fmha.attention q(%q : memref<1x?x?x128xbf16>) k(%k : memref<?x?x?x128xbf16>)
                 v(%k : memref<?x?x?x128xbf16>) -> o(%parts : memref<?x?x?x128xbf16>)
                 lse(%lses : memref<?x?x?xf32>)
                 query_offsets(%cq : memref<?xi32>) max_query_length(%m) split_keys
  return
}
