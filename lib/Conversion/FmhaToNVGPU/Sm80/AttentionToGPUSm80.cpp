//===- AttentionToGPU.cpp - fmha.attention for sm_80 as a gpu.func --------===//
//
// Part of FlashCore. Lowers fmha.attention with an sm_80 tile to one
// FlashAttention-2 forward kernel (KERNELS.md section 1) plus a
// gpu.launch_func in its place.
//
// Launch (getSm80LaunchContract): the parameters are the op's memref
// operands in order (q, k, v, o, then lse if present), each an MLIR memref
// descriptor, so every size but D and every stride is a launch argument
// (BHSD and BSHD alike); one CTA per row block of each (batch, head).
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
// copy of the body without the mask. Shared tiles are rows of D elements in
// 16-byte chunks, chunk c of row r stored at c ^ (r mod 8) (Swizzle<3,3,3>):
// the 8 rows one ldmatrix phase reads hit 8 different bank groups.
//
//===----------------------------------------------------------------------===//

#include "AttentionCommon.h"
#include "AttentionLowerings.h"
#include "KernelLaunch.h"
#include "TileSchedule.h"
#include "fmha/Dialect/Fmha/TileConfig.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/SymbolTable.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::fmha;

namespace {

constexpr int64_t kThreadsPerWarp = 32;
/// mma.sync m16n8k16: the tile of one accumulator fragment is 16 x 8.
constexpr int64_t kMmaM = 16, kMmaN = 8, kMmaK = 16;
/// One cp.async, one ldmatrix row and one vector store move 16 bytes.
constexpr int64_t kChunkBytes = 16;
/// Rows of one swizzle period: chunk c of row r lives at c ^ (r % 8).
constexpr int64_t kSwizzleRows = 8;

/// Registers of one warp's fragments of the running state: O, and the row
/// max and row sum of the online softmax, in a fixed order so that they can
/// be carried through scf.for.
struct SoftmaxState {
  /// [mTile][dTile] accumulators, vector<2x2xf32> each.
  SmallVector<Value> out;
  /// [mTile][half] (slot 2 m + half): the rows g and g + 8 of each m16
  /// tile this lane owns.
  SmallVector<Value> rowMax;
  /// The sums of the slots this lane holds (heldSums); empty where they
  /// live in shared memory (sumsInShared).
  SmallVector<Value> rowSum;

  SmallVector<Value> flatten() const {
    SmallVector<Value> values(out);
    llvm::append_range(values, rowMax);
    llvm::append_range(values, rowSum);
    return values;
  }
  static SoftmaxState unflatten(ValueRange values, size_t outCount,
                                size_t rowCount) {
    SoftmaxState state;
    state.out.assign(values.begin(), values.begin() + outCount);
    state.rowMax.assign(values.begin() + outCount,
                        values.begin() + outCount + rowCount);
    state.rowSum.assign(values.begin() + outCount + rowCount, values.end());
    return state;
  }
};

/// Builds the body of one sm_80 attention kernel.
class AttentionKernelBuilder : KernelBuilderBase {
public:
  AttentionKernelBuilder(AttentionOp op, TileAttr tile, gpu::GPUFuncOp func,
                         ImplicitLocOpBuilder &b)
      : KernelBuilderBase(b), op(op), func(func) {
    blockM = tile.getBlockM();
    blockN = tile.getBlockN();
    warps = tile.getWarps();
    headDim = op.getHeadDim();
    elementType = cast<MemRefType>(op.getQ().getType()).getElementType();
    chunkElements = kChunkBytes / (elementType.getIntOrFloatBitWidth() / 8);
    rowChunks = headDim / chunkElements;
    mTiles = blockM / (kMmaM * warps);
    nTiles = blockN / kMmaN;
    dTiles = headDim / kMmaN;
    scale = op.getScaleOrDefault();
    scaleLog2 = scale * static_cast<float>(M_LOG2E);
    window = AttentionWindow::get(op);
    AttentionTiling tiling = tile.getAttentionTiling();
    sumsInShared = getSm80RowSumSharedBytes(tiling, headDim) != 0;
    copyPassesShareBase = getSm80AccumulatorRegisters(tiling, headDim) <
                          kSm80AccumulatorRegisterBudget;
  }

