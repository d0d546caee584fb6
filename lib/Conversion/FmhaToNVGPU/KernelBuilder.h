//===- KernelBuilder.h - terse arithmetic for kernel emitters ---*- C++ -*-===//
//
// Part of FlashCore. Private to lib/Conversion/FmhaToNVGPU. The kernels'
// index and address arithmetic is most of their code; written as nested
// `arith::AddIOp::create(b, arith::MulIOp::create(b, ...), ...)` chains it
// hides the algorithm. KernelBuilder spells it `b.add(b.mul(row, b.i32(8)),
// column)`, as Triton's TritonLLVMOpBuilder does. Each helper creates exactly
// the one op its name says, at the insertion point, so a kernel written with
// it emits what it reads.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_FMHATONVGPU_KERNELBUILDER_H
#define LIB_CONVERSION_FMHATONVGPU_KERNELBUILDER_H

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::fmha {

/// An ImplicitLocOpBuilder with one-op helpers for constants, casts and
/// arith. Every function taking an ImplicitLocOpBuilder takes it too.
class KernelBuilder : public ImplicitLocOpBuilder {
public:
  using ImplicitLocOpBuilder::ImplicitLocOpBuilder;

  /// Constants.
  Value index(int64_t value);
  Value i32(int64_t value);
  Value i64(int64_t value);
  Value f32(float value);

  /// \p value (an index that fits) as i32, and an i32 as index, unsigned:
  /// 32-bit arithmetic where the sizes allow it takes one register, not two.
  Value word(Value value);
  Value toIndex(Value value);

  /// Integer arithmetic on operands of one type (index, i32 or i64).
  Value add(Value lhs, Value rhs);
  Value sub(Value lhs, Value rhs);
  Value mul(Value lhs, Value rhs);
  Value udiv(Value lhs, Value rhs);
  Value urem(Value lhs, Value rhs);
  /// Signed division rounding toward zero, down and up; unsigned up.
  Value sdiv(Value lhs, Value rhs);
  Value floorDiv(Value lhs, Value rhs);
  Value ceilDiv(Value lhs, Value rhs);
  Value ceilDivU(Value lhs, Value rhs);
  Value and_(Value lhs, Value rhs);
  Value or_(Value lhs, Value rhs);
  Value xor_(Value lhs, Value rhs);
  Value lshr(Value lhs, Value rhs);
  Value smin(Value lhs, Value rhs);
  Value smax(Value lhs, Value rhs);
  Value umax(Value lhs, Value rhs);
  /// smin(smax(value, low), high).
  Value clamp(Value value, Value low, Value high);

  /// Integer comparisons.
  Value eq(Value lhs, Value rhs);
  Value ne(Value lhs, Value rhs);
  Value slt(Value lhs, Value rhs);
  Value sle(Value lhs, Value rhs);
  Value sgt(Value lhs, Value rhs);

  Value select(Value condition, Value ifTrue, Value ifFalse);

  /// f32 arithmetic.
  Value fmul(Value lhs, Value rhs);
};

} // namespace mlir::fmha

#endif // LIB_CONVERSION_FMHATONVGPU_KERNELBUILDER_H
