//===- Epilogue.cpp - sm_80 attention: O and LSE out ----------------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "Sm80/Epilogue.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;
using namespace mlir::fmha;
using namespace mlir::fmha::sm80;

void Epilogue::build(const TileCoordinates &tile, const SoftmaxState &state) {
  // O is staged over the tiles (tiles.o), which every warp is done reading
  // once all meet here. A row block that sees no key block (causal or
  // windowed rows before the first key) never waited for its Q copy, and a
  // thread's copies land in other warps' rows: wait for them all.
  copies.waitForAll();
  Lanes lanes = Lanes::derive(b, shape, hideFromHoisting(b, threadId));
  auto pairType = VectorType::get({2}, shape.elementType);
  SmallVector<Value> rowLse;
  for (int64_t m = 0; m < shape.mTiles; ++m)
    for (int64_t half = 0; half < 2; ++half) {
      int64_t slot = m * 2 + half;
      // The lane of the quad that holds the slot's sum.
      Value sum = gpu::ShuffleOp::create(
                      b, softmax.getHeldSum(state, slot / 4),
                      b.add(b.mul(lanes.quadRow, b.i32(4)), b.i32(slot % 4)),
                      b.i32(kThreadsPerWarp), gpu::ShuffleMode::IDX)
                      .getShuffleResult();
      Value sink =
          tile.loadSink(b, sinks, lanes.getRow(b, tile.firstRow, m, half));
      RowTotal total =
          RowTotal::get(b, state.rowMax[slot], sum, shape.scale, sink);
      Value inverse = total.inverse;
      Value rowRow = b.add(lanes.warpRow,
                           b.add(lanes.quadRow, b.i32(m * kMmaM + half * 8)));
      Value inversePair = vector::BroadcastOp::create(
          b, VectorType::get({2}, b.getF32Type()), inverse);
      // O rows go to the (now unused) Q tile's place, then out in 16-byte
      // rows.
      for (int64_t d = 0; d < shape.dTiles; ++d) {
        Value pair =
            vector::ExtractOp::create(b, state.out[m * shape.dTiles + d], half);
        Value rounded = arith::TruncFOp::create(
            b, pairType, arith::MulFOp::create(b, pair, inversePair));
        Value column = b.add(swizzle(b, shape, rowRow, b.i32(d)),
                             b.mul(lanes.quadCol, b.i32(2)));
        vector::StoreOp::create(
            b, rounded, tiles.o,
            ValueRange{b.toIndex(rowRow), b.toIndex(column)});
      }
      if (lse)
        rowLse.push_back(total.lse);
    }
  gpu::BarrierOp::create(b);
  storeOutputTile(lanes, tile);

  if (lse) {
    // The lane holding columns 0-1 of a row writes its LSE.
    Value firstLane = b.eq(lanes.quadCol, b.i32(0));
    scf::IfOp::create(b, firstLane, [&](OpBuilder &, Location) {
      for (int64_t m = 0; m < shape.mTiles; ++m)
        for (int64_t half = 0; half < 2; ++half) {
          Value row = lanes.getRow(b, tile.firstRow, m, half);
          Value valid = b.slt(row, tile.seqQ);
          scf::IfOp::create(b, valid, [&](OpBuilder &, Location) {
            auto [head, queryRow] = tile.getQueryHeadAndRow(b, row);
            SmallVector<Value, 3> at = {tile.outputBatch, head, queryRow};
            memref::StoreOp::create(b, rowLse[m * 2 + half], lse, at);
            scf::YieldOp::create(b);
          });
        }
      scf::YieldOp::create(b);
    });
  }
  // The next batch's Q copy overwrites the tile others may still read.
  gpu::BarrierOp::create(b);
}

/// Copies the output tile from shared memory to O, rows below Sq and D's
/// columns only.
void Epilogue::storeOutputTile(const Lanes &lanes,
                               const TileCoordinates &tile) {
  int64_t threads = shape.warps * kThreadsPerWarp;
  int64_t rowChunks = shape.valueHeadDim / shape.chunkElements;
  int64_t chunks = shape.blockM * rowChunks;
  auto chunkType = VectorType::get({shape.chunkElements}, shape.elementType);
  for (int64_t start = 0; start < chunks; start += threads) {
    Value chunkIndex = b.add(lanes.tid, b.i32(start));
    Value row = b.udiv(chunkIndex, b.i32(rowChunks));
    Value chunk = b.urem(chunkIndex, b.i32(rowChunks));
    Value globalRow = b.add(tile.firstRow, b.toIndex(row));
    Value valid = b.slt(globalRow, tile.seqQ);
    if (start + threads > chunks)
      valid = b.and_(valid, arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                                  chunkIndex, b.i32(chunks)));
    scf::IfOp::create(b, valid, [&](OpBuilder &, Location) {
      SmallVector<Value, 2> from = {b.toIndex(row),
                                    b.toIndex(swizzle(b, shape, row, chunk))};
      Value data = vector::LoadOp::create(b, chunkType, tiles.o, from);
      auto [head, queryRow] = tile.getQueryHeadAndRow(b, globalRow);
      SmallVector<Value, 4> to = {
          tile.outputBatch, head, queryRow,
          b.toIndex(b.mul(chunk, b.i32(shape.chunkElements)))};
      vector::StoreOp::create(b, data, out, to, /*nontemporal=*/false,
                              llvm::MaybeAlign(kChunkBytes));
      scf::YieldOp::create(b);
    });
  }
}
