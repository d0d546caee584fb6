//===- Sm90aAttention.cpp - what the sm_90a attention emitters share ------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "Sm90a/Sm90aAttention.h"
#include "AttentionCommon.h"
#include "fmha/Dialect/Fmha/TileConfig.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>

using namespace mlir;
using namespace mlir::fmha;
using namespace mlir::fmha::sm90a;

KernelShape KernelShape::get(AttentionOp op, TileAttr tile) {
  KernelShape shape;
  shape.blockM = tile.getBlockM();
  shape.blockN = tile.getBlockN();
  shape.stages = tile.getStages();
  shape.consumers = tile.getWarps() / 4 - 1;
  shape.headDim = op.getHeadDim();
  shape.valueHeadDim = op.getValueHeadDim();
  shape.elementType = cast<MemRefType>(op.getQ().getType()).getElementType();
  shape.keyColumns = getAttentionTileColumns(Chip::sm_90a, shape.headDim);
  shape.valueColumns =
      getAttentionTileColumns(Chip::sm_90a, shape.valueHeadDim);
  shape.keyColumnBlocks = shape.keyColumns / kBoxColumns;
  shape.valueColumnBlocks = shape.valueColumns / kBoxColumns;
  shape.outputColumns = llvm::alignTo(shape.valueHeadDim, kWgmmaNStep);
  shape.scale = op.getScaleOrDefault();
  shape.scaleLog2 = shape.scale * static_cast<float>(M_LOG2E);
  shape.softcap = ScoreCap::get(op);
  shape.limitsKeys =
      op.getKeyLengths() || op.getPageTable() || op.getKeyOffsets();
  shape.sharedLayout = getAttentionSharedLayout(op, tile);
  shape.queryBytes = shape.sharedLayout.queryBufferBytes;
  shape.keyBytes = shape.sharedLayout.keyBufferBytes;
  shape.valueBytes = shape.sharedLayout.valueBufferBytes;
  shape.keyBoxRows = getKeyBoxRows(op, tile);
  shape.issuingWarps = getIssuingWarps(shape.blockN, shape.keyBoxRows);
  shape.outputPasses =
      getAttentionOutputPasses(tile.getAttentionTiling(), shape.valueHeadDim,
                               shape.sharedLayout.outputBytes != 0);
  assert(shape.outputPasses > 0 &&
         "the op verifier checks that O can be staged");
  return shape;
}

int64_t sm90a::getKeyBoxRows(AttentionOp op, TileAttr tile) {
  if (!op.getPageTable())
    return tile.getBlockN();
  int64_t pageSize = cast<MemRefType>(op.getK().getType()).getDimSize(2);
  return std::gcd(pageSize, int64_t(tile.getBlockN()));
}

int64_t sm90a::getIssuingWarps(int64_t blockN, int64_t keyBoxRows) {
  return std::min<int64_t>(kWarpgroupThreads / kThreadsPerWarp,
                           blockN / keyBoxRows);
}

FragmentLanes FragmentLanes::derive(KernelBuilder &b, Value threadId) {
  Value tid = hideFromHoisting(b, threadId);
  Value consumer = b.sub(b.udiv(tid, b.index(kWarpgroupThreads)), b.index(1));
  Value warp = b.urem(b.udiv(tid, b.index(kThreadsPerWarp)), b.index(4));
  Value lane = b.urem(tid, b.index(kThreadsPerWarp));
  FragmentLanes lanes;
  lanes.consumerRow = b.mul(consumer, b.index(kWgmmaM));
  lanes.laneRow = b.add(b.add(lanes.consumerRow, b.mul(warp, b.index(16))),
                        b.udiv(lane, b.index(4)));
  lanes.quadCol = b.urem(lane, b.index(4));
  return lanes;
}

Value FragmentLanes::getRow(KernelBuilder &b, Value firstRow,
                            int64_t half) const {
  return b.add(firstRow, b.add(laneRow, b.index(half * 8)));
}

Type sm90a::getAccumulatorType(KernelBuilder &b, int64_t n) {
  SmallVector<Type> fields(n / 2, b.getF32Type());
  return LLVM::LLVMStructType::getLiteral(b.getContext(), fields);
}

SmallVector<Value> sm90a::unpackAccumulator(KernelBuilder &b, Value accumulator,
                                            int64_t count) {
  SmallVector<Value> values;
  for (int64_t i = 0; i < count; ++i)
    values.push_back(LLVM::ExtractValueOp::create(b, accumulator, i));
  return values;
}

Value sm90a::packPair(KernelBuilder &b, Type elementType, Value low,
                      Value high) {
  Value pair = vector::FromElementsOp::create(
      b, VectorType::get({2}, b.getF32Type()), ValueRange{low, high});
  Value rounded =
      arith::TruncFOp::create(b, VectorType::get({2}, elementType), pair);
  Value word = vector::BitCastOp::create(
      b, VectorType::get({1}, b.getI32Type()), rounded);
  return vector::ExtractOp::create(b, word, 0);
}
