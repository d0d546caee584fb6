// RUN: fmha-opt %s -split-input-file -fmha-materialize-tiles=chip=sm_90a -convert-fmha-to-nvgpu=chip=sm_90a | FileCheck %s

// fmha.resample becomes a kernel in @fmha_kernels and a launch in its place.

// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK: func.func @two_streams(%[[T0:.+]]: memref<?x400xf32>, %[[X0:.+]]: memref<?x400x6xbf16>, %[[N0:.+]]: memref<?xi32>, %[[T1:.+]]: memref<?x100xf32>, %[[X1:.+]]: memref<?x100x32xbf16>, %[[N1:.+]]: memref<?xi32>, %[[TT:.+]]: memref<?x60xf32>, %[[O:.+]]: memref<?x60x38xbf16>)
// CHECK: %[[T:.+]] = memref.dim %[[TT]], %c1
// CHECK: %[[BLOCKS:.+]] = arith.ceildivui %[[T]], %c256
// CHECK: %[[B:.+]] = memref.dim %[[TT]], %c0
// CHECK: %[[ROWS:.+]] = arith.minui %[[B]], %c65535
// CHECK: gpu.launch_func @fmha_kernels::@resample blocks in (%[[BLOCKS]], %[[ROWS]], %{{[a-z0-9_]+}}) threads in (%{{[a-z0-9_]+}},
// CHECK-SAME: args(%[[T0]] : memref<?x400xf32>, %[[T1]] : memref<?x100xf32>, %[[X0]] : memref<?x400x6xbf16>, %[[X1]] : memref<?x100x32xbf16>, %[[N0]] : memref<?xi32>, %[[N1]] : memref<?xi32>, %[[TT]] : memref<?x60xf32>, %[[O]] : memref<?x60x38xbf16>)
// CHECK-NOT: fmha.resample
// CHECK: gpu.module @fmha_kernels
// CHECK: gpu.func @resample(
// CHECK-SAME: workgroup(%[[FIRST:[a-z0-9]+]] : memref<256xi32, #gpu.address_space<workgroup>>, %[[SECOND:[a-z0-9]+]] : memref<256xi32, #gpu.address_space<workgroup>>, %[[W:[a-z0-9]+]] : memref<256xf32, #gpu.address_space<workgroup>>, %[[STAGED:[a-z0-9]+]] : memref<2048xf32, #gpu.address_space<workgroup>>)
// The launch contract the host reads; enough CTAs resident for half the
// SM's threads: ptxas keeps 64 registers.
// CHECK-SAME: kernel attributes {fmha.launch = #fmha.launch<operands = [times0, times1, values0, values1, lengths0, lengths1, targets, out], threads = 256, shared_bytes = 0, grid = [ceildiv(targets[1], 256), min(targets[0], 65535), 1], parameters = [times0, times1, values0, values1, lengths0, lengths1, targets, out]>, known_block_size = array<i32: 256, 1, 1>, nvvm.minctasm = 4 : i32}
// Rows stride by the grid's y extent.
// CHECK: %[[GRIDY:.+]] = gpu.grid_dim y
// CHECK: scf.for %[[ROW:.+]] = %{{.+}} to %{{.+}} step %[[GRIDY]]
// One target per thread (block_t <= threads): loaded before the staging, so
// its round trip overlaps that of the times.
// CHECK: %[[HAS_TARGET:.+]] = arith.cmpi ult, %{{.+}}, %{{.+}} : index
// CHECK: %[[TARGET:.+]] = scf.if %[[HAS_TARGET]] -> (f32)
// CHECK: memref.load %[[TT]]
// Stream 0: stage the row's times when they fit (the loads of four items
// issued before the first store), search once per target, then
// interpolate per feature.
// CHECK: %[[FITS:.+]] = arith.cmpi ule, %{{.+}}, %c2048
// CHECK: scf.if %[[FITS]]
// CHECK-COUNT-4: memref.load %{{.+}} : memref<?x400xf32>
// CHECK: memref.store %{{.+}}, %[[STAGED]]
// CHECK: gpu.barrier
// CHECK: scf.if %[[HAS_TARGET]]
// CHECK: scf.while
// CHECK: arith.cmpf ole, %{{.+}}, %[[TARGET]]
// CHECK: memref.store %{{.+}}, %[[FIRST]]
// CHECK: memref.store %{{.+}}, %[[W]]
// CHECK: gpu.barrier
// 6 bf16 features are not a multiple of 16 bytes: scalar accesses, each
// thread a run of 3 features of one target (3 divides 6), both samples of
// the run loaded before the first is interpolated.
// CHECK: scf.for
// CHECK-COUNT-6: memref.load %{{.+}} : memref<?x400x6xbf16>
// CHECK-NOT: memref.load %{{.+}} : memref<?x400x6xbf16>
// CHECK: arith.extf %{{.+}} : bf16 to f32
// CHECK: math.fma
// CHECK: arith.truncf %{{.+}} : f32 to bf16
// CHECK: memref.store
// CHECK: gpu.barrier
// Stream 1 writes after stream 0's 6 features: offset 6 is not 16-byte
// aligned in the 38-wide output either, so it stays scalar too.
// CHECK: scf.while
// CHECK: %[[C6:.+]] = arith.constant 6 : index
// CHECK: arith.addi %{{.+}}, %[[C6]]
// CHECK-NOT: vector.load
// CHECK: gpu.return

