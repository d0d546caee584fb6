//===- FmhaToNVGPU.cpp - lower fmha ops to gpu kernels over nvgpu ---------===//
//
// Part of FlashCore. The entry point of the fmha lowerings. No op has a
// lowering yet (the resample, sm_80 and sm_90a issues add them), so the pass
// reports each fmha op it meets as an error naming the op and the chip: a
// pipeline never appears to succeed on IR it cannot compile.
//
//===----------------------------------------------------------------------===//

#include "fmha/Dialect/Fmha/FmhaDialect.h"
#include "fmha/Dialect/Fmha/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

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
    bool anyUnsupported = false;
    getOperation()->walk([&](Operation *op) {
      if (!isa<AttentionOp, ResampleOp>(op))
        return;
      op->emitOpError("has no lowering to ")
          << stringifyChip(targetChip) << " yet";
      anyUnsupported = true;
    });
    if (anyUnsupported)
      signalPassFailure();
  }

  Chip targetChip = Chip::sm_90a;
};
} // namespace
