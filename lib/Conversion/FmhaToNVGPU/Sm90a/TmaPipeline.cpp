//===- TmaPipeline.cpp - sm_90a shared memory, mbarriers and TMA ----------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "Sm90a/TmaPipeline.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::fmha;
using namespace mlir::fmha::sm90a;

namespace {
/// The mbarrier wait's suspend-time hint, in nanoseconds (as CUTLASS).
constexpr int32_t kWaitTicks = 0x989680;
} // namespace

/// The dynamic shared memory's address (i32): shared addresses are 32-bit
/// (nvptx-short-ptr), and i32 arithmetic keeps them in one register each.
static Value getDynamicSharedAddress(KernelBuilder &b) {
  auto workgroup = gpu::AddressSpaceAttr::get(
      b.getContext(), gpu::GPUDialect::getWorkgroupAddressSpace());
  Value bytes = gpu::DynamicSharedMemoryOp::create(
      b, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), nullptr,
                         workgroup));
  return b.word(memref::ExtractAlignedPointerAsIndexOp::create(b, bytes));
}

TmaPipeline TmaPipeline::create(KernelBuilder &b, const KernelShape &shape,
                                Value threadId) {
  Value address = getDynamicSharedAddress(b);
  // Round up to the swizzle atom (the shared layout's totalBytes leaves room).
  Value base =
      b.and_(b.add(address, b.i32(kAtomBytes - 1)), b.i32(~(kAtomBytes - 1)));
  return TmaPipeline(b, shape, threadId, base);
}

Value TmaPipeline::getSlackBuffer() {
  const AttentionSharedLayout &layout = shape.sharedLayout;
  assert(layout.totalBytes == kAtomBytes + layout.tail + layout.tailBytes &&
         "the layout reserves an atom of slack");
  // Read where it is used: a role that walks tiles holds nothing for it.
  Value address = hideFromHoisting(b, getDynamicSharedAddress(b));
  Value skipped = b.sub(base, address);
  return b.select(b.sle(b.i32(kSlackBufferBytes), skipped), address,
                  b.add(base, b.i32(layout.tail + layout.tailBytes)));
}

void TmaPipeline::initBarriers() {
  Value first = b.eq(threadId, b.index(0));
  scf::IfOp::create(b, first, [&](OpBuilder &, Location) {
    // Full barriers complete on the producer's arrive plus the TMA bytes
    // (K's and V's on one from each issuing warp); empty ones when every
    // consumer warp has arrived.
    Value one = b.i32(1), issuingWarps = b.i32(shape.issuingWarps);
    Value consumerWarps = b.i32(shape.consumers * 4);
    for (unsigned q = 0; q < shape.sharedLayout.queryBuffers; ++q) {
      Value slot = b.i32(q);
      NVVM::MBarrierInitOp::create(b, getBarrier(kQueryFull, slot), one,
                                   Value());
      NVVM::MBarrierInitOp::create(b, getBarrier(kQueryEmpty, slot),
                                   consumerWarps, Value());
    }
    for (int64_t s = 0; s < shape.stages; ++s) {
      Value stage = b.i32(s);
      NVVM::MBarrierInitOp::create(b, getBarrier(kKeyFull, stage), issuingWarps,
                                   Value());
      NVVM::MBarrierInitOp::create(b, getBarrier(kValueFull, stage),
                                   issuingWarps, Value());
      NVVM::MBarrierInitOp::create(b, getBarrier(kKeyEmpty, stage),
                                   consumerWarps, Value());
      NVVM::MBarrierInitOp::create(b, getBarrier(kValueEmpty, stage),
                                   consumerWarps, Value());
    }
    // Make the initialized barriers visible to the TMA unit.
    NVVM::FenceMbarrierInitOp::create(b);
    scf::YieldOp::create(b);
  });
  gpu::BarrierOp::create(b);
}

Value TmaPipeline::getBuffer(Value stage, int64_t firstOffset,
                             int64_t bufferBytes) {
  return b.add(base,
               b.add(b.mul(stage, b.i32(bufferBytes)), b.i32(firstOffset)));
}

