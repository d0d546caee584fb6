// RUN: fmha-opt %s | fmha-opt | FileCheck %s
// RUN: fmha-opt %s --mlir-print-op-generic | fmha-opt | FileCheck %s

// CHECK-LABEL: func @attention_minimal
func.func @attention_minimal(%q: memref<2x16x100x64xf16>, %k: memref<2x16x77x64xf16>,
                             %v: memref<2x16x77x64xf16>, %o: memref<2x16x100x64xf16>) {
  // CHECK: fmha.attention q(%{{.*}} : memref<2x16x100x64xf16>) k(%{{.*}} : memref<2x16x77x64xf16>) v(%{{.*}} : memref<2x16x77x64xf16>) -> o(%{{.*}} : memref<2x16x100x64xf16>)
  // CHECK-NOT: causal
  // CHECK-NEXT: return
  fmha.attention q(%q : memref<2x16x100x64xf16>) k(%k : memref<2x16x77x64xf16>)
                 v(%v : memref<2x16x77x64xf16>) -> o(%o : memref<2x16x100x64xf16>)
  return
}

// v's and o's head dim may differ from q's and k's (DeepSeek's 192 and 128).
// CHECK-LABEL: func @attention_value_head_dim
func.func @attention_value_head_dim(%q: memref<?x16x?x192xbf16>, %k: memref<?x16x?x192xbf16>,
                                    %v: memref<?x16x?x128xbf16>, %o: memref<?x16x?x128xbf16>) {
  // CHECK: fmha.attention q(%{{.*}} : memref<?x16x?x192xbf16>) k(%{{.*}} : memref<?x16x?x192xbf16>) v(%{{.*}} : memref<?x16x?x128xbf16>) -> o(%{{.*}} : memref<?x16x?x128xbf16>) causal
  fmha.attention q(%q : memref<?x16x?x192xbf16>) k(%k : memref<?x16x?x192xbf16>)
                 v(%v : memref<?x16x?x128xbf16>) -> o(%o : memref<?x16x?x128xbf16>) causal
  return
}

