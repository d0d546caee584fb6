//===- FragmentSoftmax.h - sm_80 mask and online softmax --------*- C++ -*-===//
//
// Part of FlashCore. Private to lib/Conversion/FmhaToNVGPU/Sm80. The
// row-wise work of a warp on its m16n8 accumulator fragments: the mask
// (RowMask) and the online softmax (RowSoftmax) of AttentionCommon.h
// applied to the scores a lane holds, the rescale of O, and where the
// running row sums live. What is chip-specific here is only which fragment
// element holds which score, and that P leaves as mma.sync A fragments.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_FMHATONVGPU_SM80_FRAGMENTSOFTMAX_H
#define LIB_CONVERSION_FMHATONVGPU_SM80_FRAGMENTSOFTMAX_H

#include "AttentionCommon.h"
#include "Sm80/Sm80Attention.h"
#include "TileSchedule.h"

namespace mlir::fmha::sm80 {

class FragmentSoftmax {
public:
  /// \p threadId is the thread's id (i32); \p sums the shared address of
  /// the row sums where they live there (SharedTiles).
  FragmentSoftmax(KernelBuilder &b, const KernelShape &shape,
                  const AttentionWindow &window, Value threadId, Value sums)
      : b(b), shape(shape), window(window), threadId(threadId), sums(sums) {}

  /// Sets scores of invisible keys (past Sk, or outside the causal or
  /// window bounds of their row) of the key block from \p keyBase (index)
  /// to -inf.
  void applyMask(const Lanes &lanes, const TileCoordinates &tile,
                 SmallVectorImpl<Value> &scores, Value keyBase);

  /// Folds S into the running max and sum of \p state, rescales its O, and
  /// returns P = exp2(S * scale * log2 e - max) as [mTile][k16] A
  /// fragments.
  SmallVector<Value> update(const Lanes &lanes, ArrayRef<Value> scores,
                            SoftmaxState &state);

  /// The running row sums a lane carries through the key loops. The four
  /// lanes of a quad share rows (two per m16 tile), so lane q holds the
  /// sums of slots q, q + 4, ... only, quad-reduced each block: one
  /// register at two m16 tiles instead of four, for eight shuffles per key
  /// block. (At head dim 128 ptxas kept even that one in local memory, so
  /// there it lives in shared memory: getHeldSum.)
  int64_t getHeldSums() const { return (shape.mTiles * 2 + 3) / 4; }

  /// The running row sum \p held of this lane: a loop-carried value of
  /// \p state, or, where the tile leaves ptxas too few registers to carry
  /// it (getSm80RowSumSharedBytes), a slot in shared memory.
  Value getHeldSum(const SoftmaxState &state, int64_t held);
  void setHeldSum(SoftmaxState &state, int64_t held, Value sum);

private:
  Value getHeldSumPointer(int64_t held);
  Value pickHeld(const Lanes &lanes, ArrayRef<Value> perSlot, int64_t held);

  KernelBuilder &b;
  const KernelShape &shape;
  const AttentionWindow &window;
  Value threadId, sums;
};

} // namespace mlir::fmha::sm80

#endif // LIB_CONVERSION_FMHATONVGPU_SM80_FRAGMENTSOFTMAX_H
