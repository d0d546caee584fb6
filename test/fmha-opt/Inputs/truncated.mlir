func.func @cut(%q: memref<?x32x?x128xbf16>, %k: memref<?x8x?x128xbf16>) {
  fmha.attention q(%q : memref<?x32x?x128xbf16>) k(%k
