//===- AttentionToGPUSm90a.cpp - fmha.attention for sm_90a ----------------===//
//
// Part of FlashCore. Lowers fmha.attention with an sm_90a tile to one
// warp-specialized FlashAttention-3-style forward kernel (KERNELS.md
// section 2) plus a gpu.launch_func in its place. This file is the kernel's
// schedule: which warpgroup does what, in which order. The instructions are
// the emitters' (Sm90a/*.h): TmaPipeline (shared memory, mbarriers, TMA),
// WarpgroupGemm (WGMMA), FragmentSoftmax (mask and online softmax on the
// accumulator fragments), ConsumerTurns (setmaxnreg, ping-pong) and
// Epilogue (stmatrix staging, O and LSE stores); which tiles a CTA takes is
// PersistentTileSchedule's.
//
// Launch (getSm90aLaunchContract): the TMA tensor maps of q, k and v first
// (CUtensorMap, 128 bytes each, passed by value: !llvm.ptr parameters that
// fmha-tensor-map-parameters makes byval grid-constant ones after the GPU
// lowering), then the op's memref operands in order, each an MLIR memref
// descriptor. Each map has the operand's strides, a box of rows x 64
// elements (rows = block_m for q, block_n for k and v) and 128-byte swizzle;
// positions past S read as zeros. Grid: any number of CTAs along x, which
// take the units of work (pairsAttentionRowBlocks in TileConfig.h: a row
// block, or a causal pair of them, of one (batch, head)) in turn: the JIT
// launches one CTA per SM, so one unit's epilogue overlaps the next one's
// loads; the host IR, which cannot ask the device, launches one CTA per
// unit.
//
// Warpgroup 0 is the producer: one thread issues every TMA load (over a
// paged cache whose pages are smaller than a key block, one thread of
// each of up to four of its warps, getIssuingWarps). Q once per tile (row block
// of a (batch, head)), into one of two buffers where they fit (the next tile's
// then loads under this one: AttentionSharedLayout), K and V of each key
// block into `stages` buffers, each buffer with a full and an empty
// mbarrier. The other
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
// loads overlap the GEMMs. With two or three consumers they take turns
// issuing their GEMMs (ConsumerTurns). After a tile's last P V the consumers
// write O and the LSE (Epilogue), each on its own where O has a staging
// buffer of its own, so that one consumer's epilogue runs under the
// others' GEMMs.
//
//===----------------------------------------------------------------------===//

#include "AttentionCommon.h"
#include "AttentionLowerings.h"
#include "KernelLaunch.h"
#include "Sm90a/Epilogue.h"
#include "Sm90a/FragmentSoftmax.h"
#include "Sm90a/PingPong.h"
#include "Sm90a/TmaPipeline.h"
#include "Sm90a/WarpgroupGemm.h"
#include "TileSchedule.h"
#include "fmha/Dialect/Fmha/TileConfig.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <algorithm>
#include <limits>

using namespace mlir;
using namespace mlir::fmha;
using namespace mlir::fmha::sm90a;

