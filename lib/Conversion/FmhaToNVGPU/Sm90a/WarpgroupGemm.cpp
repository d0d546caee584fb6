//===- WarpgroupGemm.cpp - the sm_90a attention kernel's WGMMAs -----------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "Sm90a/WarpgroupGemm.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

#include <cassert>
#include <string>

using namespace mlir;
using namespace mlir::fmha;
using namespace mlir::fmha::sm90a;

namespace {
NVVM::WGMMATypes getWgmmaType(Type elementType) {
  return elementType.isF16() ? NVVM::WGMMATypes::f16 : NVVM::WGMMATypes::bf16;
}
} // namespace

/// The shared memory matrix descriptor (PTX ISA, "Matrix Descriptor
/// Format") of a 128-byte swizzled operand at shared address \p address
/// (i32): start address, leading and stride byte offsets (all >> 4),
/// swizzle mode 1 (128B) in bits 62-63.
Value WarpgroupGemm::getDescriptor(Value address, int64_t leadingBytes,
                                   int64_t strideBytes) {
  Value start = b.and_(
      b.lshr(arith::ExtUIOp::create(b, b.getI64Type(), address), b.i64(4)),
      b.i64(0x3FFF));
  uint64_t fixed = (uint64_t(leadingBytes >> 4) << 16) |
                   (uint64_t(strideBytes >> 4) << 32) | (uint64_t(1) << 62);
  return b.or_(start, b.i64(static_cast<int64_t>(fixed)));
}

/// \p descriptor advanced by \p bytes (a multiple of 16 that keeps the
/// address field from carrying).
Value WarpgroupGemm::advance(Value descriptor, int64_t bytes) {
  if (bytes == 0)
    return descriptor;
  return b.add(descriptor, b.i64(bytes >> 4));
}

Value WarpgroupGemm::getQueryDescriptor(Value querySlot, Value consumerRow) {
  // The row, from the thread id, made warp-uniform: ptxas then builds Q's
  // descriptor in uniform registers, not in vector ones moved over by an
  // R2UR before each WGMMA.
  Value row = makeWarpUniform(b, b.word(consumerRow));
  return getKMajorDescriptor(b.add(pipeline.getQueryBuffer(querySlot),
                                   b.mul(row, b.i32(kSwizzleBytes))));
}

Value WarpgroupGemm::issueScores(Value queries, Value stage) {
  Value keys = getKMajorDescriptor(pipeline.getKeyBuffer(stage));
  return multiplyKMajorDescriptors(queries, shape.blockM, keys, shape.blockN,
                                   shape.blockN, shape.headDim);
}

Value WarpgroupGemm::issueValues(ArrayRef<Value> probabilities, Value stage,
                                 Value out) {
  return accumulateRegisterA(probabilities, pipeline.getValueBuffer(stage),
                             shape.blockN, shape.outputColumns, out);
}

// Both operands K-major: k step j reads bytes 32 j of each 128-byte row, in
// column block j / 4.
Value WarpgroupGemm::getKMajorDescriptor(Value address) {
  return getDescriptor(address, /*leadingBytes=*/16,
                       /*strideBytes=*/kAtomBytes);
}

Value WarpgroupGemm::multiplyKMajor(Value a, int64_t aRows, Value bTile,
                                    int64_t bRows, int64_t n,
                                    int64_t kColumns) {
  Value aDescriptor = getKMajorDescriptor(a);
  return multiplyKMajorDescriptors(
      aDescriptor, aRows, getKMajorDescriptor(bTile), bRows, n, kColumns);
}

Value WarpgroupGemm::multiplyKMajorDescriptors(Value aDescriptor, int64_t aRows,
                                               Value bDescriptor, int64_t bRows,
                                               int64_t n, int64_t kColumns) {
  Value c = LLVM::PoisonOp::create(b, getAccumulatorType(b, n));
  // A head dim of 8 mod 16: the last k step's second half is the zeros TMA
  // filled past it.
  int64_t kSteps = llvm::divideCeil(kColumns, kWgmmaK);
  for (int64_t k = 0; k < kSteps; ++k) {
    int64_t inRow = (k % 4) * 32;
    c = emitSharedWgmma(
        advance(aDescriptor, (k / 4) * aRows * kSwizzleBytes + inRow),
        advance(bDescriptor, (k / 4) * bRows * kSwizzleBytes + inRow), n,
        NVVM::MMALayout::row, NVVM::MMALayout::col, /*first=*/k == 0, c);
  }
  return c;
}

// B MN-major: k step j is rows 16 j .. 16 j + 15; column blocks are LBO
// apart.
Value WarpgroupGemm::getMnMajorDescriptor(Value address, int64_t kRows) {
  return getDescriptor(address, /*leadingBytes=*/kRows * kSwizzleBytes,
                       /*strideBytes=*/kAtomBytes);
}

Value WarpgroupGemm::accumulateRegisterA(ArrayRef<Value> a, Value bTile,
                                         int64_t kRows, int64_t n, Value out) {
  Value descriptor = getMnMajorDescriptor(bTile, kRows);
  for (int64_t k = 0; k < kRows / kWgmmaK; ++k)
    out = emitRegisterWgmma(a.slice(4 * k, 4),
                            advance(descriptor, k * kWgmmaK * kSwizzleBytes), n,
                            out);
  return out;
}

