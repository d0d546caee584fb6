// REQUIRES: ptxas
// RUN: fmha-opt %s --fmha-materialize-tiles=chip=sm_90a -convert-fmha-to-nvgpu=chip=sm_90a | FileCheck %s --check-prefix=SM90
// RUN: not fmha-opt %s --fmha-materialize-tiles=chip=sm_80 -convert-fmha-to-nvgpu=chip=sm_80 2>&1 | FileCheck %s --check-prefix=SM80
// RUN: fmha-compile %s --chip=sm_90a --emit=ptx -o %t.sm90a.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %t.sm90a.ptx -o %t.sm90a.cubin > %t.sm90a.log 2>&1
// RUN: not grep -E "(3[2-9]|[4-9][0-9]|[1-9][0-9][0-9]+) bytes (stack frame|spill)|Potential Performance Loss" %t.sm90a.log

// pack_query_heads with query_offsets: decode of packed sequences (one or a
// few queries each, as serving engines batch it) reads each KV block once
// per group. Sequence b's tiles hold its L_b x G rows of each KV head (row
// r: query r / G of head hk x G + r % G, past the sequence's first row).
// On sm_90a the persistent CTAs' units are each sequence's
// ceil(L_b x G / R) of each KV head (the warps' search sums them; the tile
// loop runs while the search finds a sequence, so no trip count is held).
// The launch contract is the unpacked one. Over a paged cache the
// producer's four warps (each every fourth page of a key block) keep a
// few tile-loop values in local memory (loaded and stored once a tile or
// a tile's search, never per key block or box): under 32 bytes. The sm_80
// lowering refuses the combination (its d128 kernel with both offsets
// spilled 40 bytes).

// SM90-LABEL: func.func @paged_key_lengths
// SM90: grid = [min(ceildiv(max_query_length[0], 128) * q[1] * query_offsets[0], 2147483647), 1, 1], persistent
// SM80: error: 'fmha.attention' op pack_query_heads with query_offsets is sm_90a's
func.func @paged_key_lengths(%q: memref<1x?x?x128xbf16>, %k: memref<?x?x16x128xbf16>,
                             %o: memref<1x?x?x128xbf16>, %lse: memref<1x?x?xf32>,
                             %lengths: memref<?xi32>, %table: memref<?x?xi32>,
                             %cq: memref<?xi32>, %m: index) {
  fmha.attention q(%q : memref<1x?x?x128xbf16>) k(%k : memref<?x?x16x128xbf16>)
                 v(%k : memref<?x?x16x128xbf16>) -> o(%o : memref<1x?x?x128xbf16>)
                 lse(%lse : memref<1x?x?xf32>)
                 key_lengths(%lengths : memref<?xi32>)
                 page_table(%table : memref<?x?xi32>)
                 query_offsets(%cq : memref<?xi32>) max_query_length(%m) causal
                 pack_query_heads
  return
}

func.func @key_offsets(%q: memref<1x?x?x64xbf16>, %k: memref<1x?x?x64xbf16>,
                       %o: memref<1x?x?x64xbf16>, %lse: memref<1x?x?xf32>,
                       %cq: memref<?xi32>, %ck: memref<?xi32>, %m: index) {
  fmha.attention q(%q : memref<1x?x?x64xbf16>) k(%k : memref<1x?x?x64xbf16>)
                 v(%k : memref<1x?x?x64xbf16>) -> o(%o : memref<1x?x?x64xbf16>)
                 lse(%lse : memref<1x?x?xf32>)
                 query_offsets(%cq : memref<?xi32>) key_offsets(%ck : memref<?xi32>)
                 max_query_length(%m) pack_query_heads
  return
}

func.func @key_offsets_d128_causal(%q: memref<1x?x?x128xbf16>,
                                   %k: memref<1x?x?x128xbf16>,
                                   %o: memref<1x?x?x128xbf16>,
                                   %cq: memref<?xi32>, %ck: memref<?xi32>,
                                   %m: index) {
  fmha.attention q(%q : memref<1x?x?x128xbf16>) k(%k : memref<1x?x?x128xbf16>)
                 v(%k : memref<1x?x?x128xbf16>) -> o(%o : memref<1x?x?x128xbf16>)
                 query_offsets(%cq : memref<?xi32>) key_offsets(%ck : memref<?xi32>)
                 max_query_length(%m) causal pack_query_heads
  return
}

// SM90-LABEL: gpu.func @attention_2(
// SM90: grid = [min(ceildiv(max_query_length[0], 128) * q[1] * query_offsets[0] * o[0], 2147483647), 1, 1], persistent
func.func @split_keys(%q: memref<1x?x?x128xbf16>, %k: memref<?x?x64x128xbf16>,
                      %o: memref<?x?x?x128xbf16>, %lse: memref<?x?x?xf32>,
                      %lengths: memref<?xi32>, %table: memref<?x?xi32>,
                      %cq: memref<?xi32>, %m: index) {
  fmha.attention q(%q : memref<1x?x?x128xbf16>) k(%k : memref<?x?x64x128xbf16>)
                 v(%k : memref<?x?x64x128xbf16>) -> o(%o : memref<?x?x?x128xbf16>)
                 lse(%lse : memref<?x?x?xf32>)
                 key_lengths(%lengths : memref<?xi32>)
                 page_table(%table : memref<?x?xi32>)
                 query_offsets(%cq : memref<?xi32>) max_query_length(%m)
                 split_keys pack_query_heads
  return
}
