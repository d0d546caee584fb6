//===- AttentionCommon.cpp - what every attention lowering shares ---------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "AttentionCommon.h"

#include "fmha/Dialect/Fmha/TileConfig.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <algorithm>
#include <limits>

using namespace mlir;
using namespace mlir::fmha;

namespace {
constexpr int64_t kUnboundedWindow = int64_t(1) << 40;

} // namespace

AttentionWindow AttentionWindow::get(AttentionOp op) {
  return get(op.getCausal(), op.getWindow());
}

AttentionWindow AttentionWindow::get(AttentionGradOp op) {
  return get(op.getCausal(), op.getWindow());
}

AttentionWindow AttentionWindow::get(bool causal,
                                     std::optional<ArrayRef<int64_t>> sides) {
  AttentionWindow window;
  if (sides) {
    window.left = std::min((*sides)[0], kUnboundedWindow);
    window.right = std::min((*sides)[1], kUnboundedWindow);
  }
  if (causal)
    window.right = 0;
  return window;
}

Value fmha::getQueryGroup(KernelBuilder &b, Value q, Value k, bool fresh) {
  auto heads = [&](Value tensor) {
    Value dim = memref::DimOp::create(b, tensor, 1);
    return b.word(fresh ? hideFromHoisting(b, dim) : dim);
  };
  return b.udiv(heads(q), heads(k));
}

Value fmha::divideWords(KernelBuilder &b, Value value, Value divisor) {
  return b.toIndex(b.udiv(b.word(value), b.word(divisor)));
}

InvariantDivisor InvariantDivisor::get(KernelBuilder &b, Value divisor) {
  // l = 32 - clz(d - 1): 0 for d = 1, whose m is then 1 and q = n.
  Value leadingZeros = LLVM::CountLeadingZerosOp::create(
      b, divisor.getType(), b.sub(divisor, b.i32(1)), /*is_zero_poison=*/false);
  Value shift = b.sub(b.i32(32), leadingZeros);
  // floor(2^32 r / d) for r = 2^l - d < d, a bit a step (restoring
  // division): in 32 bits (2 rem < 2 d <= 2^32), where a 64-bit division
  // is a subroutine call, around which ptxas spills what is live.
  Value remainder = b.sub(arith::ShLIOp::create(b, b.i32(1), shift), divisor);
  auto bits = scf::ForOp::create(b, b.i32(0), b.i32(32), b.i32(1),
                                 ValueRange{remainder, b.i32(0)});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(bits.getBody());
    Value doubled =
        arith::ShLIOp::create(b, bits.getRegionIterArg(0), b.i32(1));
    Value fits =
        arith::CmpIOp::create(b, arith::CmpIPredicate::uge, doubled, divisor);
    Value quotient =
        b.or_(arith::ShLIOp::create(b, bits.getRegionIterArg(1), b.i32(1)),
              arith::ExtUIOp::create(b, b.getI32Type(), fits));
    scf::YieldOp::create(
        b,
        ValueRange{b.select(fits, b.sub(doubled, divisor), doubled), quotient});
  }
  return {divisor, b.add(bits.getResult(1), b.i32(1)), shift};
}

Value InvariantDivisor::divide(KernelBuilder &b, Value dividend) const {
  Value high =
      arith::MulUIExtendedOp::create(b, dividend, multiplier).getHigh();
  // n + high < 2^32 where n < 2^31 (high <= n).
  return b.lshr(b.add(high, dividend), shift);
}

Value InvariantDivisor::remainder(KernelBuilder &b, Value dividend,
                                  Value quotient) const {
  return b.sub(dividend, b.mul(quotient, divisor));
}

