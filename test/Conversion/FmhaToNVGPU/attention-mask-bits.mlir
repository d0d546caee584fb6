// RUN: fmha-opt %s -fmha-materialize-tiles=chip=sm_90a -convert-fmha-to-nvgpu=chip=sm_90a | FileCheck %s

// sm_90a's backward mask of a masked block (the diagonal, a window's
// edges, past the sequence): a row's visible columns are a run, and so are a lane's
// scores of it in fragment order (column 8 c + e after the lane's first is
// score 2 c + e), so each row takes a word of bits, the run's end as low
// bits (shifted in 64 bits: a count of 32 is defined there) less its
// start's, and each score one select on its bit, which ptxas reads into
// predicates by R2P.

// The backward's S^T: the transposed causal mask hides queries before the
// key (the run's start) and past Sq (its end), both ends in one word a row
// (128 queries: 32 scores a lane and row).
// CHECK-LABEL: gpu.func @attention_grad_dkv(
// CHECK:       arith.shli %{{.*}}, %{{.*}} : i64
// CHECK-NEXT:  %[[END_BITS:.*]] = arith.subi
// CHECK-NEXT:  %[[END:.*]] = arith.trunci %[[END_BITS]] : i64 to i32
// CHECK:       arith.shli %{{.*}}, %{{.*}} : i64
// CHECK-NEXT:  %[[BEGIN_BITS:.*]] = arith.subi
// CHECK-NEXT:  %[[BEGIN:.*]] = arith.trunci %[[BEGIN_BITS]] : i64 to i32
// CHECK-NEXT:  %[[NOT_BEFORE:.*]] = arith.xori %[[BEGIN]], %{{.*}} : i32
// CHECK-NEXT:  %[[BITS:.*]] = arith.andi %[[END]], %[[NOT_BEFORE]] : i32
// CHECK:       %[[BIT0:.*]] = arith.andi %[[BITS]], %c1_i32{{.*}} : i32
// CHECK-NEXT:  %[[SHOWN0:.*]] = arith.cmpi ne, %[[BIT0]]
// CHECK-NEXT:  arith.select %[[SHOWN0]], %{{.*}}, %cst{{.*}} : f32
// CHECK:       %[[BIT31:.*]] = arith.andi %[[BITS]], %c-2147483648_i32{{.*}} : i32
// CHECK-NEXT:  %[[SHOWN31:.*]] = arith.cmpi ne, %[[BIT31]]
// CHECK-NEXT:  arith.select %[[SHOWN31]], %{{.*}}, %cst{{.*}} : f32
// CHECK-NOT:   arith.cmpi sgt
// CHECK:       gpu.return
func.func @grad_causal(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                       %lse: memref<?x?x?xf32>, %delta: memref<?x?x?xf32>,
                       %acc: memref<?x?x?x64xf32>) {
  fmha.attention_grad q(%q : memref<?x?x?x64xbf16>) k(%k : memref<?x?x?x64xbf16>)
      v(%k : memref<?x?x?x64xbf16>) o(%q : memref<?x?x?x64xbf16>)
      dout(%q : memref<?x?x?x64xbf16>) lse(%lse : memref<?x?x?xf32>)
      -> dq(%q : memref<?x?x?x64xbf16>) dk(%k : memref<?x?x?x64xbf16>)
         dv(%k : memref<?x?x?x64xbf16>) delta(%delta : memref<?x?x?xf32>)
         dq_accum(%acc : memref<?x?x?x64xf32>) causal
  return
}

// The forward keeps a compare of each score's column with the row's end
// (3-4% faster on 4k causal rows than the bits; backward-notes v59).
// CHECK-LABEL: gpu.func @attention(
// CHECK-NOT:   arith.shli %{{.*}}, %{{.*}} : i64
// CHECK:       arith.cmpi sgt
// CHECK-NOT:   arith.shli %{{.*}}, %{{.*}} : i64
// CHECK:       gpu.return
func.func @forward_causal(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                          %o: memref<?x?x?x128xbf16>) {
  fmha.attention q(%q : memref<?x?x?x128xbf16>) k(%k : memref<?x?x?x128xbf16>)
                 v(%k : memref<?x?x?x128xbf16>) -> o(%o : memref<?x?x?x128xbf16>)
                 causal
  return
}
