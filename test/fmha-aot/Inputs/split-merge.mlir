func.func @split(%q: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>,
                 %lse: memref<?x?x?xf32>) {
  fmha.attention q(%q : memref<?x?x?x64xf16>) k(%q : memref<?x?x?x64xf16>)
                 v(%q : memref<?x?x?x64xf16>) -> o(%o : memref<?x?x?x64xf16>)
                 lse(%lse : memref<?x?x?xf32>) split_keys
  return
}

func.func @merge(%outs: memref<?x?x?x?x64xf16>, %lses: memref<?x?x?x?xf32>,
                 %o: memref<?x?x?x64xf16>) {
  fmha.merge_attention outs(%outs : memref<?x?x?x?x64xf16>)
                       lses(%lses : memref<?x?x?x?xf32>)
                    -> o(%o : memref<?x?x?x64xf16>)
  return
}
