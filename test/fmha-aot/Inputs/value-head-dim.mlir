func.func @with_value_head_dim(%q: memref<?x8x?x192xbf16>, %k: memref<?x8x?x192xbf16>,
                               %v: memref<?x8x?x128xbf16>, %o: memref<?x8x?x128xbf16>) {
  fmha.attention q(%q : memref<?x8x?x192xbf16>) k(%k : memref<?x8x?x192xbf16>)
                 v(%v : memref<?x8x?x128xbf16>) -> o(%o : memref<?x8x?x128xbf16>) causal
  return
}
