//===- FragmentSoftmax.cpp - sm_90a mask and online softmax ---------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "Sm90a/FragmentSoftmax.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

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
FragmentSoftmax::update(ArrayRef<Value> scores, ConsumerState &state,
                        std::array<Value, 2> padding) {
  SmallVector<Value> probabilities(scores.size());
  std::array<Value, 2> alpha;
  for (int64_t half = 0; half < 2; ++half) {
    // This lane's scores of row g (half 0) or g + 8: elements 4 i + 2 half
    // and 4 i + 2 half + 1 of each n8 chunk i.
    SmallVector<Value> row;
    for (int64_t chunk = 0; chunk < shape.blockN / 8; ++chunk)
      for (int64_t e = 0; e < 2; ++e)
        row.push_back(scores[4 * chunk + 2 * half + e]);
    // The row's probabilities, then its max, sum and factor.
    auto compute = [&, half = half]() {
      RowSoftmax update =
          RowSoftmax::update(b, row, state.rowMax[half], state.rowSum[half],
                             shape.scaleLog2);
      SmallVector<Value> values = update.probabilities;
      values.append({update.max, update.sum, update.alpha});
      return values;
    };
    SmallVector<Value> values;
    if (!padding[half]) {
      values = compute();
    } else {
      SmallVector<Type> types(row.size() + 3, b.getF32Type());
      auto skip = scf::IfOp::create(b, types, padding[half],
                                    /*addThenBlock=*/true,
                                    /*addElseBlock=*/true);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(skip.thenBlock());
      SmallVector<Value> padded(row.size(), b.f32(0.0f));
      padded.append({state.rowMax[half], state.rowSum[half], b.f32(1.0f)});
      scf::YieldOp::create(b, padded);
      b.setInsertionPointToStart(skip.elseBlock());
      scf::YieldOp::create(b, compute());
      values.assign(skip.getResults().begin(), skip.getResults().end());
    }
    for (int64_t chunk = 0; chunk < shape.blockN / 8; ++chunk)
      for (int64_t e = 0; e < 2; ++e)
        probabilities[4 * chunk + 2 * half + e] = values[2 * chunk + e];
    state.rowMax[half] = values[row.size()];
    state.rowSum[half] = values[row.size() + 1];
    alpha[half] = values[row.size() + 2];
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
