//===- FragmentSoftmax.cpp - sm_90a mask and online softmax ---------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "Sm90a/FragmentSoftmax.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include <limits>

using namespace mlir;
using namespace mlir::fmha;
using namespace mlir::fmha::sm90a;

void FragmentSoftmax::applyMask(SmallVectorImpl<Value> &scores, Value keyBase,
                                const FragmentLanes &lanes,
                                const TileCoordinates &tile) {
  Value laneKey = b.add(keyBase, b.mul(lanes.quadCol, b.index(2)));
  Value minusInf = b.f32(-std::numeric_limits<float>::infinity());
  for (int64_t half = 0; half < 2; ++half) {
    Value query =
        tile.getQueryPosition(b, lanes.getRow(b, tile.firstRow, half));
    RowMask mask = RowMask::compute(b, query, laneKey, tile.seqK,
                                    tile.range.diagonal, shape.blockN, window);
    for (int64_t chunk = 0; chunk < shape.blockN / 8; ++chunk)
      for (int64_t e = 0; e < 2; ++e) {
        Value &score = scores[4 * chunk + 2 * half + e];
        score = b.select(mask.hides(b, 8 * chunk + e), minusInf, score);
      }
  }
}

std::pair<SmallVector<Value>, std::array<Value, 2>>
FragmentSoftmax::update(ArrayRef<Value> scores, ConsumerState &state) {
  SmallVector<Value> probabilities(scores.size());
  std::array<Value, 2> alpha;
  for (int64_t half = 0; half < 2; ++half) {
    // This lane's scores of row g (half 0) or g + 8: elements 4 i + 2 half
    // and 4 i + 2 half + 1 of each n8 chunk i.
    SmallVector<Value> row;
    for (int64_t chunk = 0; chunk < shape.blockN / 8; ++chunk)
      for (int64_t e = 0; e < 2; ++e)
        row.push_back(scores[4 * chunk + 2 * half + e]);
    RowSoftmax update = RowSoftmax::update(b, row, state.rowMax[half],
                                           state.rowSum[half], shape.scaleLog2);
    for (int64_t chunk = 0; chunk < shape.blockN / 8; ++chunk)
      for (int64_t e = 0; e < 2; ++e)
        probabilities[4 * chunk + 2 * half + e] =
            update.probabilities[2 * chunk + e];
    state.rowMax[half] = update.max;
    state.rowSum[half] = update.sum;
    alpha[half] = update.alpha;
  }

  SmallVector<Value> packed;
  for (int64_t i = 0; i < static_cast<int64_t>(probabilities.size()); i += 2)
    packed.push_back(
        packPair(b, shape.elementType, probabilities[i], probabilities[i + 1]));
  return {packed, alpha};
}

Value FragmentSoftmax::scaleRows(Value out, std::array<Value, 2> factors) {
  SmallVector<Value> values = unpackAccumulator(b, out, shape.valueHeadDim / 2);
  for (int64_t i = 0; i < static_cast<int64_t>(values.size()); ++i)
    out = LLVM::InsertValueOp::create(
        b, out, b.fmul(values[i], factors[(i / 2) % 2]), i);
  return out;
}
