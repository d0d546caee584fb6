//===- FmhaPasses.td - fmha passes -------------------------*- tablegen -*-===//
//
// Part of FlashCore. Every pass takes the target as `chip=sm_80|sm_90a`,
// spelled the same everywhere.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_PASSES_TD
#define FMHA_PASSES_TD

include "mlir/Pass/PassBase.td"

def Fmha_ChipOption
    : Option<"chip", "chip", "std::string", /*default=*/"\"sm_90a\"",
             "target GPU architecture: sm_80 or sm_90a">;

def FmhaMaterializeTiles : Pass<"fmha-materialize-tiles"> {
  let summary = "attach the chip's default tile configuration to every fmha op without one";
  let description = [{
    Gives every `fmha.attention` without a `tile` the chip's default
    `#fmha.tile` for its head dimension and causality, and every
    `fmha.resample` without one the default `#fmha.resample_tile`, so that
    the lowerings read one explicit configuration. An op whose tile names
    another chip is an error: a kernel tuned for one chip is never silently
    built for another.

    With `max-shared-bytes`, the shared memory a block may take on the GPU
    the kernels are built for where it is less than the chip's (sm_80's
    kernels on an sm_86 or sm_89 GPU: 101376), the default tiles are ones
    that fit it where the chip's do not, and every `fmha.attention_grad`
    without `max_shared_bytes` whose kernels must tile to fit it gets that
    limit (getAttentionGradSharedLimit), as the JIT does for the device
    it runs on.
  }];
  let options = [
    Fmha_ChipOption,
    Option<"maxSharedBytes", "max-shared-bytes", "uint64_t", /*default=*/"0",
           "shared memory a block may take on the target GPU, in bytes "
           "(e.g. 101376 for an sm_86 or sm_89 GPU); 0: the chip's">
  ];
}

def ConvertFmhaToNVGPU : Pass<"convert-fmha-to-nvgpu"> {
  let summary = "lower fmha ops to gpu kernels over nvgpu, vector, scf and memref";
  let description = [{
    Lowers `fmha.attention` and `fmha.resample` with materialized tiles to
    kernels in the module's `fmha_kernels` gpu.module for `chip`, each op
    replaced by a `gpu.launch_func`. An sm_90a attention kernel takes the
    TMA tensor maps of q, k and v as its first parameters (created on the
    host side with `nvgpu.tma.create.descriptor`).
  }];
  let options = [Fmha_ChipOption];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::ub::UBDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def FmhaTensorMapParameters : Pass<"fmha-tensor-map-parameters", "::mlir::LLVM::LLVMFuncOp"> {
  let summary = "pass a kernel's TMA tensor maps by value, as grid constants";
  let description = [{
    For an NVVM kernel (llvm.func) whose launch contract (`fmha.launch`)
    starts with N tensor maps, makes its first N parameters 128-byte `byval`
    grid-constant parameters
    (`__grid_constant__ const CUtensorMap` in CUDA): the runtime passes
    each map by value, and the TMA instructions address the parameter
    itself (cvta.param), so no device copy of the map is needed. Runs after
    the GPU-to-NVVM lowering, which drops parameter attributes it does not
    know.
  }];
  let dependentDialects = ["::mlir::NVVM::NVVMDialect"];
}

def FmhaGpuModuleToPTX : Pass<"fmha-gpu-module-to-ptx", "ModuleOp"> {
  let summary = "translate each NVVM gpu.module to PTX with FlashCore's NVPTX target machine";
  let description = [{
    Replaces every `gpu.module` (already lowered to the LLVM and NVVM
    dialects) by a `gpu.binary` whose object holds the PTX (format
    `assembly`), produced by lib/Target at O3. The PTX ISA is `ptx-isa` when
    given, else the newest the available nvJitLink accepts, else the newest
    LLVM emits (with a warning saying so).
  }];
  let options = [
    Fmha_ChipOption,
    Option<"ptxIsa", "ptx-isa", "std::string", /*default=*/"\"\"",
           "PTX ISA version such as 9.0 (default: what nvJitLink accepts)">,
    Option<"dumpDir", "dump-dir", "std::string", /*default=*/"\"\"",
           "directory that receives kernel.ll, kernel.opt.ll and kernel.ptx">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::NVVM::NVVMDialect"];
}

#endif // FMHA_PASSES_TD