Value TmaPipeline::getQueryBuffer(Value slot) {
  return getBuffer(slot, shape.sharedLayout.query,
                   shape.sharedLayout.queryBufferBytes);
}

std::pair<Value, Value> TmaPipeline::getQuerySlotAndPhase(Value iteration) {
  Value buffers = b.i32(shape.sharedLayout.queryBuffers);
  return {b.urem(iteration, buffers),
          b.urem(b.udiv(iteration, buffers), b.i32(2))};
}

Value TmaPipeline::getOutputBuffer() {
  assert(shape.sharedLayout.outputBytes && "O is staged in the last V buffer");
  return b.add(base, b.i32(shape.sharedLayout.output));
}

Value TmaPipeline::getKeyBuffer(Value stage) {
  return getBuffer(stage, shape.sharedLayout.keys, shape.keyBytes);
}

Value TmaPipeline::getValueBuffer(Value stage) {
  return getBuffer(stage, shape.sharedLayout.values, shape.valueBytes);
}

Value TmaPipeline::getBarrier(Barrier which, Value stage) {
  int64_t queryBuffers = shape.sharedLayout.queryBuffers;
  int64_t slot = which <= kQueryEmpty
                     ? int64_t(which) * queryBuffers
                     : 2 * queryBuffers + (which - 2) * shape.stages;
  Value offset = b.i32(getBarriersOffset() + 8 * slot);
  if (stage)
    offset = b.add(offset, b.mul(stage, b.i32(8)));
  return getSharedPointer(b.add(base, offset));
}

Value TmaPipeline::getSharedPointer(Value address) {
  return LLVM::IntToPtrOp::create(
      b, LLVM::LLVMPointerType::get(b.getContext(), 3), address);
}

std::pair<Value, Value> TmaPipeline::getStageAndPhase(Value count) {
  Value stage = b.urem(count, b.i32(shape.stages));
  Value phase = b.urem(b.udiv(count, b.i32(shape.stages)), b.i32(2));
  return {stage, phase};
}

void TmaPipeline::wait(Value barrier, Value phase) {
  NVVM::MBarrierTryWaitParityOp::create(b, barrier, phase, b.i32(kWaitTicks));
}

void TmaPipeline::expectBytes(Value barrier, int64_t bytes) {
  expectBytes(barrier, b.i32(bytes));
}

void TmaPipeline::expectBytes(Value barrier, Value bytes) {
  NVVM::MBarrierArriveExpectTxOp::create(
      b, Type(), barrier, bytes, NVVM::MemScopeKindAttr(), BoolAttr(), Value());
}

void TmaPipeline::arrive(Value barrier) {
  NVVM::MBarrierArriveOp::create(b, b.getI64Type(), barrier, Value(),
                                 NVVM::MemScopeKindAttr());
}

void TmaPipeline::release(Value barrier, Value threadId) {
  Value lane =
      b.urem(threadId ? threadId : this->threadId, b.index(kThreadsPerWarp));
  Value leader = b.eq(lane, b.index(0));
  scf::IfOp::create(b, leader, [&](OpBuilder &, Location) {
    arrive(barrier);
    scf::YieldOp::create(b);
  });
}

void TmaPipeline::fenceAsyncShared() {
  NVVM::FenceProxyOp::create(
      b,
      NVVM::ProxyKindAttr::get(b.getContext(), NVVM::ProxyKind::async_shared),
      NVVM::SharedSpaceAttr::get(b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
}

void TmaPipeline::loadTile(Value map, Value tile, Value barrier, Value row,
                           Value headWord, Value entryWord, int64_t rows,
                           int64_t tileRows, int64_t columnBlocks) {
  for (int64_t c = 0; c < columnBlocks; ++c) {
    Value destination =
        getSharedPointer(b.add(tile, b.i32(c * tileRows * kSwizzleBytes)));
    NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
        b, destination, map,
        ValueRange{b.i32(c * kBoxColumns), row, headWord, entryWord}, barrier,
        ValueRange{}, Value(), Value(), NVVM::TMALoadMode::TILE,
        /*isCTAOnly=*/true, NVVM::CTAGroupKindAttr(), Value());
  }
}
