// REQUIRES: ptxas
// RUN: fmha-opt %s --fmha-materialize-tiles=chip=sm_90a -convert-fmha-to-nvgpu=chip=sm_90a | FileCheck %s --check-prefix=SM90
// RUN: not fmha-opt %s --fmha-materialize-tiles=chip=sm_80 -convert-fmha-to-nvgpu=chip=sm_80 2>&1 | FileCheck %s --check-prefix=SM80
// RUN: fmha-compile %s --chip=sm_90a --emit=ptx -o %t.sm90a.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %t.sm90a.ptx -o %t.sm90a.cubin > %t.sm90a.log 2>&1
// RUN: not grep -E "([4-9][0-9]|[1-9][0-9][0-9]+) bytes (stack frame|spill)|Potential Performance Loss" %t.sm90a.log

// split_keys with query_offsets: decode of packed sequences whose caches
// are long and few, so that their tiles alone would leave SMs idle. o and
// lse hold S partial states of q's one entry ([S, Hq, T_q, Dv]); state s
// is split s of each sequence's own keys. On sm_90a each unit of a
// sequence is S units, a split after another. With a paged cache the
// producer (24 registers) keeps the tile loop's carried values in local
// memory (loaded and stored once per tile, never in the key loop: 16
// bytes without split_keys already, 32 with), under 40 bytes here. The
// sm_80 lowering refuses the combination: its d128 kernel spilled 40
// bytes in the key loop. (With packed query heads, sm_90a's decode:
// attention-varlen-pack-query-heads.)

// SM90-LABEL: gpu.func @attention(
// SM90: grid = [min(ceildiv(max_query_length[0], 128) * q[1] * query_offsets[0] * o[0], 2147483647), 1, 1], persistent
// SM80: error: 'fmha.attention' op split_keys with query_offsets is sm_90a's
func.func @paged(%q: memref<1x?x?x128xbf16>, %k: memref<?x?x64x128xbf16>,
                 %o: memref<?x?x?x128xbf16>, %lse: memref<?x?x?xf32>,
                 %lengths: memref<?xi32>, %table: memref<?x?xi32>,
                 %cq: memref<?xi32>, %m: index) {
  fmha.attention q(%q : memref<1x?x?x128xbf16>) k(%k : memref<?x?x64x128xbf16>)
                 v(%k : memref<?x?x64x128xbf16>) -> o(%o : memref<?x?x?x128xbf16>)
                 lse(%lse : memref<?x?x?xf32>)
                 key_lengths(%lengths : memref<?xi32>)
                 page_table(%table : memref<?x?xi32>)
                 query_offsets(%cq : memref<?xi32>) max_query_length(%m)
                 split_keys
  return
}

// SM90-LABEL: gpu.func @attention_0(
// SM90: grid = [min(ceildiv(max_query_length[0], 128) * q[1] * query_offsets[0] * o[0], 2147483647), 1, 1], persistent
func.func @key_offsets(%q: memref<1x?x?x128xbf16>, %k: memref<1x?x?x128xbf16>,
                       %o: memref<?x?x?x128xbf16>, %lse: memref<?x?x?xf32>,
                       %sinks: memref<?x?xf32>,
                       %cq: memref<?xi32>, %ck: memref<?xi32>, %m: index) {
  fmha.attention q(%q : memref<1x?x?x128xbf16>) k(%k : memref<1x?x?x128xbf16>)
                 v(%k : memref<1x?x?x128xbf16>) -> o(%o : memref<?x?x?x128xbf16>)
                 lse(%lse : memref<?x?x?xf32>) sinks(%sinks : memref<?x?xf32>)
                 query_offsets(%cq : memref<?xi32>) key_offsets(%ck : memref<?xi32>)
                 max_query_length(%m) split_keys
  return
}
