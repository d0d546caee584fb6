// REQUIRES: ptxas
// RUN: fmha-opt %s --fmha-materialize-tiles=chip=sm_90a -convert-fmha-to-nvgpu=chip=sm_90a | FileCheck %s --check-prefix=SM90
// RUN: fmha-opt %s --fmha-materialize-tiles=chip=sm_80 -convert-fmha-to-nvgpu=chip=sm_80 | FileCheck %s --check-prefix=SM80
// RUN: fmha-compile %s --chip=sm_90a --emit=ptx -o %t.sm90a.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.sm90a.ptx
// RUN: FileCheck %s --check-prefix=SM90PTX < %t.sm90a.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %t.sm90a.ptx -o %t.sm90a.cubin > %t.sm90a.log 2>&1
// RUN: not grep -E "[1-9][0-9]* bytes (stack frame|spill)|Potential Performance Loss" %t.sm90a.log
// RUN: fmha-compile %s --chip=sm_80 --emit=ptx -o %t.sm80.ptx
// RUN: FileCheck %s --check-prefixes=PTX,SM80PTX < %t.sm80.ptx
// RUN: %ptxas -arch=sm_80 -O3 -v %t.sm80.ptx -o %t.sm80.cubin > %t.sm80.log 2>&1
// RUN: not grep -E "[1-9][0-9]* bytes (stack frame|spill)" %t.sm80.log

// Variable-length batches (FlashAttention's varlen): the sequences packed
// as q's and o's batch entry 0, sequence b their rows query_offsets[b] to
// query_offsets[b + 1]; with key_offsets k's and v's too.
//
// The launch contract passes max_query_length (an index) as its value, the
// kernel's last parameter, and sizes the grid by it: row blocks (of 256
// causal rows in pairs, or 192) of the longest sequence, times the heads,
// times query_offsets' B + 1 entries (the kernel counts B); on sm_80 the
// grid's x, y and z. The host reads the index operand as it is (no
// memref.dim of it). On sm_80 each tile loads its sequence's end
// (query_offsets[b + 1], the i32 after its start), clamps it into [0, T]
// (max then min) and takes the start from it: the sequence's rows. On
// sm_90a a head's units are its sequences' one after the other; every warp
// that walks the tiles (the consumers', the producer's first) finds a
// unit's sequence with its lanes together: each lane loads a sequence's
// offsets (clamped likewise), a prefix sum of 32 sequences' units by
// shuffles up, then a ballot of those that start at or before the unit,
// and the tile takes its rows from the owning lane by a shuffle. The
// consumers load the first 32 sequences' once, before their tile loop.
// Both kernels compile as whole programs without a spill.

// SM90: func.func @query_offsets({{.*}}, %[[MAXQ:.*]]: index)
// SM90: arith.ceildivui %[[MAXQ]], %c256
// SM90: gpu.launch_func @fmha_kernels::@attention {{.*}}, %[[MAXQ]] : index)
// SM90: func.func @key_offsets({{.*}}, %[[MAXK:.*]]: index)
// SM90: arith.ceildivui %[[MAXK]], %c192
// SM90: gpu.launch_func @fmha_kernels::@attention_0 {{.*}}, %[[MAXK]] : index)
// SM90: gpu.func @attention({{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: index)
// SM90-SAME: fmha.launch = #fmha.launch<operands = [q, k, v, o, lse, key_lengths, query_offsets, max_query_length], threads = 384, {{.*}} grid = [min(ceildiv(max_query_length[0], 256) * q[1] * query_offsets[0], 2147483647), 1, 1], persistent, parameters = [tensor_map(q, {{.*}}), tensor_map(k, {{.*}}), tensor_map(v, {{.*}}), q, k, v, o, lse, key_lengths, query_offsets, index(max_query_length)]>
// SM90: gpu.func @attention_0({{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: index)
// SM90-SAME: fmha.launch = #fmha.launch<operands = [q, k, v, o, lse, query_offsets, key_offsets, max_query_length], {{.*}} grid = [min(ceildiv(max_query_length[0], 192) * q[1] * query_offsets[0], 2147483647), 1, 1], persistent, parameters = [tensor_map(q, bf16, box = [192, 64], {{.*}}), tensor_map(k, {{.*}}), tensor_map(v, {{.*}}), q, k, v, o, lse, query_offsets, key_offsets, index(max_query_length)]>

