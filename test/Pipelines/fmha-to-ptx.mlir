// RUN: fmha-opt %s --fmha-to-ptx="chip=sm_80 ptx-isa=9.0" | FileCheck %s --check-prefix=SM80
// RUN: fmha-opt %s --fmha-to-ptx="chip=sm_90a ptx-isa=9.0" | FileCheck %s --check-prefix=SM90
// RUN: fmha-opt %s --fmha-to-nvvm=chip=sm_90a | FileCheck %s --check-prefix=NVVM
// RUN: rm -rf %t.dump && fmha-opt %s --fmha-to-ptx="chip=sm_90a dump-dir=%t.dump" -o /dev/null
// RUN: FileCheck %s --check-prefix=DUMP < %t.dump/kernels/kernel.ptx
// RUN: not fmha-opt %s --fmha-to-ptx=chip=sm_90 2>&1 | FileCheck %s --check-prefix=PLAIN90
// RUN: not fmha-opt %S/../../examples/attention.mlir --fmha-to-ptx=chip=sm_90a 2>&1 | FileCheck %s --check-prefix=FMHA

// Everything after convert-fmha-to-nvgpu works: a gpu.module written with
// upstream ops becomes PTX from lib/Target, attached as a gpu.binary.

// SM80: gpu.binary @kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_80", features = "+ptx90">, assembly =
// SM80-SAME: .version 9.0\0A.target sm_80
// SM80-SAME: .visible .entry scale(
// SM80-SAME: mul.rn.f32

// SM90: gpu.binary @kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx90">
// SM90-SAME: .target sm_90a

// NVVM: gpu.module @kernels
// NVVM: llvm.func @scale(
// NVVM-SAME: nvvm.kernel
// NVVM: nvvm.read.ptx.sreg.tid.x

// DUMP: .visible .entry scale(

// PLAIN90: error: fmha-materialize-tiles: chip 'sm_90' is not supported: Hopper kernels need the arch-specific 'sm_90a'

// An fmha op without a lowering for the chip stops at the conversion, with
// an error per op.
// FMHA: error: 'fmha.attention' op has no lowering to sm_90a yet

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
