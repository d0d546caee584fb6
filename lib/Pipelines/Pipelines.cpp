//===- Pipelines.cpp - named fmha pipelines -------------------------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "fmha/Pipelines/Pipelines.h"
#include "fmha/Dialect/Fmha/Passes.h"

#include "mlir/Dialect/GPU/Pipelines/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::fmha;

/// PTX ISA 9.0 (CUDA 13.0): the newest that nvJitLink 13.0 and the R580
/// driver accept, and the newest LLVM 22's NVPTX backend emits. The backend
/// issue replaces this constant with a choice made from the linked nvJitLink.
static constexpr const char *kPtxFeatures = "+ptx90";

void fmha::buildFmhaToPTXPipeline(OpPassManager &pm,
                                  const FmhaToPTXOptions &options) {
  pm.addPass(createFmhaMaterializeTiles({options.chip}));
  pm.addPass(createConvertFmhaToNVGPU({options.chip}));

  gpu::GPUToNVVMPipelineOptions nvvm;
  nvvm.cubinChip = options.chip;
  nvvm.cubinFeatures = kPtxFeatures;
  nvvm.cubinFormat = "isa";
  nvvm.optLevel = 3;
  gpu::buildLowerToNVVMPassPipeline(pm, nvvm);
}

void fmha::registerFmhaPipelines() {
  PassPipelineRegistration<FmhaToPTXOptions>(
      "fmha-to-ptx",
      "lower fmha ops for a chip through NVGPU and NVVM to PTX "
      "(chip=sm_80|sm_90a)",
      buildFmhaToPTXPipeline);
}
