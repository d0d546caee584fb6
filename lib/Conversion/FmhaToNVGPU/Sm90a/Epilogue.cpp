//===- Epilogue.cpp - sm_90a attention: O and LSE out ---------------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "Sm90a/Epilogue.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;
using namespace mlir::fmha;
using namespace mlir::fmha::sm90a;

void Epilogue::storeOutput(const ConsumerState &state, Value stage,
                           const TileCoordinates &tile) {
  FragmentLanes fragment = FragmentLanes::derive(b, threadId);
  RowTotals totals = getRowTotals(state, fragment, tile);
  // O's rows normalized by their totals, then rounded.
  SmallVector<std::array<Value, 2>> words =
      packSlabWords(b, shape.elementType, state.out, shape.outputColumns,
                    shape.valueColumns, [&](Value element, int64_t half) {
                      return b.fmul(element, totals.inverse[half]);
                    });

  // In the last V buffer: every consumer's last P V reads all of it, so
  // wait for them all before overwriting it.
  bool ownBuffer = shape.sharedLayout.outputBytes != 0;
  if (!ownBuffer)
    turns.waitForAllDrained();
  WarpLanes lanes = WarpLanes::derive(b, threadId);
  int64_t columns = shape.valueColumns / shape.outputPasses;
  WarpSlab slab{
      b.add(ownBuffer ? pipeline.getOutputBuffer()
                      : pipeline.getValueBuffer(stage),
            b.mul(lanes.consumerWarp, b.i32(WarpSlab::getBytes(columns)))),
      columns};
  // Passes past D (tiles wider than D) have nothing to store.
  for (int64_t pass = 0;
       pass < shape.outputPasses && pass * columns < shape.valueHeadDim;
       ++pass) {
    // The previous pass's reads are done before its slab is overwritten.
    if (pass > 0)
      syncWarp(b);
    slab.store(b, pipeline, lanes.lane,
               ArrayRef(words).slice(pass * columns / 8, columns / 8));
    syncWarp(b);
    storeWarpRows(lanes, tile, pass * columns, columns,
                  [&](Value row, Value chunk) {
                    return slab.loadChunk(b, pipeline, row, chunk);
                  });
  }
  if (ownBuffer) {
    // Every lane's loads of the slab before the next tile's stores to it.
    syncWarp(b);
  } else {
    // The producer's next TMA load into the buffer (async proxy) comes
    // after these generic-proxy accesses, and after every lane's.
    pipeline.fenceAsyncShared();
    syncWarp(b);
    pipeline.release(pipeline.getBarrier(TmaPipeline::kValueEmpty, stage));
  }
  storeLse(totals, fragment, tile);
}

void Epilogue::storeEmptyRows(const TileCoordinates &tile) {
  FragmentLanes fragment = FragmentLanes::derive(b, threadId);
  Value zeros = arith::ConstantOp::create(
      b, b.getZeroAttr(VectorType::get({4}, b.getI32Type())));
  storeWarpRows(WarpLanes::derive(b, threadId), tile, 0, shape.valueHeadDim,
                [&](Value, Value) { return zeros; });
  // LSE +inf, or with sinks the row's sink (-inf where a split has none:
  // +inf as without).
  Value inf = b.f32(std::numeric_limits<float>::infinity());
  Value minusInf = b.f32(-std::numeric_limits<float>::infinity());
  std::array<Value, 2> lse = loadSinks(fragment, tile);
  for (Value &row : lse)
    row = row ? b.select(arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ,
                                               row, minusInf),
                         inf, row)
              : inf;
  storeLse(RowTotals{{Value(), Value()}, lse}, fragment, tile);
}

/// Stores columns [first, first + columns) of this warp's 16 rows of O,
/// one 16-byte chunk per lane at a time, rows below Sq and columns below D
/// only; \p chunkAt
/// gives chunk `chunk` (vector<4xi32>) of the warp's row `row` (both i32,
/// relative to the slab).
void Epilogue::storeWarpRows(
    const WarpLanes &lanes, const TileCoordinates &tile, int64_t first,
    int64_t columns,
    llvm::function_ref<Value(Value row, Value chunk)> chunkAt) {
  Value warpFirstRow = b.add(
      tile.firstRow, b.toIndex(b.mul(lanes.consumerWarp, b.i32(kWarpRows))));
  auto chunkType = VectorType::get({8}, shape.elementType);
  forEachLaneChunk(b, lanes.lane, columns, [&](Value row, Value chunk) {
    Value outRow = b.add(warpFirstRow, b.toIndex(row));
    Value valid = b.slt(outRow, tile.seqQ);
    if (first + columns > shape.valueHeadDim)
      valid =
          b.and_(valid, b.slt(chunk, b.i32((shape.valueHeadDim - first) / 8)));
    Value data = vector::BitCastOp::create(b, chunkType, chunkAt(row, chunk));
    scf::IfOp::create(b, valid, [&](OpBuilder &, Location) {
      Value column = b.add(b.index(first), b.toIndex(b.mul(chunk, b.i32(8))));
      auto [head, queryRow] = tile.getQueryHeadAndRow(b, outRow);
      vector::StoreOp::create(
          b, data, out, ValueRange{tile.outputBatch, head, queryRow, column},
          /*nontemporal=*/false, llvm::MaybeAlign(16));
      scf::YieldOp::create(b);
    });
  });
}

std::array<Value, 2> Epilogue::loadSinks(const FragmentLanes &fragment,
                                         const TileCoordinates &tile) {
  std::array<Value, 2> rows;
  for (int64_t half = 0; half < 2; ++half)
    rows[half] =
        tile.loadSink(b, sinks, fragment.getRow(b, tile.firstRow, half));
  return rows;
}

Epilogue::RowTotals Epilogue::getRowTotals(const ConsumerState &state,
                                           const FragmentLanes &fragment,
                                           const TileCoordinates &tile) {
  std::array<Value, 2> rowSinks = loadSinks(fragment, tile);
  RowTotals totals;
  for (int64_t half = 0; half < 2; ++half) {
    RowTotal row =
        RowTotal::get(b, state.rowMax[half],
                      reduceOverQuad(b, state.rowSum[half], /*max=*/false),
                      shape.scale, rowSinks[half]);
    totals.inverse[half] = row.inverse;
    totals.lse[half] = row.lse;
  }
  return totals;
}

/// The first lane of each quad writes the LSE of its rows below Sq.
void Epilogue::storeLse(const RowTotals &totals, const FragmentLanes &lanes,
                        const TileCoordinates &tile) {
  if (!lse)
    return;
  Value firstLane = b.eq(lanes.quadCol, b.index(0));
  for (int64_t half = 0; half < 2; ++half) {
    Value row = lanes.getRow(b, tile.firstRow, half);
    Value valid = b.and_(firstLane, b.slt(row, tile.seqQ));
    scf::IfOp::create(b, valid, [&](OpBuilder &, Location) {
      auto [head, queryRow] = tile.getQueryHeadAndRow(b, row);
      memref::StoreOp::create(b, totals.lse[half], lse,
                              ValueRange{tile.outputBatch, head, queryRow});
      scf::YieldOp::create(b);
    });
  }
}
