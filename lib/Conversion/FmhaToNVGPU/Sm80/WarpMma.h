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
  SmallVector<Value> computeScores(const Lanes &lanes) {
    return multiplyTransposed(lanes, tiles.q, tiles.k);
  }

  /// O += P V for this warp's rows; \p probabilities are [mTile][k16] A
  /// fragments, \p out [mTile][dTile] accumulators.
  void accumulateValues(const Lanes &lanes, ArrayRef<Value> probabilities,
                        SmallVectorImpl<Value> &out) {
    accumulateProduct(lanes, probabilities, tiles.v, out);
  }

  /// A B^T for this warp's rows of the shared tile \p a (blockM x D) and
  /// the shared tile \p bTile (blockN x D): [mTile][nTile] accumulators.
  SmallVector<Value> multiplyTransposed(const Lanes &lanes, Value a,
                                        Value bTile);

  /// out += A B for this warp's rows, \p a as [mTile][k16] A fragments
  /// (packOperandA) and the shared tile \p bTile (blockN x D) read
  /// transposed; \p out [mTile][dTile] accumulators.
  void accumulateProduct(const Lanes &lanes, ArrayRef<Value> a, Value bTile,
                         SmallVectorImpl<Value> &out);

  /// out += A B for one m16 tile: \p a are its k16 A fragments, B rows
  /// k16 * i of \p bTile (from the lane's \p bLanes, a valueLanes whose row
  /// may start further down) read transposed, d tiles from the even
  /// \p firstDTile on, one per accumulator of \p out.
  void accumulateSlice(const LaneMatrices &bLanes, ArrayRef<Value> a,
                       Value bTile, int64_t firstDTile,
                       SmallVectorImpl<Value> &out);

  /// out += A B: \p a as [mTile][k16] A fragments over \p kSteps k16 steps,
  /// B rows k16 * i of \p bTile (from \p bLanes' row) read transposed, its
  /// \p dTiles n8 tiles from the even \p firstDTile on; \p out
  /// [mTile][dTile] accumulators. Each B fragment an ldmatrix loads feeds
  /// every m16 tile.
  void accumulate(ArrayRef<Value> a, int64_t kSteps, const LaneMatrices &bLanes,
                  Value bTile, int64_t firstDTile, int64_t dTiles,
                  SmallVectorImpl<Value> &out);

  /// The A fragments ([mTile][k16]) of \p mTiles m16 tiles over \p kSteps
  /// k16 steps of the swizzled shared tile \p tile, from the row of
  /// \p aLanes (a queryLanes).
  SmallVector<Value> loadOperandA(Value tile, const LaneMatrices &aLanes,
                                  int64_t mTiles, int64_t kSteps);

private:
  Value loadMatrices(Value shared, const LaneMatrices &lanes, int64_t rowOffset,
                     int64_t chunkPair, bool transpose);
  Value takeFragmentB(Value matrices, int64_t first);
  Value mma(Value a, Value bFragment, Value acc);

  KernelBuilder &b;
  const KernelShape &shape;
  const SharedTiles &tiles;
};

/// Rounds a warp's m16n8 f32 results of \p shape's [mTile][nTile] to
/// [mTile][k16] m16n8k16 A fragments of the element type: A is rows
/// (g, k 0-7), (g + 8, k 0-7), (g, k 8-15), (g + 8, k 8-15), which are
/// accumulator tiles 2k and 2k + 1 as they are, so no lane exchanges
/// anything. \p pairAt(m, n, half) is the vector<2xf32> of half \p half
/// (row g or g + 8) of tile (m, n).
SmallVector<Value>
packOperandA(KernelBuilder &b, const KernelShape &shape,
             llvm::function_ref<Value(int64_t m, int64_t n, int64_t half)>
                 pairAt);

} // namespace mlir::fmha::sm80

#endif // LIB_CONVERSION_FMHATONVGPU_SM80_WARPMMA_H
