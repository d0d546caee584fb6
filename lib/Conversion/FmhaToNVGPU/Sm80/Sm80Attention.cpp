//===- Sm80Attention.cpp - what the sm_80 attention emitters share --------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "Sm80/Sm80Attention.h"
#include "AttentionCommon.h"
#include "fmha/Dialect/Fmha/TileConfig.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <cmath>

using namespace mlir;
using namespace mlir::fmha;
using namespace mlir::fmha::sm80;

KernelShape KernelShape::get(int64_t blockM, int64_t blockN, int64_t warps,
                             AttentionHeadDims headDims, Type elementType,
                             float scale) {
  KernelShape shape;
  shape.blockM = blockM;
  shape.blockN = blockN;
  shape.warps = warps;
  shape.headDim = headDims.qk;
  shape.valueHeadDim = headDims.v;
  shape.keyColumns = getAttentionTileColumns(Chip::sm_80, headDims.qk);
  shape.valueColumns = getAttentionTileColumns(Chip::sm_80, headDims.v);
  shape.elementType = elementType;
  shape.chunkElements =
      kChunkBytes / (shape.elementType.getIntOrFloatBitWidth() / 8);
  shape.mTiles = shape.blockM / (kMmaM * shape.warps);
  shape.nTiles = shape.blockN / kMmaN;
  shape.dTiles = shape.valueHeadDim / kMmaN;
  shape.scale = scale;
  shape.scaleLog2 = shape.scale * static_cast<float>(M_LOG2E);
  shape.sumsInShared = false;
  shape.copyPassesShareBase = false;
  return shape;
}

KernelShape KernelShape::get(AttentionOp op, TileAttr tile) {
  KernelShape shape =
      get(tile.getBlockM(), tile.getBlockN(), tile.getWarps(), op.getHeadDims(),
          cast<MemRefType>(op.getQ().getType()).getElementType(),
          op.getScaleOrDefault());
  AttentionTiling tiling = tile.getAttentionTiling();
  shape.softcap = ScoreCap::get(op);
  shape.sharedLayout = getAttentionSharedLayout(op, tile);
  shape.sumsInShared = shape.sharedLayout.tailBytes != 0;
  shape.copyPassesShareBase =
      getSm80AccumulatorRegisters(tiling, shape.valueHeadDim) <
      kSm80AccumulatorRegisterBudget;
  return shape;
}

// Q, K, V, then the row sums, from the start of the dynamic shared memory;
// O over Q (and past it where its rows are wider).
SharedTiles SharedTiles::create(KernelBuilder &b, const KernelShape &shape) {
  auto workgroup = gpu::AddressSpaceAttr::get(
      b.getContext(), gpu::GPUDialect::getWorkgroupAddressSpace());
  Value bytes = gpu::DynamicSharedMemoryOp::create(
      b, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), nullptr,
                         workgroup));
  const AttentionSharedLayout &layout = shape.sharedLayout;
  auto tileAt = [&](int64_t rows, int64_t columns,
                    int64_t byteOffset) -> Value {
    auto type =
        MemRefType::get({rows, columns}, shape.elementType, nullptr, workgroup);
    return memref::ViewOp::create(b, type, bytes, b.index(byteOffset),
                                  ValueRange{});
  };
  SharedTiles tiles;
  tiles.q = tileAt(shape.blockM, shape.keyColumns, layout.query);
  tiles.k = tileAt(shape.blockN, shape.keyColumns, layout.keys);
  tiles.v = tileAt(shape.blockN, shape.valueColumns, layout.values);
  tiles.o = tileAt(shape.blockM, shape.valueColumns, layout.query);
  if (shape.sumsInShared)
    tiles.sums =
        b.add(b.word(memref::ExtractAlignedPointerAsIndexOp::create(b, bytes)),
              b.i32(layout.tail));
  return tiles;
}

namespace {
LaneMatrices getLaneMatrices(KernelBuilder &b, const KernelShape &shape,
                             Value row, Value chunk) {
  LaneMatrices lanes;
  lanes.row = row;
  Value phase = b.urem(row, b.i32(kSwizzleRows));
  for (int64_t k = 0; k < 4; ++k)
    lanes.columns[k] = b.mul(b.xor_(b.add(chunk, b.i32(2 * k)), phase),
                             b.i32(shape.chunkElements));
  return lanes;
}
} // namespace