// A K-major within its one column block: k step j reads bytes 32 j of each
// row.
Value WarpgroupGemm::accumulateSharedA(Value aTile, Value bTile, int64_t kRows,
                                       int64_t n, Value out) {
  assert(kRows <= kBoxColumns && "A is one column block");
  Value aDescriptor = getKMajorDescriptor(aTile);
  Value bDescriptor = getMnMajorDescriptor(bTile, kRows);
  for (int64_t k = 0; k < kRows / kWgmmaK; ++k)
    out = emitSharedWgmma(advance(aDescriptor, k * 2 * kWgmmaK),
                          advance(bDescriptor, k * kWgmmaK * kSwizzleBytes), n,
                          NVVM::MMALayout::row, NVVM::MMALayout::row,
                          /*first=*/false, out);
  return out;
}

// Both MN-major (transposed, layouts col and row): k step j is rows 16 j ..
// 16 j + 15 of each.
Value WarpgroupGemm::multiplyMnMajor(Value aTile, Value b0, int64_t kRows,
                                     int64_t n) {
  Value aDescriptor = getMnMajorDescriptor(aTile, kRows);
  Value bDescriptor = getMnMajorDescriptor(b0, kRows);
  Value c = LLVM::PoisonOp::create(b, getAccumulatorType(b, n));
  for (int64_t k = 0; k < kRows / kWgmmaK; ++k) {
    int64_t rows = k * kWgmmaK * kSwizzleBytes;
    c = emitSharedWgmma(advance(aDescriptor, rows), advance(bDescriptor, rows),
                        n, NVVM::MMALayout::col, NVVM::MMALayout::row,
                        /*first=*/k == 0, c);
  }
  return c;
}

/// \p c += A B (\p c unread when \p first), m64nNk16 with both operands in
/// shared memory: A K-major (layout row) or MN-major (col), B K-major (col)
/// or MN-major (row).
Value WarpgroupGemm::emitSharedWgmma(Value a, Value bOperand, int64_t n,
                                     NVVM::MMALayout aLayout,
                                     NVVM::MMALayout bLayout, bool first,
                                     Value c) {
  NVVM::WGMMATypes type = getWgmmaType(shape.elementType);
  return NVVM::WgmmaMmaAsyncOp::create(
      b, c.getType(), c, a, bOperand,
      NVVM::MMAShapeAttr::get(b.getContext(), kWgmmaM, n, kWgmmaK), type, type,
      NVVM::WGMMATypes::f32,
      first ? NVVM::WGMMAScaleOut::zero : NVVM::WGMMAScaleOut::one,
      NVVM::WGMMAScaleIn::one, NVVM::WGMMAScaleIn::one, aLayout, bLayout,
      NVVM::MMAIntOverflowAttr());
}

/// out += A B, m64nNk16, A from four registers of packed pairs, B
/// transposed (MN-major). Inline PTX because neither nvgpu.warpgroup.mma
/// nor nvvm.wgmma.mma_async has the register-A form (KERNELS.md §3, §5
/// rule 7): llvm.inline_asm with D / 2 "=f" outputs tied to the
/// accumulator inputs, so that ptxas sees them stay in place and keeps the
/// WGMMAs pipelined.
Value WarpgroupGemm::emitRegisterWgmma(ArrayRef<Value> a, Value descriptor,
                                       int64_t columns, Value out) {
  int64_t n = columns / 2;
  std::string registers;
  llvm::raw_string_ostream asmText(registers);
  const char *type = shape.elementType.isF16() ? "f16" : "bf16";
  asmText << "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
          << "wgmma.mma_async.sync.aligned.m64n" << columns << "k16.f32."
          << type << "." << type << " {";
  for (int64_t i = 0; i < n; ++i)
    asmText << (i ? ", " : "") << "$" << i;
  asmText << "}, {$" << n << ", $" << n + 1 << ", $" << n + 2 << ", $" << n + 3
          << "}, $" << n + 4 << ", p, 1, 1, 1;\n}";
  std::string constraints;
  for (int64_t i = 0; i < n; ++i)
    constraints += "=f,";
  constraints += "r,r,r,r,l";
  for (int64_t i = 0; i < n; ++i)
    constraints += "," + std::to_string(i);
  SmallVector<Value> operands(a);
  operands.push_back(descriptor);
  llvm::append_range(operands, unpackAccumulator(b, out, n));
  return LLVM::InlineAsmOp::create(
             b, getAccumulatorType(b, columns), operands, registers,
             constraints, /*has_side_effects=*/true,
             /*is_align_stack=*/false, LLVM::TailCallKind::None,
             LLVM::AsmDialectAttr(), ArrayAttr())
      .getResult(0);
}

void WarpgroupGemm::fence() { NVVM::WgmmaFenceAlignedOp::create(b); }

void WarpgroupGemm::commitGroup() { NVVM::WgmmaGroupSyncAlignedOp::create(b); }

void WarpgroupGemm::waitGroup(int64_t pending) {
  NVVM::WgmmaWaitGroupSyncOp::create(b, b.getI64IntegerAttr(pending));
}
