//===- FmhaToNVGPU.cpp - lower fmha ops to gpu kernels over nvgpu ---------===//
//
// Part of FlashCore. The entry point of the fmha lowerings: each op becomes a
// kernel in the module's `fmha_kernels` gpu.module and a gpu.launch_func in
// its place: fmha.resample (ResampleToGPU.cpp) and fmha.attention
// (AttentionToGPU.cpp for sm_80, AttentionToGPUSm90.cpp for sm_90a) for both
// chips.
//
//===----------------------------------------------------------------------===//

#include "FmhaToNVGPU.h"
#include "fmha/Dialect/Fmha/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::fmha {
#define GEN_PASS_DEF_CONVERTFMHATONVGPU
#include "fmha/FmhaPasses.h.inc"
} // namespace mlir::fmha

using namespace mlir;
using namespace mlir::fmha;

namespace {
struct ConvertFmhaToNVGPUPass
    : public fmha::impl::ConvertFmhaToNVGPUBase<ConvertFmhaToNVGPUPass> {
  using ConvertFmhaToNVGPUBase::ConvertFmhaToNVGPUBase;

  LogicalResult initialize(MLIRContext *context) override {
    return parseChipOption(context, getArgument(), chip, targetChip);
  }

  void runOnOperation() override {
    SmallVector<Operation *> fmhaOps;
    getOperation()->walk([&](Operation *op) {
      if (isa<AttentionOp, ResampleOp, CheckSortedOp>(op))
        fmhaOps.push_back(op);
    });
    bool anyFailed = false;
    for (Operation *op : fmhaOps) {
      FailureOr<gpu::GPUModuleOp> kernels = getKernelModule(op);
      if (failed(kernels)) {
        anyFailed = true;
        continue;
      }
      if (auto resample = dyn_cast<ResampleOp>(op))
        anyFailed |= failed(lowerResampleToGPU(resample, *kernels));
      else if (auto check = dyn_cast<CheckSortedOp>(op))
        anyFailed |= failed(lowerCheckSortedToGPU(check, *kernels));
      else
        anyFailed |=
            failed(lowerAttentionToGPU(cast<AttentionOp>(op), *kernels));
    }
    if (anyFailed)
      signalPassFailure();
  }

private:
  /// The gpu.module that receives the kernels of the ops in \p op's module,
  /// created (and the module marked as a GPU container) on first use.
  FailureOr<gpu::GPUModuleOp> getKernelModule(Operation *op) {
    auto module = op->getParentOfType<ModuleOp>();
    if (!module)
      return op->emitOpError("must be inside a builtin.module to be lowered");
    if (auto existing = module.lookupSymbol<gpu::GPUModuleOp>(kKernelModule))
      return existing;
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(module.getContext()));
    OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
    return gpu::GPUModuleOp::create(builder, module.getLoc(), kKernelModule);
  }

  static constexpr llvm::StringLiteral kKernelModule = "fmha_kernels";
  Chip targetChip = Chip::sm_90a;
};
} // namespace
