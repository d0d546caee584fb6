//===- GpuModuleToPTX.cpp - the fmha-gpu-module-to-ptx pass ---------------===//
//
// Part of FlashCore. The last step of --fmha-to-ptx: every NVVM gpu.module
// becomes a gpu.binary holding PTX from lib/Target, the same translation the
// JIT uses.
//
//===----------------------------------------------------------------------===//

#include "fmha/Dialect/Fmha/Passes.h"
#include "fmha/Target/NvJitLink.h"
#include "fmha/Target/PTX.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::fmha {
#define GEN_PASS_DEF_FMHAGPUMODULETOPTX
#include "fmha/FmhaPasses.h.inc"
} // namespace mlir::fmha

using namespace mlir;
using namespace mlir::fmha;

namespace {
struct FmhaGpuModuleToPTXPass
    : public fmha::impl::FmhaGpuModuleToPTXBase<FmhaGpuModuleToPTXPass> {
  using FmhaGpuModuleToPTXBase::FmhaGpuModuleToPTXBase;

  LogicalResult initialize(MLIRContext *context) override {
    return parseChipOption(context, getArgument(), chip, options.chip);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<PtxIsa> isa = choosePtxIsa(module.getLoc());
    if (failed(isa))
      return signalPassFailure();
    options.ptxIsa = *isa;

    SmallVector<gpu::GPUModuleOp> gpuModules(module.getOps<gpu::GPUModuleOp>());
    for (gpu::GPUModuleOp gpuModule : gpuModules) {
      std::optional<StageDirectory> dumps;
      if (!dumpDir.empty())
        dumps.emplace(dumpDir + "/" + gpuModule.getName().str());
      llvm::Expected<std::string> ptx =
          translateToPTX(gpuModule, options,
                         dumps ? StageSink(dumps->sink()) : StageSink(nullptr));
      if (!ptx) {
        gpuModule.emitError() << llvm::toString(ptx.takeError());
        return signalPassFailure();
      }
      if (dumps)
        if (llvm::Error err = dumps->takeError()) {
          gpuModule.emitError() << llvm::toString(std::move(err));
          return signalPassFailure();
        }
      replaceWithBinary(gpuModule, *ptx);
    }
  }

private:
  FailureOr<PtxIsa> choosePtxIsa(Location loc) {
    std::string note;
    llvm::Expected<PtxIsa> isa = resolvePtxIsa(options.chip, ptxIsa, note);
    if (!isa)
      return emitError(loc) << llvm::toString(isa.takeError());
    if (!note.empty())
      emitWarning(loc) << note;
    return *isa;
  }

  void replaceWithBinary(gpu::GPUModuleOp gpuModule, StringRef ptx) {
    MLIRContext *context = gpuModule.getContext();
    auto target = NVVM::NVVMTargetAttr::get(
        context, options.optLevel, "nvptx64-nvidia-cuda",
        stringifyChip(options.chip), options.ptxIsa.feature());
    auto object = gpu::ObjectAttr::get(
        context, target, gpu::CompilationTarget::Assembly,
        StringAttr::get(context, ptx), /*properties=*/nullptr,
        /*kernels=*/nullptr);
    OpBuilder builder(gpuModule);
    gpu::BinaryOp::create(builder, gpuModule.getLoc(), gpuModule.getName(),
                          /*offloadingHandler=*/nullptr,
                          builder.getArrayAttr({object}));
    gpuModule.erase();
  }

  PTXOptions options;
};
} // namespace
