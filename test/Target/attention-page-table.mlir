// REQUIRES: ptxas
// RUN: fmha-compile %s --chip=sm_90a --emit=ptx -o %t.sm90a.ptx
// RUN: FileCheck %s --check-prefix=SM90A < %t.sm90a.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %t.sm90a.ptx -o %t.sm90a.cubin > %t.sm90a.log 2>&1
// RUN: not grep -E "(3[2-9]|[4-9][0-9]|[1-9][0-9][0-9]+) bytes (stack frame|spill)|Potential Performance Loss" %t.sm90a.log
// RUN: fmha-compile %s --chip=sm_80 --emit=ptx -o %t.sm80.ptx
// RUN: FileCheck %s --check-prefix=SM80 < %t.sm80.ptx
// RUN: %ptxas -arch=sm_80 -O3 %t.sm80.ptx -o %t.sm80.cubin

// A paged KV cache of 16-row pages: k and v are [pages, Hkv, 16, D] and
// the page table is the kernel's last parameter. On sm_90a the producer
// looks up the pages of a key block's 16-row boxes (i32 loads from the
// table, clamped into k's pages) and loads each box by TMA at (page, row
// in page; a loop over the boxes that hold keys, whose bound ptxas does
// not know), its four warps every fourth box each; on sm_80 each copy
// pass finds its row's page. Compiles as a whole program; on sm_90a the
// producer's 24 registers may park a few tile values in local memory,
// loaded and stored once a tile, never in the key-block or box loops
// (checked with nvdisasm): under 32 bytes.

// SM90A: .entry attention(
// SM90A: ld.global.b32
// SM90A: max.s32
// SM90A: min.s32
// SM90A: cp.async.bulk.tensor.4d.shared::cta.global.tile.mbarrier::complete_tx::bytes
// SM80: .entry attention(
// SM80: ld.global.b32
// SM80: cp.async.cg.shared.global
func.func @page_table(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x16x128xbf16>,
                      %o: memref<?x?x?x128xbf16>, %lse: memref<?x?x?xf32>,
                      %lengths: memref<?xi32>, %table: memref<?x?xi32>) {
  fmha.attention q(%q : memref<?x?x?x128xbf16>) k(%k : memref<?x?x16x128xbf16>)
                 v(%k : memref<?x?x16x128xbf16>) -> o(%o : memref<?x?x?x128xbf16>)
                 lse(%lse : memref<?x?x?xf32>)
                 key_lengths(%lengths : memref<?xi32>)
                 page_table(%table : memref<?x?xi32>)
  return
}
