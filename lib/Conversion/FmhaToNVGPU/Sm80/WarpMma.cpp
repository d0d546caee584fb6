//===- WarpMma.cpp - sm_80 attention: ldmatrix and mma.sync ---------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "Sm80/WarpMma.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::fmha;
using namespace mlir::fmha::sm80;

/// ldmatrix.x4 at rows lanes.row + \p rowOffset (a multiple of 8) and
/// chunks lanes' + 2 * \p chunkPair.
Value WarpMma::loadMatrices(Value shared, const LaneMatrices &lanes,
                            int64_t rowOffset, int64_t chunkPair,
                            bool transpose) {
  Value row = b.add(lanes.row, b.i32(rowOffset));
  Value column =
      b.add(lanes.columns[chunkPair % 4],
            b.i32(chunkPair / 4 * kSwizzleRows * shape.chunkElements));
  SmallVector<Value, 2> at = {b.toIndex(row), b.toIndex(column)};
  return nvgpu::LdMatrixOp::create(
      b, VectorType::get({4, 2}, shape.elementType), shared, at, transpose,
      /*numTiles=*/4);
}

/// Rows \p first and \p first + 1 of an ldmatrix.x4 result: the B fragment
/// of one n8 tile.
Value WarpMma::takeFragmentB(Value matrices, int64_t first) {
  Value fragment =
      ub::PoisonOp::create(b, VectorType::get({2, 2}, shape.elementType));
  for (int64_t i = 0; i < 2; ++i)
    fragment = vector::InsertOp::create(
        b, vector::ExtractOp::create(b, matrices, first + i), fragment, i);
  return fragment;
}

/// acc + a * b on one m16n8k16 tile.
Value WarpMma::mma(Value a, Value bFragment, Value acc) {
  if (shape.elementType.isF16())
    return nvgpu::MmaSyncOp::create(b, a, bFragment, acc,
                                    ArrayRef<int64_t>{kMmaM, kMmaN, kMmaK});
  // MLIR 22's nvgpu.mma.sync lowering cannot type bf16 operands ("failed
  // to deduce operand PTX types"): emit nvvm.mma.sync on the packed
  // registers, the same instruction the f16 path becomes.
  auto packed = [&](Value fragment, int64_t rows) {
    SmallVector<Value, 4> registers;
    for (int64_t i = 0; i < rows; ++i) {
      Value pair = vector::ExtractOp::create(b, fragment, i);
      Value word = vector::BitCastOp::create(
          b, VectorType::get({1}, b.getI32Type()), pair);
      registers.push_back(vector::ExtractOp::create(b, word, 0));
    }
    return registers;
  };
  SmallVector<Value, 4> accumulators;
  for (int64_t i = 0; i < 4; ++i)
    accumulators.push_back(
        vector::ExtractOp::create(b, acc, ArrayRef<int64_t>{i / 2, i % 2}));
  Type f32 = b.getF32Type();
  auto resultType =
      LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
  Value result = NVVM::MmaOp::create(
      b, resultType, packed(a, 4), packed(bFragment, 2), accumulators,
      ArrayRef<int64_t>{kMmaM, kMmaN, kMmaK}, std::nullopt, std::nullopt,
      std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16, NVVM::MMATypes::bf16},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  SmallVector<Value, 4> elements;
  for (int64_t i = 0; i < 4; ++i)
    elements.push_back(LLVM::ExtractValueOp::create(b, result, i));
  return vector::FromElementsOp::create(b, getAccumulatorType(b), elements);
}

