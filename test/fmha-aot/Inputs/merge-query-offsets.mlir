func.func @merge(%outs: memref<?x1x?x?x128xbf16>, %lses: memref<?x1x?x?xf32>,
                 %o: memref<1x?x?x128xbf16>, %cq: memref<?xi32>) {
  fmha.merge_attention outs(%outs : memref<?x1x?x?x128xbf16>) lses(%lses : memref<?x1x?x?xf32>)
                    -> o(%o : memref<1x?x?x128xbf16>) query_offsets(%cq : memref<?xi32>)
  return
}