namespace {

/// This thread's warp (i32), read anew where called: kept across the
/// producer's loops it would take one of its 24 registers, and spill.
Value readWarp(KernelBuilder &b) {
  return b.udiv(readSpecialRegister(b, "%tid.x"), b.i32(kThreadsPerWarp));
}

/// The producer's part of one tile, as its issuing warp (readWarp) of
/// shape.issuingWarps sees it: Q (warp 0), then K and V of every key block
/// into the buffers as the consumers free them (warp 0 states each
/// buffer's bytes, the others arrive; the warps' boxes land on the barrier
/// in any order).
/// Returns the count of key blocks loaded so far, from \p loaded.
Value buildProducer(KernelBuilder &b, const KernelShape &shape,
                    TmaPipeline &pipeline, gpu::GPUFuncOp func,
                    const KeyRows &keys, const TileCoordinates &tile,
                    Value iteration, Value loaded) {
  int64_t warps = shape.issuingWarps;
  // \p then on warp 0 (where several issue), \p otherWarps, if any, on
  // the others.
  auto onFirstWarp = [&](llvm::function_ref<void()> then,
                         llvm::function_ref<void()> otherWarps = nullptr) {
    if (warps == 1)
      return then();
    auto region = [&](llvm::function_ref<void()> body) {
      return [&, body](OpBuilder &, Location) {
        body();
        scf::YieldOp::create(b);
      };
    };
    Value first = b.eq(readWarp(b), b.i32(0));
    if (!otherWarps)
      scf::IfOp::create(b, first, region(then));
    else
      scf::IfOp::create(b, first, region(then), region(otherWarps));
  };
  // Q, once the consumers are done with the last tile in its buffer: the
  // previous one's, or with two buffers the one before, so that it loads
  // under this tile's last blocks (packed heads' rows are no box: the
  // consumers load their own, loadQueryRows).
  if (!tile.queryGroup)
    onFirstWarp([&] {
      auto [slot, parity] = pipeline.getQuerySlotAndPhase(iteration);
      pipeline.wait(pipeline.getBarrier(TmaPipeline::kQueryEmpty, slot),
                    b.xor_(parity, b.i32(1)));
      Value full = pipeline.getBarrier(TmaPipeline::kQueryFull, slot);
      pipeline.expectBytes(full, shape.queryBytes);
      pipeline.loadTile(func.getArgument(kQMap), pipeline.getQueryBuffer(slot),
                        full, b.word(tile.toQueryRow(b, tile.firstRow)),
                        b.word(tile.head), b.word(tile.getQueryEntry(b)),
                        shape.blockM, shape.blockM, shape.keyColumnBlocks);
    });

  // K and V of every key block, last to first, as the consumers visit
  // them (in 32 bits, as TMA coordinates).
  Value lastBlockEnd = b.word(tile.range.lastBlockEnd);
  Value count = b.sub(lastBlockEnd, b.word(tile.range.firstBlock));
  Value kvHeadWord = b.word(tile.kvHead);
  auto loop =
      scf::ForOp::create(b, b.i32(0), count, b.i32(1), ValueRange{loaded});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value block = b.sub(b.sub(lastBlockEnd, b.i32(1)), loop.getInductionVar());
  Value blockRow = b.mul(block, b.i32(shape.blockN));
  Value current = loop.getRegionIterArgs()[0];
  auto [stage, phase] = pipeline.getStageAndPhase(current);
  // The first pass over each buffer finds it empty: a fresh barrier
  // reports the phase before its first as complete.
  Value emptyPhase = b.xor_(phase, b.i32(1));
  // With a page table, the block's boxes that hold the tile's keys (one
  // past them would read table entries past the entry's keys), in a loop whose
  // bound ptxas does not know: unrolled, it kept each box's table address
  // from K's pass for V's, across the wait for V's buffer, and spilled the
  // producer's 24 registers. The rows past them keep what the buffer held
  // (the mask hides them; the consumers zero V's, clearValuesPastKeys).
  Value pagedRows;
  if (keys.pageTable) {
    Value keysLeft =
        b.smin(b.sub(b.word(tile.seqK), blockRow), b.i32(shape.blockN));
    pagedRows = b.mul(b.ceilDivU(keysLeft, b.i32(shape.keyBoxRows)),
                      b.i32(shape.keyBoxRows));
  }
  // K's buffer, then V's (rows of q's and of v's head dim).
  for (auto [argument, fullBarrier, emptyBarrier, values] :
       {std::tuple{kKMap, TmaPipeline::kKeyFull, TmaPipeline::kKeyEmpty, false},
        std::tuple{kVMap, TmaPipeline::kValueFull, TmaPipeline::kValueEmpty,
                   true}}) {
    Value map = func.getArgument(argument);
    int64_t bufferBytes = values ? shape.valueBytes : shape.keyBytes;
    int64_t columnBlocks =
        values ? shape.valueColumnBlocks : shape.keyColumnBlocks;
    pipeline.wait(pipeline.getBarrier(emptyBarrier, stage), emptyPhase);
    Value barrier = pipeline.getBarrier(fullBarrier, stage);
    auto getBuffer = [&, values = values] {
      return values ? pipeline.getValueBuffer(stage)
                    : pipeline.getKeyBuffer(stage);
    };
    if (!pagedRows) {
      pipeline.expectBytes(barrier, bufferBytes);
      pipeline.loadTile(map, getBuffer(), barrier, tile.toKeyRow(b, blockRow),
                        kvHeadWord, b.word(tile.getKeyEntry(b)), shape.blockN,
                        shape.blockN, columnBlocks);
      continue;
    }
    // Every issuing warp arrives, whether or not the block holds a box of
    // its own (getIssuingWarps says why); the first with the bytes.
    onFirstWarp(
        [&] {
          pipeline.expectBytes(
              barrier, b.mul(pagedRows, b.i32(columnBlocks * kSwizzleBytes)));
        },
        [&] { pipeline.arrive(barrier); });
    // Over this warp's boxes' first keys (every warps-th), carrying each
    // box's shared address (one register fewer than both from a box index:
    // the producer has none to spare).
    Value firstBox =
        warps == 1 ? b.i32(0) : b.mul(readWarp(b), b.i32(shape.keyBoxRows));
    Value tileAddress =
        b.add(getBuffer(), b.mul(firstBox, b.i32(kSwizzleBytes)));
    auto boxes = scf::ForOp::create(
        b, b.add(blockRow, firstBox), b.add(blockRow, pagedRows),
        b.i32(warps * shape.keyBoxRows), ValueRange{tileAddress});
    OpBuilder::InsertionGuard boxGuard(b);
    b.setInsertionPointToStart(boxes.getBody());
    Value boxAddress = boxes.getRegionIterArgs()[0];
    auto [entry, entryRow] =
        keys.locate(b, func.getArgument(kK), tile, boxes.getInductionVar());
    pipeline.loadTile(map, boxAddress, barrier, entryRow, kvHeadWord, entry,
                      shape.keyBoxRows, shape.blockN, columnBlocks);
    scf::YieldOp::create(
        b, b.add(boxAddress, b.i32(warps * shape.keyBoxRows * kSwizzleBytes)));
  }
  scf::YieldOp::create(b, ValueRange{b.add(current, b.i32(1))});
  return loop.getResult(0);
}

/// Whether a consumer builds Q's descriptor once a tile and holds it over
/// the tile's key blocks, where ptxas keeps the descriptors of its k steps
/// in uniform registers: at most 8 k steps (head dim 128); d256's 16 would
/// each move over by an R2UR before its WGMMA, which costs more than
/// building them each block. Only the prefill tiles (two or more
/// consumers): decode's one consumer did not gain (sm90-attention-notes
/// v9). Not over paged keys, whose producer needs those registers (ptxas
/// spills 32-60 bytes when both hold them).
static bool holdsQueryDescriptor(const KernelShape &shape,
                                 const KeyRows &keys) {
  constexpr int64_t kHeldQuerySteps = 8;
  return llvm::divideCeil(shape.headDim, kWgmmaK) <= kHeldQuerySteps &&
         shape.consumers > 1 && !keys.pageTable;
}

/// Whether a warp skips the softmax of its halves of rows (g, g + 8) that
/// lie wholly past the tile's queries: on the decode tile (one consumer,
/// a GQA group's few rows packed) up to head dim 32, keys not paged. There
/// a block's bytes are few and the softmax sets its time (d32 +19%); at
/// d64 the branches cost up to 10% and over paged keys 10-13%
/// (decode-notes v22). A prefill tile's rows past Sq are its last tile's
/// only.
static bool skipsPaddingRows(const KernelShape &shape, const KeyRows &keys) {
  constexpr int64_t kLargestSkippingHeadDim = 32;
  return shape.consumers == 1 && shape.headDim <= kLargestSkippingHeadDim &&
         !keys.pageTable;
}

/// The part of one consumer warpgroup: its 64 rows of each tile. The GEMMs
/// of consecutive key blocks overlap in FlashAttention-3's order (KERNELS.md
/// section 2, "fwd_step"): block j issues S_j = Q K_j^T and then
/// O += P_{j-1} V_{j-1}, waits for S_j only, and runs the softmax of S_j
/// while the tensor cores still work on P_{j-1} V_{j-1}. The first block
/// (the last-indexed, always masked here) only computes its S and P; a
/// drain step adds the last P V.
class Consumer {
public:
  /// \p query is the kernel's q parameter; \p holdsQuery, whether a tile
  /// builds Q's descriptor once (holdsQueryDescriptor); \p skipsPadding,
  /// whether a warp skips its padding rows' softmax (skipsPaddingRows).
  Consumer(KernelBuilder &b, const KernelShape &shape,
           const AttentionWindow &window, Value threadId, Value query,
           bool holdsQuery, bool skipsPadding, TmaPipeline &pipeline,
           ConsumerTurns &turns, Epilogue &epilogue)
      : b(b), shape(shape), window(window), threadId(threadId), query(query),
        holdsQuery(holdsQuery), skipsPadding(skipsPadding), pipeline(pipeline),
        turns(turns), epilogue(epilogue), gemm(b, shape, pipeline),
        softmax(b, shape, window) {}

