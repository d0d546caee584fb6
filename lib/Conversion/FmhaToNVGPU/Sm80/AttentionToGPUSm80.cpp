//===- AttentionToGPUSm80.cpp - fmha.attention for sm_80 ------------------===//
//
// Part of FlashCore. Lowers fmha.attention with an sm_80 tile to one
// FlashAttention-2 forward kernel (KERNELS.md section 1) plus a
// gpu.launch_func in its place. This file is the kernel's schedule; the
// instructions are the emitters' (Sm80/*.h): AsyncCopy (cp.async), WarpMma
// (ldmatrix, mma.sync), FragmentSoftmax (mask and online softmax on the
// accumulator fragments) and Epilogue (O and LSE stores).
//
// Launch (getSm80LaunchContract): the parameters are the op's memref
// operands in order (q, k, v, o, then lse if present), each an MLIR memref
// descriptor, so every size but D and every stride is a launch argument
// (BHSD and BSHD alike); one CTA per row block of each (batch, head)
// (CtaCoordinates).
//
// One CTA computes block_m query rows of one (batch, head). Warps are stacked
// along M, each owning block_m / warps rows, so the softmax never leaves a
// warp. Q stays in shared memory (re-read by ldmatrix, as FA2 does); one K
// and one V buffer alternate their cp.async loads with the two GEMMs:
//
//   wait K_n; sync; load V_n;      S = Q K_n^T (mma.sync); mask S
//   wait V_n; sync; load K_{n-1};  online softmax of S -> P (registers)
//   O += P V_n                     (P is already an A fragment)
//
// KV blocks run from the last to the first, so the blocks that need a mask
// (the partial last block, the causal diagonal, the right edge of a window)
// come first and the left edge of a window last; the blocks between run a
// copy of the body without the mask.
//
//===----------------------------------------------------------------------===//

#include "AttentionCommon.h"
#include "AttentionLowerings.h"
#include "KernelLaunch.h"
#include "Sm80/AsyncCopy.h"
#include "Sm80/Epilogue.h"
#include "Sm80/FragmentSoftmax.h"
#include "Sm80/WarpMma.h"
#include "TileSchedule.h"
#include "fmha/Dialect/Fmha/TileConfig.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;
using namespace mlir::fmha;
using namespace mlir::fmha::sm80;

namespace {

/// The key block numbers of a row block (KeyBlockRange) in i32: 64-bit
/// bounds carried through the loops took two registers each, and the d64
/// and d256 kernels spilled them. Sk < 2^31 keys (2^31 rows of K would be
/// 256 GiB at head dim 64).
struct KeyBlockWords {
  Value firstBlock, lastBlockEnd, unmaskedBegin, unmaskedEnd;
};

/// The schedule of one CTA's row block: the prologue's copies, the key
/// loops and the epilogue.
class RowBlockSchedule {
public:
  /// \p keyTensor and \p valueTensor: what the key copies read (k and
  /// v, or with key_offsets their viewRowsAsEntries).
  RowBlockSchedule(KernelBuilder &b, const KernelShape &shape,
                   const AttentionWindow &window, gpu::GPUFuncOp func,
                   Value threadId, const SharedTiles &tiles, AsyncCopy &copies,
                   WarpMma &mma, FragmentSoftmax &softmax, Epilogue &epilogue,
                   Value keyTensor, Value valueTensor)
      : b(b), shape(shape), window(window), func(func), threadId(threadId),
        tiles(tiles), copies(copies), mma(mma), softmax(softmax),
        epilogue(epilogue), keyTensor(keyTensor), valueTensor(valueTensor) {}

  /// Computes the row block of \p tile (its range not yet set) with the
  /// lane values \p lanes of the prologue.
  void build(const Lanes &lanes, TileCoordinates tile);

private:
  SoftmaxState buildKeyBlocks(const TileCoordinates &tile,
                              const KeyBlockWords &blocks, Value end,
                              Value begin, bool masked,
                              const SoftmaxState &state);
  SoftmaxState buildKeyBlock(const TileCoordinates &tile,
                             const KeyBlockWords &blocks, Value block,
                             bool masked, const SoftmaxState &state);

