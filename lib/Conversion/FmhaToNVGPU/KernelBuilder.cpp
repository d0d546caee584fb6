//===- KernelBuilder.cpp - terse arithmetic for kernel emitters -----------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::fmha;

Value KernelBuilder::index(int64_t value) {
  return arith::ConstantIndexOp::create(*this, value);
}
Value KernelBuilder::i32(int64_t value) {
  return arith::ConstantIntOp::create(*this, value, 32);
}
Value KernelBuilder::i64(int64_t value) {
  return arith::ConstantIntOp::create(*this, value, 64);
}
Value KernelBuilder::f32(float value) {
  return arith::ConstantFloatOp::create(*this, getF32Type(), APFloat(value));
}

Value KernelBuilder::word(Value value) {
  return arith::IndexCastUIOp::create(*this, getI32Type(), value);
}
Value KernelBuilder::toIndex(Value value) {
  return arith::IndexCastUIOp::create(*this, getIndexType(), value);
}

Value KernelBuilder::add(Value lhs, Value rhs) {
  return arith::AddIOp::create(*this, lhs, rhs);
}
Value KernelBuilder::sub(Value lhs, Value rhs) {
  return arith::SubIOp::create(*this, lhs, rhs);
}
Value KernelBuilder::mul(Value lhs, Value rhs) {
  return arith::MulIOp::create(*this, lhs, rhs);
}
Value KernelBuilder::udiv(Value lhs, Value rhs) {
  return arith::DivUIOp::create(*this, lhs, rhs);
}
Value KernelBuilder::urem(Value lhs, Value rhs) {
  return arith::RemUIOp::create(*this, lhs, rhs);
}
Value KernelBuilder::sdiv(Value lhs, Value rhs) {
  return arith::DivSIOp::create(*this, lhs, rhs);
}
Value KernelBuilder::floorDiv(Value lhs, Value rhs) {
  return arith::FloorDivSIOp::create(*this, lhs, rhs);
}
Value KernelBuilder::ceilDiv(Value lhs, Value rhs) {
  return arith::CeilDivSIOp::create(*this, lhs, rhs);
}
Value KernelBuilder::ceilDivU(Value lhs, Value rhs) {
  return arith::CeilDivUIOp::create(*this, lhs, rhs);
}
Value KernelBuilder::and_(Value lhs, Value rhs) {
  return arith::AndIOp::create(*this, lhs, rhs);
}
Value KernelBuilder::or_(Value lhs, Value rhs) {
  return arith::OrIOp::create(*this, lhs, rhs);
}
Value KernelBuilder::xor_(Value lhs, Value rhs) {
  return arith::XOrIOp::create(*this, lhs, rhs);
}
Value KernelBuilder::lshr(Value lhs, Value rhs) {
  return arith::ShRUIOp::create(*this, lhs, rhs);
}
Value KernelBuilder::smin(Value lhs, Value rhs) {
  return arith::MinSIOp::create(*this, lhs, rhs);
}
Value KernelBuilder::smax(Value lhs, Value rhs) {
  return arith::MaxSIOp::create(*this, lhs, rhs);
}
Value KernelBuilder::umax(Value lhs, Value rhs) {
  return arith::MaxUIOp::create(*this, lhs, rhs);
}
Value KernelBuilder::clamp(Value value, Value low, Value high) {
  return smin(smax(value, low), high);
}

Value KernelBuilder::eq(Value lhs, Value rhs) {
  return arith::CmpIOp::create(*this, arith::CmpIPredicate::eq, lhs, rhs);
}
Value KernelBuilder::ne(Value lhs, Value rhs) {
  return arith::CmpIOp::create(*this, arith::CmpIPredicate::ne, lhs, rhs);
}
Value KernelBuilder::slt(Value lhs, Value rhs) {
  return arith::CmpIOp::create(*this, arith::CmpIPredicate::slt, lhs, rhs);
}
Value KernelBuilder::sle(Value lhs, Value rhs) {
  return arith::CmpIOp::create(*this, arith::CmpIPredicate::sle, lhs, rhs);
}
Value KernelBuilder::sgt(Value lhs, Value rhs) {
  return arith::CmpIOp::create(*this, arith::CmpIPredicate::sgt, lhs, rhs);
}

Value KernelBuilder::select(Value condition, Value ifTrue, Value ifFalse) {
  return arith::SelectOp::create(*this, condition, ifTrue, ifFalse);
}

Value KernelBuilder::fmul(Value lhs, Value rhs) {
  return arith::MulFOp::create(*this, lhs, rhs);
}
