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

/// The lane's scores of a row (columns 8 c + e after its first key, chunk c
/// and e of 2) that lie in the first \p columns (i32, 0 to blockN + 1),
/// in fragment order (2 c + e): 2 a chunk, and of the chunk the column
/// count reaches into, at most 2.
static Value countLaneScores(KernelBuilder &b, Value columns) {
  Value wholeChunks = b.lshr(columns, b.i32(3));
  Value inChunk = b.and_(columns, b.i32(7));
  return b.add(b.add(wholeChunks, wholeChunks), b.smin(inChunk, b.i32(2)));
}

/// Bits [0, \p count) of a 32-bit word, \p count (i32) clamped to [0, 32]:
/// shifted in 64 bits, where a shift by 32 is defined.
static Value getLowBits(KernelBuilder &b, Value count) {
  Value clamped = arith::ExtUIOp::create(b, b.getI64Type(),
                                         b.clamp(count, b.i32(0), b.i32(32)));
  Value bits = b.sub(arith::ShLIOp::create(b, b.i64(1), clamped), b.i64(1));
  return arith::TruncIOp::create(b, b.getI32Type(), bits);
}

void FragmentSoftmax::applyMask(SmallVectorImpl<Value> &scores, Value keyBase,
                                const FragmentLanes &lanes,
                                const TileCoordinates &tile, MaskForm form) {
  Value laneKey = b.add(keyBase, b.mul(lanes.quadCol, b.index(2)));
  Value minusInf = b.f32(-std::numeric_limits<float>::infinity());
  constexpr int64_t kWordBits = 32;
  int64_t rowScores = shape.blockN / 4;
  for (int64_t half = 0; half < 2; ++half) {
    Value query =
        tile.getQueryPosition(b, lanes.getRow(b, tile.firstRow, half));
    RowMask mask = RowMask::compute(b, query, laneKey, tile.seqK,
                                    tile.range.diagonal, shape.blockN, window);
    if (form == MaskForm::Compares) {
      for (int64_t chunk = 0; chunk < shape.blockN / 8; ++chunk)
        for (int64_t e = 0; e < 2; ++e) {
          Value &score = scores[4 * chunk + 2 * half + e];
          score = b.select(mask.hides(b, 8 * chunk + e), minusInf, score);
        }
      continue;
    }
    // A row's visible keys are a run (first to last), and so are its
    // lane's scores in fragment order: a word of bits a 32 of them, one
    // select a score on a bit that ptxas reads into predicates 7 at a
    // time (R2P), where the compares with both ends of the backward's
    // transposed mask took 4-6 instructions a score.
    Value visibleEnd = countLaneScores(b, b.add(mask.last, b.i32(1)));
    Value visibleBegin = mask.first ? countLaneScores(b, mask.first) : Value();
    for (int64_t word = 0; word * kWordBits < rowScores; ++word) {
      Value wordStart = b.i32(word * kWordBits);
      Value bits = getLowBits(b, b.sub(visibleEnd, wordStart));
      if (visibleBegin)
        bits =
            b.and_(bits, b.xor_(getLowBits(b, b.sub(visibleBegin, wordStart)),
                                b.i32(-1)));
      int64_t end = std::min(rowScores, (word + 1) * kWordBits);
      for (int64_t j = word * kWordBits; j < end; ++j) {
        Value &score = scores[4 * (j / 2) + 2 * half + j % 2];
        Value visible = b.ne(b.and_(bits, b.i32(static_cast<int32_t>(
                                              uint32_t(1) << (j % kWordBits)))),
                             b.i32(0));
        score = b.select(visible, score, minusInf);
      }
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