func.func @two_streams(%t_imu: memref<?x400xf32>, %imu: memref<?x400x6xbf16>, %n_imu: memref<?xi32>,
                       %t_joint: memref<?x100xf32>, %joint: memref<?x100x32xbf16>, %n_joint: memref<?xi32>,
                       %t_out: memref<?x60xf32>, %out: memref<?x60x38xbf16>) {
  fmha.resample linear
      times(%t_imu, %t_joint : memref<?x400xf32>, memref<?x100xf32>)
      values(%imu, %joint : memref<?x400x6xbf16>, memref<?x100x32xbf16>)
      lengths(%n_imu, %n_joint : memref<?xi32>, memref<?xi32>)
      targets(%t_out : memref<?x60xf32>)
      -> out(%out : memref<?x60x38xbf16>)
  return
}

// -----

// Dense rows with D a multiple of 16 bytes: 16-byte vector loads and stores.
// CHECK-LABEL: func.func @vectorized
// CHECK: gpu.func @resample(
// CHECK: vector.load %{{.+}} {alignment = 16 : i64} : memref<?x?x64xbf16>, vector<8xbf16>
// CHECK: arith.extf %{{.+}} : vector<8xbf16> to vector<8xf32>
// CHECK: vector.broadcast
// CHECK: math.fma %{{.+}} : vector<8xf32>
// CHECK: vector.store %{{.+}} {alignment = 16 : i64} : memref<?x?x64xbf16>, vector<8xbf16>
func.func @vectorized(%t: memref<?x?xf32>, %x: memref<?x?x64xbf16>, %tt: memref<?x?xf32>, %o: memref<?x?x64xbf16>) {
  fmha.resample linear times(%t : memref<?x?xf32>) values(%x : memref<?x?x64xbf16>) targets(%tt : memref<?x?xf32>) -> out(%o : memref<?x?x64xbf16>)
  return
}

// -----

// Two ops, two kernels; f32 values need no conversion; nearest compares
// the distances to both neighbours.
// CHECK-LABEL: func.func @two_ops
// CHECK: gpu.launch_func @fmha_kernels::@resample
// CHECK: gpu.launch_func @fmha_kernels::@resample_0
// CHECK: gpu.func @resample(
// CHECK-NOT: arith.extf
// CHECK: gpu.func @resample_0(
// CHECK: arith.cmpf ole
// CHECK: arith.select
func.func @two_ops(%t: memref<?x?xf32>, %x: memref<?x?x3xf32>, %tt: memref<?x?xf32>, %o: memref<?x?x3xf32>) {
  fmha.resample previous times(%t : memref<?x?xf32>) values(%x : memref<?x?x3xf32>) targets(%tt : memref<?x?xf32>) -> out(%o : memref<?x?x3xf32>)
  fmha.resample nearest times(%t : memref<?x?xf32>) values(%x : memref<?x?x3xf32>) targets(%tt : memref<?x?xf32>) -> out(%o : memref<?x?x3xf32>)
  return
}
