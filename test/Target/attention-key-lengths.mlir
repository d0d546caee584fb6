// REQUIRES: ptxas
// RUN: fmha-compile %s --chip=sm_90a --emit=ptx -o %t.sm90a.ptx
// RUN: FileCheck %s --check-prefix=SM90A < %t.sm90a.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %t.sm90a.ptx -o %t.sm90a.cubin > %t.sm90a.log 2>&1
// RUN: not grep -E "[1-9][0-9]* bytes (stack frame|spill)|Potential Performance Loss" %t.sm90a.log
// RUN: fmha-compile %s --chip=sm_80 --emit=ptx -o %t.sm80.ptx
// RUN: FileCheck %s --check-prefix=SM80 < %t.sm80.ptx
// RUN: %ptxas -arch=sm_80 -O3 %t.sm80.ptx -o %t.sm80.cubin

// A KV cache's filled lengths: each tile reads its batch entry's length
// (an i32 load from key_lengths, the kernel's last parameter); on sm_90a
// the consumers zero the rows of the first V block past it (16-byte shared
// stores), fence them for WGMMA (the async proxy) and meet on a named
// barrier; on sm_80 the bounded copies zero-fill them. Compiles as a whole
// program without a spill on sm_90a.

// SM90A: .entry attention(
// SM90A: ld.global.b32
// SM90A: st.shared.v4.b32 {{.*}}{0, 0, 0, 0}
// SM90A: fence.proxy.async.shared::cta
// SM90A-NEXT: bar.sync 3, 256
// SM80: .entry attention(
// SM80: ld.global.b32
func.func @key_lengths(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                       %o: memref<?x?x?x128xbf16>, %lse: memref<?x?x?xf32>,
                       %lengths: memref<?xi32>) {
  fmha.attention q(%q : memref<?x?x?x128xbf16>) k(%k : memref<?x?x?x128xbf16>)
                 v(%k : memref<?x?x?x128xbf16>) -> o(%o : memref<?x?x?x128xbf16>)
                 lse(%lse : memref<?x?x?xf32>)
                 key_lengths(%lengths : memref<?xi32>) causal
  return
}
