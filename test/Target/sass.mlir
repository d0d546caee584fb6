// REQUIRES: cuobjdump
// RUN: fmha-compile %s --chip=sm_90a --emit=cubin -o %t.sm90a.cubin
// RUN: %cuobjdump -sass %t.sm90a.cubin | FileCheck %s --check-prefix=SM90
// RUN: fmha-compile %s --chip=sm_80 --emit=cubin -o %t.sm80.cubin
// RUN: %cuobjdump -sass %t.sm80.cubin | FileCheck %s --check-prefix=SM80

// The cubins nvJitLink produces hold SASS for the requested arch, with the
// kernel's multiply and no local-memory traffic.

// SM90: code for sm_90a
// SM90: Function : scale
// SM90: FMUL
// SM90-NOT: {{LDL|STL}}

// SM80: code for sm_80
// SM80: Function : scale
// SM80: FMUL
// SM80-NOT: {{LDL|STL}}

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale(%x: memref<?xf32>, %n: index, %s: f32) kernel {
      %i = gpu.thread_id x
      %inside = arith.cmpi ult, %i, %n : index
      scf.if %inside {
        %v = memref.load %x[%i] : memref<?xf32>
        %r = arith.mulf %v, %s : f32
        memref.store %r, %x[%i] : memref<?xf32>
      }
      gpu.return
    }
  }
}
