// REQUIRES: ptxas
// RUN: fmha-opt %s --fmha-materialize-tiles=chip=sm_90a -convert-fmha-to-nvgpu=chip=sm_90a | FileCheck %s
// RUN: fmha-compile %s --chip=sm_90a --emit=ptx -o %t.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %t.ptx -o %t.cubin > %t.log 2>&1
// RUN: not grep -E "(3[2-9]|[4-9][0-9]|[1-9][0-9][0-9]+) bytes (stack frame|spill)|Potential Performance Loss" %t.log
// RUN: fmha-opt %s --fmha-materialize-tiles=chip=sm_80 -convert-fmha-to-nvgpu=chip=sm_80 | FileCheck %s --check-prefix=SM80
// RUN: fmha-compile %s --chip=sm_80 --emit=ptx -o %t.sm80.ptx
// RUN: %ptxas -arch=sm_80 -O3 -v %t.sm80.ptx -o %t.sm80.cubin > %t.sm80.log 2>&1
// RUN: not grep -E "[1-9][0-9]* bytes (stack frame|spill)" %t.sm80.log

// pack_query_heads (FlashAttention-3's PackGQA): a tile's rows are a KV
// head's group of query heads packed (row r: query r / G of head hk x G +
// r % G). On sm_90a the consumers load their own Q rows (no TMA box holds
// them); on sm_80 each Q row's copy finds its head and query. Masks
// compare r / G, and O, LSE and the sinks are indexed by (head, query).
// The launch contract is the unpacked one: on sm_90a q's tensor map stays
// (the producer no longer loads it) and the persistent grid's bound
// ceildiv(Sq, R) x Hq x B (R = block_m: packed rows never pair) covers
// the packed units ceildiv(Sq x G, R) x Hkv x B; on sm_80 the G x
// ceildiv(Sq, block_m) CTAs of a KV head's query
// heads take its ceildiv(Sq x G, block_m) packed row blocks, the rest
// computing nothing. The kernels, whole programs, spill nothing (sm_90a:
// with setmaxnreg kept and WGMMA unserialized), with a key split, sinks
// and a window; over a paged cache the producer's warps park a few tile
// values (loaded and stored once a tile: under 32 bytes).

// CHECK-LABEL: func.func @d128_causal
// CHECK: fmha.launch = #fmha.launch<operands = [q, k, v, o, lse], {{.*}} grid = [min(ceildiv(q[2], 128) * q[1] * q[0], 2147483647), 1, 1], persistent
// CHECK: vector.load %{{.*}} : memref<?x?x?x128xbf16>, vector<8xbf16>
// CHECK: nvvm.fence.proxy
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %c128_i32
// SM80-LABEL: func.func @d128_causal
// SM80: fmha.launch = #fmha.launch<operands = [q, k, v, o, lse], {{.*}} grid = [ceildiv(q[2], 128), q[1], min(q[0], 65535)]

func.func @d128_causal(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                       %o: memref<?x?x?x128xbf16>, %lse: memref<?x?x?xf32>) {
  fmha.attention q(%q : memref<?x?x?x128xbf16>) k(%k : memref<?x?x?x128xbf16>)
                 v(%k : memref<?x?x?x128xbf16>) -> o(%o : memref<?x?x?x128xbf16>)
                 lse(%lse : memref<?x?x?xf32>) causal pack_query_heads
  return
}

func.func @d64_f16_split(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                         %o: memref<?x?x?x64xf16>, %lse: memref<?x?x?xf32>) {
  fmha.attention q(%q : memref<?x?x?x64xf16>) k(%k : memref<?x?x?x64xf16>)
                 v(%k : memref<?x?x?x64xf16>) -> o(%o : memref<?x?x?x64xf16>)
                 lse(%lse : memref<?x?x?xf32>) causal split_keys pack_query_heads
  return
}

func.func @d256_paged_sinks(%q: memref<?x?x?x256xbf16>,
                            %k: memref<?x?x64x256xbf16>,
                            %o: memref<?x?x?x256xbf16>,
                            %sinks: memref<?x?xf32>,
                            %lengths: memref<?xi32>, %table: memref<?x?xi32>) {
  fmha.attention q(%q : memref<?x?x?x256xbf16>) k(%k : memref<?x?x64x256xbf16>)
                 v(%k : memref<?x?x64x256xbf16>) -> o(%o : memref<?x?x?x256xbf16>)
                 sinks(%sinks : memref<?x?xf32>)
                 key_lengths(%lengths : memref<?xi32>)
                 page_table(%table : memref<?x?xi32>) causal pack_query_heads
  return
}

func.func @d96_window(%q: memref<?x?x?x96xbf16>, %k: memref<?x?x?x96xbf16>,
                      %o: memref<?x?x?x96xbf16>) {
  fmha.attention q(%q : memref<?x?x?x96xbf16>) k(%k : memref<?x?x?x96xbf16>)
                 v(%k : memref<?x?x?x96xbf16>) -> o(%o : memref<?x?x?x96xbf16>)
                 pack_query_heads {window = array<i64: 100, 0>}
  return
}
