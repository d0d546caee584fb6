func.func @with_sinks(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>,
                      %s: memref<8x?xf32>) {
  fmha.attention q(%q : memref<?x8x?x64xbf16>) k(%q : memref<?x8x?x64xbf16>)
                 v(%q : memref<?x8x?x64xbf16>) -> o(%o : memref<?x8x?x64xbf16>)
                 sinks(%s : memref<8x?xf32>)
  return
}