  /// Computes \p tile, the \p iteration-th (i32) of this CTA, whose key
  /// blocks follow the \p consumed (i32) before it; returns the count of
  /// key blocks consumed after it.
  Value buildTile(const TileCoordinates &tile, Value iteration, Value consumed);

private:
  SmallVector<Value> buildFirstBlock(const TileCoordinates &tile, Value block,
                                     ConsumerState &state);
  std::pair<ConsumerState, SmallVector<Value>>
  buildKeyBlocks(const TileCoordinates &tile, Value end, Value begin,
                 bool masked, const ConsumerState &state,
                 ArrayRef<Value> pending);
  std::array<Value, 2> getPaddingHalves(const TileCoordinates &tile,
                                        const FragmentLanes &lanes);
  SmallVector<Value> buildKeyBlock(const TileCoordinates &tile, Value block,
                                   bool masked, ConsumerState &state,
                                   ValueRange pending);
  Value drainValues(ConsumerState &state, ArrayRef<Value> pending);
  void clearValuesPastKeys(const TileCoordinates &tile, Value block,
                           Value stage, Value phase);
  void loadQueryRows(const TileCoordinates &tile);
  void releaseQuery(const TileCoordinates &tile);
  void releaseValues(Value stage);
  /// Q's descriptor of this consumer's rows for issueScores: the tile's
  /// own where buildTile holds one, else built again at each key block.
  Value getQueryDescriptor(Value consumerRow);

