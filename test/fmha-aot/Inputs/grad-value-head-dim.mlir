// The backward with v's head dim apart from q's (DeepSeek's 192/128).
func.func @grad(%q: memref<?x?x?x192xbf16>, %v: memref<?x?x?x128xbf16>, %lse: memref<?x?x?xf32>,
                %acc: memref<?x?x?x192xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x192xbf16>) k(%q : memref<?x?x?x192xbf16>)
      v(%v : memref<?x?x?x128xbf16>) o(%v : memref<?x?x?x128xbf16>)
      dout(%v : memref<?x?x?x128xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x192xbf16>) dk(%q : memref<?x?x?x192xbf16>)
         dv(%v : memref<?x?x?x128xbf16>) delta(%lse : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x192xf32>) causal
  return
}
