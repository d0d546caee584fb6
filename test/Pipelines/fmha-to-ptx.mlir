// RUN: fmha-opt %s --fmha-to-ptx="chip=sm_80 ptx-isa=9.0" | FileCheck %s --check-prefix=SM80
// RUN: fmha-opt %s --fmha-to-ptx="chip=sm_90a ptx-isa=9.0" | FileCheck %s --check-prefix=SM90
// RUN: fmha-opt %s --fmha-to-nvvm=chip=sm_90a | FileCheck %s --check-prefix=NVVM
// RUN: rm -rf %t.dump && fmha-opt %s --fmha-to-ptx="chip=sm_90a dump-dir=%t.dump" -o /dev/null
// RUN: FileCheck %s --check-prefix=DUMP < %t.dump/kernels/kernel.ptx
// RUN: not fmha-opt %s --fmha-to-ptx=chip=sm_90 2>&1 | FileCheck %s --check-prefix=PLAIN90
// RUN: fmha-opt %S/../../examples/attention.mlir --fmha-to-ptx=chip=sm_90a | FileCheck %s --check-prefix=FMHA

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

// The main job's attention op for sm_90a: the warp-specialized kernel, its
// TMA tensor maps as 128-byte grid-constant parameters (cvta.param), the
// registers moved to the consumers, the consumers taking turns at issuing
// GEMMs (ping-pong: consumer 0 starts with its own turn, each waits on its
// named barrier before the WGMMAs and passes the turn on after committing
// them), WGMMA with both operands in shared memory (Q K^T) and with A in
// registers (P V, transposed B), TMA loads completing on mbarriers.
// FMHA: gpu.binary @fmha_kernels
// FMHA-SAME: .param .align 64 .b8 attention_param_0[128]
// FMHA-SAME: cvta.param.u64
// FMHA-SAME: mbarrier.init.shared.b64
// FMHA-SAME: setmaxnreg.inc.sync.aligned.u32 \09240
// FMHA-SAME: bar.arrive [[FIRST:%r[0-9]+]], [[THREADS:%r[0-9]+]];
// FMHA-SAME: mbarrier.try_wait.parity.shared.b64
// FMHA-SAME: bar.sync \09[[TURN:%r[0-9]+]], 256;
// FMHA-SAME: wgmma.fence.sync.aligned
// FMHA-SAME: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// FMHA-SAME: p, 1,  1, 0,  0;
// FMHA-SAME: wgmma.commit_group.sync.aligned
// FMHA-SAME: bar.arrive
// FMHA-SAME: wgmma.wait_group.sync.aligned \090
// FMHA-SAME: bar.sync \09[[TURN]], 256;
// FMHA-SAME: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// FMHA-SAME: wgmma.commit_group.sync.aligned
// FMHA-SAME: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// FMHA-SAME: p, 1, 1, 1;
// FMHA-SAME: wgmma.commit_group.sync.aligned
// FMHA-SAME: bar.arrive
// FMHA-SAME: wgmma.wait_group.sync.aligned \091
// FMHA-SAME: setmaxnreg.dec.sync.aligned.u32 \0924
// FMHA-SAME: cp.async.bulk.tensor.4d.shared::cta.global.tile.mbarrier::complete_tx::bytes

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
