//===- WarpSlab.cpp - sm_90a: accumulator rows out by 16 bytes ------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "Sm90a/WarpSlab.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::fmha;
using namespace mlir::fmha::sm90a;

Value WarpSlab::getChunkAddress(KernelBuilder &b, Value row,
                                Value chunk) const {
  int64_t rowChunks = columns / 8;
  assert(llvm::isPowerOf2_64(rowChunks) &&
         "the XOR keeps a row's chunks within it only for a power of two");
  Value key = b.urem(b.udiv(row, b.i32(std::max<int64_t>(1, 8 / rowChunks))),
                     b.i32(rowChunks));
  Value swizzled = b.xor_(chunk, key);
  return b.add(
      base, b.add(b.mul(row, b.i32(columns * 2)), b.mul(swizzled, b.i32(16))));
}

SmallVector<std::array<Value, 2>> sm90a::packSlabWords(
    KernelBuilder &b, Type elementType, Value accumulator, int64_t columns,
    int64_t slabColumns,
    llvm::function_ref<Value(Value element, int64_t half)> scale) {
  SmallVector<Value> values = unpackAccumulator(b, accumulator, columns / 2);
  Value zero = b.i32(0);
  SmallVector<std::array<Value, 2>> words(slabColumns / 8, {zero, zero});
  for (int64_t i = 0; i < columns / 8; ++i)
    for (int64_t h = 0; h < 2; ++h) {
      Value high = scale(values[4 * i + 2 * h + 1], h);
      Value low = scale(values[4 * i + 2 * h], h);
      words[i][h] = packPair(b, elementType, low, high);
    }
  return words;
}

void WarpSlab::store(KernelBuilder &b, TmaPipeline &pipeline, Value lane,
                     ArrayRef<std::array<Value, 2>> words) const {
  // stmatrix .x4: lanes 8m .. 8m + 7 address the rows of matrix m, which
  // is chunk 2k + m / 2 in rows 8 (m % 2) .. + 7.
  Value matrix = b.udiv(lane, b.i32(8));
  Value row =
      b.add(b.mul(b.urem(matrix, b.i32(2)), b.i32(8)), b.urem(lane, b.i32(8)));
  Value matrixChunk = b.udiv(matrix, b.i32(2));
  for (int64_t k = 0; 2 * k < columns / 8; ++k) {
    Value chunk = b.add(matrixChunk, b.i32(2 * k));
    std::array<Value, 2> pair0 = words[2 * k], pair1 = words[2 * k + 1];
    NVVM::StMatrixOp::create(
        b, pipeline.getSharedPointer(getChunkAddress(b, row, chunk)),
        ValueRange{pair0[0], pair0[1], pair1[0], pair1[1]},
        NVVM::MMALayout::row,
        NVVM::LdStMatrixShapeAttr::get(b.getContext(), 8, 8),
        NVVM::LdStMatrixEltType::B16);
  }
}

Value WarpSlab::loadChunk(KernelBuilder &b, TmaPipeline &pipeline, Value row,
                          Value chunk) const {
  return LLVM::LoadOp::create(
      b, VectorType::get({4}, b.getI32Type()),
      pipeline.getSharedPointer(getChunkAddress(b, row, chunk)),
      /*alignment=*/16);
}

WarpLanes WarpLanes::derive(KernelBuilder &b, Value threadId) {
  Value tid = b.word(hideFromHoisting(b, threadId));
  Value warp = b.udiv(tid, b.i32(kThreadsPerWarp));
  return {b.sub(warp, b.i32(kWarpgroupThreads / kThreadsPerWarp)),
          b.urem(tid, b.i32(kThreadsPerWarp))};
}

void mlir::fmha::sm90a::forEachLaneChunk(
    KernelBuilder &b, Value lane, int64_t columns,
    llvm::function_ref<void(Value row, Value chunk)> body) {
  int64_t rowChunks = columns / 8, units = kWarpRows * rowChunks;
  for (int64_t step = 0; step < units; step += kThreadsPerWarp) {
    Value unit = b.add(lane, b.i32(step));
    auto visit = [&] {
      Value row = b.udiv(unit, b.i32(rowChunks));
      Value chunk = b.urem(unit, b.i32(rowChunks));
      body(row, chunk);
    };
    // An odd count of chunks a row leaves the last step's later lanes
    // past the warp's rows, in the next warp's (or the next tile's).
    if (step + kThreadsPerWarp <= units) {
      visit();
      continue;
    }
    scf::IfOp::create(b, b.slt(unit, b.i32(units)), [&](OpBuilder &, Location) {
      visit();
      scf::YieldOp::create(b);
    });
  }
}

void mlir::fmha::sm90a::syncWarp(KernelBuilder &b) {
  NVVM::SyncWarpOp::create(b, b.i32(-1));
}
