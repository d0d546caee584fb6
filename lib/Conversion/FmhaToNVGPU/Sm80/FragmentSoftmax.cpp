//===- FragmentSoftmax.cpp - sm_80 mask and online softmax ----------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "Sm80/FragmentSoftmax.h"
#include "Sm80/WarpMma.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;
using namespace mlir::fmha;
using namespace mlir::fmha::sm80;

void FragmentSoftmax::applyMask(const Lanes &lanes, const TileCoordinates &tile,
                                SmallVectorImpl<Value> &scores, Value keyBase) {
  // This lane's columns in each n8 tile are 2t and 2t + 1.
  Value laneKey = b.add(keyBase, b.toIndex(b.mul(lanes.quadCol, b.i32(2))));
  Value minusInf = b.f32(-std::numeric_limits<float>::infinity());
  // Sk and Sk - Sq read anew in each masked block: derived once, they and
  // what derives from them are 64-bit values held across every key loop.
  Value keys = hideFromHoisting(b, tile.seqK);
  Value queries = hideFromHoisting(b, tile.seqQ);
  // Packed query heads: Sq is the packed rows' over G.
  if (tile.queryGroup)
    queries = divideWords(b, queries, tile.queryGroup);
  Value diagonal = b.sub(keys, queries);
  for (int64_t m = 0; m < shape.mTiles; ++m)
    for (int64_t half = 0; half < 2; ++half) {
      Value query =
          tile.getQueryPosition(b, lanes.getRow(b, tile.firstRow, m, half));
      RowMask mask = RowMask::compute(b, query, laneKey, keys, diagonal,
                                      shape.blockN, window);
      for (int64_t n = 0; n < shape.nTiles; ++n) {
        Value &fragment = scores[m * shape.nTiles + n];
        for (int64_t e = 0; e < 2; ++e) {
          Value hidden = mask.hides(b, n * kMmaN + e);
          SmallVector<int64_t, 2> at = {half, e};
          Value score = vector::ExtractOp::create(b, fragment, at);
          fragment = vector::InsertOp::create(
              b, b.select(hidden, minusInf, score), fragment, at);
        }
      }
    }
}

SmallVector<Value> FragmentSoftmax::update(const Lanes &lanes,
                                           ArrayRef<Value> scores,
                                           SoftmaxState &state) {
  int64_t mTiles = shape.mTiles, nTiles = shape.nTiles;
  // [mTile][nTile][half] rows of 2 probabilities, in f32.
  SmallVector<Value> rows(mTiles * nTiles * 2);
  // Per slot: this block's sum of the row (quad-reduced), and alpha.
  SmallVector<Value> blockSums, alphas;
  for (int64_t m = 0; m < mTiles; ++m)
    for (int64_t half = 0; half < 2; ++half) {
      int64_t slot = m * 2 + half;
      // This lane's scores of the row: 2 per n8 tile.
      SmallVector<Value> row;
      for (int64_t n = 0; n < nTiles; ++n) {
        Value pair = vector::ExtractOp::create(b, scores[m * nTiles + n], half);
        for (int64_t e = 0; e < 2; ++e)
          row.push_back(vector::ExtractOp::create(b, pair, e));
      }
      RowSoftmax update =
          RowSoftmax::update(b, row, state.rowMax[slot],
                             /*oldSum=*/Value(), shape.scaleLog2);
      for (int64_t n = 0; n < nTiles; ++n)
        rows[(m * nTiles + n) * 2 + half] = vector::FromElementsOp::create(
            b, VectorType::get({2}, b.getF32Type()),
            ArrayRef<Value>(update.probabilities).slice(2 * n, 2));
      state.rowMax[slot] = update.max;
      blockSums.push_back(reduceOverQuad(b, update.sum, /*max=*/false));
      alphas.push_back(update.alpha);
      Value alphaPair = vector::BroadcastOp::create(
          b, VectorType::get({2}, b.getF32Type()), update.alpha);
      for (int64_t d = 0; d < shape.dTiles; ++d) {
        Value &acc = state.out[m * shape.dTiles + d];
        Value scaled = arith::MulFOp::create(
            b, vector::ExtractOp::create(b, acc, half), alphaPair);
        acc = vector::InsertOp::create(b, scaled, acc, half);
      }
    }

  // Each lane keeps the running sums of the slots it holds.
  for (int64_t held = 0; held < getHeldSums(); ++held)
    setHeldSum(state, held,
               math::FmaOp::create(b, getHeldSum(state, held),
                                   pickHeld(lanes, alphas, held),
                                   pickHeld(lanes, blockSums, held)));

  return packOperandA(b, shape, [&](int64_t m, int64_t n, int64_t half) {
    return rows[(m * nTiles + n) * 2 + half];
  });
}

/// Of \p perSlot (one value per slot, the same in every lane of a quad),
/// the one of slot 4 * held + this lane's quad column.
Value FragmentSoftmax::pickHeld(const Lanes &lanes, ArrayRef<Value> perSlot,
                                int64_t held) {
  Value picked = perSlot[4 * held];
  for (int64_t q = 1; q < 4 && 4 * held + q < (int64_t)perSlot.size(); ++q)
    picked =
        b.select(b.eq(lanes.quadCol, b.i32(q)), perSlot[4 * held + q], picked);
  return picked;
}

Value FragmentSoftmax::getHeldSum(const SoftmaxState &state, int64_t held) {
  if (!shape.sumsInShared)
    return state.rowSum[held];
  return LLVM::LoadOp::create(b, b.getF32Type(), getHeldSumPointer(held),
                              /*alignment=*/4, /*isVolatile=*/true);
}

void FragmentSoftmax::setHeldSum(SoftmaxState &state, int64_t held, Value sum) {
  if (!shape.sumsInShared) {
    state.rowSum[held] = sum;
    return;
  }
  LLVM::StoreOp::create(b, sum, getHeldSumPointer(held), /*alignment=*/4,
                        /*isVolatile=*/true);
}

/// Slot \p held of thread t lives at sums + 4 (held * threads + t), so
/// that a warp's accesses hit 32 banks. Volatile, so that LLVM does not
/// promote the slot back to a loop-carried register.
Value FragmentSoftmax::getHeldSumPointer(int64_t held) {
  Value address = b.add(
      sums, b.mul(b.add(threadId, b.i32(held * shape.warps * kThreadsPerWarp)),
                  b.i32(4)));
  return LLVM::IntToPtrOp::create(
      b, LLVM::LLVMPointerType::get(b.getContext(), 3), address);
}
