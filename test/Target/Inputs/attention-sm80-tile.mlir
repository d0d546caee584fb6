// An op whose tile names sm_80, compiled for sm_90a: refused, never rebuilt
// silently for the other chip (used by errors.test).
func.func @tiled_for_sm80(%q: memref<?x?x?x64xbf16>) {
  fmha.attention q(%q : memref<?x?x?x64xbf16>) k(%q : memref<?x?x?x64xbf16>) v(%q : memref<?x?x?x64xbf16>) -> o(%q : memref<?x?x?x64xbf16>)
                 {tile = #fmha.tile<sm_80, block_m = 128, block_n = 64, warps = 4, stages = 1>}
  return
}