KeyBlockRange KeyBlockRange::compute(KernelBuilder &b, Value seqQ, Value seqK,
                                     Value firstRow, int64_t blockM,
                                     int64_t blockN,
                                     const AttentionWindow &window,
                                     Value queryGroup) {
  KeyBlockRange range;
  Value zero = b.index(0);
  Value numBlocks = b.ceilDiv(seqK, b.index(blockN));
  if (queryGroup)
    seqQ = divideWords(b, seqQ, queryGroup);
  range.diagonal = b.sub(seqK, seqQ);
  Value lastRow = b.add(firstRow, b.index(blockM - 1));
  // The queries of the first and last rows.
  if (queryGroup) {
    firstRow = divideWords(b, firstRow, queryGroup);
    lastRow = divideWords(b, lastRow, queryGroup);
  }
  range.lastBlockEnd = numBlocks;
  range.unmaskedEnd = b.sdiv(seqK, b.index(blockN));
  if (window.right) {
    // The last key any row sees: hi(lastRow); the last key every row sees:
    // hi(firstRow).
    Value anyHi = b.add(b.add(lastRow, range.diagonal), b.index(*window.right));
    Value blocks = b.add(b.floorDiv(anyHi, b.index(blockN)), b.index(1));
    range.lastBlockEnd = b.smin(range.lastBlockEnd, b.smax(blocks, zero));
    Value allHi =
        b.add(b.add(firstRow, range.diagonal), b.index(*window.right + 1));
    range.unmaskedEnd =
        b.smin(range.unmaskedEnd, b.floorDiv(allHi, b.index(blockN)));
  }
  range.firstBlock = zero;
  if (window.left) {
    Value anyLo = b.sub(b.add(firstRow, range.diagonal), b.index(*window.left));
    range.firstBlock = b.smax(b.floorDiv(anyLo, b.index(blockN)), zero);
  }
  range.firstBlock = b.smin(range.firstBlock, range.lastBlockEnd);
  range.unmaskedEnd =
      b.clamp(range.unmaskedEnd, range.firstBlock, range.lastBlockEnd);
  range.unmaskedBegin = range.firstBlock;
  if (window.left) {
    Value allLo = b.sub(b.add(lastRow, range.diagonal), b.index(*window.left));
    range.unmaskedBegin = b.clamp(b.ceilDiv(allLo, b.index(blockN)),
                                  range.firstBlock, range.unmaskedEnd);
  }
  return range;
}

void KeyBlockRange::restrictToSplit(KernelBuilder &b, Value seqK,
                                    int64_t blockN, Value split,
                                    Value splits) {
  // In 32 bits: a division by a runtime value in 64 is a long sequence
  // that costs the sm_90a producer registers it does not have.
  Value blocks = b.word(b.ceilDiv(seqK, b.index(blockN)));
  Value perSplit = b.ceilDivU(blocks, splits);
  Value lowWord = b.mul(split, perSplit);
  Value low = b.toIndex(lowWord);
  Value high = b.toIndex(b.add(lowWord, perSplit));
  lastBlockEnd = b.clamp(lastBlockEnd, low, high);
  firstBlock = b.clamp(firstBlock, low, lastBlockEnd);
  unmaskedEnd = b.clamp(unmaskedEnd, firstBlock, lastBlockEnd);
  unmaskedBegin = b.clamp(unmaskedBegin, firstBlock, unmaskedEnd);
}

RowMask RowMask::compute(KernelBuilder &b, Value row, Value laneKey, Value seqK,
                         Value diagonal, int64_t blockN,
                         const AttentionWindow &window) {
  auto toColumn = [&](Value key, int64_t low, int64_t high) {
    Value column = b.sub(key, laneKey);
    column = b.clamp(column, b.index(low), b.index(high));
    return arith::IndexCastOp::create(b, b.getI32Type(), column);
  };
  Value onDiagonal = b.add(row, diagonal);
  Value hi = b.sub(seqK, b.index(1));
  if (window.right)
    hi = b.smin(hi, b.add(onDiagonal, b.index(*window.right)));
  RowMask mask;
  mask.last = toColumn(hi, -1, blockN);
  if (window.left)
    mask.first = toColumn(b.sub(onDiagonal, b.index(*window.left)), 0, blockN);
  return mask;
}

