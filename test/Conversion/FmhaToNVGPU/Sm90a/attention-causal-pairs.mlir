// RUN: fmha-opt %s -fmha-materialize-tiles=chip=sm_90a -convert-fmha-to-nvgpu=chip=sm_90a | FileCheck %s

// The persistent forward's units under a causal mask (PersistentTileSchedule
// ::placeUnit): pairs of row blocks R - 1 - i and i, every (batch, head)'s
// first (unit / pairs a head, its remainder the slot), then one middle row
// block per (batch, head) where R is odd (unit - pairs, slot R / 2: a
// unit alone, no second tile). Each role finds its tile so; the producer's
// is checked. Without the mask every unit is one row block: the unit
// divided by R.

// CHECK-LABEL: gpu.func @attention(
// CHECK: nvvm.setmaxregister decrease 24
// CHECK: scf.for
// CHECK: %[[ROWBLOCKS:.+]] = arith.ceildivui %{{.+}}, %c128_i32{{.*}} : i32
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1 : i32
// CHECK-NEXT: %[[PERHEAD:.+]] = arith.shrui %[[ROWBLOCKS]], %[[ONE]] : i32
// CHECK-NEXT: %[[PAIRS:.+]] = arith.muli %[[PERHEAD]], %{{.+}} : i32
// CHECK-NEXT: %[[PAIRED:.+]] = arith.cmpi slt, %[[UNIT:.+]], %[[PAIRS]] : i32
// CHECK: %[[DIVISOR:.+]] = arith.maxui %[[PERHEAD]], %{{.+}} : i32
// CHECK-NEXT: %[[MIDDLE:.+]] = arith.subi %[[UNIT]], %[[PAIRS]] : i32
// CHECK-NEXT: %[[HEAD:.+]] = arith.divui %[[UNIT]], %[[DIVISOR]] : i32
// CHECK-NEXT: arith.select %[[PAIRED]], %[[HEAD]], %[[MIDDLE]] : i32
// CHECK-NEXT: %[[SLOT:.+]] = arith.remui %[[UNIT]], %[[DIVISOR]] : i32
// CHECK-NEXT: arith.select %[[PAIRED]], %[[SLOT]], %[[PERHEAD]] : i32
// CHECK: nvvm.setmaxregister increase 240
func.func @causal(%q: memref<?x16x?x128xbf16>, %k: memref<?x16x?x128xbf16>,
                  %o: memref<?x16x?x128xbf16>) {
  fmha.attention q(%q : memref<?x16x?x128xbf16>) k(%k : memref<?x16x?x128xbf16>)
      v(%k : memref<?x16x?x128xbf16>) -> o(%o : memref<?x16x?x128xbf16>) causal
  return
}

// CHECK-LABEL: gpu.func @attention_0(
// CHECK: nvvm.setmaxregister decrease 24
// CHECK: scf.for
// CHECK: %[[ROWBLOCKS:.+]] = arith.ceildivui %{{.+}}, %c128_i32{{.*}} : i32
// CHECK-NEXT: arith.divui %[[UNIT:.+]], %[[ROWBLOCKS]] : i32
// CHECK-NEXT: arith.remui %[[UNIT]], %[[ROWBLOCKS]] : i32
// CHECK-NOT: arith.shrui
// CHECK: nvvm.setmaxregister increase 240
func.func @non_causal(%q: memref<?x16x?x128xbf16>, %k: memref<?x16x?x128xbf16>,
                      %o: memref<?x16x?x128xbf16>) {
  fmha.attention q(%q : memref<?x16x?x128xbf16>) k(%k : memref<?x16x?x128xbf16>)
      v(%k : memref<?x16x?x128xbf16>) -> o(%o : memref<?x16x?x128xbf16>)
  return
}
