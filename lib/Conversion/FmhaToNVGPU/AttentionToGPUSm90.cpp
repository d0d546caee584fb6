//===- AttentionToGPUSm90.cpp - fmha.attention for sm_90a as a gpu.func ---===//
//
// Part of FlashCore. Lowers fmha.attention with an sm_90a tile to one
// warp-specialized FlashAttention-3-style forward kernel (KERNELS.md
// section 2) plus a gpu.launch_func in its place.
//
// Launch (getSm90LaunchContract): the TMA tensor maps of q, k and v first
// (CUtensorMap, 128 bytes each, passed by value: !llvm.ptr parameters that
// fmha-tensor-map-parameters makes byval grid-constant ones after the GPU
// lowering), then the op's memref operands in order, each an MLIR memref
// descriptor. Each map has the operand's strides, a box of rows x 64
// elements (rows = block_m for q, block_n for k and v) and 128-byte swizzle;
// positions past S read as zeros. Grid: any number of CTAs along x, which
// take the units of work (pairsAttentionRowBlocks in TileConfig.h: a row block, or
// a causal pair of them, of one (batch, head)) in turn: the JIT launches one
// CTA per SM, so one unit's epilogue overlaps the next one's loads; the
// host IR, which cannot ask the device, launches one CTA per unit.
//
// Warpgroup 0 is the producer: one thread issues every TMA load. Q once per
// tile (row block of a (batch, head)), K and V of each key block into
// `stages` buffers, each buffer with a full and an empty mbarrier. The other
// warpgroups are consumers, each owning 64 query rows: per key block j
//
//   wait K_j, V_{j-1} full;  issue S_j = Q K_j^T (WGMMA, both operands in
//                            shared memory), then O += P_{j-1} V_{j-1}
//                            (WGMMA with A = P from registers)
//   wait for S_j;            release K_j; mask; online softmax -> P_j
//   wait for P V;            release V_{j-1}; rescale O
//
// so each warpgroup's softmax runs under its own P V (FlashAttention-3's
// intra-warpgroup overlap). The producer runs ahead by `stages` blocks, so
// loads overlap the GEMMs. With two or three consumers, named barriers
// make them take turns issuing their GEMMs (FlashAttention-3's ping-pong):
// consumer c waits on barrier 1 + c before issuing and then arrives on the
// next consumer's, so the tensor cores run one warpgroup's GEMMs while the
// other computes its softmax, instead of both contending at once.
// Registers move from the producer to the consumers with setmaxnreg. After
// a tile's last P V the consumers stage O with stmatrix in the last key
// block's V buffer and store it in 16-byte chunks, then release the buffer
// (storeOutput).
//
// Shared memory, from a 1024-byte aligned base (the 128-byte swizzle repeats
// every 8 rows of 128 bytes): Q, the K buffers, the V buffers, then the
// mbarriers. A tile of R rows is D / 64 column blocks of R x 128 bytes, each
// exactly one TMA box, which is also the canonical WGMMA layout: K-major
// with 128-byte swizzle for Q and K (A and B of Q K^T), MN-major (transposed)
// for V (B of P V).
//
//===----------------------------------------------------------------------===//

#include "AttentionCommon.h"
#include "FmhaToNVGPU.h"
#include "KernelLaunch.h"
#include "fmha/Dialect/Fmha/TileConfig.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::fmha;

namespace {

constexpr int64_t kThreadsPerWarp = 32;
constexpr int64_t kWarpgroupThreads = 128;
/// Rows of one WGMMA (m64nNk16), the rows one consumer warpgroup owns.
constexpr int64_t kWgmmaM = 64, kWgmmaK = 16;
/// A TMA box and a swizzle atom row: 128 bytes, 64 16-bit elements.
constexpr int64_t kSwizzleBytes = 128, kBoxColumns = 64;
/// Bytes of one 8-row swizzle atom, the alignment of every tile.
constexpr int64_t kAtomBytes = 8 * kSwizzleBytes;
/// The mbarrier wait's suspend-time hint, in nanoseconds (as CUTLASS).
constexpr int32_t kWaitTicks = 0x989680;
/// Registers per thread after setmaxnreg, by consumer warpgroups
/// (FlashAttention-3: 128 * 24 + 256 * 240 and 128 * 32 + 384 * 160 of the
/// 65536 registers of an SM).
struct RegisterSplit {
  int32_t producer, consumer;
};
RegisterSplit getRegisterSplit(int64_t consumers) {
  return consumers <= 2 ? RegisterSplit{24, 240} : RegisterSplit{32, 160};
}

/// The running state of one consumer thread: O (a WGMMA accumulator struct,
/// kept whole so that ptxas keeps it in place across the loop), the max and
/// sum of its rows g and g + 8, and the count of key blocks consumed (i32;
/// it names the buffer and the barrier phase).
struct ConsumerState {
  Value out;
  std::array<Value, 2> rowMax, rowSum;
  Value consumed;

  SmallVector<Value> flatten() const {
    return {out, rowMax[0], rowMax[1], rowSum[0], rowSum[1], consumed};
  }
  static ConsumerState unflatten(ValueRange values) {
    return {values[0], {values[1], values[2]}, {values[3], values[4]},
            values[5]};
  }
};

class Sm90AttentionKernelBuilder : KernelBuilderBase {
public:
  Sm90AttentionKernelBuilder(AttentionOp op, TileAttr tile,
                             gpu::GPUFuncOp func, ImplicitLocOpBuilder &b)
      : KernelBuilderBase(b), op(op), func(func),
        window(AttentionWindow::get(op)) {
    blockM = tile.getBlockM();
    blockN = tile.getBlockN();
    stages = tile.getStages();
    consumers = tile.getWarps() / 4 - 1;
    headDim = op.getHeadDim();
    elementType = cast<MemRefType>(op.getQ().getType()).getElementType();
    columnBlocks = headDim / kBoxColumns;
    scale = op.getScaleOrDefault();
    scaleLog2 = scale * static_cast<float>(M_LOG2E);
    queryBytes = blockM * headDim * 2;
    keyBytes = blockN * headDim * 2;
    outputPasses = getAttentionOutputPasses(tile.getAttentionTiling(), headDim);
    assert(outputPasses > 0 && "the op verifier checks that O can be staged");
  }

  void build() {
    threadId = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
    setUpSharedMemory();
    initBarriers();
    Value warpgroup =
        arith::DivUIOp::create(b, threadId, index(kWarpgroupThreads));
    Value isProducer = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                             warpgroup, index(0));
    RegisterSplit split = getRegisterSplit(consumers);
    scf::IfOp::create(
        b, isProducer,
        [&](OpBuilder &, Location) {
          setMaxRegisters(split.producer, NVVM::SetMaxRegisterAction::decrease);
          Value issuer = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                               threadId, index(0));
          scf::IfOp::create(b, issuer, [&](OpBuilder &, Location) {
            forEachTile([&](Value iteration, Value loaded) {
              return buildProducer(iteration, loaded);
            });
            scf::YieldOp::create(b);
          });
          scf::YieldOp::create(b);
        },
        [&](OpBuilder &, Location) {
          setMaxRegisters(split.consumer, NVVM::SetMaxRegisterAction::increase);
          startTurns();
          forEachTile([&](Value iteration, Value consumed) {
            return buildConsumer(iteration, consumed);
          });
          scf::YieldOp::create(b);
        });
    gpu::ReturnOp::create(b);
  }