  KernelBuilder &b;
  const KernelShape &shape;
  const AttentionWindow &window;
  Value threadId, query;
  bool holdsQuery;
  bool skipsPadding;
  TmaPipeline &pipeline;
  ConsumerTurns &turns;
  Epilogue &epilogue;
  WarpgroupGemm gemm;
  FragmentSoftmax softmax;
  /// The Q buffer of the tile being built (i32) and, where holdsQuery,
  /// the descriptor of this consumer's rows of it (buildTile sets both,
  /// once a tile).
  Value querySlot, heldQueryDescriptor;
};

Value Consumer::getQueryDescriptor(Value consumerRow) {
  return heldQueryDescriptor ? heldQueryDescriptor
                             : gemm.getQueryDescriptor(querySlot, consumerRow);
}

Value Consumer::buildTile(const TileCoordinates &tile, Value iteration,
                          Value consumed) {
  // Like every phase, from its own hidden copy of the thread id.
  FragmentLanes lanes = FragmentLanes::derive(b, threadId);
  Value queryPhase;
  std::tie(querySlot, queryPhase) = pipeline.getQuerySlotAndPhase(iteration);
  heldQueryDescriptor =
      holdsQuery ? gemm.getQueryDescriptor(querySlot, lanes.consumerRow)
                 : Value();
  if (tile.queryGroup)
    loadQueryRows(tile);
  else
    pipeline.wait(pipeline.getBarrier(TmaPipeline::kQueryFull, querySlot),
                  queryPhase);

  ConsumerState state;
  state.out =
      LLVM::ZeroOp::create(b, getAccumulatorType(b, shape.outputColumns));
  Value minusInf = b.f32(-std::numeric_limits<float>::infinity());
  state.rowMax = {minusInf, minusInf};
  state.rowSum = {b.f32(0.0f), b.f32(0.0f)};
  state.consumed = consumed;

  const KeyBlockRange &range = tile.range;
  Value anyBlock = b.sgt(range.lastBlockEnd, range.firstBlock);
  auto blocks = scf::IfOp::create(
      b, anyBlock,
      [&](OpBuilder &, Location) {
        // The blocks after the first, in the three ranges, clamped.
        Value rest = b.sub(range.lastBlockEnd, b.index(1));
        auto below = [&](Value bound) { return b.smin(bound, rest); };
        ConsumerState current = state;
        SmallVector<Value> pending = buildFirstBlock(tile, rest, current);
        std::tie(current, pending) =
            buildKeyBlocks(tile, rest, below(range.unmaskedEnd),
                           /*masked=*/true, current, pending);
        std::tie(current, pending) = buildKeyBlocks(
            tile, below(range.unmaskedEnd), below(range.unmaskedBegin),
            /*masked=*/false, current, pending);
        if (window.left)
          std::tie(current, pending) =
              buildKeyBlocks(tile, below(range.unmaskedBegin), range.firstBlock,
                             /*masked=*/true, current, pending);
        // Every S = Q K^T has completed: the producer may load the next
        // tile's Q under the last P V and the epilogue.
        releaseQuery(tile);
        Value lastStage = drainValues(current, pending);
        SmallVector<Value> results = current.flatten();
        results.push_back(lastStage);
        scf::YieldOp::create(b, results);
      },
      [&](OpBuilder &, Location) {
        releaseQuery(tile);
        SmallVector<Value> results = state.flatten();
        results.push_back(b.i32(0));
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
        epilogue.storeOutput(state, lastStage, tile);
        scf::YieldOp::create(b);
      },
      [&](OpBuilder &, Location) {
        epilogue.storeEmptyRows(tile);
        scf::YieldOp::create(b);
      });
  return state.consumed;
}

/// Hands the tile's Q buffer back to the producer, which loads the next
/// tile's into it; with packed heads the consumers load their own.
void Consumer::releaseQuery(const TileCoordinates &tile) {
  if (!tile.queryGroup)
    pipeline.release(pipeline.getBarrier(TmaPipeline::kQueryEmpty, querySlot));
}

/// Hands V buffer \p stage back to the producer: this consumer's P V from
/// it has completed.
void Consumer::releaseValues(Value stage) {
  pipeline.release(pipeline.getBarrier(TmaPipeline::kValueEmpty, stage));
}

/// With packed heads, this consumer's 64 rows of the tile's Q, which no TMA
/// box holds (row r is query r / G of head kvHead x G + r % G): each thread
/// copies 16-byte chunks from q into the Q buffer's layout (column blocks
/// of block_m rows of 128 bytes, chunk c of row r at c ^ (r % 8): the
/// 128-byte swizzle a box would have), zeros past the rows and columns.
/// Its last S = Q K^T of the previous tile has completed (waited for
/// before that tile's softmax), so its rows are free.
void Consumer::loadQueryRows(const TileCoordinates &tile) {
  constexpr int64_t kChunkElements = 8, kChunkBytes = 16;
  int64_t rowChunks = shape.keyColumns / kChunkElements;
  int64_t headChunks = shape.headDim / kChunkElements;
  // A 128-byte row's chunks, and the rows of a swizzle atom.
  int64_t atomChunks = kSwizzleBytes / kChunkBytes;
  int64_t atomRows = kAtomBytes / kSwizzleBytes;
  FragmentLanes lanes = FragmentLanes::derive(b, threadId);
  Value thread =
      b.word(b.urem(hideFromHoisting(b, threadId), b.index(kWarpgroupThreads)));
  Value consumerRow = b.word(lanes.consumerRow);
  Value entry = tile.getQueryEntry(b);
  auto chunkType = VectorType::get({kChunkElements}, shape.elementType);
  Value zeros = arith::ConstantOp::create(b, b.getZeroAttr(chunkType));
  for (int64_t step = 0; step < kWgmmaM * rowChunks;
       step += kWarpgroupThreads) {
    Value unit = b.add(thread, b.i32(step));
    Value tileRow = b.add(consumerRow, b.udiv(unit, b.i32(rowChunks)));
    Value chunk = b.urem(unit, b.i32(rowChunks));
    Value row = b.add(tile.firstRow, b.toIndex(tileRow));
    Value valid = b.slt(row, tile.seqQ);
    if (headChunks < rowChunks)
      valid = b.and_(valid, b.slt(chunk, b.i32(headChunks)));
    auto load = scf::IfOp::create(
        b, valid,
        [&](OpBuilder &, Location) {
          auto [head, queryRow] = tile.getQueryHeadAndRow(b, row);
          Value column = b.toIndex(b.mul(chunk, b.i32(kChunkElements)));
          scf::YieldOp::create(b, vector::LoadOp::create(
                                      b, chunkType, query,
                                      ValueRange{entry, head, queryRow, column},
                                      /*nontemporal=*/false,
                                      llvm::MaybeAlign(kChunkBytes))
                                      .getResult());
        },
        [&](OpBuilder &, Location) { scf::YieldOp::create(b, zeros); });
    Value columnBlock = b.udiv(chunk, b.i32(atomChunks));
    Value swizzled = b.xor_(b.urem(chunk, b.i32(atomChunks)),
                            b.urem(tileRow, b.i32(atomRows)));
    Value address =
        b.add(pipeline.getQueryBuffer(querySlot),
              b.add(b.mul(columnBlock, b.i32(shape.blockM * kSwizzleBytes)),
                    b.add(b.mul(tileRow, b.i32(kSwizzleBytes)),
                          b.mul(swizzled, b.i32(kChunkBytes)))));
    LLVM::StoreOp::create(b, load.getResult(0),
                          pipeline.getSharedPointer(address), kChunkBytes);
  }
  // The stores (generic proxy) before this consumer's WGMMAs read them
  // (async proxy), every thread's.
  pipeline.fenceAsyncShared();
  turns.syncWarpgroup();
}

/// S and P of the first key block \p block (masked: it may be partial or
/// on the diagonal); returns P.
SmallVector<Value> Consumer::buildFirstBlock(const TileCoordinates &tile,
                                             Value block,
                                             ConsumerState &state) {
  FragmentLanes lanes = FragmentLanes::derive(b, threadId);
  auto [stage, phase] = pipeline.getStageAndPhase(state.consumed);
  pipeline.wait(pipeline.getBarrier(TmaPipeline::kKeyFull, stage), phase);
  turns.waitForTurn();
  gemm.fence();
  Value scores = gemm.issueScores(getQueryDescriptor(lanes.consumerRow), stage);
  gemm.commitGroup();
  turns.passTurn();
  gemm.waitGroup(0);
  pipeline.release(pipeline.getBarrier(TmaPipeline::kKeyEmpty, stage));
  SmallVector<Value> values = unpackAccumulator(b, scores, shape.blockN / 2);
  if (shape.softcap)
    shape.softcap->apply(b, values);
  softmax.applyMask(values, b.mul(block, b.index(shape.blockN)), lanes, tile);
  // O is still zero: its rescale can be skipped.
  SmallVector<Value> probabilities =
      softmax.update(values, state, getPaddingHalves(tile, lanes)).first;
  if (shape.limitsKeys)
    clearValuesPastKeys(tile, block, stage, phase);
  state.consumed = b.add(state.consumed, b.i32(1));
  return probabilities;
}

/// With key_lengths, zeroes the rows of V block \p block (in buffer
/// \p stage, whose load completes phase \p phase) at and past the tile's
/// keys, so that P V never multiplies what a KV cache holds there. Only the
/// first (last-indexed) block of a tile can reach past its keys. The
/// consumers zero a share each, then meet before any of them issues the
/// P V that reads the block (their turns are passed by then).
void Consumer::clearValuesPastKeys(const TileCoordinates &tile, Value block,
                                   Value stage, Value phase) {
  Value blockRow = b.mul(b.word(block), b.i32(shape.blockN));
  Value keptRows = b.sub(b.word(tile.seqK), blockRow);
  Value partial = b.slt(keptRows, b.i32(shape.blockN));
  scf::IfOp::create(b, partial, [&](OpBuilder &, Location) {
    pipeline.wait(pipeline.getBarrier(TmaPipeline::kValueFull, stage), phase);
    // 16-byte chunks from the first cleared row to the end of each column
    // block (a row's 128 bytes stay in its row under the swizzle).
    constexpr int64_t kChunkBytes = 16;
    Value chunks = b.mul(b.sub(b.i32(shape.blockN), keptRows),
                         b.i32(kSwizzleBytes / kChunkBytes));
    Value consumerThread = b.word(
        b.sub(hideFromHoisting(b, threadId), b.index(kWarpgroupThreads)));
    Value tileAddress = pipeline.getValueBuffer(stage);
    Value zeros = LLVM::ZeroOp::create(b, VectorType::get({4}, b.getI32Type()));
    for (int64_t c = 0; c < shape.valueColumnBlocks; ++c) {
      Value first =
          b.add(tileAddress, b.add(b.i32(c * shape.blockN * kSwizzleBytes),
                                   b.mul(keptRows, b.i32(kSwizzleBytes))));
      auto chunkLoop =
          scf::ForOp::create(b, consumerThread, chunks,
                             b.i32(shape.consumers * kWarpgroupThreads));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(chunkLoop.getBody());
      Value address =
          b.add(first, b.mul(chunkLoop.getInductionVar(), b.i32(kChunkBytes)));
      LLVM::StoreOp::create(b, zeros, pipeline.getSharedPointer(address),
                            kChunkBytes);
    }
    pipeline.fenceAsyncShared();
    turns.syncConsumers();
    scf::YieldOp::create(b);
  });
}

/// Runs key blocks end - 1 down to begin, carrying the state and the P of
/// the block before.
std::pair<ConsumerState, SmallVector<Value>>
Consumer::buildKeyBlocks(const TileCoordinates &tile, Value end, Value begin,
                         bool masked, const ConsumerState &state,
                         ArrayRef<Value> pending) {
  SmallVector<Value> carried = state.flatten();
  size_t stateSize = carried.size();
  llvm::append_range(carried, pending);
  Value count = b.sub(end, begin);
  auto loop = scf::ForOp::create(b, b.index(0), count, b.index(1), carried);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value block = b.sub(b.sub(end, b.index(1)), loop.getInductionVar());
  ValueRange arguments = loop.getRegionIterArgs();
  ConsumerState current =
      ConsumerState::unflatten(arguments.take_front(stateSize));
  SmallVector<Value> probabilities = buildKeyBlock(
      tile, block, masked, current, arguments.drop_front(stateSize));
  SmallVector<Value> yielded = current.flatten();
  llvm::append_range(yielded, probabilities);
  scf::YieldOp::create(b, yielded);
  b.setInsertionPointAfter(loop);
  ValueRange results = loop.getResults();
  return {ConsumerState::unflatten(results.take_front(stateSize)),
          SmallVector<Value>(results.drop_front(stateSize))};
}

/// Which of this warp's halves of rows (g, g + 8) are all past the tile's
/// queries (i1, warp-uniform), where skipsPadding: their softmax is
/// skipped. Elsewhere none.
std::array<Value, 2> Consumer::getPaddingHalves(const TileCoordinates &tile,
                                                const FragmentLanes &lanes) {
  if (!skipsPadding)
    return {};
  Value rows = b.word(b.sub(tile.seqQ, tile.firstRow));
  Value lane = readSpecialRegister(b, "%laneid");
  Value warpRow = makeWarpUniform(
      b, b.sub(b.word(lanes.laneRow), b.udiv(lane, b.i32(4))));
  return {b.sle(rows, warpRow), b.sle(rows, b.add(warpRow, b.i32(8)))};
}

/// One pipelined step: issue S_j and O += P_{j-1} V_{j-1}, softmax of S_j
/// under the P V, then rescale O. Returns P_j.
SmallVector<Value> Consumer::buildKeyBlock(const TileCoordinates &tile,
                                           Value block, bool masked,
                                           ConsumerState &state,
                                           ValueRange pending) {
  FragmentLanes lanes = FragmentLanes::derive(b, threadId);
  // The count, and so the buffers' addresses and the WGMMA descriptors,
  // warp-uniform: carried across tiles whose consumers do not meet, ptxas
  // otherwise keeps them in vector registers (an R2UR before each WGMMA).
  state.consumed = makeWarpUniform(b, state.consumed);
  auto [stage, phase] = pipeline.getStageAndPhase(state.consumed);
  auto [previousStage, previousPhase] =
      pipeline.getStageAndPhase(b.sub(state.consumed, b.i32(1)));
  pipeline.wait(pipeline.getBarrier(TmaPipeline::kKeyFull, stage), phase);
  pipeline.wait(pipeline.getBarrier(TmaPipeline::kValueFull, previousStage),
                previousPhase);
  // Issue S_j before P_{j-1} V_{j-1}: wait_group counts in issue order.
  turns.waitForTurn();
  gemm.fence();
  Value scores = gemm.issueScores(getQueryDescriptor(lanes.consumerRow), stage);
  gemm.commitGroup();
  Value out =
      gemm.issueValues(SmallVector<Value>(pending), previousStage, state.out);
  gemm.commitGroup();
  turns.passTurn();
  // S_j is ready; P V may still run.
  gemm.waitGroup(1);
  pipeline.release(pipeline.getBarrier(TmaPipeline::kKeyEmpty, stage));
  SmallVector<Value> values = unpackAccumulator(b, scores, shape.blockN / 2);
  if (shape.softcap)
    shape.softcap->apply(b, values);
  if (masked)
    softmax.applyMask(values, b.mul(block, b.index(shape.blockN)), lanes, tile);
  auto [probabilities, alpha] =
      softmax.update(values, state, getPaddingHalves(tile, lanes));
  gemm.waitGroup(0);
  releaseValues(previousStage);
  state.out = softmax.scaleRows(out, alpha);
  state.consumed = b.add(state.consumed, b.i32(1));
  return probabilities;
}

/// O += P V of the last block. Returns the block's V buffer, which the
/// epilogue stages O in and then releases where O has no buffer of its
/// own; else it is released here.
Value Consumer::drainValues(ConsumerState &state, ArrayRef<Value> pending) {
  // Like every phase, from its own hidden copy of the thread id, though it
  // reads no lane values: the copy (a mov) is part of the generated kernel,
  // and dropping it is a change to measure on the GPU.
  FragmentLanes::derive(b, threadId);
  auto [stage, phase] =
      pipeline.getStageAndPhase(b.sub(state.consumed, b.i32(1)));
  pipeline.wait(pipeline.getBarrier(TmaPipeline::kValueFull, stage), phase);
  gemm.fence();
  state.out = gemm.issueValues(pending, stage, state.out);
  gemm.commitGroup();
  gemm.waitGroup(0);
  if (shape.sharedLayout.outputBytes)
    releaseValues(stage);
  return stage;
}

/// The kernel: shared memory and barriers, then the producer warpgroup's
/// and the consumers' loops over this CTA's tiles.
void buildKernel(AttentionOp op, TileAttr tileAttr, gpu::GPUFuncOp func,
                 KernelBuilder &b) {
  KernelShape shape = KernelShape::get(op, tileAttr);
  AttentionWindow window = AttentionWindow::get(op);
  Value threadId = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  TmaPipeline pipeline = TmaPipeline::create(b, shape, threadId);
  pipeline.initBarriers();
  KeyRows keys = KeyRows::get(op, func, kLse);
  PersistentTileSchedule schedule(
      b, func.getArgument(kQ), func.getArgument(kK), func.getArgument(kO), keys,
      SequenceRows::get(op, func, kLse), shape.blockM, shape.blockN, window,
      pairsAttentionRowBlocks(op.getCausal(), op.getWindow().has_value(),
                              op.getPackQueryHeads()),
      op.getSplitKeys(), op.getPackQueryHeads());
  ConsumerTurns turns(b, shape.consumers, threadId);
  Epilogue epilogue(b, shape, pipeline, turns, threadId, func.getArgument(kO),
                    op.getLse() ? func.getArgument(kLse) : Value(),
                    op.getSinks() ? func.getArgument(getSinksArgument(op, kLse))
                                  : Value());
  Consumer consumer(b, shape, window, threadId, func.getArgument(kQ),
                    holdsQueryDescriptor(shape, keys),
                    skipsPaddingRows(shape, keys), pipeline, turns, epilogue);

  Value warpgroup = b.udiv(threadId, b.index(kWarpgroupThreads));
  Value isProducer = b.eq(warpgroup, b.index(0));
  RegisterSplit split = RegisterSplit::get(shape.consumers);
  scf::IfOp::create(
      b, isProducer,
      [&](OpBuilder &, Location) {
        setMaxRegisters(b, split.producer, /*increase=*/false);
        // The first thread of each issuing warp (shape.issuingWarps) walks
        // the tiles and issues their loads; with packed sequences each
        // issuing warp walks them (its lanes find each tile's sequence
        // together, as the consumers' do). No other: the full barriers
        // count the issuing warps' arrives.
        bool byWarps = static_cast<bool>(op.getQueryOffsets());
        int64_t warps = shape.issuingWarps;
        auto inIssuingWarp = [&] {
          return b.slt(threadId, b.index(warps * kThreadsPerWarp));
        };
        Value issuer;
        if (warps == 1) {
          issuer = b.eq(threadId, b.index(0));
        } else {
          Value inWarp = inIssuingWarp();
          Value lane = b.urem(threadId, b.index(kThreadsPerWarp));
          issuer = b.and_(inWarp, b.eq(lane, b.index(0)));
        }
        Value walker = byWarps ? inIssuingWarp() : issuer;
        scf::IfOp::create(b, walker, [&](OpBuilder &, Location) {
          // With packed sequences each walking warp keeps the first
          // sequences' order in 128 bytes of its own (forEachTile), whose
          // address it derives where it reads them.
          int64_t orderBytes = kThreadsPerWarp * 4;
          assert(warps * orderBytes <= TmaPipeline::kSlackBufferBytes &&
                 "every walking warp's order fits the slack");
          auto getOrderCache = [&]() -> Value {
            Value warp = b.udiv(readSpecialRegister(b, "%tid.x"),
                                b.i32(kThreadsPerWarp));
            return b.add(pipeline.getSlackBuffer(),
                         b.mul(warp, b.i32(orderBytes)));
          };
          schedule.forEachTile(
              [&](const TileCoordinates &tile, Value iteration, Value loaded) {
                if (!byWarps)
                  return buildProducer(b, shape, pipeline, func, keys, tile,
                                       iteration, loaded);
                scf::IfOp::create(b, issuer, [&](OpBuilder &, Location) {
                  buildProducer(b, shape, pipeline, func, keys, tile, iteration,
                                loaded);
                  scf::YieldOp::create(b);
                });
                // buildProducer's count, which every lane keeps.
                return b.add(loaded, b.sub(b.word(tile.range.lastBlockEnd),
                                           b.word(tile.range.firstBlock)));
              },
              byWarps, /*holdSequences=*/false,
              byWarps ? PersistentTileSchedule::OrderCache(getOrderCache)
                      : nullptr);
          scf::YieldOp::create(b);
        });
        scf::YieldOp::create(b);
      },
      [&](OpBuilder &, Location) {
        setMaxRegisters(b, split.consumer, /*increase=*/true);
        turns.start();
        schedule.forEachTile(
            [&](const TileCoordinates &tile, Value iteration, Value consumed) {
              return consumer.buildTile(tile, iteration, consumed);
            },
            /*byWarps=*/true, /*holdSequences=*/true);
        scf::YieldOp::create(b);
      });
  gpu::ReturnOp::create(b);
}

/// The TMA tensor maps of q, k and v first, then the op's operands as
/// memref descriptors; a persistent grid over the units of work
/// (ceil(Sq / block_m) row blocks, or ceil of half as many pairs, of each
/// (batch, head), pairsAttentionRowBlocks; with split_keys, of each key
/// split of each batch or packed sequence); the tile's block and shared
/// memory. The maps copy boxes of rows x 64 elements (block_m rows of q,
/// block_n of k and v), one 128-byte swizzle span wide.
LaunchContract getSm90aLaunchContract(AttentionOp op, TileAttr tile) {
  LaunchContract contract = getAttentionLaunchContract(op, tile);
  uint64_t rowsPerUnit =
      tile.getBlockM() *
      (pairsAttentionRowBlocks(op.getCausal(), op.getWindow().has_value(),
                               op.getPackQueryHeads())
           ? 2
           : 1);
  // With query_offsets, at least the units (every sequence's at most
  // max_query_length's, of B + 1 entries: the offsets' size; the kernel
  // counts them); with split_keys, of each key split (o's entries).
  GridFactor rowBlocks{kQOperand, 2, rowsPerUnit};
  GridFactor batchEntries{op.getSplitKeys() ? kOOperand : kQOperand, 0};
  if (op.getQueryOffsets()) {
    rowBlocks = {getMaxQueryLengthOperand(op), 0, rowsPerUnit};
    batchEntries = {getQueryOffsetsOperand(op), 0};
  }
  GridAxis units{{rowBlocks, {kQOperand, 1}, batchEntries}, kMaxGridDimX};
  if (op.getQueryOffsets() && op.getSplitKeys())
    units.factors.push_back({kOOperand, 0});
  contract.grid = {units, GridAxis{}, GridAxis{}};
  contract.persistent = true;
  auto rows = [](unsigned count) {
    return SmallVector<uint32_t>{count, static_cast<uint32_t>(kBoxColumns)};
  };
  contract.parameters = {
      getTensorMapParameter(op, kQOperand, rows(tile.getBlockM()),
                            kSwizzleBytes),
      getTensorMapParameter(op, kKOperand, rows(getKeyBoxRows(op, tile)),
                            kSwizzleBytes),
      getTensorMapParameter(op, kVOperand, rows(getKeyBoxRows(op, tile)),
                            kSwizzleBytes)};
  // The L2 fill per map follows what each tile measured (decode-notes v16,
  // v18): the decode tile's one consumer, which streams each K/V row once
  // at the HBM rate, gained 6-10% from 128-byte fills (a third fewer L2
  // sectors moved); the prefill tiles (two or more consumers), whose K/V
  // blocks many CTAs re-read from L2, lost 2-3% at d256 with them, so they
  // keep 256 bytes, which also fetch the 64 columns beside each box row.
  if (KernelShape::get(op, tile).consumers >= 2)
    for (KernelParameter &map : contract.parameters)
      map.l2PromotionBytes = 256;
  llvm::append_range(contract.parameters, getOperandParameters(op));
  return contract;
}

} // namespace

LogicalResult fmha::lowerAttentionToGPUSm90a(AttentionOp op, TileAttr tile,
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
                                         getSm90aLaunchContract(op, tile));
  KernelBuilder b(op.getLoc(), op.getContext());
  b.setInsertionPointToStart(&func.getBody().front());
  // A split's states go to merge_attention, a dependent launch: once every
  // CTA of this (persistent, so all resident) grid has started, the
  // merge's CTAs may be placed and wait there for this grid's end, rather
  // than be launched after it.
  if (op.getSplitKeys())
    NVVM::GriddepcontrolOp::create(b,
                                   NVVM::GridDepActionKind::launch_dependents);
  buildKernel(op, tile, func, b);
  replaceByLaunch(op, func);
  return success();
}