  KernelBuilder &b;
  const KernelShape &shape;
  const AttentionWindow &window;
  gpu::GPUFuncOp func;
  Value threadId;
  const SharedTiles &tiles;
  AsyncCopy &copies;
  WarpMma &mma;
  FragmentSoftmax &softmax;
  Epilogue &epilogue;
  Value keyTensor, valueTensor;
};

void RowBlockSchedule::build(const Lanes &lanes, TileCoordinates tile) {
  tile.computeRange(b, shape.blockM, shape.blockN, window);
  // The key loops run in i32 (KeyBlockWords).
  KeyBlockWords blocks;
  blocks.firstBlock = b.word(tile.range.firstBlock);
  blocks.lastBlockEnd = b.word(tile.range.lastBlockEnd);
  blocks.unmaskedBegin = b.word(tile.range.unmaskedBegin);
  blocks.unmaskedEnd = b.word(tile.range.unmaskedEnd);

  // Prologue: Q and the first (last-indexed) K block in one group.
  copies.copyTile(lanes, tile, func.getArgument(kQ), tile.head, tile.firstRow,
                  tile.seqQ, tiles.q, shape.blockM, /*bounded=*/true);
  Value anyBlock = b.sgt(blocks.lastBlockEnd, blocks.firstBlock);
  scf::IfOp::create(b, anyBlock, [&](OpBuilder &, Location) {
    copies.copyKeyBlock(lanes, tile, keyTensor, tiles.k,
                        b.sub(blocks.lastBlockEnd, b.i32(1)),
                        /*bounded=*/true);
    scf::YieldOp::create(b);
  });
  copies.commit();

  SoftmaxState state;
  Value zeroAcc = arith::ConstantOp::create(
      b,
      DenseElementsAttr::get(getAccumulatorType(b), b.getF32FloatAttr(0.0f)));
  state.out.assign(shape.mTiles * shape.dTiles, zeroAcc);
  state.rowMax.assign(shape.mTiles * 2,
                      b.f32(-std::numeric_limits<float>::infinity()));
  state.rowSum.resize(shape.sumsInShared ? 0 : softmax.getHeldSums());
  for (int64_t held = 0; held < softmax.getHeldSums(); ++held)
    softmax.setHeldSum(state, held, b.f32(0.0f));

  state = buildKeyBlocks(tile, blocks, blocks.lastBlockEnd, blocks.unmaskedEnd,
                         /*masked=*/true, state);
  state = buildKeyBlocks(tile, blocks, blocks.unmaskedEnd, blocks.unmaskedBegin,
                         /*masked=*/false, state);
  if (window.left)
    state = buildKeyBlocks(tile, blocks, blocks.unmaskedBegin,
                           blocks.firstBlock, /*masked=*/true, state);
  epilogue.build(tile, state);
}

/// Runs key blocks end - 1 down to begin, each with or without the mask.
SoftmaxState RowBlockSchedule::buildKeyBlocks(const TileCoordinates &tile,
                                              const KeyBlockWords &blocks,
                                              Value end, Value begin,
                                              bool masked,
                                              const SoftmaxState &state) {
  Value count = b.sub(end, begin);
  auto loop = scf::ForOp::create(b, b.i32(0), count, b.i32(1), state.flatten());
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value block = b.sub(b.sub(end, b.i32(1)), loop.getInductionVar());
  SoftmaxState current = SoftmaxState::unflatten(
      loop.getRegionIterArgs(), state.out.size(), state.rowMax.size());
  SoftmaxState next = buildKeyBlock(tile, blocks, block, masked, current);
  scf::YieldOp::create(b, next.flatten());
  b.setInsertionPointAfter(loop);
  return SoftmaxState::unflatten(loop.getResults(), state.out.size(),
                                 state.rowMax.size());
}

SoftmaxState RowBlockSchedule::buildKeyBlock(const TileCoordinates &tile,
                                             const KeyBlockWords &blocks,
                                             Value block, bool masked,
                                             const SoftmaxState &state) {
  Value keyBase = b.toIndex(b.mul(block, b.i32(shape.blockN)));
  Lanes lanes = Lanes::derive(b, shape, hideFromHoisting(b, threadId));
  // K_n has landed, and every warp is done reading V_{n+1}.
  copies.waitForAll();
  // Only the last key block can extend past Sk, and it comes first, in a
  // masked range.
  copies.copyKeyBlock(lanes, tile, valueTensor, tiles.v, block,
                      /*bounded=*/masked);
  copies.commit();

  SmallVector<Value> scores = mma.computeScores(lanes);
  if (shape.softcap)
    shape.softcap->apply(b, scores);
  if (masked) {
    // Packed query heads: G read anew in each masked block, not held
    // across the key loops (it spilled 4 bytes of the d128 kernel).
    TileCoordinates maskTile = tile;
    if (tile.queryGroup)
      maskTile.queryGroup = b.toIndex(getQueryGroup(
          b, func.getArgument(kQ), func.getArgument(kK), /*fresh=*/true));
    softmax.applyMask(lanes, maskTile, scores, keyBase);
  }

  // V_n has landed, and every warp is done reading K_n: prefetch K_{n-1}
  // under the softmax and P V.
  copies.waitForAll();
  Value more = b.sgt(block, blocks.firstBlock);
  scf::IfOp::create(b, more, [&](OpBuilder &, Location) {
    copies.copyKeyBlock(lanes, tile, keyTensor, tiles.k, b.sub(block, b.i32(1)),
                        /*bounded=*/false);
    copies.commit();
    scf::YieldOp::create(b);
  });

  SoftmaxState next = state;
  SmallVector<Value> probabilities = softmax.update(lanes, scores, next);
  mma.accumulateValues(lanes, probabilities, next.out);
  return next;
}

/// The kernel: the shared tiles, then the row block of each batch this CTA
/// computes.
void buildKernel(AttentionOp op, TileAttr tileAttr, gpu::GPUFuncOp func,
                 KernelBuilder &b) {
  KernelShape shape = KernelShape::get(op, tileAttr);
  AttentionWindow window = AttentionWindow::get(op);
  Value q = func.getArgument(kQ);
  SharedTiles tiles = SharedTiles::create(b, shape);
  Value threadId = b.word(gpu::ThreadIdOp::create(b, gpu::Dimension::x));
  Lanes lanes = Lanes::derive(b, shape, threadId);

  KeyRows keys = KeyRows::get(op, func, kLse);
  CtaCoordinates cta = CtaCoordinates::compute(
      b, q, func.getArgument(kK), keys, shape.blockM, op.getPackQueryHeads());
  TileCoordinates tile;
  tile.seqQ = cta.seqQ;
  tile.seqK = cta.seqK;
  tile.firstRow = cta.firstRow;
  tile.head = cta.head;
  tile.kvHead = cta.kvHead;
  tile.queryGroup = cta.queryGroup;

  AsyncCopy copies(b, shape, keys);
  WarpMma mma(b, shape, tiles);
  FragmentSoftmax softmax(b, shape, window, threadId, tiles.sums);
  Epilogue epilogue(
      b, shape, tiles, copies, softmax, threadId, func.getArgument(kO),
      op.getLse() ? func.getArgument(kLse) : Value(),
      op.getSinks() ? func.getArgument(getSinksArgument(op, kLse)) : Value());
  Value keyTensor = func.getArgument(kK), valueTensor = func.getArgument(kV);
  if (op.getKeyOffsets()) {
    keyTensor = AsyncCopy::viewRowsAsEntries(b, keyTensor);
    valueTensor = AsyncCopy::viewRowsAsEntries(b, valueTensor);
  }
  RowBlockSchedule schedule(b, shape, window, func, threadId, tiles, copies,
                            mma, softmax, epilogue, keyTensor, valueTensor);

  // Batches (with split_keys, o's entries: each key split of each batch;
  // with query_offsets, the packed sequences) stride by the grid's z
  // extent (at most 65535).
  SequenceRows sequences = SequenceRows::get(op, func, kLse);
  Value batch = sequences.getCount(b, q);
  Value entries =
      op.getSplitKeys() ? memref::DimOp::create(b, func.getArgument(kO), 0)
                        : batch;
  auto batches =
      scf::ForOp::create(b, gpu::BlockIdOp::create(b, gpu::Dimension::z),
                         entries, gpu::GridDimOp::create(b, gpu::Dimension::z));
  b.setInsertionPointToStart(batches.getBody());
  tile.setOutputBatch(b, batches.getInductionVar(), batch, entries,
                      op.getSplitKeys());
  sequences.place(b, tile, q, func.getArgument(kK));
  // With key_lengths, the copies of the block that holds the last key
  // zero-fill the rows past it (the first, masked, block: bounded).
  tile.limitKeys(b, keys.keyLengths);
  // A row block past a packed sequence's rows, or past a KV head's packed
  // query heads' rows, computes nothing (its copies and barriers are the
  // CTA's alone).
  Value holdsRows = tile.queryGroup ? b.slt(tile.firstRow, tile.seqQ)
                                    : sequences.holdsRows(b, tile);
  if (holdsRows) {
    auto inside = scf::IfOp::create(b, holdsRows, /*withElseRegion=*/false);
    b.setInsertionPointToStart(&inside.getThenRegion().front());
  }
  schedule.build(lanes, tile);
  b.setInsertionPointAfter(batches);
  gpu::ReturnOp::create(b);
}

/// One CTA per row block of each (batch, head): grid (ceil(Sq / block_m),
/// Hq, min(B, 65535)), batches striding by the grid's z extent (with
/// split_keys, o's S x B entries); the op's operands as memref
/// descriptors; the tile's shared memory.
LaunchContract getSm80LaunchContract(AttentionOp op, TileAttr tile) {
  LaunchContract contract = getAttentionLaunchContract(op, tile);
  // With query_offsets: max_query_length's row blocks of B + 1 entries
  // (the offsets' size; the kernel's batch loop stops at B).
  GridFactor rowBlocks{kQOperand, 2, static_cast<uint64_t>(tile.getBlockM())};
  GridFactor batchEntries{op.getSplitKeys() ? kOOperand : kQOperand, 0};
  if (op.getQueryOffsets()) {
    rowBlocks = {getMaxQueryLengthOperand(op), 0,
                 static_cast<uint64_t>(tile.getBlockM())};
    batchEntries = {getQueryOffsetsOperand(op), 0};
  }
  contract.grid = {GridAxis{{rowBlocks}}, GridAxis{{{kQOperand, 1}}},
                   GridAxis{{batchEntries}, kMaxGridDimY}};
  contract.parameters = getOperandParameters(op);
  return contract;
}

} // namespace

