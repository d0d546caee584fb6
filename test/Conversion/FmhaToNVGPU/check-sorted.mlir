// RUN: fmha-opt %s -convert-fmha-to-nvgpu=chip=sm_80 | FileCheck %s
// RUN: fmha-compile %s --chip=sm_90a | FileCheck %s --check-prefix=PTX
// RUN: fmha-compile %s --chip=sm_80 --emit=link-log | FileCheck %s --check-prefix=LOG

// fmha.check_sorted becomes a kernel that lowers each stream's `first` to
// the position (row << 32 | i) of every pair out of order, with an unsigned
// atomic min, so the earliest row's earliest pair remains.

// CHECK: func.func @check(%[[T0:.+]]: memref<?x400xf32>, %[[T1:.+]]: memref<?x?xf32>, %[[N0:.+]]: memref<?xi32>, %[[N1:.+]]: memref<?xi32>, %[[F:.+]]: memref<2xi64>)
// CHECK: %[[B:.+]] = memref.dim %[[T0]], %c0
// CHECK: %[[ROWS:.+]] = arith.minui %[[B]], %c65535
// CHECK: gpu.launch_func @fmha_kernels::@check_sorted blocks in (%[[ROWS]], %{{.+}}, %{{.+}}) threads in (%c256,
// CHECK-SAME: args(%[[T0]] : memref<?x400xf32>, %[[T1]] : memref<?x?xf32>, %[[N0]] : memref<?xi32>, %[[N1]] : memref<?xi32>, %[[F]] : memref<2xi64>)
// CHECK-NOT: fmha.check_sorted
// CHECK: gpu.func @check_sorted(
// CHECK-SAME: kernel attributes {fmha.launch = #fmha.launch<operands = [times0, times1, lengths0, lengths1, first], threads = 256, shared_bytes = 0, grid = [min(times0[0], 65535), 1, 1], parameters = [times0, times1, lengths0, lengths1, first]>, known_block_size = array<i32: 256, 1, 1>}
// Rows stride by the grid's x extent.
// CHECK: %[[GRIDX:.+]] = gpu.grid_dim x
// CHECK: scf.for %[[ROW:.+]] = %{{.+}} to %{{.+}} step %[[GRIDX]]
// CHECK: %[[ROWBITS:.+]] = arith.shli %{{.+}}, %c32_i64
// Stream 0: pairs among clamp(lengths[row], 0, S) valid samples.
// CHECK: memref.load %[[N0]][%[[ROW]]]
// CHECK: arith.maxsi
// CHECK: arith.minui
// CHECK: scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step
// CHECK: %[[EARLIER:.+]] = memref.load %{{.+}}[%[[ROW]], %[[I]]] : memref<?x400xf32>
// CHECK: %[[LATER:.+]] = memref.load %{{.+}}[%[[ROW]], %{{.+}}] : memref<?x400xf32>
// Out of order: greater, or either one NaN.
// CHECK: %[[BAD:.+]] = arith.cmpf ugt, %[[EARLIER]], %[[LATER]]
// CHECK: scf.if %[[BAD]]
// CHECK: %[[POS:.+]] = arith.ori %[[ROWBITS]], %{{.+}} : i64
// CHECK: memref.atomic_rmw minu %[[POS]], %[[F]][%c0{{.*}}] : (i64, memref<2xi64>) -> i64
// Stream 1 writes slot 1.
// CHECK: memref.load %[[N1]][%[[ROW]]]
// CHECK: memref.atomic_rmw minu %{{.+}}, %[[F]][%c1{{.*}}] : (i64, memref<2xi64>) -> i64
// CHECK: gpu.return

// PTX: .visible .entry check_sorted(
// PTX: ld.global.b32
// PTX: atom.global.min.u64
// PTX-NOT: .local

// LOG: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

func.func @check(%t0: memref<?x400xf32>, %t1: memref<?x?xf32>, %n0: memref<?xi32>,
                 %n1: memref<?xi32>, %first: memref<2xi64>) {
  fmha.check_sorted times(%t0, %t1 : memref<?x400xf32>, memref<?x?xf32>)
      lengths(%n0, %n1 : memref<?xi32>, memref<?xi32>) -> first(%first : memref<2xi64>)
  return
}
