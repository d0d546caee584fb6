// RUN: fmha-compile %s --chip=sm_90a | FileCheck %s

// math.exp becomes a call to libdevice's __nv_expf, which lib/Target links
// and inlines: the PTX computes it with ex2 and calls nothing.

// CHECK-NOT: .extern .func
// CHECK: .visible .entry exp_kernel(
// CHECK: ex2.approx
// CHECK-NOT: call

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @exp_kernel(%x: memref<?xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<?xf32>
      %e = math.exp %v : f32
      memref.store %e, %x[%i] : memref<?xf32>
      gpu.return
    }
  }
}
