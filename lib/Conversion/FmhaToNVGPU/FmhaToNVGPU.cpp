//===- FmhaToNVGPU.cpp - lower fmha ops to gpu kernels over nvgpu ---------===//
//
// Part of FlashCore. The entry point of the fmha lowerings: each op becomes a
// kernel in the module's `fmha_kernels` gpu.module and a gpu.launch_func in
// its place. fmha.resample and fmha.check_sorted have one kernel for every
// chip (ResampleToGPU.cpp), and so has fmha.merge_attention
// (MergeToGPU.cpp); fmha.attention_grad has three, the same on every chip
// (Sm80/AttentionGradToGPUSm80.cpp); fmha.attention has one per chip, and this file
// is the one place that picks it: Sm80/ (FlashAttention-2 over mma.sync,
// ldmatrix and cp.async) or Sm90a/ (warp-specialized, over WGMMA, TMA and
// mbarriers). What the chips share (tiling arithmetic, masks, online
// softmax, which tiles a CTA takes) is at the top of this folder.
//
//===----------------------------------------------------------------------===//

#include "fmha/Conversion/FmhaToNVGPU/FmhaToNVGPU.h"
#include "AttentionLowerings.h"
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

LogicalResult fmha::lowerAttentionToGPU(AttentionOp op,
                                        gpu::GPUModuleOp kernels) {
  std::optional<TileAttr> tile = op.getTile();
  if (!tile)
    return op.emitOpError(
        "has no tile configuration: run fmha-materialize-tiles first");
  for (Value operand : {op.getQ(), op.getK(), op.getV(), op.getO()}) {
    auto type = cast<MemRefType>(operand.getType());
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(type.getStridesAndOffset(strides, offset)) ||
        strides.back() != 1)
      return op.emitOpError("needs q, k, v and o dense along the head "
                            "dimension (innermost stride 1), got ")
             << type;
  }
  switch (tile->getChip()) {
  case Chip::sm_80:
    return lowerAttentionToGPUSm80(op, *tile, kernels);
  case Chip::sm_90a:
    return lowerAttentionToGPUSm90a(op, *tile, kernels);
  }
  llvm_unreachable("unknown chip");
}

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
      if (isa<AttentionOp, AttentionGradOp, MergeAttentionOp, ResampleOp,
              CheckSortedOp>(op))
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
      else if (auto merge = dyn_cast<MergeAttentionOp>(op))
        anyFailed |=
            failed(lowerMergeAttentionToGPU(merge, *kernels, targetChip));
      else if (auto grad = dyn_cast<AttentionGradOp>(op))
        anyFailed |= failed(lowerAttentionGradToGPU(grad, *kernels, targetChip));
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