// SM80: func.func @query_offsets({{.*}}, %[[CQ:.*]]: memref<?xi32>, %[[MAXQ:.*]]: index)
// SM80: %[[X:.*]] = arith.ceildivui %[[MAXQ]], %c128
// SM80: %[[H:.*]] = memref.dim %arg0, %c1
// SM80: %[[ENTRIES:.*]] = memref.dim %[[CQ]], %c0
// SM80: %[[Z:.*]] = arith.minui %[[ENTRIES]], %c65535
// SM80: gpu.launch_func @fmha_kernels::@attention blocks in (%[[X]], %[[H]], %[[Z]])
// SM80: func.func @key_offsets(
// SM80: gpu.launch_func @fmha_kernels::@attention_0
// SM80: gpu.func @attention(
// SM80-SAME: fmha.launch = #fmha.launch<operands = [q, k, v, o, lse, key_lengths, query_offsets, max_query_length], threads = 128, {{.*}} grid = [ceildiv(max_query_length[0], 128), q[1], min(query_offsets[0], 65535)], parameters = [q, k, v, o, lse, key_lengths, query_offsets, index(max_query_length)]>
// SM80: gpu.func @attention_0(
// SM80-SAME: fmha.launch = #fmha.launch<operands = [q, k, v, o, lse, query_offsets, key_offsets, max_query_length], threads = 128, {{.*}} grid = [ceildiv(max_query_length[0], 128), q[1], min(query_offsets[0], 65535)], parameters = [q, k, v, o, lse, query_offsets, key_offsets, index(max_query_length)]>

// SM90PTX: .entry attention(
// SM90PTX: ld.global.b32 [[LANE_END:%r[0-9]+]], {{\[}}%rd{{[0-9]+}}{{\]}}
// SM90PTX: max.s32 [[LANE_POSITIVE:%r[0-9]+]], [[LANE_END]], 0
// SM90PTX-NEXT: min.s32 {{%r[0-9]+}}, [[LANE_POSITIVE]], {{%r[0-9]+}}
// SM90PTX: shfl.sync.up.b32
// SM90PTX: vote.sync.ballot.b32
// SM90PTX: .entry attention_0(
// SM90PTX: shfl.sync.up.b32
// SM90PTX: vote.sync.ballot.b32

// The kernel's last parameter is the index, one 64-bit value (no memref
// descriptor).
// PTX: .entry attention(
// PTX: .param .u64 attention_param_{{[0-9]+}}{{ *$}}
// PTX-NEXT: )
// SM80PTX: ld.global.b32 [[END:%r[0-9]+]], {{\[}}%rd{{[0-9]+}}+4{{\]}}
// SM80PTX: max.s32 [[POSITIVE:%r[0-9]+]], [[END]], 0
// SM80PTX-NEXT: min.s32 [[CLAMPED:%r[0-9]+]], [[POSITIVE]], {{%r[0-9]+}}
// SM80PTX-NEXT: sub.s32 {{%r[0-9]+}}, [[CLAMPED]], {{%r[0-9]+}}
// SM80PTX: .entry attention_0(
// Both query and key offsets, each clamped.
// SM80PTX-COUNT-2: ld.global.b32 {{%r[0-9]+}}, {{\[}}{{%rd[0-9]+}}+4{{\]}}

func.func @query_offsets(%q: memref<1x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                         %o: memref<1x?x?x128xbf16>, %lse: memref<1x?x?xf32>,
                         %lengths: memref<?xi32>, %cq: memref<?xi32>,
                         %m: index) {
  fmha.attention q(%q : memref<1x?x?x128xbf16>) k(%k : memref<?x?x?x128xbf16>)
                 v(%k : memref<?x?x?x128xbf16>) -> o(%o : memref<1x?x?x128xbf16>)
                 lse(%lse : memref<1x?x?xf32>)
                 key_lengths(%lengths : memref<?xi32>)
                 query_offsets(%cq : memref<?xi32>) max_query_length(%m) causal
  return
}

func.func @key_offsets(%q: memref<1x?x?x64xbf16>, %k: memref<1x?x?x64xbf16>,
                       %o: memref<1x?x?x64xbf16>, %lse: memref<1x?x?xf32>,
                       %cq: memref<?xi32>, %ck: memref<?xi32>, %m: index) {
  fmha.attention q(%q : memref<1x?x?x64xbf16>) k(%k : memref<1x?x?x64xbf16>)
                 v(%k : memref<1x?x?x64xbf16>) -> o(%o : memref<1x?x?x64xbf16>)
                 lse(%lse : memref<1x?x?xf32>)
                 query_offsets(%cq : memref<?xi32>) key_offsets(%ck : memref<?xi32>)
                 max_query_length(%m)
  return
}

// Both offsets at d128, causal: on sm_80 the key copies read k and v viewed
// with their rows as batch entries (a sequence's first key row is the
// entry, as a batch index is): a base added to each copy row instead, held
// across the key loop, spilled 20 bytes here (the sm_80 RUN's no-spill
// check).
func.func @key_offsets_d128(%q: memref<1x?x?x128xbf16>, %k: memref<1x?x?x128xbf16>,
                            %o: memref<1x?x?x128xbf16>, %cq: memref<?xi32>,
                            %ck: memref<?xi32>, %m: index) {
  fmha.attention q(%q : memref<1x?x?x128xbf16>) k(%k : memref<1x?x?x128xbf16>)
                 v(%k : memref<1x?x?x128xbf16>) -> o(%o : memref<1x?x?x128xbf16>)
                 query_offsets(%cq : memref<?xi32>) key_offsets(%ck : memref<?xi32>)
                 max_query_length(%m) causal
  return
}