SmallVector<Value> WarpMma::multiplyTransposed(const Lanes &lanes, Value a,
                                               Value bTile) {
  Value zeroAcc = arith::ConstantOp::create(
      b,
      DenseElementsAttr::get(getAccumulatorType(b), b.getF32FloatAttr(0.0f)));
  SmallVector<Value> scores(shape.mTiles * shape.nTiles, zeroAcc);
  // A head dim of 8 mod 16: the last k step's second half is the zeros the
  // copies filled past D.
  int64_t kSteps = llvm::divideCeil(shape.headDim, kMmaK);
  for (int64_t k = 0; k < kSteps; ++k) {
    SmallVector<Value> queries;
    for (int64_t m = 0; m < shape.mTiles; ++m)
      queries.push_back(loadMatrices(a, lanes.queryLanes, m * kMmaM, k,
                                     /*transpose=*/false));
    for (int64_t n = 0; n < shape.nTiles; n += 2) {
      Value keys = loadMatrices(bTile, lanes.keyLanes, n * kMmaN, k,
                                /*transpose=*/false);
      Value low = takeFragmentB(keys, 0), high = takeFragmentB(keys, 2);
      for (int64_t m = 0; m < shape.mTiles; ++m) {
        Value &s0 = scores[m * shape.nTiles + n];
        Value &s1 = scores[m * shape.nTiles + n + 1];
        s0 = mma(queries[m], low, s0);
        s1 = mma(queries[m], high, s1);
      }
    }
  }
  return scores;
}

void WarpMma::accumulateProduct(const Lanes &lanes, ArrayRef<Value> a,
                                Value bTile, SmallVectorImpl<Value> &out) {
  accumulate(a, shape.blockN / kMmaK, lanes.valueLanes, bTile, 0, shape.dTiles,
             out);
}

void WarpMma::accumulateSlice(const LaneMatrices &bLanes, ArrayRef<Value> a,
                              Value bTile, int64_t firstDTile,
                              SmallVectorImpl<Value> &out) {
  accumulate(a, a.size(), bLanes, bTile, firstDTile, out.size(), out);
}

void WarpMma::accumulate(ArrayRef<Value> a, int64_t kSteps,
                         const LaneMatrices &bLanes, Value bTile,
                         int64_t firstDTile, int64_t dTiles,
                         SmallVectorImpl<Value> &out) {
  int64_t mTiles = a.size() / kSteps;
  for (int64_t k = 0; k < kSteps; ++k)
    for (int64_t d = 0; d < dTiles; d += 2) {
      Value values = loadMatrices(bTile, bLanes, k * kMmaK,
                                  (firstDTile + d) / 2, /*transpose=*/true);
      Value low = takeFragmentB(values, 0), high = takeFragmentB(values, 2);
      // An odd count of n8 tiles (a head dim of 8 mod 16): the last pair's
      // second is past D.
      bool pair = d + 1 < dTiles;
      for (int64_t m = 0; m < mTiles; ++m) {
        Value fragment = a[m * kSteps + k];
        out[m * dTiles + d] = mma(fragment, low, out[m * dTiles + d]);
        if (pair)
          out[m * dTiles + d + 1] =
              mma(fragment, high, out[m * dTiles + d + 1]);
      }
    }
}

SmallVector<Value> WarpMma::loadOperandA(Value tile, const LaneMatrices &aLanes,
                                         int64_t mTiles, int64_t kSteps) {
  SmallVector<Value> fragments;
  for (int64_t m = 0; m < mTiles; ++m)
    for (int64_t k = 0; k < kSteps; ++k)
      fragments.push_back(
          loadMatrices(tile, aLanes, m * kMmaM, k, /*transpose=*/false));
  return fragments;
}

SmallVector<Value> sm80::packOperandA(
    KernelBuilder &b, const KernelShape &shape,
    llvm::function_ref<Value(int64_t, int64_t, int64_t)> pairAt) {
  auto pairType = VectorType::get({2}, shape.elementType);
  SmallVector<Value> fragments;
  for (int64_t m = 0; m < shape.mTiles; ++m)
    for (int64_t k = 0; k < shape.blockN / kMmaK; ++k) {
      Value fragment =
          ub::PoisonOp::create(b, VectorType::get({4, 2}, shape.elementType));
      for (int64_t i = 0; i < 4; ++i) {
        Value pair =
            arith::TruncFOp::create(b, pairType, pairAt(m, 2 * k + i / 2, i % 2));
        fragment = vector::InsertOp::create(b, pair, fragment, i);
      }
      fragments.push_back(fragment);
    }
  return fragments;
}
