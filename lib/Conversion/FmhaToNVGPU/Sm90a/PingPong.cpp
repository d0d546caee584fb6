//===- PingPong.cpp - sm_90a warpgroup roles: setmaxnreg, turns -----------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "Sm90a/PingPong.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::fmha;
using namespace mlir::fmha::sm90a;

namespace {
/// Named barrier 1 + c is consumer c's turn.
constexpr int32_t kFirstTurnBarrier = 1;
/// Each turn barrier completes with 2 warpgroups: the one waiting for its
/// turn and the one that passed it on.
constexpr int32_t kTurnThreads = 2 * kWarpgroupThreads;
} // namespace

void sm90a::setMaxRegisters(KernelBuilder &b, int32_t count, bool increase) {
  NVVM::SetMaxRegisterOp::create(
      b, b.getI32IntegerAttr(count),
      NVVM::SetMaxRegisterActionAttr::get(
          b.getContext(), increase ? NVVM::SetMaxRegisterAction::increase
                                   : NVVM::SetMaxRegisterAction::decrease));
}

/// This thread's consumer warpgroup, 0 to consumers - 1, as i32.
Value ConsumerTurns::getConsumerIndex() {
  Value consumer =
      b.sub(b.udiv(threadId, b.index(kWarpgroupThreads)), b.index(1));
  return arith::IndexCastOp::create(b, b.getI32Type(), consumer);
}

void ConsumerTurns::start() {
  if (!takesTurns())
    return;
  Value first = b.eq(getConsumerIndex(), b.i32(0));
  scf::IfOp::create(b, first, [&](OpBuilder &, Location) {
    NVVM::BarrierArriveOp::create(b, b.i32(kFirstTurnBarrier),
                                  b.i32(kTurnThreads));
    scf::YieldOp::create(b);
  });
}

void ConsumerTurns::waitForTurn() {
  if (!takesTurns())
    return;
  Value id = b.add(getConsumerIndex(), b.i32(kFirstTurnBarrier));
  NVVM::BarrierOp::create(b, TypeRange{}, id, b.i32(kTurnThreads),
                          NVVM::BarrierReductionAttr(), Value());
}

void ConsumerTurns::passTurn() {
  if (!takesTurns())
    return;
  Value next = b.urem(b.add(getConsumerIndex(), b.i32(1)), b.i32(consumers));
  NVVM::BarrierArriveOp::create(b, b.add(next, b.i32(kFirstTurnBarrier)),
                                b.i32(kTurnThreads));
}

void ConsumerTurns::waitForAllDrained() {
  if (takesTurns())
    syncConsumers();
}

// The barrier after the turn barriers (at most 3 consumers).
void ConsumerTurns::syncConsumers() {
  NVVM::BarrierOp::create(
      b, TypeRange{},
      b.i32(kFirstTurnBarrier + static_cast<int32_t>(consumers)),
      b.i32(consumers * kWarpgroupThreads), NVVM::BarrierReductionAttr(),
      Value());
}

void ConsumerTurns::syncWarpgroup() {
  Value id = b.add(getConsumerIndex(), b.i32(kFirstTurnBarrier + 1 +
                                             static_cast<int32_t>(consumers)));
  NVVM::BarrierOp::create(b, TypeRange{}, id, b.i32(kWarpgroupThreads),
                          NVVM::BarrierReductionAttr(), Value());
}