private:
  enum Argument { kQMap, kKMap, kVMap, kQ, kK, kV, kO, kLse };
  Value argument(Argument which) { return func.getArgument(which); }

  //===--------------------------------------------------------------------===//
  // Shared memory and barriers
  //===--------------------------------------------------------------------===//

  void setUpSharedMemory() {
    auto workgroup = gpu::AddressSpaceAttr::get(
        b.getContext(), gpu::GPUDialect::getWorkgroupAddressSpace());
    Value bytes = gpu::DynamicSharedMemoryOp::create(
        b, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), nullptr,
                           workgroup));
    // Shared addresses are 32-bit (nvptx-short-ptr): i32 arithmetic keeps
    // them in one register each.
    Value address =
        word(memref::ExtractAlignedPointerAsIndexOp::create(b, bytes));
    // Round up to the swizzle atom (getAttentionSharedBytes leaves room).
    sharedBase = arith::AndIOp::create(
        b, arith::AddIOp::create(b, address, i32(kAtomBytes - 1)),
        i32(~(kAtomBytes - 1)));
  }

  /// Offsets of the first K and the first V buffer; buffer s is s * keyBytes
  /// further (tileAddress).
  int64_t keyBuffersOffset() const { return queryBytes; }
  int64_t valueBuffersOffset() const {
    return queryBytes + stages * keyBytes;
  }
  int64_t barrierOffset() const {
    return queryBytes + 2 * stages * keyBytes;
  }
  /// Barriers: Q full, Q empty, then K full, V full, K empty, V empty, one
  /// per buffer each.
  enum Barrier { kQueryFull, kQueryEmpty, kKeyFull, kValueFull, kKeyEmpty,
                 kValueEmpty };
  Value barrierAddress(Barrier which, Value stage = Value()) {
    int64_t slot = which <= kQueryEmpty ? int64_t(which)
                                        : 2 + (which - 2) * stages;
    Value offset = i32(barrierOffset() + 8 * slot);
    if (stage)
      offset = arith::AddIOp::create(
          b, offset, arith::MulIOp::create(b, stage, i32(8)));
    return sharedPointer(arith::AddIOp::create(b, sharedBase, offset));
  }
  /// The shared address \p address (i32) as a pointer.
  Value sharedPointer(Value address) {
    return LLVM::IntToPtrOp::create(
        b, LLVM::LLVMPointerType::get(b.getContext(), 3), address);
  }

  void initBarriers() {
    Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                        threadId, index(0));
    scf::IfOp::create(b, first, [&](OpBuilder &, Location) {
      // Full barriers complete on the producer's arrive plus the TMA bytes;
      // empty ones when every consumer warp has arrived.
      Value one = i32(1);
      Value consumerWarps = i32(consumers * 4);
      NVVM::MBarrierInitOp::create(b, barrierAddress(kQueryFull), one,
                                   Value());
      NVVM::MBarrierInitOp::create(b, barrierAddress(kQueryEmpty),
                                   consumerWarps, Value());
      for (int64_t s = 0; s < stages; ++s) {
        Value stage = i32(s);
        NVVM::MBarrierInitOp::create(b, barrierAddress(kKeyFull, stage), one,
                                     Value());
        NVVM::MBarrierInitOp::create(b, barrierAddress(kValueFull, stage),
                                     one, Value());
        NVVM::MBarrierInitOp::create(b, barrierAddress(kKeyEmpty, stage),
                                     consumerWarps, Value());
        NVVM::MBarrierInitOp::create(b, barrierAddress(kValueEmpty, stage),
                                     consumerWarps, Value());
      }
      // Make the initialized barriers visible to the TMA unit.
      NVVM::FenceMbarrierInitOp::create(b);
      scf::YieldOp::create(b);
    });
    gpu::BarrierOp::create(b);
  }

  /// Waits for the phase of parity \p phase (i32) of the barrier at
  /// \p address to complete.
  void waitBarrier(Value address, Value phase) {
    NVVM::MBarrierTryWaitParityOp::create(b, address, phase, i32(kWaitTicks));
  }

  /// Lane 0 of each consumer warp arrives on \p address: called after the
  /// warp's WGMMAs reading the buffer have completed.
  void releaseBuffer(Value address) {
    Value lane = arith::RemUIOp::create(b, threadId, index(kThreadsPerWarp));
    Value leader =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, index(0));
    scf::IfOp::create(b, leader, [&](OpBuilder &, Location) {
      NVVM::MBarrierArriveOp::create(b, b.getI64Type(), address, Value(),
                                     NVVM::MemScopeKindAttr());
      scf::YieldOp::create(b);
    });
  }

  //===--------------------------------------------------------------------===//
  // Ping-pong: the consumers' turns at issuing GEMMs
  //===--------------------------------------------------------------------===//

  /// Named barrier 1 + c is consumer c's turn (barrier 0 is __syncthreads).
  /// Each completes with 2 warpgroups: the one waiting for its turn and the
  /// one that passed it on.
  static constexpr int32_t kFirstTurnBarrier = 1;
  static constexpr int32_t kTurnThreads = 2 * kWarpgroupThreads;

  /// Named barrier the consumers meet at after their last P V of a tile
  /// (storeOutput), after the turn barriers (at most 3 consumers).
  int32_t drainedBarrier() const {
    return kFirstTurnBarrier + static_cast<int32_t>(consumers);
  }

  bool takesTurns() const { return consumers > 1; }

  /// This thread's consumer warpgroup, 0 to consumers - 1, as i32.
  Value consumerIndexI32() {
    Value consumer = arith::SubIOp::create(
        b, arith::DivUIOp::create(b, threadId, index(kWarpgroupThreads)),
        index(1));
    return arith::IndexCastOp::create(b, b.getI32Type(), consumer);
  }

  /// Before the first batch: consumer 0 gives itself the first turn. Every
  /// consumer then waits for and passes on its turn the same number of
  /// times per batch (both run the same key blocks), so the one pass left
  /// over at the end of a batch is the first turn of the next.
  void startTurns() {
    if (!takesTurns())
      return;
    Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                        consumerIndexI32(), i32(0));
    scf::IfOp::create(b, first, [&](OpBuilder &, Location) {
      NVVM::BarrierArriveOp::create(b, i32(kFirstTurnBarrier),
                                    i32(kTurnThreads));
      scf::YieldOp::create(b);
    });
  }

  /// Waits until it is this consumer's turn to issue GEMMs.
  void waitForTurn() {
    if (!takesTurns())
      return;
    Value id = arith::AddIOp::create(b, consumerIndexI32(),
                                     i32(kFirstTurnBarrier));
    NVVM::BarrierOp::create(b, TypeRange{}, id, i32(kTurnThreads),
                            NVVM::BarrierReductionAttr(), Value());
  }

  /// Gives the turn to the next consumer, after this one issued its GEMMs.
  void passTurn() {
    if (!takesTurns())
      return;
    Value next = arith::RemUIOp::create(
        b, arith::AddIOp::create(b, consumerIndexI32(), i32(1)),
        i32(consumers));
    NVVM::BarrierArriveOp::create(
        b, arith::AddIOp::create(b, next, i32(kFirstTurnBarrier)),
        i32(kTurnThreads));
  }

  void setMaxRegisters(int32_t count, NVVM::SetMaxRegisterAction action) {
    NVVM::SetMaxRegisterOp::create(
        b, b.getI32IntegerAttr(count),
        NVVM::SetMaxRegisterActionAttr::get(b.getContext(), action));
  }

  /// Runs \p body for each tile (row block of a (batch, head)) this CTA
  /// computes, with the tile set (setTile), carrying a count of the key
  /// blocks passed so far (\p body returns the new count) and of the tiles
  /// (the parity of the Q barriers). CTA x takes the units of work x, x +
  /// gridDim.x, ... (pairsAttentionRowBlocks in TileConfig.h). The unit loop runs
  /// in 32 bits, as TMA coordinates do: there are at most as many units as
  /// rows of q, each of at least 128 bytes, and 2^31 of them would be a
  /// 256 GB q.
  void forEachTile(
      llvm::function_ref<Value(Value iteration, Value blocks)> body) {
    Value units = arith::MulIOp::create(
        b, arith::MulIOp::create(b, getUnitsPerHead(), word(dim(kQ, 1))),
        word(dim(kQ, 0)));
    Value first = word(gpu::BlockIdOp::create(b, gpu::Dimension::x));
    Value step = word(gpu::GridDimOp::create(b, gpu::Dimension::x));
    // This CTA's units, each one tile or (paired) two, in one flat loop:
    // fewer values live across it than in nested ones (the producer has 24
    // registers).
    Value count = arith::CeilDivUIOp::create(
        b,
        arith::SubIOp::create(b, arith::MaxUIOp::create(b, units, first),
                              first),
        step);
    int64_t tilesPerUnit = pairsRowBlocks() ? 2 : 1;
    count = arith::MulIOp::create(b, count, i32(tilesPerUnit));
    auto loop = scf::ForOp::create(b, i32(0), count, i32(1),
                                   ValueRange{i32(0), i32(0)});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value position = loop.getInductionVar();
    Value unit = arith::AddIOp::create(
        b, first,
        arith::MulIOp::create(
            b, arith::DivUIOp::create(b, position, i32(tilesPerUnit)), step));
    Value second = arith::CmpIOp::create(
        b, arith::CmpIPredicate::ne,
        arith::RemUIOp::create(b, position, i32(tilesPerUnit)), i32(0));
    ValueRange carried = loop.getRegionIterArgs();
    auto runTile = [&]() {
      setTile(unit, second);
      Value blocks = body(carried[0], carried[1]);
      return SmallVector<Value>{
          arith::AddIOp::create(b, carried[0], i32(1)), blocks};
    };
    if (!pairsRowBlocks()) {
      scf::YieldOp::create(b, runTile());
      return;
    }
    // The middle row block of an odd count has no partner: no second tile.
    Value slot = arith::RemUIOp::create(b, unit, getUnitsPerHead());
    Value alone = arith::AndIOp::create(
        b, second,
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                              getLongerRowBlock(slot), slot));
    auto tile = scf::IfOp::create(
        b, alone,
        [&](OpBuilder &, Location) { scf::YieldOp::create(b, carried); },
        [&](OpBuilder &, Location) { scf::YieldOp::create(b, runTile()); });
    scf::YieldOp::create(b, tile.getResults());
  }

  bool pairsRowBlocks() {
    return pairsAttentionRowBlocks(op.getCausal(), op.getWindow().has_value());
  }
  Value getRowBlocks() {
    return arith::CeilDivUIOp::create(b, word(freshDim(kQ, 2)), i32(blockM));
  }
  /// Units per (batch, head): pairs of row blocks, or single ones.
  Value getUnitsPerHead() {
    Value rowBlocks = getRowBlocks();
    return pairsRowBlocks() ? arith::CeilDivUIOp::create(b, rowBlocks, i32(2))
                            : rowBlocks;
  }
  /// Slot i of a (batch, head) is row block R - 1 - i (the longest first),
  /// then, paired, row block i.
  Value getLongerRowBlock(Value slot) {
    return arith::SubIOp::create(
        b, arith::SubIOp::create(b, getRowBlocks(), i32(1)), slot);
  }

  /// Sets batchIndex, head, kvHead, firstRow, seqQ, seqK and range to the
  /// tile of unit \p unit (i32), its second row block if \p second (i1).
  /// Consecutive units share a (batch, head), so its K and V in L2.
  void setTile(Value unit, Value second) {
    Value perHead = getUnitsPerHead();
    Value slot = arith::RemUIOp::create(b, unit, perHead);
    Value headAndBatch = arith::DivUIOp::create(b, unit, perHead);
    Value heads = word(freshDim(kQ, 1));
    head = toIndex(arith::RemUIOp::create(b, headAndBatch, heads));
    batchIndex = toIndex(arith::DivUIOp::create(b, headAndBatch, heads));
    kvHead = getKvHead(b, argument(kQ), argument(kK), head);
    Value rowBlock = arith::SelectOp::create(b, second, slot,
                                             getLongerRowBlock(slot));
    firstRow = toIndex(arith::MulIOp::create(b, rowBlock, i32(blockM)));
    seqQ = freshDim(kQ, 2);
    seqK = freshDim(kK, 2);
    range = KeyBlockRange::compute(b, seqQ, seqK, firstRow, blockM, blockN,
                                   window);
  }

  /// The buffer and the barrier parity of the \p count-th key block (all
  /// i32).
  std::pair<Value, Value> getStageAndPhase(Value count) {
    Value stage = arith::RemUIOp::create(b, count, i32(stages));
    Value phase = arith::RemUIOp::create(
        b, arith::DivUIOp::create(b, count, i32(stages)), i32(2));
    return {stage, phase};
  }

  //===--------------------------------------------------------------------===//
  // The producer
  //===--------------------------------------------------------------------===//

  /// Loads rows [row, row + rows) of (batchIndex, head \p headWord) through
  /// \p map into the tile at shared address \p tile, completing on
  /// \p barrier (coordinates i32, as TMA takes them).
  void loadTile(Argument map, Value tile, Value barrier, Value row,
                Value headWord, int64_t rows) {
    Value descriptor = argument(map);
    Value batchWord = word(batchIndex);
    for (int64_t c = 0; c < columnBlocks; ++c) {
      Value destination = sharedPointer(
          arith::AddIOp::create(b, tile, i32(c * rows * kSwizzleBytes)));
      NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
          b, destination, descriptor,
          ValueRange{i32(c * kBoxColumns), row, headWord, batchWord}, barrier,
          ValueRange{}, Value(), Value(), NVVM::TMALoadMode::TILE,
          /*isCTAOnly=*/true, NVVM::CTAGroupKindAttr(), Value());
    }
  }

  Value buildProducer(Value iteration, Value loaded) {
    // Q, once the consumers are done with the previous tile's.
    Value parity = arith::RemUIOp::create(b, iteration, i32(2));
    waitBarrier(barrierAddress(kQueryEmpty),
                arith::XOrIOp::create(b, parity, i32(1)));
    Value full = barrierAddress(kQueryFull);
    expectBytes(full, queryBytes);
    loadTile(kQMap, sharedBase, full, word(firstRow), word(head), blockM);

    // K and V of every key block, last to first, as the consumers visit
    // them (in 32 bits, as TMA coordinates).
    Value lastBlockEnd = word(range.lastBlockEnd);
    Value count = arith::SubIOp::create(b, lastBlockEnd,
                                        word(range.firstBlock));
    Value kvHeadWord = word(kvHead);
    auto loop = scf::ForOp::create(b, i32(0), count, i32(1),
                                   ValueRange{loaded});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value block = arith::SubIOp::create(
        b, arith::SubIOp::create(b, lastBlockEnd, i32(1)),
        loop.getInductionVar());
    Value blockRow = arith::MulIOp::create(b, block, i32(blockN));
    Value current = loop.getRegionIterArgs()[0];
    auto [stage, phase] = getStageAndPhase(current);
    // The first pass over each buffer finds it empty: a fresh barrier
    // reports the phase before its first as complete.
    Value emptyPhase = arith::XOrIOp::create(b, phase, i32(1));
    for (auto [map, fullBarrier, emptyBarrier, tileOffset] :
         {std::tuple{kKMap, kKeyFull, kKeyEmpty, keyBuffersOffset()},
          std::tuple{kVMap, kValueFull, kValueEmpty, valueBuffersOffset()}}) {
      waitBarrier(barrierAddress(emptyBarrier, stage), emptyPhase);
      Value barrier = barrierAddress(fullBarrier, stage);
      expectBytes(barrier, keyBytes);
      loadTile(map, tileAddress(stage, tileOffset), barrier, blockRow,
               kvHeadWord, blockN);
    }
    scf::YieldOp::create(
        b, ValueRange{arith::AddIOp::create(b, current, i32(1))});
    return loop.getResult(0);
  }

  void expectBytes(Value barrier, int64_t bytes) {
    NVVM::MBarrierArriveExpectTxOp::create(b, Type(), barrier, i32(bytes),
                                           NVVM::MemScopeKindAttr(),
                                           BoolAttr(), Value());
  }

  //===--------------------------------------------------------------------===//
  // The consumers
  //===--------------------------------------------------------------------===//

  /// Per-thread coordinates of the m64nN accumulator fragment (PTX ISA,
  /// "Register fragments for wgmma"): warp w of the warpgroup holds rows
  /// 16w + g and 16w + g + 8, lane 4g + t columns 8i + 2t and 8i + 2t + 1 of
  /// each n8 chunk i, as elements 4i .. 4i + 3 (row g: 4i, 4i + 1).
  void deriveLaneValues() {
    Value tid = hideFromHoisting(b, threadId);
    Value consumer = arith::SubIOp::create(
        b, arith::DivUIOp::create(b, tid, index(kWarpgroupThreads)),
        index(1));
    Value warp = arith::RemUIOp::create(
        b, arith::DivUIOp::create(b, tid, index(kThreadsPerWarp)), index(4));
    Value lane = arith::RemUIOp::create(b, tid, index(kThreadsPerWarp));
    consumerRow = arith::MulIOp::create(b, consumer, index(kWgmmaM));
    laneRow = arith::AddIOp::create(
        b, arith::AddIOp::create(b, consumerRow,
                                 arith::MulIOp::create(b, warp, index(16))),
        arith::DivUIOp::create(b, lane, index(4)));
    quadCol = arith::RemUIOp::create(b, lane, index(4));
  }

  /// The consumer's part of one (batch, row block). The GEMMs of
  /// consecutive key blocks overlap in FlashAttention-3's order (KERNELS.md
  /// section 2, "fwd_step"): block j issues S_j = Q K_j^T and then
  /// O += P_{j-1} V_{j-1}, waits for S_j only, and runs the softmax of S_j
  /// while the tensor cores still work on P_{j-1} V_{j-1}. The first block
  /// (the last-indexed, always masked here) only computes its S and P; a
  /// drain step adds the last P V.
  Value buildConsumer(Value iteration, Value consumed) {
    deriveLaneValues();
    waitBarrier(barrierAddress(kQueryFull),
                arith::RemUIOp::create(b, iteration, i32(2)));

    ConsumerState state;
    state.out = LLVM::ZeroOp::create(b, getAccumulatorType(headDim));
    Value minusInf = f32(-std::numeric_limits<float>::infinity());
    state.rowMax = {minusInf, minusInf};
    state.rowSum = {f32(0.0f), f32(0.0f)};
    state.consumed = consumed;

    Value anyBlock = arith::CmpIOp::create(b, arith::CmpIPredicate::sgt,
                                           range.lastBlockEnd,
                                           range.firstBlock);
    auto blocks = scf::IfOp::create(
        b, anyBlock,
        [&](OpBuilder &, Location) {
          // The blocks after the first, in the three ranges, clamped.
          Value rest =
              arith::SubIOp::create(b, range.lastBlockEnd, index(1));
          auto below = [&](Value bound) {
            return arith::MinSIOp::create(b, bound, rest);
          };
          ConsumerState current = state;
          SmallVector<Value> pending =
              buildFirstBlock(rest, current);
          std::tie(current, pending) = buildKeyBlocks(
              rest, below(range.unmaskedEnd), /*masked=*/true, current,
              pending);
          std::tie(current, pending) = buildKeyBlocks(
              below(range.unmaskedEnd), below(range.unmaskedBegin),
              /*masked=*/false, current, pending);
          if (window.left)
            std::tie(current, pending) = buildKeyBlocks(
                below(range.unmaskedBegin), range.firstBlock,
                /*masked=*/true, current, pending);
          // Every S = Q K^T has completed: the producer may load the next
          // tile's Q under the last P V and the epilogue.
          releaseBuffer(barrierAddress(kQueryEmpty));
          Value lastStage = drainValues(current, pending);
          SmallVector<Value> results = current.flatten();
          results.push_back(lastStage);
          scf::YieldOp::create(b, results);
        },
        [&](OpBuilder &, Location) {
          releaseBuffer(barrierAddress(kQueryEmpty));
          SmallVector<Value> results = state.flatten();
          results.push_back(i32(0));
          scf::YieldOp::create(b, results);
        });
    state = ConsumerState::unflatten(blocks.getResults());
    Value lastStage = blocks.getResults().back();
    // The epilogue in its own branch, not in the key blocks' one: with both
    // in one region ptxas kept the tile's buffer and phase arithmetic in
    // vector registers and added 16-24 R2UR per key block to move the WGMMA
    // descriptors to uniform ones.
    scf::IfOp::create(
        b, anyBlock,
        [&](OpBuilder &, Location) {
          storeOutput(state, lastStage);
          scf::YieldOp::create(b);
        },
        [&](OpBuilder &, Location) {
          storeEmptyRows();
          scf::YieldOp::create(b);
        });
    return state.consumed;
  }

  /// S and P of the first key block \p block (masked: it may be partial or
  /// on the diagonal); returns P.
  SmallVector<Value> buildFirstBlock(Value block, ConsumerState &state) {
    deriveLaneValues();
    auto [stage, phase] = getStageAndPhase(state.consumed);
    waitBarrier(barrierAddress(kKeyFull, stage), phase);
    waitForTurn();
    NVVM::WgmmaFenceAlignedOp::create(b);
    Value scores = issueScores(stage);
    NVVM::WgmmaGroupSyncAlignedOp::create(b);
    passTurn();
    NVVM::WgmmaWaitGroupSyncOp::create(b, b.getI64IntegerAttr(0));
    releaseBuffer(barrierAddress(kKeyEmpty, stage));
    SmallVector<Value> values = unpack(scores, blockN / 2);
    applyMask(values, arith::MulIOp::create(b, block, index(blockN)));
    // O is still zero: its rescale can be skipped.
    SmallVector<Value> probabilities = updateSoftmax(values, state).first;
    state.consumed = arith::AddIOp::create(b, state.consumed, i32(1));
    return probabilities;
  }

  /// Runs key blocks end - 1 down to begin, carrying the state and the P of
  /// the block before.
  std::pair<ConsumerState, SmallVector<Value>>
  buildKeyBlocks(Value end, Value begin, bool masked,
                 const ConsumerState &state, ArrayRef<Value> pending) {
    SmallVector<Value> carried = state.flatten();
    size_t stateSize = carried.size();
    llvm::append_range(carried, pending);
    Value count = arith::SubIOp::create(b, end, begin);
    auto loop = scf::ForOp::create(b, index(0), count, index(1), carried);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value block = arith::SubIOp::create(
        b, arith::SubIOp::create(b, end, index(1)), loop.getInductionVar());
    ValueRange arguments = loop.getRegionIterArgs();
    ConsumerState current =
        ConsumerState::unflatten(arguments.take_front(stateSize));
    SmallVector<Value> probabilities = buildKeyBlock(
        block, masked, current, arguments.drop_front(stateSize));
    SmallVector<Value> yielded = current.flatten();
    llvm::append_range(yielded, probabilities);
    scf::YieldOp::create(b, yielded);
    b.setInsertionPointAfter(loop);
    ValueRange results = loop.getResults();
    return {ConsumerState::unflatten(results.take_front(stateSize)),
            SmallVector<Value>(results.drop_front(stateSize))};
  }

  /// One pipelined step: issue S_j and O += P_{j-1} V_{j-1}, softmax of
  /// S_j under the P V, then rescale O. Returns P_j.
  SmallVector<Value> buildKeyBlock(Value block, bool masked,
                                   ConsumerState &state,
                                   ValueRange pending) {
    deriveLaneValues();
    auto [stage, phase] = getStageAndPhase(state.consumed);
    auto [previousStage, previousPhase] = getStageAndPhase(
        arith::SubIOp::create(b, state.consumed, i32(1)));
    waitBarrier(barrierAddress(kKeyFull, stage), phase);
    waitBarrier(barrierAddress(kValueFull, previousStage), previousPhase);
    // Issue S_j before P_{j-1} V_{j-1}: wait_group counts in issue order.
    waitForTurn();
    NVVM::WgmmaFenceAlignedOp::create(b);
    Value scores = issueScores(stage);
    NVVM::WgmmaGroupSyncAlignedOp::create(b);
    Value out = issueValues(SmallVector<Value>(pending), previousStage,
                            state.out);
    NVVM::WgmmaGroupSyncAlignedOp::create(b);
    passTurn();
    // S_j is ready; P V may still run.
    NVVM::WgmmaWaitGroupSyncOp::create(b, b.getI64IntegerAttr(1));
    releaseBuffer(barrierAddress(kKeyEmpty, stage));
    SmallVector<Value> values = unpack(scores, blockN / 2);
    if (masked)
      applyMask(values, arith::MulIOp::create(b, block, index(blockN)));
    auto [probabilities, alpha] = updateSoftmax(values, state);
    NVVM::WgmmaWaitGroupSyncOp::create(b, b.getI64IntegerAttr(0));
    releaseBuffer(barrierAddress(kValueEmpty, previousStage));
    state.out = scaleRows(out, alpha);
    state.consumed = arith::AddIOp::create(b, state.consumed, i32(1));
    return probabilities;
  }

  /// O += P V of the last block. Returns the block's V buffer, which the
  /// epilogue stages O in and then releases.
  Value drainValues(ConsumerState &state, ArrayRef<Value> pending) {
    deriveLaneValues();
    auto [stage, phase] =
        getStageAndPhase(arith::SubIOp::create(b, state.consumed, i32(1)));
    waitBarrier(barrierAddress(kValueFull, stage), phase);
    NVVM::WgmmaFenceAlignedOp::create(b);
    state.out = issueValues(pending, stage, state.out);
    NVVM::WgmmaGroupSyncAlignedOp::create(b);
    NVVM::WgmmaWaitGroupSyncOp::create(b, b.getI64IntegerAttr(0));
    return stage;
  }

  //===--------------------------------------------------------------------===//
  // WGMMA
  //===--------------------------------------------------------------------===//

  /// The m64nNk16 f32 accumulator of one thread: N / 2 floats.
  Type getAccumulatorType(int64_t n) {
    SmallVector<Type> fields(n / 2, b.getF32Type());
    return LLVM::LLVMStructType::getLiteral(b.getContext(), fields);
  }

  SmallVector<Value> unpack(Value accumulator, int64_t count) {
    SmallVector<Value> values;
    for (int64_t i = 0; i < count; ++i)
      values.push_back(LLVM::ExtractValueOp::create(b, accumulator, i));
    return values;
  }

  /// The shared memory matrix descriptor (PTX ISA, "Matrix Descriptor
  /// Format") of a 128-byte swizzled operand at shared address \p address
  /// (i32): start address, leading and stride byte offsets (all >> 4),
  /// swizzle mode 1 (128B) in bits 62-63.
  Value getDescriptor(Value address, int64_t leadingBytes,
                      int64_t strideBytes) {
    Type i64 = b.getI64Type();
    Value start = arith::AndIOp::create(
        b,
        arith::ShRUIOp::create(b, arith::ExtUIOp::create(b, i64, address),
                               i64Constant(4)),
        i64Constant(0x3FFF));
    uint64_t fixed = (uint64_t(leadingBytes >> 4) << 16) |
                     (uint64_t(strideBytes >> 4) << 32) | (uint64_t(1) << 62);
    return arith::OrIOp::create(b, start,
                                i64Constant(static_cast<int64_t>(fixed)));
  }
  /// \p descriptor advanced by \p bytes (a multiple of 16 that keeps the
  /// address field from carrying).
  Value advance(Value descriptor, int64_t bytes) {
    if (bytes == 0)
      return descriptor;
    return arith::AddIOp::create(b, descriptor, i64Constant(bytes >> 4));
  }

  NVVM::WGMMATypes getWgmmaType() {
    return elementType.isF16() ? NVVM::WGMMATypes::f16
                               : NVVM::WGMMATypes::bf16;
  }

  /// Issues S = Q K^T for this warpgroup's 64 rows from K buffer \p stage:
  /// both operands K-major in shared memory; k step j reads bytes 32 j of
  /// each 128-byte row, in column block j / 4. The caller fences, commits
  /// and waits.
  Value issueScores(Value stage) {
    Value queries = getDescriptor(
        arith::AddIOp::create(
            b, sharedBase,
            arith::MulIOp::create(b, word(consumerRow), i32(kSwizzleBytes))),
        /*leadingBytes=*/16, /*strideBytes=*/kAtomBytes);
    Value keys = getDescriptor(tileAddress(stage, keyBuffersOffset()),
                               /*leadingBytes=*/16, /*strideBytes=*/kAtomBytes);
    Type accType = getAccumulatorType(blockN);
    Value scores = LLVM::PoisonOp::create(b, accType);
    for (int64_t k = 0; k < headDim / kWgmmaK; ++k) {
      int64_t inRow = (k % 4) * 32;
      scores = NVVM::WgmmaMmaAsyncOp::create(
          b, accType, scores,
          advance(queries, (k / 4) * blockM * kSwizzleBytes + inRow),
          advance(keys, (k / 4) * blockN * kSwizzleBytes + inRow),
          NVVM::MMAShapeAttr::get(b.getContext(), kWgmmaM, blockN, kWgmmaK),
          getWgmmaType(), getWgmmaType(), NVVM::WGMMATypes::f32,
          k == 0 ? NVVM::WGMMAScaleOut::zero : NVVM::WGMMAScaleOut::one,
          NVVM::WGMMAScaleIn::one, NVVM::WGMMAScaleIn::one,
          NVVM::MMALayout::row, NVVM::MMALayout::col,
          NVVM::MMAIntOverflowAttr());
    }
    return scores;
  }

  /// Issues O += P V from V buffer \p stage: A = P from registers, B = V
  /// MN-major in shared memory (k step j is rows 16 j .. 16 j + 15; column
  /// blocks LBO apart). The caller fences, commits and waits.
  Value issueValues(ArrayRef<Value> probabilities, Value stage, Value out) {
    Value values = getDescriptor(tileAddress(stage, valueBuffersOffset()),
                                 /*leadingBytes=*/blockN * kSwizzleBytes,
                                 /*strideBytes=*/kAtomBytes);
    for (int64_t k = 0; k < blockN / kWgmmaK; ++k)
      out = emitRegisterWgmma(probabilities.slice(4 * k, 4),
                              advance(values, k * kWgmmaK * kSwizzleBytes),
                              out);
    return out;
  }

  /// The shared address of buffer \p stage of the tiles at \p firstOffset.
  Value tileAddress(Value stage, int64_t firstOffset) {
    return arith::AddIOp::create(
        b, sharedBase,
        arith::AddIOp::create(
            b, arith::MulIOp::create(b, stage, i32(keyBytes)),
            i32(firstOffset)));
  }

  /// out += A B, m64n{D}k16, A from four registers of packed pairs, B
  /// transposed (MN-major). Inline PTX because neither nvgpu.warpgroup.mma
  /// nor nvvm.wgmma.mma_async has the register-A form (KERNELS.md §3, §5
  /// rule 7): llvm.inline_asm with D / 2 "=f" outputs tied to the
  /// accumulator inputs, so that ptxas sees them stay in place and keeps the
  /// WGMMAs pipelined.
  Value emitRegisterWgmma(ArrayRef<Value> a, Value descriptor, Value out) {
    int64_t n = headDim / 2;
    std::string registers;
    llvm::raw_string_ostream asmText(registers);
    const char *type = elementType.isF16() ? "f16" : "bf16";
    asmText << "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
            << "wgmma.mma_async.sync.aligned.m64n" << headDim << "k16.f32."
            << type << "." << type << " {";
    for (int64_t i = 0; i < n; ++i)
      asmText << (i ? ", " : "") << "$" << i;
    asmText << "}, {$" << n << ", $" << n + 1 << ", $" << n + 2 << ", $"
            << n + 3 << "}, $" << n + 4 << ", p, 1, 1, 1;\n}";
    std::string constraints;
    for (int64_t i = 0; i < n; ++i)
      constraints += "=f,";
    constraints += "r,r,r,r,l";
    for (int64_t i = 0; i < n; ++i)
      constraints += "," + std::to_string(i);
    SmallVector<Value> operands(a);
    operands.push_back(descriptor);
    llvm::append_range(operands, unpack(out, n));
    return LLVM::InlineAsmOp::create(
               b, getAccumulatorType(headDim), operands, registers,
               constraints, /*has_side_effects=*/true,
               /*is_align_stack=*/false, LLVM::TailCallKind::None,
               LLVM::AsmDialectAttr(), ArrayAttr())
        .getResult(0);
  }

  //===--------------------------------------------------------------------===//
  // Masking and the online softmax
  //===--------------------------------------------------------------------===//

  Value getLaneRow(int64_t half) {
    return arith::AddIOp::create(
        b, firstRow, arith::AddIOp::create(b, laneRow, index(half * 8)));
  }

  void applyMask(SmallVectorImpl<Value> &scores, Value keyBase) {
    Value laneKey = arith::AddIOp::create(
        b, keyBase, arith::MulIOp::create(b, quadCol, index(2)));
    Value minusInf = f32(-std::numeric_limits<float>::infinity());
    for (int64_t half = 0; half < 2; ++half) {
      RowMask mask = RowMask::compute(b, getLaneRow(half), laneKey, seqK,
                                      range.diagonal, blockN, window);
      for (int64_t chunk = 0; chunk < blockN / 8; ++chunk)
        for (int64_t e = 0; e < 2; ++e) {
          Value &score = scores[4 * chunk + 2 * half + e];
          score = arith::SelectOp::create(b, mask.hides(b, 8 * chunk + e),
                                          minusInf, score);
        }
    }
  }

  /// Folds the scores into the running max and sum and returns
  /// P = exp2(S * scale * log2 e - max) as packed pairs: for k step j, the
  /// four registers of its A fragment (rows g and g + 8 of keys 16 j + 2t,
  /// then of keys 16 j + 8 + 2t), i.e. elements 8 j .. 8 j + 7 as they are.
  /// Also returns the factors (rows g and g + 8) that O, accumulated under
  /// the old max, must be rescaled by.
  std::pair<SmallVector<Value>, std::array<Value, 2>>
  updateSoftmax(ArrayRef<Value> scores, ConsumerState &state) {
    SmallVector<Value> probabilities(scores.size());
    std::array<Value, 2> alpha;
    for (int64_t half = 0; half < 2; ++half) {
      // This lane's scores of row g (half 0) or g + 8: elements 4 i + 2 half
      // and 4 i + 2 half + 1 of each n8 chunk i.
      SmallVector<Value> row;
      for (int64_t chunk = 0; chunk < blockN / 8; ++chunk)
        for (int64_t e = 0; e < 2; ++e)
          row.push_back(scores[4 * chunk + 2 * half + e]);
      RowSoftmax update = RowSoftmax::update(b, row, state.rowMax[half],
                                             state.rowSum[half], scaleLog2);
      for (int64_t chunk = 0; chunk < blockN / 8; ++chunk)
        for (int64_t e = 0; e < 2; ++e)
          probabilities[4 * chunk + 2 * half + e] =
              update.probabilities[2 * chunk + e];
      state.rowMax[half] = update.max;
      state.rowSum[half] = update.sum;
      alpha[half] = update.alpha;
    }

    SmallVector<Value> packed;
    for (int64_t i = 0; i < static_cast<int64_t>(probabilities.size()); i += 2)
      packed.push_back(packPair(probabilities[i], probabilities[i + 1]));
    return {packed, alpha};
  }

  /// \p low and \p high (f32) rounded to the element type, packed in an i32
  /// (\p low in the low half): one register of an MMA or stmatrix fragment.
  Value packPair(Value low, Value high) {
    Value pair = vector::FromElementsOp::create(
        b, VectorType::get({2}, b.getF32Type()), ValueRange{low, high});
    Value rounded =
        arith::TruncFOp::create(b, VectorType::get({2}, elementType), pair);
    Value word = vector::BitCastOp::create(
        b, VectorType::get({1}, b.getI32Type()), rounded);
    return vector::ExtractOp::create(b, word, 0);
  }

  /// \p out with rows g and g + 8 multiplied by \p factors[0] and [1].
  Value scaleRows(Value out, std::array<Value, 2> factors) {
    SmallVector<Value> values = unpack(out, headDim / 2);
    for (int64_t i = 0; i < static_cast<int64_t>(values.size()); ++i)
      out = LLVM::InsertValueOp::create(
          b, out, arith::MulFOp::create(b, values[i], factors[(i / 2) % 2]),
          i);
    return out;
  }

  //===--------------------------------------------------------------------===//
  // Epilogue
  //===--------------------------------------------------------------------===//

  /// Normalizes O and writes it and the LSE. The accumulator fragment gives
  /// a lane two adjacent columns, so O goes through shared memory to leave
  /// in 16-byte stores: each consumer warp writes its 16 rows to its own
  /// slab of \p stage's V buffer (the last key block's, which no WGMMA reads
  /// any more) with stmatrix, reads them back by 16-byte chunks and stores
  /// those of rows below Sq, in getAttentionOutputPasses column slabs, then
  /// releases the buffer.
  void storeOutput(const ConsumerState &state, Value stage) {
    deriveLaneValues();
    RowTotals totals = getRowTotals(state);
    // Word (chunk, half): this lane's two columns of n8 chunk `chunk` in
    // row g (half 0) or g + 8, normalized and rounded.
    SmallVector<Value> values = unpack(state.out, headDim / 2);
    SmallVector<std::array<Value, 2>> words(headDim / 8);
    for (int64_t chunk = 0; chunk < headDim / 8; ++chunk)
      for (int64_t half = 0; half < 2; ++half) {
        int64_t i = 4 * chunk + 2 * half;
        words[chunk][half] = packPair(
            arith::MulFOp::create(b, values[i], totals.inverse[half]),
            arith::MulFOp::create(b, values[i + 1], totals.inverse[half]));
      }

    // Every consumer's last P V reads all of the buffer: wait for them all
    // before overwriting it.
    if (consumers > 1)
      NVVM::BarrierOp::create(b, TypeRange{}, i32(drainedBarrier()),
                              i32(consumers * kWarpgroupThreads),
                              NVVM::BarrierReductionAttr(), Value());
    WarpLanes lanes = getWarpLanes();
    int64_t columns = headDim / outputPasses;
    int64_t slabBytes = kWarpRows * columns * 2;
    Value slab = arith::AddIOp::create(
        b, tileAddress(stage, valueBuffersOffset()),
        arith::MulIOp::create(b, lanes.consumerWarp, i32(slabBytes)));
    // stmatrix .x4: lanes 8m .. 8m + 7 address the rows of matrix m, which
    // is chunk 2k + m / 2 (of the pass's) in rows 8 (m % 2) .. + 7.
    Value matrix = arith::DivUIOp::create(b, lanes.lane, i32(8));
    Value stagedRow = arith::AddIOp::create(
        b,
        arith::MulIOp::create(b, arith::RemUIOp::create(b, matrix, i32(2)),
                              i32(8)),
        arith::RemUIOp::create(b, lanes.lane, i32(8)));
    Value matrixChunk = arith::DivUIOp::create(b, matrix, i32(2));
    for (int64_t pass = 0; pass < outputPasses; ++pass) {
      int64_t firstChunk = pass * columns / 8;
      // The previous pass's reads are done before its slab is overwritten.
      if (pass > 0)
        syncWarp();
      for (int64_t k = 0; 2 * k < columns / 8; ++k) {
        Value chunk = arith::AddIOp::create(b, matrixChunk, i32(2 * k));
        std::array<Value, 2> pair0 = words[firstChunk + 2 * k];
        std::array<Value, 2> pair1 = words[firstChunk + 2 * k + 1];
        NVVM::StMatrixOp::create(
            b,
            sharedPointer(stagedChunkAddress(slab, columns, stagedRow, chunk)),
            ValueRange{pair0[0], pair0[1], pair1[0], pair1[1]},
            NVVM::MMALayout::row,
            NVVM::LdStMatrixShapeAttr::get(b.getContext(), 8, 8),
            NVVM::LdStMatrixEltType::B16);
      }
      syncWarp();
      storeWarpRows(
          lanes, pass * columns, columns, [&](Value row, Value chunk) {
            Value address = stagedChunkAddress(slab, columns, row, chunk);
            return LLVM::LoadOp::create(b, VectorType::get({4}, b.getI32Type()),
                                        sharedPointer(address),
                                        /*alignment=*/16);
          });
    }
    // The producer's next TMA load into the buffer (async proxy) comes after
    // these generic-proxy accesses, and after every lane's.
    NVVM::FenceProxyOp::create(
        b,
        NVVM::ProxyKindAttr::get(b.getContext(), NVVM::ProxyKind::async_shared),
        NVVM::SharedSpaceAttr::get(b.getContext(),
                                   NVVM::SharedSpace::shared_cta));
    syncWarp();
    releaseBuffer(barrierAddress(kValueEmpty, stage));
    storeLse(totals);
  }

  /// The epilogue of a tile that saw no key block: O = 0 and LSE = +inf.
  void storeEmptyRows() {
    deriveLaneValues();
    Value zeros = arith::ConstantOp::create(
        b, b.getZeroAttr(VectorType::get({4}, b.getI32Type())));
    storeWarpRows(getWarpLanes(), 0, headDim,
                  [&](Value, Value) { return zeros; });
    Value inf = f32(std::numeric_limits<float>::infinity());
    storeLse(RowTotals{{Value(), Value()}, {inf, inf}});
  }

  /// Rows of O each consumer warp owns (a quarter of its warpgroup's 64).
  static constexpr int64_t kWarpRows = kWgmmaM / 4;

  struct WarpLanes {
    /// This warp among the consumer warps, and this lane of it (i32).
    Value consumerWarp, lane;
  };
  WarpLanes getWarpLanes() {
    Value tid = word(hideFromHoisting(b, threadId));
    Value warp = arith::DivUIOp::create(b, tid, i32(kThreadsPerWarp));
    return {arith::SubIOp::create(b, warp,
                                  i32(kWarpgroupThreads / kThreadsPerWarp)),
            arith::RemUIOp::create(b, tid, i32(kThreadsPerWarp))};
  }

  /// Stores columns [first, first + columns) of this warp's 16 rows of O,
  /// one 16-byte chunk per lane at a time, rows below Sq only;
  /// \p chunkAt gives chunk `chunk` (vector<4xi32>) of the warp's row `row`
  /// (both i32, relative to the slab).
  void
  storeWarpRows(const WarpLanes &lanes, int64_t first, int64_t columns,
                llvm::function_ref<Value(Value row, Value chunk)> chunkAt) {
    int64_t rowChunks = columns / 8;
    Value out = argument(kO);
    Value warpFirstRow = arith::AddIOp::create(
        b, firstRow,
        toIndex(arith::MulIOp::create(b, lanes.consumerWarp, i32(kWarpRows))));
    auto chunkType = VectorType::get({8}, elementType);
    for (int64_t step = 0; step < kWarpRows * rowChunks;
         step += kThreadsPerWarp) {
      Value unit = arith::AddIOp::create(b, lanes.lane, i32(step));
      Value row = arith::DivUIOp::create(b, unit, i32(rowChunks));
      Value chunk = arith::RemUIOp::create(b, unit, i32(rowChunks));
      Value outRow = arith::AddIOp::create(b, warpFirstRow, toIndex(row));
      Value valid =
          arith::CmpIOp::create(b, arith::CmpIPredicate::slt, outRow, seqQ);
      Value data = vector::BitCastOp::create(b, chunkType, chunkAt(row, chunk));
      scf::IfOp::create(b, valid, [&](OpBuilder &, Location) {
        Value column = arith::AddIOp::create(
            b, index(first), toIndex(arith::MulIOp::create(b, chunk, i32(8))));
        vector::StoreOp::create(b, data, out,
                                ValueRange{batchIndex, head, outRow, column},
                                /*nontemporal=*/false, llvm::MaybeAlign(16));
        scf::YieldOp::create(b);
      });
    }
  }

  /// The shared address of 16-byte chunk \p chunk of row \p row (i32) of a
  /// warp's slab at \p slab, rows of \p columns elements. The chunk index
  /// is XORed with a function of the row so that the 8 rows of one 8x8
  /// matrix (stmatrix) and 8 consecutive chunks (the readback) fall on
  /// distinct 16-byte bank groups: with c chunks per row, rows r and
  /// r + 8 / c share 128 bytes, so the XOR takes (r / max(1, 8 / c)) % c.
  Value stagedChunkAddress(Value slab, int64_t columns, Value row,
                           Value chunk) {
    int64_t rowChunks = columns / 8;
    Value key = arith::RemUIOp::create(
        b,
        arith::DivUIOp::create(b, row,
                               i32(std::max<int64_t>(1, 8 / rowChunks))),
        i32(rowChunks));
    Value swizzled = arith::XOrIOp::create(b, chunk, key);
    return arith::AddIOp::create(
        b, slab,
        arith::AddIOp::create(b,
                              arith::MulIOp::create(b, row, i32(columns * 2)),
                              arith::MulIOp::create(b, swizzled, i32(16))));
  }

  void syncWarp() { NVVM::SyncWarpOp::create(b, i32(-1)); }

  /// Per row half (g, g + 8): the factor that normalizes O (0 for a row
  /// that saw no key) and the LSE (+inf there).
  struct RowTotals {
    std::array<Value, 2> inverse, lse;
  };
  RowTotals getRowTotals(const ConsumerState &state) {
    Value zero = f32(0.0f), one = f32(1.0f);
    Value inf = f32(std::numeric_limits<float>::infinity());
    RowTotals totals;
    for (int64_t half = 0; half < 2; ++half) {
      Value sum = reduceOverQuad(b, state.rowSum[half], /*max=*/false);
      // A row that saw no key has sum 0: O = 0 and LSE = +inf.
      Value empty =
          arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, sum, zero);
      totals.inverse[half] = arith::SelectOp::create(
          b, empty, zero, arith::DivFOp::create(b, one, sum));
      totals.lse[half] = arith::SelectOp::create(
          b, empty, inf,
          math::FmaOp::create(b, state.rowMax[half], f32(scale),
                              math::LogOp::create(b, sum)));
    }
    return totals;
  }

  /// The first lane of each quad writes the LSE of its rows below Sq.
  void storeLse(const RowTotals &totals) {
    if (!op.getLse())
      return;
    Value firstLane =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, quadCol, index(0));
    for (int64_t half = 0; half < 2; ++half) {
      Value row = getLaneRow(half);
      Value valid = arith::AndIOp::create(
          b, firstLane,
          arith::CmpIOp::create(b, arith::CmpIPredicate::slt, row, seqQ));
      scf::IfOp::create(b, valid, [&](OpBuilder &, Location) {
        memref::StoreOp::create(b, totals.lse[half], argument(kLse),
                                ValueRange{batchIndex, head, row});
        scf::YieldOp::create(b);
      });
    }
  }

  //===--------------------------------------------------------------------===//
  // Helpers
  //===--------------------------------------------------------------------===//

  Value dim(Argument tensor, int64_t axis) {
    return memref::DimOp::create(b, argument(tensor), axis);
  }
  /// A size of \p tensor computed anew where it is used: what derives from
  /// it per tile is not hoisted out of the tile loop, where it would hold
  /// registers (the producer has 24) across the whole kernel.
  Value freshDim(Argument tensor, int64_t axis) {
    return hideFromHoisting(b, dim(tensor, axis));
  }
  Value i64Constant(int64_t value) {
    return arith::ConstantIntOp::create(b, value, 64);
  }

  AttentionOp op;
  gpu::GPUFuncOp func;
  AttentionWindow window;

  int64_t blockM, blockN, stages, consumers, headDim, columnBlocks;
  int64_t queryBytes, keyBytes;
  /// Column slabs the epilogue stages O in (getAttentionOutputPasses).
  int64_t outputPasses;
  Type elementType;
  float scale, scaleLog2;

  /// The thread and the 1024-byte aligned shared base (i32).
  Value threadId, sharedBase;
  /// The current tile's (setTile).
  Value batchIndex, head, kvHead, firstRow, seqQ, seqK;
  KeyBlockRange range;
  /// Per-thread values of the current phase (deriveLaneValues).
  Value consumerRow, laneRow, quadCol;
};

