// RUN: fmha-opt %s -split-input-file -pass-pipeline='builtin.module(llvm.func(fmha-tensor-map-parameters))' -verify-diagnostics | FileCheck %s

// The leading tensor maps of a kernel's launch contract (fmha.launch) become
// 128-byte byval grid-constant parameters (CUtensorMap, 64-byte aligned);
// the others are untouched, and the contract stays for the compile path to
// hand out.

// CHECK-LABEL: llvm.func @kernel(
// CHECK-SAME: %arg0: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant},
// CHECK-SAME: %arg1: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant},
// CHECK-SAME: %arg2: !llvm.ptr)
// CHECK-SAME: fmha.launch = #fmha.launch<
llvm.func @kernel(%q: !llvm.ptr, %k: !llvm.ptr, %data: !llvm.ptr) attributes {fmha.launch = #fmha.launch<operands = [q, k], threads = 128, shared_bytes = 0, grid = [q[0], 1, 1], parameters = [tensor_map(q, bf16, box = [64, 64], swizzle = 128), tensor_map(k, bf16, box = [64, 64], swizzle = 128), q]>, nvvm.kernel} {
  llvm.return
}

// -----

// Functions without a contract, or with one without tensor maps, are left
// alone.
// CHECK-LABEL: llvm.func @plain(
// CHECK-SAME: %arg0: !llvm.ptr)
llvm.func @plain(%p: !llvm.ptr) attributes {nvvm.kernel} {
  llvm.return
}

// -----

// expected-error @+1 {{'llvm.func' op has 1 tensor map parameters in fmha.launch but is not an NVVM kernel with that many parameters}}
llvm.func @not_a_kernel(%p: !llvm.ptr) attributes {fmha.launch = #fmha.launch<operands = [q], threads = 128, shared_bytes = 0, grid = [1, 1, 1], parameters = [tensor_map(q, f16, box = [64], swizzle = 0)]>} {
  llvm.return
}

// -----

// expected-error @+1 {{'llvm.func' op tensor map parameter 0 is 'i64', expected a pointer}}
llvm.func @not_a_pointer(%p: i64) attributes {fmha.launch = #fmha.launch<operands = [q], threads = 128, shared_bytes = 0, grid = [1, 1, 1], parameters = [tensor_map(q, f16, box = [64], swizzle = 0)]>, nvvm.kernel} {
  llvm.return
}

// -----

// expected-error @+1 {{'llvm.func' op has tensor map parameters after memref ones; fmha.launch must list them first}}
llvm.func @late_map(%p: !llvm.ptr, %m: !llvm.ptr) attributes {fmha.launch = #fmha.launch<operands = [q], threads = 128, shared_bytes = 0, grid = [1, 1, 1], parameters = [q, tensor_map(q, f16, box = [64], swizzle = 0)]>, nvvm.kernel} {
  llvm.return
}