Lanes Lanes::derive(KernelBuilder &b, const KernelShape &shape, Value id,
                    int64_t columnWarps) {
  Lanes lanes;
  lanes.tid = id;
  Value lane = b.urem(id, b.i32(kThreadsPerWarp));
  Value warp = b.udiv(id, b.i32(kThreadsPerWarp));
  Value rowGroup = warp;
  lanes.columnGroup = b.i32(0);
  if (columnWarps > 1) {
    rowGroup = b.udiv(warp, b.i32(columnWarps));
    lanes.columnGroup = b.urem(warp, b.i32(columnWarps));
  }
  lanes.warpRow = b.mul(rowGroup, b.i32(shape.mTiles * kMmaM));
  lanes.quadRow = b.udiv(lane, b.i32(4));
  lanes.quadCol = b.urem(lane, b.i32(4));
  // The lane's row and 16-byte chunk in each ldmatrix.x4 (PTX ISA,
  // "ldmatrix"): lane l addresses row l % 8 of matrix l / 8.
  Value laneMod8 = b.urem(lane, b.i32(8));
  Value matrix = b.udiv(lane, b.i32(8));
  Value matrixBit0 = b.urem(matrix, b.i32(2));
  Value matrixBit1 = b.udiv(matrix, b.i32(2));
  // A of Q K^T (Q rows): matrices (rows 0-7, k 0-7), (8-15, 0-7),
  // (0-7, 8-15), (8-15, 8-15).
  lanes.queryLanes = getLaneMatrices(
      b, shape, b.add(lanes.warpRow, b.urem(lane, b.i32(16))), matrixBit1);
  // B of Q K^T (K rows are its columns): (n 0-7, k 0-7), (0-7, 8-15),
  // (8-15, 0-7), (8-15, 8-15): two n8 tiles of one k16 step.
  lanes.keyLanes = getLaneMatrices(
      b, shape, b.add(laneMod8, b.mul(matrixBit1, b.i32(8))), matrixBit0);
  // B of P V, transposed: (k 0-7, d 0-7), (8-15, 0-7), (0-7, 8-15),
  // (8-15, 8-15): two d8 tiles of one k16 step.
  lanes.valueLanes = getLaneMatrices(
      b, shape, b.add(laneMod8, b.mul(matrixBit0, b.i32(8))), matrixBit1);
  if (columnWarps > 1) {
    // Whole rows of 8: the swizzle's phase stays.
    assert(shape.blockN % kSwizzleRows == 0 &&
           "a column group moves by whole swizzle periods");
    lanes.keyLanes.row = b.add(lanes.keyLanes.row,
                               b.mul(lanes.columnGroup, b.i32(shape.blockN)));
    lanes.valueLanes =
        moveToChunkPairs(b, shape, lanes.valueLanes, lanes.columnGroup,
                         columnWarps, shape.dTiles / 2);
  }
  return lanes;
}

LaneMatrices sm80::moveToChunkPairs(KernelBuilder &b, const KernelShape &shape,
                                    const LaneMatrices &lanes, Value group,
                                    int64_t groups, int64_t pairs) {
  int64_t blockElements = kSwizzleRows * shape.chunkElements;
  LaneMatrices moved = lanes;
  if (pairs % kChunkPairsPerBlock == 0) {
    Value blockColumns =
        b.mul(group, b.i32(pairs / kChunkPairsPerBlock * blockElements));
    for (Value &column : moved.columns)
      column = b.add(column, blockColumns);
    return moved;
  }
  if (pairs != kChunkPairsPerBlock / 2) {
    // Any other count (head dims 96, 160 and 192: 3, 5 and 6 pairs over two
    // groups; 192's dK and dV: 3 over four): group g's pair j is pair
    // g pairs + j, whose period and place in it depend on j's place in its
    // own period alone, so each of the lanes' four columns takes one select
    // a group past the first.
    for (int64_t j = 0; j < kChunkPairsPerBlock; ++j) {
      Value column = lanes.columns[j];
      for (int64_t g = 1; g < groups; ++g) {
        int64_t movedPair = g * pairs + j;
        Value groupColumn =
            b.add(lanes.columns[movedPair % kChunkPairsPerBlock],
                  b.i32(movedPair / kChunkPairsPerBlock * blockElements));
        column = b.select(b.eq(group, b.i32(g)), groupColumn, column);
      }
      moved.columns[j] = column;
    }
    return moved;
  }
  // Groups 2i and 2i + 1 share block i, the second taking the lanes'
  // columns of pairs 2 and 3 as its 0 and 1.
  Value blockColumns = b.mul(b.udiv(group, b.i32(2)), b.i32(blockElements));
  Value secondHalf = b.ne(b.urem(group, b.i32(2)), b.i32(0));
  for (int64_t k = 0; k < kChunkPairsPerBlock; ++k) {
    Value column = lanes.columns[k];
    if (k < kChunkPairsPerBlock / 2)
      column = b.select(secondHalf, lanes.columns[k + kChunkPairsPerBlock / 2],
                        column);
    moved.columns[k] = b.add(column, blockColumns);
  }
  return moved;
}

Value Lanes::getRow(KernelBuilder &b, Value firstRow, int64_t m,
                    int64_t half) const {
  return b.add(
      firstRow,
      b.toIndex(b.add(warpRow, b.add(quadRow, b.i32(m * kMmaM + half * 8)))));
}

Value sm80::swizzle(KernelBuilder &b, const KernelShape &shape, Value row,
                    Value chunk) {
  Value phase = b.urem(row, b.i32(kSwizzleRows));
  return b.mul(b.xor_(chunk, phase), b.i32(shape.chunkElements));
}

VectorType sm80::getAccumulatorType(KernelBuilder &b) {
  return VectorType::get({2, 2}, b.getF32Type());
}

Value sm80::viewRun(KernelBuilder &b, Value tensor, ValueRange at,
                    int64_t elements) {
  auto metadata = memref::ExtractStridedMetadataOp::create(b, tensor);
  Value offset = metadata.getOffset();
  for (auto [index, stride] : llvm::zip_equal(at, metadata.getStrides()))
    offset = b.add(offset, b.mul(index, stride));
  return memref::ReinterpretCastOp::create(
      b,
      MemRefType::get(
          {elements}, cast<MemRefType>(tensor.getType()).getElementType(),
          StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic, {1})),
      tensor, OpFoldResult(offset),
      ArrayRef<OpFoldResult>{b.getIndexAttr(elements)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
}