/// The TMA tensor maps of q, k and v first, then the op's operands as
/// memref descriptors; a persistent grid over the units of work
/// (ceil(Sq / block_m) row blocks, or ceil of half as many pairs, of each
/// (batch, head), pairsAttentionRowBlocks); the tile's block and shared memory. The
/// maps copy boxes of rows x 64 elements (block_m rows of q, block_n of k
/// and v), one 128-byte swizzle span wide.
LaunchContract getSm90LaunchContract(AttentionOp op, TileAttr tile) {
  LaunchContract contract = getAttentionLaunchContract(op, tile);
  uint64_t rowsPerUnit =
      tile.getBlockM() *
      (pairsAttentionRowBlocks(op.getCausal(), op.getWindow().has_value())
           ? 2
           : 1);
  contract.grid = {
      GridAxis{{{kQOperand, 2, rowsPerUnit}, {kQOperand, 1}, {kQOperand, 0}},
               kMaxGridDimX},
      GridAxis{}, GridAxis{}};
  contract.persistent = true;
  auto rows = [](unsigned count) {
    return SmallVector<uint32_t>{count, static_cast<uint32_t>(kBoxColumns)};
  };
  contract.parameters = {
      getTensorMapParameter(op, kQOperand, rows(tile.getBlockM()),
                            kSwizzleBytes),
      getTensorMapParameter(op, kKOperand, rows(tile.getBlockN()),
                            kSwizzleBytes),
      getTensorMapParameter(op, kVOperand, rows(tile.getBlockN()),
                            kSwizzleBytes)};
  llvm::append_range(contract.parameters, getOperandParameters(op));
  return contract;
}

} // namespace

