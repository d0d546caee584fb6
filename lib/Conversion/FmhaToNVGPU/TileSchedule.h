//===- TileSchedule.h - which tiles an attention CTA works on ---*- C++ -*-===//
//
// Part of FlashCore. Private to lib/Conversion/FmhaToNVGPU. How the CTAs of
// an attention kernel divide the (batch, head, row block) tiles among them:
// the part of a kernel's schedule that is the same whatever instructions
// compute a tile. sm_80 launches one CTA per row block (CtaCoordinates);
// sm_90a launches a persistent grid whose CTAs take units of work in turn
// (PersistentTileSchedule).
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_FMHATONVGPU_TILESCHEDULE_H
#define LIB_CONVERSION_FMHATONVGPU_TILESCHEDULE_H

#include "AttentionCommon.h"
#include "KernelBuilder.h"

namespace mlir::fmha {

/// Which rows, head and sizes one CTA of the sm_80 kernel works on: grid x
/// is the row block (longest causal blocks first: block x computes row block
/// gridDim.x - 1 - x), grid y the query head (getRowBlockGrid).
struct CtaCoordinates {
  Value seqQ, seqK, firstRow, head, kvHead;

  static CtaCoordinates compute(KernelBuilder &b, Value q, Value k,
                                int64_t blockM);
};

/// One tile: block_m query rows from firstRow of one (batch, head), the
/// sizes of its q and k, and the key blocks its rows see.
struct TileCoordinates {
  Value batchIndex, head, kvHead, firstRow, seqQ, seqK;
  KeyBlockRange range;
};

/// The tile loop of a persistent kernel: CTA x takes the units of work x,
/// x + gridDim.x, ... (pairsAttentionRowBlocks in TileConfig.h: a row
/// block, or a pair of them, of one (batch, head)). Consecutive units share
/// a (batch, head), so its K and V stay in L2.
class PersistentTileSchedule {
public:
  /// \p q and \p k are the kernel's memref parameters; \p pairsRowBlocks is
  /// pairsAttentionRowBlocks of the op.
  PersistentTileSchedule(KernelBuilder &b, Value q, Value k, int64_t blockM,
                         int64_t blockN, const AttentionWindow &window,
                         bool pairsRowBlocks)
      : b(b), q(q), k(k), blockM(blockM), blockN(blockN), window(window),
        pairsRowBlocks(pairsRowBlocks) {}

  /// Runs \p body for each tile this CTA computes, carrying a count of the
  /// tiles (\p iteration: the parity of a per-tile barrier) and of the key
  /// blocks passed so far (\p blocks; \p body returns the new count), both
  /// i32, from 0.
  void forEachTile(llvm::function_ref<Value(const TileCoordinates &tile,
                                            Value iteration, Value blocks)>
                       body);

private:
  Value getRowBlocks();
  Value getUnitsPerHead();
  Value getLongerRowBlock(Value slot);
  TileCoordinates getTile(Value unit, Value second);
  /// A size of \p tensor computed anew where it is used.
  Value freshDim(Value tensor, int64_t axis);

  KernelBuilder &b;
  Value q, k;
  int64_t blockM, blockN;
  AttentionWindow window;
  bool pairsRowBlocks;
};

} // namespace mlir::fmha

#endif // LIB_CONVERSION_FMHATONVGPU_TILESCHEDULE_H
