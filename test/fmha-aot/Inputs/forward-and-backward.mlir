// A forward and its two backwards in one file: fmha-aot maps each op to its
// kernels in order (one, three, three), whatever the names the symbol table
// gives the second backward's.
func.func @forward(%q: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>,
                   %lse: memref<?x?x?xf32>) {
  fmha.attention q(%q : memref<?x?x?x64xf16>) k(%q : memref<?x?x?x64xf16>)
                 v(%q : memref<?x?x?x64xf16>) -> o(%o : memref<?x?x?x64xf16>)
                 lse(%lse : memref<?x?x?xf32>) causal
  return
}

func.func @backward(%q: memref<?x?x?x64xf16>, %lse: memref<?x?x?xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x64xf16>) k(%q : memref<?x?x?x64xf16>)
                      v(%q : memref<?x?x?x64xf16>) o(%q : memref<?x?x?x64xf16>)
                      dout(%q : memref<?x?x?x64xf16>) lse(%lse : memref<?x?x?xf32>)
                   -> dq(%q : memref<?x?x?x64xf16>) dk(%q : memref<?x?x?x64xf16>)
                      dv(%q : memref<?x?x?x64xf16>) delta(%lse : memref<?x?x?xf32>) causal
  return
}

func.func @backward_accum(%q: memref<?x?x?x64xf16>, %lse: memref<?x?x?xf32>,
                          %acc: memref<?x?x?x64xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x64xf16>) k(%q : memref<?x?x?x64xf16>)
                      v(%q : memref<?x?x?x64xf16>) o(%q : memref<?x?x?x64xf16>)
                      dout(%q : memref<?x?x?x64xf16>) lse(%lse : memref<?x?x?xf32>)
                   -> dq(%q : memref<?x?x?x64xf16>) dk(%q : memref<?x?x?x64xf16>)
                      dv(%q : memref<?x?x?x64xf16>) delta(%lse : memref<?x?x?xf32>)
                      dq_accum(%acc : memref<?x?x?x64xf32>) causal
  return
}