LogicalResult fmha::lowerAttentionToGPUSm90(AttentionOp op, TileAttr tile,
                                            gpu::GPUModuleOp kernels) {
  if (tile.getWarps() % 4 != 0 || tile.getWarps() < 8 ||
      tile.getBlockM() != (tile.getWarps() / 4 - 1) * kWgmmaM)
    return op.emitOpError("the sm_90a lowering gives each consumer "
                          "warpgroup 64 query rows: block_m must be 64 "
                          "times (warps / 4 - 1), got block_m = ")
           << tile.getBlockM() << " with " << tile.getWarps() << " warps";
  if (tile.getWarps() / 4 - 1 > 3)
    return op.emitOpError("the sm_90a lowering splits an SM's 65536 "
                          "registers between one producer and at most 3 "
                          "consumer warpgroups (setmaxnreg): warps must be at "
                          "most 16, got ")
           << tile.getWarps();
  if (tile.getBlockN() % kWgmmaK != 0 || tile.getBlockN() > 256)
    return op.emitOpError("the sm_90a lowering uses block_n as the N of "
                          "Q K^T and the K of P V: it must be a multiple of "
                          "16 up to 256, got ")
           << tile.getBlockN();

  gpu::GPUFuncOp func = createKernelFunc(op, kernels, "attention",
                                         getSm90LaunchContract(op, tile));
  ImplicitLocOpBuilder b(op.getLoc(), op.getContext());
  b.setInsertionPointToStart(&func.getBody().front());
  Sm90AttentionKernelBuilder(op, tile, func, b).build();
  replaceByLaunch(op, func);
  return success();
}
