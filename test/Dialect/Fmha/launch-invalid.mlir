// RUN: fmha-opt %s -split-input-file -verify-diagnostics -allow-unregistered-dialect

// One case per diagnostic of #fmha.launch and of fmha.launch on a gpu.func.

// expected-error @+1 {{'r' is not a launch operand}}
"test.op"() {a = #fmha.launch<operands = [q], threads = 32, shared_bytes = 0, grid = [r[0], 1, 1], parameters = [q]>} : () -> ()

// -----

// expected-error @+1 {{a grid has 3 axes, got 2}}
"test.op"() {a = #fmha.launch<operands = [q], threads = 32, shared_bytes = 0, grid = [q[0], 1], parameters = [q]>} : () -> ()

// -----

// expected-error @+1 {{a grid axis without factors is 1, got 2}}
"test.op"() {a = #fmha.launch<operands = [q], threads = 32, shared_bytes = 0, grid = [2, 1, 1], parameters = [q]>} : () -> ()

// -----

// expected-error @+1 {{tensor map element must be f16, bf16 or f32, got i8}}
"test.op"() {a = #fmha.launch<operands = [q], threads = 32, shared_bytes = 0, grid = [1, 1, 1], parameters = [tensor_map(q, i8, box = [64], swizzle = 0)]>} : () -> ()

// -----

// expected-error @+1 {{invalid launch contract: threads is 2048, expected 1 to 1024}}
"test.op"() {a = #fmha.launch<operands = [q], threads = 2048, shared_bytes = 0, grid = [1, 1, 1], parameters = [q]>} : () -> ()

// -----

// expected-error @+1 {{invalid launch contract: grid x divides by 0}}
"test.op"() {a = #fmha.launch<operands = [q], threads = 32, shared_bytes = 0, grid = [ceildiv(q[0], 0), 1, 1], parameters = [q]>} : () -> ()

// -----

// expected-error @+1 {{invalid launch contract: grid y is clamped to 70000, expected 1 to 65535}}
"test.op"() {a = #fmha.launch<operands = [q], threads = 32, shared_bytes = 0, grid = [1, min(q[0], 70000), 1], parameters = [q]>} : () -> ()

// -----

// expected-error @+1 {{invalid launch contract: parameter 0: swizzle is 16 bytes, expected 0, 32, 64 or 128}}
"test.op"() {a = #fmha.launch<operands = [q], threads = 32, shared_bytes = 0, grid = [1, 1, 1], parameters = [tensor_map(q, f16, box = [64], swizzle = 16)]>} : () -> ()

// -----

// expected-error @+1 {{invalid launch contract: parameter 0: l2_promotion is 32 bytes, expected 0, 64, 128 or 256}}
"test.op"() {a = #fmha.launch<operands = [q], threads = 32, shared_bytes = 0, grid = [1, 1, 1], parameters = [tensor_map(q, f16, box = [64], swizzle = 0, l2_promotion = 32)]>} : () -> ()

// -----

// expected-error @+1 {{invalid launch contract: parameter 0: a tensor map box has 1 to 5 non-zero extents}}
"test.op"() {a = #fmha.launch<operands = [q], threads = 32, shared_bytes = 0, grid = [1, 1, 1], parameters = [tensor_map(q, f16, box = [64, 0], swizzle = 0)]>} : () -> ()

// -----

// expected-error @+1 {{launch operand names must be unique and not min, ceildiv, tensor_map or index, got 'q'}}
"test.op"() {a = #fmha.launch<operands = [q, q], threads = 32, shared_bytes = 0, grid = [1, 1, 1], parameters = [q]>} : () -> ()

// -----

// expected-error @+1 {{fmha.launch belongs on a kernel function}}
"test.op"() {fmha.launch = #fmha.launch<operands = [q], threads = 32, shared_bytes = 0, grid = [1, 1, 1], parameters = [q]>} : () -> ()

// -----

// expected-error @+1 {{fmha.launch must be a #fmha.launch, got 1 : i64}}
"test.op"() {fmha.launch = 1 : i64} : () -> ()

// -----

// expected-error @+1 {{unknown fmha attribute on an operation: "fmha.tensor_map_arguments"}}
"test.op"() {fmha.tensor_map_arguments = 1 : i64} : () -> ()

// -----

module attributes {gpu.container_module} {
gpu.module @kernels {
  // expected-error @+1 {{'gpu.func' op has 1 parameters, its fmha.launch contract lists 2}}
  gpu.func @count(%q: memref<?xf32>) kernel attributes {fmha.launch = #fmha.launch<operands = [q], threads = 32, shared_bytes = 0, grid = [1, 1, 1], parameters = [q, q]>} {
    gpu.return
  }
}
}

// -----

module attributes {gpu.container_module} {
gpu.module @kernels {
  // expected-error @+1 {{'gpu.func' op parameter 0 is 'memref<?xf32>', but fmha.launch makes it the tensor map of 'q'}}
  gpu.func @map(%q: memref<?xf32>) kernel attributes {fmha.launch = #fmha.launch<operands = [q], threads = 32, shared_bytes = 0, grid = [1, 1, 1], parameters = [tensor_map(q, f32, box = [64], swizzle = 0)]>} {
    gpu.return
  }
}
}

// -----

module attributes {gpu.container_module} {
gpu.module @kernels {
  // expected-error @+1 {{'gpu.func' op parameter 0 is '!llvm.ptr', but fmha.launch makes it the memref descriptor of 'q'}}
  gpu.func @memref(%q: !llvm.ptr) kernel attributes {fmha.launch = #fmha.launch<operands = [q], threads = 32, shared_bytes = 0, grid = [1, 1, 1], parameters = [q]>} {
    gpu.return
  }
}
}

// -----

module attributes {gpu.container_module} {
gpu.module @kernels {
  // expected-error @+1 {{'gpu.func' op fmha.launch's grid reads q[2], but that operand has rank 1}}
  gpu.func @rank(%q: memref<?xf32>) kernel attributes {fmha.launch = #fmha.launch<operands = [q], threads = 32, shared_bytes = 0, grid = [q[2], 1, 1], parameters = [q]>} {
    gpu.return
  }
}
}

// -----

module attributes {gpu.container_module} {
gpu.module @kernels {
  // expected-error @+1 {{'gpu.func' op parameter 1 is 'memref<?xi32>', but fmha.launch makes it the index 'm'}}
  gpu.func @index(%q: memref<?xf32>, %m: memref<?xi32>) kernel attributes {fmha.launch = #fmha.launch<operands = [q, m], threads = 32, shared_bytes = 0, grid = [ceildiv(m[0], 64), 1, 1], parameters = [q, index(m)]>} {
    gpu.return
  }
}
}

// -----

module attributes {gpu.container_module} {
gpu.module @kernels {
  // An index operand has one dimension: its value.
  // expected-error @+1 {{'gpu.func' op fmha.launch's grid reads m[1], but that operand has rank 1}}
  gpu.func @index_rank(%q: memref<?xf32>, %m: index) kernel attributes {fmha.launch = #fmha.launch<operands = [q, m], threads = 32, shared_bytes = 0, grid = [m[1], 1, 1], parameters = [q, index(m)]>} {
    gpu.return
  }
}
}
