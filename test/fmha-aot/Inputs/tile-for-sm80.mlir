// An attention op whose tile was tuned for sm_80: fmha-aot must refuse to
// build it for another chip rather than pick a tile nobody measured.
func.func @tuned(%q: memref<?x4x?x64xf16>, %k: memref<?x4x?x64xf16>,
                 %v: memref<?x4x?x64xf16>, %o: memref<?x4x?x64xf16>) {
  fmha.attention q(%q : memref<?x4x?x64xf16>) k(%k : memref<?x4x?x64xf16>)
                 v(%v : memref<?x4x?x64xf16>) -> o(%o : memref<?x4x?x64xf16>)
                 {tile = #fmha.tile<sm_80, block_m = 128, block_n = 64, warps = 4, stages = 1>}
  return
}
