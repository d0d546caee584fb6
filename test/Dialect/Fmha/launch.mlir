// RUN: fmha-opt %s | fmha-opt | FileCheck %s
// RUN: fmha-opt %s --mlir-print-op-generic | fmha-opt | FileCheck %s

// A kernel's launch contract (#fmha.launch on its gpu.func) reads back as it
// prints: every grid form, persistent, dependent_launch, tensor maps (an L2
// promotion printed where it is not 128 bytes) and memref parameters.

module attributes {gpu.container_module} {
gpu.module @kernels {
  // CHECK-LABEL: gpu.func @row_blocks
  // CHECK-SAME: fmha.launch = #fmha.launch<operands = [q, k, v, o], threads = 128, shared_bytes = 49152, grid = [ceildiv(q[2], 128), q[1], min(q[0], 65535)], parameters = [q, k, v, o]>
  gpu.func @row_blocks(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>, %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) kernel attributes {
      fmha.launch = #fmha.launch<operands = [q, k, v, o], threads = 128, shared_bytes = 49152,
                                 grid = [ceildiv(q[2], 128), q[1], min(q[0], 65535)],
                                 parameters = [q, k, v, o]>} {
    gpu.return
  }

  // CHECK-LABEL: gpu.func @persistent
  // CHECK-SAME: fmha.launch = #fmha.launch<operands = [q, k, v, o, lse], threads = 384, shared_bytes = 164944, grid = [min(ceildiv(q[2], 256) * q[1] * q[0], 2147483647), 1, 1], persistent, parameters = [tensor_map(q, bf16, box = [128, 64], swizzle = 128), tensor_map(k, bf16, box = [128, 64], swizzle = 128, l2_promotion = 256), q, k, v, o, lse]>
  gpu.func @persistent(%mq: !llvm.ptr, %mk: !llvm.ptr, %q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>, %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>, %lse: memref<?x?x?xf32>) kernel attributes {
      fmha.launch = #fmha.launch<operands = [q, k, v, o, lse], threads = 384, shared_bytes = 164944,
                                 grid = [min(ceildiv(q[2], 256) * q[1] * q[0], 2147483647), 1, 1], persistent,
                                 parameters = [tensor_map(q, bf16, box = [128, 64], swizzle = 128),
                                               tensor_map(k, bf16, box = [128, 64], swizzle = 128, l2_promotion = 256),
                                               q, k, v, o, lse]>} {
    gpu.return
  }

  // An index operand (a variable-length attention's max_query_length) is
  // passed as its value, and a grid factor reads it as its dimension 0.
  // CHECK-LABEL: gpu.func @index_operand
  // CHECK-SAME: fmha.launch = #fmha.launch<operands = [q, k, v, o, query_offsets, max_query_length], threads = 128, shared_bytes = 49152, grid = [ceildiv(max_query_length[0], 128), q[1], min(query_offsets[0], 65535)], parameters = [q, k, v, o, query_offsets, index(max_query_length)]>
  gpu.func @index_operand(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>, %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>, %cq: memref<?xi32>, %m: index) kernel attributes {
      fmha.launch = #fmha.launch<operands = [q, k, v, o, query_offsets, max_query_length], threads = 128, shared_bytes = 49152,
                                 grid = [ceildiv(max_query_length[0], 128), q[1], min(query_offsets[0], 65535)],
                                 parameters = [q, k, v, o, query_offsets, index(max_query_length)]>} {
    gpu.return
  }

  // A kernel that waits for the grids before it (merge_attention on sm_90a).
  // CHECK-LABEL: gpu.func @dependent
  // CHECK-SAME: fmha.launch = #fmha.launch<operands = [outs, lses, o], threads = 256, shared_bytes = 0, grid = [min(ceildiv(o[2], 8) * o[1] * o[0], 2147483647), 1, 1], dependent_launch, parameters = [outs, lses, o]>
  gpu.func @dependent(%outs: memref<?x?x?x?x64xf16>, %lses: memref<?x?x?x?xf32>, %o: memref<?x?x?x64xf16>) kernel attributes {
      fmha.launch = #fmha.launch<operands = [outs, lses, o], threads = 256, shared_bytes = 0,
                                 grid = [min(ceildiv(o[2], 8) * o[1] * o[0], 2147483647), 1, 1], dependent_launch,
                                 parameters = [outs, lses, o]>} {
    gpu.return
  }

  // Operands the kernel does not take (a host-side size source) are allowed.
  // CHECK-LABEL: gpu.func @streams
  // CHECK-SAME: grid = [ceildiv(targets[1], 64), min(targets[0], 65535), 1], parameters = [times0, targets]>
  gpu.func @streams(%t: memref<?x?xf32>, %targets: memref<?x?xf32>) kernel attributes {
      fmha.launch = #fmha.launch<operands = [times0, values0, targets], threads = 256, shared_bytes = 0,
                                 grid = [ceildiv(targets[1], 64), min(targets[0], 65535), 1],
                                 parameters = [times0, targets]>} {
    gpu.return
  }
}
}