Value RowMask::hides(ImplicitLocOpBuilder &b, int64_t column) const {
  Value constant = arith::ConstantIntOp::create(b, column, 32);
  Value hidden =
      arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, constant, last);
  if (first)
    hidden = arith::OrIOp::create(
        b, hidden,
        arith::CmpIOp::create(b, arith::CmpIPredicate::slt, constant, first));
  return hidden;
}

Value fmha::getKvHead(ImplicitLocOpBuilder &b, Value q, Value k, Value head) {
  Value queryHeads = memref::DimOp::create(b, q, 1);
  Value kvHeads = memref::DimOp::create(b, k, 1);
  return arith::DivUIOp::create(b, head,
                                arith::DivUIOp::create(b, queryHeads, kvHeads));
}

LaunchContract fmha::getAttentionLaunchContract(AttentionOp op, TileAttr tile) {
  LaunchContract contract;
  contract.operands = {"q", "k", "v", "o"};
  if (op.getLse())
    contract.operands.push_back("lse");
  if (op.getSinks())
    contract.operands.push_back("sinks");
  if (op.getKeyLengths())
    contract.operands.push_back("key_lengths");
  if (op.getPageTable())
    contract.operands.push_back("page_table");
  if (op.getQueryOffsets())
    contract.operands.push_back("query_offsets");
  if (op.getKeyOffsets())
    contract.operands.push_back("key_offsets");
  if (op.getMaxQueryLength())
    contract.operands.push_back("max_query_length");
  contract.threads = tile.getWarps() * kThreadsPerWarp;
  contract.sharedBytes = getAttentionSharedLayout(op, tile).totalBytes;
  return contract;
}

AttentionSharedLayout fmha::getAttentionSharedLayout(AttentionOp op,
                                                     TileAttr tile) {
  unsigned elementBytes =
      cast<MemRefType>(op.getQ().getType()).getElementTypeBitWidth() / 8;
  return getAttentionSharedLayout(tile.getAttentionTiling(), op.getHeadDims(),
                                  elementBytes);
}

RowSoftmax RowSoftmax::update(ImplicitLocOpBuilder &b, ArrayRef<Value> scores,
                              Value oldMax, Value oldSum, float scaleLog2) {
  auto f32 = [&](float value) -> Value {
    return arith::ConstantFloatOp::create(b, b.getF32Type(), APFloat(value));
  };
  Value log2Scale = f32(scaleLog2);
  Value zero = f32(0.0f);
  Value minusInf = f32(-std::numeric_limits<float>::infinity());
  Value rowMax = minusInf;
  for (Value score : scores)
    rowMax = arith::MaxNumFOp::create(b, rowMax, score);
  rowMax = reduceOverQuad(b, rowMax, /*max=*/true);
  RowSoftmax row;
  row.max = arith::MaxNumFOp::create(b, oldMax, rowMax);
  // A row that has seen no key yet keeps max -inf; subtract 0 then, not
  // -inf (-inf - -inf is NaN).
  Value empty =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, row.max, minusInf);
  Value shift = arith::SelectOp::create(
      b, empty, zero, arith::MulFOp::create(b, row.max, log2Scale));
  Value negShift = arith::NegFOp::create(b, shift);
  row.alpha = emitExp2(b, math::FmaOp::create(b, oldMax, log2Scale, negShift));
  Value sum = zero;
  for (Value score : scores) {
    Value p = emitExp2(b, math::FmaOp::create(b, score, log2Scale, negShift));
    sum = arith::AddFOp::create(b, sum, p);
    row.probabilities.push_back(p);
  }
  row.sum = oldSum ? math::FmaOp::create(b, oldSum, row.alpha, sum) : sum;
  return row;
}