LogicalResult fmha::lowerAttentionToGPUSm80(AttentionOp op, TileAttr tile,
                                            gpu::GPUModuleOp kernels) {
  if (tile.getStages() != 1)
    return op.emitOpError("the sm_80 lowering keeps one K and one V buffer "
                          "whose loads alternate (FlashAttention-2): stages "
                          "must be 1, got ")
           << tile.getStages();
  // Packed sequences' schedules that the sm_80 kernel cannot hold: its
  // d128 kernel with both offsets spilled 40 bytes of its key loop with
  // either (the JIT asks for neither on sm_80).
  if (op.getQueryOffsets() && (op.getPackQueryHeads() || op.getSplitKeys())) {
    StringRef schedule =
        op.getPackQueryHeads() ? "pack_query_heads" : "split_keys";
    return op.emitOpError()
           << schedule
           << " with query_offsets is sm_90a's: the sm_80 kernel with both "
              "offsets at head dim 128 spilled 40 bytes of its key loop; drop "
           << schedule << " or lower for sm_90a";
  }

  gpu::GPUFuncOp func = createKernelFunc(op, kernels, "attention",
                                         getSm80LaunchContract(op, tile));
  KernelBuilder b(op.getLoc(), op.getContext());
  b.setInsertionPointToStart(&func.getBody().front());
  buildKernel(op, tile, func, b);
  replaceByLaunch(op, func);
  return success();
}