  void build() {
    Value q = func.getArgument(0);
    setUpSharedTiles();
    threadId = word(gpu::ThreadIdOp::create(b, gpu::Dimension::x));
    deriveLaneValues(threadId);

    CtaCoordinates cta =
        CtaCoordinates::compute(b, q, func.getArgument(1), blockM);
    seqQ = cta.seqQ;
    seqK = cta.seqK;
    firstRow = cta.firstRow;
    head = cta.head;
    kvHead = cta.kvHead;

    Value batch = memref::DimOp::create(b, q, 0);
    auto batches =
        scf::ForOp::create(b, gpu::BlockIdOp::create(b, gpu::Dimension::z),
                           batch, gpu::GridDimOp::create(b, gpu::Dimension::z));
    b.setInsertionPointToStart(batches.getBody());
    batchIndex = batches.getInductionVar();
    buildRowBlock();
    b.setInsertionPointAfter(batches);
    gpu::ReturnOp::create(b);
  }

private:
  /// Sets the per-thread values every phase uses (lane, warp and ldmatrix
  /// coordinates) from \p id. Each phase (the prologue, each key block, the
  /// epilogue) derives them from its own hidden copy of the thread id:
  /// otherwise LLVM hoists every per-thread address out of the key loops and
  /// shares the epilogue's with the prologue's, keeping hundreds of values
  /// live across the loops (spills at head dim 128). Recomputing them costs
  /// a few integer ops per key block.
  void deriveLaneValues(Value id) {
    tid = id;
    Value lane = arith::RemUIOp::create(b, tid, i32(kThreadsPerWarp));
    warpRow = arith::MulIOp::create(
        b, arith::DivUIOp::create(b, tid, i32(kThreadsPerWarp)),
        i32(mTiles * kMmaM));
    quadRow = arith::DivUIOp::create(b, lane, i32(4));
    quadCol = arith::RemUIOp::create(b, lane, i32(4));
    // The lane's row and 16-byte chunk in each ldmatrix.x4 (PTX ISA,
    // "ldmatrix"): lane l addresses row l % 8 of matrix l / 8.
    Value laneMod8 = arith::RemUIOp::create(b, lane, i32(8));
    Value matrix = arith::DivUIOp::create(b, lane, i32(8));
    Value matrixBit0 = arith::RemUIOp::create(b, matrix, i32(2));
    Value matrixBit1 = arith::DivUIOp::create(b, matrix, i32(2));
    // A of Q K^T (Q rows): matrices (rows 0-7, k 0-7), (8-15, 0-7),
    // (0-7, 8-15), (8-15, 8-15).
    queryLanes = getLaneMatrices(
        arith::AddIOp::create(b, warpRow,
                              arith::RemUIOp::create(b, lane, i32(16))),
        matrixBit1);
    // B of Q K^T (K rows are its columns): (n 0-7, k 0-7), (0-7, 8-15),
    // (8-15, 0-7), (8-15, 8-15): two n8 tiles of one k16 step.
    keyLanes = getLaneMatrices(
        arith::AddIOp::create(b, laneMod8,
                              arith::MulIOp::create(b, matrixBit1, i32(8))),
        matrixBit0);
    // B of P V, transposed: (k 0-7, d 0-7), (8-15, 0-7), (0-7, 8-15),
    // (8-15, 8-15): two d8 tiles of one k16 step.
    valueLanes = getLaneMatrices(
        arith::AddIOp::create(b, laneMod8,
                              arith::MulIOp::create(b, matrixBit0, i32(8))),
        matrixBit1);
  }

  //===--------------------------------------------------------------------===//
  // The schedule
  //===--------------------------------------------------------------------===//

  void buildRowBlock() {
    KeyBlockRange range = KeyBlockRange::compute(b, seqQ, seqK, firstRow,
                                                 blockM, blockN, window);
    // Block numbers (all in [0, ceil(Sk / block_n)]) and the key loops in
    // i32: 64-bit bounds carried through the loops took two registers each,
    // and the d64 and d256 kernels spilled them. Sk < 2^31 keys (2^31 rows
    // of K would be 256 GiB at head dim 64).
    firstBlock = word(range.firstBlock);
    lastBlockEnd = word(range.lastBlockEnd);
    unmaskedBegin = word(range.unmaskedBegin);
    unmaskedEnd = word(range.unmaskedEnd);

    // Prologue: Q and the first (last-indexed) K block in one group.
    copyTile(func.getArgument(0), head, firstRow, seqQ, sharedQ, blockM,
             /*bounded=*/true);
    Value anyBlock = arith::CmpIOp::create(b, arith::CmpIPredicate::sgt,
                                           lastBlockEnd, firstBlock);
    scf::IfOp::create(b, anyBlock, [&](OpBuilder &, Location) {
      copyKeyBlock(func.getArgument(1), sharedK,
                   arith::SubIOp::create(b, lastBlockEnd, i32(1)),
                   /*bounded=*/true);
      scf::YieldOp::create(b);
    });
    commitCopies();

    SoftmaxState state;
    Value zeroAcc = arith::ConstantOp::create(
        b, DenseElementsAttr::get(getAccType(), b.getF32FloatAttr(0.0f)));
    state.out.assign(mTiles * dTiles, zeroAcc);
    state.rowMax.assign(mTiles * 2,
                        f32(-std::numeric_limits<float>::infinity()));
    state.rowSum.resize(sumsInShared ? 0 : heldSums());
    for (int64_t held = 0; held < heldSums(); ++held)
      setHeldSum(state, held, f32(0.0f));

    state = buildKeyBlocks(lastBlockEnd, unmaskedEnd, /*masked=*/true, state);
    state = buildKeyBlocks(unmaskedEnd, unmaskedBegin, /*masked=*/false, state);
    if (window.left)
      state =
          buildKeyBlocks(unmaskedBegin, firstBlock, /*masked=*/true, state);
    buildEpilogue(state);
  }

