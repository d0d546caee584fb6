//===- WarpMma.h - sm_80 attention: ldmatrix and mma.sync -------*- C++ -*-===//
//
// Part of FlashCore. Private to lib/Conversion/FmhaToNVGPU/Sm80. The two
// GEMMs of a warp of the sm_80 attention kernel as m16n8k16 mma.sync with
// f32 accumulators: S = Q K^T and O += P V, their B operands (and Q) loaded
// from the swizzled shared tiles with ldmatrix.x4 (V transposed), P already
// in registers as A fragments.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_FMHATONVGPU_SM80_WARPMMA_H
#define LIB_CONVERSION_FMHATONVGPU_SM80_WARPMMA_H

#include "Sm80/Sm80Attention.h"

namespace mlir::fmha::sm80 {

class WarpMma {
public:
  WarpMma(KernelBuilder &b, const KernelShape &shape, const SharedTiles &tiles)
      : b(b), shape(shape), tiles(tiles) {}

  /// S = Q K^T for this warp's rows: [mTile][nTile] accumulators.
  SmallVector<Value> computeScores(const Lanes &lanes);

  /// O += P V for this warp's rows; \p probabilities are [mTile][k16] A
  /// fragments, \p out [mTile][dTile] accumulators.
  void accumulateValues(const Lanes &lanes, ArrayRef<Value> probabilities,
                        SmallVectorImpl<Value> &out);

private:
  Value loadMatrices(Value shared, const LaneMatrices &lanes, int64_t rowOffset,
                     int64_t chunkPair, bool transpose);
  Value takeFragmentB(Value matrices, int64_t first);
  Value mma(Value a, Value bFragment, Value acc);

  KernelBuilder &b;
  const KernelShape &shape;
  const SharedTiles &tiles;
};

} // namespace mlir::fmha::sm80

#endif // LIB_CONVERSION_FMHATONVGPU_SM80_WARPMMA_H
