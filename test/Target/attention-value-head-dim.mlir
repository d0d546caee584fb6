// REQUIRES: ptxas
// RUN: fmha-compile %s --chip=sm_90a --emit=ptx -o %t.sm90a.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %t.sm90a.ptx -o %t.sm90a.cubin > %t.sm90a.log 2>&1
// RUN: FileCheck %s --check-prefix=SM90A < %t.sm90a.log
// RUN: not grep -E "[1-9][0-9]* bytes (stack frame|spill)|Potential Performance Loss" %t.sm90a.log
// RUN: FileCheck %s --check-prefix=PTX < %t.sm90a.ptx
// RUN: fmha-compile %s --chip=sm_80 --emit=ptx -o %t.sm80.ptx
// RUN: %ptxas -arch=sm_80 -O3 -v %t.sm80.ptx -o %t.sm80.cubin > %t.sm80.log 2>&1
// RUN: FileCheck %s --check-prefix=SM80 < %t.sm80.log

// v's head dim different from q's and k's: Q and K tiles hold q's columns,
// V and O's v's; Q K^T walks q's head dim, P V (and O) v's. Each compiles
// as a whole program on both chips, on sm_90a without a spill.

// SM90A-COUNT-3: Compiling entry function 'attention{{(_[0-9])?}}' for 'sm_90a'
// SM80-COUNT-3: Compiling entry function 'attention{{(_[0-9])?}}' for 'sm_80'

// DeepSeek's 192/128 (d128's 128x128 tile): the first S = Q K^T is 12
// m64n128k16 steps over q's 192 columns, each P V 8 steps (block_n) of
// m64n128k16 with A from registers into O's 128 columns.
// PTX-LABEL: .entry attention(
// PTX-COUNT-12: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, p, 1,{{ +}}1, 0,{{ +}}0;
// PTX-NOT: wgmma.mma_async
// PTX: wgmma.commit_group.sync.aligned;
// PTX-COUNT-8: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1;
// PTX-NOT: wgmma.mma_async
// PTX: wgmma.commit_group.sync.aligned;
func.func @d192_v128(%q: memref<?x?x?x192xbf16>, %k: memref<?x?x?x192xbf16>,
                     %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>,
                     %lse: memref<?x?x?xf32>) {
  fmha.attention q(%q : memref<?x?x?x192xbf16>) k(%k : memref<?x?x?x192xbf16>)
                 v(%v : memref<?x?x?x128xbf16>) -> o(%o : memref<?x?x?x128xbf16>)
                 lse(%lse : memref<?x?x?xf32>)
  return
}

// A narrower q than v, causal.
func.func @d64_v256_causal(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                           %v: memref<?x?x?x256xf16>, %o: memref<?x?x?x256xf16>) {
  fmha.attention q(%q : memref<?x?x?x64xf16>) k(%k : memref<?x?x?x64xf16>)
                 v(%v : memref<?x?x?x256xf16>) -> o(%o : memref<?x?x?x256xf16>)
                 causal
  return
}

// Rounded-up tiles on both sides, with key lengths (V rows past them zeroed
// in v's column blocks).
func.func @d96_v160(%q: memref<?x?x?x96xbf16>, %k: memref<?x?x?x96xbf16>,
                    %v: memref<?x?x?x160xbf16>, %o: memref<?x?x?x160xbf16>,
                    %lengths: memref<?xi32>) {
  fmha.attention q(%q : memref<?x?x?x96xbf16>) k(%k : memref<?x?x?x96xbf16>)
                 v(%v : memref<?x?x?x160xbf16>) -> o(%o : memref<?x?x?x160xbf16>)
                 key_lengths(%lengths : memref<?xi32>)
  return
}