  /// Runs key blocks end - 1 down to begin, each with or without the mask.
  SoftmaxState buildKeyBlocks(Value end, Value begin, bool masked,
                              const SoftmaxState &state) {
    Value count = arith::SubIOp::create(b, end, begin);
    auto loop =
        scf::ForOp::create(b, i32(0), count, i32(1), state.flatten());
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value block = arith::SubIOp::create(
        b, arith::SubIOp::create(b, end, i32(1)), loop.getInductionVar());
    SoftmaxState current = SoftmaxState::unflatten(
        loop.getRegionIterArgs(), state.out.size(), state.rowMax.size());
    SoftmaxState next = buildKeyBlock(block, masked, current);
    scf::YieldOp::create(b, next.flatten());
    b.setInsertionPointAfter(loop);
    return SoftmaxState::unflatten(loop.getResults(), state.out.size(),
                                   state.rowMax.size());
  }

  SoftmaxState buildKeyBlock(Value block, bool masked,
                             const SoftmaxState &state) {
    Value keyBase = toIndex(arith::MulIOp::create(b, block, i32(blockN)));
    deriveLaneValues(hideFromHoisting(b, threadId));
    // K_n has landed, and every warp is done reading V_{n+1}.
    waitForCopies();
    // Only the last key block can extend past Sk, and it comes first, in a
    // masked range.
    copyKeyBlock(func.getArgument(2), sharedV, block, /*bounded=*/masked);
    commitCopies();

    SmallVector<Value> scores = computeScores();
    if (masked)
      applyMask(scores, keyBase);

    // V_n has landed, and every warp is done reading K_n: prefetch K_{n-1}
    // under the softmax and P V.
    waitForCopies();
    Value more =
        arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, block, firstBlock);
    scf::IfOp::create(b, more, [&](OpBuilder &, Location) {
      copyKeyBlock(func.getArgument(1), sharedK,
                   arith::SubIOp::create(b, block, i32(1)),
                   /*bounded=*/false);
      commitCopies();
      scf::YieldOp::create(b);
    });

    SoftmaxState next = state;
    SmallVector<Value> probabilities = updateSoftmax(scores, next);
    accumulateValues(probabilities, next.out);
    return next;
  }

  //===--------------------------------------------------------------------===//
  // Copies
  //===--------------------------------------------------------------------===//

