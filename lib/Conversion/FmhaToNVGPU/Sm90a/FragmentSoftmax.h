//===- FragmentSoftmax.h - sm_90a mask and online softmax -------*- C++ -*-===//
//
// Part of FlashCore. Private to lib/Conversion/FmhaToNVGPU/Sm90a. The
// row-wise work of a consumer on its WGMMA accumulator fragments: the mask
// (RowMask) and the online softmax (RowSoftmax) of AttentionCommon.h,
// applied to the scores a lane holds of its rows g and g + 8, and the
// rescale of O. What is chip-specific here is only which fragment element
// holds which score, and that P leaves as the packed A registers of the
// register-A WGMMA.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_FMHATONVGPU_SM90A_FRAGMENTSOFTMAX_H
#define LIB_CONVERSION_FMHATONVGPU_SM90A_FRAGMENTSOFTMAX_H

#include "AttentionCommon.h"
#include "Sm90a/Sm90aAttention.h"
#include "TileSchedule.h"

namespace mlir::fmha::sm90a {

class FragmentSoftmax {
public:
  FragmentSoftmax(KernelBuilder &b, const KernelShape &shape,
                  const AttentionWindow &window)
      : b(b), shape(shape), window(window) {}

  /// How applyMask hides a score: by comparing its column with the row's
  /// ends, or by a bit of the row's run of visible scores (a word of bits
  /// a row, tested into predicates by R2P: a select a score). The backward
  /// takes the bits (+4-5% on causal rows); the forward measured 3-4%
  /// slower with them on 4k causal rows (backward-notes v59), so it keeps
  /// the compares.
  enum class MaskForm { Compares, Bits };

  /// Sets the scores (an unpacked m64nN accumulator of key block from
  /// \p keyBase, index) of keys hidden from their row to -inf.
  void applyMask(SmallVectorImpl<Value> &scores, Value keyBase,
                 const FragmentLanes &lanes, const TileCoordinates &tile,
                 MaskForm form = MaskForm::Compares);

  /// Folds the scores into the running max and sum of \p state and returns
  /// P = exp2(S * scale * log2 e - max) as packed pairs: for k step j, the
  /// four registers of its A fragment (rows g and g + 8 of keys 16 j + 2t,
  /// then of keys 16 j + 8 + 2t), i.e. elements 8 j .. 8 j + 7 as they are.
  /// Also returns the factors (rows g and g + 8) that O, accumulated under
  /// the old max, must be rescaled by.
  /// Where \p padding[half] (i1, warp-uniform) is set, the warp's rows of
  /// that half are all past the tile's queries: their P is 0, their max and
  /// sum stay and their factor is 1, and no exp2 is computed for them.
  std::pair<SmallVector<Value>, std::array<Value, 2>>
  update(ArrayRef<Value> scores, ConsumerState &state,
         std::array<Value, 2> padding = {});

  /// \p out with rows g and g + 8 multiplied by \p factors[0] and [1].
  Value scaleRows(Value out, std::array<Value, 2> factors);

private:
  KernelBuilder &b;
  const KernelShape &shape;
  const AttentionWindow &window;
};

} // namespace mlir::fmha::sm90a

#endif // LIB_CONVERSION_FMHATONVGPU_SM90A_FRAGMENTSOFTMAX_H