// CHECK-LABEL: func @attention_every_attribute
// CHECK-SAME: (%[[Q:.+]]: memref<?x32x?x128xbf16>, %[[K:.+]]: memref<?x8x?x128xbf16>, %[[V:.+]]: memref<?x8x?x128xbf16>, %[[O:.+]]: memref<?x32x?x128xbf16>, %[[L:.+]]: memref<?x32x?xf32>)
func.func @attention_every_attribute(%q: memref<?x32x?x128xbf16>, %k: memref<?x8x?x128xbf16>,
                                     %v: memref<?x8x?x128xbf16>, %o: memref<?x32x?x128xbf16>,
                                     %lse: memref<?x32x?xf32>) {
  // CHECK: fmha.attention q(%[[Q]] : {{.*}}) k(%[[K]] : {{.*}}) v(%[[V]] : {{.*}}) -> o(%[[O]] : {{.*}}) lse(%[[L]] : memref<?x32x?xf32>) causal
  // CHECK-SAME: scale = 1.250000e-01 : f32
  // CHECK-SAME: tile = #fmha.tile<sm_90a, block_m = 128, block_n = 128, warps = 12, stages = 2>
  // CHECK-SAME: window = array<i64: 256, 0>
  fmha.attention q(%q : memref<?x32x?x128xbf16>) k(%k : memref<?x8x?x128xbf16>)
                 v(%v : memref<?x8x?x128xbf16>) -> o(%o : memref<?x32x?x128xbf16>)
                 lse(%lse : memref<?x32x?xf32>) causal
                 {scale = 0.125 : f32, window = array<i64: 256, 0>,
                  tile = #fmha.tile<sm_90a, block_m = 128, block_n = 128, warps = 12, stages = 2>}
  return
}

// Multi-query attention with a BSHD view: strides are not part of the op.
// CHECK-LABEL: func @attention_mqa_strided
func.func @attention_mqa_strided(%q: memref<1x8x512x256xbf16, strided<[1048576, 256, 2048, 1]>>,
                                 %k: memref<1x1x512x256xbf16>, %v: memref<1x1x512x256xbf16>,
                                 %o: memref<1x8x512x256xbf16>) {
  // CHECK: fmha.attention q(%{{.*}} : memref<1x8x512x256xbf16, strided<[1048576, 256, 2048, 1]>>)
  // CHECK-SAME: tile = #fmha.tile<sm_80, block_m = 128, block_n = 64, warps = 8, stages = 1>
  fmha.attention q(%q : memref<1x8x512x256xbf16, strided<[1048576, 256, 2048, 1]>>)
                 k(%k : memref<1x1x512x256xbf16>) v(%v : memref<1x1x512x256xbf16>)
                 -> o(%o : memref<1x8x512x256xbf16>)
                 {tile = #fmha.tile<sm_80, block_m = 128, block_n = 64, warps = 8, stages = 1>}
  return
}

// Split-KV: o and lse hold S partial states of each batch entry.
// CHECK-LABEL: func @attention_pack_query_heads
func.func @attention_pack_query_heads(%q: memref<2x32x4x128xbf16>, %k: memref<2x8x900x128xbf16>,
                                      %o: memref<2x32x4x128xbf16>) {
  // CHECK: fmha.attention {{.*}} -> o(%{{.*}} : memref<2x32x4x128xbf16>) causal pack_query_heads
  fmha.attention q(%q : memref<2x32x4x128xbf16>) k(%k : memref<2x8x900x128xbf16>)
                 v(%k : memref<2x8x900x128xbf16>) -> o(%o : memref<2x32x4x128xbf16>)
                 causal pack_query_heads
  return
}

// CHECK-LABEL: func @attention_split_keys_and_merge
func.func @attention_split_keys_and_merge(%q: memref<2x32x1x128xbf16>, %k: memref<2x8x900x128xbf16>,
                                          %v: memref<2x8x900x128xbf16>, %parts: memref<8x32x1x128xbf16>,
                                          %lses: memref<8x32x1xf32>, %o: memref<2x32x1x128xbf16>,
                                          %lse: memref<2x32x1xf32>) {
  // CHECK: fmha.attention {{.*}} -> o(%{{.*}} : memref<8x32x1x128xbf16>) lse(%{{.*}} : memref<8x32x1xf32>) causal split_keys
  fmha.attention q(%q : memref<2x32x1x128xbf16>) k(%k : memref<2x8x900x128xbf16>)
                 v(%v : memref<2x8x900x128xbf16>) -> o(%parts : memref<8x32x1x128xbf16>)
                 lse(%lses : memref<8x32x1xf32>) causal split_keys
  %outs = memref.expand_shape %parts [[0, 1], [2], [3], [4]] output_shape [4, 2, 32, 1, 128]
      : memref<8x32x1x128xbf16> into memref<4x2x32x1x128xbf16>
  %ls = memref.expand_shape %lses [[0, 1], [2], [3]] output_shape [4, 2, 32, 1]
      : memref<8x32x1xf32> into memref<4x2x32x1xf32>
  // CHECK: fmha.merge_attention outs(%{{.*}} : memref<4x2x32x1x128xbf16>) lses(%{{.*}} : memref<4x2x32x1xf32>) -> o(%{{.*}} : memref<2x32x1x128xbf16>) lse(%{{.*}} : memref<2x32x1xf32>)
  fmha.merge_attention outs(%outs : memref<4x2x32x1x128xbf16>) lses(%ls : memref<4x2x32x1xf32>)
                    -> o(%o : memref<2x32x1x128xbf16>) lse(%lse : memref<2x32x1xf32>)
  // CHECK: fmha.merge_attention outs(%{{.*}} : memref<?x?x?x?x80xf32>) lses(%{{.*}} : memref<?x?x?x?xf32>) -> o(%{{.*}} : memref<?x?x?x80xf32>)
  // CHECK-NOT: lse(
  %c2 = arith.constant 2 : index
  %fo = memref.alloc(%c2, %c2, %c2, %c2) : memref<?x?x?x?x80xf32>
  %fl = memref.alloc(%c2, %c2, %c2, %c2) : memref<?x?x?x?xf32>
  %fr = memref.alloc(%c2, %c2, %c2) : memref<?x?x?x80xf32>
  fmha.merge_attention outs(%fo : memref<?x?x?x?x80xf32>) lses(%fl : memref<?x?x?x?xf32>)
                    -> o(%fr : memref<?x?x?x80xf32>)
  // CHECK: fmha.merge_attention outs(%{{.*}} : memref<?x?x?x?x80xf32>) lses(%{{.*}} : memref<?x?x?x?xf32>) -> o(%{{.*}} : memref<?x?x?x80xf32>) query_offsets(%{{.*}} : memref<3xi32>)
  %cq = memref.alloc() : memref<3xi32>
  fmha.merge_attention outs(%fo : memref<?x?x?x?x80xf32>) lses(%fl : memref<?x?x?x?xf32>)
                    -> o(%fr : memref<?x?x?x80xf32>) query_offsets(%cq : memref<3xi32>)
  return
}

// CHECK-LABEL: func @resample_modes
func.func @resample_modes(%t: memref<?x?xf32>, %x: memref<?x?x7xf32>, %tt: memref<?x?xf32>,
                          %o: memref<?x?x7xf32>) {
  // CHECK: fmha.resample linear times(%{{.*}} : memref<?x?xf32>) values(%{{.*}} : memref<?x?x7xf32>) targets(%{{.*}} : memref<?x?xf32>) -> out(%{{.*}} : memref<?x?x7xf32>)
  fmha.resample linear times(%t : memref<?x?xf32>) values(%x : memref<?x?x7xf32>)
      targets(%tt : memref<?x?xf32>) -> out(%o : memref<?x?x7xf32>)
  // CHECK: fmha.resample nearest
  fmha.resample nearest times(%t : memref<?x?xf32>) values(%x : memref<?x?x7xf32>)
      targets(%tt : memref<?x?xf32>) -> out(%o : memref<?x?x7xf32>)
  // CHECK: fmha.resample previous
  // CHECK-SAME: {tile = #fmha.resample_tile<sm_90a, block_t = 128, threads = 512>}
  fmha.resample previous times(%t : memref<?x?xf32>) values(%x : memref<?x?x7xf32>)
      targets(%tt : memref<?x?xf32>) -> out(%o : memref<?x?x7xf32>)
      {tile = #fmha.resample_tile<sm_90a, block_t = 128, threads = 512>}
  return
}

// CHECK-LABEL: func @resample_streams_with_lengths
// CHECK-SAME: (%[[T0:.+]]: memref<4x400xf32>, %[[X0:.+]]: memref<4x400x6xf16>, %[[N0:.+]]: memref<4xi32>, %[[T1:.+]]: memref<4x100xf32>, %[[X1:.+]]: memref<4x100x32xf16>, %[[N1:.+]]: memref<4xi32>, %[[TT:.+]]: memref<4x60xf32>, %[[O:.+]]: memref<4x60x38xf16>)
func.func @resample_streams_with_lengths(%t0: memref<4x400xf32>, %x0: memref<4x400x6xf16>, %n0: memref<4xi32>,
                                         %t1: memref<4x100xf32>, %x1: memref<4x100x32xf16>, %n1: memref<4xi32>,
                                         %tt: memref<4x60xf32>, %o: memref<4x60x38xf16>) {
  // CHECK: fmha.resample linear times(%[[T0]], %[[T1]] : memref<4x400xf32>, memref<4x100xf32>)
  // CHECK-SAME: values(%[[X0]], %[[X1]] : memref<4x400x6xf16>, memref<4x100x32xf16>)
  // CHECK-SAME: lengths(%[[N0]], %[[N1]] : memref<4xi32>, memref<4xi32>)
  // CHECK-SAME: targets(%[[TT]] : memref<4x60xf32>) -> out(%[[O]] : memref<4x60x38xf16>)
  fmha.resample linear
      times(%t0, %t1 : memref<4x400xf32>, memref<4x100xf32>)
      values(%x0, %x1 : memref<4x400x6xf16>, memref<4x100x32xf16>)
      lengths(%n0, %n1 : memref<4xi32>, memref<4xi32>)
      targets(%tt : memref<4x60xf32>) -> out(%o : memref<4x60x38xf16>)
  return
}

// CHECK-LABEL: func @check_sorted
// CHECK-SAME: (%[[T0:.+]]: memref<?x400xf32>, %[[T1:.+]]: memref<?x?xf32>, %[[N0:.+]]: memref<?xi32>, %[[N1:.+]]: memref<?xi32>, %[[F:.+]]: memref<2xi64>, %[[F1:.+]]: memref<1xi64>)
func.func @check_sorted(%t0: memref<?x400xf32>, %t1: memref<?x?xf32>, %n0: memref<?xi32>,
                        %n1: memref<?xi32>, %first: memref<2xi64>, %first1: memref<1xi64>) {
  // CHECK: fmha.check_sorted times(%[[T0]], %[[T1]] : memref<?x400xf32>, memref<?x?xf32>) lengths(%[[N0]], %[[N1]] : memref<?xi32>, memref<?xi32>) -> first(%[[F]] : memref<2xi64>)
  fmha.check_sorted times(%t0, %t1 : memref<?x400xf32>, memref<?x?xf32>)
      lengths(%n0, %n1 : memref<?xi32>, memref<?xi32>) -> first(%first : memref<2xi64>)
  // CHECK: fmha.check_sorted times(%[[T0]] : memref<?x400xf32>) -> first(%[[F1]] : memref<1xi64>)
  fmha.check_sorted times(%t0 : memref<?x400xf32>) -> first(%first1 : memref<1xi64>)
  return
}

// CHECK-LABEL: func.func @attention_grad
func.func @attention_grad(%q: memref<2x32x100x128xbf16>, %k: memref<2x8x300x128xbf16>,
                          %lse: memref<2x32x100xf32>, %delta: memref<2x32x100xf32>,
                          %dq: memref<2x32x100x128xbf16>, %dk: memref<2x8x300x128xbf16>,
                          %dv: memref<2x8x300x128xbf16>) {
  // CHECK: fmha.attention_grad q(%{{.*}} : memref<2x32x100x128xbf16>) k(%{{.*}} : memref<2x8x300x128xbf16>) v(%{{.*}} : memref<2x8x300x128xbf16>) o(%{{.*}} : memref<2x32x100x128xbf16>) dout(%{{.*}} : memref<2x32x100x128xbf16>) lse(%{{.*}} : memref<2x32x100xf32>) -> dq(%{{.*}} : memref<2x32x100x128xbf16>) dk(%{{.*}} : memref<2x8x300x128xbf16>) dv(%{{.*}} : memref<2x8x300x128xbf16>) delta(%{{.*}} : memref<2x32x100xf32>) causal {scale = 1.250000e-01 : f32, softcap = 3.000000e+01 : f32, window = array<i64: 64, 0>}
  fmha.attention_grad q(%q : memref<2x32x100x128xbf16>) k(%k : memref<2x8x300x128xbf16>)
                      v(%k : memref<2x8x300x128xbf16>) o(%q : memref<2x32x100x128xbf16>)
                      dout(%q : memref<2x32x100x128xbf16>) lse(%lse : memref<2x32x100xf32>)
                   -> dq(%dq : memref<2x32x100x128xbf16>) dk(%dk : memref<2x8x300x128xbf16>)
                      dv(%dv : memref<2x8x300x128xbf16>) delta(%delta : memref<2x32x100xf32>)
                      causal {scale = 0.125 : f32, window = array<i64: 64, 0>,
                              softcap = 30.0 : f32}
  return
}

// CHECK-LABEL: func.func @attention_grad_atomic
// CHECK: delta(%{{.*}} : memref<?x4x?xf32>) dq_accum(%{{.*}} : memref<?x4x?x64xf32>)
func.func @attention_grad_atomic(%q: memref<?x4x?x64xf16>, %lse: memref<?x4x?xf32>,
                                 %acc: memref<?x4x?x64xf32>) {
  fmha.attention_grad q(%q : memref<?x4x?x64xf16>) k(%q : memref<?x4x?x64xf16>)
                      v(%q : memref<?x4x?x64xf16>) o(%q : memref<?x4x?x64xf16>)
                      dout(%q : memref<?x4x?x64xf16>) lse(%lse : memref<?x4x?xf32>)
                   -> dq(%q : memref<?x4x?x64xf16>) dk(%q : memref<?x4x?x64xf16>)
                      dv(%q : memref<?x4x?x64xf16>) delta(%lse : memref<?x4x?xf32>)
                      dq_accum(%acc : memref<?x4x?x64xf32>)
  return
}

// CHECK-LABEL: func.func @attention_grad_max_shared_bytes
// CHECK: delta(%{{.*}} : memref<?x4x?xf32>) {max_shared_bytes = 101376 : i64}
func.func @attention_grad_max_shared_bytes(%q: memref<?x4x?x256xf16>,
                                           %lse: memref<?x4x?xf32>) {
  fmha.attention_grad q(%q : memref<?x4x?x256xf16>) k(%q : memref<?x4x?x256xf16>)
                      v(%q : memref<?x4x?x256xf16>) o(%q : memref<?x4x?x256xf16>)
                      dout(%q : memref<?x4x?x256xf16>) lse(%lse : memref<?x4x?xf32>)
                   -> dq(%q : memref<?x4x?x256xf16>) dk(%q : memref<?x4x?x256xf16>)
                      dv(%q : memref<?x4x?x256xf16>) delta(%lse : memref<?x4x?xf32>)
                      {max_shared_bytes = 101376 : i64}
  return
}

// CHECK-LABEL: func.func @attention_grad_ordered
// CHECK: dq_accum(%{{.*}} : memref<?x4x?x64xf32>) dq_order(%{{.*}} : memref<?x4x?xi32>) causal
func.func @attention_grad_ordered(%q: memref<?x4x?x64xf16>, %lse: memref<?x4x?xf32>,
                                  %acc: memref<?x4x?x64xf32>,
                                  %order: memref<?x4x?xi32>) {
  fmha.attention_grad q(%q : memref<?x4x?x64xf16>) k(%q : memref<?x4x?x64xf16>)
                      v(%q : memref<?x4x?x64xf16>) o(%q : memref<?x4x?x64xf16>)
                      dout(%q : memref<?x4x?x64xf16>) lse(%lse : memref<?x4x?xf32>)
                   -> dq(%q : memref<?x4x?x64xf16>) dk(%q : memref<?x4x?x64xf16>)
                      dv(%q : memref<?x4x?x64xf16>) delta(%lse : memref<?x4x?xf32>)
                      dq_accum(%acc : memref<?x4x?x64xf32>)
                      dq_order(%order : memref<?x4x?xi32>) causal
  return
}

// Logit softcapping, at a head dim other than 64, 128 and 256.
// CHECK-LABEL: func @attention_softcap
func.func @attention_softcap(%q: memref<1x8x100x96xbf16>, %o: memref<1x8x100x96xbf16>) {
  // CHECK: fmha.attention {{.*}} causal {softcap = 5.000000e+01 : f32}
  fmha.attention q(%q : memref<1x8x100x96xbf16>) k(%q : memref<1x8x100x96xbf16>)
                 v(%q : memref<1x8x100x96xbf16>) -> o(%o : memref<1x8x100x96xbf16>)
                 causal {softcap = 50.0 : f32}
  return
}

// Attention sinks, one per query head: [Hq] viewed [Hq, Sq] with a row
// stride of 0.
// CHECK-LABEL: func @attention_sinks
func.func @attention_sinks(%q: memref<?x8x?x64xbf16>, %k: memref<?x2x?x64xbf16>,
                           %o: memref<?x8x?x64xbf16>, %lse: memref<?x8x?xf32>,
                           %s: memref<8x?xf32, strided<[1, 0]>>) {
  // CHECK: fmha.attention {{.*}} lse(%{{.*}} : memref<?x8x?xf32>) sinks(%{{.*}} : memref<8x?xf32, strided<[1, 0]>>) causal
  fmha.attention q(%q : memref<?x8x?x64xbf16>) k(%k : memref<?x2x?x64xbf16>)
                 v(%k : memref<?x2x?x64xbf16>) -> o(%o : memref<?x8x?x64xbf16>)
                 lse(%lse : memref<?x8x?xf32>)
                 sinks(%s : memref<8x?xf32, strided<[1, 0]>>) causal
  return
}

// A KV cache's filled lengths, one per batch entry.
// CHECK-LABEL: func @attention_key_lengths
func.func @attention_key_lengths(%q: memref<?x8x?x64xbf16>, %k: memref<?x2x?x64xbf16>,
                                 %o: memref<?x8x?x64xbf16>, %l: memref<?xi32>) {
  // CHECK: fmha.attention {{.*}} key_lengths(%{{.*}} : memref<?xi32>) causal
  fmha.attention q(%q : memref<?x8x?x64xbf16>) k(%k : memref<?x2x?x64xbf16>)
                 v(%k : memref<?x2x?x64xbf16>) -> o(%o : memref<?x8x?x64xbf16>)
                 key_lengths(%l : memref<?xi32>) causal
  return
}

// A paged KV cache: k and v are pools of 16-row pages, a table row per
// batch entry.
// CHECK-LABEL: func @attention_page_table
func.func @attention_page_table(%q: memref<?x8x?x64xbf16>, %k: memref<?x2x16x64xbf16>,
                                %o: memref<?x8x?x64xbf16>, %l: memref<?xi32>,
                                %t: memref<?x?xi32>) {
  // CHECK: fmha.attention {{.*}} key_lengths(%{{.*}} : memref<?xi32>) page_table(%{{.*}} : memref<?x?xi32>) causal
  fmha.attention q(%q : memref<?x8x?x64xbf16>) k(%k : memref<?x2x16x64xbf16>)
                 v(%k : memref<?x2x16x64xbf16>) -> o(%o : memref<?x8x?x64xbf16>)
                 key_lengths(%l : memref<?xi32>) page_table(%t : memref<?x?xi32>) causal
  return
}

// Variable-length batches: the sequences packed as q's and o's batch entry
// 0, delimited by query_offsets ([B + 1], FlashAttention's cu_seqlens_q);
// max_query_length is an index (no type in the assembly). k and v keep an
// entry per sequence, here limited by key_lengths.
// CHECK-LABEL: func @attention_query_offsets
func.func @attention_query_offsets(%q: memref<1x8x?x64xbf16>, %k: memref<?x2x?x64xbf16>,
                                   %o: memref<1x8x?x64xbf16>, %l: memref<?xi32>,
                                   %cq: memref<?xi32>, %m: index) {
  // CHECK: fmha.attention q(%{{.*}} : memref<1x8x?x64xbf16>) k(%{{.*}} : memref<?x2x?x64xbf16>) v(%{{.*}} : memref<?x2x?x64xbf16>) -> o(%{{.*}} : memref<1x8x?x64xbf16>) key_lengths(%{{.*}} : memref<?xi32>) query_offsets(%{{.*}} : memref<?xi32>) max_query_length(%{{.*}}) causal
  // CHECK-NOT: key_offsets
  fmha.attention q(%q : memref<1x8x?x64xbf16>) k(%k : memref<?x2x?x64xbf16>)
                 v(%k : memref<?x2x?x64xbf16>) -> o(%o : memref<1x8x?x64xbf16>)
                 key_lengths(%l : memref<?xi32>)
                 query_offsets(%cq : memref<?xi32>) max_query_length(%m) causal
  return
}

// Keys packed too (key_offsets, cu_seqlens_k), with an lse [1, Hq, T_q]
// and static offsets of B = 4 sequences.
// CHECK-LABEL: func @attention_key_offsets
func.func @attention_key_offsets(%q: memref<1x8x?x128xf16>, %k: memref<1x2x?x128xf16>,
                                 %o: memref<1x8x?x128xf16>, %lse: memref<1x8x?xf32>,
                                 %cq: memref<5xi32>, %ck: memref<5xi32>) {
  %m = arith.constant 300 : index
  // CHECK: fmha.attention {{.*}} lse(%{{.*}} : memref<1x8x?xf32>) query_offsets(%{{.*}} : memref<5xi32>) key_offsets(%{{.*}} : memref<5xi32>) max_query_length(%{{.*}}) {window = array<i64: 64, 0>}
  fmha.attention q(%q : memref<1x8x?x128xf16>) k(%k : memref<1x2x?x128xf16>)
                 v(%k : memref<1x2x?x128xf16>) -> o(%o : memref<1x8x?x128xf16>)
                 lse(%lse : memref<1x8x?xf32>)
                 query_offsets(%cq : memref<5xi32>) key_offsets(%ck : memref<5xi32>)
                 max_query_length(%m) {window = array<i64: 64, 0>}
  return
}

// Packed queries over a paged KV cache: the page table has a row per
// sequence (the offsets' size - 1).
// CHECK-LABEL: func @attention_query_offsets_pages
func.func @attention_query_offsets_pages(%q: memref<?x8x?x64xbf16>, %k: memref<?x2x16x64xbf16>,
                                         %o: memref<?x8x?x64xbf16>, %l: memref<3xi32>,
                                         %t: memref<3x?xi32>, %cq: memref<4xi32>, %m: index) {
  // CHECK: fmha.attention {{.*}} key_lengths(%{{.*}} : memref<3xi32>) page_table(%{{.*}} : memref<3x?xi32>) query_offsets(%{{.*}} : memref<4xi32>) max_query_length(%{{.*}}) causal
  fmha.attention q(%q : memref<?x8x?x64xbf16>) k(%k : memref<?x2x16x64xbf16>)
                 v(%k : memref<?x2x16x64xbf16>) -> o(%o : memref<?x8x?x64xbf16>)
                 key_lengths(%l : memref<3xi32>) page_table(%t : memref<3x?xi32>)
                 query_offsets(%cq : memref<4xi32>) max_query_length(%m) causal
  return
}

// CHECK-LABEL: func.func @attention_grad_sliced
// CHECK: dq_accum(%{{.*}} : memref<?x16x?x128xf32>) dkv_partial(%{{.*}} : memref<?x?x1x?x256xf32>) causal
func.func @attention_grad_sliced(%q: memref<?x16x?x128xbf16>, %k: memref<?x1x?x128xbf16>,
                                 %lse: memref<?x16x?xf32>,
                                 %acc: memref<?x16x?x128xf32>,
                                 %partial: memref<?x?x1x?x256xf32>) {
  fmha.attention_grad q(%q : memref<?x16x?x128xbf16>) k(%k : memref<?x1x?x128xbf16>)
                      v(%k : memref<?x1x?x128xbf16>) o(%q : memref<?x16x?x128xbf16>)
                      dout(%q : memref<?x16x?x128xbf16>) lse(%lse : memref<?x16x?xf32>)
                   -> dq(%q : memref<?x16x?x128xbf16>) dk(%k : memref<?x1x?x128xbf16>)
                      dv(%k : memref<?x1x?x128xbf16>) delta(%lse : memref<?x16x?xf32>)
                      dq_accum(%acc : memref<?x16x?x128xf32>)
                      dkv_partial(%partial : memref<?x?x1x?x256xf32>) causal
  return
}