  void setUpSharedTiles() {
    MLIRContext *context = b.getContext();
    auto workgroup = gpu::AddressSpaceAttr::get(
        context, gpu::GPUDialect::getWorkgroupAddressSpace());
    Value bytes = gpu::DynamicSharedMemoryOp::create(
        b, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), nullptr,
                           workgroup));
    int64_t elementBytes = elementType.getIntOrFloatBitWidth() / 8;
    auto tileAt = [&](int64_t rows, int64_t byteOffset) -> Value {
      auto type =
          MemRefType::get({rows, headDim}, elementType, nullptr, workgroup);
      return memref::ViewOp::create(b, type, bytes, index(byteOffset),
                                    ValueRange{});
    };
    sharedQ = tileAt(blockM, 0);
    sharedK = tileAt(blockN, blockM * headDim * elementBytes);
    sharedV = tileAt(blockN, (blockM + blockN) * headDim * elementBytes);
    if (sumsInShared)
      sumsBase = arith::AddIOp::create(
          b, word(memref::ExtractAlignedPointerAsIndexOp::create(b, bytes)),
          i32((blockM + 2 * blockN) * headDim * elementBytes));
  }

  /// The running row sum \p held of this lane (heldSums): a loop-carried
  /// value of \p state, or, where the tile leaves ptxas too few registers
  /// to carry it (getSm80RowSumSharedBytes), a slot in shared memory.
  Value getHeldSum(const SoftmaxState &state, int64_t held) {
    if (!sumsInShared)
      return state.rowSum[held];
    return LLVM::LoadOp::create(b, b.getF32Type(), heldSumPointer(held),
                                /*alignment=*/4, /*isVolatile=*/true);
  }
  void setHeldSum(SoftmaxState &state, int64_t held, Value sum) {
    if (!sumsInShared) {
      state.rowSum[held] = sum;
      return;
    }
    LLVM::StoreOp::create(b, sum, heldSumPointer(held), /*alignment=*/4,
                          /*isVolatile=*/true);
  }

  /// Slot \p held of thread t lives at sums + 4 (held * threads + t), so
  /// that a warp's accesses hit 32 banks. Volatile, so that LLVM does not
  /// promote the slot back to a loop-carried register.
  Value heldSumPointer(int64_t held) {
    Value address = arith::AddIOp::create(
        b, sumsBase,
        arith::MulIOp::create(
            b,
            arith::AddIOp::create(
                b, threadId,
                i32(held * warps * kThreadsPerWarp)),
            i32(4)));
    return LLVM::IntToPtrOp::create(
        b, LLVM::LLVMPointerType::get(b.getContext(), 3), address);
  }

  /// Starts the cp.async copy of rows [first, first + rows) of (batch, head)
  /// of \p global into \p shared. When \p bounded, rows at or past \p valid
  /// are zero-filled (their source address clamped to a valid row, never
  /// read) if the tile extends that far; otherwise the caller knows that
  /// every row is valid. The bounded copy, a clamp and a select per row,
  /// runs only in the tile that needs it: in the others its registers would
  /// be pressure for nothing.
  void copyTile(Value global, Value headIndex, Value first, Value valid,
                Value shared, int64_t rows, bool bounded) {
    if (!bounded) {
      emitTileCopy(global, headIndex, first, valid, shared, rows,
                   /*bounded=*/false);
      return;
    }
    Value inside = arith::CmpIOp::create(
        b, arith::CmpIPredicate::sle,
        arith::AddIOp::create(b, first, index(rows)), valid);
    scf::IfOp::create(
        b, inside,
        [&](OpBuilder &, Location) {
          emitTileCopy(global, headIndex, first, valid, shared, rows,
                       /*bounded=*/false);
          scf::YieldOp::create(b);
        },
        [&](OpBuilder &, Location) {
          emitTileCopy(global, headIndex, first, valid, shared, rows,
                       /*bounded=*/true);
          scf::YieldOp::create(b);
        });
  }

  void emitTileCopy(Value global, Value headIndex, Value first, Value valid,
                    Value shared, int64_t rows, bool bounded) {
    // Each thread copies one chunk column of rows tid / rowChunks + i *
    // rowsPerPass: whole rows per pass, and, when rowsPerPass is a multiple
    // of the swizzle period, one swizzled column for all of them.
    int64_t threads = warps * kThreadsPerWarp;
    assert(threads % rowChunks == 0 && "a pass covers whole rows");
    int64_t rowsPerPass = threads / rowChunks;
    Value firstLocalRow = arith::DivUIOp::create(b, tid, i32(rowChunks));
    Value chunk = arith::RemUIOp::create(b, tid, i32(rowChunks));
    Value column =
        toIndex(arith::MulIOp::create(b, chunk, i32(chunkElements)));
    Value lastValid = arith::SubIOp::create(b, valid, index(1));
    Value sameSwizzle = rowsPerPass % kSwizzleRows == 0
                            ? swizzle(firstLocalRow, chunk)
                            : Value();
    // Where the accumulators leave registers to spare (copyPassesShareBase),
    // every pass derives from one hidden copy of the thread's row, its
    // source row a constant past the first, which LLVM and ptxas fold into
    // immediate offsets (one 64-bit base per two passes in the d64 SASS,
    // where each pass took five instructions). Elsewhere each pass starts from
    // its own hidden copy, so that its address arithmetic stays between the
    // previous pass's copy and its own: with one base, ptxas carries the
    // passes' addresses through the key loop, and d128 (128x64, 4 warps)
    // spills 36 bytes in it.
    Value sharedRow, sharedSourceRow;
    if (copyPassesShareBase) {
      sharedRow = hideFromHoisting(b, firstLocalRow);
      sharedSourceRow = arith::AddIOp::create(b, first, toIndex(sharedRow));
    }
    for (int64_t pass = 0; pass * rowsPerPass < rows; ++pass) {
      Value row = arith::AddIOp::create(
          b, sharedRow ? sharedRow : hideFromHoisting(b, firstLocalRow),
          i32(pass * rowsPerPass));
      Value sourceRow = sharedRow
                            ? arith::AddIOp::create(b, sharedSourceRow,
                                                    index(pass * rowsPerPass))
                            : arith::AddIOp::create(b, first, toIndex(row));
      Value sourceElements;
      if (bounded) {
        Value inBounds = arith::CmpIOp::create(b, arith::CmpIPredicate::slt,
                                               sourceRow, valid);
        sourceRow = arith::SelectOp::create(b, inBounds, sourceRow, lastValid);
        sourceElements = arith::SelectOp::create(
            b, inBounds, index(chunkElements), index(0));
      }
      SmallVector<Value, 4> source = {hideFromHoisting(b, batchIndex),
                                      headIndex, sourceRow, column};
      SmallVector<Value, 2> destination = {
          toIndex(row),
          toIndex(sameSwizzle ? sameSwizzle : swizzle(row, chunk))};
      nvgpu::DeviceAsyncCopyOp::create(
          b, nvgpu::DeviceAsyncTokenType::get(b.getContext()), shared,
          destination, global, source, b.getIndexAttr(chunkElements),
          sourceElements, b.getUnitAttr());
    }
  }

  /// Copies key block \p block (i32) of \p global (K or V) into \p shared;
  /// \p bounded when the block may extend past Sk.
  void copyKeyBlock(Value global, Value shared, Value block, bool bounded) {
    // The (batch, head) part of the source address derives from hidden
    // copies (here and in emitTileCopy): hoisted out of the key loops, it
    // is a 64-bit register pair per copy held across the GEMMs.
    copyTile(global, hideFromHoisting(b, kvHead),
             toIndex(arith::MulIOp::create(b, block, i32(blockN))), seqK,
             shared, blockN, bounded);
  }

  /// Starts a cp.async group of the copies issued since the last one.
  void commitCopies() {
    nvgpu::DeviceAsyncCreateGroupOp::create(
        b, nvgpu::DeviceAsyncTokenType::get(b.getContext()), ValueRange{});
  }

  /// Waits for every cp.async group of this thread, then for every thread.
  /// (nvgpu.device_async_wait needs the token of the group it waits for,
  /// which was created in the previous iteration; the wait for all groups
  /// needs none.)
  void waitForCopies() {
    NVVM::CpAsyncWaitGroupOp::create(b, b.getI32IntegerAttr(0));
    gpu::BarrierOp::create(b);
  }

  /// The column of 16-byte chunk \p chunk of row \p row in a swizzled tile.
  Value swizzle(Value row, Value chunk) {
    Value phase = arith::RemUIOp::create(b, row, i32(kSwizzleRows));
    return arith::MulIOp::create(b, arith::XOrIOp::create(b, chunk, phase),
                                 i32(chunkElements));
  }

  //===--------------------------------------------------------------------===//
  // GEMMs
  //===--------------------------------------------------------------------===//

  VectorType getAccType() { return VectorType::get({2, 2}, b.getF32Type()); }

  /// How one lane addresses the ldmatrix.x4 loads of one operand: its row
  /// (plus multiples of 8 added per load) and its 16-byte chunk (plus even
  /// numbers 2k per load). The swizzled column of chunk 2k + c in a row r is
  /// 8 * (k / 4) chunks plus ((2 (k % 4) + c) ^ (r % 8)): four per-lane
  /// values plus constants, so that each load is one of four base registers
  /// and an immediate offset (given that they are not hoisted: see
  /// deriveLaneValues).
  struct LaneMatrices {
    Value row;
    std::array<Value, 4> columns;
  };

  LaneMatrices getLaneMatrices(Value row, Value chunk) {
    LaneMatrices lanes;
    lanes.row = row;
    Value phase = arith::RemUIOp::create(b, row, i32(kSwizzleRows));
    for (int64_t k = 0; k < 4; ++k)
      lanes.columns[k] = arith::MulIOp::create(
          b,
          arith::XOrIOp::create(
              b, arith::AddIOp::create(b, chunk, i32(2 * k)), phase),
          i32(chunkElements));
    return lanes;
  }

  /// ldmatrix.x4 at rows lanes.row + \p rowOffset (a multiple of 8) and
  /// chunks lanes' + 2 * \p chunkPair.
  Value loadMatrices(Value shared, const LaneMatrices &lanes,
                     int64_t rowOffset, int64_t chunkPair, bool transpose) {
    Value row = arith::AddIOp::create(b, lanes.row, i32(rowOffset));
    Value column =
        arith::AddIOp::create(b, lanes.columns[chunkPair % 4],
                              i32(chunkPair / 4 * kSwizzleRows *
                                  chunkElements));
    SmallVector<Value, 2> at = {toIndex(row), toIndex(column)};
    return nvgpu::LdMatrixOp::create(
        b, VectorType::get({4, 2}, elementType), shared, at, transpose,
        /*numTiles=*/4);
  }

  /// Rows \p first and \p first + 1 of an ldmatrix.x4 result: the B fragment
  /// of one n8 tile.
  Value takeFragmentB(Value matrices, int64_t first) {
    Value fragment = ub::PoisonOp::create(
        b, VectorType::get({2, 2}, elementType));
    for (int64_t i = 0; i < 2; ++i)
      fragment = vector::InsertOp::create(
          b, vector::ExtractOp::create(b, matrices, first + i), fragment, i);
    return fragment;
  }

  /// acc + a * b on one m16n8k16 tile.
  Value mma(Value a, Value bFragment, Value acc) {
    if (elementType.isF16())
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
        std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16,
                                      NVVM::MMATypes::bf16},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                       NVVM::MMALayout::col});
    SmallVector<Value, 4> elements;
    for (int64_t i = 0; i < 4; ++i)
      elements.push_back(LLVM::ExtractValueOp::create(b, result, i));
    return vector::FromElementsOp::create(b, getAccType(), elements);
  }

  /// S = Q K^T for this warp's rows: [mTile][nTile] accumulators.
  SmallVector<Value> computeScores() {
    Value zeroAcc = arith::ConstantOp::create(
        b, DenseElementsAttr::get(getAccType(), b.getF32FloatAttr(0.0f)));
    SmallVector<Value> scores(mTiles * nTiles, zeroAcc);
    for (int64_t k = 0; k < headDim / kMmaK; ++k) {
      SmallVector<Value> queries;
      for (int64_t m = 0; m < mTiles; ++m)
        queries.push_back(loadMatrices(sharedQ, queryLanes, m * kMmaM, k,
                                       /*transpose=*/false));
      for (int64_t n = 0; n < nTiles; n += 2) {
        Value keys = loadMatrices(sharedK, keyLanes, n * kMmaN, k,
                                  /*transpose=*/false);
        Value low = takeFragmentB(keys, 0), high = takeFragmentB(keys, 2);
        for (int64_t m = 0; m < mTiles; ++m) {
          Value &s0 = scores[m * nTiles + n], &s1 = scores[m * nTiles + n + 1];
          s0 = mma(queries[m], low, s0);
          s1 = mma(queries[m], high, s1);
        }
      }
    }
    return scores;
  }

  /// O += P V_n for this warp's rows; \p probabilities are [mTile][k16]
  /// A fragments.
  void accumulateValues(ArrayRef<Value> probabilities,
                        SmallVectorImpl<Value> &out) {
    int64_t kSteps = blockN / kMmaK;
    for (int64_t k = 0; k < kSteps; ++k)
      for (int64_t d = 0; d < dTiles; d += 2) {
        Value values = loadMatrices(sharedV, valueLanes, k * kMmaK, d / 2,
                                    /*transpose=*/true);
        Value low = takeFragmentB(values, 0), high = takeFragmentB(values, 2);
        for (int64_t m = 0; m < mTiles; ++m) {
          Value p = probabilities[m * kSteps + k];
          out[m * dTiles + d] = mma(p, low, out[m * dTiles + d]);
          out[m * dTiles + d + 1] = mma(p, high, out[m * dTiles + d + 1]);
        }
      }
  }

  //===--------------------------------------------------------------------===//
  // Masking and the online softmax
  //===--------------------------------------------------------------------===//

  /// The query row of half \p half of m16 tile \p m that this lane holds.
  Value getLaneRow(int64_t m, int64_t half) {
    return arith::AddIOp::create(
        b, firstRow,
        toIndex(arith::AddIOp::create(
            b, warpRow,
            arith::AddIOp::create(b, quadRow, i32(m * kMmaM + half * 8)))));
  }

  /// Sets scores of invisible keys (past Sk, or outside the causal or
  /// window bounds of their row) to -inf.
  void applyMask(SmallVectorImpl<Value> &scores, Value keyBase) {
    // This lane's columns in each n8 tile are 2t and 2t + 1.
    Value laneKey = arith::AddIOp::create(
        b, keyBase, toIndex(arith::MulIOp::create(b, quadCol, i32(2))));
    Value minusInf = f32(-std::numeric_limits<float>::infinity());
    // Sk and Sk - Sq read anew in each masked block: derived once, they and
    // what derives from them are 64-bit values held across every key loop.
    Value keys = hideFromHoisting(b, seqK);
    Value diagonal =
        arith::SubIOp::create(b, keys, hideFromHoisting(b, seqQ));
    for (int64_t m = 0; m < mTiles; ++m)
      for (int64_t half = 0; half < 2; ++half) {
        RowMask mask = RowMask::compute(b, getLaneRow(m, half), laneKey, keys,
                                        diagonal, blockN, window);
        for (int64_t n = 0; n < nTiles; ++n) {
          Value &tile = scores[m * nTiles + n];
          for (int64_t e = 0; e < 2; ++e) {
            Value hidden = mask.hides(b, n * kMmaN + e);
            SmallVector<int64_t, 2> at = {half, e};
            Value score = vector::ExtractOp::create(b, tile, at);
            tile = vector::InsertOp::create(
                b, arith::SelectOp::create(b, hidden, minusInf, score), tile,
                at);
          }
        }
      }
  }

  /// Folds S into the running max and sum, rescales O, and returns
  /// P = exp2(S * scale * log2 e - max) as [mTile][k16] A fragments.
  SmallVector<Value> updateSoftmax(ArrayRef<Value> scores,
                                   SoftmaxState &state) {
    // [mTile][nTile][half] rows of 2 probabilities, in f32.
    SmallVector<Value> rows(mTiles * nTiles * 2);
    // Per slot: this block's sum of the row (quad-reduced), and alpha.
    SmallVector<Value> blockSums, alphas;
    for (int64_t m = 0; m < mTiles; ++m)
      for (int64_t half = 0; half < 2; ++half) {
        int64_t slot = m * 2 + half;
        // This lane's scores of the row: 2 per n8 tile.
        SmallVector<Value> row;
        for (int64_t n = 0; n < nTiles; ++n) {
          Value pair =
              vector::ExtractOp::create(b, scores[m * nTiles + n], half);
          for (int64_t e = 0; e < 2; ++e)
            row.push_back(vector::ExtractOp::create(b, pair, e));
        }
        RowSoftmax update = RowSoftmax::update(b, row, state.rowMax[slot],
                                               /*oldSum=*/Value(), scaleLog2);
        for (int64_t n = 0; n < nTiles; ++n)
          rows[(m * nTiles + n) * 2 + half] = vector::FromElementsOp::create(
              b, VectorType::get({2}, b.getF32Type()),
              ArrayRef<Value>(update.probabilities).slice(2 * n, 2));
        state.rowMax[slot] = update.max;
        blockSums.push_back(reduceOverQuad(b, update.sum, /*max=*/false));
        alphas.push_back(update.alpha);
        Value alphaPair = vector::BroadcastOp::create(
            b, VectorType::get({2}, b.getF32Type()), update.alpha);
        for (int64_t d = 0; d < dTiles; ++d) {
          Value &acc = state.out[m * dTiles + d];
          Value scaled = arith::MulFOp::create(
              b, vector::ExtractOp::create(b, acc, half), alphaPair);
          acc = vector::InsertOp::create(b, scaled, acc, half);
        }
      }

    // Each lane keeps the running sums of the slots it holds (heldSums).
    for (int64_t held = 0; held < heldSums(); ++held)
      setHeldSum(state, held,
                 math::FmaOp::create(b, getHeldSum(state, held),
                                     pickHeld(alphas, held),
                                     pickHeld(blockSums, held)));

    // An m16n8k16 A fragment is rows (g, k 0-7), (g + 8, k 0-7),
    // (g, k 8-15), (g + 8, k 8-15): accumulator tiles 2k and 2k + 1 as they
    // are, rounded to the element type.
    auto pairType = VectorType::get({2}, elementType);
    SmallVector<Value> fragments;
    for (int64_t m = 0; m < mTiles; ++m)
      for (int64_t k = 0; k < blockN / kMmaK; ++k) {
        Value fragment =
            ub::PoisonOp::create(b, VectorType::get({4, 2}, elementType));
        for (int64_t i = 0; i < 4; ++i) {
          int64_t n = 2 * k + i / 2, half = i % 2;
          Value pair = arith::TruncFOp::create(
              b, pairType, rows[(m * nTiles + n) * 2 + half]);
          fragment = vector::InsertOp::create(b, pair, fragment, i);
        }
        fragments.push_back(fragment);
      }
    return fragments;
  }

  /// The running row sums a lane carries through the key loops. The four
  /// lanes of a quad share rows (two per m16 tile), so lane q holds the sums
  /// of slots q, q + 4, ... only, quad-reduced each block: one register at
  /// two m16 tiles instead of four, for eight shuffles per key block. (At
  /// head dim 128 ptxas kept even that one in local memory, so there it
  /// lives in shared memory: getHeldSum.)
  int64_t heldSums() const { return (mTiles * 2 + 3) / 4; }

  /// Of \p perSlot (one value per slot, the same in every lane of a quad),
  /// the one of slot 4 * held + this lane's quad column.
  Value pickHeld(ArrayRef<Value> perSlot, int64_t held) {
    Value picked = perSlot[4 * held];
    for (int64_t q = 1; q < 4 && 4 * held + q < (int64_t)perSlot.size(); ++q)
      picked = arith::SelectOp::create(
          b,
          arith::CmpIOp::create(b, arith::CmpIPredicate::eq, quadCol, i32(q)),
          perSlot[4 * held + q], picked);
    return picked;
  }

  //===--------------------------------------------------------------------===//
  // Epilogue
  //===--------------------------------------------------------------------===//

  void buildEpilogue(const SoftmaxState &state) {
    // O is staged in the Q tile. A row block that sees no key block (causal
    // or windowed rows before the first key) never waited for its Q copy,
    // and a thread's copies land in other warps' rows: wait for them all.
    waitForCopies();
    deriveLaneValues(hideFromHoisting(b, threadId));
    Value zero = f32(0.0f), one = f32(1.0f);
    Value inf = f32(std::numeric_limits<float>::infinity());
    Value lse = op.getLse() ? func.getArgument(4) : Value();
    auto pairType = VectorType::get({2}, elementType);
    SmallVector<Value> rowLse;
    for (int64_t m = 0; m < mTiles; ++m)
      for (int64_t half = 0; half < 2; ++half) {
        int64_t slot = m * 2 + half;
        // The lane of the quad that holds the slot's sum.
        Value sum = gpu::ShuffleOp::create(
                        b, getHeldSum(state, slot / 4),
                        arith::AddIOp::create(
                            b, arith::MulIOp::create(b, quadRow, i32(4)),
                            i32(slot % 4)),
                        i32(kThreadsPerWarp), gpu::ShuffleMode::IDX)
                        .getShuffleResult();
        // A row that saw no key has sum 0: O = 0 and LSE = +inf.
        Value empty =
            arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, sum, zero);
        Value inverse = arith::SelectOp::create(
            b, empty, zero, arith::DivFOp::create(b, one, sum));
        Value rowRow = arith::AddIOp::create(
            b, warpRow,
            arith::AddIOp::create(b, quadRow, i32(m * kMmaM + half * 8)));
        Value inversePair = vector::BroadcastOp::create(
            b, VectorType::get({2}, b.getF32Type()), inverse);
        // O rows go to the (now unused) Q tile, then out in 16-byte rows.
        for (int64_t d = 0; d < dTiles; ++d) {
          Value pair = vector::ExtractOp::create(
              b, state.out[m * dTiles + d], half);
          Value rounded = arith::TruncFOp::create(
              b, pairType, arith::MulFOp::create(b, pair, inversePair));
          Value column = arith::AddIOp::create(
              b, swizzle(rowRow, i32(d)),
              arith::MulIOp::create(b, quadCol, i32(2)));
          vector::StoreOp::create(b, rounded, sharedQ,
                                  ValueRange{toIndex(rowRow), toIndex(column)});
        }
        if (lse) {
          Value logSum = math::LogOp::create(b, sum);
          rowLse.push_back(arith::SelectOp::create(
              b, empty, inf,
              math::FmaOp::create(b, state.rowMax[slot], f32(scale),
                                  logSum)));
        }
      }
    gpu::BarrierOp::create(b);
    storeOutputTile();

    if (lse) {
      // The lane holding columns 0-1 of a row writes its LSE.
      Value firstLane = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                              quadCol, i32(0));
      scf::IfOp::create(b, firstLane, [&](OpBuilder &, Location) {
        for (int64_t m = 0; m < mTiles; ++m)
          for (int64_t half = 0; half < 2; ++half) {
            Value row = getLaneRow(m, half);
            Value valid = arith::CmpIOp::create(b, arith::CmpIPredicate::slt,
                                                row, seqQ);
            scf::IfOp::create(b, valid, [&](OpBuilder &, Location) {
              SmallVector<Value, 3> at = {batchIndex, head, row};
              memref::StoreOp::create(b, rowLse[m * 2 + half], lse, at);
              scf::YieldOp::create(b);
            });
          }
        scf::YieldOp::create(b);
      });
    }
    // The next batch's Q copy overwrites the tile others may still read.
    gpu::BarrierOp::create(b);
  }

  /// Copies the output tile from shared memory to O, rows below Sq only.
  void storeOutputTile() {
    Value out = func.getArgument(3);
    int64_t threads = warps * kThreadsPerWarp;
    int64_t chunks = blockM * rowChunks;
    auto chunkType = VectorType::get({chunkElements}, elementType);
    for (int64_t start = 0; start < chunks; start += threads) {
      Value chunkIndex = arith::AddIOp::create(b, tid, i32(start));
      Value row = arith::DivUIOp::create(b, chunkIndex, i32(rowChunks));
      Value chunk = arith::RemUIOp::create(b, chunkIndex, i32(rowChunks));
      Value globalRow = arith::AddIOp::create(b, firstRow, toIndex(row));
      Value valid = arith::CmpIOp::create(b, arith::CmpIPredicate::slt,
                                          globalRow, seqQ);
      if (start + threads > chunks)
        valid = arith::AndIOp::create(
            b, valid,
            arith::CmpIOp::create(b, arith::CmpIPredicate::ult, chunkIndex,
                                  i32(chunks)));
      scf::IfOp::create(b, valid, [&](OpBuilder &, Location) {
        SmallVector<Value, 2> from = {toIndex(row),
                                      toIndex(swizzle(row, chunk))};
        Value data = vector::LoadOp::create(b, chunkType, sharedQ, from);
        SmallVector<Value, 4> to = {
            batchIndex, head, globalRow,
            toIndex(arith::MulIOp::create(b, chunk, i32(chunkElements)))};
        vector::StoreOp::create(b, data, out, to, /*nontemporal=*/false,
                                llvm::MaybeAlign(kChunkBytes));
        scf::YieldOp::create(b);
      });
    }
  }

  AttentionOp op;
  gpu::GPUFuncOp func;

  int64_t blockM, blockN, warps, headDim;
  Type elementType;
  int64_t chunkElements, rowChunks, mTiles, nTiles, dTiles;
  float scale, scaleLog2;
  AttentionWindow window;

  Value sharedQ, sharedK, sharedV;
  /// Whether the held row sums live in shared memory, at the shared address
  /// (i32) sumsBase (getHeldSum).
  bool sumsInShared = false;
  /// Whether a tile copy's passes address their rows from one base
  /// (emitTileCopy): where the O and S accumulators take fewer than
  /// kSm80AccumulatorRegisterBudget registers per thread (d64 at 128x64 with
  /// 4 warps: 128).
  bool copyPassesShareBase = false;
  Value sumsBase;
  /// The thread id, and per-thread values of the current phase.
  Value threadId, tid, warpRow, quadRow, quadCol;
  LaneMatrices queryLanes, keyLanes, valueLanes;
  Value seqQ, seqK, firstRow, head, kvHead, batchIndex;
  /// i32 block numbers.
  Value firstBlock, lastBlockEnd, unmaskedBegin, unmaskedEnd;
};

/// One CTA per row block of each (batch, head): grid (ceil(Sq / block_m),
/// Hq, min(B, 65535)), batches striding by the grid's z extent; the op's
/// operands as memref descriptors; the tile's shared memory.
LaunchContract getSm80LaunchContract(AttentionOp op, TileAttr tile) {
  LaunchContract contract = getAttentionLaunchContract(op, tile);
  contract.grid = {GridAxis{{{kQOperand, 2, tile.getBlockM()}}},
                   GridAxis{{{kQOperand, 1}}},
                   GridAxis{{{kQOperand, 0}}, kMaxGridDimY}};
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

  gpu::GPUFuncOp func = createKernelFunc(op, kernels, "attention",
                                         getSm80LaunchContract(op, tile));
  ImplicitLocOpBuilder b(op.getLoc(), op.getContext());
  b.setInsertionPointToStart(&func.getBody().front());
  AttentionKernelBuilder(op, tile, func, b).build();
  replaceByLaunch(op, func);
  return success();
}
