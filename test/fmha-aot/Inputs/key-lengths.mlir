func.func @with_key_lengths(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>,
                            %l: memref<?xi32>) {
  fmha.attention q(%q : memref<?x8x?x64xbf16>) k(%q : memref<?x8x?x64xbf16>)
                 v(%q : memref<?x8x?x64xbf16>) -> o(%o : memref<?x8x?x64xbf16>)
                 key_lengths(%l : memref<?xi32>)
  return
}
