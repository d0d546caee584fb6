func.func @with_page_table(%q: memref<?x8x?x64xbf16>, %k: memref<?x8x16x64xbf16>,
                           %o: memref<?x8x?x64xbf16>, %t: memref<?x?xi32>) {
  fmha.attention q(%q : memref<?x8x?x64xbf16>) k(%k : memref<?x8x16x64xbf16>)
                 v(%k : memref<?x8x16x64xbf16>) -> o(%o : memref<?x8x?x64xbf16>)
                 page_table(%t : memref<?x?xi32>)
  return
}