Value fmha::reduceOverLanes(ImplicitLocOpBuilder &b, Value value, bool max,
                            int32_t lanes) {
  for (int32_t offset = 1; offset < lanes; offset *= 2) {
    Value other = gpu::ShuffleOp::create(b, value, offset, kThreadsPerWarp,
                                         gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    value = max ? Value(arith::MaxNumFOp::create(b, value, other))
                : Value(arith::AddFOp::create(b, value, other));
  }
  return value;
}

Value fmha::sumOverLaneGroup(KernelBuilder &b, Value value, int32_t lanes) {
  Value lane = b.urem(b.word(gpu::ThreadIdOp::create(b, gpu::Dimension::x)),
                      b.i32(kThreadsPerWarp));
  Value members =
      arith::ShLIOp::create(b, b.i32((int64_t(1) << lanes) - 1),
                            b.mul(b.udiv(lane, b.i32(lanes)), b.i32(lanes)));
  // shfl.sync's c operand: no segment (32 lanes), the clamp at lane 31.
  Value clamp = b.i32(kThreadsPerWarp - 1);
  for (int32_t offset = 1; offset < lanes; offset *= 2) {
    Value other = NVVM::ShflOp::create(
        b, value.getType(), members, value, b.i32(offset), clamp,
        NVVM::ShflKindAttr::get(b.getContext(), NVVM::ShflKind::bfly),
        UnitAttr());
    value = arith::AddFOp::create(b, value, other);
  }
  return value;
}

Value fmha::reduceOverQuad(ImplicitLocOpBuilder &b, Value value, bool max) {
  return reduceOverLanes(b, value, max, 4);
}

std::optional<ScoreCap> ScoreCap::get(std::optional<APFloat> softcap,
                                      float scale) {
  if (!softcap)
    return std::nullopt;
  float c = softcap->convertToFloat();
  return ScoreCap{scale / c, c / scale};
}

Value ScoreCap::getSlope(KernelBuilder &b, Value capped) const {
  Value tanh =
      arith::MaximumFOp::create(b, b.fmul(capped, b.f32(inner)), b.f32(-1.0f));
  return math::FmaOp::create(b, arith::NegFOp::create(b, tanh), tanh,
                             b.f32(1.0f));
}

void ScoreCap::apply(KernelBuilder &b, MutableArrayRef<Value> scores) const {
  auto cap = [&](Value score) -> Value {
    // llvm.tanh with afn, which NVPTX emits as tanh.approx.f32 (sm_75+;
    // max relative error 2^-10.987, below what the bf16/f16 P that follows
    // keeps).
    Value tanh = LLVM::TanhOp::create(
        b, arith::MulFOp::create(b, score, b.f32(inner)),
        LLVM::FastmathFlagsAttr::get(b.getContext(), LLVM::FastmathFlags::afn));
    return arith::MulFOp::create(b, tanh, b.f32(outer));
  };
  for (Value &score : scores) {
    auto vector = dyn_cast<VectorType>(score.getType());
    if (!vector) {
      score = cap(score);
      continue;
    }
    auto flat =
        VectorType::get({vector.getNumElements()}, vector.getElementType());
    Value elements = vector::ShapeCastOp::create(b, flat, score);
    SmallVector<Value> capped;
    for (int64_t i = 0; i < flat.getNumElements(); ++i)
      capped.push_back(cap(vector::ExtractOp::create(b, elements, i)));
    score = vector::ShapeCastOp::create(
        b, vector, vector::FromElementsOp::create(b, flat, capped));
  }
}

RowTotal RowTotal::get(KernelBuilder &b, Value rowMax, Value sum, float scale,
                       Value sink) {
  Value zero = b.f32(0.0f), one = b.f32(1.0f);
  Value inf = b.f32(std::numeric_limits<float>::infinity());
  Value minusInf = b.f32(-std::numeric_limits<float>::infinity());
  auto equal = [&](Value lhs, Value rhs) {
    return arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, lhs, rhs);
  };
  Value empty = equal(sum, zero);
  // The keys' own LSE (-inf for a row that saw none: log 0).
  Value keysLse =
      math::FmaOp::create(b, rowMax, b.f32(scale), math::LogOp::create(b, sum));
  if (!sink)
    return {b.select(empty, zero, arith::DivFOp::create(b, one, sum)),
            b.select(empty, inf, keysLse)};
  // log(exp(high) + exp(low)); where low is -inf (a row with no key, or a
  // sink of -inf) it is high, and where both are, there is no term: +inf,
  // as without a sink.
  Value high = arith::MaximumFOp::create(b, keysLse, sink);
  Value low = arith::MinimumFOp::create(b, keysLse, sink);
  Value lowTerm = math::ExpOp::create(b, arith::SubFOp::create(b, low, high));
  Value lse = arith::AddFOp::create(
      b, high, math::LogOp::create(b, arith::AddFOp::create(b, one, lowTerm)));
  lse = b.select(equal(low, minusInf), high, lse);
  lse = b.select(equal(high, minusInf), inf, lse);
  Value inverse = math::ExpOp::create(
      b, arith::SubFOp::create(
             b, arith::MulFOp::create(b, rowMax, b.f32(scale)), lse));
  return {b.select(empty, zero, inverse), lse};
}

