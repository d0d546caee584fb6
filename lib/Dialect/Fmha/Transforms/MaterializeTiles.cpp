//===- MaterializeTiles.cpp - attach default tiles to fmha ops ------------===//
//
// Part of FlashCore. After this pass every fmha op carries the tile
// configuration the lowering will use (an attention_grad, the shared memory
// its kernels fit where the device's differs from the chip's), so a dump
// shows exactly what was built.
//
//===----------------------------------------------------------------------===//

#include "fmha/Dialect/Fmha/FmhaDialect.h"
#include "fmha/Dialect/Fmha/Passes.h"
#include "fmha/Dialect/Fmha/TileConfig.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::fmha {
#define GEN_PASS_DEF_FMHAMATERIALIZETILES
#include "fmha/FmhaPasses.h.inc"
} // namespace mlir::fmha

using namespace mlir;
using namespace mlir::fmha;

LogicalResult fmha::parseChipOption(MLIRContext *context,
                                    StringRef passArgument, StringRef chip,
                                    Chip &result) {
  llvm::Expected<Chip> parsed = parseChip(chip);
  if (!parsed)
    return emitError(UnknownLoc::get(context))
           << passArgument << ": " << llvm::toString(parsed.takeError());
  result = *parsed;
  return success();
}

/// Refuses a tile tuned for another chip: building it for \p target would
/// silently give a kernel nobody measured.
static LogicalResult checkTileChip(Operation *op, Chip tileChip, Chip target) {
  if (tileChip == target)
    return success();
  return op->emitOpError("tile configuration is for ")
         << stringifyChip(tileChip) << " but the target chip is "
         << stringifyChip(target);
}

namespace {
struct FmhaMaterializeTilesPass
    : public fmha::impl::FmhaMaterializeTilesBase<FmhaMaterializeTilesPass> {
  using FmhaMaterializeTilesBase::FmhaMaterializeTilesBase;

  LogicalResult initialize(MLIRContext *context) override {
    return parseChipOption(context, getArgument(), chip, targetChip);
  }

  void runOnOperation() override {
    bool anyFailed = false;
    getOperation()->walk([&](Operation *op) {
      LogicalResult result =
          llvm::TypeSwitch<Operation *, LogicalResult>(op)
              .Case(
                  [&](AttentionOp attention) { return materialize(attention); })
              .Case([&](AttentionGradOp grad) { return materialize(grad); })
              .Case([&](ResampleOp resample) { return materialize(resample); })
              .Default([](Operation *) { return success(); });
      anyFailed |= failed(result);
    });
    if (anyFailed)
      signalPassFailure();
  }

private:
  LogicalResult materialize(AttentionOp op) {
    if (std::optional<TileAttr> tile = op.getTile())
      return checkTileChip(op, tile->getChip(), targetChip);
    AttentionTiling tiling = getDefaultAttentionTiling(
        targetChip, op.getHeadDims(), op.getCausal(), /*querySeq=*/std::nullopt,
        /*queryGroup=*/1, /*pagedKeys=*/false, maxSharedBytes);
    op.setTileAttr(TileAttr::get(op.getContext(), tiling.chip, tiling.blockM,
                                 tiling.blockN, tiling.warps, tiling.stages));
    return success();
  }

  LogicalResult materialize(AttentionGradOp op) {
    if (!op.getMaxSharedBytes())
      op.setMaxSharedBytes(getAttentionGradSharedLimit(
          targetChip, op.getHeadDim(), static_cast<bool>(op.getDqAccum()),
          maxSharedBytes));
    return success();
  }

  LogicalResult materialize(ResampleOp op) {
    if (std::optional<ResampleTileAttr> tile = op.getTile())
      return checkTileChip(op, tile->getChip(), targetChip);
    ResampleTiling tiling = getDefaultResampleTiling(targetChip);
    op.setTileAttr(ResampleTileAttr::get(op.getContext(), tiling.chip,
                                         tiling.blockT, tiling.threads));
    return success();
  }

  Chip targetChip = Chip::sm_90a;
};
} // namespace
