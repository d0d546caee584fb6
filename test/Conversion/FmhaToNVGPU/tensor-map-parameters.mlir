// RUN: fmha-opt %s -split-input-file -pass-pipeline='builtin.module(llvm.func(fmha-tensor-map-parameters))' -verify-diagnostics | FileCheck %s

// The leading parameters named by fmha.tensor_map_arguments become 128-byte
// byval grid-constant parameters (CUtensorMap, 64-byte aligned); the others
// are untouched and the marker attribute is consumed.

// CHECK-LABEL: llvm.func @kernel(
// CHECK-SAME: %arg0: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant},
// CHECK-SAME: %arg1: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant},
// CHECK-SAME: %arg2: !llvm.ptr)
// CHECK-NOT: fmha.tensor_map_arguments
llvm.func @kernel(%q: !llvm.ptr, %k: !llvm.ptr, %data: !llvm.ptr) attributes {fmha.tensor_map_arguments = 2 : i64, nvvm.kernel} {
  llvm.return
}

// -----

// Functions without the marker are left alone.
// CHECK-LABEL: llvm.func @plain(
// CHECK-SAME: %arg0: !llvm.ptr)
llvm.func @plain(%p: !llvm.ptr) attributes {nvvm.kernel} {
  llvm.return
}

// -----

// expected-error @+1 {{'llvm.func' op has fmha.tensor_map_arguments = 1 but is not an NVVM kernel with that many parameters}}
llvm.func @not_a_kernel(%p: !llvm.ptr) attributes {fmha.tensor_map_arguments = 1 : i64} {
  llvm.return
}

// -----

// expected-error @+1 {{'llvm.func' op tensor map parameter 0 is 'i64', expected a pointer}}
llvm.func @not_a_pointer(%p: i64) attributes {fmha.tensor_map_arguments = 1 : i64, nvvm.kernel} {
  llvm.return
}