Value fmha::emitExp2(ImplicitLocOpBuilder &b, Value x) {
  return LLVM::CallIntrinsicOp::create(
             b, b.getF32Type(), b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f"),
             ValueRange{x})
      .getResult(0);
}

void fmha::forEachRowOfWarp(
    KernelBuilder &b, Value rows, int64_t rowsPerCta,
    llvm::function_ref<void(Value, Value, Value, Value)> body,
    int64_t lanesPerRow) {
  Value threadId = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value warp = b.udiv(threadId, b.index(kThreadsPerWarp));
  Value lane = b.urem(threadId, b.index(kThreadsPerWarp));
  // The CTA's row of this lane: its warp's, or one of its warp's.
  Value rowInCta = warp;
  if (lanesPerRow < kThreadsPerWarp) {
    rowInCta = b.add(b.mul(warp, b.index(kThreadsPerWarp / lanesPerRow)),
                     b.udiv(lane, b.index(lanesPerRow)));
    lane = b.urem(lane, b.index(lanesPerRow));
  }
  Value heads = memref::DimOp::create(b, rows, 1);
  Value seq = memref::DimOp::create(b, rows, 2);
  Value rowBlocks = b.ceilDiv(seq, b.index(rowsPerCta));
  Value units =
      b.mul(b.mul(rowBlocks, heads), memref::DimOp::create(b, rows, 0));
  auto loop =
      scf::ForOp::create(b, gpu::BlockIdOp::create(b, gpu::Dimension::x), units,
                         gpu::GridDimOp::create(b, gpu::Dimension::x));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value unit = loop.getInductionVar();
  Value row =
      b.add(b.mul(b.urem(unit, rowBlocks), b.index(rowsPerCta)), rowInCta);
  Value headAndBatch = b.udiv(unit, rowBlocks);
  Value head = b.urem(headAndBatch, heads);
  Value batch = b.udiv(headAndBatch, heads);
  scf::IfOp::create(b, b.slt(row, seq), [&](OpBuilder &, Location) {
    body(batch, head, row, lane);
    scf::YieldOp::create(b);
  });
}

llvm::MaybeAlign fmha::getVectorAlignment(int64_t count, Type elementType) {
  int64_t bytes = count * elementType.getIntOrFloatBitWidth() / 8;
  return llvm::MaybeAlign(std::min<int64_t>(bytes, 16));
}

/// Calls \p body with the position of each element of \p type, in order.
static void forEachElement(VectorType type,
                           llvm::function_ref<void(ArrayRef<int64_t>)> body) {
  SmallVector<int64_t> position(type.getRank(), 0);
  for (int64_t i = 0; i < type.getNumElements(); ++i) {
    body(position);
    for (int64_t d = type.getRank() - 1; d >= 0; --d) {
      if (++position[d] < type.getDimSize(d))
        break;
      position[d] = 0;
    }
  }
}

