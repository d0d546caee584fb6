//===- Pipelines.cpp - named fmha pipelines -------------------------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "fmha/Pipelines/Pipelines.h"
#include "fmha/Dialect/Fmha/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/NVGPUToNVVM/NVGPUToNVVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::fmha;

void fmha::buildFmhaToNVVMPipeline(OpPassManager &pm,
                                   const FmhaPipelineOptions &options) {
  pm.addPass(createFmhaMaterializeTiles({options.chip}));
  pm.addPass(createConvertFmhaToNVGPU({options.chip}));

  // The device half of upstream's gpu-lower-to-nvvm-pipeline, nested so that
  // host code is not touched: the runtime launches the kernels itself.
  OpPassManager &device = pm.nest<gpu::GPUModuleOp>();
  device.addPass(createConvertNVGPUToNVVMPass());
  device.addPass(createConvertVectorToSCFPass());
  device.addPass(createSCFToControlFlowPass());
  device.addPass(createConvertNVVMToLLVMPass());
  device.addPass(memref::createExpandStridedMetadataPass());
  device.addPass(createArithToLLVMConversionPass());
  device.addPass(createConvertIndexToLLVMPass());
  ConvertGpuOpsToNVVMOpsOptions gpuToNVVM;
  gpuToNVVM.indexBitwidth = 64;
  device.addPass(createConvertGpuOpsToNVVMOps(gpuToNVVM));
  device.addNestedPass<LLVM::LLVMFuncOp>(createFmhaTensorMapParameters());
  device.addPass(createCanonicalizerPass());
  device.addPass(createCSEPass());
  device.addPass(createReconcileUnrealizedCastsPass());
}

void fmha::buildFmhaToPTXPipeline(OpPassManager &pm,
                                  const FmhaPipelineOptions &options) {
  buildFmhaToNVVMPipeline(pm, options);
  pm.addPass(createFmhaGpuModuleToPTX(
      {options.chip, options.ptxIsa, options.dumpDir}));
}

void fmha::registerFmhaPipelines() {
  PassPipelineRegistration<FmhaPipelineOptions>(
      "fmha-to-nvvm",
      "lower fmha ops for a chip through NVGPU to gpu.modules in the NVVM "
      "dialect (chip=sm_80|sm_90a)",
      buildFmhaToNVVMPipeline);
  PassPipelineRegistration<FmhaPipelineOptions>(
      "fmha-to-ptx",
      "lower fmha ops for a chip through NVGPU and NVVM to PTX "
      "(chip=sm_80|sm_90a ptx-isa=9.0 dump-dir=DIR)",
      buildFmhaToPTXPipeline);
}
