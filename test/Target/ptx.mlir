// RUN: fmha-compile %s --chip=sm_80 --ptx-isa=9.0 | FileCheck %s --check-prefix=SM80
// RUN: fmha-compile %s --chip=sm_90a --ptx-isa=9.0 | FileCheck %s --check-prefix=SM90
// RUN: fmha-compile %s --chip=sm_80 --ptx-isa=7.8 | FileCheck %s --check-prefix=ISA78
// RUN: fmha-compile %s --chip=sm_90a --emit=link-log | FileCheck %s --check-prefix=LOG90
// RUN: fmha-compile %s --chip=sm_80 --arch=sm_90 --emit=link-log | FileCheck %s --check-prefix=LOG80ON90

// lib/Target's PTX for both chips, the chosen ISA, and nvJitLink's verbose
// info log: one kernel, no spills, no local memory.

// SM80: .version 9.0
// SM80-NEXT: .target sm_80
// SM80-NEXT: .address_size 64
// SM80: .visible .entry scale(
// SM80: mul.rn.f32

// SM90: .version 9.0
// SM90-NEXT: .target sm_90a

// ISA78: .version 7.8
// ISA78-NEXT: .target sm_80

// LOG90: Compiling entry function 'scale' for 'sm_90a'
// LOG90: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// LOG90: Function properties for 'scale':
// LOG90-SAME: {{$}}
// LOG90-NEXT: {{.*}} 0 bytes lmem

// LOG80ON90: Compiling entry function 'scale' for 'sm_90'
// LOG80ON90: 0 bytes spill stores, 0 bytes spill loads

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale(%x: memref<?xf32>, %n: index, %s: f32) kernel {
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %base = arith.muli %bid, %bdim : index
      %i = arith.addi %base, %tid : index
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