SmallVector<Value>
fmha::maskWhere(ImplicitLocOpBuilder &b, Value masked, ArrayRef<Value> scores,
                llvm::function_ref<void(SmallVectorImpl<Value> &)> mask) {
  // The branch carries vectors (sm_80's mma.sync fragments) as their
  // scalars: extracting a scalar folds through the shape_casts that made
  // them (a softcap's), where a vector carried across the branch's blocks
  // would keep an n-D shape_cast that nothing here lowers.
  auto scalarize = [&](ArrayRef<Value> values) {
    SmallVector<Value> scalars;
    for (Value value : values) {
      auto type = dyn_cast<VectorType>(value.getType());
      if (!type) {
        scalars.push_back(value);
        continue;
      }
      forEachElement(type, [&](ArrayRef<int64_t> position) {
        scalars.push_back(vector::ExtractOp::create(b, value, position));
      });
    }
    return scalars;
  };
  SmallVector<Value> scalars = scalarize(scores);
  auto branch = scf::IfOp::create(b, ValueRange(scalars).getTypes(), masked,
                                  /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(branch.thenBlock());
    SmallVector<Value> hidden(scores);
    mask(hidden);
    scf::YieldOp::create(b, scalarize(hidden));
    b.setInsertionPointToStart(branch.elseBlock());
    scf::YieldOp::create(b, scalars);
  }
  SmallVector<Value> results;
  ValueRange carried = branch.getResults();
  for (Value score : scores) {
    auto type = dyn_cast<VectorType>(score.getType());
    if (!type) {
      results.push_back(carried.front());
      carried = carried.drop_front();
      continue;
    }
    Value vector = arith::ConstantOp::create(b, b.getZeroAttr(type));
    forEachElement(type, [&](ArrayRef<int64_t> position) {
      vector = vector::InsertOp::create(b, carried.front(), vector, position);
      carried = carried.drop_front();
    });
    results.push_back(vector);
  }
  return results;
}

Value fmha::isMaskedBlock(KernelBuilder &b, Value block, Value unmaskedBegin,
                          Value unmaskedEnd) {
  return b.or_(b.slt(block, unmaskedBegin), b.sle(unmaskedEnd, block));
}

Value fmha::makeWarpUniform(ImplicitLocOpBuilder &b, Value value) {
  // shfl.sync's c operand: no segment (32 lanes), the clamp at lane 31.
  return NVVM::ShflOp::create(
      b, value.getType(), arith::ConstantIntOp::create(b, -1, 32), value,
      arith::ConstantIntOp::create(b, 0, 32),
      arith::ConstantIntOp::create(b, kThreadsPerWarp - 1, 32),
      NVVM::ShflKindAttr::get(b.getContext(), NVVM::ShflKind::idx), UnitAttr());
}

Value fmha::readSpecialRegister(ImplicitLocOpBuilder &b, StringRef name) {
  return LLVM::InlineAsmOp::create(
             b, b.getI32Type(), ValueRange{},
             ("mov.u32 $0, " + name + ";").str(), "=r",
             /*has_side_effects=*/true, /*is_align_stack=*/false,
             LLVM::TailCallKind::None, /*asm_dialect=*/LLVM::AsmDialectAttr(),
             /*operand_attrs=*/ArrayAttr())
      .getResult(0);
}

Value fmha::hideFromHoisting(ImplicitLocOpBuilder &b, Value value) {
  // An i32 moves as itself; an index as i64 (the kernels' index width).
  bool word = value.getType().isInteger(32);
  Type type = word ? b.getI32Type() : b.getI64Type();
  Value moved = word ? value : arith::IndexCastOp::create(b, type, value);
  auto move = LLVM::InlineAsmOp::create(
      b, type, ValueRange{moved}, word ? "mov.b32 $0, $1;" : "mov.b64 $0, $1;",
      word ? "=r,r" : "=l,l",
      /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::TailCallKind::None, /*asm_dialect=*/LLVM::AsmDialectAttr(),
      /*operand_attrs=*/ArrayAttr());
  if (word)
    return move.getResult(0);
  return arith::IndexCastOp::create(b, b.getIndexType(), move.getResult(0));
}
